//! The headline tables: per experiment, one row per parameter combination, the headline metric
//! of every pair side by side (medians over rounds) and the Tessera/Cyclone ratio. Rendered for
//! the terminal ([`terminal_summary`]) and as Markdown ([`markdown_tables`]); the HTML report
//! renders the same [`Table`]s.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::results::{value_text, Cell, Kind, Pair, ResultSet};
use crate::runner::CPU_METRIC;

/// Pairs in the order every table, chart and legend uses.
const PAIR_ORDER: &[&str] = &[
    "tessera",
    "tessera-atomic",
    "tessera-shm",
    "tessera-shm-spin",
    "tessera-loan",
    "tessera-loan-spin",
    "cyclone",
    "cyclone-c",
    "fastdds",
    "fastdds-udp",
    "tessera>cyclone",
    "cyclone>tessera",
    "tessera>cyclone-c",
    "cyclone-c>tessera",
    "tessera>fastdds",
    "fastdds>tessera",
    "udp",
    "shm",
    "shm-spin",
];

/// Parameters in the order table columns and facet labels use; others follow alphabetically.
const PARAM_ORDER: &[&str] = &[
    "case",
    "phase",
    "reliability",
    "history",
    "read_mode",
    "multicast",
    "instances",
    "hosts",
    "subscribers",
    "participants",
    "samples",
    "link_mbit",
    "rate",
    "size",
];

/// Sort key of a pair label (canonical pairs first, then alphabetical).
pub(super) fn pair_rank(label: &str) -> (usize, String) {
    let i = PAIR_ORDER
        .iter()
        .position(|p| *p == label)
        .unwrap_or(PAIR_ORDER.len());
    (i, label.to_string())
}

/// Display name of a pair label (`Tessera → Cyclone DDS`), the label itself when unknown.
pub fn pair_display(label: &str) -> String {
    Pair::from_label(label)
        .map(|p| p.display())
        .unwrap_or_else(|| label.to_string())
}

fn param_rank(name: &str) -> (usize, String) {
    let i = PARAM_ORDER
        .iter()
        .position(|p| *p == name)
        .unwrap_or(PARAM_ORDER.len());
    (i, name.to_string())
}

/// Sorts parameter names into table order.
pub(super) fn sort_params(names: &mut [String]) {
    names.sort_by_key(|n| param_rank(n));
}

/// Column header of a parameter, with its unit.
pub(super) fn param_header(name: &str) -> String {
    match name {
        "size" => "size (B)".to_string(),
        "rate" => "rate (/s)".to_string(),
        "link_mbit" => "link (Mbit/s)".to_string(),
        other => other.to_string(),
    }
}

/// `name=value` for captions and facet titles, in words where that reads better.
pub(super) fn param_phrase(name: &str, v: &Value) -> String {
    let t = value_text(v);
    match name {
        "subscribers" => format!("1-to-{t} subscriber{}", if t == "1" { "" } else { "s" }),
        "size" => format!("{t} B"),
        "rate" if t == "0" => "unpaced".to_string(),
        "rate" => format!("{}/s", fmt_num(v.as_f64().unwrap_or(f64::NAN))),
        "link_mbit" => format!("{t} Mbit/s link"),
        "multicast" => {
            if v.as_bool() == Some(true) {
                "multicast".to_string()
            } else {
                "unicast".to_string()
            }
        }
        "case" => format!("case {t}"),
        _ => format!("{name}={t}"),
    }
}

/// Compact number: three significant figures, `k`/`M` from ten thousand up.
pub(super) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    // Three significant figures of `x`, without a needless trailing fraction.
    fn sig3(x: f64) -> String {
        let a = x.abs();
        if a >= 99.95 || a == 0.0 {
            format!("{x:.0}")
        } else if a >= 9.995 {
            format!("{x:.1}")
        } else {
            format!("{x:.2}")
        }
    }
    let a = v.abs();
    if a >= 999_500.0 {
        format!("{}M", sig3(v / 1e6))
    } else if a >= 9_999.5 {
        format!("{}k", sig3(v / 1e3))
    } else if a >= 99.95 {
        format!("{v:.0}")
    } else {
        sig3(v)
    }
}

