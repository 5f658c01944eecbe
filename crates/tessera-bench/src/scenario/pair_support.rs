//! Which pair can measure which cell of an experiment, and if not, why.

use std::collections::BTreeMap;

use serde_json::Value;
use tessera_cli::perf::loan::{loan_sizes_text, LOAN_SIZES};

use super::axis_values::nasa_case;
use super::Experiment;
use crate::results::{Implementation, Kind, Pair};

impl Experiment {
    /// Whether `pair` can measure `cell` of this experiment, and if not, why.
    pub fn supports(&self, pair: Pair, cell: &BTreeMap<String, Value>) -> Result<(), String> {
        let has_udp = pair.writer == Implementation::Udp || pair.reader == Implementation::Udp;
        if has_udp {
            if !pair.is_same() {
                return Err("raw UDP does not pair with a DDS implementation".into());
            }
            if !matches!(self.kind, Kind::Latency | Kind::Throughput) {
                return Err(format!(
                    "the raw UDP floor has no {} experiment",
                    self.kind.as_str()
                ));
            }
            if cell.get("subscribers").and_then(Value::as_u64).unwrap_or(1) != 1 {
                return Err("the raw UDP floor serves one subscriber".into());
            }
        }
        if pair.writer.is_shm_floor() || pair.reader.is_shm_floor() {
            if !pair.is_same() {
                return Err("the raw shared-memory floor does not pair with anything".into());
            }
            if self.kind != Kind::Latency {
                return Err(format!(
                    "the raw shared-memory floor has no {} experiment",
                    self.kind.as_str()
                ));
            }
            if cell.get("subscribers").and_then(Value::as_u64).unwrap_or(1) != 1 {
                return Err("the raw shared-memory floor serves one subscriber".into());
            }
        }
        if pair.writer.is_loan() || pair.reader.is_loan() {
            if !pair.is_same() {
                return Err(
                    "a loan pair has its own types and topics: it pairs only with itself".into(),
                );
            }
            if !matches!(self.kind, Kind::Latency | Kind::Throughput) {
                return Err(format!(
                    "`tessera perf --loan` has no {} experiment",
                    self.kind.as_str()
                ));
            }
            let size = cell.get("size").and_then(Value::as_u64).unwrap_or(16);
            if !u32::try_from(size).is_ok_and(|s| LOAN_SIZES.contains(&s)) {
                return Err(format!(
                    "`tessera perf --loan` has no type of {size} B (sizes: {})",
                    loan_sizes_text()
                ));
            }
        }
        if pair.writer == Implementation::TesseraAtomic
            || pair.reader == Implementation::TesseraAtomic
        {
            atomic_supports(self.kind, pair, cell)?;
        }
        if cell.get("architecture").and_then(Value::as_str) == Some("centralized")
            && !(pair.writer.is_tessera() || pair.writer.is_fastdds())
        {
            return Err(format!("{} has no discovery server", pair.writer.display()));
        }
        if cell.get("architecture").and_then(Value::as_str) == Some("federated")
            && !(pair.writer == Implementation::Tessera && pair.reader == Implementation::Tessera)
        {
            return Err(format!(
                "federated runs Tessera's node service; {} has none",
                if pair.writer == Implementation::Tessera {
                    pair.reader.display()
                } else {
                    pair.writer.display()
                }
            ));
        }
        if cell
            .get("applications")
            .and_then(Value::as_u64)
            .unwrap_or(1)
            > 1
            && has_udp
        {
            return Err("the raw UDP floor has one publisher".into());
        }
        // The C/C++ workers speak ddsperf's ping/pong and pub/sub, nothing more.
        let has = |i: Implementation| pair.writer == i || pair.reader == i;
        let native_worker = if pair.writer.is_fastdds() || pair.reader.is_fastdds() {
            Some("fastdds-perf")
        } else if has(Implementation::CycloneC) {
            Some("cyclone-perf")
        } else {
            None
        };
        if let Some(worker) = native_worker {
            if !matches!(self.kind, Kind::Latency | Kind::Throughput) {
                return Err(format!(
                    "{worker} speaks ddsperf's ping/pong and pub/sub only, so it has no {} \
                     experiment",
                    self.kind.as_str()
                ));
            }
            if self.setting("ping_percent", 0.0) > 0.0 {
                return Err(format!("{worker} does not send pings among its data"));
            }
        }
        if pair.writer.is_rust_peer() || pair.reader.is_rust_peer() {
            if !matches!(self.kind, Kind::Latency | Kind::Throughput) {
                return Err(format!(
                    "the Rust peer workers speak ddsperf's ping/pong and pub/sub only, so they \
                     have no {} experiment",
                    self.kind.as_str()
                ));
            }
            if self.setting("ping_percent", 0.0) > 0.0 {
                return Err("the Rust peer workers do not send pings among their data".into());
            }
            let subs = cell.get("subscribers").and_then(Value::as_u64).unwrap_or(1);
            if self.kind == Kind::Latency && subs > 1 && pair.writer.is_rust_peer() {
                return Err(
                    "a Rust peer worker's ping waits for one pong (a middleware may clear the \
                     timestamp's answer-me bit, so it cannot tell pongs apart): no 1-to-N latency"
                        .into(),
                );
            }
            if let Some(why) = crate::rustpeers::mixed_pair_gap(pair, self.kind.as_str()) {
                return Err(why);
            }
        }
        let has_cyclone =
            pair.writer == Implementation::Cyclone || pair.reader == Implementation::Cyclone;
        if has_cyclone && self.kind == Kind::LateJoiner {
            return Err(
                "ddsperf has no TRANSIENT_LOCAL data, so it cannot express a late \
                        joiner to history"
                    .into(),
            );
        }
        if self.kind == Kind::Failure
            && !(pair.writer == Implementation::Tessera && pair.reader == Implementation::Tessera)
        {
            return Err(
                "the failure experiment kills Tessera's discovery server and node service \
                 (the pair `tessera`); Cyclone has neither"
                    .into(),
            );
        }
        if !pair.is_same() && matches!(self.kind, Kind::Discovery | Kind::Reliability) {
            return Err(format!(
                "mixed pairs are not defined for {}",
                self.kind.as_str()
            ));
        }
        Ok(())
    }
}

/// Whether the ATOMIC pair can measure `cell` of a `kind` experiment: every process of a run
/// must be a member of the topic's consensus group, and a consensus log is reliable.
fn atomic_supports(kind: Kind, pair: Pair, cell: &BTreeMap<String, Value>) -> Result<(), String> {
    if !pair.is_same() {
        return Err(
            "ATOMIC consistency needs every endpoint of the topic in its consensus group: \
             `tessera-atomic` pairs only with itself"
                .into(),
        );
    }
    if !matches!(kind, Kind::Latency | Kind::Throughput | Kind::Reliability) {
        return Err(format!(
            "`tessera-atomic` has no {} experiment (latency, throughput and reliability only)",
            kind.as_str()
        ));
    }
    let best_effort = cell.get("reliability").and_then(Value::as_str) == Some("best_effort")
        || cell
            .get("case")
            .and_then(Value::as_str)
            .and_then(nasa_case)
            .is_some_and(|(_, rel, _)| rel == "best_effort");
    if best_effort {
        return Err(
            "ATOMIC consistency is reliable by construction (a write returns after commit): \
             no best-effort cell"
                .into(),
        );
    }
    match cell.get("architecture").and_then(Value::as_str) {
        None | Some("decentralized") => Ok(()),
        Some(a) => Err(format!("`tessera-atomic` runs decentralized only, not {a}")),
    }
}
