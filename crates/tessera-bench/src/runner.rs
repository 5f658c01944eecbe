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

use super::cpuwin::{self, CpuMonitor};
use super::expect::{self, Criterion, Outcome};
use super::hosts::{self, LinkShaping, Topology};
use super::parse::{self, PerfOutput};
use super::procmon::{Capture, Proc};
use super::results::{Implementation, Kind, LatencyStats, Pair, Point, ResultSet, ThroughputStats};
use super::scenario::{self, Experiment, Planned, Scenario};
use super::stats::{self, IntervalSummary, Step};
use super::{env, report};

mod discovery;
mod failure;
mod federated;
mod flow;
mod notes;
mod reliability;

use notes::standing_notes;

/// UDP port of the raw floor's server side.
const FLOOR_PORT: u16 = 7399;
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
        environment: env::capture(opts.ddsperf.as_deref()),
        points,
        notes,
    };
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

/// A started worker process with what is needed to read it back.
struct Worker {
    proc: Proc,
    implementation: Implementation,
}

impl Worker {
    fn output(&self) -> PerfOutput {
        parse_output(self.implementation, &self.proc.output())
    }

    /// Ends the process. A Fast DDS or Tessera worker first gets SIGTERM and up to
    /// [`FASTDDS_STOP`] to delete its participant, which removes its shared-memory segments
    /// (killed, it would leave them in /dev/shm); everything else is killed at once.
    fn stop(&mut self) {
        let graceful = self.implementation.is_fastdds()
            || self.implementation.is_tessera()
            || self.implementation == Implementation::CycloneC;
        if graceful && self.proc.signal(libc::SIGTERM).is_ok() {
            self.proc.wait_timeout(FASTDDS_STOP);
        }
        self.proc.kill();
    }
}

/// UDP datagrams and bytes sent by every host of a topology so far (`/proc/net/snmp`'s
/// `OutDatagrams`, `/proc/net/dev`'s transmitted bytes, read inside each namespace).
#[derive(Debug, Clone, Copy, Default)]
struct Traffic {
    datagrams: u64,
    bytes: u64,
}

fn discovery_traffic(topo: &Topology) -> Option<Traffic> {
    let mut total = Traffic::default();
    for h in 0..topo.hosts().len() {
        let out = topo
            .command(h, "cat")
            .args(["/proc/net/snmp", "/proc/net/dev"])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout);
        let t = parse_traffic(&text)?;
        total.datagrams += t.datagrams;
        total.bytes += t.bytes;
    }
    Some(total)
}

/// Parses the concatenation of `/proc/net/snmp` and `/proc/net/dev`.
fn parse_traffic(text: &str) -> Option<Traffic> {
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let names: Vec<&str> = udp.next()?.split_whitespace().collect();
    let values: Vec<&str> = udp.next()?.split_whitespace().collect();
    let col = names.iter().position(|&n| n == "OutDatagrams")?;
    let datagrams = values.get(col)?.parse().ok()?;
    // /proc/net/dev: "iface: rx_bytes rx_packets ... (8 rx fields) tx_bytes ...".
    let bytes = text
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(iface, _)| !iface.trim().is_empty() && !iface.contains('|'))
        .filter(|(iface, _)| {
            !matches!(
                iface.trim(),
                "Udp" | "UdpLite" | "Ip" | "Icmp" | "IcmpMsg" | "Tcp"
            )
        })
        .filter_map(|(_, rest)| rest.split_whitespace().nth(8)?.parse::<u64>().ok())
        .sum();
    Some(Traffic { datagrams, bytes })
}

/// `TESSERA_WAIT` of the `tessera-shm-spin` pair: spin about twice the recent gap between
/// samples before blocking, never more than 1 ms (no spinning while traffic is sparser).
pub const SPIN_WAIT: &str = "adaptive:1000";

/// How long a Fast DDS worker may take to shut down cleanly after SIGTERM.
const FASTDDS_STOP: Duration = Duration::from_secs(3);

/// `--loan SIZE` for a loan pair (both sides: the type is chosen by the size), else nothing.
fn loan_args(pair: Pair, size: u64) -> Vec<String> {
    if pair.writer.is_loan() {
        strings(&["--loan", &size.to_string()])
    } else {
        Vec::new()
    }
}

fn parse_output(i: Implementation, text: &str) -> PerfOutput {
    match i {
        Implementation::Cyclone => parse::parse_ddsperf_text(text),
        // fastdds-perf prints `tessera perf --json`'s lines.
        _ => parse::parse_tessera_json(text),
    }
}

