//! Report lines of `tessera perf`: one typed record per line ddsperf prints, rendered either as
//! ddsperf's exact text or (with `--json`) as one JSON object per line.
//!
//! Every line goes to standard output. Stamped lines start with `[PID] T.TTT ` where `T` is the
//! time in seconds since the start of the run (or since `-R`), and ddsperf puts one more space
//! before the first field of most lines, so they read `[PID] T.TTT  size ...`.

use std::fmt::Write as _;
use std::io::{self, Write};

use serde_json::{json, Value};

use super::args::RssCriterion;
use super::protocol::{CpuStatsSample, MatchMask};
use super::stats::{
    KeyOutOfRange, LatencySummary, OverallLatency, PubHist, SubInterval, PUB_HIST_BINS,
};

/// C `printf("%W.Pg", v)`: `prec` significant digits, trailing zeros removed, exponent form when
/// the exponent is < −4 or ≥ `prec`, right-aligned in `width`.
pub fn fmt_g(v: f64, width: usize, prec: usize) -> String {
    let p = prec.max(1);
    let body = if v.is_nan() {
        "nan".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.to_string()
    } else if v == 0.0 {
        if v.is_sign_negative() { "-0" } else { "0" }.to_string()
    } else {
        let e_form = format!("{:.*e}", p - 1, v);
        let (mant, exp) = e_form.split_once('e').unwrap_or((&e_form, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        if exp < -4 || exp >= p as i32 {
            let sign = if exp < 0 { '-' } else { '+' };
            format!(
                "{}e{sign}{:02}",
                strip_fraction_zeros(mant),
                exp.unsigned_abs()
            )
        } else {
            let decimals = (p as i32 - 1 - exp).max(0) as usize;
            strip_fraction_zeros(&format!("{v:.decimals$}"))
        }
    };
    format!("{body:>width$}")
}

fn strip_fraction_zeros(s: &str) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s.to_string()
    }
}

/// The `[PID] T.TTT ` prefix of a periodic report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stamp {
    /// Our process id.
    pub pid: u32,
    /// Seconds since the time reference.
    pub t: f64,
}

impl Stamp {
    /// A stamp for time `now_ns` relative to `tref_ns`.
    pub fn new(pid: u32, now_ns: i64, tref_ns: i64) -> Self {
        Stamp {
            pid,
            t: (now_ns - tref_ns) as f64 / 1e9,
        }
    }

    /// `[PID] T.TTT ` (with the trailing space).
    pub fn prefix(&self) -> String {
        format!("[{}] {:.3} ", self.pid, self.t)
    }

    fn json(&self) -> (u32, f64) {
        (self.pid, (self.t * 1000.0).round() / 1000.0)
    }
}

/// How a latency line names its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerLabel {
    /// A known ddsperf peer: `host:pid`.
    HostPid {
        /// Peer host name.
        host: String,
        /// Peer process id.
        pid: u32,
    },
    /// The peer is gone (or unknown): the publication handle in lower-case hex.
    Handle(u64),
}

impl std::fmt::Display for PeerLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerLabel::HostPid { host, pid } => write!(f, "{host}:{pid}"),
            PeerLabel::Handle(h) => write!(f, "{h:x}"),
        }
    }
}

/// Network interface load for `-d` (already filtered by the sampler's thresholds).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct NetloadReading {
    /// Interface name.
    pub device: String,
    /// Transmit rate, bit/s.
    pub xmit_bps: f64,
    /// Receive rate, bit/s.
    pub recv_bps: f64,
    /// Nominal bandwidth from `-d DEV:BW` (0: none given).
    pub bandwidth: f64,
    /// Transmitted bytes counter.
    pub obytes: u64,
    /// Received bytes counter.
    pub ibytes: u64,
}

/// The `-X` counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct ExtendedStats {
    /// Bytes discarded by the data reader.
    pub discarded: u64,
    /// Retransmitted by the data writer: bytes in Cyclone, samples in Tessera.
    pub rexmit: u64,
    /// Time spent retransmitting (ns).
    pub t_rexmit: u64,
    /// Time the data writer was throttled (ns).
    pub t_throttle: u64,
    /// Number of times the data writer was throttled.
    pub n_throttle: u32,
}

