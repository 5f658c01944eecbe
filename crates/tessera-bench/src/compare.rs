//! `tessera bench compare A B`: the differences between two result directories.
//!
//! Cells are matched by [`Point::cell_key`](super::results::Point::cell_key) (experiment, pair,
//! parameters); each matched cell gives one [`Row`] per headline metric of its kind
//! ([`headline_metrics`]), comparing the medians over rounds. Cells present on one side only
//! give one row each, flagged `"only in A"` / `"only in B"`, which [`render`] lists on a line
//! of their own.

use std::path::{Path, PathBuf};

use thiserror::Error;

use super::results::{value_text, Cell, Kind, ResultSet};

/// Why a result directory could not be read.
#[derive(Debug, Error)]
pub enum CompareError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file is not a result set.
    #[error("{path} is not a tessera bench results.json: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
}

/// Reads `dir/results.json` (or `dir` itself when it is a file).
pub fn load(dir: &Path) -> Result<ResultSet, CompareError> {
    let path = if dir.is_file() {
        dir.to_path_buf()
    } else {
        dir.join("results.json")
    };
    let text = std::fs::read_to_string(&path).map_err(|source| CompareError::Io {
        path: path.clone(),
        source,
    })?;
    serde_json::from_str(&text).map_err(|source| CompareError::Json { path, source })
}

/// One compared metric of one cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Experiment name.
    pub experiment: String,
    /// Pair label.
    pub pair: String,
    /// Parameters as `k=v,k=v`.
    pub params: String,
    /// Metric name (empty for a cell on one side only).
    pub metric: String,
    /// Median value in A (NaN when only in B).
    pub a: f64,
    /// Median value in B (NaN when only in A).
    pub b: f64,
    /// `(b - a) / a` in percent; ±∞ when `a` is 0 and `b` is not; NaN for a one-sided cell.
    pub change_pct: f64,
    /// `"better"` / `"worse"` when |change| exceeds the threshold (in the metric's good
    /// direction or not); `"only in A"` / `"only in B"` for a cell on one side only.
    pub flag: Option<&'static str>,
}

/// Flag of a cell found only in A.
pub const ONLY_IN_A: &str = "only in A";
/// Flag of a cell found only in B.
pub const ONLY_IN_B: &str = "only in B";

/// The headline metrics of a kind, each with `true` when lower is better.
pub fn headline_metrics(kind: Kind) -> &'static [(&'static str, bool)] {
    match kind {
        Kind::Latency => &[("p50_us", true), ("stddev_us", true)],
        Kind::Throughput => &[("samples_per_s", false)],
        Kind::RateStep => &[("max_sustainable_rate", false)],
        Kind::Discovery => &[("discovery_ms", true)],
        Kind::LateJoiner => &[("first_sample_ms", true)],
        Kind::Reliability => &[("completion_s", true)],
        Kind::Failure => &[("gap_ms", true), ("recovered_ms", true)],
    }
}

/// The cells of a result set with their keys ([`Point::cell_key`](super::results::Point::cell_key)).
/// [`ResultSet::cells`] lists cells in the order their keys first appear among the points.
pub(crate) fn keyed_cells(rs: &ResultSet) -> Vec<(String, Cell<'_>)> {
    let mut keys: Vec<String> = Vec::new();
    for p in &rs.points {
        let k = p.cell_key();
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter().zip(rs.cells()).collect()
}

/// Parameters as `k=v,k=v`.
pub(crate) fn params_text(c: &Cell<'_>) -> String {
    c.params
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect::<Vec<_>>()
        .join(",")
}

/// `(b - a) / a` in percent, with 0 → 0 and x / 0 → ±∞.
pub(crate) fn change_pct(a: f64, b: f64) -> f64 {
    if a == 0.0 {
        if b == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(b)
        }
    } else {
        (b - a) / a.abs() * 100.0
    }
}

/// The better/worse flag of a change beyond the threshold.
fn flag(change: f64, lower_is_better: bool, threshold_pct: f64) -> Option<&'static str> {
    if change.is_nan() || change.abs() <= threshold_pct {
        return None;
    }
    Some(if (change < 0.0) == lower_is_better {
        "better"
    } else {
        "worse"
    })
}

/// A row for a cell found on one side only.
fn one_sided(c: &Cell<'_>, flag: &'static str) -> Row {
    Row {
        experiment: c.experiment.to_string(),
        pair: c.pair.to_string(),
        params: params_text(c),
        metric: String::new(),
        a: f64::NAN,
        b: f64::NAN,
        change_pct: f64::NAN,
        flag: Some(flag),
    }
}

