//! The raw floors, measured by `tessera-bench` helper processes instead of a DDS
//! implementation: the UDP floor (`tessera-bench udp`, server and client on two hosts) and
//! the shared-memory floor's latency point (`tessera-bench shm`, both sides on host 0).

use std::time::Duration;

use crate::cpuwin::{self, CpuMonitor};
use crate::hosts::Topology;
use crate::procmon::Capture;
use crate::results::{Implementation, Point};
use crate::scenario::{Experiment, Planned};
use crate::stats;

use super::metrics::{latency_cpu_per_round_trip, round_trip, CPU_METRIC};
use super::workers::{check_result, collect_stats, Worker};
use super::{secs, strings, Ctx};

/// UDP port of the raw floor's server side.
const FLOOR_PORT: u16 = 7399;

impl Ctx<'_> {
    /// The raw UDP floor: `server` (`pong` or `sub`, with its extra arguments) on the first
    /// reader host, then `client` (`ping` or `pub`) on host 0 aimed at it. Waits up to
    /// `timeout` s for the side that measures (ping's client, sub's server) to finish, stops
    /// both and returns (client, server, the measuring side's exit code).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn floor_pair(
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
    pub(super) fn shm_floor_latency(
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
        let _ = std::fs::remove_file(crate::shm_floor::segment_path(&segment));
        point.procs = collect_stats(&[&ping, &pong]);
        let out = ping.output();
        if let Some(us) = latency_cpu_per_round_trip(&cpu, ping.proc.started(), &out) {
            point.metrics.insert(CPU_METRIC.into(), us);
        }
        point.latency = round_trip(stats::latency_from_pairs(&out.hist));
        check_result(point.latency.is_some(), code, &ping, "no round trips")
    }
}
