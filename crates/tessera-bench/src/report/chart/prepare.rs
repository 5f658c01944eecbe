//! A panel's data transformed for drawing: points mapped onto the axis scales, box and bar
//! slots placed, and the axis ranges and key points chosen.

use super::scale::{keys, span_range, tf};
use super::{Line, Panel, Scale, Style};

/// An element of a panel in transformed coordinates.
pub(super) struct Prepared {
    /// Lines with transformed, x-sorted points.
    pub(super) lines: Vec<Line>,
    /// Style, x centre, half width, [lo, q1, median, q3, hi].
    pub(super) boxes: Vec<(Style, f64, f64, [f64; 5])>,
    /// Style, x left, x right, value.
    pub(super) bars: Vec<(Style, f64, f64, f64)>,
    pub(super) vmarks: Vec<(Style, f64, String)>,
    pub(super) xr: (f64, f64),
    pub(super) yr: (f64, f64),
    pub(super) xkeys: Vec<f64>,
    pub(super) ykeys: Vec<f64>,
}

/// Transforms a panel's data for drawing; `x_px` is the plot's width in pixels (tick density).
pub(super) fn prepare(p: &Panel, x_px: f64) -> Option<Prepared> {
    let (xs, ys) = (p.x.scale, p.y.scale);
    let mut lines = Vec::new();
    for l in &p.lines {
        let mut pts: Vec<(f64, f64)> = l
            .pts
            .iter()
            .filter_map(|&(x, y)| Some((tf(xs, x)?, tf(ys, y)?)))
            .collect();
        pts.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
        if !pts.is_empty() {
            lines.push(Line {
                style: l.style,
                pts,
                dashed: l.dashed,
                markers: l.markers,
            });
        }
    }

    // Boxes: slots share 80 % of the smallest gap between box positions.
    let box_xs: Vec<f64> = p.boxes.iter().filter_map(|b| tf(xs, b.x)).collect();
    let mut uniq = box_xs.clone();
    uniq.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    uniq.dedup();
    let gap = uniq
        .windows(2)
        .map(|w| w[1] - w[0])
        .fold(f64::INFINITY, f64::min);
    let group = if gap.is_finite() && gap > 0.0 {
        gap * 0.8
    } else {
        0.8
    };
    let mut boxes = Vec::new();
    for b in &p.boxes {
        let Some(x) = tf(xs, b.x) else { continue };
        let q1 = tf(ys, b.v[1]);
        let med = tf(ys, b.v[2]);
        let q3 = tf(ys, b.v[3]);
        let (Some(q1), Some(med), Some(q3)) = (q1, med, q3) else {
            continue;
        };
        let lo = tf(ys, b.v[0]).unwrap_or(q1);
        let hi = tf(ys, b.v[4]).unwrap_or(q3);
        let slots = b.slots.max(1) as f64;
        let w = group / slots;
        let cx = x + (b.slot as f64 - (slots - 1.0) / 2.0) * w;
        boxes.push((b.style, cx, w * 0.42, [lo, q1, med, q3, hi]));
    }

    let mut bars = Vec::new();
    for b in &p.bars {
        let Some(v) = tf(ys, b.value) else { continue };
        let slots = b.slots.max(1) as f64;
        let w = 0.8 / slots;
        let cx = b.cat as f64 + (b.slot as f64 - (slots - 1.0) / 2.0) * w;
        bars.push((b.style, cx - w * 0.45, cx + w * 0.45, v));
    }

    let vmarks: Vec<(Style, f64, String)> = p
        .vmarks
        .iter()
        .filter_map(|m| Some((m.style, tf(xs, m.x)?, m.label.clone())))
        .collect();

    let mut xv: Vec<f64> = Vec::new();
    let mut yv: Vec<f64> = Vec::new();
    for l in &lines {
        xv.extend(l.pts.iter().map(|p| p.0));
        yv.extend(l.pts.iter().map(|p| p.1));
    }
    for (_, cx, hw, v) in &boxes {
        xv.push(cx - hw);
        xv.push(cx + hw);
        yv.extend_from_slice(v);
    }
    for (_, l, r, v) in &bars {
        xv.push(*l);
        xv.push(*r);
        yv.push(*v);
    }
    if xv.is_empty() || yv.is_empty() {
        return None;
    }
    xv.extend(vmarks.iter().map(|m| m.1));

    let xr = if !p.x.categories.is_empty() {
        (-0.5, p.x.categories.len() as f64 - 0.5)
    } else {
        let pad = match xs {
            Scale::Linear => 0.04,
            _ => 0.06,
        };
        let (lo, hi) = span_range(&xv, &p.x, pad, pad)?;
        if xs == Scale::Log2 && !boxes.is_empty() {
            (lo.min(uniq[0] - 0.5), hi.max(uniq[uniq.len() - 1] + 0.5))
        } else {
            (lo, hi)
        }
    };
    let mut yr = span_range(&yv, &p.y, 0.06, 0.08)?;
    if !bars.is_empty() && ys == Scale::Linear {
        yr.0 = yr.0.min(0.0);
    }
    if !vmarks.is_empty() {
        yr.1 += (yr.1 - yr.0) * 0.06;
    }
    let x_target = match xs {
        Scale::Log2 => x_px / 58.0,
        _ => x_px / 120.0,
    };
    let xkeys = keys(&p.x, xr, x_target);
    let ykeys = keys(&p.y, yr, 6.0);
    Some(Prepared {
        lines,
        boxes,
        bars,
        vmarks,
        xr,
        yr,
        xkeys,
        ykeys,
    })
}
