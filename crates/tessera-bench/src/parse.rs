//! Reads what the workers print: ddsperf's text output ([`parse_ddsperf_text`]) and the JSON
//! lines of `tessera perf --json`, of Fast DDS's `fastdds-perf` (which prints the same lines)
//! and of the raw UDP floor ([`parse_tessera_json`]), into one [`PerfOutput`].
//!
//! Only the lines the benchmark needs are kept: pong latency lines (not `sublat`), `sub` lines,
//! `participant ...: new` lines of *other* participants (the ` (self)` line is left out), the
//! `-X` lines, the whole-run histogram of the JSON `summary`, and error lines. Anything else
//! (pub histograms, CPU and netload lines, garbage, half-written lines) is skipped.
//!
//! # Line timing through a pipe
//!
//! ddsperf (Cyclone DDS 0.10.2) writes with stdio, which is fully buffered when stdout is a
//! pipe, and calls `fflush(stdout)` only at the end of each once-a-second report (whether it
//! printed anything or not) and after each endpoint-match event. The `participant ...: new` and
//! `gone` lines are *not* flushed when printed. Measured in a namespace (ddsperf piped into a
//! time-stamping reader, a peer started 2.5 s later, between two report ticks): with a peer
//! whose endpoints match, the `new` line arrived 8 ms after the peer started (flushed by the
//! first endpoint match); with a peer whose endpoints never match (`-T OU` against `-T KS`) it
//! arrived 0.5 s late, at the next report tick; the `(self)` line always arrives only at the
//! first report, 1 s after start. `stdbuf -oL ddsperf ...` fixes it (glibc honours the
//! preloaded line buffering; ddsperf does not call `setvbuf` itself): every line then arrived
//! within 8 ms, the `(self)` line 7 ms after start. So time discovery from line arrival only
//! with `stdbuf -oL`. `tessera perf` (and the UDP floor) flush every line as written, and their
//! JSON lines carry `"t"` themselves.

use serde_json::Value;

pub use super::stats::IntervalSummary;

/// Everything the benchmark reads from one worker's output.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PerfOutput {
    /// Per-second round-trip latency lines, per pong source, in output order.
    pub latency: Vec<LatencyLine>,
    /// Per-second subscriber lines.
    pub subs: Vec<SubLine>,
    /// `participant HOST:PID: new` lines of other participants, in output order.
    pub participants_new: Vec<ParticipantLine>,
    /// `-X` lines.
    pub extended: Vec<ExtendedLine>,
    /// The whole-run latency histogram of the JSON `summary` line, all pong sources merged:
    /// `(value_ns, count)` ascending by value. Empty for ddsperf (it prints none).
    pub hist: Vec<(u64, u64)>,
    /// Per ping, the first and the last answer (the summary's `first` and `all`), when the
    /// pinger reports them (a 1-to-N ping: `cyclone-perf`, `tessera perf`).
    pub answers: Option<Answers>,
    /// Pings answered by every peer in the measured part of the run (the summary's `pings`).
    pub pings: Option<u64>,
    /// Error lines (`[PID] error: ...`, `write error: ...`, `received key ...`, JSON `error`
    /// lines), their message only.
    pub errors: Vec<String>,
    /// Samples a publisher says it wrote (the sum of its per-second JSON `pub` lines' `count`);
    /// `None` when it prints no such line (ddsperf).
    pub published: Option<u64>,
}

/// The 1-to-N answer histograms of a pinger, one-way ns like [`PerfOutput::hist`]: per ping
/// the time to its first pong (DerechoDDS's "first answer") and to its last ("all answers").
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Answers {
    /// `(value_ns, count)` of the first answers, ascending.
    pub first: Vec<(u64, u64)>,
    /// `(value_ns, count)` of the last answers, ascending.
    pub all: Vec<(u64, u64)>,
}

/// The pairs of a JSON `[[value, count], ...]` histogram, merged into `into`; malformed pairs
/// are skipped.
fn add_hist(h: Option<&Value>, into: &mut std::collections::BTreeMap<u64, u64>) {
    for pair in h.and_then(Value::as_array).into_iter().flatten() {
        if let Some([val, cnt]) = pair.as_array().map(Vec::as_slice) {
            if let (Some(val), Some(cnt)) = (val.as_u64(), cnt.as_u64()) {
                let e = into.entry(val).or_insert(0);
                *e = e.saturating_add(cnt);
            }
        }
    }
}

