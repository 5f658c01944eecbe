//! `--expect` criteria: checks on a [`ResultSet`] that turn a benchmark run into a regression
//! test.
//!
//! # Grammar
//!
//! ```text
//! CRITERION  := METRIC OP NUMBER [ "@" EXPERIMENT [ "[" FILTER { "," FILTER } "]" ] ]
//! FILTER     := PARAM "=" VALUE { "|" VALUE }
//! OP         := "<" | "<=" | ">" | ">=" | "=="
//! METRIC     := "rtt_ratio" | "throughput_ratio" | "failed" | PAIR "." SCALAR
//!             | PAIR "/" PAIR "." SCALAR
//! PAIR       := a pair label: "tessera", "cyclone", "udp", or WRITER ">" READER
//! SCALAR     := a name of `Point::scalar`: p50_us, p90_us, p99_us, p999_us, mean_us,
//!               stddev_us, min_us, max_us, samples_per_s, mbit_per_s, lost, or a metric key
//!               such as discovery_ms, first_sample_ms, completion_s, max_sustainable_rate
//! ```
//!
//! Spaces around the parts are allowed. `NUMBER` is a finite decimal (`1.1`, `5e3`). The
//! operator is the last run of `<`, `>`, `=` characters, so a mixed pair's `>` is not taken for
//! it: `tessera>cyclone.samples_per_s>=1000`. `@EXPERIMENT` restricts the check to the
//! experiment of that name, and a filter to its cells whose parameter `PARAM` is one of the
//! values (as written in results.csv): `@latency[size=16|1024,subscribers=2]`.
//!
//! # Meaning
//!
//! - `rtt_ratio`: for every latency cell (same experiment and parameters) measured for both the
//!   `tessera` and the `cyclone` pair, the median over rounds of Tessera's p50 divided by
//!   Cyclone's. The criterion must hold for every such cell; the worst one is reported.
//! - `throughput_ratio`: the same with `samples_per_s` on throughput cells.
//! - `PAIR.SCALAR`: the median over rounds of `SCALAR` in every cell of `PAIR` that has it
//!   (e.g. `tessera.p99_us<=200`, `tessera.lost==0`).
//! - `A/B.SCALAR`: for every cell measured for both pairs, the median of `SCALAR` of `A`
//!   divided by `B`'s (e.g. `tessera-loan/tessera.samples_per_s>=10`: shared memory with loans
//!   against UDP).
//! - `failed`: the number of failed points.
//!
//! A criterion with nothing to check (no matching cell) fails with "no data": a typo in a
//! name never passes silently.

use thiserror::Error;

use super::results::{value_text, Cell, Kind, Pair, ResultSet};

/// Why a criterion did not parse.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ExpectError {
    /// Nothing was given.
    #[error("empty criterion (expected METRIC OP NUMBER, e.g. rtt_ratio<=1.1)")]
    Empty,
    /// No comparison operator found.
    #[error("no comparison operator in `{0}` (use <, <=, >, >= or ==)")]
    MissingOperator(String),
    /// An operator that is not one of the five.
    #[error("bad operator `{op}` in `{text}` (use <, <=, >, >= or ==)")]
    BadOperator {
        /// The operator as written.
        op: String,
        /// The whole criterion.
        text: String,
    },
    /// A metric name that is not known.
    #[error(
        "unknown metric `{0}` (use rtt_ratio, throughput_ratio, failed, PAIR.SCALAR such as \
         tessera.p99_us, or PAIR/PAIR.SCALAR)"
    )]
    UnknownMetric(String),
    /// A `PAIR.SCALAR` metric whose pair is not a pair label.
    #[error(
        "unknown pair `{pair}` in metric `{metric}` (use tessera, cyclone, udp or WRITER>READER)"
    )]
    UnknownPair {
        /// The pair as written.
        pair: String,
        /// The whole metric.
        metric: String,
    },
    /// The right-hand side is not a finite number.
    #[error("bad number `{0}` (expected a finite decimal such as 1.1 or 5e3)")]
    BadNumber(String),
    /// `@` without an experiment name.
    #[error("empty experiment name after `@` in `{0}`")]
    EmptyExperiment(String),
    /// A cell filter that is not `[PARAM=VALUE|VALUE,...]`.
    #[error("bad cell filter in `{0}` (expected @EXPERIMENT[PARAM=VALUE|VALUE,...])")]
    BadFilter(String),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "<" => Op::Lt,
            "<=" => Op::Le,
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "==" => Op::Eq,
            _ => return None,
        })
    }

    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Eq => "==",
        }
    }

    /// True when `v OP bound` holds (false for NaN).
    pub fn holds(self, v: f64, bound: f64) -> bool {
        match self {
            Op::Lt => v < bound,
            Op::Le => v <= bound,
            Op::Gt => v > bound,
            Op::Ge => v >= bound,
            Op::Eq => v == bound,
        }
    }

    /// How far `v` is from failing (negative when it fails); the smallest margin is the worst
    /// value. NaN ranks worst of all.
    fn margin(self, v: f64, bound: f64) -> f64 {
        let m = match self {
            Op::Lt | Op::Le => bound - v,
            Op::Gt | Op::Ge => v - bound,
            Op::Eq => -(v - bound).abs(),
        };
        if m.is_nan() {
            f64::NEG_INFINITY
        } else {
            m
        }
    }
}