/// A count: exact below ten thousand, `k`/`M` above.
pub(super) fn fmt_count(v: f64) -> String {
    if v.is_finite() && v.abs() < 1e4 {
        format!("{v:.0}")
    } else {
        fmt_num(v)
    }
}

/// One experiment's headline table.
#[derive(Debug, Clone)]
pub(super) struct Table {
    /// Experiment name.
    pub experiment: String,
    /// Its kind.
    pub kind: Kind,
    /// What the pair columns hold, with units.
    pub what: &'static str,
    /// Parameters equal in every cell (`name=value` phrases).
    pub fixed: Vec<String>,
    /// Most rounds of any cell.
    pub rounds: usize,
    /// Column headers: varying parameters, pairs, then the ratio when present.
    pub headers: Vec<String>,
    /// How many leading columns are parameters.
    pub n_params: usize,
    /// Rows of text cells.
    pub rows: Vec<Vec<String>>,
    /// How to read the ratio, when there is a ratio column.
    pub ratio_note: Option<String>,
}

/// The ratio columns of the headline tables, each shown when both its pairs were measured:
/// (numerator pair, denominator pair, header). ATOMIC is compared with EVENTUAL Tessera (its
/// cost) and with Cyclone.
const RATIOS: &[(&str, &str, &str)] = &[
    ("tessera", "cyclone", "Tessera/Cyclone"),
    ("tessera-atomic", "tessera", "ATOMIC/EVENTUAL"),
    ("tessera-atomic", "cyclone", "ATOMIC/Cyclone"),
];

/// Whether a column header is one of the ratio columns (shown in bold in HTML).
pub(super) fn is_ratio_header(header: &str) -> bool {
    RATIOS.iter().any(|(_, _, h)| *h == header)
}

/// What a pair column of `kind` shows.
fn what(kind: Kind) -> &'static str {
    match kind {
        Kind::Latency => "round-trip latency p50 µs ± stddev",
        Kind::Throughput => "throughput, samples/s (all subscribers)",
        Kind::RateStep => "max sustainable rate / knee rate, samples/s",
        Kind::Discovery => {
            "discovery time, ms (all participants discovered all), with the UDP datagrams and \
             bytes every process sent meanwhile"
        }
        Kind::LateJoiner => "late joiner: time to first sample, ms",
        Kind::Reliability => "critical flow: completion time s / retransmits",
        Kind::Failure => {
            "the shared part killed with -9 (none when decentralized) and restarted: the flow \
             during the outage (% of the rate), its longest gap, samples lost, the late reader's \
             first sample (ms after it started) and when both readers receive again (ms after \
             the restart)"
        }
    }
}

/// The scalar the ratio compares, and whether lower is better.
fn ratio_metric(kind: Kind) -> (&'static str, bool) {
    match kind {
        Kind::Latency => ("p50_us", true),
        Kind::Throughput => ("samples_per_s", false),
        Kind::RateStep => ("max_sustainable_rate", false),
        Kind::Discovery => ("discovery_ms", true),
        Kind::LateJoiner => ("first_sample_ms", true),
        Kind::Reliability => ("completion_s", true),
        Kind::Failure => ("gap_ms", true),
    }
}

