//! Clock jumps for single member processes.
//!
//! The members share the host's kernel clock, so a jump is per process: libfaketime (Debian
//! package `libfaketime`) is preloaded into every member and reads its offset from a file of
//! that member's, which the controller rewrites (`+0` when the clock is right). Only
//! CLOCK_REALTIME moves (`FAKETIME_DONT_FAKE_MONOTONIC=1`): real machines step their wall clock
//! (NTP, an operator) but never their monotonic one, and Rust's `Instant`, tokio's timers and
//! so openraft's run on the monotonic clock. libfaketime reads the file again at most once a
//! second (`FAKETIME_CACHE_DURATION=1`): re-reading it on every clock call would cost a file
//! read per timestamp, and a jump that lands within a second of its step is soon enough.
//!
//! [`verify`] checks by experiment that a preloaded process's `SystemTime` jumps and its
//! `Instant` does not, so the nemesis is never a silent no-op.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The Debian package that has the library.
pub const PACKAGE: &str = "libfaketime";

/// Where libfaketime may be: Debian's multiarch directory, then a `make install`.
fn candidates() -> Vec<PathBuf> {
    vec![
        PathBuf::from(format!(
            "/usr/lib/{}-linux-gnu/faketime/libfaketime.so.1",
            std::env::consts::ARCH
        )),
        PathBuf::from("/usr/local/lib/faketime/libfaketime.so.1"),
    ]
}

/// The libfaketime library, or why there is none.
pub fn find_library() -> Result<PathBuf, String> {
    find_in(&candidates())
}

fn find_in(paths: &[PathBuf]) -> Result<PathBuf, String> {
    paths.iter().find(|p| p.is_file()).cloned().ok_or_else(|| {
        let tried: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        format!(
            "the clock nemesis needs libfaketime (Debian package {PACKAGE}: \
             `scripts/install-deps` or `apt-get install {PACKAGE}`), not found at {}; \
             or leave `clock` out of --nemesis",
            tried.join(" or ")
        )
    })
}

/// Makes `cmd` start with libfaketime preloaded, its wall clock offset read from `file`.
pub fn preload(cmd: &mut Command, library: &Path, file: &Path) {
    let mut preload = library.as_os_str().to_owned();
    if let Some(other) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
        preload.push(":");
        preload.push(other);
    }
    cmd.env("LD_PRELOAD", preload)
        .env("FAKETIME_TIMESTAMP_FILE", file)
        .env("FAKETIME_CACHE_DURATION", "1")
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
        // File times stay true: the fault is the clock, not the file system.
        .env("NO_FAKE_STAT", "1")
        // It would take priority over the file.
        .env_remove("FAKETIME")
        .env_remove("FAKETIME_NO_CACHE");
}

/// Removes what libfaketime left of process `pid`: it makes a shared-memory segment and a
/// semaphore in every process it loads into (`/dev/shm/faketime_shm_PID`,
/// `/dev/shm/sem.faketime_sem_PID`) and removes them only at a clean exit, so each member
/// killed with -9 left two files behind. Call once the process is gone.
pub fn remove_leftovers(pid: u32) {
    for name in [
        format!("faketime_shm_{pid}"),
        format!("sem.faketime_sem_{pid}"),
    ] {
        let _ = std::fs::remove_file(Path::new("/dev/shm").join(name));
    }
}

/// Sets the offset the processes reading `file` see, in seconds (0: the true time). Written
/// to a temporary file and renamed, so a reader never sees half a line.
pub fn set_offset(file: &Path, offset_s: i64) -> std::io::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, format!("{offset_s:+}\n"))?;
    std::fs::rename(&tmp, file)
}

/// A preloaded `tessera-jepsen-member --clock-probe`: prints its wall clock (Unix ns) and the
/// time its `Instant` says has passed (ns) for every line it reads.
struct Probe {
    child: Child,
    out: BufReader<std::process::ChildStdout>,
    spawned: Instant,
}

