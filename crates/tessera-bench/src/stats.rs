//! Statistics of `tessera bench`: latency summaries from HdrHistograms (or from ddsperf's
//! per-second summaries), percentiles and box plots of per-second rates, and the analysis of a
//! rate-stepping series (maximum sustainable rate, knee of the latency-vs-load curve).
//!
//! Every function takes plain data and returns plain data; bad input (empty, NaN) gives `None`
//! rather than a panic.

use hdrhistogram::Histogram;

use super::results::{BoxPlot, LatencyStats};

/// Significant digits of the histograms built here (the same as `tessera perf` and ddsperf's
/// JSON): values are kept to within 0.1 % of what was recorded.
pub const SIGFIG: u8 = 3;

/// The largest value an auto-resizing HdrHistogram can track (`i64::MAX / 2`).
pub const MAX_TRACKABLE_NS: u64 = (i64::MAX / 2) as u64;

/// Nanoseconds → microseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// Summarizes a histogram of round-trip times recorded in **nanoseconds** into
/// [`LatencyStats`] in microseconds (`source: "hdr"`). `None` when the histogram is empty.
///
/// Percentiles are HdrHistogram's `value_at_quantile` (the highest value equivalent to the
/// recorded one, so within the histogram's precision); mean and standard deviation are
/// HdrHistogram's (over the median-equivalent values).
pub fn latency_from_hist(h: &Histogram<u64>) -> Option<LatencyStats> {
    if h.is_empty() {
        return None;
    }
    let q = |q: f64| us(h.value_at_quantile(q));
    Some(LatencyStats {
        count: h.len(),
        mean_us: h.mean() / 1000.0,
        stddev_us: Some(h.stdev() / 1000.0),
        min_us: us(h.min()),
        p50_us: q(0.50),
        p90_us: q(0.90),
        p99_us: q(0.99),
        p999_us: Some(q(0.999)),
        max_us: us(h.max()),
        boxplot: Some(BoxPlot {
            p1: q(0.01),
            p25: q(0.25),
            p50: q(0.50),
            p75: q(0.75),
            p99: q(0.99),
        }),
        source: "hdr".to_string(),
    })
}

/// Builds a histogram (3 significant digits, auto-resizing) from `(value_ns, count)` pairs — a
/// dumped histogram — and summarizes it with [`latency_from_hist`]. Pairs with a zero count are
/// ignored; values beyond an auto-resizing histogram's reach ([`MAX_TRACKABLE_NS`], about 73
/// years) are clamped to it. `None` when nothing was recorded.
pub fn latency_from_pairs(pairs: &[(u64, u64)]) -> Option<LatencyStats> {
    let mut h = Histogram::<u64>::new(SIGFIG).ok()?;
    for &(value, count) in pairs {
        if count > 0 {
            // Cannot fail once clamped; skip rather than panic if it ever does.
            let _ = h.record_n(value.min(MAX_TRACKABLE_NS), count);
        }
    }
    latency_from_hist(&h)
}

/// One per-second latency summary as ddsperf prints it, converted to microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct IntervalSummary {
    /// Round trips in the interval.
    pub count: u64,
    /// Mean over the interval.
    pub mean_us: f64,
    /// Minimum over the interval.
    pub min_us: f64,
    /// Median of the interval.
    pub p50_us: f64,
    /// 90th percentile of the interval.
    pub p90_us: f64,
    /// 99th percentile of the interval.
    pub p99_us: f64,
    /// Maximum over the interval.
    pub max_us: f64,
}

