//! The raw UDP floor: the same experiments as `tessera perf` with no middleware at all, so the
//! report can show what the network stack alone costs.
//!
//! ```text
//! tessera bench udp ping|pong|pub|sub [--size N] [--duration S] [--warmup S]
//!                                     [--peer IP:PORT] [--port P] [--rate R]
//! ```
//!
//! - `pong` (and `sub`) bind `--port` (default 7700) and run until `--duration` or SIGINT/SIGTERM;
//!   `pong` echoes every datagram to its sender.
//! - `ping` sends one sample of `--size` bytes to `--peer` (default 127.0.0.1:7700) and waits for
//!   its echo before sending the next (as fast as possible, or `--rate` pings per second). The
//!   latency recorded is half the round trip, like ddsperf's. A ping not answered within 1 s is
//!   replaced by the next one. `--warmup S`: round trips of the first S seconds after the first
//!   echo stay out of the whole-run histogram.
//! - `pub` sends sequence-numbered samples to `--peer` as fast as possible, or `--rate` samples
//!   per second (paced like ddsperf: 1 ms sleeps when ahead); `sub` counts them per second and
//!   counts sequence gaps as lost.
//!
//! Output: the JSON lines of `tessera perf --json` (`latency`, `pub`, `sub`, final `summary`
//! with the whole-run histogram of `ping`; `error` when `ping` got no answer at all, exit 1), so
//! [`super::parse::parse_tessera_json`] reads them. Every line is flushed as written.
//!
//! Wake-up strategy: blocking sockets without a receive timeout (as the DDS defaults: blocking
//! receive, no busy-poll, no `SO_RCVTIMEO` timer per receive). A watchdog thread ends a blocking
//! receive when needed (end of run, a ping unanswered for 1 s, a report due while idle) by
//! sending a small wake-up datagram to the socket itself. Socket buffers: 8 MiB requested
//! (`SO_RCVBUFFORCE`/`SO_SNDBUFFORCE`, else the plain options), as Tessera does.
//!
//! Wire format of every datagram (little endian): magic `u32`, fragment index `u16`, fragment
//! count `u16`, sample size `u32`, reserved `u32`, sequence number `u64`, send time `u64` (ns,
//! the sender's monotonic clock), then padding. So a sample is at least [`HEADER`] = 32 bytes on
//! the wire; smaller `--size` values are sent as 32 bytes (and reported as the size asked for). A UDP datagram carries at most
//! 65507 bytes of payload; a sample larger than [`MAX_FRAGMENT`] = 65000 bytes is split into
//! `ceil(size / 65000)` datagrams (each with its own header, counted within the size) and counts
//! as received (or answered) only when all its datagrams arrived. Sizes up to 64 MiB.

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tessera_cli::perf::report::{FinalError, PeerLabel, ReportLine, Reporter, Stamp};
use tessera_cli::perf::stats::{ClockDecimator, LatencyStats, PubHist, PubPacer, SeqTracker};

/// Bytes of the header every datagram starts with.
pub const HEADER: usize = 32;
/// Largest datagram the floor sends (below UDP's 65507-byte limit).
pub const MAX_FRAGMENT: usize = 65_000;
/// Largest `--size`.
pub const MAX_SIZE: usize = 64 << 20;
/// Default port of `pong` and `sub`, and of the default `--peer`.
pub const DEFAULT_PORT: u16 = 7700;
/// Requested receive buffer size (the send buffer keeps the host's default, as Tessera's).
pub const SOCKET_BUFFER: usize = 8 << 20;

const MAGIC_DATA: u32 = 0x5442_4644; // "TBFD"
const MAGIC_WAKE: u32 = 0x5442_4657; // "TBFW"
const SEC: i64 = 1_000_000_000;
/// A ping unanswered for this long is replaced by the next one.
const PING_TIMEOUT: i64 = SEC;
/// How often the watchdog looks.
const WATCH_PERIOD: Duration = Duration::from_millis(100);

/// What one floor process does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Measures round trips against a `pong`.
    Ping,
    /// Echoes every datagram.
    Pong,
    /// Sends a stream of samples.
    Pub,
    /// Receives and counts the stream.
    Sub,
}

