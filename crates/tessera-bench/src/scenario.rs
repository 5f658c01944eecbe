//! Scenario files: what a `tessera bench` run measures.
//!
//! A scenario is TOML: run-wide settings, then one `([experiment)]` table per experiment. Every
//! axis of an experiment takes a single value or a list; the cartesian product of the lists is
//! the experiment's cells, and every cell is measured for every pair, `rounds` times,
//! interleaved (round 1: cell 1 pair A, cell 1 pair B, …; round 2: …).
//!
//! ```toml
//! name = "mine"
//! rounds = 3
//! pairs = ["tessera", "cyclone", "udp"]   # default for every experiment
//!
//! [[experiment]]
//! name = "latency"
//! kind = "latency"
//! size = [16, 1024, 16384]
//! duration_s = 2.0
//! ```
//!
//! Kinds and their axes (defaults in parentheses):
//! - `latency`: `size` (16), `subscribers` (1), `reliability` (reliable), `read_mode`
//!   (listener); `duration_s` (2), `warmup_s` (0.5); `count` (unset: a round-trip count
//!   instead of the duration, for every worker that can stop after N; ddsperf and the raw
//!   floors stay duration-based). With `subscribers` > 1 one pinger waits for N pongers;
//!   the report gives each ping's first and last answer.
//! - `throughput`: `size`, `subscribers`, `reliability`, `history` (keep_all), `read_mode`,
//!   `instances` (1), `rate` (0 = unpaced), `burst` (1), `multicast` (true), `case` (NASA test
//!   case letters `a`…`i`, which set instances, reliability and read_mode); `duration_s` (3),
//!   `warmup_s` (1: whole seconds each subscriber runs before the measured ones).
//! - `rate_step`: the throughput axes, plus `start_rate`, `step_rate`, `max_rate`,
//!   `step_duration_s` (2), `ping_percent` (1), `tolerance` (0.02).
//! - `discovery`: `participants` (2, 5, 10); `timeout_s` (30).
//! - `late_joiner`: `samples` (100), `size`; `timeout_s`. Tessera only.
//! - `failure`: `architecture` (decentralized, centralized, centralized-redundant, federated),
//!   `rate` (500), `size` (64); `duration_s` (2.5, the outage). A paced stream from host 0 to
//!   host 1 while the shared part is killed with -9 and restarted `duration_s` later, with a
//!   second reader joining during the outage. Tessera only.
//! - `reliability`: `phase` (alone, steady, bursty), `rate` (20000), `size` (128), `link_mbit`
//!   (100), `background_size` (8192), `background_load` (1.0 = the background offers the
//!   link's capacity), `burst_on_s` (1), `burst_off_s` (2), `duration_s` (10).
//!
//! Pairs: `tessera`, `cyclone`, `fastdds` (Fast DDS 2.9 with its default transports),
//! `fastdds-udp` (UDPv4 only), `udp` (the raw floor: latency and throughput with one subscriber
//! only), and mixed pairs of the DDS implementations such as `tessera>cyclone` or
//! `fastdds>tessera` (writer first), and `cyclone-c` (Cyclone DDS through its C worker, with
//! full latency histograms, beside ddsperf's `cyclone`). Fast DDS and `cyclone-c` pairs run
//! latency and throughput only.
//!
//! A run-wide `notes = ["…"]` list is copied into the report's notes.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::results::{Implementation, Kind, Pair};
use tessera_cli::perf::loan::{loan_sizes_text, LOAN_SIZES};

