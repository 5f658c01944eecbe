//! The latency cells' measurement mode and 1-to-N answers: one table per latency experiment
//! that ran a count-based cell (`count = N`) or a 1-to-N cell whose pinger reports per ping
//! its first and last answer. Each row says how the cell was measured (N round trips, or a
//! duration where the worker cannot count: ddsperf, the raw floors) and, for 1-to-N,
//! DerechoDDS's "first answer" (time to the first pong of each ping) apart from "all answers"
//! (time to the last), with the CPU of every process of the cell per ping.

use crate::results::{Kind, ResultSet};
use crate::runner::{
    ALL_ANSWERS_P50, ALL_ANSWERS_P99, COUNT_TARGET, CPU_PER_PING, FIRST_ANSWER_P50,
    FIRST_ANSWER_P99,
};

use super::table::{by_experiment, pair_display, pair_rank, row_key, split_params, Table};

/// A figure to one decimal, or a dash.
fn fig(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.1}"))
}

/// The tables (none when no latency experiment counted or fanned out).
pub(super) fn tables(rs: &ResultSet) -> Vec<Table> {
    let mut out = Vec::new();
    for (experiment, kind, mut cells) in by_experiment(rs) {
        if kind != Kind::Latency {
            continue;
        }
        let relevant = |m: &str| cells.iter().any(|c| c.median(m).is_some());
        let counted = relevant(COUNT_TARGET);
        let fanned = relevant(CPU_PER_PING);
        if !counted && !fanned {
            continue;
        }
        let (varying, fixed) = split_params(&cells);
        cells.sort_by_key(|c| (row_key(c, &varying), pair_rank(c.pair)));
        let mut headers: Vec<String> = varying.clone();
        headers.extend(["pair", "mode", "pongs measured"].map(String::from));
        if fanned {
            headers.extend(
                [
                    "first answer p50 µs",
                    "first answer p99 µs",
                    "all answers p50 µs",
                    "all answers p99 µs",
                    "CPU µs/ping (all processes)",
                ]
                .map(String::from),
            );
        }
        let rows = cells
            .iter()
            .map(|c| {
                let mut row = row_key(c, &varying);
                row.push(pair_display(c.pair));
                row.push(match c.median(COUNT_TARGET) {
                    Some(n) => format!("count {n:.0}"),
                    None => "duration".to_string(),
                });
                let mut counts: Vec<f64> = c
                    .rounds
                    .iter()
                    .filter_map(|p| p.latency.as_ref().map(|l| l.count as f64))
                    .collect();
                row.push(
                    crate::results::median_of(&mut counts)
                        .map_or_else(|| "–".to_string(), |n| format!("{n:.0}")),
                );
                if fanned {
                    for m in [
                        FIRST_ANSWER_P50,
                        FIRST_ANSWER_P99,
                        ALL_ANSWERS_P50,
                        ALL_ANSWERS_P99,
                        CPU_PER_PING,
                    ] {
                        row.push(fig(c.median(m)));
                    }
                }
                row
            })
            .collect();
        out.push(Table {
            experiment,
            kind,
            what: "how each cell was measured; per ping its first and its last answer",
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

/// What the section says before its tables.
pub(super) const INTRO: &str = "A latency cell runs for a duration, or, with `count = N`, \
     until N round trips past the warm-up (every worker that can stop after N: tessera perf, \
     fastdds-perf, cyclone-perf and the Rust peers; ddsperf and the raw floors cannot, so their \
     cells stay duration-based). In a 1-to-N cell the pinger waits for every ponger before the \
     next ping: \"first answer\" is the round trip to the first pong of each ping (DerechoDDS's \
     definition), \"all answers\" to the last; CPU per ping sums every process of the cell.";