impl Ctx<'_> {
    fn topology(
        &self,
        exp: &Experiment,
        params: &BTreeMap<String, Value>,
    ) -> anyhow::Result<Topology> {
        let hosts = exp.hosts.unwrap_or(self.scenario.hosts).max(1) as usize;
        let loss = exp.loss_pct.unwrap_or(self.scenario.loss_pct);
        let rate = match exp.kind {
            Kind::Reliability => params
                .get("link_mbit")
                .and_then(Value::as_f64)
                .or(self.scenario.link_mbit),
            _ => self.scenario.link_mbit,
        };
        let id = hosts::new_run_id();
        let topo = if hosts == 1 && loss == 0.0 && rate.is_none() {
            Topology::single(&id)?
        } else {
            Topology::lan(
                &id,
                hosts.max(if loss > 0.0 || rate.is_some() { 2 } else { 1 }),
                &LinkShaping {
                    loss_pct: loss,
                    rate_mbit: rate,
                },
            )?
        };
        Ok(topo)
    }

    /// The host of reader number `i` (writers live on host 0).
    fn reader_host(topo: &Topology, i: usize) -> usize {
        let n = topo.hosts().len();
        if n <= 1 {
            0
        } else {
            1 + i % (n - 1)
        }
    }

    fn log_path(&self, seq: usize, exp: &str, pair: Pair, role: &str) -> PathBuf {
        self.logs.join(format!(
            "{seq:04}-{exp}-{}-{role}.log",
            pair.label().replace('>', "-to-")
        ))
    }

    /// A ddsperf-grammar process of `implementation` on `host`.
    #[allow(clippy::too_many_arguments)]
    fn perf(
        &self,
        topo: &Topology,
        host: usize,
        implementation: Implementation,
        args: &[String],
        multicast: bool,
        role: &str,
        capture: Capture,
    ) -> anyhow::Result<Worker> {
        let cmd = self.perf_command(topo, host, implementation, args, multicast)?;
        Self::spawn_worker(cmd, role, implementation, capture)
    }

    fn spawn_worker(
        cmd: Command,
        role: &str,
        implementation: Implementation,
        capture: Capture,
    ) -> anyhow::Result<Worker> {
        let proc = Proc::spawn(cmd, role, implementation, capture)
            .with_context(|| format!("starting {} {role}", implementation.as_str()))?;
        Ok(Worker {
            proc,
            implementation,
        })
    }

    /// The command line of a ddsperf-grammar process of `implementation` on `host`.
    fn perf_command(
        &self,
        topo: &Topology,
        host: usize,
        implementation: Implementation,
        args: &[String],
        multicast: bool,
    ) -> anyhow::Result<Command> {
        let mut cmd: Command = match implementation {
            Implementation::Tessera
            | Implementation::TesseraShm
            | Implementation::TesseraShmSpin
            | Implementation::TesseraLoan
            | Implementation::TesseraLoanSpin
            | Implementation::TesseraAtomic => {
                // The ATOMIC pair runs the same perf code from `tessera-bench`, which is built
                // with the `atomic` feature that the measured `tessera` binary leaves out.
                let mut c = if implementation == Implementation::TesseraAtomic {
                    let mut c = topo.command(host, &self.opts.bench_exe);
                    c.arg("perf")
                        .arg("--json")
                        .args(["--consistency", "atomic"]);
                    c
                } else {
                    let mut c = topo.command(host, &self.opts.tessera_exe);
                    c.arg("perf").arg("--json");
                    c
                };
                if !matches!(
                    implementation,
                    Implementation::Tessera | Implementation::TesseraAtomic
                ) {
                    // Shared memory where it reaches (same host), UDPv4 beyond it.
                    c.env("TESSERA_TRANSPORTS", "shm,udp4");
                }
                if matches!(
                    implementation,
                    Implementation::TesseraShmSpin | Implementation::TesseraLoanSpin
                ) {
                    c.env("TESSERA_WAIT", SPIN_WAIT);
                }
                if self.attach_to_node.get() {
                    federated::Nodes::attach(&mut c);
                }
                if !multicast {
                    // Like Cyclone's AllowMulticast=spdp below: discovery by multicast, data by
                    // unicast to each reader.
                    c.env("TESSERA_ALLOW_MULTICAST", "spdp");
                }
                c
            }
            Implementation::Cyclone => {
                let ddsperf = self
                    .opts
                    .ddsperf
                    .as_ref()
                    .context("ddsperf is not installed")?;
                // ddsperf writes through stdio: line-buffer it so lines arrive as printed.
                let mut c = topo.command(host, "stdbuf");
                c.arg("-oL").arg(ddsperf);
                if !multicast {
                    let iface = &topo.hosts()[host].iface;
                    c.env(
                        "CYCLONEDDS_URI",
                        format!(
                            "<General><Interfaces><NetworkInterface name=\"{iface}\" \
                             multicast=\"true\"/></Interfaces><AllowMulticast>spdp\
                             </AllowMulticast></General>"
                        ),
                    );
                }
                c
            }
            Implementation::FastDds | Implementation::FastDdsUdp => {
                let exe = self
                    .fastdds
                    .as_ref()
                    .context("the Fast DDS worker is not built")?;
                let mut c = topo.command(host, exe);
                if implementation == Implementation::FastDdsUdp {
                    c.arg("--transport").arg("udp");
                }
                c
            }
            Implementation::CycloneC => {
                let exe = self
                    .cyclonec
                    .as_ref()
                    .context("the C Cyclone worker is not built")?;
                topo.command(host, exe)
            }
            Implementation::RustDds | Implementation::DustDds | Implementation::Zenoh => {
                let exe = self
                    .rust_peers
                    .get(&implementation)
                    .context("the worker is not built")?;
                topo.command(host, exe)
            }
            Implementation::Udp | Implementation::Shm | Implementation::ShmSpin => {
                anyhow::bail!("the raw floors have no ddsperf grammar")
            }
        };
        cmd.args(args);
        Ok(cmd)
    }

    /// A `tessera-bench …` helper process (raw UDP floor or Tessera-only worker).
    fn tool(
        &self,
        topo: &Topology,
        host: usize,
        args: &[String],
        role: &str,
        implementation: Implementation,
        capture: Capture,
    ) -> anyhow::Result<Worker> {
        let mut cmd = topo.command(host, &self.opts.bench_exe);
        cmd.args(args);
        let proc = Proc::spawn(cmd, role, implementation, capture)
            .with_context(|| format!("starting {role}"))?;
        Ok(Worker {
            proc,
            implementation,
        })
    }

    /// The raw UDP floor: `server` (`pong` or `sub`, with its extra arguments) on the first
    /// reader host, then `client` (`ping` or `pub`) on host 0 aimed at it. Waits up to
    /// `timeout` s for the side that measures (ping's client, sub's server) to finish, stops
    /// both and returns (client, server, the measuring side's exit code).
    #[allow(clippy::too_many_arguments)]
    fn floor_pair(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        server: (&str, Vec<String>),
        client: (&str, Vec<String>),
        timeout: f64,
    ) -> anyhow::Result<(Worker, Worker, Option<i32>, cpuwin::CpuSeries)> {
        let host_r = Self::reader_host(topo, 0);
        let addr = topo.hosts()[host_r].addr;
        let port = FLOOR_PORT.to_string();
        let mut server_args = strings(&["udp", server.0, "--port", &port]);
        server_args.extend(server.1);
        let log = |role: &str| Capture::File(self.log_path(seq, &exp.name, p.pair, role));
        let mut srv = self.tool(
            topo,
            host_r,
            &server_args,
            server.0,
            Implementation::Udp,
            log(server.0),
        )?;
        // Let the server bind before the client's first datagram.
        std::thread::sleep(Duration::from_millis(50));
        let mut client_args = strings(&["udp", client.0, "--peer", &format!("{addr}:{port}")]);
        client_args.extend(client.1);
        let mut cli = self.tool(
            topo,
            0,
            &client_args,
            client.0,
            Implementation::Udp,
            log(client.0),
        )?;
        let monitor = CpuMonitor::start(vec![cli.proc.pid(), srv.proc.pid()]);
        let measuring = if client.0 == "ping" {
            &mut cli
        } else {
            &mut srv
        };
        let code = measuring.proc.wait_timeout(secs(timeout));
        let cpu = monitor.finish();
        srv.proc.kill();
        cli.proc.kill();
        Ok((cli, srv, code, cpu))
    }

    /// The raw shared-memory floor's latency point: `tessera bench shm pong` creates a segment
    /// named after this run and point, `ping` measures through it; both on host 0 (shared
    /// memory does not cross hosts). The segment is removed even when a side was killed.
    fn shm_floor_latency(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
        (size, duration, warmup): (u64, f64, f64),
    ) -> anyhow::Result<()> {
        let segment = format!("tessera-bench-{}-{seq}", std::process::id());
        let wait = if p.pair.writer == Implementation::ShmSpin {
            "spin"
        } else {
            "block"
        };
        let run_s = duration + warmup;
        let common = |role: &str, d: f64| {
            strings(&[
                "shm",
                role,
                "--segment",
                &segment,
                "--size",
                &size.to_string(),
                "--duration",
                &format!("{d}"),
                "--wait",
                wait,
            ])
        };
        let log = |role: &str| Capture::File(self.log_path(seq, &exp.name, p.pair, role));
        let mut pong = self.tool(
            topo,
            0,
            &common("pong", run_s + 15.0),
            "pong",
            p.pair.writer,
            log("pong"),
        )?;
        let mut ping_args = common("ping", run_s);
        ping_args.extend(strings(&["--warmup", &format!("{warmup}")]));
        let mut ping = self.tool(topo, 0, &ping_args, "ping", p.pair.writer, log("ping"))?;
        let monitor = CpuMonitor::start(vec![ping.proc.pid(), pong.proc.pid()]);
        let code = ping.proc.wait_timeout(secs(run_s + 15.0));
        let cpu = monitor.finish();
        pong.proc.kill();
        ping.proc.kill();
        let _ = std::fs::remove_file(super::shm_floor::segment_path(&segment));
        point.procs = collect_stats(&[&ping, &pong]);
        let out = ping.output();
        if let Some(us) = latency_cpu_per_round_trip(&cpu, ping.proc.started(), &out) {
            point.metrics.insert(CPU_METRIC.into(), us);
        }
        point.latency = round_trip(stats::latency_from_pairs(&out.hist));
        check_result(point.latency.is_some(), code, &ping, "no round trips")
    }

    /// Starts `n` reader processes (`pong` or `sub` roles, numbered when `n > 1`) of the
    /// pair's reader implementation, spread over the reader hosts.
    #[allow(clippy::too_many_arguments)]
    fn spawn_readers(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        base_role: &str,
        n: usize,
        args: &[String],
        multicast: bool,
    ) -> anyhow::Result<Vec<Worker>> {
        (0..n)
            .map(|i| {
                let role = if n > 1 {
                    format!("{base_role}{}", i + 1)
                } else {
                    base_role.to_string()
                };
                let capture = Capture::File(self.log_path(seq, &exp.name, p.pair, &role));
                let host = Self::reader_host(topo, i);
                self.perf(topo, host, p.pair.reader, args, multicast, &role, capture)
            })
            .collect()
    }

    fn run_point(&self, exp: &Experiment, p: &Planned, seq: usize) -> Point {
        let t0 = Instant::now();
        let mut point = Point::new(&exp.name, exp.kind, p.pair, p.params.clone(), p.round);
        let result = self.topology(exp, &p.params).and_then(|topo| {
            let r = match exp.kind {
                Kind::Latency => self.latency(&topo, exp, p, seq, &mut point),
                Kind::Throughput => self.throughput(&topo, exp, p, seq, &mut point),
                Kind::Discovery => self.discovery(&topo, exp, p, &mut point),
                Kind::LateJoiner => self.late_joiner(&topo, exp, p, seq, &mut point),
                Kind::Reliability => self.reliability(&topo, exp, p, seq, &mut point),
                Kind::Failure => self.failure(&topo, exp, p, seq, &mut point),
                Kind::RateStep => unreachable!("rate steps run as groups"),
            };
            drop(topo);
            r
        });
        if let Err(e) = result {
            point.ok = false;
            point.error = Some(format!("{e:#}"));
        }
        point.wall_s = t0.elapsed().as_secs_f64();
        point
    }

    fn latency(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let size = param_u64(&p.params, "size", 16);
        let subs = param_u64(&p.params, "subscribers", 1) as usize;
        let duration = exp.setting("duration_s", 2.0);
        let warmup = exp.setting("warmup_s", 0.5);
        let read_mode = param_str(&p.params, "read_mode", "listener");
        let best_effort = param_str(&p.params, "reliability", "reliable") == "best_effort";

        if p.pair.writer.is_shm_floor() {
            return self.shm_floor_latency(topo, exp, p, seq, point, (size, duration, warmup));
        }
        if p.pair.writer == Implementation::Udp {
            let client = strings(&[
                "--size",
                &size.to_string(),
                "--duration",
                &format!("{}", duration + warmup),
                "--warmup",
                &format!("{warmup}"),
            ]);
            let (ping, pong, code, cpu) = self.floor_pair(
                topo,
                exp,
                p,
                seq,
                ("pong", Vec::new()),
                ("ping", client),
                duration + warmup + 15.0,
            )?;
            point.procs = collect_stats(&[&ping, &pong]);
            let out = ping.output();
            if let Some(us) = latency_cpu_per_round_trip(&cpu, ping.proc.started(), &out) {
                point.metrics.insert(CPU_METRIC.into(), us);
            }
            point.latency = round_trip(stats::latency_from_pairs(&out.hist));
            return check_result(point.latency.is_some(), code, &ping, "no round trips");
        }

        let mut common: Vec<String> = Vec::new();
        if best_effort {
            common.push("-u".into());
        }
        common.extend(loan_args(p.pair, size));
        // Count mode: the pinger stops after N measured round trips; -D only bounds it.
        let count = count_mode(exp, p.pair.writer);
        let run_s = match count {
            Some(_) => (warmup + COUNT_MODE_LIMIT_S).ceil() as u64,
            None => (duration + warmup).ceil().max(2.0) as u64,
        };
        let mut nodes = federated::Nodes::new(self);
        if param_str(&p.params, "architecture", "decentralized") == "federated" {
            nodes.start(topo, subs)?;
        }
        let mut pong_args = common.clone();
        pong_args.extend(strings(&[
            "-D",
            &(run_s + 15).to_string(),
            "pong",
            read_mode,
        ]));
        let mut pongs = self.spawn_readers(topo, exp, p, seq, "pong", subs, &pong_args, true)?;
        let mut args = common.clone();
        args.extend(strings(&[
            "-D",
            &run_s.to_string(),
            &format!("-Qminmatch:{subs}"),
            "-Qinitwait:20",
        ]));
        if p.pair.writer.is_tessera()
            || p.pair.writer.is_fastdds()
            || p.pair.writer.is_rust_peer()
            || p.pair.writer == Implementation::CycloneC
        {
            args.extend(strings(&["--warmup", &format!("{warmup}")]));
        }
        if let Some(n) = count {
            args.extend(strings(&["--count", &n.to_string()]));
        }
        args.extend(strings(&[
            "ping",
            "size",
            &size.max(KS_MIN_SIZE).to_string(),
            read_mode,
        ]));
        let mut ping = self.perf(
            topo,
            0,
            p.pair.writer,
            &args,
            true,
            "ping",
            Capture::File(self.log_path(seq, &exp.name, p.pair, "ping")),
        )?;
        nodes.detach();
        let mut pids = vec![ping.proc.pid()];
        pids.extend(pongs.iter().map(|w| w.proc.pid()));
        pids.extend(nodes.pids());
        let monitor = CpuMonitor::start(pids);
        let code = ping.proc.wait_timeout(secs(run_s as f64 + 40.0));
        let cpu = monitor.finish();
        for w in &mut pongs {
            w.stop();
        }
        ping.stop();
        let nodes = nodes.stop();
        let out = ping.output();
        let exited = code.and(ping.proc.exited_at());
        // A counting pinger ends with a line at its last instant, whatever -D said.
        let ran_s = match count {
            Some(_) => out.latency.iter().map(|l| l.t).fold(0.0, f64::max),
            None => run_s as f64,
        };
        let clock = report_clock_start(ping.proc.started(), exited, ran_s);
        let cpu_us = if count.is_some() {
            latency_cpu_from_run_start(&cpu, clock, &out)
        } else {
            latency_cpu_per_round_trip(&cpu, clock, &out)
        };
        if let Some(us) = cpu_us {
            point.metrics.insert(CPU_METRIC.into(), us);
        }
        if let Some(n) = count {
            point.metrics.insert(COUNT_TARGET.into(), n as f64);
        }
        point.metrics.extend(answer_metrics(&out, subs, cpu_us));
        let mut all: Vec<&Worker> = vec![&ping];
        all.extend(pongs.iter());
        all.extend(nodes.iter());
        point.procs = collect_stats(&all);
        point.latency = round_trip(if !out.hist.is_empty() {
            stats::latency_from_pairs(&out.hist)
        } else {
            latency_from_lines(&out)
        });
        check_result(
            point.latency.is_some(),
            code,
            &ping,
            "no round trips reported",
        )?;
        count_reached(count, &out)
    }

    fn throughput(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let duration = exp.setting("duration_s", 3.0);
        let rate = param_u64(&p.params, "rate", 0);
        let (t, workers, cpu_us, link) =
            self.flow(topo, exp, p, seq, duration, rate as f64, None)?;
        point.procs = collect_stats(&workers.iter().collect::<Vec<_>>());
        point.metrics.extend(link);
        if let Some(us) = cpu_us {
            point.metrics.insert(CPU_METRIC.into(), us);
        }
        point.throughput = t.filter(|t| t.samples_per_s > 0.0);
        if point.throughput.is_none() {
            anyhow::bail!(
                "{}; last lines: {}",
                no_data_reason(&workers),
                tail_all(&workers)
            );
        }
        Ok(())
    }
}