/// The built-in presets: name, one-line description, TOML text.
pub const PRESETS: &[(&str, &str, &str)] = &[
    (
        "quick",
        "about 2 minutes: latency 16 B–64 KiB, throughput 16 B–64 KiB; Tessera (UDP, shm), Cyclone, raw UDP and shm floors",
        include_str!("presets/quick.toml"),
    ),
    (
        "paper",
        "the seeds' figures: latency/jitter 4 B–16 KiB, 1-to-N, read modes, NASA cases a–i, \
         rate stepping, discovery, late joiners, mixed pairs",
        include_str!("presets/paper.toml"),
    ),
    (
        "reliability",
        "the DerechoDDS test: a critical reliable flow beside saturating best-effort traffic",
        include_str!("presets/reliability.toml"),
    ),
    (
        "peers",
        "under 5 minutes: latency, throughput and 1-to-4 fan-out for every installed \
         implementation (Tessera, Cyclone, Fast DDS, Fast DDS over UDP, RustDDS, dust_dds, \
         Zenoh, raw UDP), ranked",
        include_str!("presets/peers.toml"),
    ),
    (
        "transport",
        "same host: Tessera over UDP and shared memory (blocking, spinning), Cyclone, Fast DDS \
         (shared memory, UDP), the raw UDP and shared-memory floors; latency to 1 MiB",
        include_str!("presets/transport.toml"),
    ),
    (
        "architecture",
        "discovery time, traffic and CPU from 2 to 100 participants, decentralized and through \
         a discovery server (centralized); 1–16 applications to another host, decentralized and \
         through a node service per host (federated); the server or node killed mid-stream",
        include_str!("presets/architecture.toml"),
    ),
    (
        "consistency",
        "about 6 minutes: ATOMIC consistency beside EVENTUAL Tessera and Cyclone — latency vs \
         payload and vs members (2–7), throughput at 4 and 64 KiB, the reliability test with \
         an ATOMIC critical flow",
        include_str!("presets/consistency.toml"),
    ),
    (
        "ci",
        "a few seconds of every experiment kind, for the test suite",
        include_str!("presets/ci.toml"),
    ),
];

/// Errors reading a scenario; each names what is wrong and where.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The TOML does not parse or has unknown / mistyped fields.
    #[error("scenario {origin}: {message}")]
    Toml {
        /// File name or preset name.
        origin: String,
        /// The parser's message (with line and column).
        message: String,
    },
    /// A value is out of range or inconsistent.
    #[error("scenario {origin}, experiment {experiment:?}: {message}")]
    Invalid {
        /// File name or preset name.
        origin: String,
        /// The experiment's name (empty for run-wide settings).
        experiment: String,
        /// What is wrong.
        message: String,
    },
    /// The scenario file could not be read.
    #[error("cannot read scenario {path}: {source}")]
    Io {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Neither a preset nor an existing file.
    #[error(
        "unknown preset or scenario file {0:?} (presets: quick, paper, reliability, peers, transport, architecture, ci)"
    )]
    Unknown(String),
}

/// One value or a list of values in a scenario file.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum OneOrMany<T> {
    /// A single value.
    One(T),
    /// A list.
    Many(Vec<T>),
}

