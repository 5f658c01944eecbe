//! The raw shared-memory floor: a latency ping-pong through one shared segment with no
//! middleware, so the report can show what a same-host hand-off costs by itself — the wake-up of
//! a sleeping thread (`futex`) or, spinning, only the cache-line transfer and the copies.
//!
//! ```text
//! tessera bench shm ping|pong --segment NAME [--size N] [--duration S] [--warmup S]
//!                             [--wait block|spin]
//! ```
//!
//! - `pong` creates `/dev/shm/NAME` (mode 0600, removed at exit) with room for `--size` bytes
//!   each way, then echoes every ping until `--duration` or SIGINT/SIGTERM.
//! - `ping` opens the segment (waiting up to 5 s for it), copies a `--size` sample into it, bumps
//!   the ping counter and waits for the pong counter; the pong copies the sample out and back
//!   in, as a receiver and a sender of a real sample would. The latency recorded is half the
//!   round trip, like ddsperf's; `--warmup S` leaves the first S seconds after the first echo
//!   out of the whole-run histogram.
//! - `--wait block` (default): the waiting side sleeps on the counter with `FUTEX_WAIT` and the
//!   other side always calls `FUTEX_WAKE`; `--wait spin`: both sides poll the counter.
//!
//! Output: the JSON lines of `tessera perf --json`, like the UDP floor ([`super::floor`]).
//!
//! Layout of the segment: the ping counter (`u32`) at 0, the pong counter at 64 (own cache
//! lines), the capacity (`u64`, written by `pong` last) at 128; the ping buffer at 4096 and the
//! pong buffer after it.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tessera_cli::perf::report::{FinalError, PeerLabel, ReportLine, Reporter, Stamp};
use tessera_cli::perf::stats::LatencyStats;

/// Largest `--size`.
pub const MAX_SIZE: usize = 64 << 20;
const PING_COUNTER: usize = 0;
const PONG_COUNTER: usize = 64;
const CAPACITY: usize = 128;
const BUFFERS: usize = 4096;
const SEC: i64 = 1_000_000_000;
/// A blocked side wakes this often to look at the clock and the stop flag.
const WAIT_SLICE: Duration = Duration::from_millis(100);
/// How long `ping` waits for the segment to appear.
const OPEN_TIMEOUT: Duration = Duration::from_secs(5);

/// How a side waits for the other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Sleep on a futex; the other side always wakes it.
    Block,
    /// Poll the counter.
    Spin,
}

/// The command line of `tessera bench shm`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShmConfig {
    /// `true` for `ping`, `false` for `pong`.
    pub ping: bool,
    /// The segment's name in `/dev/shm`.
    pub segment: String,
    /// Sample size in bytes (default 16).
    pub size: usize,
    /// Run time; `None`: until SIGINT/SIGTERM.
    pub duration: Option<Duration>,
    /// `ping`: seconds after the first echo whose round trips stay out of the summary.
    pub warmup: Option<Duration>,
    /// How both sides wait.
    pub wait: Wait,
}

/// Usage text of `tessera bench shm`.
pub fn usage() -> &'static str {
    "usage: tessera bench shm ping|pong --segment NAME [--size N] [--duration S] [--warmup S]\n\
     \x20                              [--wait block|spin]\n\
     \n\
     The raw shared-memory floor: a latency ping-pong through /dev/shm/NAME (created by pong)\n\
     with no middleware, printing the JSON lines of `tessera perf --json`.\n\
     \x20 --size N        sample size in bytes, copied each way (default 16)\n\
     \x20 --duration S    stop after S seconds (default: at SIGINT/SIGTERM)\n\
     \x20 --warmup S      ping: leave the first S seconds after the first echo out of the summary\n\
     \x20 --wait W        block (futex, default) or spin\n"
}