/// ddsperf (and its twin, and the floor) report half the round trip; the seeds plot the round
/// trip itself, so every latency figure of the benchmark is doubled back.
fn round_trip(l: Option<LatencyStats>) -> Option<LatencyStats> {
    let mut l = l?;
    for v in [
        &mut l.mean_us,
        &mut l.min_us,
        &mut l.p50_us,
        &mut l.p90_us,
        &mut l.p99_us,
        &mut l.max_us,
    ] {
        *v *= 2.0;
    }
    for v in [&mut l.stddev_us, &mut l.p999_us].into_iter().flatten() {
        *v *= 2.0;
    }
    if let Some(b) = &mut l.boxplot {
        for v in [&mut b.p1, &mut b.p25, &mut b.p50, &mut b.p75, &mut b.p99] {
            *v *= 2.0;
        }
    }
    Some(l)
}

/// Latency from per-second lines (ddsperf). ddsperf starts pinging about a second after it
/// starts, so its first line already follows discovery; still, when a peer has several lines the
/// first is dropped as warm-up (primer round trips), and when it has one, that one is kept.
fn latency_from_lines(out: &PerfOutput) -> Option<LatencyStats> {
    let mut per_peer: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &out.latency {
        *per_peer.entry(l.peer.as_str()).or_default() += 1;
    }
    let mut seen = BTreeSet::new();
    let mut kept: Vec<IntervalSummary> = Vec::new();
    for l in &out.latency {
        let first = seen.insert(l.peer.as_str());
        if first && per_peer[l.peer.as_str()] > 1 {
            continue;
        }
        kept.push(l.summary);
    }
    stats::latency_from_intervals(&kept)
}

