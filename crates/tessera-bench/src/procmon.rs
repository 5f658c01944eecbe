//! Worker processes of a point and their resource use.
//!
//! A [`Proc`] is a direct child started from a [`Command`] (usually
//! [`super::hosts::Topology::command`]) in its own process group, with its stdout and stderr
//! going to a file or to a reader thread that timestamps every line. Its pid is registered with
//! [`super::hosts`] so an interrupt kills it.
//!
//! The final figures of a process ([`Proc::stats`]) come from the `rusage` that `wait4` returns
//! when it is reaped: user and system CPU, peak RSS and context switches of the process and of
//! the descendants it reaped itself. [`sample`] reads `/proc` for live figures while a process
//! runs (for time series); it sees only that one process.
//!
//! Each `Proc` has a small watcher thread blocked in `waitid(WNOWAIT)` that notes when the
//! child exits without reaping it; the owner then unregisters the pid and reaps with `wait4`,
//! so the pid is never reused while it is registered.

use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::hosts;
use super::results::{Implementation, ProcStats};

/// Where a process's stdout and stderr go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capture {
    /// Both into this file (created or truncated).
    File(PathBuf),
    /// Both into a pipe read by a thread that stores each line with its arrival time.
    Lines,
}

/// Live figures of a running process from `/proc/<pid>/stat` and `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcSample {
    /// User CPU seconds so far.
    pub utime_s: f64,
    /// System CPU seconds so far.
    pub stime_s: f64,
    /// Resident set size now, KiB (VmRSS).
    pub rss_kib: u64,
    /// Peak resident set size so far, KiB (VmHWM).
    pub hwm_kib: u64,
    /// Voluntary context switches so far.
    pub voluntary_ctxt: u64,
    /// Involuntary context switches so far.
    pub involuntary_ctxt: u64,
}

/// Reads the live figures of `pid` (any process, not only our children); `None` when it is
/// gone or unreadable. Final figures of a [`Proc`] come from its rusage ([`Proc::stats`]).
pub fn sample(pid: u32) -> Option<ProcSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    // SAFETY: sysconf has no preconditions.
    let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let tck = if tck > 0 { tck as f64 } else { 100.0 };
    let (utime, stime) = parse_stat_times(&stat)?;
    let mut s = parse_status(&status);
    s.utime_s = utime as f64 / tck;
    s.stime_s = stime as f64 / tck;
    Some(s)
}

/// utime and stime (clock ticks) from the text of `/proc/<pid>/stat`. The command name in
/// parentheses may hold spaces and parentheses, so fields are counted after the last `)`.
pub fn parse_stat_times(stat: &str) -> Option<(u64, u64)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // After ")": field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12.
    let mut fields = rest.split_whitespace().skip(11);
    let utime = fields.next()?.parse().ok()?;
    let stime = fields.next()?.parse().ok()?;
    Some((utime, stime))
}

/// VmRSS, VmHWM and the context-switch counts from the text of `/proc/<pid>/status`; missing
/// lines (kernel threads, zombies) read as 0. Times are left 0.
pub fn parse_status(status: &str) -> ProcSample {
    let mut s = ProcSample::default();
    for line in status.lines() {
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let number = || {
            value
                .split_whitespace()
                .next()
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match key {
            "VmRSS" => s.rss_kib = number(),
            "VmHWM" => s.hwm_kib = number(),
            "voluntary_ctxt_switches" => s.voluntary_ctxt = number(),
            "nonvoluntary_ctxt_switches" => s.involuntary_ctxt = number(),
            _ => {}
        }
    }
    s
}

type Lines = Arc<Mutex<Vec<(f64, String)>>>;

enum Output {
    File(PathBuf),
    Lines {
        lines: Lines,
        done: Arc<AtomicBool>,
        reader: Option<JoinHandle<()>>,
    },
}

struct Exit {
    code: i32,
    wall: Duration,
    rusage: Option<libc::rusage>,
}

/// A worker process: a direct child in its own process group, with captured output.
pub struct Proc {
    pid: u32,
    role: String,
    implementation: Implementation,
    started: Instant,
    output: Output,
    exited: Receiver<Instant>,
    exit: Option<Exit>,
}

impl std::fmt::Debug for Proc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proc")
            .field("pid", &self.pid)
            .field("role", &self.role)
            .field("implementation", &self.implementation)
            .field("exit_code", &self.exit.as_ref().map(|e| e.code))
            .finish()
    }
}

