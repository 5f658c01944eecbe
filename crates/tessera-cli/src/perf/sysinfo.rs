//! Process CPU/RSS sampling and network-interface load, as ddsperf reports them every second.
//!
//! - Process-wide: `getrusage(RUSAGE_SELF)` for the maximum RSS (KiB × 1024 → bytes) and the
//!   voluntary/involuntary context-switch counters (reported as rates per second).
//! - Per thread: `/proc/self/task/<tid>/stat` fields 14 and 15 (user and system time in clock
//!   ticks). The thread list is taken once, when the sampler is created (so create it after all
//!   threads of the run have been started). A thread is listed when its user or system share of
//!   one core is ≥ 0.5 %; the rest is summed into an `others` entry, listed under the same
//!   threshold. The thread name is read lazily, the first time a thread is listed.
//! - Network (`-d`): `/proc/net/dev` receive and transmit byte counters of one interface.

use std::fs;

use super::protocol::{CpuStatThread, CpuStatsSample};
use super::report::NetloadReading;

/// This host's name (`?` if it cannot be determined), as put in the participant user data.
pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is a valid writable buffer of the length passed; gethostname NUL-terminates
    // within it or truncates, and we never read past its end.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "?".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// Process id.
pub fn pid() -> u32 {
    std::process::id()
}

struct Rusage {
    maxrss_bytes: f64,
    nvcsw: u64,
    nivcsw: u64,
}

fn rusage_self() -> Rusage {
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable `rusage`; getrusage only writes into it.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Rusage {
            maxrss_bytes: 0.0,
            nvcsw: 0,
            nivcsw: 0,
        };
    }
    Rusage {
        maxrss_bytes: 1024.0 * ru.ru_maxrss as f64,
        nvcsw: ru.ru_nvcsw as u64,
        nivcsw: ru.ru_nivcsw as u64,
    }
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as f64
    } else {
        100.0
    }
}

/// Splits a `/proc/.../stat` line into (name, fields after the name). The name is everything
/// between the first `(` and the last `)`, as it may itself contain blanks and parentheses.
fn split_stat(text: &str) -> Option<(&str, &str)> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    Some((&text[open + 1..close], &text[close + 1..]))
}

/// User and system time of a thread in seconds from a stat line.
fn parse_thread_times(stat: &str, hz: f64) -> Option<(f64, f64)> {
    let (_, rest) = split_stat(stat)?;
    // Fields after the name start at field 3 (state); utime is field 14, stime field 15.
    let mut it = rest.split_ascii_whitespace().skip(11);
    let ut: f64 = it.next()?.parse().ok()?;
    let st: f64 = it.next()?.parse().ok()?;
    Some((ut / hz, st / hz))
}

fn read_thread_stat(tid: u64) -> Option<String> {
    fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()
}

struct ThreadState {
    tid: u64,
    name: Option<String>,
    ut: f64,
    st: f64,
}

/// Threshold (fraction of one core) above which a thread is listed.
const CPU_THRESHOLD: f64 = 0.005;

/// Samples the process' CPU use per thread, RSS and context switches once per report.
pub struct CpuSampler {
    hostname: String,
    pid: u32,
    hz: f64,
    tprev: i64,
    vcsw_prev: u32,
    ivcsw_prev: u32,
    threads: Vec<ThreadState>,
    last: CpuStatsSample,
}