/// The command line of `tessera bench udp`.
#[derive(Debug, Clone, PartialEq)]
pub struct FloorConfig {
    /// The role.
    pub role: Role,
    /// Sample size in bytes (default 12, ddsperf's smallest sample).
    pub size: usize,
    /// Run time; `None`: until SIGINT/SIGTERM.
    pub duration: Option<Duration>,
    /// `ping`: seconds after the first echo whose round trips stay out of the summary.
    pub warmup: Option<Duration>,
    /// Where `ping` and `pub` send (default 127.0.0.1:7700).
    pub peer: SocketAddr,
    /// Local port (default 7700 for `pong`/`sub`, any for `ping`/`pub`).
    pub port: u16,
    /// `ping`: pings per second; `pub`: samples per second; `None`: as fast as possible.
    pub rate: Option<f64>,
}

/// Usage text of `tessera bench udp`.
pub fn usage() -> &'static str {
    "usage: tessera bench udp ping|pong|pub|sub [--size N] [--duration S] [--warmup S]\n\
     \x20                                        [--peer IP:PORT] [--port P] [--rate R]\n\
     \n\
     The raw UDP floor: the latency (ping/pong) and throughput (pub/sub) experiments with\n\
     no middleware, printing the JSON lines of `tessera perf --json`.\n\
     \x20 --size N        sample size in bytes (default 12; at least 24 bytes are sent;\n\
     \x20                 above 65000 a sample is split into several datagrams)\n\
     \x20 --duration S    stop after S seconds (default: at SIGINT/SIGTERM)\n\
     \x20 --warmup S      ping: leave the first S seconds after the first echo out of the\n\
     \x20                 summary histogram\n\
     \x20 --peer IP:PORT  where ping/pub send (default 127.0.0.1:7700)\n\
     \x20 --port P        local port (default 7700 for pong/sub, any for ping/pub)\n\
     \x20 --rate R        ping: pings/s; pub: samples/s (default: as fast as possible)\n"
}

/// Parses a command-line duration in seconds (also used by `worker`).
pub(crate) fn secs(v: &str, what: &str) -> Result<Duration, String> {
    match v.parse::<f64>() {
        Ok(d) if d >= 0.0 && d.is_finite() && d < 1e9 => Ok(Duration::from_secs_f64(d)),
        _ => Err(format!("{what} {v}: invalid duration")),
    }
}

/// The options of a command line as `(option, value)` pairs, from `--opt value` or
/// `--opt=value` (every option of the bench's tools takes a value).
pub(crate) fn option_pairs<'a>(
    mut words: impl Iterator<Item = &'a str>,
) -> Result<Vec<(&'a str, &'a str)>, String> {
    let mut out = Vec::new();
    while let Some(w) = words.next() {
        let (opt, value) = match w.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v)),
            _ => (w, None),
        };
        let value = value
            .or_else(|| words.next())
            .ok_or_else(|| format!("option {opt} requires an argument"))?;
        out.push((opt, value));
    }
    Ok(out)
}