impl Proc {
    /// Starts `cmd` in a new process group with stdin from /dev/null and stdout+stderr to
    /// `capture`, and registers its pid for interrupt cleanup. `role` and `implementation`
    /// label its [`ProcStats`]. Fails with `ErrorKind::Interrupted` once an interrupt is
    /// cleaning up.
    pub fn spawn(
        mut cmd: Command,
        role: &str,
        implementation: Implementation,
        capture: Capture,
    ) -> io::Result<Proc> {
        cmd.stdin(Stdio::null()).process_group(0);
        let mut pipe = None;
        let output_kind = match capture {
            Capture::File(path) => {
                let file = File::create(&path)?;
                cmd.stderr(file.try_clone()?).stdout(file);
                Some(path)
            }
            Capture::Lines => {
                let (reader, writer) = cloexec_pipe()?;
                cmd.stderr(writer.try_clone()?).stdout(writer);
                pipe = Some(reader);
                None
            }
        };
        let started = Instant::now();
        let spawned = hosts::spawn_registered(&mut cmd);
        // Drops our copies of the pipe's write end, so the reader sees EOF when the child
        // (and whatever inherited it) is gone.
        drop(cmd);
        let child = spawned?;
        let pid = child.id();
        drop(child);

        let (tx, exited) = mpsc::channel();
        let watcher = thread::Builder::new()
            .name(format!("procmon-wait-{pid}"))
            .stack_size(64 * 1024)
            .spawn(move || {
                wait_exited(pid);
                let _ = tx.send(Instant::now());
            });
        if let Err(e) = watcher {
            // Without a watcher the child could never be reaped: kill and reap it now.
            kill_group(pid, libc::SIGKILL);
            hosts::unregister_pid(pid);
            let _ = reap(pid);
            return Err(e);
        }

        let output = match (output_kind, pipe) {
            (Some(path), _) => Output::File(path),
            (None, Some(reader)) => {
                let lines: Lines = Arc::default();
                let done = Arc::new(AtomicBool::new(false));
                let (l, d) = (Arc::clone(&lines), Arc::clone(&done));
                let handle = thread::Builder::new()
                    .name(format!("procmon-out-{pid}"))
                    .spawn(move || read_lines(reader, started, &l, &d))
                    .ok();
                Output::Lines {
                    lines,
                    done,
                    reader: handle,
                }
            }
            (None, None) => unreachable!("a Lines capture always has a pipe"),
        };
        Ok(Proc {
            pid,
            role: role.to_string(),
            implementation,
            started,
            output,
            exited,
            exit: None,
        })
    }

    /// The child's pid (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The role given at spawn.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// When the process was spawned; line times of [`Proc::lines`] count from here.
    pub fn started(&self) -> Instant {
        self.started
    }

    /// When the process was seen to exit (`None` before it is reaped).
    pub fn exited_at(&self) -> Option<Instant> {
        self.exit.as_ref().map(|e| self.started + e.wall)
    }

