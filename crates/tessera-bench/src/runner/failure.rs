//! The failure experiment: what each architecture does when its shared part dies.
//!
//! A paced stream (`tessera bench worker stream-writer`, host 0) flows to a reader on host 1.
//! Once it flows, the architecture's shared part is killed with SIGKILL — the discovery server
//! (centralized: the only one, or one of two linked servers), the publisher host's node service
//! (federated), nothing (decentralized: there is none, the control) — and started again
//! `duration_s` later. Half a second into the outage a second reader joins on host 1: a late
//! joiner needs discovery, which the dead part may have been doing. The readers print every
//! sample number they get, timed on arrival by the runner, so the cell says what kept flowing,
//! the longest gap, what was lost, when the late reader got its first sample and when both
//! readers received again after the restart.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use super::federated::Nodes;
use super::{
    collect_stats, param_str, param_u64, secs, strings, tail, Capture, Ctx, Experiment,
    Implementation, Planned, Point, ServerSpec, Topology, Worker,
};

/// How long the stream flows before the kill.
const STEADY: Duration = Duration::from_millis(1500);
/// When the late reader starts, after the kill.
const LATE_READER_AFTER: Duration = Duration::from_millis(500);
/// How long the run goes on after the restart.
const AFTER_RESTART: Duration = Duration::from_secs(4);
/// How long the first sample may take to arrive before the point fails.
const FIRST_SAMPLE_TIMEOUT: Duration = Duration::from_secs(20);
/// The discovery servers' UDP ports (server 0, server 1).
const DS_PORTS: [u16; 2] = [11811, 11812];

/// When things happened, in seconds from a common origin, and what the readers received.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Timeline {
    /// The first reader's samples: (arrival, number).
    pub first_reader: Vec<(f64, u64)>,
    /// The late reader's samples.
    pub late_reader: Vec<(f64, u64)>,
    /// The kill.
    pub kill: f64,
    /// The late reader's start.
    pub late_start: f64,
    /// The restart.
    pub restart: f64,
    /// The end of the observation.
    pub end: f64,
    /// The writer's rate, samples/s.
    pub rate: f64,
}

/// The cell's figures from a [`Timeline`]:
/// - `outage_flow_pct`: samples the first reader got between kill and restart, as a share of
///   what the writer wrote meanwhile (at most 100);
/// - `gap_ms`: the longest silence of the first reader from half a second before the kill to
///   the end (to the end when it never received again);
/// - `lost`: numbers missing between the first reader's first and last sample;
/// - `late_join_ms`: the late reader's first sample after its start (absent: never);
/// - `recovered_ms`: after the restart, when both readers were receiving: 0 when neither
///   needed the restart (the first reader never stopped and the late one had joined before);
///   absent when one of them never received after it.
pub(crate) fn analyse(t: &Timeline) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let period = 1.0 / t.rate.max(1.0);
    let in_outage = t
        .first_reader
        .iter()
        .filter(|(at, _)| (t.kill..t.restart).contains(at))
        .count() as f64;
    let expected = (t.restart - t.kill) * t.rate;
    if expected > 0.0 {
        m.insert(
            "outage_flow_pct".into(),
            (100.0 * in_outage / expected).min(100.0),
        );
    }
    let from = t.kill - 0.5;
    let mut last = t
        .first_reader
        .iter()
        .rev()
        .find(|(at, _)| *at <= from)
        .map_or(from, |(at, _)| *at);
    let mut gap: f64 = 0.0;
    for &(at, _) in t.first_reader.iter().filter(|(at, _)| *at > from) {
        gap = gap.max(at - last);
        last = at;
    }
    gap = gap.max(t.end - last);
    m.insert("gap_ms".into(), gap * 1e3);
    if let (Some(lo), Some(hi)) = (
        t.first_reader.iter().map(|x| x.1).min(),
        t.first_reader.iter().map(|x| x.1).max(),
    ) {
        let mut seen: Vec<u64> = t.first_reader.iter().map(|x| x.1).collect();
        seen.sort_unstable();
        seen.dedup();
        m.insert("lost".into(), (hi - lo + 1 - seen.len() as u64) as f64);
    }
    if let Some(&(at, _)) = t.late_reader.first() {
        m.insert("late_join_ms".into(), (at - t.late_start).max(0.0) * 1e3);
    }
    // The first reader needed the restart when it was silent over it (ten periods, at least
    // 50 ms: scheduling noise is not an outage).
    let quiet = (10.0 * period).max(0.05);
    let flowing_at_restart = t
        .first_reader
        .iter()
        .any(|(at, _)| (t.restart - quiet..=t.restart).contains(at));
    let first_back = if flowing_at_restart {
        Some(t.restart)
    } else {
        t.first_reader
            .iter()
            .find(|(at, _)| *at >= t.restart)
            .map(|x| x.0)
    };
    let late_back = t.late_reader.first().map(|x| x.0.max(t.restart));
    if let (Some(a), Some(b)) = (first_back, late_back) {
        m.insert("recovered_ms".into(), (a.max(b) - t.restart) * 1e3);
    }
    m
}

