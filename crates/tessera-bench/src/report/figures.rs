//! Which charts a result set gets, built from its cells (medians over rounds) into the
//! [`chart`](super::chart) figure model. Every chart exists only when its data does.
//!
//! Per experiment, by kind:
//! - latency: p50 and jitter (stddev) against payload (log2), one line per pair; box plots
//!   (p1/p25/p50/p75/p99) per payload and pair;
//! - throughput: samples/s and Mbit/s against payload, one panel per subscriber count (and other
//!   varying parameters); box plots of the per-second rates;
//! - rate_step: p50/p99 latency against offered load with the knee marked; received against
//!   offered with the diagonal; CPU against offered;
//! - any experiment with a `case` parameter (NASA test cases a–i): grouped bars per case;
//! - discovery: time against participants; late_joiner: bars; reliability: the critical flow's
//!   rate over time per phase.

use std::collections::BTreeSet;

use plotters::style::RGBColor;
use serde_json::Value;

use super::chart::{
    Axis, Bar, BoxGlyph, Figure, LegendEntry, Line, Marker, Panel, Scale, Style, Swatch, VMark,
};
use super::table::{by_experiment, pair_display, pairs_of, param_phrase, split_params};
use crate::results::{median_of, value_text, BoxPlot, Cell, Kind, ResultSet};

/// Most panels in one figure; more facets continue in a second figure.
const MAX_PANELS: usize = 9;

/// The style of a pair, the same in every chart.
pub(super) fn style_of(pair: &str) -> Style {
    let (color, marker) = match pair {
        "tessera" => (RGBColor(31, 119, 180), Marker::Circle),
        "cyclone" => (RGBColor(230, 115, 0), Marker::Triangle),
        "tessera>cyclone" => (RGBColor(44, 160, 44), Marker::Square),
        "cyclone>tessera" => (RGBColor(148, 103, 189), Marker::Diamond),
        "udp" => (RGBColor(100, 100, 100), Marker::Cross),
        "cyclone-c" => (RGBColor(255, 170, 60), Marker::Circle),
        "tessera>cyclone-c" => (RGBColor(120, 200, 100), Marker::Circle),
        "cyclone-c>tessera" => (RGBColor(190, 150, 220), Marker::Circle),
        "fastdds" => (RGBColor(214, 39, 40), Marker::Square),
        "fastdds-udp" => (RGBColor(227, 119, 194), Marker::Diamond),
        "tessera>fastdds" => (RGBColor(23, 190, 207), Marker::Triangle),
        "fastdds>tessera" => (RGBColor(140, 86, 75), Marker::Triangle),
        "tessera-shm" => (RGBColor(0, 60, 140), Marker::Square),
        "tessera-shm-spin" => (RGBColor(120, 170, 220), Marker::Diamond),
        "tessera-loan" => (RGBColor(0, 120, 110), Marker::Square),
        "tessera-loan-spin" => (RGBColor(100, 200, 180), Marker::Diamond),
        "tessera-atomic" => (RGBColor(106, 61, 154), Marker::Cross),
        "shm" => (RGBColor(60, 60, 60), Marker::Square),
        "shm-spin" => (RGBColor(160, 160, 160), Marker::Diamond),
        other => {
            let palette = [
                RGBColor(214, 39, 40),
                RGBColor(140, 86, 75),
                RGBColor(227, 119, 194),
                RGBColor(188, 189, 34),
                RGBColor(23, 190, 207),
            ];
            let h = other
                .bytes()
                .fold(0usize, |a, b| a.wrapping_mul(31) + b as usize);
            (palette[h % palette.len()], Marker::Circle)
        }
    };
    Style { color, marker }
}

const NEUTRAL: Style = Style {
    color: RGBColor(70, 70, 70),
    marker: Marker::Circle,
};

fn legend_for(pairs: &[String], swatch: Swatch) -> Vec<LegendEntry> {
    pairs
        .iter()
        .map(|p| LegendEntry {
            style: style_of(p),
            swatch,
            text: pair_display(p),
        })
        .collect()
}

/// A file-name-safe stem.
fn slug(s: &str) -> String {
    let mut out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() {
        out.push('x');
    }
    out
}