/// The end-of-run failures, each printed as `[PID] error: ...`.
#[derive(Debug, Clone, PartialEq)]
pub enum FinalError {
    /// A peer still has endpoints that never matched.
    FailedToMatch {
        /// Peer host name.
        host: String,
        /// Peer process id.
        peer_pid: u32,
        /// The missing remote endpoints.
        missing: MatchMask,
    },
    /// Fewer fully matched peers than `-Q minmatch`.
    TooFewMatching(u32),
    /// Samples were lost in a reliable keep-all run.
    SamplesLost(u64),
    /// Some pong source answered fewer than `-Q roundtrips` times.
    TooFewRoundtrips,
    /// Some data publisher delivered fewer than `-Q samples`.
    TooFewSamples,
    /// RSS grew beyond `-Q rss`.
    RssGrew {
        /// RSS (bytes) at the first report with output after `minmatch` was reached.
        init: f64,
        /// RSS (bytes) at the last report.
        last: f64,
    },
}

/// One line of output.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportLine {
    /// `[PID] participant HOST:PEERPID: new` (` (self)` appended for our own participant).
    ParticipantNew {
        /// Our pid.
        pid: u32,
        /// Peer host.
        host: String,
        /// Peer pid.
        peer_pid: u32,
        /// Whether it is our own participant.
        is_self: bool,
    },
    /// `[PID] participant HOST:PEERPID: gone`.
    ParticipantGone {
        /// Our pid.
        pid: u32,
        /// Peer host.
        host: String,
        /// Peer pid.
        peer_pid: u32,
    },
    /// `[PID] participant HOST:PEERPID: failed to match in S.SSSs` (5 s after discovery).
    MatchTimeout {
        /// Our pid.
        pid: u32,
        /// Peer host.
        host: String,
        /// Peer pid.
        peer_pid: u32,
        /// Seconds between discovery and the deadline.
        secs: f64,
    },
    /// `[PID] ping timed out (total N times) ... sending new ping`.
    PingTimeout {
        /// Our pid.
        pid: u32,
        /// Running total of timed-out pings.
        total: u32,
    },
    /// The publisher's rate and write-time histogram.
    Pub {
        /// Time stamp.
        stamp: Stamp,
        /// Histogram of this interval.
        hist: PubHist,
        /// Interval length in ns.
        dt_ns: i64,
    },
    /// The subscriber's throughput and loss.
    Sub {
        /// Time stamp.
        stamp: Stamp,
        /// Counts of this interval.
        counts: SubInterval,
        /// Interval length in ns.
        dt_ns: i64,
    },
    /// Round-trip latency (from pongs) or receive latency (`-l`, `sublat`).
    Latency {
        /// Time stamp.
        stamp: Stamp,
        /// `sublat` line (receive latency) rather than a pong line.
        sublat: bool,
        /// The source.
        peer: PeerLabel,
        /// Sample size.
        size: u32,
        /// Statistics of the interval.
        stats: LatencySummary,
    },
    /// CPU/RSS line: our own (`remote` None) or a peer's (`-c`).
    Cpu {
        /// Time stamp.
        stamp: Stamp,
        /// `(host, pid)` of the peer for `-c` lines.
        remote: Option<(String, u32)>,
        /// The peer's sample was already shown before (printed as `(stale)`).
        stale: bool,
        /// The statistics.
        stats: CpuStatsSample,
    },
    /// `-d` network load.
    Netload {
        /// Time stamp.
        stamp: Stamp,
        /// The reading.
        reading: NetloadReading,
    },
    /// `-X` counters.
    Extended {
        /// Time stamp.
        stamp: Stamp,
        /// The counters.
        stats: ExtendedStats,
    },
    /// `write error: CODE` (a write returned an error; a timeout is retried).
    WriteError {
        /// DDS return code.
        code: i32,
    },
    /// `received key K >= nkeys N` (then exit 3).
    KeyOutOfRange(KeyOutOfRange),
    /// `[PID] error: ...` at the end of the run.
    Error {
        /// Our pid.
        pid: u32,
        /// What failed.
        error: FinalError,
    },
    /// Whole-run summary (JSON only; no text equivalent in ddsperf).
    Summary {
        /// Our pid.
        pid: u32,
        /// Whole-run latency per pong source.
        latency: Vec<(PeerLabel, OverallLatency)>,
        /// Pings past the warm-up answered by every peer, with per ping the time to its first
        /// pong and to its last (1-to-N "first answer" and "all answers"); `None` without
        /// pinging.
        answers: Option<PingAnswers>,
        /// Data samples received in total.
        received: u64,
        /// Data samples lost in total.
        lost: u64,
        /// Exit status.
        exit_code: i32,
    },
}

