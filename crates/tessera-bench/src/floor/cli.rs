//! The command line of the UDP floor tools: usage text, option parsing shared with the other
//! tools of the bench, and the common entry point that runs a tool from its arguments.

use std::io;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{FloorConfig, Role, DEFAULT_PORT, MAX_SIZE};

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