fn param_f64(cell: &Cell<'_>, name: &str) -> Option<f64> {
    match cell.params.get(name)? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn distinct_numbers(cells: &[&Cell<'_>], name: &str) -> usize {
    let set: BTreeSet<u64> = cells
        .iter()
        .filter_map(|c| param_f64(c, name))
        .map(f64::to_bits)
        .collect();
    set.len()
}

/// Groups `cells` by the values of the varying parameters not in `exclude`; each group is
/// labelled with its parameter phrases (empty when nothing else varies).
fn facets<'c, 'a>(
    cells: &'c [Cell<'a>],
    varying: &[String],
    exclude: &[&str],
) -> Vec<(String, Vec<&'c Cell<'a>>)> {
    let by: Vec<&String> = varying
        .iter()
        .filter(|v| !exclude.contains(&v.as_str()))
        .collect();
    let mut out: Vec<(Vec<String>, String, Vec<&'c Cell<'a>>)> = Vec::new();
    for c in cells {
        let key: Vec<String> = by
            .iter()
            .map(|n| c.params.get(*n).map(|v| v.to_string()).unwrap_or_default())
            .collect();
        match out.iter_mut().find(|(k, _, _)| *k == key) {
            Some((_, _, v)) => v.push(c),
            None => {
                let label = by
                    .iter()
                    .filter_map(|n| c.params.get(*n).map(|v| param_phrase(n, v)))
                    .collect::<Vec<_>>()
                    .join(", ");
                out.push((key, label, vec![c]));
            }
        }
    }
    out.into_iter().map(|(_, l, v)| (l, v)).collect()
}

/// Log10 when positive values span more than `ratio`, else linear from zero.
fn auto_scale(values: impl Iterator<Item = f64>, ratio: f64) -> Scale {
    let v: Vec<f64> = values.filter(|x| x.is_finite() && *x > 0.0).collect();
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() && hi / lo > ratio {
        Scale::Log10
    } else {
        Scale::Linear
    }
}

/// Median of each box field over a cell's rounds.
fn median_box(
    cell: &Cell<'_>,
    get: impl Fn(&crate::results::Point) -> Option<BoxPlot>,
) -> Option<[f64; 5]> {
    let boxes: Vec<BoxPlot> = cell.rounds.iter().filter_map(|p| get(p)).collect();
    if boxes.is_empty() {
        return None;
    }
    let field = |f: fn(&BoxPlot) -> f64| {
        let mut v: Vec<f64> = boxes.iter().map(f).collect();
        median_of(&mut v).unwrap_or(f64::NAN)
    };
    Some([
        field(|b| b.p1),
        field(|b| b.p25),
        field(|b| b.p50),
        field(|b| b.p75),
        field(|b| b.p99),
    ])
}

/// A series aggregated over rounds: at each x, the median of the rounds' y.
fn median_series(cell: &Cell<'_>, key: &str) -> Vec<(f64, f64)> {
    let mut all: Vec<(f64, f64)> = cell
        .rounds
        .iter()
        .filter_map(|p| p.series.get(key))
        .flat_map(|s| s.iter().map(|[x, y]| (*x, *y)))
        .filter(|(x, _)| x.is_finite())
        .collect();
    all.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    let mut out = Vec::new();
    let mut i = 0;
    while i < all.len() {
        let x0 = all[i].0;
        let tol = 1e-6 * x0.abs().max(1.0);
        let mut ys = Vec::new();
        while i < all.len() && (all[i].0 - x0).abs() <= tol {
            ys.push(all[i].1);
            i += 1;
        }
        if let Some(y) = median_of(&mut ys) {
            out.push((x0, y));
        }
    }
    out
}

/// Splits panels into figures of at most [`MAX_PANELS`].
fn figures(
    name: String,
    (title, subtitle): (String, String),
    panels: Vec<Panel>,
    legend: Vec<LegendEntry>,
) -> Vec<Figure> {
    let has_data = |p: &Panel| !(p.lines.is_empty() && p.boxes.is_empty() && p.bars.is_empty());
    let panels: Vec<Panel> = panels.into_iter().filter(has_data).collect();
    let n = panels.len().div_ceil(MAX_PANELS);
    let mut out = Vec::new();
    let mut it = panels.into_iter();
    for i in 0..n {
        let chunk: Vec<Panel> = it.by_ref().take(MAX_PANELS).collect();
        let (name, title) = if i == 0 {
            (name.clone(), title.clone())
        } else {
            (format!("{name}-{}", i + 1), format!("{title} ({})", i + 1))
        };
        out.push(Figure {
            name,
            title,
            subtitle: subtitle.clone(),
            panels: chunk,
            share_y: true,
            legend: legend.clone(),
        });
    }
    out
}

/// Title and subtitle (the parameters every panel shares) of a figure.
fn title(exp: &str, what: &str, fixed: &[String]) -> (String, String) {
    (format!("{exp}: {what}"), fixed.join(" · "))
}

/// Lines of `y(cell)` against parameter `xp`, one per pair, one panel per facet.
struct LineSpec<'s> {
    name: &'s str,
    what: &'s str,
    x: Axis,
    y_label: &'s str,
    xp: &'s str,
    metric: &'s str,
    log_ratio: f64,
}