/// One per-second round-trip latency line.
#[derive(Debug, Clone, PartialEq)]
pub struct LatencyLine {
    /// Report time (s since the run start or `-R`).
    pub t: f64,
    /// The pong source: `HOST:PID`, or a hex handle once the peer is gone.
    pub peer: String,
    /// Payload size.
    pub size: u32,
    /// The interval's statistics.
    pub summary: IntervalSummary,
}

/// One per-second subscriber line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SubLine {
    /// Report time (s).
    pub t: f64,
    /// Size of the latest sample.
    pub size: u32,
    /// Received since the start.
    pub total: u64,
    /// Lost since the start.
    pub lost: u64,
    /// Received in the interval.
    pub delta: u64,
    /// Lost in the interval.
    pub delta_lost: u64,
    /// Samples per second in the interval, thousands.
    pub rate_ksps: f64,
    /// Payload megabits per second in the interval.
    pub rate_mbps: f64,
}

/// A participant discovered.
#[derive(Debug, Clone, PartialEq)]
pub struct ParticipantLine {
    /// When it was printed (s), from the JSON `"t"`; `None` for ddsperf text, which has no
    /// time on these lines (use the line's arrival time, see the module docs).
    pub t: Option<f64>,
    /// The peer's host name.
    pub host: String,
    /// The peer's process id.
    pub peer_pid: u32,
}

/// One `-X` line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ExtendedLine {
    /// Report time (s).
    pub t: f64,
    /// Bytes discarded by the data reader.
    pub discarded: u64,
    /// Retransmitted by the data writer: bytes for Cyclone, samples for Tessera.
    pub rexmit: u64,
}

/// Parses ddsperf's text output (also `tessera perf` without `--json`).
pub fn parse_ddsperf_text(s: &str) -> PerfOutput {
    let mut out = PerfOutput::default();
    for line in s.lines() {
        parse_text_line(line.trim_end(), &mut out);
    }
    out
}

fn parse_text_line(line: &str, out: &mut PerfOutput) {
    if line.starts_with("write error:") || line.starts_with("received key ") {
        out.errors.push(line.to_string());
        return;
    }
    // "[PID] rest"
    let Some(rest) = line.strip_prefix('[') else {
        return;
    };
    let Some((pid, rest)) = rest.split_once("] ") else {
        return;
    };
    if pid.parse::<u32>().is_err() {
        return;
    }
    if let Some(msg) = rest.strip_prefix("error: ") {
        out.errors.push(msg.to_string());
        return;
    }
    if let Some(p) = rest.strip_prefix("participant ") {
        if let Some(who) = p.strip_suffix(": new") {
            if let Some((host, peer_pid)) = host_pid(who) {
                out.participants_new.push(ParticipantLine {
                    t: None,
                    host,
                    peer_pid,
                });
            }
        }
        return;
    }
    // "T.TTT  fields..."
    let Some((t, fields)) = rest.split_once(' ') else {
        return;
    };
    let Ok(t) = t.parse::<f64>() else {
        return;
    };
    let tok: Vec<&str> = fields.split_whitespace().collect();
    match tok.first().copied() {
        Some("size") => {
            if let Some(l) = text_sub(t, &tok) {
                out.subs.push(l);
            }
        }
        Some("discarded") => {
            if let Some(l) = text_extended(t, &tok) {
                out.extended.push(l);
            }
        }
        Some("sublat") | None => {}
        Some(_) => {
            if let Some(l) = text_latency(t, &tok) {
                out.latency.push(l);
            }
        }
    }
}

/// `HOST:PID` (the host may itself contain `:`).
fn host_pid(s: &str) -> Option<(String, u32)> {
    let (host, pid) = s.rsplit_once(':')?;
    Some((host.to_string(), pid.parse().ok()?))
}

/// The value following keyword `key` at position `at` of `tok`.
fn kv<'a>(tok: &[&'a str], at: usize, key: &str) -> Option<&'a str> {
    (tok.get(at)? == &key).then_some(())?;
    tok.get(at + 1).copied()
}