/// Parses the words after `shm` (a leading `shm` is skipped too).
pub fn parse_args(args: &[String]) -> Result<ShmConfig, String> {
    let mut words = args.iter().map(String::as_str).peekable();
    if words.peek() == Some(&"shm") {
        words.next();
    }
    let ping = match words.next() {
        Some("ping") => true,
        Some("pong") => false,
        Some(other) => return Err(format!("unknown role {other:?}")),
        None => return Err("missing role (ping or pong)".into()),
    };
    let mut cfg = ShmConfig {
        ping,
        segment: String::new(),
        size: 16,
        duration: None,
        warmup: None,
        wait: Wait::Block,
    };
    for (opt, v) in crate::floor::option_pairs(words)? {
        match opt {
            "--segment" => {
                let ok = !v.is_empty()
                    && v.len() <= 200
                    && v.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                    && !v.starts_with('.');
                if !ok {
                    return Err(format!("--segment {v:?}: letters, digits, - _ . only"));
                }
                cfg.segment = v.to_string();
            }
            "--size" => {
                cfg.size = match v.parse::<usize>() {
                    Ok(n) if (1..=MAX_SIZE).contains(&n) => n,
                    _ => return Err(format!("--size {v}: 1..={MAX_SIZE} bytes")),
                };
            }
            "--duration" => cfg.duration = Some(crate::floor::secs(v, "--duration")?),
            "--warmup" => cfg.warmup = Some(crate::floor::secs(v, "--warmup")?),
            "--wait" => {
                cfg.wait = match v {
                    "block" => Wait::Block,
                    "spin" => Wait::Spin,
                    v => return Err(format!("--wait {v}: block or spin")),
                }
            }
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    if cfg.segment.is_empty() {
        return Err("--segment NAME is required".into());
    }
    Ok(cfg)
}

/// The path of segment `name`.
pub fn segment_path(name: &str) -> PathBuf {
    PathBuf::from("/dev/shm").join(name)
}

/// A mapped segment. The counters are the only shared state read concurrently; the buffers are
/// handed over by them (written before the Release store, read after the Acquire load).
struct Segment {
    base: NonNull<u8>,
    len: usize,
    capacity: usize,
    /// Removes the file at drop (the `pong` side, which created it).
    owned: Option<PathBuf>,
}

impl Segment {
    fn len_for(capacity: usize) -> usize {
        BUFFERS + 2 * capacity
    }

    fn map(file: &File, len: usize) -> io::Result<NonNull<u8>> {
        use std::os::fd::AsRawFd;
        // SAFETY: a fresh shared mapping of a file we hold open, of the file's length; the
        // result is checked for MAP_FAILED before use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        NonNull::new(p.cast()).ok_or_else(|| io::Error::other("mmap returned null"))
    }

    fn create(name: &str, capacity: usize) -> io::Result<Segment> {
        let path = segment_path(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        let len = Self::len_for(capacity);
        let mapped = file
            .set_len(len as u64)
            .and_then(|()| Self::map(&file, len));
        let base = match mapped {
            Ok(b) => b,
            Err(e) => {
                let _ = fs::remove_file(&path);
                return Err(e);
            }
        };
        let seg = Segment {
            base,
            len,
            capacity,
            owned: Some(path),
        };
        seg.capacity_word()
            .store(capacity as u64, Ordering::Release);
        Ok(seg)
    }

    fn open(name: &str, need: usize, give_up: Instant) -> io::Result<Segment> {
        let path = segment_path(name);
        loop {
            let attempt = (|| -> io::Result<Option<Segment>> {
                let file = match OpenOptions::new().read(true).write(true).open(&path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(e),
                };
                let len = usize::try_from(file.metadata()?.len()).unwrap_or(0);
                if len < BUFFERS {
                    return Ok(None); // not sized yet
                }
                let base = Self::map(&file, len)?;
                let mut seg = Segment {
                    base,
                    len,
                    capacity: 0,
                    owned: None,
                };
                // The capacity is untrusted until checked against the mapped length.
                let cap = usize::try_from(seg.capacity_word().load(Ordering::Acquire))
                    .unwrap_or(usize::MAX);
                if cap == 0 {
                    return Ok(None); // pong still setting up
                }
                if cap > (len - BUFFERS) / 2 || cap < need {
                    return Err(io::Error::other(format!(
                        "segment {name}: capacity {cap} B does not fit its {len} B or a {need} B sample"
                    )));
                }
                seg.capacity = cap;
                Ok(Some(seg))
            })()?;
            if let Some(s) = attempt {
                return Ok(s);
            }
            if Instant::now() >= give_up {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("segment {name} did not appear"),
                ));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn word(&self, off: usize) -> &AtomicU32 {
        debug_assert!(off + 4 <= BUFFERS && off % 4 == 0);
        // SAFETY: `off` is a 4-aligned offset inside the header page of a live mapping (page
        // aligned); atomics make the concurrent access by the other process well defined.
        unsafe { &*self.base.as_ptr().add(off).cast::<AtomicU32>() }
    }

    fn capacity_word(&self) -> &AtomicU64 {
        // SAFETY: as `word`, 8-aligned.
        unsafe { &*self.base.as_ptr().add(CAPACITY).cast::<AtomicU64>() }
    }

    fn ping_counter(&self) -> &AtomicU32 {
        self.word(PING_COUNTER)
    }

    fn pong_counter(&self) -> &AtomicU32 {
        self.word(PONG_COUNTER)
    }

    /// Copies `src` into buffer `which` (0: ping's, 1: pong's).
    fn put(&self, which: usize, src: &[u8]) {
        let n = src.len().min(self.capacity);
        // SAFETY: the buffer lies inside the mapping (`capacity` was checked against `len`);
        // the other side does not touch it until the counter store that follows.
        unsafe {
            std::ptr::copy_nonoverlapping(
                src.as_ptr(),
                self.base.as_ptr().add(BUFFERS + which * self.capacity),
                n,
            );
        }
    }

    /// Copies buffer `which` into `dst`.
    fn get(&self, which: usize, dst: &mut [u8]) {
        let n = dst.len().min(self.capacity);
        // SAFETY: as `put`; read after the Acquire load of the counter that published it.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.base.as_ptr().add(BUFFERS + which * self.capacity),
                dst.as_mut_ptr(),
                n,
            );
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: the mapping made in `map`, unmapped once.
            unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
        }
        if let Some(p) = &self.owned {
            let _ = fs::remove_file(p);
        }
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: FUTEX_WAIT on a valid, aligned u32 of a shared mapping (not FUTEX_PRIVATE: the
    // waker is another process); it returns at once if the word no longer holds `expected`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a valid, aligned u32 of a shared mapping.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, 1);
    }
}

fn mono_ns() -> i64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

/// Waits until `word` differs from `old` or `give_up()` says stop; returns the new value, or
/// `None` when stopped.
fn wait_change(
    word: &AtomicU32,
    old: u32,
    wait: Wait,
    mut give_up: impl FnMut() -> bool,
) -> Option<u32> {
    let mut spins: u32 = 0;
    loop {
        let v = word.load(Ordering::Acquire);
        if v != old {
            return Some(v);
        }
        match wait {
            Wait::Block => {
                if give_up() {
                    return None;
                }
                futex_wait(word, old, WAIT_SLICE);
            }
            Wait::Spin => {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                // The clock is cheap (vDSO) but not free: look at it every 4096 polls.
                if spins % 4096 == 0 && give_up() {
                    return None;
                }
            }
        }
    }
}

/// Runs one floor process writing its JSON lines to `out`; `stop` ends it early. Returns the
/// exit status (0; 1 when `ping` got no answer; 2 on a segment error).
pub fn run<W: Write>(cfg: &ShmConfig, out: W, stop: Arc<AtomicBool>) -> i32 {
    let mut rep = Reporter::new(out, true);
    let r = if cfg.ping {
        ping(cfg, &mut rep, &stop)
    } else {
        pong(cfg, &mut rep, &stop)
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera bench shm: {e}");
            2
        }
    }
}

fn end_of(cfg: &ShmConfig, tstart: i64) -> i64 {
    cfg.duration
        .map(|d| tstart + i64::try_from(d.as_nanos()).unwrap_or(i64::MAX / 2))
        .unwrap_or(i64::MAX)
}

fn ping<W: Write>(cfg: &ShmConfig, rep: &mut Reporter<W>, stop: &AtomicBool) -> io::Result<i32> {
    let tstart = mono_ns();
    let tend = end_of(cfg, tstart);
    let seg = Segment::open(&cfg.segment, cfg.size, Instant::now() + OPEN_TIMEOUT)?;
    let pid = std::process::id();
    let label = PeerLabel::HostPid {
        host: "shm".into(),
        pid: 0,
    };
    let warmup = cfg.warmup.map(|d| d.as_nanos() as i64).filter(|&w| w > 0);
    let sample = vec![0x5au8; cfg.size];
    let mut echo = vec![0u8; cfg.size];
    let mut stats = LatencyStats::new();
    let mut first_echo: Option<i64> = None;
    let mut tnext = tstart + SEC;
    let mut seq = seg.ping_counter().load(Ordering::Acquire);
    let ended = || stop.load(Ordering::Acquire) || mono_ns() >= tend;
    loop {
        let t0 = mono_ns();
        seg.put(0, &sample);
        seq = seq.wrapping_add(1);
        seg.ping_counter().store(seq, Ordering::Release);
        if cfg.wait == Wait::Block {
            futex_wake(seg.ping_counter());
        }
        // The pong answers with the ping's counter value.
        let mut answered = false;
        let mut last = seg.pong_counter().load(Ordering::Acquire);
        while last != seq {
            match wait_change(seg.pong_counter(), last, cfg.wait, ended) {
                Some(v) => last = v,
                None => break,
            }
        }
        if last == seq {
            seg.get(1, &mut echo);
            answered = true;
        }
        let now = mono_ns();
        if answered {
            let first = *first_echo.get_or_insert(now);
            let overall = warmup.is_none_or(|w| now >= first + w);
            stats.record_with((now - t0) / 2, overall);
        }
        if now >= tnext {
            tnext = now + SEC;
            if let Some(s) = stats.take_interval() {
                rep.emit(&ReportLine::Latency {
                    stamp: Stamp::new(pid, now, tstart),
                    sublat: false,
                    peer: label.clone(),
                    size: cfg.size as u32,
                    stats: s,
                })?;
            }
        }
        if !answered || ended() {
            break;
        }
    }
    let overall: Vec<_> = stats.overall().map(|o| (label, o)).into_iter().collect();
    let code = if stats.total_count() == 0 {
        rep.emit(&ReportLine::Error {
            pid,
            error: FinalError::TooFewRoundtrips,
        })?;
        1
    } else {
        0
    };
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid,
            latency: overall,
            received: 0,
            lost: 0,
            exit_code: code,
        },
        (mono_ns() - tstart) as f64 / 1e9,
    )?;
    Ok(code)
}