impl<T: Clone> OneOrMany<T> {
    fn to_vec(&self) -> Vec<T> {
        match self {
            OneOrMany::One(v) => vec![v.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

/// Run-wide settings of a scenario file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Name shown in reports.
    pub name: Option<String>,
    /// Free text shown in reports.
    pub description: Option<String>,
    /// Repetitions of every cell (default 3).
    pub rounds: Option<u32>,
    /// Default pairs for every experiment.
    pub pairs: Option<Vec<String>>,
    /// Hosts (1 = one private namespace; N = N namespaces on a virtual LAN).
    pub hosts: Option<u32>,
    /// Injected loss on every host's input, percent.
    pub loss_pct: Option<f64>,
    /// Bandwidth limit on every host's egress, Mbit/s.
    pub link_mbit: Option<f64>,
    /// Lines copied into the report's notes.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The experiments.
    #[serde(default)]
    pub experiment: Vec<ExperimentFile>,
}

/// One `[[experiment]]` table as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentFile {
    /// Unique name.
    pub name: String,
    /// Kind.
    pub kind: String,
    /// Pairs (overrides the run-wide list).
    pub pairs: Option<Vec<String>>,
    /// Rounds (overrides the run-wide value).
    pub rounds: Option<u32>,
    /// Hosts (overrides the run-wide value).
    pub hosts: Option<u32>,
    /// Payload size axis, bytes.
    pub size: Option<OneOrMany<u64>>,
    /// Subscriber-count axis.
    pub subscribers: Option<OneOrMany<u32>>,
    /// Throughput: publishing applications (processes on host 0, each with one writer at
    /// `rate`) axis; 1 unless set.
    pub applications: Option<OneOrMany<u32>>,
    /// `reliable` / `best_effort`.
    pub reliability: Option<OneOrMany<String>>,
    /// `keep_all` / `keep_last_N`.
    pub history: Option<OneOrMany<String>>,
    /// `listener` / `waitset` / `polling`.
    pub read_mode: Option<OneOrMany<String>>,
    /// Instance-count axis.
    pub instances: Option<OneOrMany<u32>>,
    /// Publish-rate axis, samples/s (0 = as fast as possible); reliability: critical rate.
    pub rate: Option<OneOrMany<u64>>,
    /// Samples per burst.
    pub burst: Option<u32>,
    /// Multicast axis.
    pub multicast: Option<OneOrMany<bool>>,
    /// NASA test cases `a`…`i`.
    pub case: Option<OneOrMany<String>>,
    /// Discovery: `decentralized` (every participant discovers every other) and/or
    /// `centralized` (through a discovery server: the implementation's own). Throughput:
    /// `decentralized` and/or `federated` (every application attached to its host's node
    /// service, `tessera node`, which does the networking for all of them).
    pub architecture: Option<OneOrMany<String>>,
    /// Measured seconds per point.
    pub duration_s: Option<f64>,
    /// Warm-up (primer) seconds excluded from latency statistics.
    pub warmup_s: Option<f64>,
    /// Latency: measured round trips per point (count mode; `duration_s` is then unused
    /// except by workers that cannot count).
    pub count: Option<u64>,
    /// Rate stepping: first offered rate.
    pub start_rate: Option<u64>,
    /// Rate stepping: increment.
    pub step_rate: Option<u64>,
    /// Rate stepping: last rate tried.
    pub max_rate: Option<u64>,
    /// Rate stepping: seconds per step.
    pub step_duration_s: Option<f64>,
    /// Rate stepping: share of samples that are pings, percent.
    pub ping_percent: Option<f64>,
    /// Rate stepping: accepted shortfall of received vs offered (0.02 = 2 %).
    pub tolerance: Option<f64>,
    /// Discovery: participant-count axis.
    pub participants: Option<OneOrMany<u32>>,
    /// Late joiner: samples in the writer's history.
    pub samples: Option<OneOrMany<u32>>,
    /// Give-up time for discovery / late-joiner points.
    pub timeout_s: Option<f64>,
    /// Reliability: phases (`alone`, `steady`, `bursty`).
    pub phase: Option<OneOrMany<String>>,
    /// Reliability: bottleneck bandwidth, Mbit/s.
    pub link_mbit: Option<f64>,
    /// Reliability: background sample size.
    pub background_size: Option<u64>,
    /// Reliability: background burst length, s.
    pub burst_on_s: Option<f64>,
    /// Reliability: background offered load as a multiple of the link's capacity.
    pub background_load: Option<f64>,
    /// Reliability: background pause length, s.
    pub burst_off_s: Option<f64>,
    /// Injected loss for this experiment, percent.
    pub loss_pct: Option<f64>,
}

/// A scenario, validated and with defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name (preset name or file stem unless set).
    pub name: String,
    /// Description.
    pub description: String,
    /// The TOML text it came from (saved with the results).
    pub text: String,
    /// Run-wide host count.
    pub hosts: u32,
    /// Run-wide injected loss, percent.
    pub loss_pct: f64,
    /// Run-wide link limit, Mbit/s.
    pub link_mbit: Option<f64>,
    /// Notes for the report (`notes = [...]`).
    pub notes: Vec<String>,
    /// The experiments.
    pub experiments: Vec<Experiment>,
}

/// A validated experiment.
#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    /// Unique name.
    pub name: String,
    /// Kind.
    pub kind: Kind,
    /// Pairs measured.
    pub pairs: Vec<Pair>,
    /// Rounds.
    pub rounds: u32,
    /// Hosts for this experiment (`None` = the run's).
    pub hosts: Option<u32>,
    /// Injected loss (`None` = the run's).
    pub loss_pct: Option<f64>,
    /// The axes, in expansion order: name → values.
    pub axes: Vec<(String, Vec<Value>)>,
    /// Scalar settings (durations, rates, …) by name.
    pub settings: BTreeMap<String, f64>,
}

/// One planned measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// Index of the experiment in [`Scenario::experiments`].
    pub experiment: usize,
    /// Pair.
    pub pair: Pair,
    /// Parameters (one value per axis).
    pub params: BTreeMap<String, Value>,
    /// Round.
    pub round: u32,
}