fn push_time(out: &mut String, ns: u64) {
    // "%3"PRIu64 with n/u/m/s units, rounding half up to the unit.
    let _ = if ns < 1000 {
        write!(out, "{ns:3}n")
    } else if ns + 500 < 1_000_000 {
        write!(out, "{:3}u", (ns + 500) / 1000)
    } else if ns + 500_000 < 1_000_000_000 {
        write!(out, "{:3}m", (ns + 500_000) / 1_000_000)
    } else {
        write!(
            out,
            "{:3}s",
            (ns.saturating_add(500_000_000)) / 1_000_000_000
        )
    };
}

/// The 30-character histogram picture of a [`PubHist`].
pub fn hist_picture(h: &PubHist) -> String {
    let peak = h.bins.iter().copied().max().unwrap_or(0);
    let (p1, p10, p20, p40, p60, p80) = (
        peak / 100,
        peak / 10,
        peak / 5,
        2 * peak / 5,
        3 * peak / 5,
        4 * peak / 5,
    );
    h.bins
        .iter()
        .map(|&b| match b {
            0 => ' ',
            b if b <= p1 => '.',
            b if b <= p10 => '_',
            b if b <= p20 => '-',
            b if b <= p40 => '=',
            b if b <= p60 => 'x',
            b if b <= p80 => 'X',
            _ => '@',
        })
        .collect()
}

/// Publish rate in samples per second of a [`PubHist`] over `dt_ns`.
pub fn pub_rate(h: &PubHist, dt_ns: i64) -> f64 {
    h.count() as f64 / (dt_ns as f64 / 1e9)
}

fn pub_text(prefix: &str, h: &PubHist, dt_ns: i64) -> String {
    let mut l = String::with_capacity(96);
    l.push_str(prefix);
    let avg = pub_rate(h, dt_ns);
    if avg < 999.5 {
        l.push_str(&fmt_g(avg, 5, 3));
    } else if avg < 1e6 {
        l.push_str(&fmt_g(avg / 1e3, 4, 3));
        l.push('k');
    } else {
        l.push_str(&fmt_g(avg / 1e6, 4, 3));
        l.push('M');
    }
    l.push_str("/s ");
    if h.min == u64::MAX {
        l.push_str(" inf ");
    } else {
        push_time(&mut l, h.min);
        l.push(' ');
    }
    let cnt = h.count();
    // Integer arithmetic: the result is either 0 or 100.
    let over_pct = 100 * (h.over + cnt / 2).checked_div(cnt).unwrap_or(0);
    let _ = write!(l, "|{}| {over_pct:3}%", hist_picture(h));
    l.push(' ');
    push_time(&mut l, h.max);
    l
}

/// Rates of a `sub` line: (kS/s, Mb/s, 10-report kS/s, 10-report Mb/s).
pub fn sub_rates(c: &SubInterval, dt_ns: i64) -> (f64, f64, f64, f64) {
    let dt = dt_ns as f64;
    (
        c.delta as f64 * 1e6 / dt,
        c.delta_bytes as f64 * 8.0 * 1e3 / dt,
        c.delta10 as f64 * 1e6 / (10.0 * dt),
        c.delta10_bytes as f64 * 8.0 * 1e3 / (10.0 * dt),
    )
}

