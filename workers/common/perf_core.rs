//! The middleware-independent half of the Rust peer workers (`rustdds-perf`, `dust_dds-perf`,
//! `zenoh-perf`): the part of ddsperf's command grammar that `tessera bench` uses, the
//! statistics, the run loop and `tessera perf --json`'s output lines, so the bench reads every
//! worker with the parser it already has. Each worker includes this file with `#[path]` (they
//! are separate crates outside Tessera's workspace) and supplies a [`Link`] to its middleware.
//!
//! Grammar (as `workers/fastdds/fastdds_perf.cpp`):
//!   WORKER [-i ID] [-D S] [-u] [-k N|all] [-n N] [-1] [-T KS] [-X] [--json] [--warmup S]
//!          [--count N]   (stop once N round trips past the warm-up were measured)
//!          [-Q minmatch:N|initwait:S|roundtrips:N|samples:N] MODE...
//!   MODE: ping [size S] [listener|waitset|polling] | pong [listener|waitset|polling]
//!         | sub [listener|waitset|polling] | pub [R[Hz|kHz]] [size S] [burst N]
//! Unsupported words end the process with exit 3 (a usage error), never silently.

#![allow(dead_code)]

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// ddsperf's "size" of an empty KeyedSeq: seq + keyval + the sequence length.
pub const KS_FIXED: u32 = 12;

/// The largest sample size accepted (ddsperf's own bound is 64 MiB; the bench uses ≤ 64 KiB).
pub const MAX_SIZE: u64 = 64 << 20;

/// What the command line asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub domain: u32,
    /// Seconds; 0 = until stopped.
    pub duration_s: f64,
    pub best_effort: bool,
    /// `None`: KEEP_ALL (ddsperf's default for data and pong readers).
    pub keep_last: Option<u32>,
    pub nkeys: u32,
    pub sub_every_second: bool,
    pub minmatch: u32,
    /// Negative: no initial wait.
    pub initwait_s: f64,
    pub q_roundtrips: u64,
    pub q_samples: u64,
    pub warmup_s: f64,
    /// `--count N`: stop once N round trips past the warm-up were measured (0: no count).
    pub count: u64,
    pub ping: bool,
    pub ping_size: u32,
    pub pong: bool,
    pub sub: bool,
    pub publish: bool,
    /// Samples (bursts) per second; 0 = as fast as possible.
    pub pub_rate: f64,
    pub pub_size: u32,
    pub burst: u32,
    /// listener, waitset or polling: accepted; every worker reads on its own thread.
    pub read_mode: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            domain: 0,
            duration_s: 0.0,
            best_effort: false,
            keep_last: None,
            nkeys: 1,
            sub_every_second: false,
            minmatch: 0,
            initwait_s: -1.0,
            q_roundtrips: 0,
            q_samples: 0,
            warmup_s: 0.0,
            count: 0,
            ping: false,
            ping_size: KS_FIXED,
            pong: false,
            sub: false,
            publish: false,
            pub_rate: 0.0,
            pub_size: KS_FIXED,
            burst: 1,
            read_mode: "listener".into(),
        }
    }
}

impl Config {
    /// ddsperf's topic name for `kind` (Data, Ping, Pong): `DDSPerf` + R|U + kind + `KS`.
    pub fn topic(&self, kind: &str) -> String {
        format!(
            "DDSPerf{}{kind}KS",
            if self.best_effort { 'U' } else { 'R' }
        )
    }
}

fn num<T: std::str::FromStr>(s: &str, what: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("bad {what}: {s:?}"))
}

fn size_arg(s: Option<&String>) -> Result<u32, String> {
    let s = s.ok_or("size requires a value")?;
    let v: u64 = num(s, "size")?;
    if v > MAX_SIZE {
        return Err(format!("size {v} is above {MAX_SIZE}"));
    }
    Ok((v as u32).max(KS_FIXED))
}