    /// Sends `sig` to the child's whole process group (SIGSTOP/SIGCONT pause and resume a
    /// publisher for bursty traffic). Fails once the child has been reaped.
    pub fn signal(&self, sig: i32) -> io::Result<()> {
        if self.exit.is_some() {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        let pgid = libc::pid_t::try_from(self.pid)
            .map_err(|_| io::Error::from_raw_os_error(libc::ESRCH))?;
        // SAFETY: kill has no memory-safety preconditions; the group exists at least as long
        // as its un-reaped leader.
        if unsafe { libc::kill(-pgid, sig) } == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// The lines captured so far with their arrival times in seconds since spawn (empty for
    /// a file capture). Trailing `\r\n`/`\n` are removed.
    pub fn lines(&self) -> Vec<(f64, String)> {
        match &self.output {
            Output::File(_) => Vec::new(),
            Output::Lines { lines, .. } => lines.lock().unwrap_or_else(|e| e.into_inner()).clone(),
        }
    }

    /// The whole output so far, either capture (a file is read back, lossily as UTF-8).
    pub fn output(&self) -> String {
        match &self.output {
            Output::File(path) => std::fs::read(path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default(),
            Output::Lines { lines, .. } => {
                let lines = lines.lock().unwrap_or_else(|e| e.into_inner());
                let mut s = String::new();
                for (_, l) in lines.iter() {
                    s.push_str(l);
                    s.push('\n');
                }
                s
            }
        }
    }

    /// Waits up to `t` for the child to exit and reaps it; `None` on timeout. The result is
    /// the exit code, or 128 + the signal number when it was killed by a signal (-1 when the
    /// status was lost). Once reaped, returns the same code at once.
    pub fn wait_timeout(&mut self, t: Duration) -> Option<i32> {
        if let Some(e) = &self.exit {
            return Some(e.code);
        }
        let at = if t.is_zero() {
            match self.exited.try_recv() {
                Ok(at) => at,
                Err(TryRecvError::Empty) => return None,
                Err(TryRecvError::Disconnected) => Instant::now(),
            }
        } else {
            match self.exited.recv_timeout(t) {
                Ok(at) => at,
                Err(RecvTimeoutError::Timeout) => return None,
                Err(RecvTimeoutError::Disconnected) => Instant::now(),
            }
        };
        self.finish(at);
        self.exit.as_ref().map(|e| e.code)
    }

    /// The exit code once reaped ([`Proc::wait_timeout`]'s convention).
    pub fn exit_code(&self) -> Option<i32> {
        self.exit.as_ref().map(|e| e.code)
    }

    /// SIGKILLs the child's process group and reaps the child (no-op once reaped).
    pub fn kill(&mut self) {
        if self.exit.is_some() {
            return;
        }
        kill_group(self.pid, libc::SIGKILL);
        let at = match self.exited.recv_timeout(Duration::from_secs(10)) {
            Ok(at) => at,
            Err(RecvTimeoutError::Disconnected) => Instant::now(),
            Err(RecvTimeoutError::Timeout) => {
                // Stuck in the kernel (uninterruptible sleep): leave the zombie-to-be.
                eprintln!(
                    "bench procmon: {} (pid {}) did not die within 10 s of SIGKILL",
                    self.role, self.pid
                );
                hosts::unregister_pid(self.pid);
                return;
            }
        };
        self.finish(at);
    }

    /// Resource use of the reaped child (`None` before it is reaped): CPU from its rusage,
    /// `cpu_pct` over its wall-clock lifetime, peak RSS (`ru_maxrss`, KiB) and context switches.
    pub fn stats(&self) -> Option<ProcStats> {
        let exit = self.exit.as_ref()?;
        let ru = exit.rusage.as_ref()?;
        let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
        let user = tv(ru.ru_utime);
        let sys = tv(ru.ru_stime);
        let wall = exit.wall.as_secs_f64();
        Some(ProcStats {
            role: self.role.clone(),
            implementation: self.implementation,
            cpu_user_s: user,
            cpu_sys_s: sys,
            cpu_pct: if wall > 0.0 {
                (user + sys) / wall * 100.0
            } else {
                0.0
            },
            peak_rss_kib: u64::try_from(ru.ru_maxrss).unwrap_or(0),
            voluntary_ctxt: u64::try_from(ru.ru_nvcsw).unwrap_or(0),
            involuntary_ctxt: u64::try_from(ru.ru_nivcsw).unwrap_or(0),
        })
    }

    /// The child has exited at `at` (still un-reaped): unregister, reap, let the reader drain.
    fn finish(&mut self, at: Instant) {
        hosts::unregister_pid(self.pid);
        let (code, rusage) = reap(self.pid);
        self.exit = Some(Exit {
            code,
            wall: at.saturating_duration_since(self.started),
            rusage,
        });
        if let Output::Lines { done, reader, .. } = &mut self.output {
            // Descendants may still hold the pipe; wait a little for EOF, never forever.
            let deadline = Instant::now() + Duration::from_secs(2);
            while !done.load(Ordering::Acquire) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(2));
            }
            if done.load(Ordering::Acquire) {
                if let Some(h) = reader.take() {
                    let _ = h.join();
                }
            }
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
        hosts::unregister_pid(self.pid);
    }
}

/// A close-on-exec pipe: (read end, write end).
fn cloexec_pipe() -> io::Result<(File, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((File::from(r), w))
}

fn kill_group(pid: u32, sig: i32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: kill has no memory-safety preconditions.
        unsafe {
            libc::kill(-pid, sig);
            libc::kill(pid, sig);
        }
    }
}

/// Blocks until `pid` has exited, without reaping it.
fn wait_exited(pid: u32) {
    let id: libc::id_t = pid;
    loop {
        // SAFETY: siginfo_t is plain data; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t.
        let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Reaps an exited child: (exit code or 128+signal or -1, rusage).
fn reap(pid: u32) -> (i32, Option<libc::rusage>) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return (-1, None);
    };
    loop {
        let mut status = 0;
        // SAFETY: rusage is plain data; zeroed is a valid value.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: both pointers are valid and writable.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            let code = if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else if libc::WIFSIGNALED(status) {
                128 + libc::WTERMSIG(status)
            } else {
                -1
            };
            return (code, Some(ru));
        }
        if r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        return (-1, None);
    }
}

