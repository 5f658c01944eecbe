//! The result model of `tessera bench`: what `results.json` holds, and what the report, the
//! comparison and the `--expect` criteria read.
//!
//! One [`ResultSet`] per run. Every measured cell is a [`Point`]: one experiment, one
//! implementation (or mixed pair), one combination of parameters, one round. Rounds of the same
//! cell are aggregated with medians ([`ResultSet::cells`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The kind of an experiment; each kind has its own runner and its own metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Round-trip latency and jitter (ping-pong, publisher clock).
    Latency,
    /// Throughput on the subscriber clock.
    Throughput,
    /// Rate stepping to the peak: offered rate raised step by step.
    RateStep,
    /// Time for N participants to discover each other.
    Discovery,
    /// Time for a late-joining TRANSIENT_LOCAL reader to get its first (and all) samples.
    LateJoiner,
    /// The DerechoDDS test: a critical reliable flow beside best-effort background traffic.
    Reliability,
    /// A paced stream while the architecture's shared part (discovery server, node service)
    /// is killed and restarted: what keeps flowing, what is lost, how long recovery takes.
    Failure,
}

impl Kind {
    /// The name used in scenario files and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Latency => "latency",
            Kind::Throughput => "throughput",
            Kind::RateStep => "rate_step",
            Kind::Discovery => "discovery",
            Kind::LateJoiner => "late_joiner",
            Kind::Reliability => "reliability",
            Kind::Failure => "failure",
        }
    }
}

/// A middleware implementation that a worker process runs.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Implementation {
    #[default]
    /// Tessera (`tessera perf`, or `tessera bench worker` where perf cannot express it).
    Tessera,
    /// Cyclone DDS through Debian's `ddsperf`.
    Cyclone,
    /// Cyclone DDS 0.10.2 through the `cyclone-perf` worker (`workers/cyclone/`, C against
    /// Debian's libddsc, built on demand): ddsperf's protocol with a histogram of every round
    /// trip, a count mode and first/all answers.
    #[serde(rename = "cyclone-c")]
    CycloneC,
    /// The raw UDP floor built into `tessera bench` (no middleware at all).
    Udp,
    /// Fast DDS 2.9 through the `fastdds-perf` worker (`workers/fastdds/`), with its default
    /// transports: shared memory between Fast DDS peers of one host, UDPv4 otherwise.
    #[serde(rename = "fastdds")]
    FastDds,
    /// Fast DDS 2.9 through `fastdds-perf --transport udp`: UDPv4 only.
    #[serde(rename = "fastdds-udp")]
    FastDdsUdp,
    /// Tessera with shared memory between the processes of one host (UDPv4 beyond it), its
    /// receive threads blocking (`TESSERA_TRANSPORTS=shm,udp4`).
    #[serde(rename = "tessera-shm")]
    TesseraShm,
    /// Tessera on shared memory whose receive threads spin before they block
    /// (`TESSERA_WAIT=adaptive:1000`).
    #[serde(rename = "tessera-shm-spin")]
    TesseraShmSpin,
    /// `tessera-shm` with zero-copy loans (`tessera perf --loan SIZE`): plain samples of the
    /// point's size written through `loan()` and taken loaned, receive threads blocking.
    #[serde(rename = "tessera-loan")]
    TesseraLoan,
    /// `tessera-loan` whose receive threads spin before they block, like `tessera-shm-spin`.
    #[serde(rename = "tessera-loan-spin")]
    TesseraLoanSpin,
    /// Tessera with ATOMIC consistency (`tessera-bench perf --consistency atomic`, over UDPv4
    /// like `tessera`): the Data, Ping and Pong endpoints of every process form one consensus
    /// group per topic and a write returns after commit.
    #[serde(rename = "tessera-atomic")]
    TesseraAtomic,
    /// The raw shared-memory floor (`tessera bench shm`): a futex wake per hand-off.
    Shm,
    /// The raw shared-memory floor, both sides polling.
    #[serde(rename = "shm-spin")]
    ShmSpin,
    /// RustDDS 0.15 through the `rustdds-perf` worker (`workers/rustdds/`, built on demand).
    #[serde(rename = "rustdds")]
    RustDds,
    /// dust_dds 0.16 through the `dust_dds-perf` worker (`workers/dust_dds/`).
    #[serde(rename = "dust_dds")]
    DustDds,
    /// Zenoh 1.10 in peer mode through the `zenoh-perf` worker (`workers/zenoh/`); not DDS.
    Zenoh,
}