fn cpu_text(
    prefix: &str,
    remote: Option<&(String, u32)>,
    stale: bool,
    s: &CpuStatsSample,
) -> Option<String> {
    if !s.some_above || s.cpu.is_empty() {
        return None;
    }
    let mut l = String::from(prefix);
    if stale {
        l.push_str(" (stale)");
    }
    if let Some((host, pid)) = remote {
        let host: String = host.chars().take(100).collect();
        let _ = write!(l, " @{host}:{pid}");
    }
    if s.maxrss > 1_048_576.0 {
        let _ = write!(l, " rss:{:.1}MB", s.maxrss / 1_048_576.0);
    } else if s.maxrss > 1024.0 {
        let _ = write!(l, " rss:{:.0}kB", s.maxrss / 1024.0);
    }
    let _ = write!(l, " vcsw:{} ivcsw:{}", s.vcsw, s.ivcsw);
    for t in &s.cpu {
        let _ = write!(
            l,
            " {}:{:.0}%+{:.0}%",
            t.name,
            f64::from(t.u_pct),
            f64::from(t.s_pct)
        );
    }
    Some(l)
}

fn netload_text(prefix: &str, r: &NetloadReading) -> String {
    if r.bandwidth > 0.0 {
        format!(
            "{prefix} {}: xmit {:.0}% recv {:.0}% [{} {}]",
            r.device,
            100.0 * r.xmit_bps / r.bandwidth,
            100.0 * r.recv_bps / r.bandwidth,
            r.obytes,
            r.ibytes
        )
    } else {
        format!(
            "{prefix} {}: xmit {:.2} Mb/s recv {:.2} Mb/s [{} {}]",
            r.device,
            r.xmit_bps / 1e6,
            r.recv_bps / 1e6,
            r.obytes,
            r.ibytes
        )
    }
}

fn us(ns: f64) -> f64 {
    ns / 1e3
}

impl ReportLine {
    /// The ddsperf text of this line (without the newline); `None` for lines that print
    /// nothing (a CPU line with no thread above the threshold, the JSON-only summary).
    pub fn to_text(&self) -> Option<String> {
        Some(match self {
            ReportLine::ParticipantNew {
                pid,
                host,
                peer_pid,
                is_self,
            } => format!(
                "[{pid}] participant {host}:{peer_pid}: new{}",
                if *is_self { " (self)" } else { "" }
            ),
            ReportLine::ParticipantGone {
                pid,
                host,
                peer_pid,
            } => format!("[{pid}] participant {host}:{peer_pid}: gone"),
            ReportLine::MatchTimeout {
                pid,
                host,
                peer_pid,
                secs,
            } => format!("[{pid}] participant {host}:{peer_pid}: failed to match in {secs:.3}s"),
            ReportLine::PingTimeout { pid, total } => {
                format!("[{pid}] ping timed out (total {total} times) ... sending new ping")
            }
            ReportLine::Pub { stamp, hist, dt_ns } => pub_text(&stamp.prefix(), hist, *dt_ns),
            ReportLine::Sub {
                stamp,
                counts: c,
                dt_ns,
            } => {
                let (r, b, r10, b10) = sub_rates(c, *dt_ns);
                format!(
                    "{} size {} total {} lost {} delta {} lost {} rate {r:.2} kS/s {b:.2} Mb/s ({r10:.2} kS/s {b10:.2} Mb/s)",
                    stamp.prefix(),
                    c.last_size,
                    c.total,
                    c.total_lost,
                    c.delta,
                    c.delta_lost
                )
            }
            ReportLine::Latency {
                stamp,
                sublat,
                peer,
                size,
                stats: s,
            } => format!(
                "{}{} {peer} size {size} mean {:.3}us min {:.3}us 50% {:.3}us 90% {:.3}us 99% {:.3}us max {:.3}us cnt {}",
                stamp.prefix(),
                if *sublat { " sublat" } else { "" },
                us(s.mean_ns),
                us(s.min_ns as f64),
                us(s.p50_ns as f64),
                us(s.p90_ns as f64),
                us(s.p99_ns as f64),
                us(s.max_ns as f64),
                s.cnt
            ),
            ReportLine::Cpu {
                stamp,
                remote,
                stale,
                stats,
            } => return cpu_text(&stamp.prefix(), remote.as_ref(), *stale, stats),
            ReportLine::Netload { stamp, reading } => netload_text(&stamp.prefix(), reading),
            ReportLine::Extended { stamp, stats: x } => format!(
                "{} discarded {} rexmit {} Trexmit {} Tthrottle {} Nthrottle {}",
                stamp.prefix(),
                x.discarded,
                x.rexmit,
                x.t_rexmit,
                x.t_throttle,
                x.n_throttle
            ),
            ReportLine::WriteError { code } => format!("write error: {code}"),
            ReportLine::KeyOutOfRange(k) => k.to_string(),
            ReportLine::Error { pid, error } => {
                let what = match error {
                    FinalError::FailedToMatch {
                        host,
                        peer_pid,
                        missing,
                    } => format!("{host}:{peer_pid} failed to match {missing}"),
                    FinalError::TooFewMatching(n) => {
                        format!("too few matching participants ({n})")
                    }
                    FinalError::SamplesLost(n) => format!("{n} samples lost"),
                    FinalError::TooFewRoundtrips => "too few roundtrips for some peers".into(),
                    FinalError::TooFewSamples => {
                        "too few samples received from some peers".into()
                    }
                    FinalError::RssGrew { init, last } => {
                        format!("RSS grew too much ({init:.6} -> {last:.6})")
                    }
                };
                format!("[{pid}] error: {what}")
            }
            ReportLine::Summary { .. } => return None,
        })
    }

