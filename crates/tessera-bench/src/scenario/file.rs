//! The scenario TOML as written: run-wide settings and `[[experiment]]` tables, as serde
//! reads them before validation.

use serde::Deserialize;

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
    pub(super) fn to_vec(&self) -> Vec<T> {
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