/// Throughput from subscriber outputs: per subscriber, the per-second lines after the first
/// `warmup_lines` (at least one), then summed.
fn throughput_from_subs(
    outs: &[PerfOutput],
    size: u64,
    rate: f64,
    warmup_lines: usize,
) -> Option<ThroughputStats> {
    let mut per_sub = Vec::new();
    let mut mbit = 0.0;
    let mut received = 0;
    let mut lost = 0;
    let mut per_second: Vec<f64> = Vec::new();
    for out in outs {
        let lines: Vec<_> = out.subs.iter().skip(warmup_lines.max(1)).collect();
        if lines.is_empty() {
            return None;
        }
        let mut rates: Vec<f64> = lines.iter().map(|s| s.rate_ksps * 1000.0).collect();
        for (i, r) in rates.iter().enumerate() {
            if per_second.len() <= i {
                per_second.push(0.0);
            }
            per_second[i] += r;
        }
        let mut mb: Vec<f64> = lines.iter().map(|s| s.rate_mbps).collect();
        per_sub.push(super::results::median_of(&mut rates).unwrap_or(0.0));
        mbit += super::results::median_of(&mut mb).unwrap_or(0.0);
        received += lines.iter().map(|s| s.delta).sum::<u64>();
        lost += lines.iter().map(|s| s.delta_lost).sum::<u64>();
    }
    let total: f64 = per_sub.iter().sum();
    if mbit == 0.0 {
        mbit = total * size as f64 * 8.0 / 1e6;
    }
    Some(ThroughputStats {
        samples_per_s: total,
        mbit_per_s: mbit,
        per_subscriber: per_sub,
        received,
        lost,
        duplicates: None,
        boxplot: stats::rate_boxplot(&per_second),
        offered_per_s: (rate > 0.0).then_some(rate),
    })
}

