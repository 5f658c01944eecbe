//! `results.csv`: one row per point (every round, failed ones included), for spreadsheets and
//! pandas. Columns: identity, `param.<name>` (union over all points, sorted), latency,
//! throughput, `metric.<name>` (union, sorted), a CPU/memory summary of the point's processes and
//! its wall time. Empty fields mean "not measured".

use std::collections::BTreeSet;

use crate::results::{value_text, ResultSet};

/// Quotes a field when it holds a comma, a quote or a line break (RFC 4180).
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        String::new()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(num).unwrap_or_default()
}

const LATENCY_COLS: &[&str] = &[
    "lat_count",
    "lat_mean_us",
    "lat_stddev_us",
    "lat_min_us",
    "lat_p50_us",
    "lat_p90_us",
    "lat_p99_us",
    "lat_p999_us",
    "lat_max_us",
    "lat_source",
];

const THROUGHPUT_COLS: &[&str] = &[
    "tput_samples_per_s",
    "tput_mbit_per_s",
    "tput_received",
    "tput_lost",
    "tput_duplicates",
    "tput_offered_per_s",
];

const TAIL_COLS: &[&str] = &[
    "cpu_pct",
    "cpu_s",
    "peak_rss_kib",
    "processes",
    "wall_s",
    "error",
];

/// The CSV text of `rs`.
pub(super) fn results_csv(rs: &ResultSet) -> String {
    let params: BTreeSet<&str> = rs
        .points
        .iter()
        .flat_map(|p| p.params.keys().map(String::as_str))
        .collect();
    let metrics: BTreeSet<&str> = rs
        .points
        .iter()
        .flat_map(|p| p.metrics.keys().map(String::as_str))
        .collect();

    let mut header: Vec<String> = ["test_id", "experiment", "kind", "pair", "round", "ok"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    header.extend(params.iter().map(|p| format!("param.{p}")));
    header.extend(LATENCY_COLS.iter().map(|s| s.to_string()));
    header.extend(THROUGHPUT_COLS.iter().map(|s| s.to_string()));
    header.extend(metrics.iter().map(|m| format!("metric.{m}")));
    header.extend(TAIL_COLS.iter().map(|s| s.to_string()));

    let mut out = String::new();
    out.push_str(
        &header
            .iter()
            .map(|h| field(h))
            .collect::<Vec<_>>()
            .join(","),
    );
    out.push('\n');

    for p in &rs.points {
        let mut row: Vec<String> = vec![
            rs.test_id.clone(),
            p.experiment.clone(),
            p.kind.as_str().to_string(),
            p.pair.clone(),
            p.round.to_string(),
            p.ok.to_string(),
        ];
        for name in &params {
            row.push(p.params.get(*name).map(value_text).unwrap_or_default());
        }
        match &p.latency {
            Some(l) => row.extend([
                l.count.to_string(),
                num(l.mean_us),
                opt(l.stddev_us),
                num(l.min_us),
                num(l.p50_us),
                num(l.p90_us),
                num(l.p99_us),
                opt(l.p999_us),
                num(l.max_us),
                l.source.clone(),
            ]),
            None => row.extend(LATENCY_COLS.iter().map(|_| String::new())),
        }
        match &p.throughput {
            Some(t) => row.extend([
                num(t.samples_per_s),
                num(t.mbit_per_s),
                t.received.to_string(),
                t.lost.to_string(),
                t.duplicates.map(|d| d.to_string()).unwrap_or_default(),
                opt(t.offered_per_s),
            ]),
            None => row.extend(THROUGHPUT_COLS.iter().map(|_| String::new())),
        }
        for name in &metrics {
            row.push(opt(p.metrics.get(*name).copied()));
        }
        if p.procs.is_empty() {
            row.extend([String::new(), String::new(), String::new(), "0".into()]);
        } else {
            let cpu_pct: f64 = p.procs.iter().map(|s| s.cpu_pct).sum();
            let cpu_s: f64 = p.procs.iter().map(|s| s.cpu_user_s + s.cpu_sys_s).sum();
            let rss = p.procs.iter().map(|s| s.peak_rss_kib).max().unwrap_or(0);
            row.extend([
                num(cpu_pct),
                num(cpu_s),
                rss.to_string(),
                p.procs.len().to_string(),
            ]);
        }
        row.push(num(p.wall_s));
        row.push(p.error.clone().unwrap_or_default());
        out.push_str(&row.iter().map(|f| field(f)).collect::<Vec<_>>().join(","));
        out.push('\n');
    }
    out
}