/// `R`, `RHz` or `RkHz`.
fn rate(s: &str) -> Option<f64> {
    let (n, mul) = if let Some(n) = s.strip_suffix("kHz") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix("Hz") {
        (n, 1.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = n.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * mul)
}

fn is_trigger(s: &str) -> bool {
    matches!(s, "listener" | "waitset" | "polling")
}

/// Parses the arguments after the program name.
pub fn parse_args(a: &[String]) -> Result<Config, String> {
    let mut c = Config::default();
    let mut i = 0;
    // `-D5` or `-D 5`.
    let value = |i: &mut usize, opt: &str| -> Result<String, String> {
        if a[*i].len() > opt.len() {
            return Ok(a[*i][opt.len()..].to_string());
        }
        *i += 1;
        a.get(*i)
            .cloned()
            .ok_or_else(|| format!("{opt} requires an argument"))
    };
    while i < a.len() && a[i].len() > 1 && a[i].starts_with('-') {
        let o = a[i].clone();
        match o.as_str() {
            "--json" | "-X" => {}
            "--warmup" => {
                i += 1;
                c.warmup_s = num(a.get(i).ok_or("--warmup requires a value")?, "--warmup")?;
            }
            "--count" => {
                i += 1;
                c.count = num(a.get(i).ok_or("--count requires a value")?, "--count")?;
                if c.count == 0 {
                    return Err("--count must be at least 1".into());
                }
            }
            "-u" => c.best_effort = true,
            "-1" => c.sub_every_second = true,
            _ if o.starts_with("-i") => {
                c.domain = num(&value(&mut i, "-i")?, "domain id")?;
                if c.domain > 232 {
                    return Err("bad domain id".into());
                }
            }
            _ if o.starts_with("-D") => c.duration_s = num(&value(&mut i, "-D")?, "duration")?,
            _ if o.starts_with("-k") => {
                let v = value(&mut i, "-k")?;
                c.keep_last = if v == "all" {
                    None
                } else {
                    let k: u32 = num(&v, "-k")?;
                    if k == 0 {
                        return Err("bad -k 0".into());
                    }
                    Some(k)
                };
            }
            _ if o.starts_with("-n") => {
                c.nkeys = num(&value(&mut i, "-n")?, "-n")?;
                if c.nkeys == 0 || c.nkeys > 100_000_000 {
                    return Err("bad -n".into());
                }
            }
            _ if o.starts_with("-T") => {
                if value(&mut i, "-T")? != "KS" {
                    return Err("only -T KS is supported".into());
                }
            }
            _ if o.starts_with("-Q") => {
                let v = value(&mut i, "-Q")?;
                let (k, x) = v.split_once(':').ok_or_else(|| format!("bad -Q {v}"))?;
                match k {
                    "minmatch" => c.minmatch = num(x, "minmatch")?,
                    "initwait" => c.initwait_s = num(x, "initwait")?,
                    "roundtrips" => c.q_roundtrips = num(x, "roundtrips")?,
                    "samples" => c.q_samples = num(x, "samples")?,
                    _ => return Err(format!("unsupported -Q {v}")),
                }
            }
            _ => return Err(format!("unsupported option {o}")),
        }
        i += 1;
    }
    while i < a.len() {
        let m = a[i].clone();
        i += 1;
        match m.as_str() {
            "ping" | "pong" => {
                if m == "ping" {
                    c.ping = true
                } else {
                    c.pong = true
                }
                while i < a.len() {
                    if m == "ping" && a[i] == "size" {
                        c.ping_size = size_arg(a.get(i + 1))?;
                        i += 2;
                    } else if is_trigger(&a[i]) {
                        c.read_mode = a[i].clone();
                        i += 1;
                    } else if m == "ping" && rate(&a[i]).is_some() {
                        return Err("ping rates are not supported".into());
                    } else {
                        break;
                    }
                }
            }
            "sub" => {
                c.sub = true;
                if i < a.len() && is_trigger(&a[i]) {
                    c.read_mode = a[i].clone();
                    i += 1;
                }
            }
            "pub" => {
                c.publish = true;
                while i < a.len() {
                    if a[i] == "size" {
                        c.pub_size = size_arg(a.get(i + 1))?;
                        i += 2;
                    } else if a[i] == "burst" {
                        c.burst = num(a.get(i + 1).ok_or("burst requires a value")?, "burst")?;
                        c.burst = c.burst.max(1);
                        i += 2;
                    } else if a[i].ends_with('%') {
                        return Err("pings among data (X%) are not supported".into());
                    } else if let Some(r) = rate(&a[i]) {
                        c.pub_rate = r;
                        i += 1;
                    } else {
                        break;
                    }
                }
            }
            _ => return Err(format!("unsupported mode or word {m:?}")),
        }
    }
    if !(c.ping || c.pong || c.sub || c.publish) {
        c.pong = true; // ddsperf's default
    }
    Ok(c)
}

/// Parses the process's arguments, or prints the error and exits with 3 (ddsperf's usage
/// error status).
pub fn config_from_env(worker: &str) -> Config {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match parse_args(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{worker}: {e}");
            std::process::exit(3);
        }
    }
}

