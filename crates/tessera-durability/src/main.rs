//! `tessera-durability` (also `tessera durability`): runs a durability service until SIGINT or
//! SIGTERM, then leaves cleanly (its participant says goodbye and removes its shared-memory
//! segment; killed with -9, the next participant on the host reclaims the segment).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tessera_durability::{DurabilityService, ServiceConfig};

fn usage(prog: &str) -> String {
    format!(
        "usage: {prog} [-d DOMAIN] [--store DIR] [--topics PATTERN[,PATTERN...]] [--replicated]\n\
         \x20      [--stats SECS]\n\
         \n\
         Keeps the samples of TRANSIENT writers in memory and of PERSISTENT writers in\n\
         DIR/durability.redb (reloaded at start), and serves them to TRANSIENT and PERSISTENT\n\
         readers that join later. Patterns: * and ?; default every topic.\n\
         --replicated: the domain's replicated services keep the same samples through\n\
         consensus (one ATOMIC log); a sample is acknowledged once the group committed it.\n"
    )
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn main() {
    // Warnings and errors on stderr (a store write that failed, log entries dropped);
    // RUST_LOG for more.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_ansi(false)
        .with_writer(std::io::stderr)
        .init();
    let argv: Vec<String> = std::env::args().collect();
    let prog = argv
        .first()
        .cloned()
        .unwrap_or_else(|| "tessera-durability".into());
    std::process::exit(run(&prog, &argv[1..]));
}

fn run(prog: &str, args: &[String]) -> i32 {
    let mut domain = 0u32;
    let mut config = ServiceConfig::default();
    let mut stats: Option<u64> = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| match it.next() {
            Some(v) => Ok(v.clone()),
            None => Err(format!("{a} needs {what}")),
        };
        let parsed: Result<(), String> = match a.as_str() {
            "-d" | "--domain" => value("a domain id")
                .and_then(|v| v.parse().map_err(|e| format!("domain {v}: {e}")))
                .map(|d| domain = d),
            "--store" => value("a directory").map(|v| config.store_dir = Some(v.into())),
            "--replicated" => {
                config.replicated = true;
                Ok(())
            }
            "--topics" => value("patterns").map(|v| {
                config.topics = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect()
            }),
            "--stats" => value("seconds")
                .and_then(|v| v.parse().map_err(|e| format!("stats {v}: {e}")))
                .map(|s| stats = Some(s)),
            "-h" | "--help" | "help" => {
                print!("{}", usage(prog));
                return 0;
            }
            other => Err(format!("unknown argument {other}")),
        };
        if let Err(e) = parsed {
            eprintln!("{prog}: {e}\n{}", usage(prog));
            return 2;
        }
    }
    // The store first: a damaged one is reported before anything joins the domain.
    let store = match DurabilityService::open_store(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return 1;
        }
    };
    let participant = match tessera::DomainParticipant::new(domain) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{prog}: cannot join domain {domain}: {e}");
            return 1;
        }
    };
    let config_replicated = config.replicated;
    let service = match DurabilityService::start_with_store(participant, config, store) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{prog}: {e}");
            return 1;
        }
    };
    // SAFETY: `on_signal` only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    println!("durability service ready on domain {domain}");
    let period = Duration::from_secs(stats.unwrap_or(3600).max(1));
    let mut next = Instant::now() + period;
    while !STOP.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
        if Instant::now() < next {
            continue;
        }
        next += period;
        if stats.is_some() {
            if config_replicated {
                let c = service.log_counters();
                println!(
                    "log: {} proposed, {} proposed again, {} refused until applied, {} entries dropped",
                    c.proposed, c.proposed_again, c.refused, c.dropped
                );
            }
            for (topic, s) in service.stats() {
                println!("{topic}: {s}");
            }
        }
    }
    drop(service);
    0
}