impl Implementation {
    /// The lowercase name used in scenario files and labels.
    pub fn as_str(self) -> &'static str {
        match self {
            Implementation::Tessera => "tessera",
            Implementation::Cyclone => "cyclone",
            Implementation::CycloneC => "cyclone-c",
            Implementation::Udp => "udp",
            Implementation::FastDds => "fastdds",
            Implementation::FastDdsUdp => "fastdds-udp",
            Implementation::TesseraShm => "tessera-shm",
            Implementation::TesseraShmSpin => "tessera-shm-spin",
            Implementation::TesseraLoan => "tessera-loan",
            Implementation::TesseraLoanSpin => "tessera-loan-spin",
            Implementation::TesseraAtomic => "tessera-atomic",
            Implementation::Shm => "shm",
            Implementation::ShmSpin => "shm-spin",
            Implementation::RustDds => "rustdds",
            Implementation::DustDds => "dust_dds",
            Implementation::Zenoh => "zenoh",
        }
    }

    /// The display name used in reports.
    pub fn display(self) -> &'static str {
        match self {
            Implementation::Tessera => "Tessera",
            Implementation::Cyclone => "Cyclone DDS",
            Implementation::CycloneC => "Cyclone DDS (C worker)",
            Implementation::Udp => "raw UDP",
            Implementation::FastDds => "Fast DDS",
            Implementation::FastDdsUdp => "Fast DDS (UDP)",
            Implementation::TesseraShm => "Tessera (shm)",
            Implementation::TesseraShmSpin => "Tessera (shm, spin)",
            Implementation::TesseraLoan => "Tessera (loans)",
            Implementation::TesseraLoanSpin => "Tessera (loans, spin)",
            Implementation::TesseraAtomic => "Tessera (ATOMIC)",
            Implementation::Shm => "raw shm",
            Implementation::ShmSpin => "raw shm (spin)",
            Implementation::RustDds => "RustDDS",
            Implementation::DustDds => "dust_dds",
            Implementation::Zenoh => "Zenoh",
        }
    }

    /// Every implementation, in report order.
    pub const ALL: [Implementation; 16] = [
        Implementation::Tessera,
        Implementation::TesseraAtomic,
        Implementation::TesseraShm,
        Implementation::TesseraShmSpin,
        Implementation::TesseraLoan,
        Implementation::TesseraLoanSpin,
        Implementation::Cyclone,
        Implementation::CycloneC,
        Implementation::FastDds,
        Implementation::FastDdsUdp,
        Implementation::RustDds,
        Implementation::DustDds,
        Implementation::Zenoh,
        Implementation::Udp,
        Implementation::Shm,
        Implementation::ShmSpin,
    ];

    /// Parses an [`Implementation::as_str`] name.
    pub fn from_name(s: &str) -> Option<Implementation> {
        Self::ALL.into_iter().find(|i| i.as_str() == s.trim())
    }

    /// True for the two Fast DDS variants (one worker program, one transport switch).
    pub fn is_fastdds(self) -> bool {
        matches!(self, Implementation::FastDds | Implementation::FastDdsUdp)
    }

    /// True for the Rust-built peer workers (`workers/{rustdds,dust_dds,zenoh}`, [`crate::rustpeers`]).
    pub fn is_rust_peer(self) -> bool {
        matches!(
            self,
            Implementation::RustDds | Implementation::DustDds | Implementation::Zenoh
        )
    }

    /// True for the variants that run `tessera perf` (one program, other transports or waits).
    pub fn is_tessera(self) -> bool {
        matches!(
            self,
            Implementation::Tessera
                | Implementation::TesseraShm
                | Implementation::TesseraShmSpin
                | Implementation::TesseraLoan
                | Implementation::TesseraLoanSpin
                | Implementation::TesseraAtomic
        )
    }

    /// True for the Tessera variants that run `tessera perf --loan SIZE` (their own plain
    /// types and topics: they pair only with themselves).
    pub fn is_loan(self) -> bool {
        matches!(
            self,
            Implementation::TesseraLoan | Implementation::TesseraLoanSpin
        )
    }

    /// True for the raw shared-memory floors (latency only, one host).
    pub fn is_shm_floor(self) -> bool {
        matches!(self, Implementation::Shm | Implementation::ShmSpin)
    }

    /// True for the floors built into the bench (no middleware).
    pub fn is_floor(self) -> bool {
        self == Implementation::Udp || self.is_shm_floor()
    }
}

/// Who writes and who reads in a point. For latency the writer is the ping side (it owns the
/// clock) and the reader the pong side; for throughput the writer publishes and the reader
/// subscribes (and measures). `writer == reader` is a plain implementation; otherwise a mixed
/// pair over RTPS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pair {
    /// The ping / publishing side.
    pub writer: Implementation,
    /// The pong / subscribing side.
    pub reader: Implementation,
}

