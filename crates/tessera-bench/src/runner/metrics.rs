//! A point's figures from its workers' parsed output: latency (doubled back to round trips)
//! and throughput statistics, CPU µs per round trip or delivered sample over the window the
//! measurement lines share, count-mode latency cells and the 1-to-N answers; and the names
//! of the metrics the report reads.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use crate::cpuwin;
use crate::parse::PerfOutput;
use crate::results::{Implementation, LatencyStats, ThroughputStats};
use crate::scenario::Experiment;
use crate::stats::{self, IntervalSummary};

use super::secs;

/// ddsperf (and its twin, and the floor) report half the round trip; the seeds plot the round
/// trip itself, so every latency figure of the benchmark is doubled back.
pub(super) fn round_trip(l: Option<LatencyStats>) -> Option<LatencyStats> {
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
pub(super) fn latency_from_lines(out: &PerfOutput) -> Option<LatencyStats> {
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
pub(super) fn throughput_from_subs(
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
        per_sub.push(crate::results::median_of(&mut rates).unwrap_or(0.0));
        mbit += crate::results::median_of(&mut mb).unwrap_or(0.0);
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
pub(super) fn report_clock_start(
    started: Instant,
    exited: Option<Instant>,
    duration: f64,
) -> Instant {
    exited
        .and_then(|e| e.checked_sub(secs(duration)))
        .filter(|s| *s > started)
        .unwrap_or(started)
}

/// Longest a count-mode pinger may run after its warm-up before it is stopped (-D): the seeds'
/// 10,000 round trips take about a second at 16 B and ten at 64 KiB here.
pub(super) const COUNT_MODE_LIMIT_S: f64 = 60.0;

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
pub(super) fn count_mode(exp: &Experiment, writer: Implementation) -> Option<u64> {
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
pub(super) fn count_reached(count: Option<u64>, out: &PerfOutput) -> anyhow::Result<()> {
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
pub(super) fn answer_metrics(
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
pub(super) fn latency_cpu_from_run_start(
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
pub(super) fn latency_cpu_per_round_trip(
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
pub(super) fn throughput_cpu_per_sample(
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::parse::{LatencyLine, SubLine};

    fn hist(v: &[(u64, u64)]) -> Vec<(u64, u64)> {
        v.to_vec()
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
}