fn num<T: std::str::FromStr>(tok: &[&str], at: usize, key: &str) -> Option<T> {
    kv(tok, at, key)?.parse().ok()
}

fn us(tok: &[&str], at: usize, key: &str) -> Option<f64> {
    kv(tok, at, key)?.strip_suffix("us")?.parse().ok()
}

// size N total N lost N delta N lost N rate R kS/s B Mb/s (R10 kS/s B10 Mb/s)
fn text_sub(t: f64, tok: &[&str]) -> Option<SubLine> {
    (tok.get(12) == Some(&"kS/s") && tok.get(14) == Some(&"Mb/s")).then_some(())?;
    Some(SubLine {
        t,
        size: num(tok, 0, "size")?,
        total: num(tok, 2, "total")?,
        lost: num(tok, 4, "lost")?,
        delta: num(tok, 6, "delta")?,
        delta_lost: num(tok, 8, "lost")?,
        rate_ksps: num(tok, 10, "rate")?,
        rate_mbps: tok.get(13)?.parse().ok()?,
    })
}

// discarded N rexmit N Trexmit N Tthrottle N Nthrottle N
fn text_extended(t: f64, tok: &[&str]) -> Option<ExtendedLine> {
    Some(ExtendedLine {
        t,
        discarded: num(tok, 0, "discarded")?,
        rexmit: num(tok, 2, "rexmit")?,
    })
}

// PEER size N mean Xus min Xus 50% Xus 90% Xus 99% Xus max Xus cnt N
fn text_latency(t: f64, tok: &[&str]) -> Option<LatencyLine> {
    Some(LatencyLine {
        t,
        peer: tok.first()?.to_string(),
        size: num(tok, 1, "size")?,
        summary: IntervalSummary {
            mean_us: us(tok, 3, "mean")?,
            min_us: us(tok, 5, "min")?,
            p50_us: us(tok, 7, "50%")?,
            p90_us: us(tok, 9, "90%")?,
            p99_us: us(tok, 11, "99%")?,
            max_us: us(tok, 13, "max")?,
            count: num(tok, 15, "cnt")?,
        },
    })
}

/// Parses `tessera perf --json` output (and the UDP floor's, which uses the same shapes).
/// Lines that are not JSON objects are ignored.
pub fn parse_tessera_json(s: &str) -> PerfOutput {
    let mut out = PerfOutput::default();
    let mut hist: std::collections::BTreeMap<u64, u64> = std::collections::BTreeMap::new();
    for line in s.lines() {
        let line = line.trim();
        if !line.starts_with('{') {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        parse_json_line(&v, &mut out, &mut hist);
    }
    out.hist = hist.into_iter().collect();
    out
}

fn f(v: &Value, k: &str) -> Option<f64> {
    v.get(k)?.as_f64()
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k)?.as_u64()
}

fn st<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k)?.as_str()
}

