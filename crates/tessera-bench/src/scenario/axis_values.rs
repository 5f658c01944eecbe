//! Parsers and tables for axis values, shared by validation and the runners: pair labels,
//! history, the NASA test cases and the `failure` architectures.

use crate::results::Pair;

/// Parses pair labels.
pub fn parse_pairs(labels: &[String]) -> Result<Vec<Pair>, String> {
    let mut out = Vec::new();
    for l in labels {
        let p = Pair::from_label(l).ok_or_else(|| {
            format!(
                "unknown pair {l:?} (tessera, tessera-shm, tessera-shm-spin, tessera-loan, \
                 tessera-loan-spin, tessera-atomic, cyclone, fastdds, fastdds-udp, rustdds, dust_dds, zenoh, udp, \
                 shm, shm-spin, or WRITER>READER \
                 of two DDS implementations, e.g. tessera>cyclone)"
            )
        })?;
        if !out.contains(&p) {
            out.push(p);
        }
    }
    if out.is_empty() {
        return Err("pairs must not be empty".into());
    }
    Ok(out)
}

/// The architectures of the `failure` kind: which shared part is killed (none, the discovery
/// server, one of two linked servers, the publisher's node service).
pub const FAILURE_ARCHITECTURES: &[&str] = &[
    "decentralized",
    "centralized",
    "centralized-redundant",
    "federated",
];

/// The NASA report's point-to-point test cases: (instances, reliability, read mode).
pub fn nasa_case(letter: &str) -> Option<(u32, &'static str, &'static str)> {
    Some(match letter {
        "a" => (1, "reliable", "listener"),
        "b" => (70_000, "reliable", "listener"),
        "c" => (70_000, "best_effort", "listener"),
        "d" => (1, "reliable", "polling"),
        "e" => (70_000, "reliable", "polling"),
        "f" => (70_000, "best_effort", "polling"),
        "g" => (1, "reliable", "waitset"),
        "h" => (70_000, "reliable", "waitset"),
        "i" => (70_000, "best_effort", "waitset"),
        _ => return None,
    })
}

/// Parses `keep_all` or `keep_last_N` into ddsperf's `-k` argument (`all` or `N`).
pub fn parse_history(h: &str) -> Result<String, String> {
    if h == "keep_all" {
        return Ok("all".into());
    }
    if let Some(n) = h.strip_prefix("keep_last_") {
        if let Ok(d) = n.parse::<u32>() {
            if d > 0 {
                return Ok(d.to_string());
            }
        }
    }
    Err(format!(
        "history {h:?} is not keep_all or keep_last_N (N >= 1)"
    ))
}
