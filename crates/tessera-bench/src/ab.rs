//! `tessera bench ab`: two builds of Tessera measured against each other, run after run.
//!
//!   tessera bench ab --a DIR_A --b DIR_B [--runs N] [--out DIR] [--threshold PCT]
//!                    SCENARIO [run options]
//!
//! Each run is a whole `tessera bench SCENARIO` with this harness, measuring `DIR/tessera` (and
//! the `tessera-node` beside it) of one build; runs alternate A B B A A B …, so a drift of the
//! machine (this VM's wake-up cost moves by 1.5× within minutes) falls on both builds alike.
//! Per cell and headline metric (and CPU per sample or round trip) each run gives one value,
//! its median over the run's rounds; the report puts the two builds' medians over runs side by
//! side with the change and a two-sided permutation test on the runs' values (exact while the
//! arrangements number at most [`EXACT_LIMIT`], else sampled). A change is called better or
//! worse only when it exceeds the threshold *and* p < 0.05: on a noisy machine most changes of
//! a few percent are neither. The `tessera-atomic` pair runs the harness's own build, so it
//! measures nothing here.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::compare::{self, headline_metrics};
use crate::results::{median_of, ResultSet};
use crate::runner::CPU_METRIC;
use crate::{EXIT_ERROR, EXIT_OK, EXIT_USAGE};

/// Arrangements of the runs' values enumerated for an exact p-value; beyond, a fixed-seed
/// sample of [`SAMPLED_ARRANGEMENTS`] of them.
pub const EXACT_LIMIT: u64 = 200_000;
/// Arrangements sampled for a p-value when there are more than [`EXACT_LIMIT`].
pub const SAMPLED_ARRANGEMENTS: u64 = 100_000;
/// Significance level for calling a change better or worse.
pub const ALPHA: f64 = 0.05;

/// What `ab` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct AbOptions {
    /// Build A's directory (holding `tessera`).
    pub a: PathBuf,
    /// Build B's directory.
    pub b: PathBuf,
    /// Runs per build.
    pub runs: u32,
    /// Where the runs and `ab.md` go.
    pub out: PathBuf,
    /// Changes within this many percent are not called better or worse.
    pub threshold_pct: f64,
    /// The scenario and run options, passed to every run.
    pub pass: Vec<String>,
}

/// Parses `ab`'s arguments (after the word `ab`).
pub fn parse(args: &[String]) -> Result<AbOptions, String> {
    let mut a = None;
    let mut b = None;
    let mut runs = 4u32;
    let mut out = None;
    let mut threshold_pct = 2.0;
    let mut pass = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match arg.as_str() {
            "--a" => a = Some(PathBuf::from(value("--a")?)),
            "--b" => b = Some(PathBuf::from(value("--b")?)),
            "--runs" => {
                runs = value("--runs")?
                    .parse()
                    .ok()
                    .filter(|n| (2..=100).contains(n))
                    .ok_or("--runs must be 2..=100")?;
            }
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--threshold" => {
                threshold_pct = value("--threshold")?
                    .parse()
                    .ok()
                    .filter(|t: &f64| t.is_finite() && *t >= 0.0)
                    .ok_or("--threshold needs a percentage")?;
            }
            "--tessera" | "--print-scenario" => {
                return Err(format!("{arg} is set by ab for each run"));
            }
            _ => pass.push(arg.clone()),
        }
    }
    let (Some(a), Some(b)) = (a, b) else {
        return Err("ab needs --a DIR and --b DIR (each holding a tessera binary)".into());
    };
    if pass.iter().any(|p| p == "--out") {
        return Err("--out goes before the scenario's options only once, as ab's own".into());
    }
    let out = out.unwrap_or_else(|| {
        PathBuf::from("bench-results").join(format!(
            "ab-{}",
            crate::runner::utc_stamp(std::time::SystemTime::now()).0
        ))
    });
    Ok(AbOptions {
        a,
        b,
        runs,
        out,
        threshold_pct,
        pass,
    })
}

/// The order of the runs: A B, B A, A B, … (each build first in half of the pairs).
pub fn order(runs: u32) -> Vec<(char, u32)> {
    (0..runs)
        .flat_map(|i| {
            if i % 2 == 0 {
                [('A', i + 1), ('B', i + 1)]
            } else {
                [('B', i + 1), ('A', i + 1)]
            }
        })
        .collect()
}