/// A worker's `main`: parses the arguments, lets `start` create the middleware's entities,
/// runs the experiment and exits with its status (2 when `start` failed, as ddsperf does).
pub fn worker_main(
    worker: &str,
    start: impl FnOnce(&Config, &Arc<Perf>) -> Result<Arc<dyn Link>, String>,
) -> ! {
    let cfg = config_from_env(worker);
    let perf = Perf::new(cfg.clone());
    let code = match start(&cfg, &perf) {
        Ok(link) => perf.run(link),
        Err(e) => {
            eprintln!("{worker}: creating the middleware's entities failed: {e}");
            2
        }
    };
    std::process::exit(code);
}

// ---------------------------------------------------------------- clocks and output

/// Wall-clock nanoseconds: the source timestamp of pings (only the pinger's clock is read).
pub fn wall_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// JSON string literal.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' | '\\' => {
                o.push('\\');
                o.push(ch);
            }
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

static OUT: Mutex<()> = Mutex::new(());

/// One JSON object per line, flushed at once (the bench reads lines as they arrive).
pub fn emit(body: &str) {
    let _g = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{{{body}}}");
    let _ = out.flush();
}

/// The host name, as ddsperf prints it in peer names.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "?".into())
}

/// ddsperf's participant USER_DATA: `DDSPerf:<has a data reader>:<pid>:<host>`.
pub fn user_data(cfg: &Config) -> String {
    format!(
        "DDSPerf:{}:{}:{}",
        u8::from(cfg.sub),
        std::process::id(),
        hostname()
    )
}

/// ddsperf's partition for a participant GUID: the 16 bytes in lower-case hex, 4-4-4-4, `_`.
pub fn guid_partition(g: &[u8; 16]) -> String {
    let hex: Vec<String> = g
        .chunks(4)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    hex.join("_")
}

// ---------------------------------------------------------------- statistics

/// Latencies in ns bucketed to three significant digits: bounded memory for any run length,
/// 0.1 % resolution (the bench's percentiles come from these buckets).
#[derive(Debug, Default, Clone)]
pub struct Histogram {
    buckets: BTreeMap<u64, u64>,
    count: u64,
}

impl Histogram {
    /// The bucket of `ns`: its value with all but the three leading decimal digits zeroed.
    pub fn bucket(ns: u64) -> u64 {
        let mut scale = 1;
        while ns / scale >= 1000 {
            scale *= 10;
        }
        ns / scale * scale
    }

