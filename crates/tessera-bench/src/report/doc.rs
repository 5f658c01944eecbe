//! `report.md` and the self-contained `report.html`: the same content — headline tables, notes,
//! environment, charts and a "How measured" section generated from the data.

use std::collections::{BTreeMap, BTreeSet};

use super::chart::Rendered;
use super::ranking::rankings;
use super::table::{
    by_experiment, fmt_num, is_ratio_header, markdown_table, pair_display, pair_rank, tables, Table,
};
use crate::results::{median_of, Kind, ResultSet};

/// `3 min 12 s`, `1 h 02 min`, `45.2 s`.
pub(super) fn fmt_duration(s: f64) -> String {
    if !s.is_finite() || s < 0.0 {
        return "unknown".to_string();
    }
    if s < 60.0 {
        format!("{s:.1} s")
    } else if s < 3600.0 {
        format!("{} min {:02} s", (s / 60.0).floor(), (s % 60.0).floor())
    } else {
        format!(
            "{} h {:02} min",
            (s / 3600.0).floor(),
            ((s % 3600.0) / 60.0).floor()
        )
    }
}

fn header_line(rs: &ResultSet) -> String {
    let failed = rs.points.iter().filter(|p| !p.ok).count();
    let mut s = format!(
        "Scenario {} · started {} · duration {} · {} host{} · {} points",
        if rs.scenario_name.is_empty() {
            "(unnamed)"
        } else {
            &rs.scenario_name
        },
        if rs.started.is_empty() {
            "unknown"
        } else {
            &rs.started
        },
        fmt_duration(rs.duration_s),
        rs.hosts.max(1),
        if rs.hosts > 1 { "s" } else { "" },
        rs.points.len()
    );
    if failed > 0 {
        s.push_str(&format!(" ({failed} failed)"));
    }
    s
}

/// One paragraph describing the machine and software.
pub(super) fn environment_paragraph(rs: &ResultSet) -> String {
    let e = &rs.environment;
    let or = |s: &str, d: &str| {
        if s.is_empty() {
            d.to_string()
        } else {
            s.to_string()
        }
    };
    let mut s = format!(
        "Measured on {} ({}, {} core{}, {:.1} GiB RAM), {}, kernel {}.",
        or(&e.hostname, "an unnamed host"),
        or(&e.cpu_model, "unknown CPU"),
        e.cores,
        if e.cores == 1 { "" } else { "s" },
        e.memory_mib as f64 / 1024.0,
        or(&e.os, "unknown OS"),
        or(&e.kernel, "unknown"),
    );
    s.push_str(&format!(
        " Tessera {}",
        or(&e.tessera_version, "(unknown version)")
    ));
    if let Some(g) = &e.git_revision {
        s.push_str(&format!(" at git {g}"));
    }
    if let Some(r) = &e.rustc {
        s.push_str(&format!(", built with {r}"));
    }
    if let Some(b) = &e.tessera_build {
        s.push_str(&format!("; the measured binary: {b}"));
    }
    if let Some(b) = &e.atomic_build {
        s.push_str(&format!("; the ATOMIC pair's: {b}"));
    }
    s.push_str("; ");
    match &e.cyclone_version {
        Some(v) => match &e.ddsperf {
            Some(d) => s.push_str(&format!("Cyclone DDS {v}, ddsperf {d}.")),
            None => s.push_str(&format!("Cyclone DDS {v}.")),
        },
        None => s.push_str("Cyclone DDS not installed."),
    }
    if !e.wakeup.is_empty() {
        s.push_str(&format!(" Workers wake up by {}.", e.wakeup));
    }
    if rs.hosts > 1 {
        s.push_str(&format!(
            " {} hosts, each a network namespace of its own.",
            rs.hosts
        ));
    } else {
        s.push_str(" All processes ran in one private network namespace.");
    }
    s
}