    /// The JSON object of this line (`--json`); `None` where the text form prints nothing.
    pub fn to_json(&self) -> Option<Value> {
        let latency_json = |s: &LatencySummary| {
            json!({
                "cnt": s.cnt,
                "mean_us": us(s.mean_ns),
                "min_us": us(s.min_ns as f64),
                "p50_us": us(s.p50_ns as f64),
                "p90_us": us(s.p90_ns as f64),
                "p99_us": us(s.p99_ns as f64),
                "max_us": us(s.max_ns as f64),
            })
        };
        Some(match self {
            ReportLine::ParticipantNew {
                pid,
                host,
                peer_pid,
                is_self,
            } => json!({"type": "participant", "pid": pid, "event": "new",
                        "host": host, "peer_pid": peer_pid, "self": is_self}),
            ReportLine::ParticipantGone {
                pid,
                host,
                peer_pid,
            } => json!({"type": "participant", "pid": pid, "event": "gone",
                        "host": host, "peer_pid": peer_pid}),
            ReportLine::MatchTimeout {
                pid,
                host,
                peer_pid,
                secs,
            } => json!({"type": "participant", "pid": pid, "event": "match_timeout",
                        "host": host, "peer_pid": peer_pid, "after_s": secs}),
            ReportLine::PingTimeout { pid, total } => {
                json!({"type": "ping_timeout", "pid": pid, "total": total})
            }
            ReportLine::Pub { stamp, hist, dt_ns } => {
                let (pid, t) = stamp.json();
                let bins: Vec<u64> = hist.bins.to_vec();
                debug_assert_eq!(bins.len(), PUB_HIST_BINS);
                json!({"type": "pub", "pid": pid, "t": t,
                       "rate": pub_rate(hist, *dt_ns), "count": hist.count(),
                       "min_ns": (hist.min != u64::MAX).then_some(hist.min),
                       "max_ns": hist.max, "bin_ns": super::stats::PUB_HIST_BIN_NS,
                       "bins": bins, "over": hist.over})
            }
            ReportLine::Sub {
                stamp,
                counts: c,
                dt_ns,
            } => {
                let (pid, t) = stamp.json();
                let (r, b, r10, b10) = sub_rates(c, *dt_ns);
                json!({"type": "sub", "pid": pid, "t": t, "size": c.last_size,
                       "total": c.total, "lost": c.total_lost,
                       "delta": c.delta, "delta_lost": c.delta_lost,
                       "rate_ksps": r, "rate_mbps": b,
                       "rate10_ksps": r10, "rate10_mbps": b10})
            }
            ReportLine::Latency {
                stamp,
                sublat,
                peer,
                size,
                stats,
            } => {
                let (pid, t) = stamp.json();
                let mut v = json!({"type": if *sublat { "sublat" } else { "latency" },
                                   "pid": pid, "t": t, "peer": peer.to_string(),
                                   "size": size});
                if let (Value::Object(m), Value::Object(l)) = (&mut v, latency_json(stats)) {
                    m.extend(l);
                }
                v
            }
            ReportLine::Cpu {
                stamp,
                remote,
                stale,
                stats,
            } => {
                cpu_text(&stamp.prefix(), remote.as_ref(), *stale, stats)?;
                let (pid, t) = stamp.json();
                json!({"type": "cpu", "pid": pid, "t": t,
                       "host": remote.as_ref().map(|r| r.0.clone()),
                       "peer_pid": remote.as_ref().map(|r| r.1),
                       "stale": stale, "rss_bytes": stats.maxrss,
                       "vcsw": stats.vcsw, "ivcsw": stats.ivcsw,
                       "threads": stats.cpu})
            }
            ReportLine::Netload { stamp, reading } => {
                let (pid, t) = stamp.json();
                json!({"type": "netload", "pid": pid, "t": t, "device": reading.device,
                       "xmit_bps": reading.xmit_bps, "recv_bps": reading.recv_bps,
                       "bandwidth": reading.bandwidth,
                       "obytes": reading.obytes, "ibytes": reading.ibytes})
            }
            ReportLine::Extended { stamp, stats } => {
                let (pid, t) = stamp.json();
                json!({"type": "extended", "pid": pid, "t": t, "discarded": stats.discarded,
                       "rexmit": stats.rexmit, "t_rexmit_ns": stats.t_rexmit,
                       "t_throttle_ns": stats.t_throttle, "n_throttle": stats.n_throttle})
            }
            ReportLine::WriteError { code } => json!({"type": "write_error", "code": code}),
            ReportLine::KeyOutOfRange(k) => {
                json!({"type": "key_out_of_range", "key": k.key, "nkeys": k.nkeys})
            }
            ReportLine::Error { pid, error } => {
                let text = self.to_text().unwrap_or_default();
                let message = text.split_once("error: ").map_or("", |x| x.1).to_string();
                let kind = match error {
                    FinalError::FailedToMatch { .. } => "failed_to_match",
                    FinalError::TooFewMatching(_) => "too_few_matching",
                    FinalError::SamplesLost(_) => "samples_lost",
                    FinalError::TooFewRoundtrips => "too_few_roundtrips",
                    FinalError::TooFewSamples => "too_few_samples",
                    FinalError::RssGrew { .. } => "rss_grew",
                };
                json!({"type": "error", "pid": pid, "error": kind, "message": message})
            }
            ReportLine::Summary {
                pid,
                latency,
                answers,
                received,
                lost,
                exit_code,
            } => {
                let overall = |o: &OverallLatency| {
                    json!({"cnt": o.cnt,
                           "mean_us": us(o.mean_ns), "min_us": us(o.min_ns as f64),
                           "p50_us": us(o.p50_ns as f64), "p90_us": us(o.p90_ns as f64),
                           "p99_us": us(o.p99_ns as f64), "p999_us": us(o.p999_ns as f64),
                           "max_us": us(o.max_ns as f64), "hist": o.hist})
                };
                let lat: Vec<Value> = latency
                    .iter()
                    .map(|(peer, o)| {
                        let mut v = overall(o);
                        v["peer"] = json!(peer.to_string());
                        v
                    })
                    .collect();
                let mut v = json!({"type": "summary", "pid": pid, "latency": lat,
                       "received": received, "lost": lost, "exit_code": exit_code});
                if let Some(a) = answers {
                    v["pings"] = json!(a.pings);
                    if let (Some(f), Some(l)) = (&a.first, &a.all) {
                        v["first"] = overall(f);
                        v["all"] = overall(l);
                    }
                }
                v
            }
        })
    }
}