    pub fn record(&mut self, ns: u64) {
        *self.buckets.entry(Self::bucket(ns)).or_default() += 1;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The bucket holding quantile `q` (0 = min, 1 = max).
    pub fn quantile(&self, q: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (&v, &n) in &self.buckets {
            seen += n;
            if seen >= rank {
                return v;
            }
        }
        *self.buckets.keys().next_back().unwrap_or(&0)
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        let sum: f64 = self
            .buckets
            .iter()
            .map(|(v, n)| *v as f64 * *n as f64)
            .sum();
        sum / self.count as f64
    }

    pub fn pairs(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.buckets.iter().map(|(a, b)| (*a, *b))
    }
}

/// The per-interval latency line from raw values (sorted in place, then cleared).
pub fn latency_line(pid: u32, t: f64, peer: &str, size: u32, v: &mut Vec<u64>) -> Option<String> {
    if v.is_empty() {
        return None;
    }
    v.sort_unstable();
    let n = v.len();
    let mean = v.iter().map(|x| *x as f64).sum::<f64>() / n as f64;
    let pct = |q: f64| v[((q * n as f64) as usize).min(n - 1)] as f64 / 1e3;
    let line = format!(
        "\"type\":\"latency\",\"pid\":{pid},\"t\":{t:.3},\"peer\":{},\"size\":{size},\
         \"cnt\":{n},\"mean_us\":{:.3},\"min_us\":{:.3},\"p50_us\":{:.3},\"p90_us\":{:.3},\
         \"p99_us\":{:.3},\"max_us\":{:.3}",
        json_str(peer),
        mean / 1e3,
        v[0] as f64 / 1e3,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        v[n - 1] as f64 / 1e3
    );
    v.clear();
    Some(line)
}

/// Loss accounting per (writer, key), as ddsperf's: each key's next expected seq is `seq + n`.
#[derive(Debug, Default)]
pub struct SeqTracker {
    per_writer: HashMap<[u8; 16], (Vec<u32>, u64)>,
    pub total: u64,
    pub lost: u64,
    pub bytes: u64,
    pub last_size: u32,
}

impl SeqTracker {
    /// Counts a sample; `Err` when its key is not below `nkeys` (ddsperf ends the run, exit 3).
    pub fn record(
        &mut self,
        writer: [u8; 16],
        seq: u32,
        key: u32,
        size: u32,
        nkeys: u32,
    ) -> Result<(), ()> {
        if key >= nkeys {
            return Err(());
        }
        let (expected, received) = self.per_writer.entry(writer).or_default();
        if expected.is_empty() {
            // The first sample fixes what every key expects next.
            *expected = (0..nkeys)
                .map(|i| {
                    seq.wrapping_add(i.wrapping_sub(key))
                        .wrapping_add(if i <= key { nkeys } else { 0 })
                })
                .collect();
        } else {
            self.lost += u64::from(seq.wrapping_sub(expected[key as usize]));
            expected[key as usize] = seq.wrapping_add(nkeys);
        }
        *received += 1;
        self.total += 1;
        self.bytes += u64::from(size);
        self.last_size = size;
        Ok(())
    }

    pub fn min_received(&self) -> Option<u64> {
        self.per_writer.values().map(|(_, r)| *r).min()
    }
}

// ---------------------------------------------------------------- the middleware side

/// What a worker's middleware provides to the run loop.
pub trait Link: Send + Sync {
    /// Writes a ping of `seq` (baggage for the ping size) with source timestamp `ts_ns` (odd).
    fn send_ping(&self, seq: u32, ts_ns: i64) -> Result<(), String>;
    /// Writes one data sample; `Ok(false)` when the write timed out (full history: retried).
    fn publish(&self, seq: u32, key: u32, ts_ns: i64) -> Result<bool, String>;
    /// The number of peers matched on every endpoint this process's modes need.
    fn matched(&self) -> u32;
    /// Called about every 100 ms from the run loop (and while waiting for matches): ddsperf
    /// creates a pong writer per discovered peer, which a middleware without discovery
    /// callbacks does here.
    fn tick(&self) {}
    /// Called once before exit (deletes participants, closes sessions).
    fn close(&self) {}
}

#[derive(Default)]
struct PeerLatency {
    name: String,
    interval: Vec<u64>,
    run: Histogram,
    total: u64,
}

#[derive(Default)]
struct State {
    seqs: SeqTracker,
    last_total: u64,
    last_lost: u64,
    last_bytes: u64,
    lat: Vec<([u8; 16], PeerLatency)>,
    first_pong_t: Option<f64>,
    cur_seq: u32,
    pinging: bool,
    last_ping: Option<Instant>,
    /// Round trips past the warm-up, for `--count`.
    measured: u64,
    key_error: bool,
    exit_code: i32,
}

/// One worker process's measurement state; the middleware's receive threads feed it.
pub struct Perf {
    pub cfg: Config,
    pid: u32,
    t0: Mutex<Instant>,
    state: Mutex<State>,
    wake: Condvar,
    stop: AtomicBool,
    link: OnceLock<Arc<dyn Link>>,
    /// Serializes ping writes (a pong and the watchdog may both send one).
    ping_lock: Mutex<()>,
}

impl Perf {
    pub fn new(cfg: Config) -> Arc<Perf> {
        Arc::new(Perf {
            cfg,
            pid: std::process::id(),
            t0: Mutex::new(Instant::now()),
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            link: OnceLock::new(),
            ping_lock: Mutex::new(()),
        })
    }

