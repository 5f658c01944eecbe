//! `tessera-node` (also `tessera node`): the per-host node service of the federated
//! architecture. Runs until SIGINT/SIGTERM (then it leaves cleanly: its participants say
//! goodbye, so the applications and remote peers drop it at once, and its presence file and
//! segments go); prints its routes, the scheduler's counters and, with `--durability`, what
//! its durability service keeps, every few seconds (`--stats SECS`, 0 for never).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tessera_durability::ServiceConfig;
use tessera_node::{Node, NodeConfig, Rate};

const USAGE: &str = "usage: tessera node [-d DOMAIN] [--rate TOPIC=BYTES[/BURST]]... \
                     [--default-rate BYTES[/BURST]] [--batch-window MICROS] [--stats SECS]\n\
                     \x20      [--durability] [--durability-store DIR] \
                     [--durability-topics PATTERN[,PATTERN...]]\n\
                     --durability runs a durability service inside the node: it keeps the \
                     TRANSIENT data of the host's writers in memory, PERSISTENT data in \
                     DIR/durability.redb with --durability-store (which implies it), and \
                     serves the host's late-joining readers";

fn parse(args: &[String]) -> Result<(NodeConfig, u64), String> {
    let mut domain = 0u32;
    let mut rates: HashMap<Option<String>, Rate> = HashMap::new();
    let mut stats = 5u64;
    let mut window = None;
    let mut durability: Option<ServiceConfig> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut val = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "-d" | "--domain" => domain = val()?.parse().map_err(|_| "bad domain".to_string())?,
            "--rate" => {
                let v = val()?;
                let (t, r) = v
                    .split_once('=')
                    .ok_or_else(|| format!("--rate {v:?}: expected TOPIC=RATE"))?;
                rates.insert(Some(t.to_owned()), r.parse()?);
            }
            "--default-rate" => {
                rates.insert(None, val()?.parse()?);
            }
            "--stats" => stats = val()?.parse().map_err(|_| "bad --stats".to_string())?,
            "--batch-window" => {
                let us: u64 = val()?
                    .parse()
                    .map_err(|_| "bad --batch-window (microseconds)".to_string())?;
                window = Some(Duration::from_micros(us));
            }
            "--durability" => {
                durability.get_or_insert_with(ServiceConfig::default);
            }
            "--durability-store" => {
                let dir = val()?.into();
                durability
                    .get_or_insert_with(ServiceConfig::default)
                    .store_dir = Some(dir);
            }
            "--durability-topics" => {
                let topics = val()?.split(',').map(str::to_owned).collect();
                durability.get_or_insert_with(ServiceConfig::default).topics = topics;
            }
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mut c = NodeConfig::new(domain);
    c.rates = rates;
    c.durability = durability;
    if let Some(w) = window {
        c.batch_window = w;
    }
    Ok((c, stats))
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, stats) = match parse(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let domain = config.domain;
    let node = match Node::start(config) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("tessera node: {e}");
            std::process::exit(1);
        }
    };
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    println!(
        "tessera node: serving domain {domain} (pid {})",
        std::process::id()
    );
    let mut next = Instant::now();
    while !STOP.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
        if stats == 0 || Instant::now() < next {
            continue;
        }
        next = Instant::now() + Duration::from_secs(stats);
        for r in node.routes() {
            println!(
                "route {} {:?}: {} samples, {} dispose/unregister, {} failed, {} own returned",
                r.topic, r.direction, r.samples, r.lifecycle, r.failed, r.own
            );
        }
        for (t, why) in node.pending() {
            println!("pending {t}: {why}");
        }
        if let Some(d) = node.durability() {
            for (topic, t) in d.stats() {
                println!("durable {topic}: {t}");
            }
        }
        for f in node.scheduler().flows {
            println!(
                "flow {}: {} samples, {} bytes, throttled {}, preempted others {}",
                f.topic, f.sent, f.bytes, f.throttled, f.preempted_others
            );
        }
    }
    drop(node);
    println!("tessera node: stopped");
}