impl Pair {
    /// A pair of one implementation with itself.
    pub fn same(i: Implementation) -> Self {
        Pair {
            writer: i,
            reader: i,
        }
    }

    /// True when both sides run the same implementation.
    pub fn is_same(self) -> bool {
        self.writer == self.reader
    }

    /// Stable label: `tessera`, or `tessera>cyclone` for a mixed pair (writer first).
    pub fn label(self) -> String {
        if self.is_same() {
            self.writer.as_str().to_string()
        } else {
            format!("{}>{}", self.writer.as_str(), self.reader.as_str())
        }
    }

    /// Parses a [`Pair::label`].
    pub fn from_label(s: &str) -> Option<Pair> {
        let one = Implementation::from_name;
        match s.split_once('>') {
            Some((w, r)) => Some(Pair {
                writer: one(w)?,
                reader: one(r)?,
            }),
            None => one(s).map(Pair::same),
        }
    }

    /// Display name for reports: `Tessera`, or `Tessera → Cyclone DDS`.
    pub fn display(self) -> String {
        if self.is_same() {
            self.writer.display().to_string()
        } else {
            format!("{} → {}", self.writer.display(), self.reader.display())
        }
    }
}

/// Latency statistics of one point, in microseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct LatencyStats {
    /// Number of measured round trips (primer samples excluded).
    pub count: u64,
    /// Mean.
    pub mean_us: f64,
    /// Standard deviation (the seeds' jitter); `None` when the source gives no distribution.
    pub stddev_us: Option<f64>,
    /// Minimum.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile; `None` when the source gives no distribution.
    pub p999_us: Option<f64>,
    /// Maximum.
    pub max_us: f64,
    /// Box-and-whisker data when the distribution is known.
    pub boxplot: Option<BoxPlot>,
    /// Where the numbers come from: `"hdr"` (a full HdrHistogram of every round trip) or
    /// `"intervals"` (combined from ddsperf's per-second summaries: count, mean, min and max are
    /// exact; percentiles are count-weighted means of the per-second percentiles).
    pub source: String,
}

/// Box-and-whisker summary: whiskers at the 1st and 99th percentiles, box from the 25th to the
/// 75th, line at the median.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct BoxPlot {
    /// 1st percentile (lower whisker).
    pub p1: f64,
    /// 25th percentile (box bottom).
    pub p25: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile (box top).
    pub p75: f64,
    /// 99th percentile (upper whisker).
    pub p99: f64,
}

/// Throughput of one point, on the subscriber clock.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ThroughputStats {
    /// Samples per second summed over subscribers (median of the per-second rates after the
    /// warm-up, per subscriber, then summed).
    pub samples_per_s: f64,
    /// Payload megabits per second (same rule).
    pub mbit_per_s: f64,
    /// Per-subscriber samples per second.
    pub per_subscriber: Vec<f64>,
    /// Samples received in the measured window, all subscribers.
    pub received: u64,
    /// Samples the subscribers saw lost (sequence gaps), all subscribers.
    pub lost: u64,
    /// Duplicates seen, when the source reports them.
    pub duplicates: Option<u64>,
    /// Per-second rates (all subscribers summed) for box plots: min, p25, median, p75, max are
    /// in `boxplot` with p1/p99 holding min/max.
    pub boxplot: Option<BoxPlot>,
    /// The offered (publisher) rate in samples/s when the publisher was paced.
    pub offered_per_s: Option<f64>,
}

/// Resource use of one process of a point, from /proc.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ProcStats {
    /// Role in the experiment (`ping`, `pong`, `pub`, `sub`, `sub2`, ...).
    pub role: String,
    /// Implementation running it.
    pub implementation: Implementation,
    /// User CPU seconds.
    pub cpu_user_s: f64,
    /// System CPU seconds.
    pub cpu_sys_s: f64,
    /// CPU use in percent of one core over the process's lifetime.
    pub cpu_pct: f64,
    /// Peak resident set size in KiB (VmHWM).
    pub peak_rss_kib: u64,
    /// Voluntary context switches.
    pub voluntary_ctxt: u64,
    /// Involuntary context switches.
    pub involuntary_ctxt: u64,
}