/// What a criterion measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Metric {
    /// Tessera p50 / Cyclone p50 per latency cell.
    RttRatio,
    /// Tessera samples/s / Cyclone samples/s per throughput cell.
    ThroughputRatio,
    /// A scalar of every cell of one pair.
    PairScalar {
        /// Pair label ([`Pair::label`]).
        pair: String,
        /// Scalar name (`Point::scalar`).
        scalar: String,
    },
    /// A scalar of one pair divided by another's, per cell both have.
    PairRatio {
        /// Pair label of the numerator.
        num: String,
        /// Pair label of the denominator.
        den: String,
        /// Scalar name (`Point::scalar`).
        scalar: String,
    },
    /// Number of failed points.
    Failed,
}

impl Metric {
    fn parse(s: &str) -> Result<Metric, ExpectError> {
        match s {
            "rtt_ratio" => return Ok(Metric::RttRatio),
            "throughput_ratio" => return Ok(Metric::ThroughputRatio),
            "failed" => return Ok(Metric::Failed),
            _ => {}
        }
        let unknown = || ExpectError::UnknownMetric(s.to_string());
        // The scalar follows the last dot: pair labels have none.
        let (pair, scalar) = s.rsplit_once('.').ok_or_else(unknown)?;
        let scalar = scalar.trim();
        let is_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if scalar.is_empty() || !scalar.chars().all(is_name) {
            return Err(unknown());
        }
        let label = |pair: &str| {
            Pair::from_label(pair)
                .map(Pair::label)
                .ok_or_else(|| ExpectError::UnknownPair {
                    pair: pair.trim().to_string(),
                    metric: s.to_string(),
                })
        };
        let scalar = scalar.to_string();
        Ok(match pair.split_once('/') {
            Some((num, den)) => Metric::PairRatio {
                num: label(num)?,
                den: label(den)?,
                scalar,
            },
            None => Metric::PairScalar {
                pair: label(pair)?,
                scalar,
            },
        })
    }
}

/// One parsed `--expect` criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Criterion {
    /// What is measured.
    pub metric: Metric,
    /// The comparison.
    pub op: Op,
    /// The bound.
    pub value: f64,
    /// Only this experiment, when given.
    pub experiment: Option<String>,
    /// Only the cells whose parameters take one of these values (all must hold).
    pub cell_filter: Vec<(String, Vec<String>)>,
    /// The criterion as written (trimmed).
    pub text: String,
}

/// Characters that make up an operator.
fn is_op_char(c: char) -> bool {
    matches!(c, '<' | '>' | '=' | '!')
}

impl Criterion {
    /// Parses `METRIC OP NUMBER [@EXPERIMENT]` (see the module docs).
    pub fn parse(s: &str) -> Result<Criterion, ExpectError> {
        let text = s.trim();
        if text.is_empty() {
            return Err(ExpectError::Empty);
        }
        let (body, experiment, cell_filter) = match text.split_once('@') {
            Some((b, e)) => {
                let (name, filter) = parse_scope(e, text)?;
                (b, Some(name), filter)
            }
            None => (text, None, Vec::new()),
        };
        // The operator is the last run of operator characters.
        // (Operator characters are ASCII, one byte each.)
        let end = body
            .rfind(is_op_char)
            .map(|i| i + 1)
            .ok_or_else(|| ExpectError::MissingOperator(text.to_string()))?;
        let start = body[..end].trim_end_matches(is_op_char).len();
        let op_text = &body[start..end];
        let op = Op::parse(op_text).ok_or_else(|| ExpectError::BadOperator {
            op: op_text.to_string(),
            text: text.to_string(),
        })?;
        let metric_text = body[..start].trim();
        if metric_text.is_empty() {
            return Err(ExpectError::UnknownMetric(String::new()));
        }
        let metric = Metric::parse(metric_text)?;
        let num = body[end..].trim();
        let value: f64 = num
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| ExpectError::BadNumber(num.to_string()))?;
        Ok(Criterion {
            metric,
            op,
            value,
            experiment,
            cell_filter,
            text: text.to_string(),
        })
    }

    /// Whether `cell` is within the criterion's experiment and cell filter.
    fn in_scope(&self, cell: &Cell<'_>) -> bool {
        self.experiment
            .as_deref()
            .is_none_or(|e| e == cell.experiment)
            && self.cell_filter.iter().all(|(name, values)| {
                cell.params
                    .get(name)
                    .is_some_and(|v| values.contains(&value_text(v)))
            })
    }
}

