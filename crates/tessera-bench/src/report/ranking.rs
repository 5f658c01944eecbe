//! The ranking section: for every latency and throughput cell that three or more pairs measured,
//! the pairs from best to worst (median p50 round trip, or samples/s), each with its ratio to the
//! best of the cell and its CPU per round trip or sample. The headline tables put the pairs side
//! by side; this answers "who is fastest here, by how much, and at what CPU cost" when there are
//! more than two implementations (`tessera bench peers`).

use super::table::{
    by_experiment, fmt_num, pair_display, pair_rank, param_header, row_key, split_params, Table,
};
use crate::results::{Cell, Kind};
use crate::runner::CPU_METRIC;

/// Fewest pairs with a figure in one cell for it to be ranked.
const MIN_RANKED: usize = 3;

/// The ranked figure of a kind and whether lower is better; `None` for kinds not ranked.
fn ranked_metric(kind: Kind) -> Option<(&'static str, bool)> {
    match kind {
        Kind::Latency => Some(("p50_us", true)),
        Kind::Throughput => Some(("samples_per_s", false)),
        _ => None,
    }
}

/// One ranking table per latency or throughput experiment with at least one cell of
/// [`MIN_RANKED`] measured pairs; its rows are (cell parameters, rank, pair, figure, ratio to
/// the best, CPU per round trip or sample), best first within each cell.
pub(super) fn rankings(rs: &crate::results::ResultSet) -> Vec<Table> {
    let mut out = Vec::new();
    for (experiment, kind, cells) in by_experiment(rs) {
        let Some((metric, lower_better)) = ranked_metric(kind) else {
            continue;
        };
        let (varying, fixed) = split_params(&cells);
        let mut keys: Vec<Vec<String>> = Vec::new();
        for c in &cells {
            let k = row_key(c, &varying);
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
        let mut rows = Vec::new();
        for key in &keys {
            let in_cell: Vec<&Cell<'_>> = cells
                .iter()
                .filter(|c| &row_key(c, &varying) == key)
                .collect();
            rows.extend(rank_cell(key, &in_cell, metric, lower_better));
        }
        if rows.is_empty() {
            continue;
        }
        let mut headers: Vec<String> = varying.iter().map(|n| param_header(n)).collect();
        let (figure, unit) = match kind {
            Kind::Latency => ("p50 round trip µs", "round trip"),
            _ => ("samples/s", "sample"),
        };
        headers.extend([
            "rank".to_string(),
            "pair".to_string(),
            figure.to_string(),
            "× best".to_string(),
            format!("CPU µs/{unit}"),
        ]);
        out.push(Table {
            experiment,
            kind,
            what: if lower_better {
                "ranking by round-trip latency p50 (× best: how many times slower than the best)"
            } else {
                "ranking by throughput (× best: the share of the best rate)"
            },
            fixed,
            rounds: cells.iter().map(|c| c.rounds.len()).max().unwrap_or(0),
            n_params: varying.len(),
            headers,
            rows,
            ratio_note: None,
        });
    }
    out
}

/// The rows of one cell, best first; pairs without the figure (failed) last, unranked. Empty
/// when fewer than [`MIN_RANKED`] pairs have the figure.
fn rank_cell(
    key: &[String],
    cells: &[&Cell<'_>],
    metric: &str,
    lower_better: bool,
) -> Vec<Vec<String>> {
    let mut measured: Vec<(&Cell<'_>, f64)> = cells
        .iter()
        .filter_map(|c| {
            c.median(metric)
                .filter(|v| v.is_finite() && *v > 0.0)
                .map(|v| (*c, v))
        })
        .collect();
    if measured.len() < MIN_RANKED {
        return Vec::new();
    }
    measured.sort_by(|a, b| {
        let o = a.1.partial_cmp(&b.1).unwrap_or(std::cmp::Ordering::Equal);
        let o = if lower_better { o } else { o.reverse() };
        o.then_with(|| pair_rank(a.0.pair).cmp(&pair_rank(b.0.pair)))
    });
    let best = measured[0].1;
    let cpu = |c: &Cell<'_>| {
        c.median(CPU_METRIC)
            .map(fmt_num)
            .unwrap_or_else(|| "–".to_string())
    };
    let mut rows = Vec::new();
    for (i, (c, v)) in measured.iter().enumerate() {
        let mut row = key.to_vec();
        row.extend([
            (i + 1).to_string(),
            pair_display(c.pair),
            fmt_num(*v),
            format!("{:.2}×", v / best),
            cpu(c),
        ]);
        rows.push(row);
    }
    let mut unmeasured: Vec<&&Cell<'_>> = cells
        .iter()
        .filter(|c| !measured.iter().any(|(m, _)| m.pair == c.pair))
        .collect();
    unmeasured.sort_by_key(|c| pair_rank(c.pair));
    for c in unmeasured {
        let mut row = key.to_vec();
        row.extend([
            "–".to_string(),
            pair_display(c.pair),
            if c.failed > 0 { "failed" } else { "n/a" }.to_string(),
            "–".to_string(),
            cpu(c),
        ]);
        rows.push(row);
    }
    rows
}