/// The metric holding CPU µs (all processes of the point) per round trip or delivered sample,
/// measured over the same window for every implementation ([`cpuwin`]).
pub const CPU_METRIC: &str = "cpu_us_per_sample";

/// When the report clock of a ddsperf-grammar pinger started. Its report times count from the
/// start of its run, after `-Qinitwait` saw the peers match — a second or more after the process
/// started when discovery is slow (Cyclone pinging Fast DDS) — and it exits right after the
/// report due at `-D`; so the clock started `duration` before the exit. Placing the lines from
/// the process start instead put the CPU window into the wait for matching. The process start
/// when it did not exit by itself (`exited` is `None`) or the estimate would precede it.
fn report_clock_start(started: Instant, exited: Option<Instant>, duration: f64) -> Instant {
    exited
        .and_then(|e| e.checked_sub(secs(duration)))
        .filter(|s| *s > started)
        .unwrap_or(started)
}

/// Longest a count-mode pinger may run after its warm-up before it is stopped (-D): the seeds'
/// 10,000 round trips take about a second at 16 B and ten at 64 KiB here.
const COUNT_MODE_LIMIT_S: f64 = 60.0;

/// Metric: the round trips a count-mode cell asked for (absent: duration-based).
pub const COUNT_TARGET: &str = "count_target";
/// Metrics of a 1-to-N latency cell: per ping, the round trip to its first and to its last
/// pong (median and p99, µs).
pub const FIRST_ANSWER_P50: &str = "first_answer_p50_us";
/// See [`FIRST_ANSWER_P50`].
pub const FIRST_ANSWER_P99: &str = "first_answer_p99_us";
/// See [`FIRST_ANSWER_P50`].
pub const ALL_ANSWERS_P50: &str = "all_answers_p50_us";
/// See [`FIRST_ANSWER_P50`].
pub const ALL_ANSWERS_P99: &str = "all_answers_p99_us";
/// Metric: CPU µs of every process of a 1-to-N latency cell per ping (every ponger answered).
pub const CPU_PER_PING: &str = "cpu_us_per_ping";

/// The round-trip count of an experiment's `count` setting, when `writer` can stop after N
/// round trips (ddsperf and the raw floors cannot: their cells stay duration-based).
fn count_mode(exp: &Experiment, writer: Implementation) -> Option<u64> {
    let n = exp.settings.get("count").map(|&n| n as u64)?;
    let can = !matches!(
        writer,
        Implementation::Cyclone
            | Implementation::Udp
            | Implementation::Shm
            | Implementation::ShmSpin
    );
    can.then_some(n)
}

/// An error when a count-mode pinger stopped (at its -D bound) before N measured round trips.
fn count_reached(count: Option<u64>, out: &PerfOutput) -> anyhow::Result<()> {
    let Some(n) = count else { return Ok(()) };
    let got = out
        .pings
        .unwrap_or_else(|| out.hist.iter().map(|(_, c)| c).sum());
    if got < n {
        anyhow::bail!("{got} of {n} round trips in {COUNT_MODE_LIMIT_S} s");
    }
    Ok(())
}

