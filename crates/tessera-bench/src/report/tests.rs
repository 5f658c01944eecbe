//! Report tests: every file, CSV shape, self-contained HTML, degenerate data, and the sample
//! report written to `/tmp/bench-report-sample/` for looking at.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use super::chart::{self, Axis, Figure, Line, Panel, Scale};
use super::figures::style_of;
use super::*;
use crate::results::{Kind, LatencyStats, Pair, Point, ResultSet, ThroughputStats};

fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "tessera-report-test-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// Splits one CSV line into fields (quotes honoured).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            (c, _) => cur.push(c),
        }
    }
    out.push(cur);
    out
}

#[test]
fn write_all_writes_every_file_for_every_kind() {
    let rs = sample::result_set();
    let dir = temp_dir("all");
    let files = write_all(&dir, &rs, "[run]\npreset = \"full\"\n").unwrap();
    for f in [
        "results.json",
        "results.csv",
        "scenario.toml",
        "environment.json",
        "report.md",
        "report.html",
    ] {
        assert!(files.contains(&dir.join(f)), "{f} not reported");
        assert!(dir.join(f).is_file(), "{f} not written");
    }
    for f in &files {
        assert!(f.is_file(), "{} listed but missing", f.display());
    }
    for chart in [
        "latency-latency",
        "latency-jitter",
        "latency-latency-box",
        "latency_modes-latency",
        "throughput-throughput",
        "throughput-bandwidth",
        "throughput-throughput-box",
        "rate_step-load-latency",
        "rate_step-load-received",
        "rate_step-load-cpu",
        "nasa-cases",
        "discovery-discovery",
        "late_joiner-late-joiner",
        "reliability-critical-rate",
    ] {
        let svg = dir.join("charts").join(format!("{chart}.svg"));
        let png = dir.join("charts").join(format!("{chart}.png"));
        assert!(
            files.contains(&svg) && files.contains(&png),
            "{chart} missing"
        );
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG"), "{chart}.png is not a PNG");
    }
    let back: ResultSet =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results.json")).unwrap()).unwrap();
    // (serde_json may round the last bit of a float, so compare the shape.)
    assert_eq!(back.points.len(), rs.points.len());
    assert_eq!(back.test_id, rs.test_id);
    assert_eq!(back.notes, rs.notes);
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("![") && md.contains("(charts/latency-latency.png)"));
    assert!(md.contains("## How measured"));
    assert!(md.contains("\"hdr\"") && md.contains("\"intervals\""));
    assert!(md.contains("- Cyclone DDS runs through ddsperf, which cannot express"));
    assert!(!md.contains("Chart not drawn"), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn csv_has_a_header_and_one_row_per_point() {
    let rs = sample::result_set();
    let text = csv::results_csv(&rs);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), rs.points.len() + 1);
    let header = csv_fields(lines[0]);
    for col in [
        "test_id",
        "experiment",
        "kind",
        "pair",
        "round",
        "ok",
        "param.size",
        "param.case",
        "param.participants",
        "lat_p50_us",
        "tput_samples_per_s",
        "metric.discovery_ms",
        "metric.knee_rate",
        "cpu_pct",
    ] {
        assert!(header.iter().any(|h| h == col), "no column {col}");
    }
    let mut sorted_params: Vec<&String> =
        header.iter().filter(|h| h.starts_with("param.")).collect();
    let before = sorted_params.clone();
    sorted_params.sort();
    assert_eq!(before, sorted_params);
    for l in &lines[1..] {
        assert_eq!(csv_fields(l).len(), header.len(), "{l}");
    }
    // The failed point keeps its quoted error message.
    assert!(text.contains("\"ddsperf exited with status 1, \"\"no peers\"\"\""));
}