/// The "How measured" bullets, generated from the data.
pub(super) fn how_measured(rs: &ResultSet, failures: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let cells = rs.cells();
    let mut rounds: Vec<usize> = cells.iter().map(|c| c.rounds.len() + c.failed).collect();
    rounds.sort_unstable();
    if let (Some(lo), Some(hi)) = (rounds.first(), rounds.last()) {
        let r = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo}–{hi}")
        };
        out.push(format!(
            "{} cells (experiment × pair × parameters), {r} round{} each; tables and charts show the \
             median over a cell's successful rounds, results.csv has every round.",
            cells.len(),
            if *hi == 1 { "" } else { "s" }
        ));
    }

    // Interleaving: did round r of every cell of an experiment come before round r+1 of any?
    let mut interleaved = Vec::new();
    let mut sequential = Vec::new();
    for (exp, _, ecells) in by_experiment(rs) {
        let pairs: BTreeSet<&str> = ecells.iter().map(|c| c.pair).collect();
        let max_round = rs
            .points
            .iter()
            .filter(|p| p.experiment == exp)
            .map(|p| p.round)
            .max()
            .unwrap_or(0);
        if max_round == 0 || pairs.len() < 2 {
            continue;
        }
        let idx = |r: u32, last: bool| {
            let it = rs
                .points
                .iter()
                .enumerate()
                .filter(|(_, p)| p.experiment == exp && p.round == r)
                .map(|(i, _)| i);
            if last {
                it.max()
            } else {
                it.min()
            }
        };
        let ok = (0..max_round).all(|r| match (idx(r, true), idx(r + 1, false)) {
            (Some(a), Some(b)) => a < b,
            _ => true,
        });
        if ok {
            interleaved.push(exp);
        } else {
            sequential.push(exp);
        }
    }
    if !interleaved.is_empty() {
        out.push(format!(
            "Rounds were interleaved (every pair and parameter set once, then again: A B A B …) in {}, \
             so slow drifts of the machine hit every pair alike.",
            interleaved.join(", ")
        ));
    }
    if !sequential.is_empty() {
        out.push(format!(
            "Rounds were not interleaved in {}.",
            sequential.join(", ")
        ));
    }

    // Latency sources.
    let mut sources: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut counts = Vec::new();
    for p in rs.points.iter().filter(|p| p.ok) {
        if let Some(l) = &p.latency {
            let src = if l.source.is_empty() {
                "unknown".to_string()
            } else {
                l.source.clone()
            };
            sources.entry(src).or_default().insert(p.pair.clone());
            if p.kind == Kind::Latency {
                counts.push(l.count as f64);
            }
        }
    }
    if !sources.is_empty() {
        let mut s =
            String::from("Latency is the round trip on the ping side's clock (no clock skew).");
        if let Some(c) = median_of(&mut counts) {
            s.push_str(&format!(
                " A point has a median of {} measured round trips.",
                fmt_num(c)
            ));
        }
        for (src, pairs) in &sources {
            let mut pairs: Vec<&String> = pairs.iter().collect();
            pairs.sort_by_key(|p| pair_rank(p));
            let names = pairs
                .iter()
                .map(|p| pair_display(p))
                .collect::<Vec<_>>()
                .join(", ");
            let how = match src.as_str() {
                "hdr" => "from an HdrHistogram of every round trip (exact percentiles, stddev and box plots)",
                "intervals" => "combined from ddsperf's per-second summaries: count, mean, min and max are exact, percentiles are count-weighted means of the per-second percentiles",
                _ => "from an unnamed source",
            };
            s.push_str(&format!(" Source \"{src}\" ({names}): {how}."));
        }
        out.push(s);
    }
    if rs.points.iter().any(|p| p.throughput.is_some()) {
        out.push(
            "Throughput is counted on the subscriber clock: per subscriber the median of the \
             per-second rates after the warm-up, summed over subscribers; box plots show the \
             per-second rates (whiskers at min and max)."
                .to_string(),
        );
    }
    if rs.points.iter().any(|p| p.kind == Kind::RateStep) {
        out.push(
            "Rate stepping raises the offered rate step by step; the max sustainable rate is the \
             highest step the subscriber kept up with, the knee the step where latency starts to \
             climb (both marked in the charts)."
                .to_string(),
        );
    }
    let procs = rs.points.iter().filter(|p| !p.procs.is_empty()).count();
    if procs > 0 {
        out.push(format!(
            "CPU and peak memory of every process come from /proc ({procs} points)."
        ));
    }
    if rs
        .points
        .iter()
        .any(|p| p.metrics.contains_key(crate::runner::CPU_METRIC))
    {
        out.push(
            "CPU µs per round trip or sample is the user + system time of all the point's \
             processes (sampled from /proc every 50 ms) over one window cut the same way for \
             every implementation from the tools' per-second report lines, divided by the \
             round trips or samples those lines count in it: for latency the seconds the \
             ping's lines cover, for throughput the subscribers' lines after their first \
             (warm-up) one."
                .to_string(),
        );
    }
    let failed: Vec<&crate::results::Point> = rs.points.iter().filter(|p| !p.ok).collect();
    if !failed.is_empty() {
        let mut s = format!(
            "{} point{} failed:",
            failed.len(),
            if failed.len() == 1 { "" } else { "s" }
        );
        for p in failed.iter().take(5) {
            s.push_str(&format!(
                " {} {} round {} ({});",
                p.experiment,
                pair_display(&p.pair),
                p.round,
                p.error.as_deref().unwrap_or("no reason given")
            ));
        }
        if failed.len() > 5 {
            s.push_str(" …");
        }
        out.push(s.trim_end_matches(';').to_string());
    }
    let wall: f64 = rs.points.iter().map(|p| p.wall_s).sum();
    if wall > 0.0 {
        out.push(format!(
            "The points took {} in all (setup and teardown included); the whole run took {}.",
            fmt_duration(wall),
            fmt_duration(rs.duration_s)
        ));
    }
    for f in failures {
        out.push(format!("Chart not drawn: {f}."));
    }
    out
}