/// The `rx N` lines of a stream reader as (seconds since `origin`, N).
fn received(w: &Worker, origin: Instant) -> Vec<(f64, u64)> {
    let base = w
        .proc
        .started()
        .checked_duration_since(origin)
        .map_or(0.0, |d| d.as_secs_f64());
    w.proc
        .lines()
        .into_iter()
        .filter_map(|(at, l)| {
            let n = l.strip_prefix("rx ")?.trim().parse().ok()?;
            Some((base + at, n))
        })
        .collect()
}

/// The shared part of the architecture, which the experiment kills and restarts.
enum Shared<'c, 'a> {
    None,
    Servers {
        /// Running servers by id (`None` while killed).
        running: Vec<Option<Worker>>,
        killed: Vec<Worker>,
        /// `ROS_DISCOVERY_SERVER` / `--link` value naming every server.
        list: String,
    },
    Nodes(Nodes<'c, 'a>),
}

impl Ctx<'_> {
    /// Starts discovery server `id` (a BACKUP server: what it knew survives a restart, from
    /// `backup`), linked to the others of `list` when there are several.
    fn failure_server(
        &self,
        topo: &Topology,
        id: usize,
        list: &str,
        servers: usize,
        backup: &Path,
    ) -> anyhow::Result<Worker> {
        let mut extra = vec!["--backup-file".into(), backup.into()];
        if servers > 1 {
            extra.extend(["--link".into(), list.into()]);
        }
        let spec = ServerSpec {
            id,
            port: DS_PORTS[id],
            extra,
        };
        self.discovery_server_as(topo, Implementation::Tessera, &spec, 10.0)
            .map(|(w, _)| w)
    }

    /// A stream worker (`stream-writer` or `stream-reader`) on `host` in the architecture.
    fn stream_worker(
        &self,
        topo: &Topology,
        host: usize,
        args: &[String],
        role: &str,
        shared: &Shared<'_, '_>,
    ) -> anyhow::Result<Worker> {
        let mut cmd = topo.command(host, &self.opts.bench_exe);
        cmd.arg("worker").args(args);
        match shared {
            Shared::None => {}
            Shared::Servers { list, .. } => {
                cmd.env("ROS_DISCOVERY_SERVER", list);
            }
            Shared::Nodes(_) => Nodes::attach(&mut cmd),
        }
        Self::spawn_worker(cmd, role, Implementation::Tessera, Capture::Lines)
    }

    pub(super) fn failure(
        &self,
        topo: &Topology,
        exp: &Experiment,
        p: &Planned,
        seq: usize,
        point: &mut Point,
    ) -> anyhow::Result<()> {
        let arch = param_str(&p.params, "architecture", "decentralized").to_string();
        let rate = param_u64(&p.params, "rate", 500).max(1);
        let size = param_u64(&p.params, "size", 64);
        let outage = secs(exp.setting("duration_s", 2.5));
        let reader_host = Self::reader_host(topo, 0);
        let mut shared = match arch.as_str() {
            "centralized" | "centralized-redundant" => {
                let n = if arch == "centralized" { 1 } else { 2 };
                let addr = topo.hosts()[0].addr;
                let list = (0..n)
                    .map(|i| format!("{addr}:{}", DS_PORTS[i]))
                    .collect::<Vec<_>>()
                    .join(";");
                let mut running = Vec::new();
                for id in 0..n {
                    let backup = self
                        .log_path(seq, &exp.name, p.pair, &format!("server{id}"))
                        .with_extension("backup");
                    running.push(Some(self.failure_server(topo, id, &list, n, &backup)?));
                }
                Shared::Servers {
                    running,
                    killed: Vec::new(),
                    list,
                }
            }
            "federated" => {
                let mut nodes = Nodes::new(self);
                nodes.start(topo, 1)?;
                nodes.detach();
                Shared::Nodes(nodes)
            }
            _ => Shared::None,
        };
        let reader_args = strings(&["stream-reader"]);
        let mut first = self.stream_worker(topo, reader_host, &reader_args, "reader", &shared)?;
        let writer_args = strings(&[
            "stream-writer",
            "--rate",
            &rate.to_string(),
            "--size",
            &size.to_string(),
        ]);
        let mut writer = self.stream_worker(topo, 0, &writer_args, "writer", &shared)?;
        let origin = Instant::now();
        while received(&first, origin).is_empty() {
            if origin.elapsed() > FIRST_SAMPLE_TIMEOUT {
                anyhow::bail!(
                    "the reader got nothing in {} s: writer: {} | reader: {}",
                    FIRST_SAMPLE_TIMEOUT.as_secs(),
                    tail(&writer.proc.output()),
                    tail(&first.proc.output())
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(STEADY);
        let kill = origin.elapsed().as_secs_f64();
        match &mut shared {
            Shared::None => {}
            Shared::Servers {
                running, killed, ..
            } => {
                if let Some(mut s) = running[0].take() {
                    s.proc.kill();
                    killed.push(s);
                }
            }
            Shared::Nodes(nodes) => {
                nodes.kill(0);
            }
        }
        std::thread::sleep(LATE_READER_AFTER);
        let late_start = origin.elapsed().as_secs_f64();
        let mut late =
            self.stream_worker(topo, reader_host, &reader_args, "late-reader", &shared)?;
        let restart_at = Duration::from_secs_f64(kill) + outage;
        if let Some(wait) = restart_at.checked_sub(origin.elapsed()) {
            std::thread::sleep(wait);
        }
        let restart = origin.elapsed().as_secs_f64();
        match &mut shared {
            Shared::None => {}
            Shared::Servers { running, list, .. } => {
                let n = running.len();
                let backup = self
                    .log_path(seq, &exp.name, p.pair, "server0")
                    .with_extension("backup");
                running[0] = Some(self.failure_server(topo, 0, list, n, &backup)?);
            }
            Shared::Nodes(nodes) => nodes.restart(topo, 0)?,
        }
        std::thread::sleep(AFTER_RESTART);
        let end = origin.elapsed().as_secs_f64();
        let timeline = Timeline {
            first_reader: received(&first, origin),
            late_reader: received(&late, origin),
            kill,
            late_start,
            restart,
            end,
            rate: rate as f64,
        };
        for w in [&mut writer, &mut first, &mut late] {
            w.stop();
        }
        let mut infra: Vec<Worker> = match shared {
            Shared::None => Vec::new(),
            Shared::Servers {
                running,
                mut killed,
                ..
            } => {
                let mut all: Vec<Worker> = running.into_iter().flatten().collect();
                for w in &mut all {
                    w.stop();
                }
                all.append(&mut killed);
                all
            }
            Shared::Nodes(nodes) => nodes.stop(),
        };
        for w in [&writer, &first, &late].into_iter().chain(infra.iter()) {
            let _ = std::fs::write(
                self.log_path(seq, &exp.name, p.pair, w.proc.role()),
                w.proc.output(),
            );
        }
        infra.iter_mut().for_each(|w| w.proc.kill());
        let mut all: Vec<&Worker> = vec![&writer, &first, &late];
        all.extend(infra.iter());
        point.procs = collect_stats(&all);
        point.metrics.extend(analyse(&timeline));
        // The first reader's rate in 100 ms bins, for a look at the outage.
        let mut bins: BTreeMap<u64, f64> = BTreeMap::new();
        for (at, _) in &timeline.first_reader {
            if *at >= kill - 1.0 {
                *bins.entry(((at - kill + 1.0) * 10.0) as u64).or_default() += 10.0;
            }
        }
        point.series.insert(
            "first_reader_rate".into(),
            bins.into_iter()
                .map(|(b, r)| [b as f64 / 10.0 - 1.0, r])
                .collect(),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader receiving at `rate` from `from` to `to` (numbers from the time).
    fn flow(from: f64, to: f64, rate: f64) -> Vec<(f64, u64)> {
        let mut v = Vec::new();
        let mut t = from;
        while t < to {
            v.push((t, (t * rate).round() as u64));
            t += 1.0 / rate;
        }
        v
    }

    fn base() -> Timeline {
        Timeline {
            kill: 3.0,
            late_start: 3.5,
            restart: 5.5,
            end: 9.5,
            rate: 100.0,
            ..Timeline::default()
        }
    }

    #[test]
    fn a_flow_that_never_stops_and_a_late_reader_that_joins_at_once() {
        let mut t = base();
        t.first_reader = flow(1.0, 9.5, 100.0);
        t.late_reader = flow(3.54, 9.5, 100.0);
        let m = analyse(&t);
        assert!(m["outage_flow_pct"] > 99.0, "{m:?}");
        assert!(m["gap_ms"] < 11.0, "{m:?}");
        assert_eq!(m["lost"], 0.0);
        assert!((m["late_join_ms"] - 40.0).abs() < 1.0, "{m:?}");
        assert_eq!(m["recovered_ms"], 0.0);
    }

    #[test]
    fn a_flow_cut_by_the_outage_and_back_after_the_restart() {
        let mut t = base();
        // Stops at the kill, resumes 300 ms after the restart; the numbers written meanwhile
        // are lost (volatile).
        t.first_reader = flow(1.0, 3.0, 100.0);
        t.first_reader.extend(flow(5.8, 9.5, 100.0));
        t.late_reader = flow(5.9, 9.5, 100.0);
        let m = analyse(&t);
        assert_eq!(m["outage_flow_pct"], 0.0);
        assert!((m["gap_ms"] - 2800.0).abs() < 11.0, "{m:?}");
        assert!((m["lost"] - 280.0).abs() <= 1.0, "{m:?}");
        assert!((m["late_join_ms"] - 2400.0).abs() < 1.0, "{m:?}");
        assert!((m["recovered_ms"] - 400.0).abs() < 1.0, "{m:?}");
    }

    #[test]
    fn a_reader_that_never_receives_has_no_join_or_recovery_time() {
        let mut t = base();
        t.first_reader = flow(1.0, 3.0, 100.0);
        let m = analyse(&t);
        assert!(!m.contains_key("late_join_ms") && !m.contains_key("recovered_ms"));
        // Silent from the kill to the end.
        assert!((m["gap_ms"] - 6500.0).abs() < 11.0, "{m:?}");
    }

    #[test]
    fn a_late_reader_served_before_the_restart_needs_no_recovery() {
        // Redundant servers: the late reader joins through the surviving one.
        let mut t = base();
        t.first_reader = flow(1.0, 9.5, 100.0);
        t.late_reader = flow(3.7, 9.5, 100.0);
        let m = analyse(&t);
        assert_eq!(m["recovered_ms"], 0.0);
        assert!((m["late_join_ms"] - 200.0).abs() < 1.0, "{m:?}");
    }
}