/// An experiment name and the cell filter that follows it.
type Scope = (String, Vec<(String, Vec<String>)>);

/// `EXPERIMENT` or `EXPERIMENT[PARAM=VALUE|VALUE,...]` after the `@` of `text`.
fn parse_scope(scope: &str, text: &str) -> Result<Scope, ExpectError> {
    let bad = || ExpectError::BadFilter(text.to_string());
    let scope = scope.trim();
    let (name, filter) = match scope.split_once('[') {
        Some((name, rest)) => (name.trim(), Some(rest.strip_suffix(']').ok_or_else(bad)?)),
        None => (scope, None),
    };
    if name.is_empty() {
        return Err(ExpectError::EmptyExperiment(text.to_string()));
    }
    let mut out = Vec::new();
    for part in filter.map(|f| f.split(',')).into_iter().flatten() {
        let (param, values) = part.split_once('=').ok_or_else(bad)?;
        let param = param.trim();
        let values: Vec<String> = values.split('|').map(|v| v.trim().to_string()).collect();
        if param.is_empty() || values.iter().any(String::is_empty) {
            return Err(bad());
        }
        out.push((param.to_string(), values));
    }
    Ok((name.to_string(), out))
}

/// The verdict on one criterion.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The criterion as written.
    pub criterion: String,
    /// True when it held for everything it checks (and there was something to check).
    pub ok: bool,
    /// The worst value and where, or why it could not be checked.
    pub detail: String,
}

/// One checked value: what it is, and where.
struct Checked {
    value: f64,
    place: String,
}

/// `experiment params` of a cell, for details.
fn cell_place(c: &Cell<'_>) -> String {
    let params: Vec<String> = c
        .params
        .iter()
        .map(|(k, v)| format!("{k}={}", value_text(v)))
        .collect();
    if params.is_empty() {
        c.experiment.to_string()
    } else {
        format!("{} {}", c.experiment, params.join(","))
    }
}

/// `num` / `den` ratios of `scalar` over the cells of `kind` (any kind: `None`), paired by
/// experiment and parameters.
fn ratios(
    cells: &[Cell<'_>],
    kind: Option<Kind>,
    num: &str,
    den: &str,
    scalar: &str,
) -> Vec<Checked> {
    let of_kind = |c: &Cell<'_>| kind.is_none_or(|k| c.kind == k);
    let of = |pair: &str, like: &Cell<'_>| {
        cells
            .iter()
            .find(|c| {
                of_kind(c)
                    && c.pair == pair
                    && c.experiment == like.experiment
                    && c.params == like.params
            })
            .and_then(|c| c.median(scalar))
    };
    cells
        .iter()
        .filter(|c| of_kind(c) && c.pair == num)
        .filter_map(|t| {
            let (a, b) = (of(num, t)?, of(den, t)?);
            (b != 0.0).then(|| Checked {
                value: a / b,
                place: format!("{} ({num} {a:.4} / {den} {b:.4})", cell_place(t)),
            })
        })
        .collect()
}