/// One compared metric of one cell, over runs.
#[derive(Debug, Clone, PartialEq)]
pub struct AbRow {
    /// Experiment name.
    pub experiment: String,
    /// Pair label.
    pub pair: String,
    /// Parameters as `k=v,k=v`.
    pub params: String,
    /// Metric name.
    pub metric: String,
    /// Each run's value for build A (its median over the run's rounds), in run order.
    pub a: Vec<f64>,
    /// The same for build B.
    pub b: Vec<f64>,
    /// `(median b - median a) / median a`, percent.
    pub change_pct: f64,
    /// Two-sided permutation p-value of the difference of the runs' rank sums.
    pub p: f64,
    /// `"better"` / `"worse"`: beyond the threshold and p < [`ALPHA`].
    pub flag: Option<&'static str>,
}

impl AbRow {
    /// Median over build A's runs.
    pub fn median_a(&self) -> f64 {
        median_of(&mut self.a.clone()).unwrap_or(f64::NAN)
    }

    /// Median over build B's runs.
    pub fn median_b(&self) -> f64 {
        median_of(&mut self.b.clone()).unwrap_or(f64::NAN)
    }
}

/// Compares the runs of B against those of A: one row per cell (in the first A run's order)
/// and metric that some run of each build has.
pub fn rows(a_runs: &[ResultSet], b_runs: &[ResultSet], threshold_pct: f64) -> Vec<AbRow> {
    // Each run's cells, keyed once (not once per cell and metric).
    let a_cells: Vec<_> = a_runs.iter().map(compare::keyed_cells).collect();
    let b_cells: Vec<_> = b_runs.iter().map(compare::keyed_cells).collect();
    let Some(first) = a_cells.first() else {
        return Vec::new();
    };
    let per_run = |runs: &[Vec<(String, crate::results::Cell<'_>)>], key: &str, metric: &str| {
        runs.iter()
            .filter_map(|cells| {
                cells
                    .iter()
                    .find(|(k, _)| k == key)
                    .and_then(|(_, c)| c.median(metric))
            })
            .filter(|v| v.is_finite())
            .collect::<Vec<f64>>()
    };
    let mut out = Vec::new();
    for (key, cell) in first {
        let metrics = headline_metrics(cell.kind)
            .iter()
            .copied()
            .chain([(CPU_METRIC, true)]);
        for (metric, lower_is_better) in metrics {
            let (a, b) = (
                per_run(&a_cells, key, metric),
                per_run(&b_cells, key, metric),
            );
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let (ma, mb) = (
                median_of(&mut a.clone()).unwrap_or(f64::NAN),
                median_of(&mut b.clone()).unwrap_or(f64::NAN),
            );
            let change_pct = compare::change_pct(ma, mb);
            let p = permutation_p(&a, &b);
            let flag = (change_pct.abs() > threshold_pct && p < ALPHA).then_some(
                if (change_pct < 0.0) == lower_is_better {
                    "better"
                } else {
                    "worse"
                },
            );
            out.push(AbRow {
                experiment: cell.experiment.to_string(),
                pair: cell.pair.to_string(),
                params: compare::params_text(cell),
                metric: metric.to_string(),
                a,
                b,
                change_pct,
                p,
                flag,
            });
        }
    }
    out
}

/// Two-sided permutation p-value for "A and B come from one distribution": the share of the
/// ways to split the pooled values into groups of A's and B's sizes whose rank sum for A lies
/// at least as far from its mean as the observed one (mid-ranks for ties). Exact up to
/// [`EXACT_LIMIT`] arrangements, else estimated from a fixed-seed sample.
pub fn permutation_p(a: &[f64], b: &[f64]) -> f64 {
    let (n, m) = (a.len(), b.len());
    if n == 0 || m == 0 {
        return 1.0;
    }
    let ranks = mid_ranks(&[a, b].concat());
    let mean = n as f64 * (n + m + 1) as f64 / 2.0;
    let observed = (ranks[..n].iter().sum::<f64>() - mean).abs();
    // Rank sums are multiples of 0.5: a small tolerance keeps equal ones equal.
    let extreme = |sum: f64| (sum - mean).abs() >= observed - 1e-9;
    let total = binomial(n + m, n);
    if total <= EXACT_LIMIT {
        let mut hits = 0u64;
        let mut count = 0u64;
        for_each_subset(n + m, n, &mut |picked| {
            count += 1;
            if extreme(picked.iter().map(|&i| ranks[i]).sum()) {
                hits += 1;
            }
        });
        return hits as f64 / count as f64;
    }
    let mut rng = 0x5eed_0ab5_u64;
    let mut idx: Vec<usize> = (0..n + m).collect();
    let mut hits = 1u64; // The observed arrangement counts (an unbiased estimate's +1).
    for _ in 0..SAMPLED_ARRANGEMENTS {
        // A partial Fisher–Yates shuffle picks n of the n + m places.
        for i in 0..n {
            let j = i + (splitmix(&mut rng) % (n + m - i) as u64) as usize;
            idx.swap(i, j);
        }
        if extreme(idx[..n].iter().map(|&i| ranks[i]).sum()) {
            hits += 1;
        }
    }
    hits as f64 / (SAMPLED_ARRANGEMENTS + 1) as f64
}

/// Ranks 1..=len of `v`, ties given the mean of the ranks they span.
fn mid_ranks(v: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&x, &y| v[x].total_cmp(&v[y]));
    let mut ranks = vec![0.0; v.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && v[order[j + 1]] == v[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            ranks[k] = rank;
        }
        i = j + 1;
    }
    ranks
}