/// Runs a tool of the bench (`udp`, `shm`) from its command line: parses it (exit 3 with the
/// usage on error), ends the run at SIGINT/SIGTERM, prints JSON lines on stdout.
pub(crate) fn tool_main<C>(
    name: &str,
    args: &[String],
    parse: fn(&[String]) -> Result<C, String>,
    usage: fn() -> &'static str,
    run: fn(&C, io::Stdout, Arc<AtomicBool>) -> i32,
) -> i32 {
    let cfg = match parse(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tessera bench {name}: {e}");
            eprint!("{}", usage());
            return 3;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let s = stop.clone();
    // Fails if the process already has a handler; then only --duration ends the run.
    let _ = ctrlc::set_handler(move || s.store(true, Ordering::Release));
    run(&cfg, io::stdout(), stop)
}

/// Parses the words after `udp` (a leading `udp` is skipped too).
pub fn parse_args(args: &[String]) -> Result<FloorConfig, String> {
    let mut words = args.iter().map(String::as_str).peekable();
    if words.peek() == Some(&"udp") {
        words.next();
    }
    let role = match words.next() {
        Some("ping") => Role::Ping,
        Some("pong") => Role::Pong,
        Some("pub") => Role::Pub,
        Some("sub") => Role::Sub,
        Some(other) => return Err(format!("unknown role {other:?}")),
        None => return Err("missing role (ping, pong, pub or sub)".into()),
    };
    let mut cfg = FloorConfig {
        role,
        size: 12,
        duration: None,
        warmup: None,
        peer: SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)),
        port: if matches!(role, Role::Pong | Role::Sub) {
            DEFAULT_PORT
        } else {
            0
        },
        rate: None,
    };
    for (opt, v) in option_pairs(words)? {
        match opt {
            "--size" => {
                cfg.size = parse_size(v).ok_or_else(|| format!("--size {v}: invalid size"))?;
            }
            "--duration" => cfg.duration = Some(secs(v, "--duration")?),
            "--warmup" => cfg.warmup = Some(secs(v, "--warmup")?),
            "--peer" => {
                cfg.peer = v
                    .parse()
                    .map_err(|_| format!("--peer {v}: expected IP:PORT"))?;
            }
            "--port" => {
                cfg.port = v.parse().map_err(|_| format!("--port {v}: invalid port"))?;
            }
            "--rate" => match v.parse::<f64>() {
                Ok(r) if r > 0.0 && r.is_finite() => cfg.rate = Some(r),
                Ok(r) if r.is_infinite() && r > 0.0 => cfg.rate = None,
                _ => return Err(format!("--rate {v}: invalid rate")),
            },
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(cfg)
}

/// A size with an optional `k`/`KiB`/`M`/`MiB` (binary) or `kB`/`MB` (decimal) suffix.
fn parse_size(v: &str) -> Option<usize> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: usize = n.parse().ok()?;
    let mult = match unit {
        "" => 1,
        "k" | "KiB" => 1024,
        "kB" => 1000,
        "M" | "MiB" => 1 << 20,
        "MB" => 1_000_000,
        _ => return None,
    };
    let s = n.checked_mul(mult)?;
    (s <= MAX_SIZE).then_some(s)
}

/// Lengths of the datagrams of one sample of `size` bytes.
pub fn fragment_lengths(size: usize) -> Vec<usize> {
    let size = size.max(HEADER);
    let n = size.div_ceil(MAX_FRAGMENT);
    (0..n)
        .map(|i| (size - i * MAX_FRAGMENT).clamp(HEADER, MAX_FRAGMENT))
        .collect()
}

/// The header of one datagram.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Fragment index within the sample.
    pub frag: u16,
    /// Fragments of the sample.
    pub nfrags: u16,
    /// Size of the whole sample as the sender was asked (`--size`).
    pub size: u32,
    /// Sample sequence number.
    pub seq: u64,
    /// Send time (ns, sender's monotonic clock).
    pub t_ns: u64,
}

impl Header {
    /// Writes the header into the first [`HEADER`] bytes of `buf` (which must be that long).
    pub fn write(&self, buf: &mut [u8]) {
        if buf.len() < HEADER {
            return;
        }
        buf[0..4].copy_from_slice(&MAGIC_DATA.to_le_bytes());
        buf[4..6].copy_from_slice(&self.frag.to_le_bytes());
        buf[6..8].copy_from_slice(&self.nfrags.to_le_bytes());
        buf[8..12].copy_from_slice(&self.size.to_le_bytes());
        buf[12..16].fill(0);
        buf[16..24].copy_from_slice(&self.seq.to_le_bytes());
        buf[24..32].copy_from_slice(&self.t_ns.to_le_bytes());
    }

    /// Reads a data datagram's header; `None` for anything else (too short, wrong magic, a
    /// wake-up datagram, an impossible fragment index).
    pub fn read(buf: &[u8]) -> Option<Header> {
        let b = buf.get(..HEADER)?;
        let u16_at = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        let u64_at = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i..i + 8]);
            u64::from_le_bytes(a)
        };
        if u32::from_le_bytes([b[0], b[1], b[2], b[3]]) != MAGIC_DATA {
            return None;
        }
        let h = Header {
            frag: u16_at(4),
            nfrags: u16_at(6),
            size: u32::from_le_bytes([b[8], b[9], b[10], b[11]]),
            seq: u64_at(16),
            t_ns: u64_at(24),
        };
        (h.frag < h.nfrags).then_some(h)
    }
}