/// Median `scalar` of every cell of `pair` that has it.
fn pair_scalars(cells: &[Cell<'_>], pair: &str, scalar: &str) -> Vec<Checked> {
    cells
        .iter()
        .filter(|c| c.pair == pair)
        .filter_map(|c| {
            Some(Checked {
                value: c.median(scalar)?,
                place: cell_place(c),
            })
        })
        .collect()
}

/// Evaluates a criterion on a result set.
pub fn evaluate(c: &Criterion, rs: &ResultSet) -> Outcome {
    let in_scope = |exp: &str| c.experiment.as_deref().is_none_or(|e| e == exp);
    let cells: Vec<Cell<'_>> = rs
        .cells()
        .into_iter()
        .filter(|cell| c.in_scope(cell))
        .collect();
    let checked = match &c.metric {
        Metric::RttRatio => ratios(&cells, Some(Kind::Latency), "tessera", "cyclone", "p50_us"),
        Metric::ThroughputRatio => ratios(
            &cells,
            Some(Kind::Throughput),
            "tessera",
            "cyclone",
            "samples_per_s",
        ),
        Metric::PairRatio { num, den, scalar } => ratios(&cells, None, num, den, scalar),
        Metric::PairScalar { pair, scalar } => pair_scalars(&cells, pair, scalar),
        Metric::Failed => {
            let points: Vec<_> = rs
                .points
                .iter()
                .filter(|p| in_scope(&p.experiment))
                .collect();
            if points.is_empty() {
                return verdict(c, &[]);
            }
            let failed = points.iter().filter(|p| !p.ok).count();
            return Outcome {
                criterion: c.text.clone(),
                ok: c.op.holds(failed as f64, c.value),
                detail: format!("{failed} of {} points failed", points.len()),
            };
        }
    };
    verdict(c, &checked)
}

/// The outcome over all checked values: ok when every one holds; the detail names the worst.
fn verdict(c: &Criterion, checked: &[Checked]) -> Outcome {
    let worst = checked.iter().min_by(|a, b| {
        c.op.margin(a.value, c.value)
            .total_cmp(&c.op.margin(b.value, c.value))
    });
    let Some(worst) = worst else {
        return Outcome {
            criterion: c.text.clone(),
            ok: false,
            detail: "no data".to_string(),
        };
    };
    let failing = checked
        .iter()
        .filter(|x| !c.op.holds(x.value, c.value))
        .count();
    let detail = format!(
        "worst {} at {}; {} of {} failing",
        fmt_value(worst.value),
        worst.place,
        failing,
        checked.len()
    );
    Outcome {
        criterion: c.text.clone(),
        ok: failing == 0,
        detail,
    }
}

/// A value with up to 4 significant decimals, no trailing zeros.
fn fmt_value(v: f64) -> String {
    let s = format!("{v:.4}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::Value;

    use super::*;
    use crate::results::{Implementation, LatencyStats, Point, ThroughputStats};

    fn crit(s: &str) -> Criterion {
        Criterion::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_valid_criteria() {
        let c = crit("rtt_ratio<=1.1");
        assert_eq!(
            (c.metric, c.op, c.value, c.experiment),
            (Metric::RttRatio, Op::Le, 1.1, None)
        );
        let c = crit(" throughput_ratio >= 0.95 @ tput ");
        assert_eq!(c.metric, Metric::ThroughputRatio);
        assert_eq!((c.op, c.value), (Op::Ge, 0.95));
        assert_eq!(c.experiment.as_deref(), Some("tput"));
        assert_eq!(c.text, "throughput_ratio >= 0.95 @ tput");
        let c = crit("tessera.p99_us<200");
        assert_eq!(
            c.metric,
            Metric::PairScalar {
                pair: "tessera".into(),
                scalar: "p99_us".into()
            }
        );
        assert_eq!(c.op, Op::Lt);
        assert_eq!(crit("tessera.lost==0").op, Op::Eq);
        let c = crit("tessera>cyclone.samples_per_s>=1e3");
        assert_eq!(
            c.metric,
            Metric::PairScalar {
                pair: "tessera>cyclone".into(),
                scalar: "samples_per_s".into()
            }
        );
        assert_eq!((c.op, c.value), (Op::Ge, 1000.0));
        assert_eq!(crit("cyclone>tessera.p50_us>5").op, Op::Gt);
        let c = crit("failed==0@lat");
        assert_eq!(
            (c.metric, c.experiment.as_deref()),
            (Metric::Failed, Some("lat"))
        );
        assert_eq!(crit("udp.discovery_ms < -1.5").value, -1.5);
        assert_eq!(
            crit("tessera-loan/tessera.samples_per_s>=10@tput").metric,
            Metric::PairRatio {
                num: "tessera-loan".into(),
                den: "tessera".into(),
                scalar: "samples_per_s".into()
            }
        );
    }

    #[test]
    fn rejects_every_error() {
        let err = |s: &str| Criterion::parse(s).unwrap_err();
        assert_eq!(err("  "), ExpectError::Empty);
        assert!(matches!(
            err("rtt_ratio 1.1"),
            ExpectError::MissingOperator(_)
        ));
        for (s, op) in [
            ("rtt_ratio=1", "="),
            ("rtt_ratio=>1", "=>"),
            ("rtt_ratio<<1", "<<"),
            ("rtt_ratio!=1", "!="),
        ] {
            assert_eq!(
                err(s),
                ExpectError::BadOperator {
                    op: op.into(),
                    text: s.into()
                }
            );
        }
        assert_eq!(
            err("latency<1"),
            ExpectError::UnknownMetric("latency".into())
        );
        assert_eq!(err("<1"), ExpectError::UnknownMetric(String::new()));
        assert_eq!(
            err("tessera/opendds.p50_us<1"),
            ExpectError::UnknownPair {
                pair: "opendds".into(),
                metric: "tessera/opendds.p50_us".into()
            }
        );
        assert_eq!(
            err("tessera.<1"),
            ExpectError::UnknownMetric("tessera.".into())
        );
        assert_eq!(
            err("tessera.P99<1"),
            ExpectError::UnknownMetric("tessera.P99".into())
        );
        assert_eq!(
            err("opendds.p50_us<1"),
            ExpectError::UnknownPair {
                pair: "opendds".into(),
                metric: "opendds.p50_us".into()
            }
        );
        assert_eq!(
            err("rtt_ratio<=fast"),
            ExpectError::BadNumber("fast".into())
        );
        assert_eq!(err("rtt_ratio<="), ExpectError::BadNumber(String::new()));
        assert_eq!(err("rtt_ratio<=NaN"), ExpectError::BadNumber("NaN".into()));
        assert_eq!(err("rtt_ratio<=inf"), ExpectError::BadNumber("inf".into()));
        assert!(matches!(
            err("rtt_ratio<=1@ "),
            ExpectError::EmptyExperiment(_)
        ));
        // Messages are readable.
        assert!(err("x=1").to_string().contains("use <, <=, >, >= or =="));
    }

    fn params(size: i64) -> BTreeMap<String, Value> {
        BTreeMap::from([("size".to_string(), Value::from(size))])
    }

    fn lat(exp: &str, pair: Pair, size: i64, round: u32, p50: f64) -> Point {
        let mut p = Point::new(exp, Kind::Latency, pair, params(size), round);
        p.latency = Some(LatencyStats {
            p50_us: p50,
            p99_us: p50 * 2.0,
            ..Default::default()
        });
        p
    }

    fn tput(pair: Pair, rate: f64, lost: u64) -> Point {
        let mut p = Point::new("tput", Kind::Throughput, pair, params(1024), 0);
        p.throughput = Some(ThroughputStats {
            samples_per_s: rate,
            lost,
            ..Default::default()
        });
        p
    }

    fn results() -> ResultSet {
        let t = Pair::same(Implementation::Tessera);
        let c = Pair::same(Implementation::Cyclone);
        let mixed = Pair {
            writer: Implementation::Tessera,
            reader: Implementation::Cyclone,
        };
        let mut rs = ResultSet::default();
        for r in 0..3 {
            // size 16: tessera 50, cyclone 50 → ratio 1.0; size 1024: 66 / 60 → 1.1.
            rs.points.push(lat("lat", t, 16, r, 50.0 + r as f64));
            rs.points.push(lat("lat", c, 16, r, 50.0 + r as f64));
            rs.points
                .push(lat("lat", t, 1024, r, [66.0, 70.0, 60.0][r as usize]));
            rs.points.push(lat("lat", c, 1024, r, 60.0));
        }
        // Tessera only in another experiment: no ratio there.
        rs.points.push(lat("solo", t, 16, 0, 10.0));
        rs.points.push(tput(t, 90_000.0, 0));
        rs.points.push(tput(c, 100_000.0, 2));
        rs.points.push(tput(mixed, 80_000.0, 0));
        let mut failed = tput(mixed, 0.0, 0);
        failed.ok = false;
        failed.round = 1;
        rs.points.push(failed);
        rs
    }

    fn eval(s: &str) -> Outcome {
        evaluate(&crit(s), &results())
    }

    #[test]
    fn rtt_ratio_holds_for_every_cell() {
        let o = eval("rtt_ratio<=1.1");
        assert!(o.ok, "{o:?}");
        assert!(
            o.detail.starts_with("worst 1.1 at lat size=1024"),
            "{}",
            o.detail
        );
        let o = eval("rtt_ratio<1.05");
        assert!(!o.ok);
        assert!(o.detail.contains("1 of 2 failing"), "{}", o.detail);
        assert!(eval("rtt_ratio>=1").ok);
        assert!(!eval("rtt_ratio>1").ok);
        assert_eq!(eval("rtt_ratio<=1@solo").detail, "no data");
        assert!(!eval("rtt_ratio<=1@solo").ok);
    }

    #[test]
    fn throughput_ratio_and_pair_scalars() {
        assert!(eval("throughput_ratio>=0.9").ok);
        assert!(!eval("throughput_ratio>=0.95").ok);
        assert!(eval("tessera.lost==0").ok);
        let o = eval("cyclone.lost==0");
        assert!(!o.ok && o.detail.starts_with("worst 2 at tput"), "{o:?}");
        assert!(eval("tessera>cyclone.samples_per_s>=80000").ok);
        assert!(!eval("tessera>cyclone.samples_per_s>80000").ok);
        // A ratio of any two pairs, cell by cell: 90k / 80k.
        let o = eval("tessera/tessera>cyclone.samples_per_s>=1.125");
        assert!(
            o.ok && o.detail.starts_with("worst 1.125 at tput size=1024"),
            "{o:?}"
        );
        assert!(!eval("tessera/tessera>cyclone.samples_per_s>1.125").ok);
        // The same as rtt_ratio on the latency cells (1.0 and 1.1).
        assert!(eval("tessera/cyclone.p50_us<=1.1@lat").ok);
        assert!(!eval("tessera/cyclone.p50_us<1.1@lat").ok);
        // No cell that both pairs have: no data.
        assert_eq!(eval("tessera/udp.p50_us<1").detail, "no data");
        // Median p50 over the three rounds of the size-1024 cell is 66.
        let o = eval("tessera.p50_us<66@lat");
        assert!(
            !o.ok && o.detail.contains("worst 66 at lat size=1024"),
            "{o:?}"
        );
        assert!(eval("tessera.p50_us<=66@lat").ok);
        // A typo in the scalar has no data and fails.
        assert_eq!(eval("tessera.p50_ms<1").detail, "no data");
        assert!(!eval("udp.p50_us<1").ok);
    }

    #[test]
    fn failed_points_are_counted() {
        let o = eval("failed==0");
        assert!(!o.ok);
        assert_eq!(o.detail, "1 of 17 points failed");
        assert!(eval("failed<=1").ok);
        assert!(eval("failed==0@lat").ok);
        assert_eq!(eval("failed==0@nothing").detail, "no data");
    }

    #[test]
    fn cell_filters_narrow_an_experiment() {
        let c = crit("tessera/cyclone.p50_us<=1@lat[size=16|4096, subscribers = 2]");
        assert_eq!(c.experiment.as_deref(), Some("lat"));
        assert_eq!(
            c.cell_filter,
            vec![
                (
                    "size".to_string(),
                    vec!["16".to_string(), "4096".to_string()]
                ),
                ("subscribers".to_string(), vec!["2".to_string()]),
            ]
        );
        // Size 16 has ratio 1.0, size 1024 has 1.1: the filter picks one cell or the other.
        assert!(eval("tessera/cyclone.p50_us<=1@lat[size=16]").ok);
        assert!(!eval("tessera/cyclone.p50_us<=1@lat[size=1024]").ok);
        assert!(!eval("tessera/cyclone.p50_us<=1@lat[size=16|1024]").ok);
        // A parameter no cell has matches nothing: no data, not a silent pass.
        assert_eq!(
            eval("tessera/cyclone.p50_us<=1@lat[subscribers=2]").detail,
            "no data"
        );
        for bad in [
            "rtt_ratio<=1@lat[size=16",
            "rtt_ratio<=1@lat[size]",
            "rtt_ratio<=1@lat[=16]",
            "rtt_ratio<=1@lat[size=16|]",
        ] {
            assert!(
                matches!(Criterion::parse(bad), Err(ExpectError::BadFilter(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            Criterion::parse("rtt_ratio<=1@[size=16]"),
            Err(ExpectError::EmptyExperiment(_))
        ));
    }

    #[test]
    fn nan_values_fail() {
        let mut rs = ResultSet::default();
        rs.points
            .push(tput(Pair::same(Implementation::Tessera), f64::NAN, 0));
        let o = evaluate(&crit("tessera.samples_per_s>0"), &rs);
        assert!(!o.ok, "{o:?}");
    }
}