/// The metrics of a 1-to-N latency point: the CPU per ping (`cpu_per_pong`: CPU µs per pong,
/// every pong counted, so N per ping) and, when the pinger reports them, its first/all
/// answers (round trips, µs); nothing for 1-to-1.
fn answer_metrics(
    out: &PerfOutput,
    subscribers: usize,
    cpu_per_pong: Option<f64>,
) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    if subscribers < 2 {
        return m;
    }
    if let Some(us) = cpu_per_pong {
        m.insert(CPU_PER_PING.to_string(), us * subscribers as f64);
    }
    let Some(a) = out.answers.as_ref() else {
        return m;
    };
    for (hist, p50, p99) in [
        (&a.first, FIRST_ANSWER_P50, FIRST_ANSWER_P99),
        (&a.all, ALL_ANSWERS_P50, ALL_ANSWERS_P99),
    ] {
        if let Some(l) = round_trip(stats::latency_from_pairs(hist)) {
            m.insert(p50.to_string(), l.p50_us);
            m.insert(p99.to_string(), l.p99_us);
        }
    }
    m
}

/// CPU µs per round trip of a count-mode point: from the run's start (its report clock's zero)
/// to its last line, every round trip counted (a counting run may last less than a second, so
/// its per-second lines may be a single one).
fn latency_cpu_from_run_start(
    cpu: &cpuwin::CpuSeries,
    started: Instant,
    out: &PerfOutput,
) -> Option<f64> {
    latency_cpu(cpu, out, |lines| {
        let from_zero = std::iter::once((0.0, 0)).chain(lines);
        cpuwin::cumulative(started, from_zero)
    })
}

/// CPU µs per round trip of a latency point: the window of the ping's per-second lines (each
/// counting the second before it), one stream per pong peer.
fn latency_cpu_per_round_trip(
    cpu: &cpuwin::CpuSeries,
    started: Instant,
    out: &PerfOutput,
) -> Option<f64> {
    latency_cpu(cpu, out, |lines| {
        cpuwin::cumulative_per_second(started, cpu.start().unwrap_or(started), lines)
    })
}

/// CPU µs per round trip over the window the pong peers' latency lines share, each peer's
/// `(t, count)` lines made into cumulative counts by `stream`.
fn latency_cpu(
    cpu: &cpuwin::CpuSeries,
    out: &PerfOutput,
    stream: impl Fn(Vec<(f64, u64)>) -> cpuwin::Counts,
) -> Option<f64> {
    let mut per_peer: BTreeMap<&str, Vec<(f64, u64)>> = BTreeMap::new();
    for l in &out.latency {
        per_peer
            .entry(l.peer.as_str())
            .or_default()
            .push((l.t, l.summary.count));
    }
    let streams: Vec<cpuwin::Counts> = per_peer.into_values().map(stream).collect();
    let (from, to) = cpuwin::common_window(&streams)?;
    cpuwin::cpu_us_per_sample(cpu, &streams, from, to)
}

/// CPU µs per delivered sample of a throughput point: the subscribers' common window, each
/// subscriber's per-second lines after its first `warmup_lines` (the window opens at the last
/// warm-up line).
fn throughput_cpu_per_sample(
    cpu: &cpuwin::CpuSeries,
    subs: &[(Instant, &PerfOutput)],
    warmup_lines: usize,
) -> Option<f64> {
    let skip = warmup_lines.max(1) - 1;
    let streams: Vec<cpuwin::Counts> = subs
        .iter()
        .map(|(started, o)| {
            cpuwin::cumulative(*started, o.subs.iter().skip(skip).map(|l| (l.t, l.delta)))
        })
        .collect();
    let (from, to) = cpuwin::common_window(&streams)?;
    cpuwin::cpu_us_per_sample(cpu, &streams, from, to)
}

fn collect_stats(workers: &[&Worker]) -> Vec<super::results::ProcStats> {
    workers.iter().filter_map(|w| w.proc.stats()).collect()
}