#[test]
fn html_is_self_contained_with_inline_svg() {
    let rs = sample::result_set();
    let dir = temp_dir("html");
    write_all(&dir, &rs, "").unwrap();
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<svg"));
    assert!(html.contains("<style>"));
    for external in ["<script", "<link", "<img", "src=", "url("] {
        assert!(!html.contains(external), "found {external}");
    }
    // The headline table comes before the charts.
    assert!(html.find("<table>").unwrap() < html.find("<svg").unwrap());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn terminal_and_markdown_tables_show_medians_and_ratios() {
    let rs = sample::result_set();
    let t = terminal_summary(&rs);
    assert!(t.contains("Tessera/Cyclone"));
    assert!(t.contains("latency (latency)"));
    assert!(t.contains("rate_step (rate_step)"));
    assert!(t.contains("(1 failed)"));
    let md = markdown_tables(&rs);
    assert!(md.contains("| size (B) |"));
    assert!(md.contains("---:|"));
    // Every table row has as many cells as its header.
    for block in md.split("\n\n") {
        let rows: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
        if let Some(h) = rows.first() {
            let n = h.matches(" |").count();
            for r in &rows[2..] {
                assert_eq!(r.matches(" |").count(), n, "{r}");
            }
        }
    }
}

#[test]
fn ratio_is_tessera_over_cyclone_of_round_medians() {
    let mut rs = ResultSet::default();
    let params: BTreeMap<String, Value> = [("size".to_string(), Value::from(16))].into();
    for (label, vals) in [
        ("tessera", [10.0, 30.0, 20.0]),
        ("cyclone", [40.0, 40.0, 50.0]),
    ] {
        for (round, v) in vals.into_iter().enumerate() {
            let mut p = Point::new(
                "lat",
                Kind::Latency,
                Pair::from_label(label).unwrap(),
                params.clone(),
                round as u32,
            );
            p.latency = Some(LatencyStats {
                p50_us: v,
                ..Default::default()
            });
            rs.points.push(p);
        }
    }
    let t = terminal_summary(&rs);
    assert!(t.contains("0.50×"), "{t}");
}

#[test]
fn atomic_is_set_beside_eventual_and_cyclone_with_both_ratios_and_cpu() {
    let mut rs = ResultSet::default();
    let params: BTreeMap<String, Value> = [("size".to_string(), Value::from(16))].into();
    for (label, p50, cpu) in [
        ("cyclone", 40.0, 30.0),
        ("tessera-atomic", 90.0, 70.0),
        ("tessera", 30.0, 20.0),
    ] {
        let mut p = Point::new(
            "lat",
            Kind::Latency,
            Pair::from_label(label).unwrap(),
            params.clone(),
            0,
        );
        p.latency = Some(LatencyStats {
            p50_us: p50,
            ..Default::default()
        });
        p.metrics.insert(crate::runner::CPU_METRIC.into(), cpu);
        rs.points.push(p);
    }
    let md = markdown_tables(&rs);
    let header = md.lines().find(|l| l.starts_with("| Tessera")).expect(&md);
    // EVENTUAL first, ATOMIC next to it, then Cyclone; the ratios follow in that spirit.
    let at = |s: &str| header.find(s).unwrap_or_else(|| panic!("{s}: {header}"));
    assert!(at("| Tessera |") < at("Tessera (ATOMIC)"));
    assert!(at("Tessera (ATOMIC)") < at("Cyclone DDS"));
    assert!(at("Tessera/Cyclone") < at("ATOMIC/EVENTUAL"));
    assert!(at("ATOMIC/EVENTUAL") < at("ATOMIC/Cyclone"));
    let row = md
        .lines()
        .filter(|l| l.starts_with("| "))
        .nth(1)
        .expect(&md);
    // 30/40, 90/30, 90/40; CPU per round trip of each pair in column order.
    assert!(row.contains("| 0.75× | 3.00× | 2.25× |"), "{row}");
    assert!(row.contains("20.0 / 70.0 / 30.0"), "{row}");
    assert!(md.contains("favours the first-named pair"), "{md}");
    // Three pairs in a cell: the ranking puts EVENTUAL first, ATOMIC last.
    let t = terminal_summary(&rs);
    let ranking = &t[t.find("Ranking").unwrap()..];
    assert!(
        ranking.find("Tessera (ATOMIC)") > ranking.find("Cyclone DDS"),
        "{t}"
    );
}

fn degenerate(kind: Kind, f: impl Fn(&mut Point)) -> ResultSet {
    let mut rs = ResultSet::default();
    for (i, size) in [0u64, 16, 16].into_iter().enumerate() {
        let mut p = Point::new(
            "x",
            kind,
            Pair::from_label(if i == 0 { "tessera" } else { "cyclone" }).unwrap(),
            [("size".to_string(), Value::from(size))].into(),
            0,
        );
        f(&mut p);
        rs.points.push(p);
    }
    rs
}

#[test]
fn degenerate_data_never_panics() {
    let nan = f64::NAN;
    let sets = vec![
        ResultSet::default(),
        // One point.
        {
            let mut rs = ResultSet::default();
            let mut p = Point::new(
                "one",
                Kind::Latency,
                Pair::from_label("tessera").unwrap(),
                [("size".to_string(), Value::from(16))].into(),
                0,
            );
            p.latency = Some(LatencyStats {
                p50_us: 20.0,
                ..Default::default()
            });
            rs.points.push(p);
            rs
        },
        // All NaN.
        degenerate(Kind::Latency, |p| {
            p.latency = Some(LatencyStats {
                p50_us: nan,
                stddev_us: Some(nan),
                mean_us: nan,
                ..Default::default()
            })
        }),
        // Zeros on log axes (size 0, latency 0, throughput 0).
        degenerate(Kind::Throughput, |p| {
            p.throughput = Some(ThroughputStats::default())
        }),
        degenerate(Kind::Latency, |p| p.latency = Some(LatencyStats::default())),
        // Empty and single-point series, NaN metrics.
        degenerate(Kind::RateStep, |p| {
            p.series.insert("steps".into(), vec![]);
            p.series.insert("step_p50_us".into(), vec![[nan, nan]]);
            p.series.insert("step_p99_us".into(), vec![[1000.0, 0.0]]);
            p.metrics.insert("knee_rate".into(), nan);
        }),
        degenerate(Kind::Discovery, |p| {
            p.metrics.insert("discovery_ms".into(), 0.0);
        }),
        degenerate(Kind::Reliability, |p| {
            p.series.insert("critical_rate".into(), vec![[0.0, 0.0]]);
        }),
        degenerate(Kind::LateJoiner, |p| {
            p.ok = false;
        }),
    ];
    for (i, rs) in sets.iter().enumerate() {
        let dir = temp_dir(&format!("degenerate{i}"));
        let files = write_all(&dir, rs, "").unwrap();
        assert!(files.len() >= 6);
        let _ = terminal_summary(rs);
        let _ = markdown_tables(rs);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_figure_without_drawable_data_is_skipped() {
    let dir = temp_dir("skip");
    std::fs::create_dir_all(&dir).unwrap();
    let mut panel = Panel::new(
        "",
        Axis::new("payload (bytes)", Scale::Log2),
        Axis::new("latency (µs)", Scale::Log10),
    );
    panel.lines.push(Line {
        style: style_of("tessera"),
        pts: vec![(0.0, 1.0), (16.0, 0.0), (f64::NAN, 3.0)],
        dashed: false,
        markers: true,
    });
    let fig = Figure {
        name: "empty".into(),
        title: "nothing".into(),
        subtitle: String::new(),
        share_y: true,
        panels: vec![panel],
        legend: vec![],
    };
    assert!(chart::render(&fig, &dir).is_err());
    assert!(!dir.join("empty.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes the sample report to `/tmp/bench-report-sample/` (for looking at the charts).
#[test]
fn writes_the_sample_report() {
    let dir = std::env::temp_dir().join("bench-report-sample");
    let _ = std::fs::remove_dir_all(&dir);
    let rs = sample::result_set();
    let files = write_all(&dir, &rs, "# synthetic sample\n").unwrap();
    assert!(files.len() > 20);
    std::fs::write(dir.join("terminal.txt"), terminal_summary(&rs)).unwrap();
}

/// A latency and a throughput cell measured by four pairs (one failed) and a cell only two
/// pairs measured.
fn peers_like() -> ResultSet {
    let mut rs = ResultSet::default();
    let lat = [("tessera", 40.0), ("cyclone", 50.0), ("fastdds", 20.0)];
    for (label, p50) in lat {
        let mut p = Point::new(
            "latency",
            Kind::Latency,
            Pair::from_label(label).unwrap(),
            [("size".to_string(), Value::from(16))].into(),
            0,
        );
        p.latency = Some(LatencyStats {
            p50_us: p50,
            ..Default::default()
        });
        p.metrics
            .insert(crate::runner::CPU_METRIC.into(), p50 / 2.0);
        rs.points.push(p);
    }
    let mut failed = Point::new(
        "latency",
        Kind::Latency,
        Pair::from_label("fastdds-udp").unwrap(),
        [("size".to_string(), Value::from(16))].into(),
        0,
    );
    failed.ok = false;
    rs.points.push(failed);
    for (label, size, rate) in [
        ("tessera", 16, 100.0),
        ("fastdds>tessera", 16, 400.0),
        ("udp", 16, 200.0),
        ("tessera", 4096, 10.0),
        ("cyclone", 4096, 20.0),
    ] {
        let mut p = Point::new(
            "throughput",
            Kind::Throughput,
            Pair::from_label(label).unwrap(),
            [("size".to_string(), Value::from(size))].into(),
            0,
        );
        p.throughput = Some(ThroughputStats {
            samples_per_s: rate,
            ..Default::default()
        });
        rs.points.push(p);
    }
    rs
}

#[test]
fn the_ranking_orders_each_cell_with_ratios_to_the_best_and_cpu() {
    let rs = peers_like();
    let t = ranking::rankings(&rs);
    assert_eq!(t.len(), 2);
    let lat: Vec<Vec<&str>> = t[0]
        .rows
        .iter()
        .map(|r| r.iter().map(String::as_str).collect())
        .collect();
    assert_eq!(
        lat,
        vec![
            vec!["1", "Fast DDS", "20.0", "1.00×", "10.0"],
            vec!["2", "Tessera", "40.0", "2.00×", "20.0"],
            vec!["3", "Cyclone DDS", "50.0", "2.50×", "25.0"],
            vec!["–", "Fast DDS (UDP)", "failed", "–", "–"],
        ]
    );
    // Throughput: higher is better; the 4 KiB cell has two pairs only and is not ranked.
    let tp: Vec<(&str, &str, &str)> = t[1]
        .rows
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str(), r[4].as_str()))
        .collect();
    assert_eq!(
        tp,
        vec![
            ("1", "Fast DDS → Tessera", "1.00×"),
            ("2", "raw UDP", "0.50×"),
            ("3", "Tessera", "0.25×"),
        ]
    );
    assert_eq!(t[1].headers[0], "size (B)");
    // In every rendering.
    let dir = temp_dir("ranking");
    write_all(&dir, &rs, "").unwrap();
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("## Ranking") && md.contains("| 1 | Fast DDS | 20.0 | 1.00× | 10.0 |"));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("<h2>Ranking</h2>"));
    assert!(terminal_summary(&rs).contains("Ranking (best first per cell)"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// A count-based 1-to-2 latency cell of Tessera and the C Cyclone worker beside ddsperf's
/// duration-based one, and a plain latency experiment that has neither.
#[test]
fn the_report_shows_each_latency_cells_mode_and_its_first_and_all_answers() {
    use crate::runner::{
        ALL_ANSWERS_P50, ALL_ANSWERS_P99, COUNT_TARGET, CPU_PER_PING, FIRST_ANSWER_P50,
        FIRST_ANSWER_P99,
    };
    let mut rs = ResultSet::default();
    let cell: BTreeMap<String, Value> = [
        ("size".to_string(), Value::from(16)),
        ("subscribers".to_string(), Value::from(2)),
    ]
    .into();
    for (label, count, first, all) in [
        ("tessera", Some(10_000.0), Some(40.0), Some(55.0)),
        ("cyclone-c", Some(10_000.0), Some(25.0), Some(31.0)),
        ("cyclone", None, None, None),
    ] {
        let mut p = Point::new(
            "one_to_n",
            Kind::Latency,
            Pair::from_label(label).unwrap(),
            cell.clone(),
            0,
        );
        p.latency = Some(LatencyStats {
            count: 20_000,
            p50_us: 30.0,
            ..Default::default()
        });
        p.metrics.insert(CPU_PER_PING.into(), 50.0);
        if let Some(n) = count {
            p.metrics.insert(COUNT_TARGET.into(), n);
        }
        if let (Some(f), Some(a)) = (first, all) {
            for (k, v) in [
                (FIRST_ANSWER_P50, f),
                (FIRST_ANSWER_P99, f * 2.0),
                (ALL_ANSWERS_P50, a),
                (ALL_ANSWERS_P99, a * 2.0),
            ] {
                p.metrics.insert(k.into(), v);
            }
        }
        rs.points.push(p);
    }
    let mut plain = Point::new(
        "latency",
        Kind::Latency,
        Pair::from_label("tessera").unwrap(),
        [("size".to_string(), Value::from(16))].into(),
        0,
    );
    plain.latency = Some(LatencyStats {
        p50_us: 30.0,
        ..Default::default()
    });
    rs.points.push(plain);

    let t = answers::tables(&rs);
    assert_eq!(
        t.len(),
        1,
        "only the counted 1-to-N experiment has the section"
    );
    assert_eq!(t[0].experiment, "one_to_n");
    let h = &t[0].headers;
    let col = |name: &str| h.iter().position(|x| x == name).unwrap();
    let row = |pair: &str| {
        t[0].rows
            .iter()
            .find(|r| r[col("pair")] == pair)
            .unwrap_or_else(|| panic!("{pair}: {:?}", t[0].rows))
            .clone()
    };
    let c = row("Cyclone DDS (C worker)");
    assert_eq!(c[col("mode")], "count 10000");
    assert_eq!(c[col("first answer p50 µs")], "25.0");
    assert_eq!(c[col("all answers p99 µs")], "62.0");
    let d = row("Cyclone DDS");
    assert_eq!(d[col("mode")], "duration");
    assert_eq!(d[col("first answer p50 µs")], "–");
    assert_eq!(d[col("CPU µs/ping (all processes)")], "50.0");
    let md = doc::markdown(&rs, &[], &[]);
    assert!(md.contains("## Latency modes and 1-to-N answers"), "{md}");
    assert!(doc::html(&rs, &[], &[]).contains("Latency modes and 1-to-N answers"));
}

#[test]
fn latency_against_cpu_has_one_point_per_pair_with_both_figures() {
    let rs = peers_like();
    let figs = figures::build(&rs);
    let f = figs
        .iter()
        .find(|f| f.name == "latency-latency-cpu")
        .expect("a latency-vs-CPU figure");
    assert_eq!(f.panels.len(), 1);
    let mut pts: Vec<(f64, f64)> = f.panels[0].lines.iter().map(|l| l.pts[0]).collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    // CPU (x) is half the latency (y) in `peers_like`; the failed pair has no point.
    assert_eq!(pts, vec![(10.0, 20.0), (20.0, 40.0), (25.0, 50.0)]);
    assert!(f.panels[0].lines.iter().all(|l| l.pts.len() == 1));
    // A cell with a single pair has nothing to compare: no figure from the throughput-only set.
    let mut one = ResultSet::default();
    one.points.push(rs.points[0].clone());
    assert!(figures::build(&one)
        .iter()
        .all(|f| !f.name.ends_with("latency-cpu")));
}