/// The text of one pair cell.
fn headline(kind: Kind, cell: &Cell<'_>) -> String {
    if cell.rounds.is_empty() {
        return if cell.failed > 0 {
            "failed".to_string()
        } else {
            "–".to_string()
        };
    }
    let m = |n: &str| cell.median(n);
    let na = || "n/a".to_string();
    let s = match kind {
        Kind::Latency => match (m("p50_us"), m("stddev_us")) {
            (Some(p), Some(sd)) => format!("{} ± {}", fmt_num(p), fmt_num(sd)),
            (Some(p), None) => fmt_num(p),
            _ => na(),
        },
        Kind::Throughput => match (m("samples_per_s"), m("link_datagrams_per_s")) {
            // Points that counted the LAN (several applications, a node service).
            (Some(t), Some(d)) => format!("{} ({} datagrams/s on the LAN)", fmt_num(t), fmt_num(d)),
            (Some(t), None) => fmt_num(t),
            _ => na(),
        },
        Kind::RateStep => match (m("max_sustainable_rate"), m("knee_rate")) {
            (Some(a), Some(k)) => format!("{} / {}", fmt_num(a), fmt_num(k)),
            (Some(a), None) => fmt_num(a),
            (None, Some(k)) => format!("– / {}", fmt_num(k)),
            _ => na(),
        },
        Kind::Discovery => match (
            m("discovery_ms"),
            m("discovery_datagrams"),
            m("discovery_bytes"),
        ) {
            (Some(ms), Some(d), Some(b)) => format!(
                "{} ({} datagrams, {} kB)",
                fmt_num(ms),
                fmt_count(d),
                fmt_num(b / 1e3)
            ),
            (Some(ms), _, _) => fmt_num(ms),
            _ => na(),
        },
        Kind::LateJoiner => m("first_sample_ms").map(fmt_num).unwrap_or_else(na),
        Kind::Failure => failure_headline(&m),
        Kind::Reliability => match (m("completion_s"), m("retransmits")) {
            (Some(c), Some(r)) => format!("{} s / {}", fmt_num(c), fmt_count(r)),
            (Some(c), None) => format!("{} s", fmt_num(c)),
            (None, Some(r)) => format!("– / {}", fmt_count(r)),
            _ => na(),
        },
    };
    if cell.failed > 0 {
        format!("{s} ({} failed)", cell.failed)
    } else {
        s
    }
}

/// A failure cell: `flow 100% · gap 4 ms · lost 0 · join 35 ms · back 0 ms`; a reader that
/// never got a sample shows `never`.
fn failure_headline(m: &dyn Fn(&str) -> Option<f64>) -> String {
    let ms = |n: &str| m(n).map_or("never".to_string(), |v| format!("{} ms", fmt_num(v)));
    format!(
        "flow {}% · gap {} · lost {} · join {} · back {}",
        m("outage_flow_pct").map_or("–".to_string(), |v| format!("{v:.0}")),
        ms("gap_ms"),
        m("lost").map_or("–".to_string(), fmt_count),
        ms("late_join_ms"),
        ms("recovered_ms"),
    )
}