fn line_figure(exp: &str, cells: &[Cell<'_>], spec: LineSpec<'_>) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    let all: Vec<f64> = cells.iter().filter_map(|c| c.median(spec.metric)).collect();
    let yscale = auto_scale(all.into_iter(), spec.log_ratio);
    for (label, fc) in facets(cells, &varying, &[spec.xp]) {
        let mut panel = Panel::new(label, spec.x.clone(), Axis::new(spec.y_label, yscale));
        for pair in &pairs {
            let pts: Vec<(f64, f64)> = fc
                .iter()
                .filter(|c| c.pair == pair)
                .filter_map(|c| Some((param_f64(c, spec.xp)?, c.median(spec.metric)?)))
                .collect();
            if pts.is_empty() {
                continue;
            }
            used.insert(pair.clone());
            panel.lines.push(Line {
                style: style_of(pair),
                pts,
                dashed: false,
                markers: true,
            });
        }
        panels.push(panel);
    }
    let missing: Vec<String> = pairs
        .iter()
        .filter(|p| !used.contains(*p))
        .map(|p| pair_display(p))
        .collect();
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    let (t, mut sub) = title(exp, spec.what, &fixed);
    if !missing.is_empty() {
        if !sub.is_empty() {
            sub.push_str(" · ");
        }
        sub.push_str(&format!("no data for {}", missing.join(", ")));
    }
    figures(
        format!("{}-{}", slug(exp), spec.name),
        (t, sub),
        panels,
        legend_for(&pairs, Swatch::Line),
    )
}

/// Box plots per x value and pair, one panel per facet; pairs without boxes are left out.
fn box_figure(
    exp: &str,
    cells: &[Cell<'_>],
    name: &str,
    what: &str,
    y_label: &str,
    get: impl Fn(&crate::results::Point) -> Option<BoxPlot> + Copy,
) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs: Vec<String> = pairs_of(cells)
        .into_iter()
        .filter(|p| {
            cells
                .iter()
                .filter(|c| c.pair == p)
                .any(|c| median_box(c, get).is_some())
        })
        .collect();
    if pairs.is_empty() {
        return Vec::new();
    }
    let all: Vec<f64> = cells
        .iter()
        .filter_map(|c| median_box(c, get))
        .flat_map(|b| b.into_iter())
        .collect();
    let yscale = auto_scale(all.into_iter(), 30.0);
    // One category per payload, boxes side by side within it.
    let mut sizes: Vec<f64> = cells.iter().filter_map(|c| param_f64(c, "size")).collect();
    sizes.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    sizes.dedup();
    let cats: Vec<String> = sizes.iter().map(|s| format!("{s}")).collect();
    let mut panels = Vec::new();
    for (label, fc) in facets(cells, &varying, &["size"]) {
        let mut panel = Panel::new(
            label,
            Axis::categories("payload (bytes)", cats.clone()),
            Axis::new(y_label, yscale),
        );
        for (slot, pair) in pairs.iter().enumerate() {
            for c in fc.iter().filter(|c| c.pair == pair) {
                let (Some(x), Some(v)) = (param_f64(c, "size"), median_box(c, get)) else {
                    continue;
                };
                let Some(cat) = sizes.iter().position(|s| *s == x) else {
                    continue;
                };
                panel.boxes.push(BoxGlyph {
                    style: style_of(pair),
                    x: cat as f64,
                    slot,
                    slots: pairs.len(),
                    v,
                });
            }
        }
        panels.push(panel);
    }
    figures(
        format!("{}-{name}", slug(exp)),
        title(exp, what, &fixed),
        panels,
        legend_for(&pairs, Swatch::Patch),
    )
}