/// n choose k, saturating.
fn binomial(n: usize, k: usize) -> u64 {
    let k = k.min(n - k);
    let mut r: u64 = 1;
    for i in 0..k {
        r = r.saturating_mul((n - i) as u64) / (i as u64 + 1);
    }
    r
}

/// Calls `f` with every k-subset of 0..n (indices ascending).
fn for_each_subset(n: usize, k: usize, f: &mut dyn FnMut(&[usize])) {
    fn go(start: usize, n: usize, k: usize, picked: &mut Vec<usize>, f: &mut dyn FnMut(&[usize])) {
        if picked.len() == k {
            f(picked);
            return;
        }
        let need = k - picked.len();
        for i in start..=n - need {
            picked.push(i);
            go(i + 1, n, k, picked, f);
            picked.pop();
        }
    }
    go(0, n, k, &mut Vec::with_capacity(k), f);
}

fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value for the tables: fewer decimals as it grows.
fn num(v: f64) -> String {
    if !v.is_finite() {
        "-".into()
    } else if v.abs() >= 100_000.0 {
        format!("{:.3}M", v / 1e6)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// The comparison as Markdown: one table of medians, changes and p-values, one of every run's
/// values.
pub fn render(rows: &[AbRow], a_name: &str, b_name: &str) -> String {
    // Parameters every row shares are said once, above the tables.
    let split = |r: &AbRow| -> Vec<String> {
        r.params
            .split(',')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    let common: Vec<String> = rows.first().map_or_else(Vec::new, |first| {
        split(first)
            .into_iter()
            .filter(|p| rows.iter().all(|r| split(r).contains(p)))
            .collect()
    });
    let params = |r: &AbRow| {
        let own: Vec<String> = split(r)
            .into_iter()
            .filter(|p| !common.contains(p))
            .collect();
        own.join(",")
    };
    let mut s = String::new();
    if !common.is_empty() {
        s.push_str(&format!("Every cell: {}.\n\n", common.join(", ")));
    }
    s.push_str(&format!(
        "| experiment | pair | params | metric | A: {a_name} | B: {b_name} | change | p | |\n\
         |---|---|---|---|---:|---:|---:|---:|---|\n"
    ));
    for r in rows {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {:+.1}% | {:.3} | {} |\n",
            r.experiment,
            r.pair,
            params(r),
            r.metric,
            num(r.median_a()),
            num(r.median_b()),
            r.change_pct,
            r.p,
            r.flag.unwrap_or("")
        ));
    }
    s.push_str("\nEvery run's value (its median over the run's rounds), in run order:\n\n");
    s.push_str("| experiment | pair | params | metric | A | B |\n|---|---|---|---|---|---|\n");
    for r in rows {
        let list = |v: &[f64]| v.iter().map(|x| num(*x)).collect::<Vec<_>>().join(" ");
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            r.experiment,
            r.pair,
            params(r),
            r.metric,
            list(&r.a),
            list(&r.b)
        ));
    }
    s
}

