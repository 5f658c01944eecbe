//! A synthetic result set with every kind of experiment, shaped like real runs (latency growing
//! with payload, throughput falling, a knee under load, discovery growing with participants), for
//! the tests and the sample report.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::results::{
    BoxPlot, Environment, Implementation, Kind, LatencyStats, Pair, Point, ProcStats, ResultSet,
    ThroughputStats,
};

/// Deterministic noise in [-1, 1).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
    /// `v` scaled by up to ±`rel`.
    fn jitter(&mut self, v: f64, rel: f64) -> f64 {
        v * (1.0 + rel * self.next())
    }
}

fn params(kv: &[(&str, Value)]) -> BTreeMap<String, Value> {
    kv.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn pair(l: &str) -> Pair {
    Pair::from_label(l).expect("known pair label")
}

/// How much slower than Tessera each pair is in the synthetic data.
fn factor(label: &str) -> f64 {
    match label {
        "tessera" => 1.0,
        "cyclone" => 1.15,
        "tessera>cyclone" => 1.08,
        "cyclone>tessera" => 1.1,
        "udp" => 0.45,
        _ => 1.0,
    }
}

fn procs(n: &mut Noise, label: &str, cpu: f64) -> Vec<ProcStats> {
    let p = pair(label);
    [("ping", p.writer), ("pong", p.reader)]
        .iter()
        .map(|(role, imp)| ProcStats {
            role: role.to_string(),
            implementation: *imp,
            cpu_user_s: n.jitter(cpu / 100.0 * 6.0, 0.1),
            cpu_sys_s: n.jitter(cpu / 100.0 * 4.0, 0.1),
            cpu_pct: n.jitter(cpu, 0.1),
            peak_rss_kib: if *imp == Implementation::Cyclone {
                9_800
            } else {
                6_400
            },
            voluntary_ctxt: 120_000,
            involuntary_ctxt: 300,
        })
        .collect()
}

fn latency_point(
    n: &mut Noise,
    exp: &str,
    label: &str,
    size: u64,
    extra: &[(&str, Value)],
    round: u32,
) -> Point {
    let mut kv = vec![
        ("size", Value::from(size)),
        ("subscribers", Value::from(1)),
        ("hosts", Value::from(1)),
    ];
    kv.extend(extra.iter().cloned());
    if !extra.iter().any(|(k, _)| *k == "reliability") {
        kv.push(("reliability", Value::from("reliable")));
    }
    if !extra.iter().any(|(k, _)| *k == "read_mode") {
        kv.push(("read_mode", Value::from("listener")));
    }
    let mut p = Point::new(exp, Kind::Latency, pair(label), params(&kv), round);
    let f = factor(label);
    let p50 = n.jitter(f * (26.0 + 0.0035 * size as f64), 0.03);
    let sd = n.jitter(f * (3.0 + 0.0002 * size as f64), 0.1);
    let hdr = pair(label).writer != Implementation::Cyclone;
    p.latency = Some(LatencyStats {
        count: 10_000,
        mean_us: p50 * 1.05,
        stddev_us: hdr.then_some(sd),
        min_us: p50 * 0.7,
        p50_us: p50,
        p90_us: p50 * 1.25,
        p99_us: p50 * 1.8,
        p999_us: hdr.then_some(p50 * 2.6),
        max_us: p50 * 6.0,
        boxplot: hdr.then_some(BoxPlot {
            p1: p50 * 0.78,
            p25: p50 * 0.93,
            p50,
            p75: p50 * 1.09,
            p99: p50 * 1.8,
        }),
        source: if hdr { "hdr" } else { "intervals" }.to_string(),
    });
    p.procs = procs(n, label, 35.0);
    p.wall_s = 12.0;
    p
}

fn throughput_point(
    n: &mut Noise,
    label: &str,
    size: u64,
    subs: u64,
    round: u32,
    multicast: bool,
) -> Point {
    let kv = [
        ("size", Value::from(size)),
        ("subscribers", Value::from(subs)),
        ("reliability", Value::from("reliable")),
        ("history", Value::from("keep_all")),
        ("read_mode", Value::from("listener")),
        ("instances", Value::from(1)),
        ("rate", Value::from(0)),
        ("multicast", Value::from(multicast)),
    ];
    let mut p = Point::new(
        "throughput",
        Kind::Throughput,
        pair(label),
        params(&kv),
        round,
    );
    // Samples/s summed over subscribers falls with payload and fans out with subscribers.
    let per_sub = 400_000.0 / (1.0 + size as f64 / 900.0) / factor(label);
    let total = n.jitter(per_sub * (subs as f64).sqrt(), 0.04);
    p.throughput = Some(ThroughputStats {
        samples_per_s: total,
        mbit_per_s: total * size as f64 * 8.0 / 1e6,
        per_subscriber: vec![total / subs as f64; subs as usize],
        received: (total * 10.0) as u64,
        lost: 0,
        duplicates: None,
        boxplot: Some(BoxPlot {
            p1: total * 0.82,
            p25: total * 0.95,
            p50: total,
            p75: total * 1.03,
            p99: total * 1.08,
        }),
        offered_per_s: None,
    });
    p.procs = procs(n, label, 90.0);
    p.wall_s = 15.0;
    p
}

fn rate_step_point(
    n: &mut Noise,
    exp: &str,
    label: &str,
    kv: &[(&str, Value)],
    round: u32,
    cap: f64,
) -> Point {
    let mut p = Point::new(exp, Kind::RateStep, pair(label), params(kv), round);
    let max = n.jitter(cap / factor(label), 0.02);
    let knee = (max * 0.8 / 10_000.0).floor() * 10_000.0;
    let mut steps = Vec::new();
    let mut p50s = Vec::new();
    let mut p99s = Vec::new();
    let mut cpus = Vec::new();
    let mut offered = 10_000.0;
    while offered <= cap * 1.3 {
        let received = if offered <= max {
            offered
        } else {
            max * n.jitter(0.98, 0.01)
        };
        let load = (offered / max).min(1.2);
        let base = 30.0 * factor(label);
        let p50 = base
            * (1.0
                + if offered > knee {
                    6.0 * (load - knee / max).powi(2) * 10.0
                } else {
                    0.3 * load
                });
        steps.push([offered, received]);
        p50s.push([offered, n.jitter(p50, 0.02)]);
        p99s.push([offered, n.jitter(p50 * 2.2, 0.04)]);
        cpus.push([offered, n.jitter(15.0 + 120.0 * load, 0.03)]);
        offered += 10_000.0;
    }
    p.series.insert("steps".into(), steps);
    p.series.insert("step_p50_us".into(), p50s);
    p.series.insert("step_p99_us".into(), p99s);
    p.series.insert("step_cpu_pct".into(), cpus);
    p.metrics.insert(
        "max_sustainable_rate".into(),
        (max / 10_000.0).floor() * 10_000.0,
    );
    p.metrics.insert("knee_rate".into(), knee);
    p.throughput = Some(ThroughputStats {
        samples_per_s: max,
        mbit_per_s: max * 1024.0 * 8.0 / 1e6,
        ..Default::default()
    });
    p.wall_s = 60.0;
    p
}

/// The synthetic result set.
pub(super) fn result_set() -> ResultSet {
    let mut n = Noise(42);
    let mut rs = ResultSet {
        test_id: "2025-01-15T10-00-00Z-sample".into(),
        scenario_name: "full".into(),
        started: "2025-01-15T10:00:00Z".into(),
        duration_s: 1873.4,
        hosts: 1,
        environment: Environment {
            hostname: "bench-1".into(),
            cpu_model: "AMD EPYC 7B13".into(),
            cores: 2,
            memory_mib: 7_936,
            kernel: "6.1.0-28-amd64".into(),
            os: "Debian GNU/Linux 12 (bookworm)".into(),
            git_revision: Some("97750a9".into()),
            tessera_version: "0.1.0".into(),
            cyclone_version: Some("0.10.2-1".into()),
            ddsperf: Some("/usr/bin/ddsperf (Debian package cyclonedds-tools)".into()),
            rustc: Some("rustc 1.95.0".into()),
            tessera_build: Some("tessera 0.1.0 (profile-guided: scripts/pgo-build)".into()),
            atomic_build: None,
            wakeup: "blocking receive, no busy-poll".into(),
        },
        points: Vec::new(),
        notes: vec![
            "Cyclone DDS runs through ddsperf, which cannot express a polling reader; NASA \
             cases b, e and h ran Cyclone with a waitset."
                .into(),
            "ddsperf reports latency per second only: Cyclone's latency percentiles are \
             interval-weighted, with no stddev and no box plot."
                .into(),
        ],
    };
    let all = [
        "tessera",
        "cyclone",
        "tessera>cyclone",
        "cyclone>tessera",
        "udp",
    ];
    let sizes = [4u64, 16, 64, 256, 1024, 4096, 16384];
    for round in 0..3 {
        for &size in &sizes {
            for label in all {
                rs.points
                    .push(latency_point(&mut n, "latency", label, size, &[], round));
            }
        }
    }
    for round in 0..3 {
        for rel in ["reliable", "best_effort"] {
            for mode in ["listener", "waitset"] {
                for size in [16u64, 1024, 16384] {
                    for label in ["tessera", "cyclone"] {
                        let extra = [
                            ("reliability", Value::from(rel)),
                            ("read_mode", Value::from(mode)),
                        ];
                        rs.points.push(latency_point(
                            &mut n,
                            "latency_modes",
                            label,
                            size,
                            &extra,
                            round,
                        ));
                    }
                }
            }
        }
    }
    for round in 0..3 {
        for subs in [4u64, 8, 12] {
            for size in [16u64, 256, 4096, 16384] {
                for label in ["tessera", "cyclone", "udp"] {
                    rs.points
                        .push(throughput_point(&mut n, label, size, subs, round, false));
                }
            }
        }
    }
    for round in 0..2 {
        for label in ["tessera", "cyclone"] {
            let kv = [
                ("size", Value::from(1024)),
                ("subscribers", Value::from(1)),
                ("reliability", Value::from("reliable")),
                ("read_mode", Value::from("listener")),
            ];
            rs.points.push(rate_step_point(
                &mut n,
                "rate_step",
                label,
                &kv,
                round,
                150_000.0,
            ));
        }
    }
    let cases = [
        ("a", 1, "reliable", "listener"),
        ("b", 1, "reliable", "polling"),
        ("c", 1, "reliable", "waitset"),
        ("d", 1, "best_effort", "listener"),
        ("e", 1, "best_effort", "polling"),
        ("f", 1, "best_effort", "waitset"),
        ("g", 70_000, "reliable", "listener"),
        ("h", 70_000, "reliable", "polling"),
        ("i", 70_000, "best_effort", "waitset"),
    ];
    for (case, inst, rel, mode) in cases {
        for label in ["tessera", "cyclone"] {
            let kv = [
                ("case", Value::from(case)),
                ("instances", Value::from(inst)),
                ("reliability", Value::from(rel)),
                ("read_mode", Value::from(mode)),
                ("size", Value::from(256)),
            ];
            let cap = if inst > 1 { 60_000.0 } else { 140_000.0 }
                * if rel == "best_effort" { 1.2 } else { 1.0 };
            let mut p = rate_step_point(&mut n, "nasa", label, &kv, 0, cap);
            p.series.clear();
            rs.points.push(p);
        }
    }
    for round in 0..3 {
        for parts in [2u64, 4, 8, 16, 32] {
            for label in ["tessera", "cyclone"] {
                let mut p = Point::new(
                    "discovery",
                    Kind::Discovery,
                    pair(label),
                    params(&[("participants", Value::from(parts))]),
                    round,
                );
                if label == "cyclone" && parts == 32 && round == 2 {
                    p.ok = false;
                    p.error = Some("ddsperf exited with status 1, \"no peers\"".into());
                } else {
                    let ms = n.jitter(factor(label) * (40.0 + 9.0 * parts as f64), 0.05);
                    p.metrics.insert("discovery_ms".into(), ms);
                    p.metrics.insert("discovery_median_ms".into(), ms * 0.6);
                }
                rs.points.push(p);
            }
        }
    }
    for round in 0..3 {
        for samples in [100u64, 10_000] {
            for label in ["tessera", "cyclone"] {
                let mut p = Point::new(
                    "late_joiner",
                    Kind::LateJoiner,
                    pair(label),
                    params(&[
                        ("samples", Value::from(samples)),
                        ("size", Value::from(1024)),
                    ]),
                    round,
                );
                let f = factor(label);
                p.metrics
                    .insert("first_sample_ms".into(), n.jitter(f * 18.0, 0.1));
                p.metrics.insert(
                    "all_samples_ms".into(),
                    n.jitter(f * (20.0 + samples as f64 * 0.02), 0.1),
                );
                rs.points.push(p);
            }
        }
    }
    for round in 0..2 {
        for phase in ["alone", "steady", "bursty"] {
            for label in ["tessera", "cyclone"] {
                let kv = [
                    ("phase", Value::from(phase)),
                    ("rate", Value::from(60_000)),
                    ("size", Value::from(128)),
                    ("link_mbit", Value::from(1000)),
                ];
                let mut p = Point::new(
                    "reliability",
                    Kind::Reliability,
                    pair(label),
                    params(&kv),
                    round,
                );
                let f = factor(label);
                let mut series = Vec::new();
                let mut t = 0.0;
                while t <= 12.0 {
                    let dip = match phase {
                        "alone" => 1.0,
                        "steady" => 0.93 / f,
                        _ => {
                            if (t % 3.0) >= 2.0 {
                                0.55 / f
                            } else {
                                1.0
                            }
                        }
                    };
                    let v = if t < 0.25 || t > 10.0 + (f - 1.0) * 6.0 {
                        0.0
                    } else {
                        60_000.0 * dip
                    };
                    series.push([t, n.jitter(v, 0.02)]);
                    t += 0.25;
                }
                p.series.insert("critical_rate".into(), series);
                let extra = match phase {
                    "alone" => 0.0,
                    "steady" => 0.6,
                    _ => 1.8,
                };
                p.metrics
                    .insert("completion_s".into(), n.jitter(10.0 + extra * f, 0.01));
                p.metrics
                    .insert("retransmits".into(), (extra * 40.0 * f).round());
                p.metrics.insert("critical_loss".into(), 0.0);
                rs.points.push(p);
            }
        }
    }
    rs
}