/// Waits until `w` (captured by lines) printed a line containing `text`; fails with its last
/// output when it exits first or `timeout` passes.
fn wait_for_line(w: &Worker, text: &str, timeout: Duration) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while !w.proc.lines().iter().any(|(_, l)| l.contains(text)) {
        if t0.elapsed() > timeout || w.proc.exit_code().is_some() {
            anyhow::bail!("{}", tail(&w.proc.output()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

fn check_result(ok: bool, code: Option<i32>, w: &Worker, what: &str) -> anyhow::Result<()> {
    if ok {
        return Ok(());
    }
    anyhow::bail!(
        "{what} (exit {}): {}",
        code.map_or("timeout".to_string(), |c| c.to_string()),
        tail(&w.proc.output())
    )
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(3);
    lines[from..].join(" | ")
}

/// Why a throughput point has no figure: a subscriber that received samples before the
/// measured window and none within it stalled (a finding about that implementation, told
/// apart from one that never received anything).
fn no_data_reason(workers: &[Worker]) -> String {
    let received = workers
        .iter()
        .filter_map(|w| w.output().subs.last().map(|l| l.total))
        .max()
        .unwrap_or(0);
    stall_text(received)
}

fn stall_text(received: u64) -> String {
    if received > 0 {
        format!(
            "the subscriber stalled: it received {received} samples, then none in the measured \
             window"
        )
    } else {
        "no subscriber reported data".to_string()
    }
}

fn tail_all(workers: &[Worker]) -> String {
    workers
        .iter()
        .map(|w| format!("{}: {}", w.proc.role(), tail(&w.proc.output())))
        .collect::<Vec<_>>()
        .join(" || ")
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
    use crate::parse::{LatencyLine, SubLine};

    fn hist(v: &[(u64, u64)]) -> Vec<(u64, u64)> {
        v.to_vec()
    }

    /// Lines of a real `tessera-bench perf --json --consistency atomic ping` run with two
    /// pongs (a group of 3), the summary's histograms cut short.
    const ATOMIC_PING: &str = r#"{"event":"new","host":"vm","peer_pid":2777,"pid":2777,"self":true,"t":0.132,"type":"participant"}
{"event":"new","host":"vm","peer_pid":2775,"pid":2777,"self":false,"t":0.132,"type":"participant"}
{"event":"new","host":"vm","peer_pid":2776,"pid":2777,"self":false,"t":0.133,"type":"participant"}
{"cnt":15,"max_us":7550.167,"mean_us":4231.2702,"min_us":3091.445,"p50_us":3549.095,"p90_us":6712.213,"p99_us":7550.167,"peer":"vm:2776","pid":2777,"size":12,"t":1.0,"type":"latency"}
{"cnt":15,"max_us":5780.617,"mean_us":4381.043,"min_us":3255.855,"p50_us":4458.929,"p90_us":5723.294,"p99_us":5780.617,"peer":"vm:2775","pid":2777,"size":12,"t":1.0,"type":"latency"}
{"exit_code":0,"latency":[{"cnt":3,"hist":[[2441215,1],[3971071,1],[9273343,1]],"max_us":9273.343,"mean_us":5228.5,"min_us":2439.168,"p50_us":3971.071,"p90_us":9273.343,"p999_us":9273.343,"p99_us":9273.343,"peer":"vm:2776"},{"cnt":2,"hist":[[2328575,1],[4190207,1]],"max_us":4190.207,"mean_us":3259.4,"min_us":2326.528,"p50_us":4190.207,"p90_us":4190.207,"p999_us":4190.207,"p99_us":4190.207,"peer":"vm:2775"}],"lost":0,"pid":2777,"pings":0,"received":0,"t":10.337,"type":"summary"}
"#;

    #[test]
    fn a_subscriber_that_received_before_the_window_is_said_to_have_stalled() {
        assert_eq!(stall_text(0), "no subscriber reported data");
        let text = stall_text(3102);
        assert!(
            text.contains("stalled") && text.contains("3102 samples"),
            "{text}"
        );
    }

    #[test]
    fn the_atomic_pair_reads_tessera_perfs_json_lines() {
        let out = parse_output(Implementation::TesseraAtomic, ATOMIC_PING);
        assert_eq!(out, parse_output(Implementation::Tessera, ATOMIC_PING));
        assert_eq!(out.participants_new.len(), 2, "{out:?}");
        let peers: Vec<&str> = out.latency.iter().map(|l| l.peer.as_str()).collect();
        assert_eq!(peers, ["vm:2776", "vm:2775"]);
        // Both pong sources' histograms, merged and ascending.
        assert_eq!(out.hist.iter().map(|(_, n)| n).sum::<u64>(), 5);
        assert!(
            out.hist.windows(2).all(|w| w[0].0 < w[1].0),
            "{:?}",
            out.hist
        );
        assert!(out.errors.is_empty(), "{:?}", out.errors);
    }

    #[test]
    fn one_to_n_answers_are_round_trips_and_cpu_is_per_ping() {
        let out = PerfOutput {
            answers: Some(crate::parse::Answers {
                // One-way ns: the first answers around 10 µs, the last around 25 µs.
                first: hist(&[(9_000, 40), (10_000, 50), (30_000, 10)]),
                all: hist(&[(20_000, 30), (25_000, 60), (60_000, 10)]),
            }),
            ..Default::default()
        };
        let m = answer_metrics(&out, 4, Some(12.5));
        // Doubled to round trips (the histogram's buckets hold ~3 significant digits).
        assert!((m[FIRST_ANSWER_P50] - 20.0).abs() < 0.1, "{m:?}");
        assert!((m[ALL_ANSWERS_P50] - 50.0).abs() < 0.1, "{m:?}");
        assert!(m[FIRST_ANSWER_P99] > m[FIRST_ANSWER_P50]);
        assert!(m[ALL_ANSWERS_P99] >= 100.0);
        // 12.5 µs per pong, four pongs per ping.
        assert_eq!(m[CPU_PER_PING], 50.0);
        // 1-to-1, or a pinger without answers: nothing.
        assert!(answer_metrics(&out, 1, Some(12.5)).is_empty());
        // A pinger without answers (ddsperf): the CPU per ping only.
        let m = answer_metrics(&PerfOutput::default(), 4, Some(1.0));
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            [(CPU_PER_PING.to_string(), 4.0)]
        );
    }

    #[test]
    fn count_mode_is_for_workers_that_can_count_and_must_be_reached() {
        let s = crate::scenario::Scenario::parse(
            "[[experiment]]\nname = \"l\"\nkind = \"latency\"\ncount = 500",
            "t",
        )
        .unwrap();
        let e = &s.experiments[0];
        for i in [
            Implementation::Tessera,
            Implementation::CycloneC,
            Implementation::FastDds,
            Implementation::Zenoh,
        ] {
            assert_eq!(count_mode(e, i), Some(500), "{i:?}");
        }
        for i in [
            Implementation::Cyclone,
            Implementation::Udp,
            Implementation::Shm,
        ] {
            assert_eq!(count_mode(e, i), None, "{i:?}");
        }
        let mut out = PerfOutput {
            pings: Some(499),
            hist: hist(&[(1000, 900)]),
            ..Default::default()
        };
        assert!(count_reached(Some(500), &out)
            .unwrap_err()
            .to_string()
            .contains("499 of 500"));
        out.pings = Some(500);
        assert!(count_reached(Some(500), &out).is_ok());
        // Without a `pings` figure the histogram's round trips count.
        out.pings = None;
        assert!(count_reached(Some(500), &out).is_ok());
        assert!(count_reached(None, &PerfOutput::default()).is_ok());
    }

    #[test]
    fn traffic_counters_parse() {
        let text = "Ip: Forwarding DefaultTTL\nIp: 1 64\n\
                    Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors\n\
                    Udp: 10 0 0 42 0\n\
                    UdpLite: InDatagrams NoPorts InErrors OutDatagrams\n\
                    UdpLite: 0 0 0 0\n\
                    Inter-|   Receive                            |  Transmit\n \
                    face |bytes    packets errs drop fifo frame compressed multicast|bytes\n\
                    \x20   lo:    500      5    0    0    0     0          0         0      700\n\
                    veth0:    1      1    0    0    0     0          0         0       30\n";
        let t = parse_traffic(text).unwrap();
        assert_eq!((t.datagrams, t.bytes), (42, 730));
        assert!(parse_traffic("nothing here").is_none());
    }

    fn sub(t: f64, ksps: f64, delta: u64, delta_lost: u64) -> SubLine {
        SubLine {
            t,
            size: 100,
            total: 0,
            lost: 0,
            delta,
            delta_lost,
            rate_ksps: ksps,
            rate_mbps: 0.0,
        }
    }

    #[test]
    fn throughput_drops_each_subscribers_first_second_and_sums_medians() {
        let a = PerfOutput {
            subs: vec![
                sub(1.0, 1.0, 1000, 0),
                sub(2.0, 10.0, 10_000, 1),
                sub(3.0, 30.0, 30_000, 0),
                sub(4.0, 20.0, 20_000, 0),
            ],
            ..Default::default()
        };
        let b = PerfOutput {
            subs: vec![
                sub(1.0, 0.0, 0, 0),
                sub(2.0, 5.0, 5000, 0),
                sub(3.0, 5.0, 5000, 0),
            ],
            ..Default::default()
        };
        let t = throughput_from_subs(&[a, b.clone()], 100, 0.0, 1).unwrap();
        assert_eq!(t.per_subscriber, vec![20_000.0, 5000.0]);
        assert_eq!(t.samples_per_s, 25_000.0);
        assert_eq!(t.received, 70_000);
        assert_eq!(t.lost, 1);
        assert_eq!(t.offered_per_s, None);
        // 25k samples/s of 100 B is 20 Mbit/s when the subscribers report no Mb/s.
        assert!((t.mbit_per_s - 20.0).abs() < 1e-9);
        // A subscriber with only its warm-up second has no measurement.
        let only_warmup = PerfOutput {
            subs: vec![sub(1.0, 9.0, 9000, 0)],
            ..Default::default()
        };
        assert!(throughput_from_subs(&[b.clone(), only_warmup], 100, 0.0, 1).is_none());
        // A longer warm-up leaves out that many lines: a slow start is not measured.
        let slow_start = PerfOutput {
            subs: vec![
                sub(1.0, 1.0, 1000, 0),
                sub(2.0, 2.0, 2000, 0),
                sub(3.0, 40.0, 40_000, 0),
                sub(4.0, 50.0, 50_000, 0),
            ],
            ..Default::default()
        };
        let t = throughput_from_subs(&[slow_start], 100, 0.0, 2).unwrap();
        assert_eq!(t.per_subscriber, vec![45_000.0]);
        assert_eq!(t.received, 90_000);
        assert!(throughput_from_subs(&[b], 100, 0.0, 3).is_none());
    }

    fn lat(t: f64, peer: &str, p50: f64) -> LatencyLine {
        LatencyLine {
            t,
            peer: peer.into(),
            size: 16,
            summary: IntervalSummary {
                count: 100,
                mean_us: p50,
                min_us: p50,
                p50_us: p50,
                p90_us: p50,
                p99_us: p50,
                max_us: p50,
            },
        }
    }

    #[test]
    fn latency_lines_drop_a_peers_first_line_unless_it_is_the_only_one() {
        let out = PerfOutput {
            latency: vec![
                lat(1.0, "a", 100.0),
                lat(2.0, "a", 10.0),
                lat(2.0, "b", 20.0),
            ],
            ..Default::default()
        };
        let l = latency_from_lines(&out).unwrap();
        assert_eq!(l.count, 200);
        assert_eq!(l.min_us, 10.0);
        assert_eq!(l.max_us, 20.0);
        assert_eq!(l.source, "intervals");
        let rt = round_trip(Some(l)).unwrap();
        assert_eq!((rt.min_us, rt.max_us, rt.mean_us), (20.0, 40.0, 30.0));
    }

    #[test]
    fn the_cpu_window_of_a_ping_starts_after_its_initwait() {
        // The process starts at 0, matches its peer at 1.5 s (initwait), pings for its -D of
        // 1 s, prints one line at report time 1.0 counting 1000 round trips, exits at 2.52 s.
        // Its CPU is flat while it waits for matching and grows by 0.1 s while it pings.
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut cpu = cpuwin::CpuSeries::default();
        for i in 0..=60 {
            let s = i as f64 * 0.05;
            cpu.push(at(s), ((s - 1.5).clamp(0.0, 1.0)) * 0.1);
        }
        let out = PerfOutput {
            latency: vec![LatencyLine {
                t: 1.0,
                peer: "vm:1".into(),
                size: 16,
                summary: IntervalSummary {
                    count: 1000,
                    ..Default::default()
                },
            }],
            ..Default::default()
        };
        let clock = report_clock_start(t0, Some(at(2.52)), 1.0);
        let us = latency_cpu_per_round_trip(&cpu, clock, &out).unwrap();
        // 0.1 s of CPU over 1000 round trips (the 20 ms of shutdown shift the window a little).
        assert!((us - 100.0).abs() < 5.0, "{us}");
        // Not exited by itself, or an estimate before the start: the process start.
        assert_eq!(report_clock_start(t0, None, 1.0), t0);
        assert_eq!(report_clock_start(t0, Some(at(0.5)), 1.0), t0);
    }

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