    fn since_start(&self) -> f64 {
        self.t0.lock().unwrap().elapsed().as_secs_f64()
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Tells the run loop that something changed (a match, a stop).
    pub fn notify(&self) {
        self.wake.notify_all();
    }

    pub fn emit_error(&self, kind: &str, msg: &str) {
        emit(&format!(
            "\"type\":\"error\",\"pid\":{},\"error\":\"{kind}\",\"message\":{},\"t\":{:.3}",
            self.pid,
            json_str(msg),
            self.since_start()
        ));
    }

    /// A participant seen by discovery (`self` for our own).
    pub fn participant(&self, host: &str, peer_pid: u32, is_self: bool) {
        emit(&format!(
            "\"type\":\"participant\",\"pid\":{},\"event\":\"new\",\"host\":{},\"peer_pid\":{peer_pid},\"self\":{is_self},\"t\":{:.3}",
            self.pid,
            json_str(host),
            self.since_start()
        ));
    }

    /// A data sample from `writer`.
    pub fn on_data(&self, writer: [u8; 16], seq: u32, key: u32, baggage_len: usize) {
        let size = KS_FIXED.saturating_add(baggage_len as u32);
        let mut st = self.lock();
        if st
            .seqs
            .record(writer, seq, key, size, self.cfg.nkeys)
            .is_err()
        {
            if !st.key_error {
                emit(&format!(
                    "\"type\":\"key_out_of_range\",\"key\":{key},\"nkeys\":{}",
                    self.cfg.nkeys
                ));
            }
            st.key_error = true;
            self.stop.store(true, Ordering::Relaxed);
            self.wake.notify_all();
        }
    }

    /// A pong from `src` (named `name` in the latency lines) carrying the ping's timestamp.
    pub fn on_pong(&self, src: [u8; 16], name: &str, seq: u32, ts_ns: i64) {
        let now = wall_ns();
        let one_way = if now > ts_ns {
            (now - ts_ns) as u64 / 2
        } else {
            0
        };
        let t = self.since_start();
        let send = {
            let mut st = self.lock();
            let first = *st.first_pong_t.get_or_insert(t);
            let idx = match st.lat.iter().position(|(s, _)| *s == src) {
                Some(i) => i,
                None => {
                    st.lat.push((
                        src,
                        PeerLatency {
                            name: name.to_string(),
                            ..Default::default()
                        },
                    ));
                    st.lat.len() - 1
                }
            };
            let l = &mut st.lat[idx].1;
            l.interval.push(one_way);
            l.total += 1;
            if t - first >= self.cfg.warmup_s {
                l.run.record(one_way);
                if seq == st.cur_seq {
                    st.measured += 1;
                    if self.cfg.count > 0 && st.measured >= self.cfg.count {
                        self.stop.store(true, Ordering::Relaxed);
                        self.wake.notify_all();
                    }
                }
            }
            // One peer per ping in the bench's latency cells: a pong of the current ping
            // releases the next. Not the timestamp's odd bit, as ddsperf does: a middleware
            // that truncates nanoseconds to the RTPS 2^-32 s fraction may clear it.
            st.pinging && seq == st.cur_seq
        };
        if send {
            self.send_ping();
        }
    }

    fn send_ping(&self) {
        if self.stopping() {
            return; // a pong after the end: the session may be closed already
        }
        let _g = self.ping_lock.lock().unwrap_or_else(|e| e.into_inner());
        let seq = {
            let mut st = self.lock();
            st.cur_seq = st.cur_seq.wrapping_add(1);
            st.last_ping = Some(Instant::now());
            st.cur_seq
        };
        if let Some(link) = self.link.get() {
            if let Err(e) = link.send_ping(seq, wall_ns() | 1) {
                self.emit_error("write", &e);
            }
        }
    }

    fn publish_loop(&self, link: &dyn Link) {
        let start = Instant::now();
        let (mut seq, mut key, mut written) = (0u32, 0u32, 0u64);
        let mut ts = 0;
        while !self.stopping() {
            // Even source timestamps (no reader takes data for a ping), a multiple of 2^-8 s
            // so that RTPS's fraction keeps them exact.
            if written % 64 == 0 {
                ts = wall_ns() / 3_906_250 * 3_906_250;
            }
            match link.publish(seq, key, ts) {
                Ok(true) => {}
                Ok(false) => {
                    emit("\"type\":\"write_error\",\"code\":10");
                    continue;
                }
                Err(e) => {
                    emit(&format!(
                        "\"type\":\"write_error\",\"message\":{}",
                        json_str(&e)
                    ));
                    self.lock().exit_code = 2;
                    self.stop.store(true, Ordering::Relaxed);
                    self.wake.notify_all();
                    return;
                }
            }
            written += 1;
            seq = seq.wrapping_add(1);
            key = (key + 1) % self.cfg.nkeys;
            let burst = u64::from(self.cfg.burst);
            if self.cfg.pub_rate > 0.0 && written % burst == 0 {
                while !self.stopping() {
                    let el = start.elapsed().as_secs_f64();
                    if (written / burst) as f64 / (el + 0.005) <= self.cfg.pub_rate {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    fn report(&self, t: f64, dt: f64) {
        let mut st = self.lock();
        if self.cfg.sub {
            let d = st.seqs.total - st.last_total;
            let dl = st.seqs.lost - st.last_lost;
            let db = st.seqs.bytes - st.last_bytes;
            if d > 0 || self.cfg.sub_every_second {
                emit(&format!(
                    "\"type\":\"sub\",\"pid\":{},\"t\":{t:.3},\"size\":{},\"total\":{},\"lost\":{},\"delta\":{d},\"delta_lost\":{dl},\"rate_ksps\":{:.6},\"rate_mbps\":{:.6}",
                    self.pid,
                    st.seqs.last_size,
                    st.seqs.total,
                    st.seqs.lost,
                    d as f64 / dt / 1e3,
                    db as f64 * 8.0 / dt / 1e6
                ));
            }
            st.last_total = st.seqs.total;
            st.last_lost = st.seqs.lost;
            st.last_bytes = st.seqs.bytes;
        }
        for (_, l) in st.lat.iter_mut() {
            if let Some(line) =
                latency_line(self.pid, t, &l.name, self.cfg.ping_size, &mut l.interval)
            {
                emit(&line);
            }
        }
    }

    fn summary(&self) {
        let st = self.lock();
        let mut lats = Vec::new();
        for (_, l) in &st.lat {
            let h = &l.run;
            let us = |ns: u64| ns as f64 / 1e3;
            let hist: Vec<String> = h.pairs().map(|(v, n)| format!("[{v},{n}]")).collect();
            lats.push(format!(
                "{{\"peer\":{},\"cnt\":{},\"mean_us\":{:.3},\"min_us\":{:.3},\"p50_us\":{:.3},\"p90_us\":{:.3},\"p99_us\":{:.3},\"p999_us\":{:.3},\"max_us\":{:.3},\"hist\":[{}]}}",
                json_str(&l.name),
                h.count(),
                h.mean() / 1e3,
                us(h.quantile(0.0)),
                us(h.quantile(0.5)),
                us(h.quantile(0.9)),
                us(h.quantile(0.99)),
                us(h.quantile(0.999)),
                us(h.quantile(1.0)),
                hist.join(",")
            ));
        }
        emit(&format!(
            "\"type\":\"summary\",\"pid\":{},\"latency\":[{}],\"received\":{},\"lost\":{},\"exit_code\":{},\"t\":{:.3}",
            self.pid,
            lats.join(","),
            st.seqs.total,
            st.seqs.lost,
            st.exit_code,
            self.since_start()
        ));
    }

    fn check_criteria(&self, matched: u32) {
        if matched < self.cfg.minmatch {
            self.emit_error(
                "too_few_matching",
                &format!("too few matching participants ({matched})"),
            );
            self.lock().exit_code = 1;
        }
        let mut st = self.lock();
        if self.cfg.q_roundtrips > 0 && st.lat.iter().any(|(_, l)| l.total < self.cfg.q_roundtrips)
        {
            drop(st);
            self.emit_error("too_few_roundtrips", "too few roundtrips for some peers");
            st = self.lock();
            st.exit_code = 1;
        }
        if self.cfg.q_samples > 0 && st.seqs.min_received().unwrap_or(0) < self.cfg.q_samples {
            drop(st);
            self.emit_error("too_few_samples", "too few samples for some peers");
            st = self.lock();
            st.exit_code = 1;
        }
        if st.key_error {
            st.exit_code = 3;
        }
    }

    /// Runs the experiment on `link` and returns the exit code (ddsperf's: 0 ok, 1 criteria
    /// not met, 2 a write failed, 3 a key out of range).
    pub fn run(self: &Arc<Self>, link: Arc<dyn Link>) -> i32 {
        let _ = self.link.set(link.clone());
        let cfg = &self.cfg;
        if cfg.initwait_s >= 0.0 {
            let until = Instant::now() + Duration::from_secs_f64(cfg.initwait_s);
            let mut st = self.lock();
            while link.matched() < cfg.minmatch && !self.stopping() && Instant::now() < until {
                link.tick();
                st = self
                    .wake
                    .wait_timeout(st, Duration::from_millis(20))
                    .unwrap()
                    .0;
            }
            drop(st);
            let n = link.matched();
            if n < cfg.minmatch {
                self.emit_error(
                    "too_few_matching",
                    &format!("too few matching participants ({n})"),
                );
                self.lock().exit_code = 1;
                return self.shutdown(&*link);
            }
            // Let the peer's side of the match settle (its pong writer, ACKNACKs).
            std::thread::sleep(Duration::from_millis(100));
        }
        // The run starts now: report times count from here, like ddsperf's tstart.
        let t0 = Instant::now();
        *self.t0.lock().unwrap() = t0;
        let publisher = cfg.publish.then(|| {
            let me = self.clone();
            let l = link.clone();
            std::thread::spawn(move || me.publish_loop(&*l))
        });
        if cfg.ping {
            self.lock().pinging = true;
            self.send_ping();
        }
        let end = (cfg.duration_s > 0.0).then(|| t0 + Duration::from_secs_f64(cfg.duration_s));
        let mut next = t0 + Duration::from_secs(1);
        let mut prev = t0;
        while !self.stopping() {
            link.tick();
            let now = Instant::now();
            if now >= next {
                // ddsperf prints the report due at the end instant (-D 3: 1.000 … 3.000).
                self.report((next - t0).as_secs_f64(), (now - prev).as_secs_f64());
                prev = now;
                let last = end.is_some_and(|e| next >= e);
                next += Duration::from_secs(1);
                if now > next + Duration::from_millis(500) {
                    next = now + Duration::from_secs(1);
                }
                if last {
                    break;
                }
            } else if end.is_some_and(|e| now >= e) {
                break; // a fractional -D ends between reports
            }
            if cfg.ping {
                // The watchdog: a lost ping or pong never stalls the run.
                let due = self
                    .lock()
                    .last_ping
                    .is_none_or(|p| p.elapsed() >= Duration::from_secs(1));
                if due {
                    self.send_ping();
                }
            }
            let mut until = next;
            if let Some(e) = end {
                until = until.min(e);
            }
            let st = self.lock();
            let wait = until
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            drop(self.wake.wait_timeout(st, wait).unwrap());
        }
        self.stop.store(true, Ordering::Relaxed);
        if cfg.count > 0 && prev.elapsed() > Duration::ZERO {
            // `--count` ends between reports: the last part's lines too.
            self.report(t0.elapsed().as_secs_f64(), prev.elapsed().as_secs_f64());
        }
        if let Some(p) = publisher {
            let _ = p.join();
        }
        self.check_criteria(link.matched());
        self.shutdown(&*link)
    }

    fn shutdown(&self, link: &dyn Link) -> i32 {
        self.stop.store(true, Ordering::Relaxed);
        self.summary();
        link.close();
        self.lock().exit_code
    }
}

#[cfg(test)]
#[path = "perf_core_tests.rs"]
mod tests;
