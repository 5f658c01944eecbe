//! The worker processes of a point: where they run (the point's topology, the host of each
//! reader), each implementation's command line in ddsperf's grammar, the `tessera-bench`
//! helper processes, and the [`Worker`] handle that stops a process and reads it back (its
//! output, its last lines, its exit). Every experiment kind starts its processes here.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use serde_json::Value;

use crate::hosts::{self, LinkShaping, Topology};
use crate::parse::{self, PerfOutput};
use crate::procmon::{Capture, Proc};
use crate::results::{Implementation, Kind, Pair};
use crate::scenario::{Experiment, Planned};

use super::{federated, strings, Ctx};

/// A started worker process with what is needed to read it back.
pub(super) struct Worker {
    pub(super) proc: Proc,
    pub(super) implementation: Implementation,
}

impl Worker {
    pub(super) fn output(&self) -> PerfOutput {
        parse_output(self.implementation, &self.proc.output())
    }

    /// Ends the process. A Fast DDS or Tessera worker first gets SIGTERM and up to
    /// [`FASTDDS_STOP`] to delete its participant, which removes its shared-memory segments
    /// (killed, it would leave them in /dev/shm); everything else is killed at once.
    pub(super) fn stop(&mut self) {
        let graceful = self.implementation.is_fastdds()
            || self.implementation.is_tessera()
            || self.implementation == Implementation::CycloneC;
        if graceful && self.proc.signal(libc::SIGTERM).is_ok() {
            self.proc.wait_timeout(FASTDDS_STOP);
        }
        self.proc.kill();
    }
}

/// `TESSERA_WAIT` of the `tessera-shm-spin` pair: spin about twice the recent gap between
/// samples (at least 20 µs) before blocking, never more than 1 ms (no spinning while traffic
/// is sparser).
pub const SPIN_WAIT: &str = "adaptive:1000";

/// How long a Fast DDS worker may take to shut down cleanly after SIGTERM.
const FASTDDS_STOP: Duration = Duration::from_secs(3);

/// `--loan SIZE` for a loan pair (both sides: the type is chosen by the size), else nothing.
pub(super) fn loan_args(pair: Pair, size: u64) -> Vec<String> {
    if pair.writer.is_loan() {
        strings(&["--loan", &size.to_string()])
    } else {
        Vec::new()
    }
}

pub(super) fn parse_output(i: Implementation, text: &str) -> PerfOutput {
    match i {
        Implementation::Cyclone => parse::parse_ddsperf_text(text),
        // fastdds-perf prints `tessera perf --json`'s lines.
        _ => parse::parse_tessera_json(text),
    }
}

impl Ctx<'_> {
    pub(super) fn topology(
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
    pub(super) fn reader_host(topo: &Topology, i: usize) -> usize {
        let n = topo.hosts().len();
        if n <= 1 {
            0
        } else {
            1 + i % (n - 1)
        }
    }

    pub(super) fn log_path(&self, seq: usize, exp: &str, pair: Pair, role: &str) -> PathBuf {
        self.logs.join(format!(
            "{seq:04}-{exp}-{}-{role}.log",
            pair.label().replace('>', "-to-")
        ))
    }

    /// A ddsperf-grammar process of `implementation` on `host`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn perf(
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

    pub(super) fn spawn_worker(
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
    pub(super) fn perf_command(
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
                // The ATOMIC pair runs the same perf code from a binary built with the `atomic`
                // feature that the measured `tessera` leaves out: `tessera-atomic` beside it
                // (profile-guided like it, from `scripts/pgo-build --atomic`), else
                // `tessera-bench`.
                let mut c = if implementation == Implementation::TesseraAtomic {
                    let mut c = topo.command(host, self.opts.atomic_exe());
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
    pub(super) fn tool(
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

    /// Starts `n` reader processes (`pong` or `sub` roles, numbered when `n > 1`) of the
    /// pair's reader implementation, spread over the reader hosts.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn spawn_readers(
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
}

pub(super) fn collect_stats(workers: &[&Worker]) -> Vec<crate::results::ProcStats> {
    workers.iter().filter_map(|w| w.proc.stats()).collect()
}

/// Waits until `w` (captured by lines) printed a line containing `text`; fails with its last
/// output when it exits first or `timeout` passes.
pub(super) fn wait_for_line(w: &Worker, text: &str, timeout: Duration) -> anyhow::Result<()> {
    let t0 = Instant::now();
    while !w.proc.lines().iter().any(|(_, l)| l.contains(text)) {
        if t0.elapsed() > timeout || w.proc.exit_code().is_some() {
            anyhow::bail!("{}", tail(&w.proc.output()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

pub(super) fn check_result(
    ok: bool,
    code: Option<i32>,
    w: &Worker,
    what: &str,
) -> anyhow::Result<()> {
    if ok {
        return Ok(());
    }
    anyhow::bail!(
        "{what} (exit {}): {}",
        code.map_or("timeout".to_string(), |c| c.to_string()),
        tail(&w.proc.output())
    )
}

pub(super) fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    let from = lines.len().saturating_sub(3);
    lines[from..].join(" | ")
}

pub(super) fn tail_all(workers: &[Worker]) -> String {
    workers
        .iter()
        .map(|w| format!("{}: {}", w.proc.role(), tail(&w.proc.output())))
        .collect::<Vec<_>>()
        .join(" || ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