fn pong<W: Write>(cfg: &ShmConfig, rep: &mut Reporter<W>, stop: &AtomicBool) -> io::Result<i32> {
    let tstart = mono_ns();
    let tend = end_of(cfg, tstart);
    let seg = Segment::create(&cfg.segment, cfg.size)?;
    let mut buf = vec![0u8; cfg.size];
    let ended = || stop.load(Ordering::Acquire) || mono_ns() >= tend;
    let mut last = seg.ping_counter().load(Ordering::Acquire);
    let mut echoed: u64 = 0;
    while let Some(v) = wait_change(seg.ping_counter(), last, cfg.wait, ended) {
        last = v;
        seg.get(0, &mut buf);
        seg.put(1, &buf);
        seg.pong_counter().store(v, Ordering::Release);
        if cfg.wait == Wait::Block {
            futex_wake(seg.pong_counter());
        }
        echoed += 1;
    }
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: std::process::id(),
            latency: Vec::new(),
            received: echoed,
            lost: 0,
            exit_code: 0,
        },
        (mono_ns() - tstart) as f64 / 1e9,
    )?;
    Ok(0)
}

/// `tessera bench shm ...`: `args` are the words after `shm` (a leading `shm` is accepted).
/// Prints JSON lines on stdout; returns the exit status (3 for a bad command line).
pub fn main(args: &[String]) -> i32 {
    crate::floor::tool_main("shm", args, parse_args, usage, run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_tessera_json;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn command_line() {
        let c = parse_args(&a(&["shm", "ping", "--segment", "x-1", "--size", "4096"])).unwrap();
        assert!(c.ping);
        assert_eq!(
            (c.segment.as_str(), c.size, c.wait),
            ("x-1", 4096, Wait::Block)
        );
        let c = parse_args(&a(&["pong", "--segment=s", "--wait", "spin"])).unwrap();
        assert!(!c.ping);
        assert_eq!(c.wait, Wait::Spin);
        for bad in [
            &["ping"][..],
            &["ping", "--segment", "../etc"],
            &["ping", "--segment", "a/b"],
            &["ping", "--segment", "s", "--size", "0"],
            &["ping", "--segment", "s", "--wait", "sometimes"],
            &["talk", "--segment", "s"],
        ] {
            assert!(parse_args(&a(bad)).is_err(), "{bad:?}");
        }
    }

    /// A ping and a pong thread through a real segment, both wait modes: round trips are
    /// counted, the summary parses like `tessera perf`'s, and the segment is gone afterwards.
    #[test]
    fn ping_pong_through_a_segment() {
        for wait in ["block", "spin"] {
            let name = format!("tessera-bench-test-{}-{wait}", std::process::id());
            let args = |role: &str| {
                parse_args(&a(&[
                    role,
                    "--segment",
                    &name,
                    "--size",
                    "1000",
                    "--duration",
                    "0.5",
                    "--wait",
                    wait,
                ]))
                .unwrap()
            };
            let (pong_cfg, ping_cfg) = (args("pong"), args("ping"));
            let stop = Arc::new(AtomicBool::new(false));
            let s2 = stop.clone();
            let pong = std::thread::spawn(move || {
                let mut out = Vec::new();
                let code = run(&pong_cfg, &mut out, s2);
                (code, out)
            });
            let mut out = Vec::new();
            let code = run(&ping_cfg, &mut out, stop.clone());
            stop.store(true, Ordering::Release);
            let (pong_code, pong_out) = pong.join().unwrap();
            assert_eq!((code, pong_code), (0, 0), "{wait}");
            let parsed = parse_tessera_json(&String::from_utf8(out).unwrap());
            let total: u64 = parsed.hist.iter().map(|&(_, n)| n).sum();
            assert!(total > 10, "{wait}: {total} round trips");
            let summary: serde_json::Value = String::from_utf8(pong_out)
                .unwrap()
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .find(|v: &serde_json::Value| v["type"] == "summary")
                .expect("pong summary");
            assert!(summary["received"].as_u64().unwrap() >= total, "{wait}");
            assert!(!segment_path(&name).exists(), "{wait}: segment left behind");
        }
    }

    /// A segment whose capacity word lies (larger than the file) is refused, not trusted.
    #[test]
    fn a_lying_capacity_is_refused() {
        let name = format!("tessera-bench-test-{}-lie", std::process::id());
        let seg = Segment::create(&name, 64).unwrap();
        seg.capacity_word().store(1 << 40, Ordering::Release);
        let err = Segment::open(&name, 16, Instant::now())
            .err()
            .expect("refused");
        assert!(err.to_string().contains("capacity"), "{err}");
        drop(seg);
        assert!(!segment_path(&name).exists());
    }
}