/// A pinger's answers per ping (see [`ReportLine::Summary`]).
#[derive(Debug, Clone, PartialEq)]
pub struct PingAnswers {
    /// Pings past the warm-up answered by every peer.
    pub pings: u64,
    /// Per ping, the one-way time to its first pong (`None` before the first).
    pub first: Option<OverallLatency>,
    /// Per ping, the one-way time to its last pong.
    pub all: Option<OverallLatency>,
}

/// Writes report lines as text or JSON lines.
#[derive(Debug)]
pub struct Reporter<W: Write> {
    json: bool,
    out: W,
}

impl<W: Write> Reporter<W> {
    /// A reporter writing to `out`, JSON if `json`.
    pub fn new(out: W, json: bool) -> Self {
        Reporter { json, out }
    }

    /// Writes one line (nothing for lines without a rendering) and flushes it, so that a
    /// reader at the other end of a pipe sees it at once. Returns whether something was
    /// written (ddsperf's "output" flag that gates the netload line and the RSS baseline).
    pub fn emit(&mut self, line: &ReportLine) -> io::Result<bool> {
        self.emit_inner(line, None)
    }

    /// Like [`Reporter::emit`]; in JSON mode a line that carries no `"t"` of its own (the
    /// event lines: participant, ping timeout, write and final errors, summary) gets
    /// `"t": t` (seconds, rounded to the ms like the stamped lines).
    pub fn emit_at(&mut self, line: &ReportLine, t: f64) -> io::Result<bool> {
        self.emit_inner(line, Some(t))
    }