fn has_sizes(cells: &[Cell<'_>]) -> bool {
    let refs: Vec<&Cell<'_>> = cells.iter().collect();
    distinct_numbers(&refs, "size") >= 2
}

/// Latency against what it cost: one point per pair (median round trip, median CPU per round
/// trip of both processes) in a panel per cell, so that a faster design and a busier one are
/// told apart at a glance. Only cells where two pairs or more have both figures.
fn latency_vs_cpu(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let point = |c: &Cell<'_>| Some((c.median(crate::runner::CPU_METRIC)?, c.median("p50_us")?));
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    for (label, fc) in facets(cells, &varying, &[]) {
        let pts: Vec<(&String, (f64, f64))> = pairs
            .iter()
            .filter_map(|pair| {
                let c = fc.iter().find(|c| c.pair == pair)?;
                Some((pair, point(c)?))
            })
            .collect();
        if pts.len() < 2 {
            continue;
        }
        let mut panel = Panel::new(
            label,
            Axis::new("CPU per round trip (µs, both processes)", Scale::Linear),
            Axis::new("round-trip latency p50 (µs)", Scale::Linear),
        );
        for (pair, xy) in pts {
            used.insert(pair.clone());
            panel.lines.push(Line {
                style: style_of(pair),
                pts: vec![xy],
                dashed: false,
                markers: true,
            });
        }
        panels.push(panel);
    }
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    let mut out = figures(
        format!("{}-latency-cpu", slug(exp)),
        title(
            exp,
            "latency against CPU per round trip (lower left is better)",
            &fixed,
        ),
        panels,
        legend_for(&pairs, Swatch::Line),
    );
    // Each panel has its own ranges: CPU and latency differ by orders of magnitude across
    // payloads.
    for f in &mut out {
        f.share_y = false;
    }
    out
}

fn latency(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    let mut out = latency_vs_cpu(exp, cells);
    if !has_sizes(cells) {
        return out;
    }
    let payload = Axis::new("payload (bytes)", Scale::Log2);
    out.extend(line_figure(
        exp,
        cells,
        LineSpec {
            name: "latency",
            what: "round-trip latency vs payload",
            x: payload.clone(),
            y_label: "round-trip latency p50 (µs)",
            xp: "size",
            metric: "p50_us",
            log_ratio: 50.0,
        },
    ));
    out.extend(line_figure(
        exp,
        cells,
        LineSpec {
            name: "jitter",
            what: "jitter vs payload",
            x: payload,
            y_label: "jitter: latency stddev (µs)",
            xp: "size",
            metric: "stddev_us",
            log_ratio: 50.0,
        },
    ));
    out.extend(box_figure(
        exp,
        cells,
        "latency-box",
        "latency distribution (box p25–p75, whiskers p1–p99)",
        "round-trip latency (µs)",
        |p| p.latency.as_ref().and_then(|l| l.boxplot),
    ));
    out
}

fn throughput(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    if !has_sizes(cells) {
        return Vec::new();
    }
    let payload = Axis::new("payload (bytes)", Scale::Log2);
    let mut out = line_figure(
        exp,
        cells,
        LineSpec {
            name: "throughput",
            what: "throughput vs payload",
            x: payload.clone(),
            y_label: "throughput (samples/s)",
            xp: "size",
            metric: "samples_per_s",
            log_ratio: 20.0,
        },
    );
    out.extend(line_figure(
        exp,
        cells,
        LineSpec {
            name: "bandwidth",
            what: "payload bandwidth vs payload",
            x: payload,
            y_label: "throughput (Mbit/s)",
            xp: "size",
            metric: "mbit_per_s",
            log_ratio: 20.0,
        },
    ));
    out.extend(box_figure(
        exp,
        cells,
        "throughput-box",
        "per-second throughput (box p25–p75, whiskers min–max)",
        "throughput (samples/s)",
        |p| p.throughput.as_ref().and_then(|t| t.boxplot),
    ));
    out
}

fn rate_step(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let offered = || Axis::new("offered load (samples/s)", Scale::Linear);
    let lat_all = cells
        .iter()
        .flat_map(|c| {
            median_series(c, "step_p99_us")
                .into_iter()
                .chain(median_series(c, "step_p50_us"))
        })
        .map(|p| p.1);
    let lat_scale = auto_scale(lat_all, 30.0);
    let (mut lat_panels, mut rx_panels, mut cpu_panels) = (Vec::new(), Vec::new(), Vec::new());
    let (mut lat_used, mut rx_used, mut cpu_used) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for (label, fc) in facets(cells, &varying, &[]) {
        let mut lat = Panel::new(
            label.clone(),
            offered(),
            Axis::new("round-trip latency (µs)", lat_scale),
        );
        let mut rx = Panel::new(
            label.clone(),
            offered(),
            Axis::new("received (samples/s)", Scale::Linear),
        );
        rx.diagonal = true;
        let mut cpu = Panel::new(
            label,
            offered(),
            Axis::new("CPU (% of one core, all processes)", Scale::Linear),
        );
        for pair in &pairs {
            let st = style_of(pair);
            for c in fc.iter().filter(|c| c.pair == pair) {
                let p50 = median_series(c, "step_p50_us");
                let p99 = median_series(c, "step_p99_us");
                if !p50.is_empty() || !p99.is_empty() {
                    lat_used.insert(pair.clone());
                    lat.lines.push(Line {
                        style: st,
                        pts: p50,
                        dashed: false,
                        markers: true,
                    });
                    lat.lines.push(Line {
                        style: st,
                        pts: p99,
                        dashed: true,
                        markers: false,
                    });
                    if let Some(k) = c.median("knee_rate") {
                        lat.vmarks.push(VMark {
                            style: st,
                            x: k,
                            label: format!("knee {}", super::table::fmt_num(k)),
                        });
                    }
                }
                let steps = median_series(c, "steps");
                if !steps.is_empty() {
                    rx_used.insert(pair.clone());
                    rx.lines.push(Line {
                        style: st,
                        pts: steps,
                        dashed: false,
                        markers: true,
                    });
                    if let Some(k) = c.median("max_sustainable_rate") {
                        rx.vmarks.push(VMark {
                            style: st,
                            x: k,
                            label: format!("max {}", super::table::fmt_num(k)),
                        });
                    }
                }
                let cpu_s = median_series(c, "step_cpu_pct");
                if !cpu_s.is_empty() {
                    cpu_used.insert(pair.clone());
                    cpu.lines.push(Line {
                        style: st,
                        pts: cpu_s,
                        dashed: false,
                        markers: true,
                    });
                }
            }
        }
        lat_panels.push(lat);
        rx_panels.push(rx);
        cpu_panels.push(cpu);
    }
    let only = |used: &BTreeSet<String>| -> Vec<String> {
        pairs
            .iter()
            .filter(|p| used.contains(*p))
            .cloned()
            .collect()
    };
    let mut lat_legend = legend_for(&only(&lat_used), Swatch::Line);
    lat_legend.push(LegendEntry {
        style: NEUTRAL,
        swatch: Swatch::Line,
        text: "p50".into(),
    });
    lat_legend.push(LegendEntry {
        style: NEUTRAL,
        swatch: Swatch::Dashed,
        text: "p99".into(),
    });
    let mut rx_legend = legend_for(&only(&rx_used), Swatch::Line);
    rx_legend.push(LegendEntry {
        style: NEUTRAL,
        swatch: Swatch::Dashed,
        text: "received = offered".into(),
    });
    let mut out = figures(
        format!("{}-load-latency", slug(exp)),
        title(exp, "latency vs offered load", &fixed),
        lat_panels,
        lat_legend,
    );
    out.extend(figures(
        format!("{}-load-received", slug(exp)),
        title(exp, "received vs offered rate", &fixed),
        rx_panels,
        rx_legend,
    ));
    out.extend(figures(
        format!("{}-load-cpu", slug(exp)),
        title(exp, "CPU vs offered load", &fixed),
        cpu_panels,
        legend_for(&only(&cpu_used), Swatch::Line),
    ));
    out
}

/// Grouped bars per NASA test case (the `case` parameter).
fn cases(exp: &str, kind: Kind, cells: &[Cell<'_>]) -> Vec<Figure> {
    if !cells.iter().any(|c| c.params.contains_key("case")) {
        return Vec::new();
    }
    let (metric, y_label, what) = match kind {
        Kind::RateStep => (
            "max_sustainable_rate",
            "max sustainable rate (samples/s)",
            "max sustainable rate per test case",
        ),
        Kind::Throughput => (
            "samples_per_s",
            "throughput (samples/s)",
            "throughput per test case",
        ),
        Kind::Latency => (
            "p50_us",
            "round-trip latency p50 (µs)",
            "latency per test case",
        ),
        _ => return Vec::new(),
    };
    let (varying, fixed) = split_params(cells);
    let mut case_names: Vec<String> = cells
        .iter()
        .filter_map(|c| c.params.get("case").map(value_text))
        .collect();
    case_names.sort();
    case_names.dedup();
    let pairs = pairs_of(cells);
    let exclude = ["case", "instances", "reliability", "read_mode", "history"];
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    for (label, fc) in facets(cells, &varying, &exclude) {
        let mut panel = Panel::new(
            label,
            Axis::categories("NASA test case", case_names.clone()),
            Axis::new(y_label, Scale::Linear),
        );
        for (slot, pair) in pairs.iter().enumerate() {
            for c in fc.iter().filter(|c| c.pair == pair) {
                let Some(case) = c.params.get("case").map(value_text) else {
                    continue;
                };
                let Some(cat) = case_names.iter().position(|n| *n == case) else {
                    continue;
                };
                let Some(v) = c.median(metric) else { continue };
                used.insert(pair.clone());
                panel.bars.push(Bar {
                    style: style_of(pair),
                    cat,
                    slot,
                    slots: pairs.len(),
                    value: v,
                });
            }
        }
        panels.push(panel);
    }
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    figures(
        format!("{}-cases", slug(exp)),
        title(exp, what, &fixed),
        panels,
        legend_for(&pairs, Swatch::Patch),
    )
}

fn discovery(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    let refs: Vec<&Cell<'_>> = cells.iter().collect();
    if distinct_numbers(&refs, "participants") < 2 {
        return bars(
            exp,
            cells,
            "discovery",
            "discovery time",
            &[("discovery_ms", "discovery time (ms)")],
        );
    }
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    for (label, fc) in facets(cells, &varying, &["participants"]) {
        let mut panel = Panel::new(
            label,
            Axis::new("participants", Scale::Linear),
            Axis::new("discovery time (ms)", Scale::Linear),
        );
        for pair in &pairs {
            let st = style_of(pair);
            let series = |m: &str| -> Vec<(f64, f64)> {
                fc.iter()
                    .filter(|c| c.pair == pair)
                    .filter_map(|c| Some((param_f64(c, "participants")?, c.median(m)?)))
                    .collect()
            };
            let all = series("discovery_ms");
            let med = series("discovery_median_ms");
            if all.is_empty() && med.is_empty() {
                continue;
            }
            used.insert(pair.clone());
            panel.lines.push(Line {
                style: st,
                pts: all,
                dashed: false,
                markers: true,
            });
            panel.lines.push(Line {
                style: st,
                pts: med,
                dashed: true,
                markers: false,
            });
        }
        panels.push(panel);
    }
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    let mut legend = legend_for(&pairs, Swatch::Line);
    legend.push(LegendEntry {
        style: NEUTRAL,
        swatch: Swatch::Line,
        text: "all discovered all".into(),
    });
    legend.push(LegendEntry {
        style: NEUTRAL,
        swatch: Swatch::Dashed,
        text: "median participant".into(),
    });
    figures(
        format!("{}-discovery", slug(exp)),
        title(exp, "discovery time vs participants", &fixed),
        panels,
        legend,
    )
}

/// Grouped bars: one category per parameter combination, one bar per pair, one panel per
/// metric.
fn bars(
    exp: &str,
    cells: &[Cell<'_>],
    name: &str,
    what: &str,
    metrics: &[(&str, &str)],
) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let groups = facets(cells, &varying, &[]);
    let cats: Vec<String> = groups
        .iter()
        .map(|(l, _)| {
            if l.is_empty() {
                exp.to_string()
            } else {
                l.clone()
            }
        })
        .collect();
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    for (metric, y_label) in metrics {
        let mut panel = Panel::new(
            if metrics.len() > 1 {
                y_label.to_string()
            } else {
                String::new()
            },
            Axis::categories("", cats.clone()),
            Axis::new(*y_label, Scale::Linear),
        );
        for (cat, (_, fc)) in groups.iter().enumerate() {
            for (slot, pair) in pairs.iter().enumerate() {
                let Some(v) = fc
                    .iter()
                    .find(|c| c.pair == pair)
                    .and_then(|c| c.median(metric))
                else {
                    continue;
                };
                used.insert(pair.clone());
                panel.bars.push(Bar {
                    style: style_of(pair),
                    cat,
                    slot,
                    slots: pairs.len(),
                    value: v,
                });
            }
        }
        panels.push(panel);
    }
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    let mut out = figures(
        format!("{}-{name}", slug(exp)),
        title(exp, what, &fixed),
        panels,
        legend_for(&pairs, Swatch::Patch),
    );
    // Panels hold different metrics.
    for f in &mut out {
        f.share_y = metrics.len() == 1;
    }
    out
}

fn reliability(exp: &str, cells: &[Cell<'_>]) -> Vec<Figure> {
    let (varying, fixed) = split_params(cells);
    let pairs = pairs_of(cells);
    let mut panels = Vec::new();
    let mut used = BTreeSet::new();
    for (label, fc) in facets(cells, &varying, &[]) {
        let mut panel = Panel::new(
            label,
            Axis::new("time (s)", Scale::Linear),
            Axis::new("critical flow (samples/s)", Scale::Linear),
        );
        for pair in &pairs {
            for c in fc.iter().filter(|c| c.pair == pair) {
                // The round whose completion time is the median shows a typical run.
                let mut rounds: Vec<&&crate::results::Point> = c
                    .rounds
                    .iter()
                    .filter(|p| p.series.contains_key("critical_rate"))
                    .collect();
                rounds.sort_by(|a, b| {
                    let k = |p: &crate::results::Point| {
                        p.metrics.get("completion_s").copied().unwrap_or(f64::NAN)
                    };
                    k(a).partial_cmp(&k(b)).unwrap_or(std::cmp::Ordering::Equal)
                });
                let Some(p) = rounds.get(rounds.len() / 2) else {
                    continue;
                };
                let pts: Vec<(f64, f64)> = p
                    .series
                    .get("critical_rate")
                    .map(|s| s.iter().map(|[x, y]| (*x, *y)).collect())
                    .unwrap_or_default();
                if pts.is_empty() {
                    continue;
                }
                used.insert(pair.clone());
                panel.lines.push(Line {
                    style: style_of(pair),
                    pts,
                    dashed: false,
                    markers: false,
                });
            }
        }
        panels.push(panel);
    }
    let pairs: Vec<String> = pairs.into_iter().filter(|p| used.contains(p)).collect();
    figures(
        format!("{}-critical-rate", slug(exp)),
        title(exp, "critical flow rate over time (median round)", &fixed),
        panels,
        legend_for(&pairs, Swatch::Plain),
    )
}

/// Every figure of `rs`, in experiment order.
pub(super) fn build(rs: &ResultSet) -> Vec<Figure> {
    let mut out = Vec::new();
    for (exp, kind, cells) in by_experiment(rs) {
        match kind {
            Kind::Latency => out.extend(latency(&exp, &cells)),
            Kind::Throughput => out.extend(throughput(&exp, &cells)),
            Kind::RateStep => out.extend(rate_step(&exp, &cells)),
            Kind::Discovery => out.extend(discovery(&exp, &cells)),
            Kind::LateJoiner => out.extend(bars(
                &exp,
                &cells,
                "late-joiner",
                "late-joining reader, time to first and to all samples",
                &[
                    ("first_sample_ms", "time to first sample (ms)"),
                    ("all_samples_ms", "time to all samples (ms)"),
                ],
            )),
            Kind::Reliability => out.extend(reliability(&exp, &cells)),
            Kind::Failure => out.extend(bars(
                &exp,
                &cells,
                "failure",
                "kill -9 of the shared part: longest gap in the flow, and recovery after restart",
                &[
                    ("gap_ms", "longest gap in the flow (ms)"),
                    (
                        "late_join_ms",
                        "late reader's first sample (ms after it started)",
                    ),
                    (
                        "recovered_ms",
                        "both readers receiving (ms after the restart)",
                    ),
                ],
            )),
        }
        out.extend(cases(&exp, kind, &cells));
    }
    // Names must be unique (two experiments could slug alike).
    let mut seen = BTreeSet::new();
    for f in &mut out {
        let mut name = f.name.clone();
        let mut i = 2;
        while !seen.insert(name.clone()) {
            name = format!("{}-{i}", f.name);
            i += 1;
        }
        f.name = name;
    }
    out
}