/// Logs datagrams that were neither floor data nor wake-ups (dropped, never a panic).
fn report_foreign(n: u64) {
    if n > 0 {
        eprintln!("udp floor: dropped {n} datagrams that were not floor data");
    }
}

fn is_wake(buf: &[u8]) -> bool {
    buf.get(..4) == Some(&MAGIC_WAKE.to_le_bytes()[..])
}

/// Monotonic ns since the first call (the process's clock for the floor).
fn mono_ns() -> i64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as i64
}

/// The loopback address of the bound socket, for wake-up datagrams.
fn wake_addr(sock: &UdpSocket) -> io::Result<SocketAddr> {
    let local = sock.local_addr()?;
    let ip = match local.ip() {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    Ok(SocketAddr::new(ip, local.port()))
}

/// Ends blocking receives when the loop must look at the clock: at the end of the run, or when
/// the loop has not run for `idle_ns` (a report or a ping timeout may be due).
struct Watchdog {
    done: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Watchdog {
    fn start(
        sock: &UdpSocket,
        stop: Arc<AtomicBool>,
        deadline: Option<i64>,
        last_loop: Arc<AtomicI64>,
        idle_ns: i64,
    ) -> io::Result<Watchdog> {
        let sock = sock.try_clone()?;
        let to = wake_addr(&sock)?;
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn(move || {
                let wake = MAGIC_WAKE.to_le_bytes();
                while !d.load(Ordering::Acquire) {
                    std::thread::sleep(WATCH_PERIOD);
                    let now = mono_ns();
                    let ending =
                        stop.load(Ordering::Acquire) || deadline.is_some_and(|dl| now >= dl);
                    if ending || now - last_loop.load(Ordering::Acquire) >= idle_ns {
                        let _ = sock.send_to(&wake, to);
                    }
                }
            })?;
        Ok(Watchdog {
            done,
            thread: Some(thread),
        })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn bind(cfg: &FloorConfig) -> io::Result<UdpSocket> {
    let any: IpAddr = match cfg.peer {
        SocketAddr::V6(_) if matches!(cfg.role, Role::Ping | Role::Pub) => {
            Ipv6Addr::UNSPECIFIED.into()
        }
        _ => Ipv4Addr::UNSPECIFIED.into(),
    };
    let sock = UdpSocket::bind(SocketAddr::new(any, cfg.port))?;
    // Same socket sizing as Tessera's transport, so the floor is measured like the DDS.
    tessera::transport::udp::size_socket_buffers(&sock, SOCKET_BUFFER, None);
    Ok(sock)
}

/// Runs one floor process writing its JSON lines to `out`; `stop` ends it early. Returns the
/// exit status (0; 1 when `ping` got no answer; 2 on a socket error).
pub fn run<W: Write>(cfg: &FloorConfig, out: W, stop: Arc<AtomicBool>) -> i32 {
    let mut rep = Reporter::new(out, true);
    let sock = match bind(cfg) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("tessera bench udp: bind port {}: {e}", cfg.port);
            return 2;
        }
    };
    let r = match cfg.role {
        Role::Ping => ping(cfg, &sock, &mut rep, stop),
        Role::Pong => pong(cfg, &sock, &mut rep, stop),
        Role::Pub => publish(cfg, &sock, &mut rep, &stop),
        Role::Sub => subscribe(cfg, &sock, &mut rep, stop),
    };
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("tessera bench udp: {e}");
            2
        }
    }
}

/// Run bookkeeping shared by the roles: start, end, report schedule.
struct Clock {
    pid: u32,
    tstart: i64,
    tend: Option<i64>,
    tnext: i64,
    tprev: i64,
}

impl Clock {
    fn new(cfg: &FloorConfig) -> Clock {
        let tstart = mono_ns();
        Clock {
            pid: std::process::id(),
            tstart,
            tend: cfg
                .duration
                .map(|d| tstart + i64::try_from(d.as_nanos()).unwrap_or(i64::MAX / 2)),
            tnext: tstart + SEC,
            tprev: tstart,
        }
    }

    /// If a report is due at `now`: its stamp and interval, and the schedule moves on.
    fn due(&mut self, now: i64) -> Option<(Stamp, i64)> {
        if now < self.tnext {
            return None;
        }
        let r = (Stamp::new(self.pid, now, self.tstart), now - self.tprev);
        self.tprev = now;
        self.tnext += SEC;
        if now > self.tnext - SEC / 2 {
            self.tnext = now + SEC;
        }
        Some(r)
    }