/// One measured cell: experiment × pair × parameters × round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// The experiment's name in the scenario (unique within a run).
    pub experiment: String,
    /// The experiment's kind.
    pub kind: Kind,
    /// Pair label ([`Pair::label`]).
    pub pair: String,
    /// The parameters of this cell (`size`, `subscribers`, `reliability`, `history`,
    /// `read_mode`, `instances`, `multicast`, `hosts`, `rate`, `participants`, ...). Values are
    /// numbers, strings or booleans.
    pub params: BTreeMap<String, Value>,
    /// Round index (0-based); rounds of a cell are interleaved with the other pairs.
    pub round: u32,
    /// False when the point failed; `error` says why.
    pub ok: bool,
    /// Why the point failed or was skipped.
    pub error: Option<String>,
    /// Latency statistics (latency, rate-step with pings, reliability).
    pub latency: Option<LatencyStats>,
    /// Throughput statistics (throughput, rate-step, reliability).
    pub throughput: Option<ThroughputStats>,
    /// Kind-specific scalar metrics, e.g. `discovery_ms`, `first_sample_ms`, `all_samples_ms`,
    /// `completion_s`, `retransmits`, `max_sustainable_rate`, `knee_rate`.
    pub metrics: BTreeMap<String, f64>,
    /// Time series, e.g. `critical_rate` → `[[t_s, samples_per_s], ...]`.
    pub series: BTreeMap<String, Vec<[f64; 2]>>,
    /// Resource use of every process of the point.
    pub procs: Vec<ProcStats>,
    /// Wall-clock seconds the point took, setup and teardown included.
    pub wall_s: f64,
}

impl Point {
    /// A new, successful, empty point.
    pub fn new(
        experiment: &str,
        kind: Kind,
        pair: Pair,
        params: BTreeMap<String, Value>,
        round: u32,
    ) -> Self {
        Point {
            experiment: experiment.to_string(),
            kind,
            pair: pair.label(),
            params,
            round,
            ok: true,
            error: None,
            latency: None,
            throughput: None,
            metrics: BTreeMap::new(),
            series: BTreeMap::new(),
            procs: Vec::new(),
            wall_s: 0.0,
        }
    }

    /// The key that identifies the cell across rounds: experiment, pair and parameters.
    pub fn cell_key(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={}", value_text(v)))
            .collect();
        format!("{}|{}|{}", self.experiment, self.pair, params.join(","))
    }

    /// A named scalar of this point: `p50_us`, `mean_us`, `stddev_us`, `p99_us`, `p999_us`,
    /// `min_us`, `max_us`, `samples_per_s`, `mbit_per_s`, `lost`, or any key of `metrics`.
    pub fn scalar(&self, name: &str) -> Option<f64> {
        if let Some(l) = &self.latency {
            let v = match name {
                "p50_us" => Some(l.p50_us),
                "mean_us" => Some(l.mean_us),
                "stddev_us" => l.stddev_us,
                "min_us" => Some(l.min_us),
                "p90_us" => Some(l.p90_us),
                "p99_us" => Some(l.p99_us),
                "p999_us" => l.p999_us,
                "max_us" => Some(l.max_us),
                _ => None,
            };
            if v.is_some() {
                return v;
            }
        }
        if let Some(t) = &self.throughput {
            let v = match name {
                "samples_per_s" => Some(t.samples_per_s),
                "mbit_per_s" => Some(t.mbit_per_s),
                "lost" => Some(t.lost as f64),
                _ => None,
            };
            if v.is_some() {
                return v;
            }
        }
        self.metrics.get(name).copied()
    }
}

/// Renders a parameter value without JSON quotes.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The machine and software a run measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Environment {
    /// Host name.
    pub hostname: String,
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Online CPUs.
    pub cores: u32,
    /// Total memory in MiB.
    pub memory_mib: u64,
    /// `uname -r`.
    pub kernel: String,
    /// OS name from /etc/os-release.
    pub os: String,
    /// `git rev-parse --short HEAD` of the Tessera tree (plus `-dirty`), when known.
    pub git_revision: Option<String>,
    /// Tessera version.
    pub tessera_version: String,
    /// Cyclone DDS version of the `ddsperf` that ran (see `env::ddsperf_version`): the
    /// version of the Debian package owning that binary, else of the `libddsc` it links,
    /// else `unknown (PATH)`; `None` when no `ddsperf` was found.
    pub cyclone_version: Option<String>,
    /// Which `ddsperf` ran and where its version came from, e.g. `/usr/bin/ddsperf (Debian
    /// package cyclonedds-tools)`; `None` when no `ddsperf` was found.
    #[serde(default)]
    pub ddsperf: Option<String>,
    /// rustc version that built the tool, when known.
    pub rustc: Option<String>,
    /// What the measured `tessera` binary says of itself (`tessera version`: its version and,
    /// for a profile-guided build, how it was built); `None` when it could not say.
    #[serde(default)]
    pub tessera_build: Option<String>,
    /// The binary of the ATOMIC pair (`tessera-atomic`) and what it says of itself, when the
    /// run has that pair: a profile-guided `tessera-atomic` beside the measured `tessera`, or
    /// else `tessera-bench perf`.
    #[serde(default)]
    pub atomic_build: Option<String>,
    /// Wake-up strategy of the workers (e.g. "blocking receive, no busy-poll").
    pub wakeup: String,
}