fn parse_json_line(
    v: &Value,
    out: &mut PerfOutput,
    hist: &mut std::collections::BTreeMap<u64, u64>,
) {
    match st(v, "type") {
        Some("latency") => {
            let l = (|| {
                Some(LatencyLine {
                    t: f(v, "t")?,
                    peer: st(v, "peer")?.to_string(),
                    size: u32::try_from(u(v, "size")?).ok()?,
                    summary: IntervalSummary {
                        count: u(v, "cnt")?,
                        mean_us: f(v, "mean_us")?,
                        min_us: f(v, "min_us")?,
                        p50_us: f(v, "p50_us")?,
                        p90_us: f(v, "p90_us")?,
                        p99_us: f(v, "p99_us")?,
                        max_us: f(v, "max_us")?,
                    },
                })
            })();
            out.latency.extend(l);
        }
        Some("sub") => {
            let l = (|| {
                Some(SubLine {
                    t: f(v, "t")?,
                    size: u32::try_from(u(v, "size")?).ok()?,
                    total: u(v, "total")?,
                    lost: u(v, "lost")?,
                    delta: u(v, "delta")?,
                    delta_lost: u(v, "delta_lost")?,
                    rate_ksps: f(v, "rate_ksps")?,
                    rate_mbps: f(v, "rate_mbps")?,
                })
            })();
            out.subs.extend(l);
        }
        Some("pub") => {
            if let Some(n) = u(v, "count") {
                *out.published.get_or_insert(0) += n;
            }
        }
        Some("participant") => {
            let is_self = v.get("self").and_then(Value::as_bool).unwrap_or(false);
            if st(v, "event") == Some("new") && !is_self {
                let l = (|| {
                    Some(ParticipantLine {
                        t: f(v, "t"),
                        host: st(v, "host")?.to_string(),
                        peer_pid: u32::try_from(u(v, "peer_pid")?).ok()?,
                    })
                })();
                out.participants_new.extend(l);
            }
        }
        Some("extended") => {
            let l = (|| {
                Some(ExtendedLine {
                    t: f(v, "t")?,
                    discarded: u(v, "discarded")?,
                    rexmit: u(v, "rexmit")?,
                })
            })();
            out.extended.extend(l);
        }
        Some("summary") => {
            for src in v
                .get("latency")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                add_hist(src.get("hist"), hist);
            }
            if let (Some(first), Some(all)) = (v.get("first"), v.get("all")) {
                let (mut f, mut a) = Default::default();
                add_hist(first.get("hist"), &mut f);
                add_hist(all.get("hist"), &mut a);
                out.answers = Some(Answers {
                    first: f.into_iter().collect(),
                    all: a.into_iter().collect(),
                });
            }
            out.pings = u(v, "pings");
        }
        Some("error") => {
            let msg = st(v, "message")
                .or(st(v, "error"))
                .unwrap_or("error")
                .to_string();
            out.errors.push(msg);
        }
        Some("write_error") => {
            out.errors.push(format!(
                "write error: {}",
                v.get("code").unwrap_or(&Value::Null)
            ));
        }
        Some("key_out_of_range") => {
            out.errors.push(format!(
                "received key {} >= nkeys {}",
                v.get("key").unwrap_or(&Value::Null),
                v.get("nkeys").unwrap_or(&Value::Null)
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ddsperf -D3 -X ping` against `ddsperf pong` (Cyclone 0.10.2, loopback namespace).
    const DDSPERF_PING: &str = "\
[23906] participant vm:23906: new (self)
[23906] participant vm:23905: new
[23906] 2.000  vm:23905 size 12 mean 28.141us min 6.809us 50% 29.433us 90% 36.253us 99% 61.922us max 2074.223us cnt 17640
[23906] 2.000  rss:7.4MB vcsw:15980 ivcsw:1665 recvUC:7%+33%
[23906] 2.000  discarded 0 rexmit 0 Trexmit 0 Tthrottle 0 Nthrottle 0
[23906] 3.000  vm:23905 size 12 mean 18.512us min 6.719us 50% 26.899us 90% 31.802us 99% 44.436us max 1995.565us cnt 26929
[23906] 3.000  rss:7.9MB vcsw:20551 ivcsw:6474 ddsperf:1%+0% recvUC:10%+32%
[23906] 3.000  discarded 0 rexmit 0 Trexmit 0 Tthrottle 0 Nthrottle 0
";

    /// `ddsperf -D3 -1 -X sub` against `ddsperf -D2 pub 1kHz size 100`.
    const DDSPERF_SUB: &str = "\
[24222] participant vm:24222: new (self)
[24222] participant vm:24233: new
[24222] 1.000  size 100 total 498 lost 0 delta 498 lost 0 rate 0.50 kS/s 0.40 Mb/s (0.05 kS/s 0.04 Mb/s)
[24222] 1.000  discarded 104 rexmit 0 Trexmit 0 Tthrottle 0 Nthrottle 0
[24222] 2.000  size 100 total 1498 lost 0 delta 1000 lost 0 rate 1.00 kS/s 0.80 Mb/s (0.15 kS/s 0.12 Mb/s)
[24222] 2.000  discarded 104 rexmit 0 Trexmit 0 Tthrottle 0 Nthrottle 0
[24222] participant vm:24233: gone
[24222] 3.000  size 100 total 2004 lost 0 delta 506 lost 0 rate 0.51 kS/s 0.40 Mb/s (0.20 kS/s 0.16 Mb/s)
[24222] 3.000  discarded 0 rexmit 0 Trexmit 0 Tthrottle 0 Nthrottle 0
";

    /// `ddsperf -D2 pub 1kHz size 100` (the other side of [`DDSPERF_SUB`]).
    const DDSPERF_PUB: &str = "\
[24233] participant vm:24233: new (self)
[24233] participant vm:24222: new
[24233] 1.000    1k/s   0n |@@-______.... ...   .. . ... .|   0%  78u
[24233] 1.000  rss:7.4MB vcsw:960 ivcsw:395 pub:0%+1%
";

    /// `ddsperf -D2 -1 -Qminmatch:1 sub` alone (exit 1), and a `-l sub` with sublat lines.
    const DDSPERF_MISC: &str = "\
[30236] participant vm:30236: new (self)
[30236] 1.000  size 0 total 0 lost 0 delta 0 lost 0 rate 0.00 kS/s 0.00 Mb/s (0.00 kS/s 0.00 Mb/s)
[30236] error: too few matching participants (0)
[30246] 2.000  sublat vm:30257 size 12 mean 27.426us min 9.754us 50% 20.380us 90% 48.022us 99% 158.235us max 158.235us cnt 100
[30246] 3.000  sublat e3a6512b980d5c8a size 12 mean 24.060us min 11.105us 50% 22.613us 90% 51.717us 99% 55.332us max 55.332us cnt 20
[3024
write error: -10
";

    /// `tessera perf -D3 --json -X --warmup 0.5 ping` against `tessera perf --json pong`
    /// (summary histogram shortened).
    const TESSERA_PING: &str = r#"{"event":"new","host":"vm","peer_pid":28223,"pid":28223,"self":true,"t":0.001,"type":"participant"}
{"event":"new","host":"vm","peer_pid":28222,"pid":28223,"self":false,"t":0.002,"type":"participant"}
{"cnt":20942,"max_us":1578.569,"mean_us":23.650718460509978,"min_us":12.338,"p50_us":14.546,"p90_us":47.346,"p99_us":75.191,"peer":"vm:28222","pid":28223,"size":12,"t":2.0,"type":"latency"}
{"host":null,"ivcsw":6504,"peer_pid":null,"pid":28223,"rss_bytes":8126464.0,"stale":false,"t":2.0,"threads":[{"name":"tessera-d0p1-us","s_pct":21,"u_pct":25}],"type":"cpu","vcsw":14607}
{"discarded":0,"n_throttle":0,"pid":28223,"rexmit":3,"t":2.0,"t_rexmit_ns":0,"t_throttle_ns":0,"type":"extended"}
not json
{"cnt":24287,"max_us":1656.255,"mean_us":20.34439811421748,"min_us":12.483,"p50_us":13.74,"p90_us":18.437,"p99_us":48.146,"peer":"vm:28222","pid":28223,"size":12,"t":3.0,"type":"latency"}
{"exit_code":0,"latency":[{"cnt":5,"hist":[[12345,2],[14001,3]],"max_us":14.001,"mean_us":13.5,"min_us":12.345,"p50_us":14.001,"p90_us":14.001,"p999_us":14.001,"p99_us":14.001,"peer":"vm:28222"},{"cnt":2,"hist":[[14001,1],[90111,1]],"max_us":90.111,"mean_us":50.0,"min_us":14.001,"p50_us":14.001,"p90_us":90.111,"p999_us":90.111,"p99_us":90.111,"peer":"vm:1"}],"lost":0,"pid":28223,"received":0,"t":3.007,"type":"summary"}
"#;

    /// `tessera perf -D3 -1 -X --json sub` against a 1 kHz publisher, plus an error line.
    const TESSERA_SUB: &str = r#"{"event":"new","host":"vm","peer_pid":28281,"pid":28281,"self":true,"t":0.001,"type":"participant"}
{"event":"new","host":"vm","peer_pid":28309,"pid":28281,"self":false,"t":0.505,"type":"participant"}
{"delta":495,"delta_lost":0,"lost":0,"pid":28281,"rate10_ksps":0.0494954461219841,"rate10_mbps":0.03959635689758728,"rate_ksps":0.494954461219841,"rate_mbps":0.3959635689758728,"size":100,"t":1.0,"total":495,"type":"sub"}
{"discarded":0,"n_throttle":0,"pid":28281,"rexmit":0,"t":1.0,"t_rexmit_ns":0,"t_throttle_ns":0,"type":"extended"}
{"delta":1001,"delta_lost":2,"lost":2,"pid":28281,"rate10_ksps":0.14959850207019876,"rate10_mbps":0.11967880165615902,"rate_ksps":1.0009899770873594,"rate_mbps":0.8007919816698875,"size":100,"t":2.0,"total":1496,"type":"sub"}
{"event":"gone","host":"vm","peer_pid":28309,"pid":28281,"t":2.51,"type":"participant"}
{"type":"error","pid":28281,"error":"samples_lost","message":"2 samples lost","t":3.0}
{"exit_code":1,"latency":[],"lost":2,"pid":28281,"received":1496,"t":3.002,"type":"summary"}
"#;

    #[test]
    fn ddsperf_ping() {
        let o = parse_ddsperf_text(DDSPERF_PING);
        assert_eq!(
            o.participants_new,
            vec![ParticipantLine {
                t: None,
                host: "vm".into(),
                peer_pid: 23905
            }]
        );
        assert_eq!(o.latency.len(), 2);
        let l = &o.latency[0];
        assert_eq!((l.t, l.peer.as_str(), l.size), (2.0, "vm:23905", 12));
        assert_eq!(
            l.summary,
            IntervalSummary {
                count: 17640,
                mean_us: 28.141,
                min_us: 6.809,
                p50_us: 29.433,
                p90_us: 36.253,
                p99_us: 61.922,
                max_us: 2074.223,
            }
        );
        assert_eq!(o.latency[1].summary.count, 26929);
        assert_eq!(o.extended.len(), 2);
        assert!(o.subs.is_empty() && o.hist.is_empty() && o.errors.is_empty());
    }

    #[test]
    fn ddsperf_sub_and_pub() {
        let o = parse_ddsperf_text(DDSPERF_SUB);
        assert_eq!(o.participants_new.len(), 1);
        assert_eq!(o.participants_new[0].peer_pid, 24233);
        assert_eq!(o.subs.len(), 3);
        assert_eq!(
            o.subs[1],
            SubLine {
                t: 2.0,
                size: 100,
                total: 1498,
                lost: 0,
                delta: 1000,
                delta_lost: 0,
                rate_ksps: 1.0,
                rate_mbps: 0.8,
            }
        );
        assert_eq!(
            o.extended[0],
            ExtendedLine {
                t: 1.0,
                discarded: 104,
                rexmit: 0
            }
        );
        assert!(o.latency.is_empty());

        let o = parse_ddsperf_text(DDSPERF_PUB);
        assert_eq!(o.participants_new.len(), 1);
        assert!(o.subs.is_empty() && o.latency.is_empty() && o.extended.is_empty());
    }

    #[test]
    fn ddsperf_errors_sublat_and_garbage() {
        let o = parse_ddsperf_text(DDSPERF_MISC);
        assert!(o.participants_new.is_empty());
        assert_eq!(o.subs.len(), 1);
        assert_eq!(o.subs[0].total, 0);
        // sublat lines are not round-trip latency.
        assert!(o.latency.is_empty());
        assert_eq!(
            o.errors,
            vec![
                "too few matching participants (0)".to_string(),
                "write error: -10".to_string()
            ]
        );
    }

    #[test]
    fn text_of_tessera_perf_reads_the_same() {
        // `tessera perf` without --json prints ddsperf's text.
        let t = "[28341] participant vm:28341: new (self)\n\
                 [28341] participant vm:28342: new\n\
                 [28341] 2.000  vm:28342 size 12 mean 36.748us min 12.564us 50% 36.889us 90% 47.616us 99% 80.319us max 1023.807us cnt 13511\n\
                 [28341] 2.000  rss:7.7MB vcsw:12642 ivcsw:901 tessera-d0p1-us:21%+25%\n\
                 [28341] 2.000  discarded 0 rexmit 151 Trexmit 0 Tthrottle 0 Nthrottle 0\n";
        let o = parse_ddsperf_text(t);
        assert_eq!(o.latency.len(), 1);
        assert_eq!(o.latency[0].summary.p50_us, 36.889);
        assert_eq!(o.extended[0].rexmit, 151);
        assert_eq!(o.participants_new[0].peer_pid, 28342);
    }

    #[test]
    fn host_names_with_colons() {
        let o = parse_ddsperf_text("[1] participant a:b:c:42: new\n[1] participant x: new\n");
        assert_eq!(o.participants_new.len(), 1);
        assert_eq!(o.participants_new[0].host, "a:b:c");
        assert_eq!(o.participants_new[0].peer_pid, 42);
    }

    #[test]
    fn tessera_json_ping() {
        let o = parse_tessera_json(TESSERA_PING);
        assert_eq!(
            o.participants_new,
            vec![ParticipantLine {
                t: Some(0.002),
                host: "vm".into(),
                peer_pid: 28222
            }]
        );
        assert_eq!(o.latency.len(), 2);
        assert_eq!(o.latency[0].peer, "vm:28222");
        assert_eq!(o.latency[0].summary.count, 20942);
        assert_eq!(o.latency[1].summary.p90_us, 18.437);
        assert_eq!(o.extended[0].rexmit, 3);
        // Merged over both sources, ascending.
        assert_eq!(o.hist, vec![(12345, 2), (14001, 4), (90111, 1)]);
        assert!(o.errors.is_empty() && o.subs.is_empty());
    }

    #[test]
    fn tessera_json_sub() {
        let o = parse_tessera_json(TESSERA_SUB);
        assert_eq!(o.participants_new.len(), 1);
        assert_eq!(o.participants_new[0].t, Some(0.505));
        assert_eq!(o.subs.len(), 2);
        assert_eq!(o.subs[1].delta_lost, 2);
        assert_eq!(o.subs[1].rate_ksps, 1.0009899770873594);
        assert_eq!(o.errors, vec!["2 samples lost".to_string()]);
        assert!(o.hist.is_empty());
        assert_eq!(o.published, None, "a subscriber writes nothing");
    }

    #[test]
    fn tessera_json_pub_counts_what_it_wrote() {
        let o = parse_tessera_json(
            r#"{"bin_ns":1000,"bins":[5],"count":6,"max_ns":72641,"min_ns":0,"over":1,"pid":4106,"rate":5.99,"t":1.0,"type":"pub"}
{"bin_ns":1000,"bins":[1711],"count":1955,"max_ns":183826,"min_ns":0,"over":14,"pid":4106,"rate":1954.9,"t":2.0,"type":"pub"}
{"exit_code":0,"latency":[],"lost":0,"pid":4106,"received":0,"t":4.225,"type":"summary"}"#,
        );
        assert_eq!(o.published, Some(1961));
    }

    /// `fastdds-perf -D 3 -Qminmatch:1 -Qinitwait:10 --warmup 0.5 ping size 16` against
    /// `fastdds-perf pong` (Fast DDS 2.9.1, shared memory, loopback namespace; the summary's
    /// histogram shortened).
    const FASTDDS_PING: &str = r#"{"type":"participant","pid":15683,"event":"new","host":"vm","peer_pid":15683,"self":true,"t":0.000}
{"type":"participant","pid":15683,"event":"new","host":"vm","peer_pid":15682,"self":false,"t":0.107}
{"type":"latency","pid":15683,"t":1.000,"peer":"vm:15682","size":16,"cnt":20461,"mean_us":24.336,"min_us":10.174,"p50_us":21.607,"p90_us":35.633,"p99_us":42.633,"max_us":2433.903}
{"type":"latency","pid":15683,"t":2.000,"peer":"vm:15682","size":16,"cnt":25499,"mean_us":19.499,"min_us":9.799,"p50_us":18.056,"p90_us":23.730,"p99_us":44.701,"max_us":1074.521}
{"type":"latency","pid":15683,"t":3.000,"peer":"vm:15682","size":16,"cnt":26314,"mean_us":18.897,"min_us":10.060,"p50_us":17.620,"p90_us":23.535,"p99_us":27.735,"max_us":2396.737}
{"type":"summary","pid":15683,"latency":[{"peer":"vm:15682","cnt":6,"mean_us":401.4,"min_us":9.796,"p50_us":10.028,"p90_us":2397.184,"p99_us":2397.184,"p999_us":2397.184,"max_us":2397.184,"hist":[[9796,1],[10028,3],[1680896,1],[2397184,1]]}],"received":0,"lost":0,"exit_code":0,"t":3.002}
"#;

    /// `fastdds-perf -D 4 -1 sub` against `fastdds-perf pub size 4096` whose writes timed out
    /// once (Fast DDS's KEEP_ALL history full for 10 s), and a failed `-Qinitwait`.
    const FASTDDS_SUB: &str = r#"{"type":"participant","pid":17085,"event":"new","host":"vm","peer_pid":17085,"self":true,"t":0.000}
{"type":"participant","pid":17085,"event":"new","host":"vm","peer_pid":17086,"self":false,"t":0.032}
{"type":"sub","pid":17085,"t":1.000,"size":4096,"total":3212,"lost":0,"delta":3212,"delta_lost":0,"rate_ksps":3.211766,"rate_mbps":105.243136}
{"type":"sub","pid":17085,"t":2.000,"size":4096,"total":5929,"lost":0,"delta":2717,"delta_lost":0,"rate_ksps":2.716989,"rate_mbps":89.030301}
{"type":"participant","pid":17085,"event":"gone","host":"vm","peer_pid":17086,"t":2.500}
{"type":"write_error","code":10}
{"type":"error","pid":17086,"error":"too_few_matching","message":"too few matching participants (0)","t":3.999}
{"type":"summary","pid":17085,"latency":[],"received":12511,"lost":0,"exit_code":0,"t":4.000}
"#;

    #[test]
    fn fastdds_perf_json_reads_like_tessera_perf() {
        let o = parse_tessera_json(FASTDDS_PING);
        assert_eq!(
            o.participants_new,
            vec![ParticipantLine {
                t: Some(0.107),
                host: "vm".into(),
                peer_pid: 15682
            }]
        );
        assert_eq!(o.latency.len(), 3);
        assert_eq!((o.latency[0].t, o.latency[0].size), (1.0, 16));
        assert_eq!(o.latency[2].summary.count, 26314);
        assert_eq!(o.latency[1].summary.p99_us, 44.701);
        assert_eq!(
            o.hist,
            vec![(9796, 1), (10028, 3), (1_680_896, 1), (2_397_184, 1)]
        );
        // The histogram is what the bench's latency figures come from.
        let l = crate::stats::latency_from_pairs(&o.hist).unwrap();
        assert_eq!(l.count, 6);
        assert!((l.p50_us - 10.03).abs() < 0.05, "{}", l.p50_us);
        assert!(o.errors.is_empty() && o.subs.is_empty());

        let o = parse_tessera_json(FASTDDS_SUB);
        assert_eq!(o.participants_new.len(), 1);
        assert_eq!(o.subs.len(), 2);
        assert_eq!(
            o.subs[1],
            SubLine {
                t: 2.0,
                size: 4096,
                total: 5929,
                lost: 0,
                delta: 2717,
                delta_lost: 0,
                rate_ksps: 2.716989,
                rate_mbps: 89.030301,
            }
        );
        assert_eq!(
            o.errors,
            vec![
                "write error: 10".to_string(),
                "too few matching participants (0)".to_string()
            ]
        );
        assert!(o.hist.is_empty() && o.latency.is_empty());
    }

    #[test]
    fn garbage_never_panics() {
        for s in [
            "",
            "[",
            "[x] 1.0 size",
            "[1] 1.000  size 1 total",
            "[1] 1.000  vm:1 size 12 mean",
            "[1] participant : new",
            "{\"type\":\"summary\",\"latency\":[{\"hist\":[[1],[\"a\",2],[-1,1]]}]}",
            "{\"type\":\"latency\"}",
            "{\"type\":\"sub\",\"size\":99999999999}",
            "{",
        ] {
            let _ = parse_ddsperf_text(s);
            let _ = parse_tessera_json(s);
        }
    }
}