    fn ended(&self, now: i64, stop: &AtomicBool) -> bool {
        stop.load(Ordering::Acquire) || self.tend.is_some_and(|t| now >= t)
    }
}

fn send_sample(
    sock: &UdpSocket,
    to: SocketAddr,
    buf: &mut [u8],
    (size, frags): (usize, &[usize]),
    seq: u64,
) -> io::Result<()> {
    let t_ns = mono_ns() as u64;
    let nfrags = frags.len() as u16;
    for (i, &len) in frags.iter().enumerate() {
        Header {
            frag: i as u16,
            nfrags,
            size: size as u32,
            seq,
            t_ns,
        }
        .write(buf);
        sock.send_to(&buf[..len], to)?;
    }
    Ok(())
}

fn ping<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let frags = fragment_lengths(cfg.size);
    let mut buf = vec![0u8; MAX_FRAGMENT.max(HEADER)];
    let mut rbuf = vec![0u8; 65_536];
    let mut clock = Clock::new(cfg);
    let last_loop = Arc::new(AtomicI64::new(clock.tstart));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop.clone(), SEC / 2)?;
    let label = PeerLabel::HostPid {
        host: cfg.peer.ip().to_string(),
        pid: u32::from(cfg.peer.port()),
    };
    let period = cfg.rate.map(|r| (1e9 / r) as i64);
    let warmup = cfg.warmup.map(|d| d.as_nanos() as i64).filter(|&w| w > 0);
    let mut stats = LatencyStats::new();
    let mut first_echo: Option<i64> = None;
    let mut seq: u64 = 0;
    let mut got: usize = 0;
    let mut sent_at = mono_ns();
    send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq)?;
    let mut foreign: u64 = 0;
    loop {
        let (n, _) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            // ICMP port unreachable from a pong not (yet) there: try again later.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => (0, cfg.peer),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut now = mono_ns();
        last_loop.store(now, Ordering::Release);
        let mut send_next = false;
        if let Some(h) = rbuf.get(..n).and_then(Header::read) {
            if h.seq == seq && usize::from(h.nfrags) == frags.len() {
                got += 1;
                if got == frags.len() {
                    let rtt = now - h.t_ns as i64;
                    let first = *first_echo.get_or_insert(now);
                    let overall = warmup.is_none_or(|w| now >= first + w);
                    stats.record_with(rtt / 2, overall);
                    send_next = true;
                }
            }
        } else if !is_wake(&rbuf[..n]) {
            // Not the floor's traffic: counted, reported at the end.
            foreign += 1;
        }
        if !send_next && now - sent_at >= PING_TIMEOUT {
            send_next = true;
        }
        if let Some((stamp, _)) = clock.due(now) {
            if let Some(s) = stats.take_interval() {
                rep.emit(&ReportLine::Latency {
                    stamp,
                    sublat: false,
                    peer: label.clone(),
                    size: cfg.size as u32,
                    stats: s,
                })?;
            }
        }
        if clock.ended(now, &stop) {
            break;
        }
        if send_next {
            if let Some(p) = period {
                let next = sent_at + p;
                if next > now {
                    std::thread::sleep(Duration::from_nanos((next - now) as u64));
                    now = mono_ns();
                }
            }
            seq += 1;
            got = 0;
            sent_at = now;
            last_loop.store(now, Ordering::Release);
            send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq)?;
        }
    }
    let overall: Vec<_> = stats.overall().map(|o| (label, o)).into_iter().collect();
    let code = if stats.total_count() == 0 {
        rep.emit(&ReportLine::Error {
            pid: clock.pid,
            error: FinalError::TooFewRoundtrips,
        })?;
        1
    } else {
        0
    };
    report_foreign(foreign);
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: overall,
            received: 0,
            lost: 0,
            exit_code: code,
        },
        t,
    )?;
    Ok(code)
}