/// Everything one `tessera bench` run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ResultSet {
    /// The run's test id (also its directory name).
    pub test_id: String,
    /// Preset name, or the scenario file path.
    pub scenario_name: String,
    /// Start time, RFC 3339 UTC.
    pub started: String,
    /// Total wall-clock seconds.
    pub duration_s: f64,
    /// Hosts used (1 = one private namespace).
    pub hosts: u32,
    /// The machine and software.
    pub environment: Environment,
    /// Every measured point, in the order measured.
    pub points: Vec<Point>,
    /// Notes for the reader: skipped implementations, experiments an implementation cannot
    /// express, warnings.
    pub notes: Vec<String>,
}

/// The rounds of one cell, aggregated.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell<'a> {
    /// Experiment name.
    pub experiment: &'a str,
    /// Kind.
    pub kind: Kind,
    /// Pair label.
    pub pair: &'a str,
    /// Parameters.
    pub params: &'a BTreeMap<String, Value>,
    /// The successful rounds.
    pub rounds: Vec<&'a Point>,
    /// Rounds that failed.
    pub failed: usize,
}

impl Cell<'_> {
    /// Median over rounds of a named scalar ([`Point::scalar`]); `None` when no round has it.
    pub fn median(&self, name: &str) -> Option<f64> {
        let mut v: Vec<f64> = self.rounds.iter().filter_map(|p| p.scalar(name)).collect();
        median_of(&mut v)
    }
}

/// Median of `v` (sorted in place); `None` when empty. NaNs sort last.
pub fn median_of(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Greater));
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

impl ResultSet {
    /// Cells in first-measured order, each with its rounds.
    pub fn cells(&self) -> Vec<Cell<'_>> {
        let mut order: Vec<String> = Vec::new();
        let mut by_key: BTreeMap<String, Cell<'_>> = BTreeMap::new();
        for p in &self.points {
            let key = p.cell_key();
            let cell = by_key.entry(key.clone()).or_insert_with(|| {
                order.push(key);
                Cell {
                    experiment: &p.experiment,
                    kind: p.kind,
                    pair: &p.pair,
                    params: &p.params,
                    rounds: Vec::new(),
                    failed: 0,
                }
            });
            if p.ok {
                cell.rounds.push(p);
            } else {
                cell.failed += 1;
            }
        }
        order
            .into_iter()
            .filter_map(|k| by_key.remove(&k))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pair_labels_round_trip() {
        for l in [
            "tessera",
            "cyclone",
            "udp",
            "tessera>cyclone",
            "cyclone>tessera",
            "fastdds",
            "fastdds-udp",
            "tessera>fastdds",
            "fastdds-udp>tessera",
        ] {
            assert_eq!(Pair::from_label(l).unwrap().label(), l);
        }
        assert_eq!(Pair::from_label("opendds"), None);
        assert_eq!(
            Pair::from_label("fastdds>tessera").unwrap().display(),
            "Fast DDS → Tessera"
        );
        // results.json spells implementations like the labels.
        let j = serde_json::to_string(&Pair::from_label("fastdds-udp>fastdds").unwrap()).unwrap();
        assert_eq!(j, r#"{"writer":"fastdds-udp","reader":"fastdds"}"#);
    }

    #[test]
    fn cells_group_rounds_and_take_medians() {
        let mut rs = ResultSet::default();
        let mut params = BTreeMap::new();
        params.insert("size".to_string(), Value::from(16));
        for (round, p50) in [(0, 30.0), (1, 10.0), (2, 20.0)] {
            let mut p = Point::new(
                "lat",
                Kind::Latency,
                Pair::same(Implementation::Tessera),
                params.clone(),
                round,
            );
            p.latency = Some(LatencyStats {
                p50_us: p50,
                ..Default::default()
            });
            rs.points.push(p);
        }
        let cells = rs.cells();
        assert_eq!(cells.len(), 1);
        assert_eq!(cells[0].rounds.len(), 3);
        assert_eq!(cells[0].median("p50_us"), Some(20.0));
    }
}