impl Experiment {
    /// A scalar setting, or `default`.
    pub fn setting(&self, name: &str, default: f64) -> f64 {
        self.settings.get(name).copied().unwrap_or(default)
    }

    /// The cells: the cartesian product of the axes.
    pub fn cells(&self) -> Vec<BTreeMap<String, Value>> {
        let mut cells = vec![BTreeMap::new()];
        for (name, values) in &self.axes {
            let mut next = Vec::with_capacity(cells.len() * values.len());
            for cell in &cells {
                for v in values {
                    let mut c = cell.clone();
                    c.insert(name.clone(), v.clone());
                    next.push(c);
                }
            }
            cells = next;
        }
        cells
    }

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

impl Scenario {
    /// Loads a preset by name, or a scenario file by path.
    pub fn load(name_or_path: &str) -> Result<Scenario, ScenarioError> {
        if let Some((name, _, text)) = PRESETS.iter().find(|(n, _, _)| *n == name_or_path) {
            return Scenario::parse(text, name);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.exists() {
            return Err(ScenarioError::Unknown(name_or_path.to_string()));
        }
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: name_or_path.to_string(),
            source,
        })?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| name_or_path.to_string());
        let mut s = Scenario::parse(&text, name_or_path)?;
        if s.name == name_or_path {
            s.name = stem;
        }
        Ok(s)
    }

    /// Parses and validates scenario text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
        let file: ScenarioFile = toml::from_str(text).map_err(|e| ScenarioError::Toml {
            origin: origin.to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let invalid = |experiment: &str, message: String| ScenarioError::Invalid {
            origin: origin.to_string(),
            experiment: experiment.to_string(),
            message,
        };
        let rounds = file.rounds.unwrap_or(3);
        if rounds == 0 || rounds > 1000 {
            return Err(invalid(
                "",
                format!("rounds must be 1..=1000, not {rounds}"),
            ));
        }
        let hosts = file.hosts.unwrap_or(1);
        if hosts == 0 || hosts > 64 {
            return Err(invalid("", format!("hosts must be 1..=64, not {hosts}")));
        }
        let loss_pct = file.loss_pct.unwrap_or(0.0);
        check_loss(loss_pct).map_err(|m| invalid("", m))?;
        let default_pairs = match &file.pairs {
            Some(p) => parse_pairs(p).map_err(|m| invalid("", m))?,
            None => vec![
                Pair::same(Implementation::Tessera),
                Pair::same(Implementation::Cyclone),
            ],
        };
        if file.experiment.is_empty() {
            return Err(invalid("", "no [[experiment]] tables".into()));
        }
        let mut experiments = Vec::new();
        for e in &file.experiment {
            if experiments.iter().any(|x: &Experiment| x.name == e.name) {
                return Err(invalid(&e.name, "duplicate experiment name".into()));
            }
            if e.name.is_empty() || e.name.contains(['|', ',', '/']) {
                return Err(invalid(
                    &e.name,
                    "names must be non-empty, without '|', ',' or '/'".into(),
                ));
            }
            let exp =
                build_experiment(e, &default_pairs, rounds).map_err(|m| invalid(&e.name, m))?;
            experiments.push(exp);
        }
        Ok(Scenario {
            name: file.name.clone().unwrap_or_else(|| origin.to_string()),
            description: file.description.clone().unwrap_or_default(),
            text: text.to_string(),
            hosts,
            loss_pct,
            link_mbit: file.link_mbit,
            notes: file.notes.clone(),
            experiments,
        })
    }

    /// Every measurement in run order: per experiment, rounds outermost, then cells, then the
    /// pairs interleaved. Cells a pair cannot measure are left out (see [`Scenario::skipped`]).
    pub fn plan(&self) -> Vec<Planned> {
        let mut out = Vec::new();
        for (i, e) in self.experiments.iter().enumerate() {
            let cells = e.cells();
            for round in 0..e.rounds {
                for cell in &cells {
                    for &pair in &e.pairs {
                        if e.supports(pair, cell).is_ok() {
                            out.push(Planned {
                                experiment: i,
                                pair,
                                params: cell.clone(),
                                round,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// Human-readable reasons for cells left out of the plan (one line per experiment × pair ×
    /// reason).
    pub fn skipped(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for e in &self.experiments {
            for &pair in &e.pairs {
                let mut reasons: Vec<String> = Vec::new();
                for cell in e.cells() {
                    if let Err(r) = e.supports(pair, &cell) {
                        if !reasons.contains(&r) {
                            reasons.push(r);
                        }
                    }
                }
                for r in reasons {
                    notes.push(format!("{}: {} skipped: {r}", e.name, pair.display()));
                }
            }
        }
        notes
    }

    /// Removes every pair that involves `implementation` (e.g. Cyclone when `ddsperf` is
    /// missing); returns true when anything was removed.
    pub fn drop_implementation(&mut self, implementation: Implementation) -> bool {
        let mut dropped = false;
        for e in &mut self.experiments {
            let before = e.pairs.len();
            e.pairs
                .retain(|p| p.writer != implementation && p.reader != implementation);
            dropped |= e.pairs.len() != before;
        }
        dropped
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

fn check_loss(loss: f64) -> Result<(), String> {
    if !(0.0..100.0).contains(&loss) {
        return Err(format!("loss_pct must be in [0, 100), not {loss}"));
    }
    Ok(())
}

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

fn parse_kind(s: &str) -> Result<Kind, String> {
    Ok(match s {
        "latency" => Kind::Latency,
        "throughput" => Kind::Throughput,
        "rate_step" => Kind::RateStep,
        "discovery" => Kind::Discovery,
        "late_joiner" => Kind::LateJoiner,
        "reliability" => Kind::Reliability,
        "failure" => Kind::Failure,
        other => {
            return Err(format!(
                "unknown kind {other:?} (latency, throughput, rate_step, discovery, \
                 late_joiner, reliability, failure)"
            ))
        }
    })
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

/// Which optional fields each kind accepts (beyond name, kind, pairs, rounds, hosts, loss).
fn allowed_fields(kind: Kind) -> &'static [&'static str] {
    const FLOW: &[&str] = &[
        "size",
        "subscribers",
        "applications",
        "architecture",
        "reliability",
        "history",
        "read_mode",
        "instances",
        "rate",
        "burst",
        "multicast",
        "case",
        "duration_s",
        "warmup_s",
    ];
    match kind {
        Kind::Latency => &[
            "size",
            "subscribers",
            "reliability",
            "read_mode",
            "architecture",
            "duration_s",
            "warmup_s",
            "count",
        ],
        Kind::Throughput => FLOW,
        Kind::RateStep => &[
            "size",
            "subscribers",
            "reliability",
            "history",
            "read_mode",
            "instances",
            "burst",
            "multicast",
            "case",
            "start_rate",
            "step_rate",
            "max_rate",
            "step_duration_s",
            "ping_percent",
            "tolerance",
        ],
        Kind::Discovery => &["participants", "architecture", "timeout_s"],
        Kind::LateJoiner => &["samples", "size", "timeout_s"],
        Kind::Failure => &["architecture", "rate", "size", "duration_s"],
        Kind::Reliability => &[
            "phase",
            "rate",
            "size",
            "link_mbit",
            "background_size",
            "background_load",
            "burst_on_s",
            "burst_off_s",
            "duration_s",
        ],
    }
}

/// The fields of `e` that are set, by name.
fn set_fields(e: &ExperimentFile) -> Vec<&'static str> {
    let mut v = Vec::new();
    macro_rules! check {
        ($($f:ident),*) => { $( if e.$f.is_some() { v.push(stringify!($f)); } )* };
    }
    check!(
        size,
        subscribers,
        applications,
        reliability,
        history,
        read_mode,
        instances,
        rate,
        burst,
        multicast,
        case,
        architecture,
        duration_s,
        warmup_s,
        count,
        start_rate,
        step_rate,
        max_rate,
        step_duration_s,
        ping_percent,
        tolerance,
        participants,
        samples,
        timeout_s,
        phase,
        link_mbit,
        background_size,
        background_load,
        burst_on_s,
        burst_off_s
    );
    v
}

fn one_of(axis: &str, v: &[String], allowed: &[&str]) -> Result<(), String> {
    for x in v {
        if !allowed.contains(&x.as_str()) {
            return Err(format!(
                "{axis}: {x:?} is not one of {}",
                allowed.join(", ")
            ));
        }
    }
    Ok(())
}

fn positive(name: &str, v: f64, max: f64) -> Result<f64, String> {
    if !(v > 0.0 && v <= max) {
        return Err(format!("{name} must be in (0, {max}], not {v}"));
    }
    Ok(v)
}

fn build_experiment(
    e: &ExperimentFile,
    default_pairs: &[Pair],
    rounds: u32,
) -> Result<Experiment, String> {
    let kind = parse_kind(&e.kind)?;
    let allowed = allowed_fields(kind);
    for f in set_fields(e) {
        if !allowed.contains(&f) {
            return Err(format!(
                "{f} is not a parameter of a {} experiment (allowed: {})",
                kind.as_str(),
                allowed.join(", ")
            ));
        }
    }
    let pairs = match &e.pairs {
        Some(p) => parse_pairs(p)?,
        None => default_pairs.to_vec(),
    };
    let rounds = e.rounds.unwrap_or(rounds);
    if rounds == 0 || rounds > 1000 {
        return Err(format!("rounds must be 1..=1000, not {rounds}"));
    }
    if let Some(h) = e.hosts {
        if h == 0 || h > 64 {
            return Err(format!("hosts must be 1..=64, not {h}"));
        }
    }
    if let Some(l) = e.loss_pct {
        check_loss(l)?;
    }
    let mut axes: Vec<(String, Vec<Value>)> = Vec::new();
    let mut settings = BTreeMap::new();
    let mut push_axis = |name: &str, values: Vec<Value>| -> Result<(), String> {
        if values.is_empty() {
            return Err(format!("{name}: the list is empty"));
        }
        axes.push((name.to_string(), values));
        Ok(())
    };

    let sizes = e.size.as_ref().map(OneOrMany::to_vec);
    if let Some(s) = &sizes {
        for &b in s {
            if b == 0 || b > 4 << 20 {
                return Err(format!("size {b} is outside 1 B ..= 4 MiB"));
            }
        }
    }
    let strings = |o: &Option<OneOrMany<String>>, d: &str| -> Vec<String> {
        o.as_ref()
            .map(OneOrMany::to_vec)
            .unwrap_or_else(|| vec![d.to_string()])
    };
    let to_values_u = |v: Vec<u64>| v.into_iter().map(Value::from).collect::<Vec<_>>();
    let to_values_s = |v: Vec<String>| v.into_iter().map(Value::from).collect::<Vec<_>>();

    match kind {
        Kind::Latency => {
            push_axis("size", to_values_u(sizes.unwrap_or(vec![16])))?;
            let subs = e
                .subscribers
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![1]);
            check_subscribers(&subs)?;
            push_axis("subscribers", subs.into_iter().map(Value::from).collect())?;
            let rel = strings(&e.reliability, "reliable");
            one_of("reliability", &rel, &["reliable", "best_effort"])?;
            push_axis("reliability", to_values_s(rel))?;
            let rm = strings(&e.read_mode, "listener");
            one_of("read_mode", &rm, &["listener", "waitset"])?;
            push_axis("read_mode", to_values_s(rm))?;
            if e.architecture.is_some() {
                let arch = strings(&e.architecture, "decentralized");
                one_of("architecture", &arch, &["decentralized", "federated"])?;
                push_axis("architecture", to_values_s(arch))?;
            }
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(2.0), 3600.0)?,
            );
            let w = e.warmup_s.unwrap_or(0.5);
            if !(0.0..=60.0).contains(&w) {
                return Err(format!("warmup_s must be in [0, 60], not {w}"));
            }
            settings.insert("warmup_s".into(), w);
            if let Some(n) = e.count {
                if !(1..=10_000_000).contains(&n) {
                    return Err(format!("count must be in 1..=10000000, not {n}"));
                }
                settings.insert("count".into(), n as f64);
            }
        }
        Kind::Throughput | Kind::RateStep => {
            push_axis("size", to_values_u(sizes.unwrap_or(vec![16])))?;
            let subs = e
                .subscribers
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![1]);
            check_subscribers(&subs)?;
            push_axis("subscribers", subs.into_iter().map(Value::from).collect())?;
            let hist = strings(&e.history, "keep_all");
            for h in &hist {
                parse_history(h)?;
            }
            push_axis("history", to_values_s(hist))?;
            if let Some(cases) = &e.case {
                if e.instances.is_some() || e.reliability.is_some() || e.read_mode.is_some() {
                    return Err(
                        "case sets instances, reliability and read_mode; do not set \
                                them too"
                            .into(),
                    );
                }
                let cases = cases.to_vec();
                for c in &cases {
                    if nasa_case(c).is_none() {
                        return Err(format!("case {c:?} is not a NASA test case a…i"));
                    }
                }
                push_axis("case", to_values_s(cases))?;
            } else {
                let rel = strings(&e.reliability, "reliable");
                one_of("reliability", &rel, &["reliable", "best_effort"])?;
                push_axis("reliability", to_values_s(rel))?;
                let rm = strings(&e.read_mode, "listener");
                one_of("read_mode", &rm, &["listener", "waitset", "polling"])?;
                push_axis("read_mode", to_values_s(rm))?;
                let inst = e
                    .instances
                    .as_ref()
                    .map(OneOrMany::to_vec)
                    .unwrap_or(vec![1]);
                for &i in &inst {
                    if i == 0 || i > 1_000_000 {
                        return Err(format!("instances {i} is outside 1..=1000000"));
                    }
                }
                push_axis("instances", inst.into_iter().map(Value::from).collect())?;
            }
            let mc = e
                .multicast
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![true]);
            push_axis("multicast", mc.into_iter().map(Value::from).collect())?;
            let burst = e.burst.unwrap_or(1);
            if burst == 0 || burst > 1_000_000 {
                return Err(format!("burst must be 1..=1000000, not {burst}"));
            }
            settings.insert("burst".into(), f64::from(burst));
            if kind == Kind::Throughput {
                // Axes only when asked for, so that other tables keep their columns.
                if let Some(apps) = &e.applications {
                    let apps = apps.to_vec();
                    if let Some(a) = apps.iter().find(|a| !(1..=64).contains(*a)) {
                        return Err(format!("applications {a} is outside 1..=64"));
                    }
                    push_axis("applications", apps.into_iter().map(Value::from).collect())?;
                }
                if e.architecture.is_some() {
                    let arch = strings(&e.architecture, "decentralized");
                    one_of("architecture", &arch, &["decentralized", "federated"])?;
                    push_axis("architecture", to_values_s(arch))?;
                }
                let rates = e.rate.as_ref().map(OneOrMany::to_vec).unwrap_or(vec![0]);
                push_axis("rate", to_values_u(rates))?;
                settings.insert(
                    "duration_s".into(),
                    positive("duration_s", e.duration_s.unwrap_or(3.0), 3600.0)?,
                );
                // Whole seconds: subscribers report once a second, and the first report
                // always counts as warm-up.
                let w = e.warmup_s.unwrap_or(1.0);
                if !(1.0..=60.0).contains(&w) || w.fract() != 0.0 {
                    return Err(format!(
                        "a throughput warmup_s is a whole number of seconds in 1..=60, not {w}"
                    ));
                }
                settings.insert("warmup_s".into(), w);
            } else {
                let start = e.start_rate.unwrap_or(10_000) as f64;
                let step = e.step_rate.unwrap_or(10_000) as f64;
                let max = e.max_rate.unwrap_or(200_000) as f64;
                positive("start_rate", start, 1e9)?;
                positive("step_rate", step, 1e9)?;
                if max < start {
                    return Err(format!("max_rate {max} is below start_rate {start}"));
                }
                if (max - start) / step > 200.0 {
                    return Err("more than 200 rate steps; raise step_rate".into());
                }
                settings.insert("start_rate".into(), start);
                settings.insert("step_rate".into(), step);
                settings.insert("max_rate".into(), max);
                settings.insert(
                    "step_duration_s".into(),
                    positive("step_duration_s", e.step_duration_s.unwrap_or(2.0), 600.0)?,
                );
                let pp = e.ping_percent.unwrap_or(1.0);
                if !(0.0..=100.0).contains(&pp) {
                    return Err(format!("ping_percent must be in [0, 100], not {pp}"));
                }
                settings.insert("ping_percent".into(), pp);
                let tol = e.tolerance.unwrap_or(0.02);
                if !(0.0..1.0).contains(&tol) {
                    return Err(format!("tolerance must be in [0, 1), not {tol}"));
                }
                settings.insert("tolerance".into(), tol);
            }
        }
        Kind::Discovery => {
            let n = e
                .participants
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![2, 5, 10]);
            for &p in &n {
                if !(2..=100).contains(&p) {
                    return Err(format!("participants {p} is outside 2..=100"));
                }
            }
            push_axis("participants", n.into_iter().map(Value::from).collect())?;
            let arch = strings(&e.architecture, "decentralized");
            one_of("architecture", &arch, &["decentralized", "centralized"])?;
            push_axis("architecture", to_values_s(arch))?;
            settings.insert(
                "timeout_s".into(),
                positive("timeout_s", e.timeout_s.unwrap_or(30.0), 600.0)?,
            );
        }
        Kind::Failure => {
            let arch = strings(&e.architecture, "decentralized");
            one_of("architecture", &arch, FAILURE_ARCHITECTURES)?;
            push_axis("architecture", to_values_s(arch))?;
            let rates = e.rate.as_ref().map(OneOrMany::to_vec).unwrap_or(vec![500]);
            if let Some(r) = rates.iter().find(|r| !(10..=10_000).contains(*r)) {
                return Err(format!("rate {r} is outside 10..=10000 samples/s"));
            }
            push_axis("rate", to_values_u(rates))?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![64])))?;
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(2.5), 60.0)?,
            );
        }
        Kind::LateJoiner => {
            let n = e
                .samples
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![100]);
            for &s in &n {
                if s == 0 || s > 1_000_000 {
                    return Err(format!("samples {s} is outside 1..=1000000"));
                }
            }
            push_axis("samples", n.into_iter().map(Value::from).collect())?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![64])))?;
            settings.insert(
                "timeout_s".into(),
                positive("timeout_s", e.timeout_s.unwrap_or(20.0), 600.0)?,
            );
        }
        Kind::Reliability => {
            let phases = strings(&e.phase, "alone");
            let phases = if e.phase.is_none() {
                vec!["alone".into(), "steady".into(), "bursty".into()]
            } else {
                phases
            };
            one_of("phase", &phases, &["alone", "steady", "bursty"])?;
            push_axis("phase", to_values_s(phases))?;
            let rates = e
                .rate
                .as_ref()
                .map(OneOrMany::to_vec)
                .unwrap_or(vec![20_000]);
            for &r in &rates {
                if r == 0 {
                    return Err("the critical rate must be > 0".into());
                }
            }
            push_axis("rate", to_values_u(rates))?;
            push_axis("size", to_values_u(sizes.unwrap_or(vec![128])))?;
            let link = positive("link_mbit", e.link_mbit.unwrap_or(100.0), 100_000.0)?;
            push_axis("link_mbit", vec![Value::from(link)])?;
            settings.insert("link_mbit".into(), link);
            settings.insert(
                "background_size".into(),
                e.background_size.unwrap_or(8192) as f64,
            );
            settings.insert(
                "background_load".into(),
                positive("background_load", e.background_load.unwrap_or(1.0), 100.0)?,
            );
            settings.insert(
                "burst_on_s".into(),
                positive("burst_on_s", e.burst_on_s.unwrap_or(1.0), 600.0)?,
            );
            settings.insert(
                "burst_off_s".into(),
                positive("burst_off_s", e.burst_off_s.unwrap_or(2.0), 600.0)?,
            );
            settings.insert(
                "duration_s".into(),
                positive("duration_s", e.duration_s.unwrap_or(10.0), 3600.0)?,
            );
        }
    }
    let hosts = match kind {
        // The reliability test needs a link to saturate: two hosts at least.
        Kind::Reliability => Some(e.hosts.unwrap_or(2).max(2)),
        _ => e.hosts,
    };
    if let Some(h) = hosts {
        axes.push(("hosts".into(), vec![Value::from(h)]));
    }
    Ok(Experiment {
        name: e.name.clone(),
        kind,
        pairs,
        rounds,
        hosts,
        loss_pct: e.loss_pct,
        axes,
        settings,
    })
}

fn check_subscribers(subs: &[u32]) -> Result<(), String> {
    for &s in subs {
        if s == 0 || s > 64 {
            return Err(format!("subscribers {s} is outside 1..=64"));
        }
    }
    Ok(())
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

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