/// Resource use per experiment and pair: median CPU (all processes of a point) and largest
/// peak RSS. Rows: (experiment, pair display, cpu %, rss MiB).
fn resources(rs: &ResultSet) -> Vec<[String; 4]> {
    let mut out = Vec::new();
    for (exp, _, cells) in by_experiment(rs) {
        let mut pairs: Vec<&str> = cells.iter().map(|c| c.pair).collect();
        pairs.sort_by_key(|p| pair_rank(p));
        pairs.dedup();
        for pair in pairs {
            let pts: Vec<&crate::results::Point> = rs
                .points
                .iter()
                .filter(|p| p.ok && p.experiment == exp && p.pair == pair && !p.procs.is_empty())
                .collect();
            if pts.is_empty() {
                continue;
            }
            let mut cpu: Vec<f64> = pts
                .iter()
                .map(|p| p.procs.iter().map(|s| s.cpu_pct).sum())
                .collect();
            let rss = pts
                .iter()
                .flat_map(|p| p.procs.iter().map(|s| s.peak_rss_kib))
                .max()
                .unwrap_or(0);
            out.push([
                exp.clone(),
                pair_display(pair),
                median_of(&mut cpu).map(fmt_num).unwrap_or_default(),
                format!("{:.1}", rss as f64 / 1024.0),
            ]);
        }
    }
    out
}

const RESOURCE_HEADERS: [&str; 4] = [
    "experiment",
    "pair",
    "CPU % (median, all processes)",
    "peak RSS MiB (largest process)",
];

const RANKING_INTRO: &str = "Every latency and throughput cell that three or more pairs \
measured, its pairs from best to worst (medians over rounds), each with its ratio to the best of \
the cell and the CPU (user + system, every process of the point) it spent per round trip or \
delivered sample over the same window as the others.";

/// The Markdown report.
pub(crate) fn markdown(rs: &ResultSet, charts: &[Rendered], failures: &[String]) -> String {
    let mut md = format!(
        "# tessera bench — {}\n\n{}\n\n",
        rs.test_id,
        header_line(rs)
    );
    md.push_str("## Environment\n\n");
    md.push_str(&environment_paragraph(rs));
    md.push_str("\n\n");
    if !rs.notes.is_empty() {
        md.push_str("## Notes\n\n");
        for n in &rs.notes {
            md.push_str(&format!("- {n}\n"));
        }
        md.push('\n');
    }
    md.push_str("## Results\n\n");
    let ts = tables(rs);
    if ts.is_empty() {
        md.push_str("No results.\n\n");
    }
    for t in &ts {
        md.push_str(&markdown_table(t));
        md.push('\n');
    }
    let ranked = rankings(rs);
    if !ranked.is_empty() {
        md.push_str("## Ranking\n\n");
        md.push_str(RANKING_INTRO);
        md.push_str("\n\n");
        for t in &ranked {
            md.push_str(&markdown_table(t));
            md.push('\n');
        }
    }
    let modes = super::answers::tables(rs);
    if !modes.is_empty() {
        md.push_str("## Latency modes and 1-to-N answers\n\n");
        md.push_str(super::answers::INTRO);
        md.push_str("\n\n");
        for t in &modes {
            md.push_str(&markdown_table(t));
            md.push('\n');
        }
    }
    if !charts.is_empty() {
        md.push_str("## Charts\n\n");
        for c in charts {
            md.push_str(&format!("![{}](charts/{}.png)\n\n", c.title, c.name));
        }
    }
    let res = resources(rs);
    if !res.is_empty() {
        md.push_str("## Resource use\n\n|");
        for h in RESOURCE_HEADERS {
            md.push_str(&format!(" {h} |"));
        }
        md.push_str("\n|---|---|---:|---:|\n");
        for r in &res {
            md.push_str(&format!("| {} | {} | {} | {} |\n", r[0], r[1], r[2], r[3]));
        }
        md.push('\n');
    }
    md.push_str("## How measured\n\n");
    for b in how_measured(rs, failures) {
        md.push_str(&format!("- {b}\n"));
    }
    md
}

