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

mod axis_values;
mod file;
mod pair_support;
mod plan;
mod presets;
mod validate;

use std::collections::BTreeMap;

use serde_json::Value;

use super::results::{Implementation, Kind, Pair};

pub use self::axis_values::{nasa_case, parse_history, parse_pairs, FAILURE_ARCHITECTURES};
pub use self::file::{ExperimentFile, OneOrMany, ScenarioFile};
pub use self::presets::PRESETS;

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
}

impl Scenario {
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

#[cfg(test)]
#[path = "scenario_tests.rs"]
mod tests;