/// Compares B against A: one row per headline metric of every matched cell that has the metric
/// on both sides (in A's order), then one row per cell found on one side only. Changes beyond
/// `threshold_pct` (in percent) are flagged.
pub fn compare(a: &ResultSet, b: &ResultSet, threshold_pct: f64) -> Vec<Row> {
    let (ca, cb) = (keyed_cells(a), keyed_cells(b));
    let find = |cells: &[(String, Cell<'_>)], key: &str| cells.iter().position(|(k, _)| k == key);
    let mut rows = Vec::new();
    for (key, x) in &ca {
        let Some(j) = find(&cb, key) else {
            continue;
        };
        let y = &cb[j].1;
        for &(metric, lower) in headline_metrics(x.kind) {
            let (Some(va), Some(vb)) = (x.median(metric), y.median(metric)) else {
                continue;
            };
            let change = change_pct(va, vb);
            rows.push(Row {
                experiment: x.experiment.to_string(),
                pair: x.pair.to_string(),
                params: params_text(x),
                metric: metric.to_string(),
                a: va,
                b: vb,
                change_pct: change,
                flag: flag(change, lower, threshold_pct),
            });
        }
    }
    let only = |from: &[(String, Cell<'_>)], other: &[(String, Cell<'_>)], f| {
        from.iter()
            .filter(|(k, _)| find(other, k).is_none())
            .map(|(_, c)| one_sided(c, f))
            .collect::<Vec<_>>()
    };
    rows.extend(only(&ca, &cb, ONLY_IN_A));
    rows.extend(only(&cb, &ca, ONLY_IN_B));
    rows
}

/// A value for the table: `-` when not finite, fewer decimals as it grows.
fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        "-".to_string()
    } else if v.abs() >= 1000.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// A change in percent with its sign.
fn fmt_change(c: f64) -> String {
    if c.is_nan() {
        "-".to_string()
    } else if c.is_infinite() {
        if c > 0.0 { "+inf" } else { "-inf" }.to_string()
    } else {
        format!("{c:+.1}%")
    }
}

/// Renders the rows as an aligned text table (text columns left-aligned, numbers right-aligned),
/// followed by one line per side listing the cells found only there.
pub fn render(rows: &[Row], a_name: &str, b_name: &str) -> String {
    let header = [
        "experiment",
        "pair",
        "params",
        "metric",
        a_name,
        b_name,
        "change",
        "",
    ];
    let mut table: Vec<[String; 8]> = vec![header.map(str::to_string)];
    for r in rows.iter().filter(|r| !is_one_sided(r)) {
        table.push([
            r.experiment.clone(),
            r.pair.clone(),
            r.params.clone(),
            r.metric.clone(),
            fmt_num(r.a),
            fmt_num(r.b),
            fmt_change(r.change_pct),
            r.flag.unwrap_or("").to_string(),
        ]);
    }
    let mut width = [0usize; 8];
    for line in &table {
        for (w, cell) in width.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    if table.len() == 1 {
        out.push_str("no cells in common\n");
    } else {
        for line in &table {
            let cols: Vec<String> = line
                .iter()
                .zip(width)
                .enumerate()
                .map(|(i, (cell, w))| {
                    let pad = w - cell.chars().count();
                    if (4..=6).contains(&i) {
                        format!("{}{cell}", " ".repeat(pad))
                    } else {
                        format!("{cell}{}", " ".repeat(pad))
                    }
                })
                .collect();
            out.push_str(cols.join("  ").trim_end());
            out.push('\n');
        }
    }
    for (f, name) in [(ONLY_IN_A, a_name), (ONLY_IN_B, b_name)] {
        let cells: Vec<String> = rows
            .iter()
            .filter(|r| r.flag == Some(f))
            .map(|r| {
                format!("{} {} {}", r.experiment, r.pair, r.params)
                    .trim_end()
                    .to_string()
            })
            .collect();
        if !cells.is_empty() {
            out.push_str(&format!("only in {name}: {}\n", cells.join("; ")));
        }
    }
    out
}

/// True for a row of a cell found on one side only.
fn is_one_sided(r: &Row) -> bool {
    matches!(r.flag, Some(ONLY_IN_A) | Some(ONLY_IN_B))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;
    use crate::results::{Implementation, LatencyStats, Pair, Point, ThroughputStats};

    const T: Pair = Pair {
        writer: Implementation::Tessera,
        reader: Implementation::Tessera,
    };
    const C: Pair = Pair {
        writer: Implementation::Cyclone,
        reader: Implementation::Cyclone,
    };

    fn params(size: i64) -> BTreeMap<String, Value> {
        BTreeMap::from([("size".to_string(), Value::from(size))])
    }

    fn lat(pair: Pair, size: i64, p50: f64, sd: Option<f64>) -> Point {
        let mut p = Point::new("lat", Kind::Latency, pair, params(size), 0);
        p.latency = Some(LatencyStats {
            p50_us: p50,
            stddev_us: sd,
            ..Default::default()
        });
        p
    }

    fn tput(pair: Pair, rate: f64) -> Point {
        let mut p = Point::new("tput", Kind::Throughput, pair, params(1024), 0);
        p.throughput = Some(ThroughputStats {
            samples_per_s: rate,
            ..Default::default()
        });
        p
    }

    fn metric(exp: &str, kind: Kind, name: &str, v: f64) -> Point {
        let mut p = Point::new(exp, kind, T, BTreeMap::new(), 0);
        p.metrics.insert(name.to_string(), v);
        p
    }

    fn sets() -> (ResultSet, ResultSet) {
        let a = ResultSet {
            points: vec![
                lat(T, 16, 50.0, Some(5.0)),
                lat(C, 16, 60.0, None),
                tput(T, 100_000.0),
                metric("disc", Kind::Discovery, "discovery_ms", 0.0),
                metric("rs", Kind::RateStep, "max_sustainable_rate", 50_000.0),
                lat(T, 4096, 80.0, None),
            ],
            ..Default::default()
        };
        let b = ResultSet {
            points: vec![
                tput(T, 90_000.0),
                lat(T, 16, 40.0, Some(5.2)),
                lat(C, 16, 61.0, Some(3.0)),
                metric("disc", Kind::Discovery, "discovery_ms", 12.0),
                metric("rs", Kind::RateStep, "max_sustainable_rate", 60_000.0),
                metric("late", Kind::LateJoiner, "first_sample_ms", 3.0),
            ],
            ..Default::default()
        };
        (a, b)
    }

    fn row<'a>(rows: &'a [Row], pair: &str, metric: &str) -> &'a Row {
        rows.iter()
            .find(|r| r.pair == pair && r.metric == metric)
            .unwrap_or_else(|| panic!("no row {pair} {metric}"))
    }

    #[test]
    fn compares_headline_metrics_per_kind() {
        let (a, b) = sets();
        let rows = compare(&a, &b, 5.0);
        let r = row(&rows, "tessera", "p50_us");
        assert_eq!(
            (r.a, r.b, r.change_pct, r.flag),
            (50.0, 40.0, -20.0, Some("better"))
        );
        assert_eq!(r.params, "size=16");
        let r = row(&rows, "tessera", "stddev_us");
        assert!((r.change_pct - 4.0).abs() < 1e-9 && r.flag.is_none());
        // Cyclone's stddev is missing in A: no row for it, but its p50 is compared.
        assert!(!rows
            .iter()
            .any(|r| r.pair == "cyclone" && r.metric == "stddev_us"));
        assert_eq!(row(&rows, "cyclone", "p50_us").flag, None);
        let r = row(&rows, "tessera", "samples_per_s");
        assert_eq!((r.change_pct, r.flag), (-10.0, Some("worse")));
        let r = row(&rows, "tessera", "max_sustainable_rate");
        assert_eq!((r.change_pct, r.flag), (20.0, Some("better")));
        let r = row(&rows, "tessera", "discovery_ms");
        assert_eq!((r.change_pct, r.flag), (f64::INFINITY, Some("worse")));
        // One-sided cells come last.
        let only: Vec<(&str, Option<&str>)> = rows
            .iter()
            .filter(|r| r.metric.is_empty())
            .map(|r| (r.experiment.as_str(), r.flag))
            .collect();
        assert_eq!(only, [("lat", Some(ONLY_IN_A)), ("late", Some(ONLY_IN_B))]);
        // Identical sets: no flags, all changes zero, nothing one-sided.
        let same = compare(&a, &a, 1.0);
        assert!(same.iter().all(|r| r.flag.is_none() && r.change_pct == 0.0));
    }

    #[test]
    fn renders_an_aligned_table() {
        let (a, b) = sets();
        let text = render(&compare(&a, &b, 5.0), "run-a", "run-b");
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("experiment") && lines[0].contains("run-a"));
        // Numbers are right-aligned: the B column ends at the same place on every table line.
        let end_of_b = lines[0].find("run-b").unwrap() + "run-b".len();
        for l in &lines[1..7] {
            assert_eq!(&l[end_of_b..end_of_b + 2], "  ", "{l}");
            assert_ne!(&l[end_of_b - 1..end_of_b], " ", "{l}");
        }
        assert!(text.contains("-20.0%") && text.contains("better") && text.contains("+inf"));
        assert!(
            text.contains("only in run-a: lat tessera size=4096\n"),
            "{text}"
        );
        assert!(text.contains("only in run-b: late tessera\n"), "{text}");
        assert_eq!(render(&[], "a", "b"), "no cells in common\n");
    }

    #[test]
    fn nan_and_empty_do_not_panic() {
        let (mut a, b) = sets();
        a.points[0].latency.as_mut().unwrap().p50_us = f64::NAN;
        let rows = compare(&a, &b, 5.0);
        let r = row(&rows, "tessera", "p50_us");
        assert!(r.change_pct.is_nan() && r.flag.is_none());
        let _ = render(&rows, "a", "b");
        assert!(compare(&ResultSet::default(), &ResultSet::default(), 5.0).is_empty());
    }

    #[test]
    fn loads_results_json() {
        let dir = std::env::temp_dir().join(format!("tessera-compare-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (a, _) = sets();
        std::fs::write(dir.join("results.json"), serde_json::to_string(&a).unwrap()).unwrap();
        assert_eq!(load(&dir).unwrap(), a);
        assert_eq!(load(&dir.join("results.json")).unwrap(), a);
        std::fs::write(dir.join("results.json"), "{").unwrap();
        assert!(matches!(load(&dir), Err(CompareError::Json { .. })));
        assert!(matches!(
            load(&dir.join("missing")),
            Err(CompareError::Io { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
