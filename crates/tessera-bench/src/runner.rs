//! Runs a scenario: every planned point in namespaces made for it, interleaved, with the
//! workers' output read back into [`Point`]s.
//!
//! Every point gets a fresh topology (one private namespace, or a virtual LAN of namespace
//! hosts) that is torn down when the point ends, so no point inherits sockets, routes or
//! shaping from another. Every DDS implementation is driven with ddsperf's command grammar —
//! `tessera perf --json …` (a ddsperf twin), `ddsperf …` and `fastdds-perf …` (Fast DDS's, built
//! on demand: [`super::fastdds`]) — so all run the same topic, types, QoS and protocol; the raw
//! UDP floor is `tessera-bench udp`, and the Tessera-only late-joiner
//! experiment is `tessera-bench worker`. Each process's output is kept under `logs/` in the
//! result directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use serde_json::Value;

use super::cpuwin::CpuMonitor;
use super::expect::{self, Criterion, Outcome};
use super::hosts::{self, Topology};
use super::parse::PerfOutput;
use super::procmon::Capture;
use super::results::{Implementation, Kind, LatencyStats, Pair, Point, ResultSet, ThroughputStats};
use super::scenario::{self, Experiment, Planned, Scenario};
use super::stats::{self, Step};
use super::{env, report};

// `flow` links to `cpuwin` in its doc comments through this module's names.
#[cfg(doc)]
use super::cpuwin;

mod discovery;
mod failure;
mod federated;
mod floors;
mod flow;
mod metrics;
mod notes;
mod point;
mod reliability;
mod traffic;
mod workers;

pub use metrics::{
    ALL_ANSWERS_P50, ALL_ANSWERS_P99, COUNT_TARGET, CPU_METRIC, CPU_PER_PING, FIRST_ANSWER_P50,
    FIRST_ANSWER_P99,
};
pub use workers::SPIN_WAIT;

// Moved items the submodules reach through `use super::*` or `super::` paths.
use metrics::{
    count_mode, latency_from_lines, round_trip, throughput_cpu_per_sample, throughput_from_subs,
    COUNT_MODE_LIMIT_S,
};
use notes::standing_notes;
use traffic::{discovery_traffic, Traffic};
use workers::{collect_stats, loan_args, parse_output, tail, tail_all, wait_for_line, Worker};

/// ddsperf's KS topic cannot carry less than this (its fixed part).
const KS_MIN_SIZE: u64 = 12;

/// How a run is configured beyond the scenario (command-line overrides and tools).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Result directory; default `bench-results/<test-id>`.
    pub out_dir: Option<PathBuf>,
    /// Hosts override.
    pub hosts: Option<u32>,
    /// Injected loss override, percent.
    pub loss_pct: Option<f64>,
    /// Link limit override, Mbit/s.
    pub link_mbit: Option<f64>,
    /// Rounds override.
    pub rounds: Option<u32>,
    /// Pairs override (every experiment).
    pub pairs: Option<Vec<Pair>>,
    /// Regression criteria.
    pub expect: Vec<Criterion>,
    /// Show a progress bar.
    pub progress: bool,
    /// The `tessera` binary, started as `tessera perf` for Tessera workers.
    pub tessera_exe: PathBuf,
    /// The `tessera-bench` binary (this one), started for the raw UDP floor
    /// (`tessera-bench udp`) and the Tessera-only worker (`tessera-bench worker`).
    pub bench_exe: PathBuf,
    /// Cyclone's `ddsperf`, when installed.
    pub ddsperf: Option<PathBuf>,
    /// The command line, for the report.
    pub command_line: String,
}