fn pong<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let mut rbuf = vec![0u8; 65_536];
    let clock = Clock::new(cfg);
    // Nothing to report per second: only the end of the run needs a wake-up.
    let last_loop = Arc::new(AtomicI64::new(i64::MAX / 2));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop, i64::MAX)?;
    let mut echoed: u64 = 0;
    loop {
        let (n, from) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => continue,
            Err(e) => return Err(e),
        };
        let msg = &rbuf[..n];
        if !is_wake(msg) {
            // A pinger that went away makes the send fail with ECONNREFUSED later: ignore.
            if sock.send_to(msg, from).is_ok() {
                echoed += 1;
            }
        } else if clock.ended(mono_ns(), &stop) {
            break;
        }
    }
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received: echoed,
            lost: 0,
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}

fn publish<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: &AtomicBool,
) -> io::Result<i32> {
    let frags = fragment_lengths(cfg.size);
    let mut buf = vec![0u8; MAX_FRAGMENT.max(HEADER)];
    let mut clock = Clock::new(cfg);
    let mut t = clock.tstart;
    let mut pacer = PubPacer::new(cfg.rate, 1, t);
    let mut dec = ClockDecimator::default();
    let mut hist = PubHist::default();
    let mut seq: u64 = 0;
    let mut send_errors: u64 = 0;
    loop {
        match send_sample(sock, cfg.peer, &mut buf, (cfg.size, &frags), seq) {
            Ok(()) => {}
            // No receiver yet (ICMP port unreachable) or a full queue: the sample is lost,
            // as a datagram would be.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::ConnectionRefused | io::ErrorKind::WouldBlock
                ) || e.raw_os_error() == Some(libc::ENOBUFS) =>
            {
                send_errors += 1;
            }
            Err(e) => return Err(e),
        }
        seq += 1;
        let dt = if dec.read_clock_now() {
            let t2 = mono_ns();
            let d = t2 - t;
            t = t2;
            d
        } else {
            0
        };
        hist.record(dt.max(0) as u64);
        dec.after_write(dt);
        if pacer.after_write() {
            let mut slept = false;
            while pacer.must_wait(t) && !stop.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(1));
                t = mono_ns();
                slept = true;
            }
            if slept {
                dec.reset();
            }
        }
        if dt == 0 && seq % 64 != 0 {
            continue;
        }
        let now = if dt == 0 { mono_ns() } else { t };
        if let Some((stamp, dt_ns)) = clock.due(now) {
            rep.emit(&ReportLine::Pub {
                stamp,
                hist: hist.take(),
                dt_ns,
            })?;
        }
        if clock.ended(now, stop) {
            break;
        }
    }
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received: 0,
            lost: send_errors,
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}