impl CpuSampler {
    /// Takes the current thread list and baseline counters at `now_ns`. `None` if
    /// `/proc/self/task` cannot be read (ddsperf then prints no CPU lines).
    pub fn new(now_ns: i64, hostname: String) -> Option<Self> {
        let hz = clock_ticks_per_second();
        let mut threads = Vec::new();
        for entry in fs::read_dir("/proc/self/task").ok()? {
            let Ok(entry) = entry else { continue };
            let Some(tid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let Some((ut, st)) = read_thread_stat(tid).and_then(|s| parse_thread_times(&s, hz))
            else {
                continue;
            };
            threads.push(ThreadState {
                tid,
                name: None,
                ut,
                st,
            });
        }
        threads.sort_by_key(|t| t.tid);
        let ru = rusage_self();
        let pid = pid();
        Some(CpuSampler {
            hostname: hostname.clone(),
            pid,
            hz,
            tprev: now_ns,
            vcsw_prev: ru.nvcsw as u32,
            ivcsw_prev: ru.nivcsw as u32,
            threads,
            last: CpuStatsSample {
                hostname,
                pid,
                maxrss: 0.0,
                vcsw: 0,
                ivcsw: 0,
                some_above: false,
                cpu: Vec::new(),
            },
        })
    }

    /// Takes a sample at `now_ns` covering the time since the previous one. The result is what
    /// ddsperf publishes on `DDSPerfCPUStats` and prints as its CPU line.
    pub fn sample(&mut self, now_ns: i64) -> &CpuStatsSample {
        let ru = rusage_self();
        let dt = (now_ns - self.tprev) as f64 / 1e9;
        let rate = |now: u64, prev: u32| ((now as u32).wrapping_sub(prev) as f64 / dt + 0.5) as u32;
        let mut s = CpuStatsSample {
            hostname: self.hostname.clone(),
            pid: self.pid,
            maxrss: ru.maxrss_bytes,
            vcsw: rate(ru.nvcsw, self.vcsw_prev),
            ivcsw: rate(ru.nivcsw, self.ivcsw_prev),
            some_above: false,
            cpu: Vec::new(),
        };
        self.vcsw_prev = ru.nvcsw as u32;
        self.ivcsw_prev = ru.nivcsw as u32;
        let (mut du_skip, mut ds_skip) = (0.0, 0.0);
        for t in &mut self.threads {
            let Some(stat) = read_thread_stat(t.tid) else {
                continue;
            };
            let Some((ut, st)) = parse_thread_times(&stat, self.hz) else {
                continue;
            };
            let du = (ut - t.ut) / dt;
            let ds = (st - t.st) / dt;
            t.ut = ut;
            t.st = st;
            if du >= CPU_THRESHOLD || ds >= CPU_THRESHOLD {
                s.some_above = true;
                if t.name.is_none() {
                    t.name = split_stat(&stat).map(|(n, _)| n.chars().take(31).collect());
                }
                match &t.name {
                    Some(name) => s.cpu.push(CpuStatThread {
                        name: name.clone(),
                        u_pct: (100.0 * du + 0.5) as i32,
                        s_pct: (100.0 * ds + 0.5) as i32,
                    }),
                    None => {
                        du_skip += du;
                        ds_skip += ds;
                    }
                }
            } else {
                du_skip += du;
                ds_skip += ds;
            }
        }
        if du_skip >= CPU_THRESHOLD || ds_skip >= CPU_THRESHOLD {
            s.some_above = true;
            s.cpu.push(CpuStatThread {
                name: "others".into(),
                u_pct: (100.0 * du_skip + 0.5) as i32,
                s_pct: (100.0 * ds_skip + 0.5) as i32,
            });
        }
        self.tprev = now_ns;
        self.last = s;
        &self.last
    }

    /// Maximum RSS in bytes at the last sample (what the `-Q rss` check compares).
    pub fn maxrss(&self) -> f64 {
        self.last.maxrss
    }
}

/// Receive and transmit byte counters of `device` from `/proc/net/dev`.
pub fn read_net_dev(device: &str) -> Option<(u64, u64)> {
    parse_net_dev(&fs::read_to_string("/proc/net/dev").ok()?, device)
}

/// Parses `/proc/net/dev` text: two header lines, then `name: rx_bytes rx_packets ... (8 rx
/// fields) tx_bytes ...`. Returns (rx bytes, tx bytes).
pub fn parse_net_dev(text: &str, device: &str) -> Option<(u64, u64)> {
    for line in text.lines().skip(2) {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if name.trim() != device {
            continue;
        }
        let f: Vec<&str> = rest.split_ascii_whitespace().collect();
        let rx = f.first()?.parse().ok()?;
        let tx = f.get(8)?.parse().ok()?;
        return Some((rx, tx));
    }
    None
}

/// Whether `-d DEV` names an interface with counters (else ddsperf exits with status 3).
pub fn netload_device_exists(device: &str) -> bool {
    read_net_dev(device).is_some()
}

/// Per-report network load of one interface (`-d`).
pub struct NetloadSampler {
    device: String,
    bandwidth: f64,
    prev: Option<(i64, u64, u64)>,
    failed: bool,
}

impl NetloadSampler {
    /// Starts sampling `device` (nominal `bandwidth` bit/s, 0 for absolute output) at `now_ns`.
    pub fn new(device: &str, bandwidth: f64, now_ns: i64) -> Self {
        let mut s = NetloadSampler {
            device: device.to_string(),
            bandwidth,
            prev: None,
            failed: false,
        };
        let _ = s.sample(now_ns);
        s
    }