/// Combines per-second summaries into one [`LatencyStats`] (`source: "intervals"`).
///
/// Count is the sum and the mean the count-weighted mean (both exact); min and max are the
/// extremes (exact); p50, p90 and p99 are count-weighted means of the per-interval percentiles
/// (an approximation: the distribution itself is not known). Standard deviation, p99.9 and the
/// box plot are `None`. Intervals with a zero count or a non-finite field are skipped; `None`
/// when none is left.
pub fn latency_from_intervals(iv: &[IntervalSummary]) -> Option<LatencyStats> {
    let usable: Vec<&IntervalSummary> = iv
        .iter()
        .filter(|i| {
            i.count > 0
                && [i.mean_us, i.min_us, i.p50_us, i.p90_us, i.p99_us, i.max_us]
                    .iter()
                    .all(|v| v.is_finite())
        })
        .collect();
    if usable.is_empty() {
        return None;
    }
    let count: u64 = usable.iter().map(|i| i.count).sum();
    let weighted = |f: fn(&IntervalSummary) -> f64| {
        usable.iter().map(|i| f(i) * i.count as f64).sum::<f64>() / count as f64
    };
    Some(LatencyStats {
        count,
        mean_us: weighted(|i| i.mean_us),
        stddev_us: None,
        min_us: usable
            .iter()
            .map(|i| i.min_us)
            .fold(f64::INFINITY, f64::min),
        p50_us: weighted(|i| i.p50_us),
        p90_us: weighted(|i| i.p90_us),
        p99_us: weighted(|i| i.p99_us),
        p999_us: None,
        max_us: usable
            .iter()
            .map(|i| i.max_us)
            .fold(f64::NEG_INFINITY, f64::max),
        boxplot: None,
        source: "intervals".to_string(),
    })
}

/// The `q`-th percentile (`q` in `0..=100`) of an ascending slice, interpolating linearly
/// between the two nearest ranks (rank `q/100 · (n-1)`). `None` when the slice is empty or `q`
/// is out of range or NaN. The slice must be sorted; NaNs in it propagate.
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&q) {
        return None;
    }
    let rank = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let (a, b) = (*sorted.get(lo)?, *sorted.get(hi)?);
    Some(a + (b - a) * (rank - lo as f64))
}

/// Box plot of per-second rates: `p1` holds the minimum, `p25`/`p50`/`p75` the quartiles
/// ([`percentile`]) and `p99` the maximum — the seeds' throughput boxes show median, min and max.
/// Non-finite rates are ignored; `None` when none is left.
pub fn rate_boxplot(rates: &[f64]) -> Option<BoxPlot> {
    let mut v: Vec<f64> = rates.iter().copied().filter(|r| r.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    Some(BoxPlot {
        p1: *v.first()?,
        p25: percentile(&v, 25.0)?,
        p50: percentile(&v, 50.0)?,
        p75: percentile(&v, 75.0)?,
        p99: *v.last()?,
    })
}

/// One step of a rate-stepping series.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Offered (publisher) rate, samples/s.
    pub offered: f64,
    /// Received rate, samples/s (all subscribers' median, or their sum per subscriber count —
    /// whatever the caller compares with `offered`).
    pub received: f64,
    /// Samples lost during the step.
    pub lost: u64,
    /// Median round-trip latency at this load, when pings ran.
    pub p50_us: Option<f64>,
    /// 99th-percentile round-trip latency at this load, when pings ran.
    pub p99_us: Option<f64>,
}

/// Steps with a finite offered rate, sorted by it.
fn sorted_steps(steps: &[Step]) -> Vec<&Step> {
    let mut v: Vec<&Step> = steps.iter().filter(|s| s.offered.is_finite()).collect();
    v.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    v
}

/// True when a step kept up: it received at least `offered · (1 - tolerance)` and lost
/// nothing. NaNs never keep up.
fn kept_up(s: &Step, tolerance: f64) -> bool {
    s.lost == 0 && s.received >= s.offered * (1.0 - tolerance)
}

/// The highest offered rate such that this step and every lower one kept up (received at least
/// `offered · (1 - tolerance)` and lost nothing). Steps may come in any order. `None` when the
/// lowest step already failed, or there are no steps.
pub fn max_sustainable_rate(steps: &[Step], tolerance: f64) -> Option<f64> {
    sorted_steps(steps)
        .into_iter()
        .take_while(|s| kept_up(s, tolerance))
        .last()
        .map(|s| s.offered)
}