    fn emit_inner(&mut self, line: &ReportLine, t: Option<f64>) -> io::Result<bool> {
        let s = if self.json {
            line.to_json().map(|mut v| {
                if let (Some(t), Value::Object(m)) = (t, &mut v) {
                    if !m.contains_key("t") {
                        m.insert("t".into(), json!((t * 1000.0).round() / 1000.0));
                    }
                }
                v.to_string()
            })
        } else {
            line.to_text()
        };
        match s {
            Some(s) => {
                let mut buf = s.into_bytes();
                buf.push(b'\n');
                self.out.write_all(&buf)?;
                self.out.flush()?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Flushes the output (ddsperf flushes after every report).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// What the end-of-run checks look at.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VerdictInput {
    /// Our pid.
    pub pid: u32,
    /// Peers still known at the end, with endpoints that never matched.
    pub unmatched: Vec<(String, u32, MatchMask)>,
    /// Fully matched peers (counting ourselves with `-L`).
    pub match_count: u32,
    /// `-Q minmatch` (use `u32::MAX` when the run was aborted by `maxwait`/`initwait`).
    pub min_match: u32,
    /// Data samples lost over all publishers.
    pub lost: u64,
    /// Whether loss is an error (reliable and keep-all).
    pub loss_is_error: bool,
    /// Every pong source reached `-Q roundtrips`.
    pub roundtrips_ok: bool,
    /// Every data publisher reached `-Q samples`.
    pub samples_ok: bool,
    /// `-Q rss` with the first and last RSS readings (bytes).
    pub rss: Option<(RssCriterion, f64, f64)>,
}

/// The end-of-run error lines, in ddsperf's order, and the exit status (0 or 1).
pub fn verdict(v: &VerdictInput) -> (Vec<ReportLine>, i32) {
    let pid = v.pid;
    let mut lines = Vec::new();
    for (host, peer_pid, missing) in &v.unmatched {
        if !missing.is_empty() {
            lines.push(FinalError::FailedToMatch {
                host: host.clone(),
                peer_pid: *peer_pid,
                missing: *missing,
            });
        }
    }
    if v.match_count < v.min_match {
        lines.push(FinalError::TooFewMatching(v.match_count));
    }
    if v.lost > 0 && v.loss_is_error {
        lines.push(FinalError::SamplesLost(v.lost));
    }
    if !v.roundtrips_ok {
        lines.push(FinalError::TooFewRoundtrips);
    }
    if !v.samples_ok {
        lines.push(FinalError::TooFewSamples);
    }
    if let Some((c, init, last)) = v.rss {
        if last >= init * c.factor + c.term {
            lines.push(FinalError::RssGrew { init, last });
        }
    }
    let code = if lines.is_empty() { 0 } else { 1 };
    (
        lines
            .into_iter()
            .map(|error| ReportLine::Error { pid, error })
            .collect(),
        code,
    )
}

#[cfg(test)]
#[path = "report_tests.rs"]
mod tests;
