//! One planned point: a fresh topology for it, the procedure of its experiment's kind, and
//! the latency and throughput kinds themselves (every other kind has a file of its own).

use std::time::Instant;

use crate::cpuwin::CpuMonitor;
use crate::hosts::Topology;
use crate::procmon::Capture;
use crate::results::{Implementation, Kind, Point};
use crate::scenario::{Experiment, Planned};
use crate::stats;

use super::metrics::{
    answer_metrics, count_mode, count_reached, latency_cpu_from_run_start,
    latency_cpu_per_round_trip, latency_from_lines, report_clock_start, round_trip,
    COUNT_MODE_LIMIT_S, COUNT_TARGET, CPU_METRIC,
};
use super::workers::{check_result, collect_stats, loan_args, tail_all, Worker};
use super::{federated, param_str, param_u64, secs, strings, Ctx, KS_MIN_SIZE};

impl Ctx<'_> {
    pub(super) fn run_point(&self, exp: &Experiment, p: &Planned, seq: usize) -> Point {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriber_that_received_before_the_window_is_said_to_have_stalled() {
        assert_eq!(stall_text(0), "no subscriber reported data");
        let text = stall_text(3102);
        assert!(
            text.contains("stalled") && text.contains("3102 samples"),
            "{text}"
        );
    }
}
