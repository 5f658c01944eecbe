//! Who created a namespace or link: one file per name in [`OWNERS_DIR`] holding the creating
//! process's pid and start time, so [`super::cleanup_stale`] leaves alone what another live
//! bench or harness run still uses (it once deleted a harness run's hosts under it). The start
//! time tells a live creator from a later process that got its pid.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Where the owner records live: tmpfs, so they go with a reboot (when pids start over).
pub const OWNERS_DIR: &str = "/run/tessera-bench/owners";

/// A process, by pid and start time (clock ticks after boot, `/proc/<pid>/stat` field 22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks after boot.
    pub start: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Option<Owner> {
        Owner::of(std::process::id())
    }

    /// The process with this pid now, if there is one.
    pub fn of(pid: u32) -> Option<Owner> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        Some(Owner {
            pid,
            start: start_time(&stat)?,
        })
    }

    /// Whether this very process still runs (same pid and the same start time).
    pub fn is_alive(&self) -> bool {
        Owner::of(self.pid) == Some(*self)
    }

    fn render(&self) -> String {
        format!("{} {}\n", self.pid, self.start)
    }

    fn parse(s: &str) -> Option<Owner> {
        let mut w = s.split_whitespace();
        let pid = w.next()?.parse().ok()?;
        let start = w.next()?.parse().ok()?;
        Some(Owner { pid, start })
    }
}

/// Field 22 of a `/proc/<pid>/stat` line. The command name (field 2, in parentheses) may hold
/// spaces and parentheses, so fields are counted after its last `)`.
fn start_time(stat: &str) -> Option<u64> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // `rest` starts at field 3 (state); field 22 is the 20th after it.
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn record_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// Records this process as the creator of `name` (best effort: without a record the name is
/// treated as stale, as before records existed).
pub(crate) fn record(dir: &Path, name: &str) {
    let Some(me) = Owner::current() else { return };
    let r = fs::create_dir_all(dir).and_then(|()| fs::write(record_path(dir, name), me.render()));
    if let Err(e) = r {
        eprintln!("bench hosts: cannot record the owner of {name}: {e}");
    }
}

/// Forgets the record of `name` (it was deleted).
pub(crate) fn forget(dir: &Path, name: &str) {
    match fs::remove_file(record_path(dir, name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            eprintln!("bench hosts: cannot remove the owner record of {name}: {e}")
        }
        _ => {}
    }
}

/// The recorded creator of `name`, if any.
pub fn owner_of(dir: &Path, name: &str) -> Option<Owner> {
    Owner::parse(&fs::read_to_string(record_path(dir, name)).ok()?)
}

/// Whether `name` may be deleted as stale: no record, or its creator is gone.
pub fn is_stale(dir: &Path, name: &str) -> bool {
    owner_of(dir, name).is_none_or(|o| !o.is_alive())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_time_is_read_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 \
                    1000 100 18446744073709551615";
        assert_eq!(start_time(stat), Some(987_654));
        assert_eq!(start_time("1 (x) S 1"), None);
        let me = Owner::current().expect("/proc/self");
        assert_eq!(me.pid, std::process::id());
        assert!(me.is_alive());
    }

    #[test]
    fn names_of_a_live_creator_are_kept_and_others_are_stale() {
        let dir = std::env::temp_dir().join(format!("tb-owner-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        // Mine, while I run.
        record(&dir, "tb-mine-h0");
        assert_eq!(owner_of(&dir, "tb-mine-h0"), Owner::current());
        assert!(!is_stale(&dir, "tb-mine-h0"));
        // No record: an older run's, or a crashed one's before records existed.
        assert!(is_stale(&dir, "tb-unknown-h0"));
        // A creator that exited: its pid is free (or someone else's, started later).
        let mut child = std::process::Command::new("true")
            .spawn()
            .expect("spawn true");
        let pid = child.id();
        let dead = Owner::of(pid);
        child.wait().expect("wait");
        let dead = dead.unwrap_or(Owner { pid, start: 1 });
        fs::write(dir.join("tb-dead-h0"), dead.render()).unwrap();
        assert!(is_stale(&dir, "tb-dead-h0"));
        // My pid with another start time: a reused pid, not the creator.
        let me = Owner::current().unwrap();
        let other = Owner {
            start: me.start + 1,
            ..me
        };
        fs::write(dir.join("tb-reused-h0"), other.render()).unwrap();
        assert!(is_stale(&dir, "tb-reused-h0"));
        forget(&dir, "tb-mine-h0");
        assert!(is_stale(&dir, "tb-mine-h0"));
        let _ = fs::remove_dir_all(&dir);
    }
}