/// Escapes text for HTML element content and attribute values.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = "body{font-family:-apple-system,'Segoe UI','DejaVu Sans',Helvetica,Arial,sans-serif;\
max-width:1200px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}\
.meta{color:#555}table{border-collapse:collapse;margin:.4em 0 1.4em;font-size:.92em}\
th,td{border:1px solid #ddd;padding:.25em .6em}th{background:#f3f5f7;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
tr:nth-child(even) td{background:#fafbfc}td.ratio{font-weight:600}\
.caption{margin:.8em 0 .2em}.caption b{font-size:1.05em}.caption span{color:#555}\
figure{margin:1em 0 2em}figure svg{max-width:100%;height:auto;display:block}\
figcaption{color:#555;font-size:.9em}ul{padding-left:1.3em}code{background:#f3f5f7;padding:0 .2em}";

fn html_table(t: &Table) -> String {
    let mut h = format!(
        "<p class=\"caption\"><b>{}</b> ({}) <span>{}</span></p>\n<table>\n<tr>",
        esc(&t.experiment),
        esc(t.kind.as_str()),
        esc(&t.caption())
    );
    for head in &t.headers {
        h.push_str(&format!("<th>{}</th>", esc(head)));
    }
    h.push_str("</tr>\n");
    for r in &t.rows {
        h.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i < t.n_params {
                ""
            } else if t.headers.get(i).is_some_and(|h| is_ratio_header(h)) {
                " class=\"n ratio\""
            } else {
                " class=\"n\""
            };
            h.push_str(&format!("<td{class}>{}</td>", esc(c)));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
    h
}

/// Removes an XML declaration, if any, so the SVG can sit inside HTML.
fn inline_svg(svg: &str) -> &str {
    match svg.find("<svg") {
        Some(i) => &svg[i..],
        None => svg,
    }
}

/// The self-contained HTML report: inline CSS, SVG charts inlined, no scripts, no external files.
/// The headline tables come first.
pub(crate) fn html(rs: &ResultSet, charts: &[Rendered], failures: &[String]) -> String {
    let mut h =
        String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    h.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    h.push_str(&format!(
        "<title>tessera bench — {}</title>\n",
        esc(&rs.test_id)
    ));
    h.push_str(&format!("<style>{CSS}</style>\n</head>\n<body>\n"));
    h.push_str(&format!(
        "<h1>tessera bench — {}</h1>\n<p class=\"meta\">{}</p>\n",
        esc(&rs.test_id),
        esc(&header_line(rs))
    ));
    h.push_str("<h2>Results</h2>\n");
    let ts = tables(rs);
    if ts.is_empty() {
        h.push_str("<p>No results.</p>\n");
    }
    for t in &ts {
        h.push_str(&html_table(t));
    }
    let ranked = rankings(rs);
    if !ranked.is_empty() {
        h.push_str(&format!(
            "<h2>Ranking</h2>\n<p>{}</p>\n",
            esc(RANKING_INTRO)
        ));
        for t in &ranked {
            h.push_str(&html_table(t));
        }
    }
    let modes = super::answers::tables(rs);
    if !modes.is_empty() {
        h.push_str(&format!(
            "<h2>Latency modes and 1-to-N answers</h2>\n<p>{}</p>\n",
            esc(super::answers::INTRO)
        ));
        for t in &modes {
            h.push_str(&html_table(t));
        }
    }
    if !rs.notes.is_empty() {
        h.push_str("<h2>Notes</h2>\n<ul>\n");
        for n in &rs.notes {
            h.push_str(&format!("<li>{}</li>\n", esc(n)));
        }
        h.push_str("</ul>\n");
    }
    if !charts.is_empty() {
        h.push_str("<h2>Charts</h2>\n");
        for c in charts {
            h.push_str(&format!(
                "<figure id=\"{}\">\n{}\n<figcaption>{}</figcaption>\n</figure>\n",
                esc(&c.name),
                inline_svg(&c.svg),
                esc(&c.title)
            ));
        }
    }
    h.push_str("<h2>Environment</h2>\n");
    h.push_str(&format!("<p>{}</p>\n", esc(&environment_paragraph(rs))));
    let res = resources(rs);
    if !res.is_empty() {
        h.push_str("<h2>Resource use</h2>\n<table>\n<tr>");
        for head in RESOURCE_HEADERS {
            h.push_str(&format!("<th>{}</th>", esc(head)));
        }
        h.push_str("</tr>\n");
        for r in &res {
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                esc(&r[0]),
                esc(&r[1]),
                esc(&r[2]),
                esc(&r[3])
            ));
        }
        h.push_str("</table>\n");
    }
    h.push_str("<h2>How measured</h2>\n<ul>\n");
    for b in how_measured(rs, failures) {
        h.push_str(&format!("<li>{}</li>\n", esc(&b)));
    }
    h.push_str("</ul>\n</body>\n</html>\n");
    h
}