impl RunOptions {
    /// The binary that runs the ATOMIC pair ([`env::atomic_exe`]).
    pub fn atomic_exe(&self) -> PathBuf {
        env::atomic_exe(&self.tessera_exe, &self.bench_exe)
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The results.
    pub results: ResultSet,
    /// The result directory.
    pub dir: PathBuf,
    /// Files written.
    pub files: Vec<PathBuf>,
    /// `--expect` outcomes.
    pub expectations: Vec<Outcome>,
}

/// Runs `scenario` and writes its result directory.
pub fn run(mut scenario: Scenario, opts: &RunOptions) -> anyhow::Result<RunOutcome> {
    hosts::install_interrupt_handler().context("installing the Ctrl-C handler")?;
    let started = SystemTime::now();
    let t_start = Instant::now();
    let (stamp, rfc3339) = utc_stamp(started);
    let test_id = format!("{stamp}-{}", sanitize(&scenario.name));
    let dir = opts
        .out_dir
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-results").join(&test_id));
    std::fs::create_dir_all(dir.join("logs"))
        .with_context(|| format!("creating {}", dir.display()))?;

    let mut notes = Vec::new();
    apply_overrides(&mut scenario, opts);
    if opts.ddsperf.is_none() && scenario.drop_implementation(Implementation::Cyclone) {
        notes.push(
            "Cyclone DDS skipped: `ddsperf` was not found (Debian package cyclonedds-tools); \
             every Cyclone and mixed pair is left out of this run."
                .to_string(),
        );
    }
    if Implementation::ALL
        .into_iter()
        .any(|i| i.is_tessera() && uses(&scenario, i))
        && !env::is_executable(&opts.tessera_exe)
    {
        anyhow::bail!(
            "the Tessera worker {} is missing or not executable; build it with \
             `cargo build --release -p tessera-cli -p tessera-bench`",
            opts.tessera_exe.display()
        );
    }
    let fastdds = if uses_fastdds(&scenario) {
        match super::fastdds::ensure_worker(&opts.bench_exe) {
            Ok(p) => Some(p),
            Err(e) => {
                scenario.drop_implementation(Implementation::FastDds);
                scenario.drop_implementation(Implementation::FastDdsUdp);
                notes.push(format!(
                    "Fast DDS skipped: {e}; every Fast DDS pair is left out of this run."
                ));
                None
            }
        }
    } else {
        None
    };
    let cyclonec = if uses(&scenario, Implementation::CycloneC) {
        match super::cyclonec::ensure_worker(&opts.bench_exe) {
            Ok(p) => Some(p),
            Err(e) => {
                scenario.drop_implementation(Implementation::CycloneC);
                notes.push(format!(
                    "Cyclone DDS (C worker) skipped: {e}; every cyclone-c pair is left out of \
                     this run."
                ));
                None
            }
        }
    } else {
        None
    };
    let rust_peers = super::rustpeers::prepare(&mut scenario, &mut notes);
    notes.extend(scenario.notes.iter().cloned());
    notes.extend(scenario.skipped());
    notes.extend(standing_notes(&scenario));

    let plan = scenario.plan();
    let ctx = Ctx {
        opts,
        scenario: &scenario,
        logs: dir.join("logs"),
        fastdds,
        cyclonec,
        rust_peers,
        attach_to_node: std::cell::Cell::new(false),
    };
    let bar = progress_bar(plan.len() as u64, opts.progress);
    let mut points: Vec<Point> = Vec::new();
    let mut i = 0;
    while i < plan.len() {
        let p = &plan[i];
        let exp = &scenario.experiments[p.experiment];
        if exp.kind == Kind::RateStep {
            // Rate stepping interleaves the pairs at every step: take the whole group.
            let mut j = i;
            while j < plan.len()
                && plan[j].experiment == p.experiment
                && plan[j].round == p.round
                && plan[j].params == p.params
            {
                j += 1;
            }
            bar.set_message(format!("{} {}", exp.name, params_text(&p.params)));
            let group: Vec<&Planned> = plan[i..j].iter().collect();
            points.extend(ctx.rate_step_group(exp, &group, &bar));
            bar.inc((j - i) as u64);
            i = j;
            continue;
        }
        bar.set_message(format!(
            "{} {} {}",
            exp.name,
            p.pair.label(),
            params_text(&p.params)
        ));
        let seq = points.len();
        let point = ctx.run_point(exp, p, seq);
        if !point.ok {
            bar.println(format!(
                "point failed: {} {} {}: {}",
                exp.name,
                p.pair.label(),
                params_text(&p.params),
                point.error.as_deref().unwrap_or("")
            ));
        }
        points.push(point);
        bar.inc(1);
        i += 1;
    }
    bar.finish_and_clear();
    if ctx.fastdds.is_some() {
        clean_fastdds_shm();
    }
    // Tessera workers get SIGTERM and remove their own segments; one killed after its grace
    // period leaves a segment that the next participant would reclaim: do it now.
    tessera::transport::shm::reclaim_dead_segments(std::path::Path::new(
        tessera::transport::shm::SHM_DIR,
    ));

    let mut results = ResultSet {
        test_id,
        scenario_name: scenario.name.clone(),
        started: rfc3339,
        duration_s: t_start.elapsed().as_secs_f64(),
        hosts: scenario.hosts,
        environment: env::capture(opts.ddsperf.as_deref(), Some(&opts.tessera_exe)),
        points,
        notes,
    };
    if uses(&scenario, Implementation::TesseraAtomic) {
        results.environment.atomic_build = Some(env::atomic_build(&opts.atomic_exe()));
    }
    if !opts.command_line.is_empty() {
        results
            .notes
            .insert(0, format!("Command: `{}`", opts.command_line));
    }
    let files = report::write_all(&dir, &results, &scenario.text)
        .with_context(|| format!("writing the report into {}", dir.display()))?;
    let expectations = opts
        .expect
        .iter()
        .map(|c| expect::evaluate(c, &results))
        .collect();
    results.duration_s = t_start.elapsed().as_secs_f64();
    Ok(RunOutcome {
        results,
        dir,
        files,
        expectations,
    })
}

/// Whether any pair of `s` runs a Fast DDS variant.
fn uses_fastdds(s: &Scenario) -> bool {
    uses(s, Implementation::FastDds) || uses(s, Implementation::FastDdsUdp)
}

/// Fast DDS leaves its shared-memory segments in /dev/shm when a process dies without deleting
/// its participant (the bench stops its workers with SIGTERM first, but one may still be killed):
/// `fastdds shm clean` removes those no live process holds. Best effort: without the tool (Debian
/// package fastdds-tools) nothing is done.
fn clean_fastdds_shm() {
    let _ = Command::new("fastdds")
        .args(["shm", "clean"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status();
}

/// Whether any pair of `s` runs `implementation` on either side.
fn uses(s: &Scenario, implementation: Implementation) -> bool {
    s.experiments.iter().any(|e| {
        e.pairs
            .iter()
            .any(|p| p.writer == implementation || p.reader == implementation)
    })
}

fn apply_overrides(s: &mut Scenario, opts: &RunOptions) {
    if let Some(h) = opts.hosts {
        s.hosts = h;
    }
    if let Some(l) = opts.loss_pct {
        s.loss_pct = l;
    }
    if let Some(m) = opts.link_mbit {
        s.link_mbit = Some(m);
    }
    for e in &mut s.experiments {
        if let Some(r) = opts.rounds {
            e.rounds = r;
        }
        if let Some(p) = &opts.pairs {
            e.pairs = p.clone();
        }
    }
}

struct Ctx<'a> {
    opts: &'a RunOptions,
    scenario: &'a Scenario,
    logs: PathBuf,
    /// The Fast DDS worker, when a Fast DDS pair runs and it could be built.
    fastdds: Option<PathBuf>,
    /// The C Cyclone worker, when a `cyclone-c` pair runs and it could be built.
    cyclonec: Option<PathBuf>,
    /// The Rust peer workers that runs need and could be built.
    rust_peers: BTreeMap<Implementation, PathBuf>,
    /// Tessera processes started now attach to their host's node service (a federated point,
    /// while [`federated::Nodes`] has them attached).
    attach_to_node: std::cell::Cell<bool>,
}

/// A flow's subscribers' throughput, its (reaped) workers (publishers first), CPU µs per
/// delivered sample, and the LAN's datagram metrics when they were counted.
type FlowOutcome = (
    Option<ThroughputStats>,
    Vec<Worker>,
    Option<f64>,
    BTreeMap<String, f64>,
);

/// A discovery server to start: its id (position in `ROS_DISCOVERY_SERVER`), UDP port and
/// further command-line options.
struct ServerSpec {
    id: usize,
    port: u16,
    extra: Vec<std::ffi::OsString>,
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}

fn param_u64(p: &BTreeMap<String, Value>, name: &str, default: u64) -> u64 {
    p.get(name).and_then(Value::as_u64).unwrap_or(default)
}

fn param_str<'a>(p: &'a BTreeMap<String, Value>, name: &str, default: &'a str) -> &'a str {
    p.get(name).and_then(Value::as_str).unwrap_or(default)
}

/// `size=16 subscribers=1 …` without the axes that only have their default meaning.
pub fn params_text(p: &BTreeMap<String, Value>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={}", super::results::value_text(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn progress_bar(len: u64, visible: bool) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(len);
    if let Ok(style) = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// `(YYYYMMDD-HHMMSS, RFC 3339)` of `t` in UTC.
pub fn utc_stamp(t: SystemTime) -> (String, String) {
    let secs = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        format!("{year:04}{month:02}{day:02}-{h:02}{m:02}{s:02}"),
        format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z"),
    )
}

/// This `tessera-bench` binary, which the runner starts as `tessera-bench udp|worker`.
pub fn current_exe() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot locate the tessera-bench binary")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps_are_civil_dates() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_340_652);
        let (stamp, rfc) = utc_stamp(t);
        assert_eq!(rfc, "2026-11-22T09:44:12Z");
        assert_eq!(stamp, "20261122-094412");
        let (_, epoch) = utc_stamp(SystemTime::UNIX_EPOCH);
        assert_eq!(epoch, "1970-01-01T00:00:00Z");
        let (_, leap) = utc_stamp(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400));
        assert_eq!(leap, "2000-02-29T00:00:00Z");
    }
}