fn read_lines(reader: File, started: Instant, lines: &Lines, done: &AtomicBool) {
    let mut r = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match r.read_until(b'\n', &mut buf) {
            Ok(0) => break,
            Ok(_) => {
                let t = started.elapsed().as_secs_f64();
                while matches!(buf.last(), Some(b'\n' | b'\r')) {
                    buf.pop();
                }
                let line = String::from_utf8_lossy(&buf).into_owned();
                lines
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((t, line));
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    done.store(true, Ordering::Release);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_command_names() {
        let stat = "1234 (my (odd) proc) S 1 1234 1234 0 -1 4194560 500 0 0 0 \
                    250 37 0 0 20 0 3 0 12345 1000000 300 18446744073709551615";
        assert_eq!(parse_stat_times(stat), Some((250, 37)));
        assert_eq!(parse_stat_times("garbage"), None);
        assert_eq!(parse_stat_times("1 (x) S 1 2"), None);
    }

    #[test]
    fn parses_status() {
        let status = "Name:\tddsperf\nState:\tS (sleeping)\nVmHWM:\t   10240 kB\n\
                      VmRSS:\t    9000 kB\nThreads:\t7\nvoluntary_ctxt_switches:\t42\n\
                      nonvoluntary_ctxt_switches:\t3\n";
        let s = parse_status(status);
        assert_eq!(s.hwm_kib, 10240);
        assert_eq!(s.rss_kib, 9000);
        assert_eq!(s.voluntary_ctxt, 42);
        assert_eq!(s.involuntary_ctxt, 3);
        assert_eq!(parse_status("Name: zombie\n"), ProcSample::default());
    }

    #[test]
    fn samples_this_process() {
        let s = sample(std::process::id()).expect("own /proc entry");
        assert!(s.rss_kib > 0);
        assert!(s.hwm_kib >= s.rss_kib);
    }

    #[test]
    fn lines_are_timestamped_and_exit_codes_reported() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo one; echo two >&2; exit 3"]);
        let mut p = Proc::spawn(cmd, "t", Implementation::Udp, Capture::Lines).unwrap();
        assert_eq!(p.wait_timeout(Duration::from_secs(10)), Some(3));
        let lines = p.lines();
        let texts: Vec<&str> = lines.iter().map(|(_, l)| l.as_str()).collect();
        assert_eq!(texts.len(), 2);
        assert!(texts.contains(&"one") && texts.contains(&"two"));
        assert!(lines.iter().all(|(t, _)| *t >= 0.0 && *t < 10.0));
        assert!(p.output().contains("one\n"));
        let st = p.stats().unwrap();
        assert_eq!(st.role, "t");
        assert!(st.peak_rss_kib > 0);
        assert!(p.signal(libc::SIGCONT).is_err());
    }

    #[test]
    fn signals_report_128_plus() {
        let mut cmd = Command::new("sleep");
        cmd.arg("30");
        let mut p = Proc::spawn(cmd, "s", Implementation::Udp, Capture::Lines).unwrap();
        assert_eq!(p.wait_timeout(Duration::from_millis(50)), None);
        p.signal(libc::SIGTERM).unwrap();
        assert_eq!(p.wait_timeout(Duration::from_secs(10)), Some(128 + 15));
    }

    #[test]
    fn file_capture() {
        let path = std::env::temp_dir().join(format!("procmon-test-{}.log", std::process::id()));
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2"]);
        let mut p =
            Proc::spawn(cmd, "f", Implementation::Udp, Capture::File(path.clone())).unwrap();
        assert_eq!(p.wait_timeout(Duration::from_secs(10)), Some(0));
        let out = p.output();
        assert!(out.contains("out\n") && out.contains("err\n"));
        assert!(p.lines().is_empty());
        let _ = std::fs::remove_file(path);
    }
}
