//! `tessera-node` (also `tessera node`): the per-host node service of the federated
//! architecture. Runs until killed; prints its routes and the scheduler's counters every few
//! seconds (`--stats SECS`, 0 for never).

use std::collections::HashMap;
use std::time::Duration;

use tessera_node::{Node, NodeConfig, Rate};

const USAGE: &str = "usage: tessera node [-d DOMAIN] [--rate TOPIC=BYTES[/BURST]]... \
                     [--default-rate BYTES[/BURST]] [--stats SECS]";

fn parse(args: &[String]) -> Result<(NodeConfig, u64), String> {
    let mut domain = 0u32;
    let mut rates: HashMap<Option<String>, Rate> = HashMap::new();
    let mut stats = 5u64;
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
            "-h" | "--help" => return Err(USAGE.into()),
            other => return Err(format!("unknown argument {other:?}\n{USAGE}")),
        }
    }
    let mut c = NodeConfig::new(domain);
    c.rates = rates;
    Ok((c, stats))
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
    println!(
        "tessera node: serving domain {domain} (pid {})",
        std::process::id()
    );
    loop {
        std::thread::sleep(Duration::from_secs(stats.max(1)));
        if stats == 0 {
            continue;
        }
        for r in node.routes() {
            println!(
                "route {} {:?}: {} samples, {} dispose/unregister, {} failed",
                r.topic, r.direction, r.samples, r.lifecycle, r.failed
            );
        }
        for (t, why) in node.pending() {
            println!("pending {t}: {why}");
        }
        for f in node.scheduler().flows {
            println!(
                "flow {}: {} samples, {} bytes, throttled {}, preempted others {}",
                f.topic, f.sent, f.bytes, f.throttled, f.preempted_others
            );
        }
    }
}