    /// Reads the counters at `now_ns`; a reading is returned only when the load is worth
    /// showing: ≥ 0.5 % of the bandwidth in either direction, or ≥ 100 kb/s without a
    /// bandwidth. ddsperf only samples when the report printed something else.
    pub fn sample(&mut self, now_ns: i64) -> Option<NetloadReading> {
        if self.failed {
            return None;
        }
        let Some((ib, ob)) = read_net_dev(&self.device) else {
            self.failed = true;
            return None;
        };
        self.update(now_ns, ib, ob)
    }

    fn update(&mut self, now_ns: i64, ib: u64, ob: u64) -> Option<NetloadReading> {
        let prev = self.prev.replace((now_ns, ib, ob));
        let (t0, ib0, ob0) = prev?;
        let dt = (now_ns - t0) as f64 / 1e9;
        let dx = 8.0 * ob.wrapping_sub(ob0) as f64 / dt;
        let dr = 8.0 * ib.wrapping_sub(ib0) as f64 / dt;
        let show = if self.bandwidth > 0.0 {
            100.0 * dx / self.bandwidth >= 0.5 || 100.0 * dr / self.bandwidth >= 0.5
        } else {
            dx >= 1e5 || dr >= 1e5
        };
        show.then(|| NetloadReading {
            device: self.device.clone(),
            xmit_bps: dx,
            recv_bps: dr,
            bandwidth: self.bandwidth,
            obytes: ob,
            ibytes: ib,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing() {
        let line = "1234 (recv (UC) x) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0";
        let (name, _) = split_stat(line).unwrap();
        assert_eq!(name, "recv (UC) x");
        assert_eq!(parse_thread_times(line, 100.0), Some((2.5, 0.75)));
        assert_eq!(parse_thread_times("garbage", 100.0), None);
        assert_eq!(parse_thread_times("1 (a) S 1 2", 100.0), None);
    }

    #[test]
    fn net_dev_parsing() {
        let text = "Inter-|   Receive                                                |  Transmit\n face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n    lo: 38892846  1000    0    0    0     0          0         0 38892846  1000    0    0    0     0       0          0\n  eth0: 5 6 0 0 0 0 0 0 7 8 0 0 0 0 0 0\n";
        assert_eq!(parse_net_dev(text, "lo"), Some((38892846, 38892846)));
        assert_eq!(parse_net_dev(text, "eth0"), Some((5, 7)));
        assert_eq!(parse_net_dev(text, "nope"), None);
        assert_eq!(parse_net_dev("a\nb\nx: 1 2\n", "x"), None);
    }

    #[test]
    fn netload_thresholds() {
        let mut s = NetloadSampler {
            device: "lo".into(),
            bandwidth: 1e9,
            prev: None,
            failed: false,
        };
        assert_eq!(s.update(0, 0, 0), None);
        // 0.4 % of 1 Gb/s: not shown.
        assert_eq!(s.update(1_000_000_000, 500_000, 500_000), None);
        let r = s.update(2_000_000_000, 38_000_000, 38_000_000).unwrap();
        assert!((r.xmit_bps - 8.0 * 37_500_000.0).abs() < 1.0);
        let mut abs = NetloadSampler {
            device: "lo".into(),
            bandwidth: 0.0,
            prev: None,
            failed: false,
        };
        abs.update(0, 0, 0);
        assert_eq!(abs.update(1_000_000_000, 12_000, 12_000), None);
        assert!(abs.update(2_000_000_000, 12_000 + 12_500, 12_000).is_some());
    }

    #[test]
    fn sampler_on_this_process() {
        let now = |_: ()| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i64)
        };
        let mut s = CpuSampler::new(now(()), hostname()).expect("/proc is available");
        // Burn some CPU in this thread so that it shows up.
        let t0 = std::time::Instant::now();
        let mut x = 0u64;
        while t0.elapsed() < std::time::Duration::from_millis(100) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let sample = s.sample(now(())).clone();
        assert!(sample.maxrss > 1_048_576.0);
        assert_eq!(sample.pid, std::process::id());
        assert!(sample.some_above, "{sample:?}");
        assert!(!sample.cpu.is_empty());
        assert_eq!(s.maxrss(), sample.maxrss);
        assert!(!hostname().is_empty());
        assert!(netload_device_exists("lo") || !std::path::Path::new("/proc/net/dev").exists());
    }
}