/// Cells grouped by experiment, experiments in first-measured order.
pub(super) fn by_experiment<'a>(rs: &'a ResultSet) -> Vec<(String, Kind, Vec<Cell<'a>>)> {
    let mut out: Vec<(String, Kind, Vec<Cell<'a>>)> = Vec::new();
    for cell in rs.cells() {
        match out.iter_mut().find(|(e, _, _)| e == cell.experiment) {
            Some((_, _, cells)) => cells.push(cell),
            None => out.push((cell.experiment.to_string(), cell.kind, vec![cell])),
        }
    }
    out
}

/// Parameters of `cells` split into (varying names in table order, fixed `name=value` phrases).
pub(super) fn split_params(cells: &[Cell<'_>]) -> (Vec<String>, Vec<String>) {
    let mut all: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for c in cells {
        for (k, v) in c.params {
            all.entry(k).or_default().insert(v.to_string());
        }
    }
    let mut varying = Vec::new();
    let mut fixed_names = Vec::new();
    for (k, vals) in &all {
        let everywhere = cells.iter().all(|c| c.params.contains_key(*k));
        if vals.len() > 1 || !everywhere {
            varying.push(k.to_string());
        } else {
            fixed_names.push(k.to_string());
        }
    }
    sort_params(&mut varying);
    sort_params(&mut fixed_names);
    let fixed = fixed_names
        .iter()
        .filter_map(|n| {
            cells
                .first()
                .and_then(|c| c.params.get(n))
                .map(|v| param_phrase(n, v))
        })
        .collect();
    (varying, fixed)
}

/// The key of a row: the values of the varying parameters.
pub(super) fn row_key(cell: &Cell<'_>, varying: &[String]) -> Vec<String> {
    varying
        .iter()
        .map(|n| cell.params.get(n).map(value_text).unwrap_or_default())
        .collect()
}

/// Pair labels of `cells` in canonical order.
pub(super) fn pairs_of(cells: &[Cell<'_>]) -> Vec<String> {
    let mut pairs: Vec<String> = cells.iter().map(|c| c.pair.to_string()).collect();
    pairs.sort_by_key(|p| pair_rank(p));
    pairs.dedup();
    pairs
}

/// Builds the headline table of every experiment of `rs`.
pub(super) fn tables(rs: &ResultSet) -> Vec<Table> {
    let mut out = Vec::new();
    for (experiment, kind, cells) in by_experiment(rs) {
        let (varying, fixed) = split_params(&cells);
        let pairs = pairs_of(&cells);
        let has = |label: &str| pairs.iter().any(|p| p == label);
        let ratios: Vec<&(&str, &str, &str)> =
            RATIOS.iter().filter(|(a, b, _)| has(a) && has(b)).collect();

        // Rows in first-measured order of their parameter combination.
        let mut keys: Vec<Vec<String>> = Vec::new();
        for c in &cells {
            let k = row_key(c, &varying);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let (ratio_name, lower_better) = ratio_metric(kind);
        let has_cpu = cells.iter().any(|c| c.median(CPU_METRIC).is_some());
        let mut rows = Vec::new();
        for key in &keys {
            let mut row = key.clone();
            let in_row: Vec<&Cell<'_>> = cells
                .iter()
                .filter(|c| &row_key(c, &varying) == key)
                .collect();
            for pair in &pairs {
                match in_row.iter().find(|c| c.pair == pair) {
                    Some(c) => row.push(headline(kind, c)),
                    None => row.push("–".to_string()),
                }
            }
            let v = |label: &str| {
                in_row
                    .iter()
                    .find(|c| c.pair == label)
                    .and_then(|c| c.median(ratio_name))
            };
            for (num, den, _) in &ratios {
                let r = match (v(num), v(den)) {
                    (Some(t), Some(c)) if c != 0.0 && t.is_finite() && c.is_finite() => {
                        format!("{:.2}×", t / c)
                    }
                    _ => "–".to_string(),
                };
                row.push(r);
            }
            if has_cpu {
                let per_pair: Vec<String> = pairs
                    .iter()
                    .map(|pair| {
                        in_row
                            .iter()
                            .find(|c| c.pair == pair)
                            .and_then(|c| c.median(CPU_METRIC))
                            .map(fmt_num)
                            .unwrap_or_else(|| "–".to_string())
                    })
                    .collect();
                row.push(per_pair.join(" / "));
            }
            rows.push(row);
        }

        let mut headers: Vec<String> = varying.iter().map(|n| param_header(n)).collect();
        headers.extend(pairs.iter().map(|p| pair_display(p)));
        headers.extend(ratios.iter().map(|(_, _, h)| h.to_string()));
        if has_cpu {
            let unit = if kind == Kind::Latency {
                "round trip"
            } else {
                "sample"
            };
            let names: Vec<String> = pairs.iter().map(|p| pair_display(p)).collect();
            headers.push(format!("CPU µs/{unit} ({})", names.join(" / ")));
        }
        let side = if lower_better { "below" } else { "above" };
        let ratio_note = match ratios.as_slice() {
            [] => None,
            [(_, _, "Tessera/Cyclone")] => Some(format!("ratio {side} 1 favours Tessera")),
            _ => Some(format!("a ratio {side} 1 favours the first-named pair")),
        };
        out.push(Table {
            experiment,
            kind,
            what: what(kind),
            fixed,
            rounds: cells.iter().map(|c| c.rounds.len()).max().unwrap_or(0),
            n_params: varying.len(),
            headers,
            rows,
            ratio_note,
        });
    }
    out
}

impl Table {
    /// One line describing the table: its metric, fixed parameters and aggregation.
    pub(super) fn caption(&self) -> String {
        let mut s = format!("{} — median of {} round", self.what, self.rounds);
        if self.rounds != 1 {
            s.push('s');
        }
        if !self.fixed.is_empty() {
            s.push_str("; ");
            s.push_str(&self.fixed.join(", "));
        }
        if let Some(n) = &self.ratio_note {
            s.push_str("; ");
            s.push_str(n);
        }
        s
    }
}

fn width(s: &str) -> usize {
    s.chars().count()
}

/// A compact aligned table for the end of a run: per experiment, one row per parameter
/// combination, each pair's headline metric side by side (medians over rounds) and the
/// Tessera/Cyclone ratio (and ATOMIC/EVENTUAL, ATOMIC/Cyclone when the ATOMIC pair ran).
pub fn terminal_summary(rs: &ResultSet) -> String {
    let mut out = String::new();
    // The ranking tables follow the headline tables under their own title.
    let ranked = super::ranking::rankings(rs);
    let n_headline = tables(rs).len();
    for (i, t) in tables(rs).into_iter().chain(ranked).enumerate() {
        if i == n_headline {
            out.push_str("Ranking (best first per cell)\n\n");
        }
        out.push_str(&format!("{} ({})\n", t.experiment, t.kind.as_str()));
        out.push_str(&format!("  {}\n", t.caption()));
        let ncol = t.headers.len();
        let mut widths: Vec<usize> = t.headers.iter().map(|h| width(h)).collect();
        for r in &t.rows {
            for (i, c) in r.iter().enumerate().take(ncol) {
                widths[i] = widths[i].max(width(c));
            }
        }
        let line = |cells: &[String]| -> String {
            let mut s = String::from("  ");
            for (i, c) in cells.iter().enumerate().take(ncol) {
                let pad = widths[i].saturating_sub(width(c));
                if i > 0 {
                    s.push_str("  ");
                }
                // Parameters left-aligned, figures right-aligned.
                if i < t.n_params {
                    s.push_str(c);
                    s.push_str(&" ".repeat(pad));
                } else {
                    s.push_str(&" ".repeat(pad));
                    s.push_str(c);
                }
            }
            s.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&t.headers));
        let total: usize = widths.iter().sum::<usize>() + 2 * ncol.saturating_sub(1);
        out.push_str(&format!("  {}\n", "─".repeat(total)));
        for r in &t.rows {
            out.push_str(&line(r));
        }
        out.push('\n');
    }
    if out.is_empty() {
        out.push_str("no results\n");
    }
    out
}

fn md_escape(s: &str) -> String {
    s.replace('|', "\\|")
}

/// Markdown rendering of one table (caption line, then the table).
pub(super) fn markdown_table(t: &Table) -> String {
    let mut out = format!(
        "**{}** ({}): {}\n\n",
        t.experiment,
        t.kind.as_str(),
        t.caption()
    );
    out.push('|');
    for h in &t.headers {
        out.push_str(&format!(" {} |", md_escape(h)));
    }
    out.push_str("\n|");
    for i in 0..t.headers.len() {
        out.push_str(if i < t.n_params { "---|" } else { "---:|" });
    }
    out.push('\n');
    for r in &t.rows {
        out.push('|');
        for c in r {
            out.push_str(&format!(" {} |", md_escape(c)));
        }
        out.push('\n');
    }
    out
}

/// The headline tables of [`terminal_summary`] in Markdown, one per experiment.
pub fn markdown_tables(rs: &ResultSet) -> String {
    tables(rs)
        .iter()
        .map(markdown_table)
        .collect::<Vec<_>>()
        .join("\n")
}