/// Latency must rise by more than this factor over its minimum for a knee to exist.
pub const KNEE_MIN_RISE: f64 = 1.5;

/// The offered rate at the knee of the latency-vs-load curve, by the Kneedle rule.
///
/// The rule: take the steps that have a median latency (`p50_us`), sorted by offered rate (at
/// least three, with distinct rates). If the highest median latency is not more than
/// [`KNEE_MIN_RISE`] × the lowest (latency never rose more than 50 %), there is no knee:
/// `None`. Otherwise normalize rates and latencies to `[0, 1]` (min → 0, max → 1); for a curve
/// that rises steeply at high load (increasing, convex) the points lie below the chord
/// `y = x`, and the knee is the point furthest below it — the one that maximizes
/// `x_norm - y_norm`. Its offered rate is returned; `None` when no point lies below the chord
/// (the curve is not convex, e.g. latency rose first and flattened).
pub fn knee_rate(steps: &[Step]) -> Option<f64> {
    let pts: Vec<(f64, f64)> = sorted_steps(steps)
        .into_iter()
        .filter_map(|s| s.p50_us.filter(|l| l.is_finite()).map(|l| (s.offered, l)))
        .collect();
    if pts.len() < 3 {
        return None;
    }
    let (x0, x1) = (pts[0].0, pts[pts.len() - 1].0);
    let y0 = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let y1 = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    if x1 <= x0 || y1 <= y0 || y1 <= KNEE_MIN_RISE * y0 {
        return None;
    }
    let (best_rate, best_diff) = pts
        .iter()
        .map(|&(x, y)| (x, (x - x0) / (x1 - x0) - (y - y0) / (y1 - y0)))
        .fold(
            (None, 0.0),
            |(br, bd), (x, d)| {
                if d > bd {
                    (Some(x), d)
                } else {
                    (br, bd)
                }
            },
        );
    best_rate.filter(|_| best_diff > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a tiny, well-mixed, seeded generator for reproducible samples.
    struct Rng(u64);

    impl Rng {
        fn next_u64(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        /// Uniform on [0, 1).
        fn unit(&mut self) -> f64 {
            (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        /// Uniform on (0, 1] (safe for ln).
        fn unit_open0(&mut self) -> f64 {
            1.0 - self.unit()
        }
        /// Standard normal by Box–Muller.
        fn normal(&mut self) -> f64 {
            let (u1, u2) = (self.unit_open0(), self.unit());
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }
    }

    /// Samples per distribution: large enough that the sampling error of p99.9 is about 1 %.
    const N: usize = 400_000;

    /// A known distribution (all in nanoseconds): mean, standard deviation, quantile function and
    /// density.
    struct Known {
        mean: f64,
        sd: f64,
        quantile: Box<dyn Fn(f64) -> f64>,
        density: Box<dyn Fn(f64) -> f64>,
    }

    fn hist_of(samples: impl Iterator<Item = f64>) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        for s in samples {
            h.record(s.max(0.0).round() as u64).unwrap();
        }
        h
    }

    /// Tolerance (ns) for the sample quantile at `q`: six standard errors of a sample quantile,
    /// sqrt(q(1-q)/n) / f(x_q), plus HdrHistogram's 3-digit resolution (a value is reported as
    /// the top of its bucket, at most 1/1024 above it; 2e-3 relative leaves room) plus 1 ns of
    /// rounding to integer nanoseconds.
    fn quantile_tol(k: &Known, q: f64) -> f64 {
        let x = (k.quantile)(q);
        6.0 * (q * (1.0 - q) / N as f64).sqrt() / (k.density)(x) + 2e-3 * x.abs() + 1.0
    }

    fn check(k: &Known, h: &Histogram<u64>) {
        let s = latency_from_hist(h).unwrap();
        assert_eq!(s.count, N as u64);
        assert_eq!(s.source, "hdr");
        let close = |name: &str, got_us: f64, want_ns: f64, tol_ns: f64| {
            let got = got_us * 1000.0;
            assert!(
                (got - want_ns).abs() <= tol_ns,
                "{name}: got {got} ns, want {want_ns} ± {tol_ns}"
            );
        };
        // Mean: six standard errors plus the histogram's resolution.
        let mean_tol = 6.0 * k.sd / (N as f64).sqrt() + 2e-3 * k.mean + 1.0;
        close("mean", s.mean_us, k.mean, mean_tol);
        // Standard deviation: the sample sd has a standard error of at most sd·sqrt(2/n) for the
        // distributions used here (kurtosis ≤ 9), plus quantization (relative 2e-3 of the values).
        let sd_tol = 6.0 * k.sd * (2.0 / N as f64).sqrt() + 2e-3 * (k.mean + k.sd) + 1.0;
        close("stddev", s.stddev_us.unwrap(), k.sd, sd_tol);
        for (name, q, got) in [
            ("p50", 0.5, s.p50_us),
            ("p90", 0.9, s.p90_us),
            ("p99", 0.99, s.p99_us),
            ("p99.9", 0.999, s.p999_us.unwrap()),
        ] {
            close(name, got, (k.quantile)(q), quantile_tol(k, q));
        }
        let b = s.boxplot.unwrap();
        assert!(b.p1 <= b.p25 && b.p25 <= b.p50 && b.p50 <= b.p75 && b.p75 <= b.p99);
        assert!(s.min_us <= b.p1 && b.p99 <= s.max_us);
    }

    #[test]
    fn uniform_distribution() {
        let (a, b) = (100_000.0, 200_000.0);
        let mut r = Rng(1);
        let h = hist_of((0..N).map(|_| a + (b - a) * r.unit()));
        let k = Known {
            mean: (a + b) / 2.0,
            sd: (b - a) / 12f64.sqrt(),
            quantile: Box::new(move |q| a + (b - a) * q),
            density: Box::new(move |_| 1.0 / (b - a)),
        };
        check(&k, &h);
        let s = latency_from_hist(&h).unwrap();
        assert!((s.min_us - 100.0).abs() < 0.2 && (s.max_us - 200.0).abs() < 0.2);
    }

    #[test]
    fn exponential_distribution() {
        // Shifted exponential: 10 µs floor plus a tail of mean 1/λ = 50 µs.
        let (shift, lambda) = (10_000.0, 1.0 / 50_000.0);
        let mut r = Rng(2);
        let h = hist_of((0..N).map(|_| shift - r.unit_open0().ln() / lambda));
        let k = Known {
            mean: shift + 1.0 / lambda,
            sd: 1.0 / lambda,
            quantile: Box::new(move |q: f64| shift - (1.0 - q).ln() / lambda),
            density: Box::new(move |x| lambda * (-lambda * (x - shift)).exp()),
        };
        check(&k, &h);
    }

    #[test]
    fn normal_distribution() {
        let (mu, sigma) = (500_000.0, 50_000.0);
        let mut r = Rng(3);
        let h = hist_of((0..N).map(|_| mu + sigma * r.normal()));
        // Standard normal quantiles (z) of 0.5, 0.9, 0.99, 0.999.
        let z = |q: f64| match q {
            0.5 => 0.0,
            0.9 => 1.281_551_565_5,
            0.99 => 2.326_347_874_0,
            0.999 => 3.090_232_306_2,
            _ => panic!("no z for {q}"),
        };
        let k = Known {
            mean: mu,
            sd: sigma,
            quantile: Box::new(move |q| mu + sigma * z(q)),
            density: Box::new(move |x| {
                let t = (x - mu) / sigma;
                (-0.5 * t * t).exp() / (sigma * (2.0 * std::f64::consts::PI).sqrt())
            }),
        };
        check(&k, &h);
    }

    #[test]
    fn constant_distribution() {
        let v = 1_234_567u64;
        let mut h = Histogram::<u64>::new(SIGFIG).unwrap();
        h.record_n(v, 1000).unwrap();
        let s = latency_from_hist(&h).unwrap();
        let want = v as f64 / 1000.0;
        for got in [s.mean_us, s.min_us, s.p50_us, s.p90_us, s.p99_us, s.max_us] {
            assert!((got - want).abs() <= want * 1e-3, "{got} vs {want}");
        }
        assert_eq!(s.stddev_us, Some(0.0));
        assert_eq!(s.count, 1000);
    }

    #[test]
    fn empty_inputs_give_none() {
        let h = Histogram::<u64>::new(SIGFIG).unwrap();
        assert_eq!(latency_from_hist(&h), None);
        assert_eq!(latency_from_pairs(&[]), None);
        assert_eq!(latency_from_pairs(&[(5, 0)]), None);
        assert_eq!(latency_from_intervals(&[]), None);
        assert_eq!(rate_boxplot(&[]), None);
        assert_eq!(rate_boxplot(&[f64::NAN]), None);
    }

    #[test]
    fn pairs_rebuild_the_histogram() {
        let s = latency_from_pairs(&[(10_000, 3), (20_000, 1), (u64::MAX, 0)]).unwrap();
        assert_eq!(s.count, 4, "{s:?}");
        assert!((s.mean_us - 12.5).abs() < 0.02, "{s:?}");
        assert!((s.p50_us - 10.0).abs() < 0.02);
        assert!((s.max_us - 20.0).abs() < 0.03);
        assert!((s.min_us - 10.0).abs() < 0.02);
        // A huge value is clamped, not lost and not a panic.
        let s = latency_from_pairs(&[(1, 1), (u64::MAX, 1)]).unwrap();
        assert_eq!(s.count, 2);
        assert!(s.max_us >= MAX_TRACKABLE_NS as f64 / 1000.0 * 0.999);
    }

    fn iv(
        count: u64,
        mean: f64,
        min: f64,
        p50: f64,
        p90: f64,
        p99: f64,
        max: f64,
    ) -> IntervalSummary {
        IntervalSummary {
            count,
            mean_us: mean,
            min_us: min,
            p50_us: p50,
            p90_us: p90,
            p99_us: p99,
            max_us: max,
        }
    }

    #[test]
    fn intervals_combine_exactly() {
        let s = latency_from_intervals(&[
            iv(100, 20.0, 10.0, 18.0, 30.0, 40.0, 50.0),
            iv(0, 999.0, 0.0, 999.0, 999.0, 999.0, 9999.0),
            iv(300, 40.0, 12.0, 38.0, 50.0, 80.0, 120.0),
            iv(50, f64::NAN, 1.0, 1.0, 1.0, 1.0, 1.0),
        ])
        .unwrap();
        assert_eq!(s.count, 400);
        assert_eq!(s.mean_us, (100.0 * 20.0 + 300.0 * 40.0) / 400.0);
        assert_eq!(s.min_us, 10.0);
        assert_eq!(s.max_us, 120.0);
        assert_eq!(s.p50_us, (100.0 * 18.0 + 300.0 * 38.0) / 400.0);
        assert_eq!(s.p90_us, (100.0 * 30.0 + 300.0 * 50.0) / 400.0);
        assert_eq!(s.p99_us, (100.0 * 40.0 + 300.0 * 80.0) / 400.0);
        assert_eq!((s.stddev_us, s.p999_us, s.boxplot), (None, None, None));
        assert_eq!(s.source, "intervals");
        assert_eq!(
            latency_from_intervals(&[iv(0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)]),
            None
        );
    }

    #[test]
    fn percentile_edges() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 0.0), Some(7.0));
        assert_eq!(percentile(&[7.0], 100.0), Some(7.0));
        let v = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(5.0));
        assert_eq!(percentile(&v, 50.0), Some(3.0));
        assert_eq!(percentile(&v, 25.0), Some(2.0));
        assert_eq!(percentile(&v, 12.5), Some(1.5));
        assert_eq!(percentile(&[1.0, 2.0], 50.0), Some(1.5));
        assert_eq!(percentile(&v, -1.0), None);
        assert_eq!(percentile(&v, 100.1), None);
        assert_eq!(percentile(&v, f64::NAN), None);
    }

    #[test]
    fn rate_boxplot_uses_min_and_max_as_whiskers() {
        let b = rate_boxplot(&[5.0, 1.0, f64::NAN, 3.0, 2.0, 4.0]).unwrap();
        assert_eq!(
            b,
            BoxPlot {
                p1: 1.0,
                p25: 2.0,
                p50: 3.0,
                p75: 4.0,
                p99: 5.0
            }
        );
    }

    fn step(offered: f64, received: f64, lost: u64, p50: Option<f64>) -> Step {
        Step {
            offered,
            received,
            lost,
            p50_us: p50,
            p99_us: p50.map(|l| l * 2.0),
        }
    }

    #[test]
    fn max_sustainable_rate_stops_at_first_failure() {
        // Unsorted on purpose; 40k falls short by 10 %, 50k would pass again but does not count.
        let steps = [
            step(30_000.0, 29_900.0, 0, None),
            step(10_000.0, 10_000.0, 0, None),
            step(50_000.0, 50_000.0, 0, None),
            step(20_000.0, 19_990.0, 0, None),
            step(40_000.0, 36_000.0, 0, None),
        ];
        assert_eq!(max_sustainable_rate(&steps, 0.01), Some(30_000.0));
        assert_eq!(max_sustainable_rate(&steps, 0.2), Some(50_000.0));
        // A loss fails a step even when the rate was met.
        let lossy = [
            step(10_000.0, 10_000.0, 0, None),
            step(20_000.0, 20_000.0, 3, None),
        ];
        assert_eq!(max_sustainable_rate(&lossy, 0.01), Some(10_000.0));
        assert_eq!(max_sustainable_rate(&[step(1.0, 0.0, 0, None)], 0.01), None);
        assert_eq!(max_sustainable_rate(&[], 0.01), None);
        assert_eq!(
            max_sustainable_rate(&[step(1.0, f64::NAN, 0, None)], 0.01),
            None
        );
    }

    #[test]
    fn knee_of_a_hockey_stick() {
        // Flat at 10 µs up to 50k/s, then +100 µs per 10k/s: the corner is at 50k/s.
        let mut steps: Vec<Step> = (1..=10)
            .map(|i| {
                let lat = if i <= 5 {
                    10.0
                } else {
                    10.0 + 100.0 * (i - 5) as f64
                };
                step(i as f64 * 10_000.0, i as f64 * 10_000.0, 0, Some(lat))
            })
            .collect();
        steps.reverse();
        assert_eq!(knee_rate(&steps), Some(50_000.0));
        // Noise on the flat part does not move it.
        steps[7].p50_us = Some(11.0);
        assert_eq!(knee_rate(&steps), Some(50_000.0));
    }

    #[test]
    fn no_knee_on_flat_or_short_curves() {
        let flat: Vec<Step> = (1..=10)
            .map(|i| step(i as f64, i as f64, 0, Some(10.0 + (i % 3) as f64)))
            .collect();
        assert_eq!(knee_rate(&flat), None);
        let two = [step(1.0, 1.0, 0, Some(1.0)), step(2.0, 2.0, 0, Some(100.0))];
        assert_eq!(knee_rate(&two), None);
        let none: Vec<Step> = (1..=5).map(|i| step(i as f64, 1.0, 0, None)).collect();
        assert_eq!(knee_rate(&none), None);
        // Concave (rises at once then flattens): nothing below the chord.
        let concave: Vec<Step> = (1..=5)
            .map(|i| step(i as f64, 1.0, 0, Some(if i == 1 { 10.0 } else { 100.0 })))
            .collect();
        assert_eq!(knee_rate(&concave), None);
    }
}