/// One reading, relative to this process's true clocks.
struct Reading {
    /// The probe's wall clock minus ours, seconds.
    skew_s: f64,
    /// Ours minus the probe's `Instant` time since it started, seconds (≥ 0, small).
    instant_lag_s: f64,
}

impl Probe {
    fn read(&mut self) -> Result<Reading, String> {
        let before = unix_ns();
        let stdin = self.child.stdin.as_mut().ok_or("probe stdin closed")?;
        stdin
            .write_all(b"?\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("probe: {e}"))?;
        let mut line = String::new();
        self.out
            .read_line(&mut line)
            .map_err(|e| format!("probe: {e}"))?;
        let after = unix_ns();
        let elapsed = self.spawned.elapsed().as_nanos() as i128;
        let mut it = line.split_whitespace().map(str::parse::<i128>);
        let (Some(Ok(wall)), Some(Ok(since))) = (it.next(), it.next()) else {
            return Err(format!("probe: unexpected output {line:?}"));
        };
        let mid = (before + after) / 2;
        Ok(Reading {
            skew_s: (wall - mid) as f64 / 1e9,
            instant_lag_s: (elapsed - since) as f64 / 1e9,
        })
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        remove_leftovers(self.child.id());
    }
}

fn unix_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Checks by experiment that libfaketime, preloaded as [`preload`] does into `probe_bin`
/// (`tessera-jepsen-member`), jumps its wall clock forward and back as `file` (created in
/// `dir`) says while its `Instant` runs on untouched. Takes a few seconds.
pub fn verify(library: &Path, probe_bin: &Path, dir: &Path) -> Result<(), String> {
    let file = dir.join("clock-probe.faketime");
    set_offset(&file, 0).map_err(|e| format!("writing {}: {e}", file.display()))?;
    let mut cmd = Command::new(probe_bin);
    cmd.arg("--clock-probe")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    preload(&mut cmd, library, &file);
    let spawned = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {}: {e}", probe_bin.display()))?;
    let out = BufReader::new(child.stdout.take().ok_or("probe stdout")?);
    let mut probe = Probe {
        child,
        out,
        spawned,
    };
    let result = (|| {
        for offset_s in [0, 600, -600, 0] {
            set_offset(&file, offset_s).map_err(|e| format!("{}: {e}", file.display()))?;
            // The library reads the file again within a second.
            let deadline = Instant::now() + Duration::from_secs(4);
            let r = loop {
                let r = probe.read()?;
                if (r.skew_s - offset_s as f64).abs() < 1.0 || Instant::now() > deadline {
                    break r;
                }
                std::thread::sleep(Duration::from_millis(100));
            };
            if (r.skew_s - offset_s as f64).abs() >= 1.0 {
                return Err(format!(
                    "libfaketime is preloaded but the wall clock is {:+.1} s off instead of \
                     {offset_s:+} s",
                    r.skew_s
                ));
            }
            // Up to the probe's start-up late, never ahead: the monotonic clock did not jump.
            if !(-0.05..2.0).contains(&r.instant_lag_s) {
                return Err(format!(
                    "under a {offset_s:+} s wall clock offset the probe's Instant is {:+.3} s \
                     off (FAKETIME_DONT_FAKE_MONOTONIC not honoured?)",
                    -r.instant_lag_s
                ));
            }
        }
        Ok(())
    })();
    drop(probe);
    let _ = std::fs::remove_file(&file);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_refused_by_its_package_name() {
        let e = find_in(&[PathBuf::from("/nonexistent/libfaketime.so.1")]).unwrap_err();
        assert!(e.contains("Debian package libfaketime"), "{e}");
        assert!(e.contains("/nonexistent/libfaketime.so.1"), "{e}");
    }

    #[test]
    fn offsets_are_written_signed() {
        let dir = std::env::temp_dir().join(format!("tessera-jepsen-clock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("m0.faketime");
        for (offset, text) in [(0, "+0\n"), (95, "+95\n"), (-240, "-240\n")] {
            set_offset(&f, offset).unwrap();
            assert_eq!(std::fs::read_to_string(&f).unwrap(), text);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