fn subscribe<W: Write>(
    cfg: &FloorConfig,
    sock: &UdpSocket,
    rep: &mut Reporter<W>,
    stop: Arc<AtomicBool>,
) -> io::Result<i32> {
    let mut rbuf = vec![0u8; 65_536];
    let mut clock = Clock::new(cfg);
    let last_loop = Arc::new(AtomicI64::new(clock.tstart));
    let _wd = Watchdog::start(sock, stop.clone(), clock.tend, last_loop.clone(), SEC / 2)?;
    let mut tracker = SeqTracker::new(1, false);
    // The sample being reassembled: (source, seq, fragments seen).
    let mut cur: Option<(SocketAddr, u64, usize)> = None;
    let mut foreign: u64 = 0;
    loop {
        let (n, from) = match sock.recv_from(&mut rbuf) {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let now = mono_ns();
        last_loop.store(now, Ordering::Release);
        if let Some(h) = rbuf.get(..n).and_then(Header::read) {
            let same = matches!(cur, Some((f, s, _)) if f == from && s == h.seq);
            if !same {
                cur = Some((from, h.seq, 0));
            }
            if let Some(c) = cur.as_mut() {
                c.2 += 1;
                if c.2 == usize::from(h.nfrags) {
                    let handle = source_handle(from);
                    let _ = tracker.on_sample(handle, h.seq as u32, 0, h.size, 0, || Some(handle));
                    cur = None;
                }
            }
        } else if !is_wake(&rbuf[..n]) {
            // Not the floor's traffic: counted, reported at the end.
            foreign += 1;
        }
        if let Some((stamp, dt_ns)) = clock.due(now) {
            let counts = tracker.interval();
            if counts.delta > 0 {
                rep.emit(&ReportLine::Sub {
                    stamp,
                    counts,
                    dt_ns,
                })?;
            }
        }
        if clock.ended(now, &stop) {
            break;
        }
    }
    let received = tracker.publishers().iter().map(|p| p.nrecv).sum::<u64>();
    report_foreign(foreign);
    let t = (mono_ns() - clock.tstart) as f64 / 1e9;
    rep.emit_at(
        &ReportLine::Summary {
            answers: None,
            pid: clock.pid,
            latency: Vec::new(),
            received,
            lost: tracker.total_lost(),
            exit_code: 0,
        },
        t,
    )?;
    Ok(0)
}

/// A 64-bit name for a sender address.
fn source_handle(a: SocketAddr) -> u64 {
    let ip = match a.ip() {
        IpAddr::V4(v) => u64::from(u32::from(v)),
        IpAddr::V6(v) => {
            let o = v.octets();
            let mut x = [0u8; 8];
            x.copy_from_slice(&o[8..]);
            u64::from_be_bytes(x)
        }
    };
    (ip << 16) ^ u64::from(a.port())
}

/// `tessera bench udp ...`: `args` are the words after `udp` (a leading `udp` is accepted).
/// Prints JSON lines on stdout; returns the exit status (3 for a bad command line).
pub fn main(args: &[String]) -> i32 {
    tool_main("udp", args, parse_args, usage, run)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::parse_tessera_json;
    use tessera_cli::testns as netns;

    fn a(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn command_line() {
        let c = parse_args(&a(&["ping"])).unwrap();
        assert_eq!(c.role, Role::Ping);
        assert_eq!(c.size, 12);
        assert_eq!(c.port, 0);
        assert_eq!(c.peer, "127.0.0.1:7700".parse().unwrap());
        assert_eq!(c.duration, None);
        let c = parse_args(&a(&[
            "udp",
            "sub",
            "--size",
            "1k",
            "--duration=2.5",
            "--port",
            "9000",
        ]))
        .unwrap();
        assert_eq!(c.role, Role::Sub);
        assert_eq!(c.size, 1024);
        assert_eq!(c.duration, Some(Duration::from_millis(2500)));
        assert_eq!(c.port, 9000);
        let c = parse_args(&a(&[
            "pub",
            "--rate",
            "1000",
            "--peer",
            "10.0.0.2:7777",
            "--warmup",
            "1",
        ]))
        .unwrap();
        assert_eq!(c.rate, Some(1000.0));
        assert_eq!(c.peer, "10.0.0.2:7777".parse().unwrap());
        assert_eq!(c.warmup, Some(Duration::from_secs(1)));
        assert_eq!(parse_args(&a(&["pong"])).unwrap().port, DEFAULT_PORT);
        for bad in [
            &[][..],
            &["pang"],
            &["ping", "--size"],
            &["ping", "--size", "x"],
            &["ping", "--size", "1G"],
            &["ping", "--rate", "0"],
            &["ping", "--peer", "nowhere"],
            &["ping", "--duration", "-1"],
            &["ping", "--bogus"],
        ] {
            assert!(parse_args(&a(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn fragments_and_headers() {
        assert_eq!(fragment_lengths(12), vec![HEADER]);
        assert_eq!(fragment_lengths(1024), vec![1024]);
        assert_eq!(fragment_lengths(65_000), vec![65_000]);
        assert_eq!(fragment_lengths(65_001), vec![65_000, HEADER]);
        assert_eq!(
            fragment_lengths(200_000),
            vec![65_000, 65_000, 65_000, 5_000]
        );
        assert_eq!(fragment_lengths(200_000).iter().sum::<usize>(), 200_000);
        let h = Header {
            frag: 2,
            nfrags: 4,
            size: 200_000,
            seq: 1 << 40,
            t_ns: 123_456_789,
        };
        let mut b = [0u8; 40];
        h.write(&mut b);
        assert_eq!(Header::read(&b), Some(h));
        assert_eq!(Header::read(&b[..HEADER - 1]), None);
        assert!(!is_wake(&b));
        assert!(is_wake(&MAGIC_WAKE.to_le_bytes()));
        assert_eq!(Header::read(&MAGIC_WAKE.to_le_bytes()), None);
        // Fragment index out of range.
        let mut bad = h;
        bad.frag = 4;
        bad.write(&mut b);
        assert_eq!(Header::read(&b), None);
    }

    fn run_pair(server: FloorConfig, client: FloorConfig) -> (String, i32, String, i32) {
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let srv = std::thread::spawn(move || {
            let mut out = Vec::new();
            let code = run(&server, &mut out, s2);
            (String::from_utf8(out).unwrap(), code)
        });
        std::thread::sleep(Duration::from_millis(100));
        let mut out = Vec::new();
        let code = run(&client, &mut out, Arc::new(AtomicBool::new(false)));
        stop.store(true, Ordering::Release);
        let (sout, scode) = srv.join().unwrap();
        (String::from_utf8(out).unwrap(), code, sout, scode)
    }

    fn cfg(args: &[&str]) -> FloorConfig {
        parse_args(&a(args)).unwrap()
    }

    #[test]
    #[ignore = "runs inside a network namespace (see floor_end_to_end)"]
    fn floor_end_to_end_inner() {
        netns::require_inside("floor_end_to_end");
        // Latency, small samples, with warm-up.
        let (out, code, pong_out, pong_code) = run_pair(
            cfg(&["pong", "--port", "7700"]),
            cfg(&["ping", "--duration", "2.2", "--warmup", "0.5"]),
        );
        assert_eq!((code, pong_code), (0, 0), "{out}\n{pong_out}");
        let p = parse_tessera_json(&out);
        assert_eq!(p.latency.len(), 2, "{out}");
        assert_eq!(p.latency[0].peer, "127.0.0.1:7700");
        assert_eq!(p.latency[0].size, 12);
        let counted: u64 = p.latency.iter().map(|l| l.summary.count).sum();
        assert!(counted > 100, "{out}");
        let in_hist: u64 = p.hist.iter().map(|h| h.1).sum();
        assert!(
            in_hist > 0 && in_hist < counted,
            "warm-up left out: {in_hist} {counted}"
        );
        assert!(p.errors.is_empty());

        // Latency, fragmented samples.
        let (out, code, _, _) = run_pair(
            cfg(&["pong", "--port", "7701"]),
            cfg(&[
                "ping",
                "--duration",
                "1.2",
                "--size",
                "150000",
                "--peer",
                "127.0.0.1:7701",
                "--rate",
                "200",
            ]),
        );
        assert_eq!(code, 0, "{out}");
        let p = parse_tessera_json(&out);
        assert_eq!(p.latency.len(), 1, "{out}");
        assert_eq!(p.latency[0].size, 150_000);
        assert!(p.latency[0].summary.count > 50, "{out}");

        // Throughput at a fixed rate, fragmented: nothing lost on loopback at 500/s.
        let (out, code, sub_out, sub_code) = run_pair(
            cfg(&["sub", "--port", "7702", "--duration", "2.6"]),
            cfg(&[
                "pub",
                "--duration",
                "2.1",
                "--size",
                "100000",
                "--peer",
                "127.0.0.1:7702",
                "--rate",
                "500",
            ]),
        );
        assert_eq!((code, sub_code), (0, 0), "{out}\n{sub_out}");
        assert!(out.contains("\"type\":\"pub\""), "{out}");
        let s = parse_tessera_json(&sub_out);
        assert!(s.subs.len() >= 2, "{sub_out}");
        let last = s.subs.last().unwrap();
        assert_eq!(last.size, 100_000);
        assert!(last.total > 800, "{sub_out}");
        assert_eq!(last.lost, 0, "{sub_out}");
        assert!((0.3..0.7).contains(&s.subs[1].rate_ksps), "{sub_out}");

        // No pong at all: exit 1 with an error line.
        let mut out = Vec::new();
        let code = run(
            &cfg(&["ping", "--duration", "1.1", "--peer", "127.0.0.1:7799"]),
            &mut out,
            Arc::new(AtomicBool::new(false)),
        );
        let out = String::from_utf8(out).unwrap();
        assert_eq!(code, 1, "{out}");
        assert_eq!(parse_tessera_json(&out).errors.len(), 1, "{out}");
    }

    #[test]
    fn floor_end_to_end() {
        netns::run_inner("floor::tests::floor_end_to_end_inner");
    }
}