/// What identifies a build's binary in the report: its path, size and modification time.
fn describe(bin: &Path) -> String {
    match std::fs::metadata(bin) {
        Ok(m) => {
            let when = m
                .modified()
                .map(|t| crate::runner::utc_stamp(t).1)
                .unwrap_or_default();
            format!("`{}` ({} bytes, modified {when})", bin.display(), m.len())
        }
        Err(e) => format!("`{}` ({e})", bin.display()),
    }
}

/// Runs `tessera bench ab`; returns the exit status.
pub fn main(prog: &str, args: &[String]) -> i32 {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{prog} ab: {e}");
            eprintln!(
                "usage: {prog} ab --a DIR_A --b DIR_B [--runs N] [--out DIR] [--threshold PCT] \
                 SCENARIO [run options]"
            );
            return EXIT_USAGE;
        }
    };
    match run(prog, args, &o) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("{prog} ab: {e:#}");
            EXIT_ERROR
        }
    }
}

fn run(prog: &str, args: &[String], o: &AbOptions) -> anyhow::Result<()> {
    use anyhow::Context;
    let bins = [o.a.join("tessera"), o.b.join("tessera")];
    for b in &bins {
        anyhow::ensure!(b.is_file(), "{} is not a file", b.display());
    }
    std::fs::create_dir_all(&o.out).with_context(|| format!("creating {}", o.out.display()))?;
    let me = crate::runner::current_exe()?;
    let started = Instant::now();
    let plan = order(o.runs);
    let mut results: [Vec<ResultSet>; 2] = [Vec::new(), Vec::new()];
    for (i, (side, n)) in plan.iter().enumerate() {
        let which = usize::from(*side == 'B');
        let dir = o.out.join(format!("{side}-{n}"));
        let log = std::fs::File::create(o.out.join(format!("{side}-{n}.log")))?;
        let t0 = Instant::now();
        let status = Command::new(&me)
            .args(&o.pass)
            .arg("--tessera")
            .arg(&bins[which])
            .arg("--out")
            .arg(&dir)
            .arg("--no-progress")
            .stdout(Stdio::from(log))
            .status()
            .with_context(|| format!("starting {}", me.display()))?;
        match compare::load(&dir) {
            Ok(rs) => {
                let failed = rs.points.iter().filter(|p| !p.ok).count();
                println!(
                    "run {}/{}: {side} ({} points, {failed} failed, {:.0} s{})",
                    i + 1,
                    plan.len(),
                    rs.points.len(),
                    t0.elapsed().as_secs_f64(),
                    if status.success() {
                        String::new()
                    } else {
                        format!(", {status}")
                    }
                );
                results[which].push(rs);
            }
            Err(e) => println!("run {}/{}: {side} gave no results ({e})", i + 1, plan.len()),
        }
    }
    let [ra, rb] = &results;
    let rows = rows(ra, rb, o.threshold_pct);
    let table = render(
        &rows,
        &o.a.display().to_string(),
        &o.b.display().to_string(),
    );
    let md = format!(
        "# tessera bench ab\n\n\
         - Command: `{prog} ab {}`\n\
         - A: {}\n- B: {}\n\
         - {} runs each, in the order {}; {:.0} s in all. Each value is one run's median over \
         its rounds; the table gives the medians over runs, the change of B against A and a \
         two-sided permutation p-value on the runs' ranks. A change is called better or worse \
         only beyond {}% and at p < {ALPHA}.\n\n{table}",
        args.join(" "),
        describe(&bins[0]),
        describe(&bins[1]),
        o.runs,
        plan.iter()
            .map(|(s, _)| s.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        started.elapsed().as_secs_f64(),
        o.threshold_pct,
    );
    let path = o.out.join("ab.md");
    std::fs::write(&path, &md).with_context(|| format!("writing {}", path.display()))?;
    println!("\n{table}\nreport: {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::results::{Implementation, Kind, Pair, Point, ThroughputStats};

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn options_split_into_ab_s_own_and_the_runs() {
        let o = parse(&strings(&[
            "--a", "/x", "loans", "--b", "/y", "--runs", "6", "--rounds", "2",
        ]))
        .unwrap();
        assert_eq!(
            (o.a.as_path(), o.b.as_path()),
            (Path::new("/x"), Path::new("/y"))
        );
        assert_eq!(o.runs, 6);
        assert_eq!(o.pass, strings(&["loans", "--rounds", "2"]));
        assert!(parse(&strings(&["--a", "/x", "quick"])).is_err());
        assert!(parse(&strings(&["--a", "/x", "--b", "/y", "--tessera", "/z"])).is_err());
        assert!(parse(&strings(&["--a", "/x", "--b", "/y", "--runs", "1"])).is_err());
    }

    #[test]
    fn each_build_goes_first_in_half_of_the_pairs_of_runs() {
        let o: String = order(4).iter().map(|(s, _)| *s).collect();
        assert_eq!(o, "ABBAABBA");
        assert_eq!(order(3).last(), Some(&('B', 3)));
    }

    #[test]
    fn permutation_p_values_are_exact_for_small_samples() {
        // Fully separated 4 + 4: 2 of the 70 splits are as extreme.
        let p = permutation_p(&[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
        assert!((p - 2.0 / 70.0).abs() < 1e-12, "{p}");
        // Interleaved values: nothing to see.
        assert!(permutation_p(&[1.0, 4.0, 5.0, 8.0], &[2.0, 3.0, 6.0, 7.0]) > 0.5);
        // All equal: p = 1.
        assert_eq!(permutation_p(&[3.0; 3], &[3.0; 3]), 1.0);
        // 3 + 3 separated: 2 of 20, not below 0.05 — three runs each cannot show a change.
        assert!((permutation_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]) - 0.1).abs() < 1e-12);
    }

    #[test]
    fn large_samples_are_sampled_with_a_fixed_seed() {
        let a: Vec<f64> = (0..12).map(f64::from).collect();
        let b: Vec<f64> = (12..24).map(f64::from).collect();
        assert!(binomial(24, 12) > EXACT_LIMIT);
        let p = permutation_p(&a, &b);
        assert!(p < 0.001, "{p}");
        assert_eq!(p, permutation_p(&a, &b));
        let mixed: Vec<f64> = (0..24).filter(|x| x % 2 == 0).map(f64::from).collect();
        let other: Vec<f64> = (0..24).filter(|x| x % 2 == 1).map(f64::from).collect();
        assert!(permutation_p(&mixed, &other) > 0.5);
    }

    fn run_with(rate: f64, cpu: f64) -> ResultSet {
        let pair = Pair {
            writer: Implementation::TesseraShm,
            reader: Implementation::TesseraShm,
        };
        let params = BTreeMap::from([("size".to_string(), serde_json::Value::from(16))]);
        let mut p = Point::new("tp", Kind::Throughput, pair, params, 0);
        p.throughput = Some(ThroughputStats {
            samples_per_s: rate,
            ..Default::default()
        });
        p.metrics.insert(CPU_METRIC.to_string(), cpu);
        ResultSet {
            points: vec![p],
            ..Default::default()
        }
    }

    #[test]
    fn rows_call_a_change_only_when_it_is_large_and_consistent() {
        let a: Vec<ResultSet> = [3.0e6, 3.1e6, 3.05e6, 2.95e6, 3.02e6]
            .iter()
            .map(|r| run_with(*r, 0.60))
            .collect();
        let b: Vec<ResultSet> = [3.4e6, 3.5e6, 3.45e6, 3.38e6, 3.41e6]
            .iter()
            .map(|r| run_with(*r, 0.60))
            .collect();
        let found = rows(&a, &b, 2.0);
        let tp = found.iter().find(|r| r.metric == "samples_per_s").unwrap();
        assert_eq!(tp.flag, Some("better"));
        assert_eq!(tp.a.len(), 5);
        assert!((tp.change_pct - (3.41 - 3.02) / 3.02 * 100.0).abs() < 1e-9);
        // Equal CPU: no call, whatever the threshold.
        let cpu = found.iter().find(|r| r.metric == CPU_METRIC).unwrap();
        assert_eq!(cpu.flag, None);
        // A large but inconsistent change is not called either.
        let noisy: Vec<ResultSet> = [2.0e6, 4.5e6, 2.2e6, 4.4e6, 3.6e6]
            .iter()
            .map(|r| run_with(*r, 0.6))
            .collect();
        let r = rows(&a, &noisy, 2.0);
        assert!(r[0].change_pct > 2.0 && r[0].flag.is_none(), "{:?}", r[0]);
        let md = render(&found, "base", "new");
        assert!(md.starts_with("Every cell: size=16."), "{md}");
        assert!(md.contains("| tp | tessera-shm |  | samples_per_s | 3.020M | 3.410M |"));
    }
}
