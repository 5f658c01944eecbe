//! Axis scales and ticks: the keyed coordinate range plotters draws on, the mapping of values
//! onto linear/log2/log10 scales, and the choice and text of tick labels.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::prelude::*;

use super::{Axis, Scale};

/// A linear f64 axis range with the key points (ticks and grid lines) chosen here.
#[derive(Clone)]
pub(super) struct KeyedRange {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) keys: Vec<f64>,
}

impl Ranged for KeyedRange {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.hi - self.lo;
        let f = if span > 0.0 {
            (v - self.lo) / span
        } else {
            0.5
        };
        let px = limit.0 as f64 + f * (limit.1 - limit.0) as f64;
        // Far outside values (and NaN) are clamped so no drawing code sees wild coordinates.
        let guard = 4.0 * (limit.1 - limit.0).abs() as f64 + 1000.0;
        if px.is_nan() {
            limit.0
        } else {
            px.clamp(-guard, guard).round() as i32
        }
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Maps a value onto a scale; `None` when the scale cannot show it.
pub(super) fn tf(scale: Scale, v: f64) -> Option<f64> {
    if !v.is_finite() {
        return None;
    }
    match scale {
        Scale::Linear => Some(v),
        Scale::Log2 if v > 0.0 => Some(v.log2()),
        Scale::Log10 if v > 0.0 => Some(v.log10()),
        _ => None,
    }
}

fn untf(scale: Scale, v: f64) -> f64 {
    match scale {
        Scale::Linear => v,
        Scale::Log2 => v.exp2(),
        Scale::Log10 => 10f64.powf(v),
    }
}

/// Tick label text: `k`/`M` suffixes, at most three significant digits.
pub(super) fn tick_text(v: f64) -> String {
    fn trim(s: String) -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    }
    let a = v.abs();
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

fn nice_step(span: f64, target: f64) -> f64 {
    let raw = span / target;
    let mag = 10f64.powf(raw.log10().floor());
    let n = raw / mag;
    let m = if n <= 1.0 {
        1.0
    } else if n <= 2.0 {
        2.0
    } else if n <= 2.5 {
        2.5
    } else if n <= 5.0 {
        5.0
    } else {
        10.0
    };
    m * mag
}

pub(super) fn keys(axis: &Axis, r: (f64, f64), target: f64) -> Vec<f64> {
    let (lo, hi) = r;
    if !axis.categories.is_empty() {
        return (0..axis.categories.len()).map(|i| i as f64).collect();
    }
    match axis.scale {
        Scale::Linear => {
            let step = nice_step(hi - lo, target.clamp(2.0, 10.0));
            if !(step.is_finite() && step > 0.0) {
                return vec![lo];
            }
            let mut v = Vec::new();
            let mut k = (lo / step).ceil();
            while k * step <= hi + step * 1e-9 && v.len() < 50 {
                let x = k * step;
                v.push(if x.abs() < step * 1e-9 { 0.0 } else { x });
                k += 1.0;
            }
            v
        }
        Scale::Log2 => {
            let a = lo.ceil() as i64;
            let b = hi.floor() as i64;
            let n = (b - a + 1).max(1);
            let stride = ((n as f64) / target.max(1.0)).ceil().max(1.0) as i64;
            (a..=b)
                .filter(|e| (e - a) % stride == 0)
                .map(|e| e as f64)
                .collect()
        }
        Scale::Log10 => {
            let pick = |mults: &[f64]| -> Vec<f64> {
                let mut v = Vec::new();
                for e in (lo.floor() as i64)..=(hi.ceil() as i64) {
                    for m in mults {
                        let x = (m * 10f64.powi(e as i32)).log10();
                        if x >= lo - 1e-9 && x <= hi + 1e-9 {
                            v.push(x);
                        }
                    }
                }
                v
            };
            let v = pick(&[1.0, 2.0, 5.0]);
            if v.len() > 12 {
                pick(&[1.0])
            } else if v.len() < 3 {
                pick(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])
            } else {
                v
            }
        }
    }
}

pub(super) fn span_range(
    vals: &[f64],
    axis: &Axis,
    pad_lo: f64,
    pad_hi: f64,
) -> Option<(f64, f64)> {
    let mut lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    if axis.scale == Scale::Linear && axis.from_zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    let mut span = hi - lo;
    if span <= 0.0 {
        span = match axis.scale {
            Scale::Linear => lo.abs().max(1.0),
            _ => 1.0,
        };
        if !(axis.scale == Scale::Linear && axis.from_zero && lo == 0.0) {
            lo -= span / 2.0;
        }
        hi = lo + span;
    }
    let lo_pad = if axis.scale == Scale::Linear && axis.from_zero && lo >= 0.0 {
        0.0
    } else {
        span * pad_lo
    };
    Some((lo - lo_pad, hi + span * pad_hi))
}

pub(super) fn label_of(axis: &Axis, v: f64) -> String {
    if !axis.categories.is_empty() {
        let i = v.round();
        if (v - i).abs() < 1e-6 && i >= 0.0 {
            return axis.categories.get(i as usize).cloned().unwrap_or_default();
        }
        return String::new();
    }
    let raw = untf(axis.scale, v);
    match axis.scale {
        Scale::Log2 if raw < 1e6 => format!("{:.0}", raw),
        _ => tick_text(raw),
    }
}
