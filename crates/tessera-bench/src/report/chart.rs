//! A small figure model (panels of lines, boxes, bars and markers on linear, log2, log10 or
//! categorical axes) and its rendering with plotters into SVG and PNG.
//!
//! Axes are drawn in transformed coordinates (log2 of a payload, log10 of a rate) with explicit
//! key points, so one coordinate type serves every chart and tick labels are chosen here (powers
//! of two for payloads, 1-2-5 decades for rates) rather than by plotters' generic algorithm.
//! Values a scale cannot show (non-finite; zero or negative on a log axis) are dropped; a panel
//! left with nothing is dropped; a figure left with no panel is not drawn.

use std::path::{Path, PathBuf};
use std::sync::Once;

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

use super::glyphs::{GlyphText, SIZE_PER_EM};

static FONT_ONCE: Once = Once::new();
const FAMILY: &str = "sans-serif";

/// Registers the bundled font with plotters (its text styles look fonts up by family name; the
/// drawing itself goes through [`GlyphText`]).
fn ensure_font() {
    FONT_ONCE.call_once(|| {
        for style in [FontStyle::Normal, FontStyle::Bold] {
            // The bundled font is known good; a failure would only lose text, not the chart.
            let _ = plotters::style::register_font(FAMILY, style, super::glyphs::FONT_BYTES);
        }
    });
}

/// How an axis maps data values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scale {
    /// Linear.
    Linear,
    /// Base-2 logarithmic, ticks at powers of two (payload sizes).
    Log2,
    /// Base-10 logarithmic, ticks at 1-2-5 of each decade.
    Log10,
}

/// One axis of a panel.
#[derive(Debug, Clone)]
pub(super) struct Axis {
    /// Description with unit.
    pub label: String,
    /// Mapping of values.
    pub scale: Scale,
    /// When not empty, a categorical axis: values are indices into this list.
    pub categories: Vec<String>,
    /// Linear axes: start at zero.
    pub from_zero: bool,
}

impl Axis {
    /// A numeric axis.
    pub fn new(label: impl Into<String>, scale: Scale) -> Self {
        Axis {
            label: label.into(),
            scale,
            categories: Vec::new(),
            from_zero: scale == Scale::Linear,
        }
    }

    /// A categorical axis.
    pub fn categories(label: impl Into<String>, categories: Vec<String>) -> Self {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            categories,
            from_zero: false,
        }
    }
}

/// Marker shape of a series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Marker {
    Circle,
    Triangle,
    Square,
    Diamond,
    Cross,
}

/// Colour and marker of one pair, the same in every chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Style {
    pub color: RGBColor,
    pub marker: Marker,
}

/// A polyline, optionally dashed, optionally with markers.
#[derive(Debug, Clone)]
pub(super) struct Line {
    pub style: Style,
    pub pts: Vec<(f64, f64)>,
    pub dashed: bool,
    pub markers: bool,
}

/// A box-and-whisker glyph at `x`, in slot `slot` of `slots` side-by-side boxes.
#[derive(Debug, Clone)]
pub(super) struct BoxGlyph {
    pub style: Style,
    pub x: f64,
    pub slot: usize,
    pub slots: usize,
    /// Lower whisker, box bottom, median, box top, upper whisker.
    pub v: [f64; 5],
}

/// A bar in category `cat`, slot `slot` of `slots`.
#[derive(Debug, Clone)]
pub(super) struct Bar {
    pub style: Style,
    pub cat: usize,
    pub slot: usize,
    pub slots: usize,
    pub value: f64,
}

/// A labelled vertical marker line (the knee of a rate step).
#[derive(Debug, Clone)]
pub(super) struct VMark {
    pub style: Style,
    pub x: f64,
    pub label: String,
}

/// One plot area.
#[derive(Debug, Clone)]
pub(super) struct Panel {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub lines: Vec<Line>,
    pub boxes: Vec<BoxGlyph>,
    pub bars: Vec<Bar>,
    pub vmarks: Vec<VMark>,
    /// Draw y = x (received against offered).
    pub diagonal: bool,
}

impl Panel {
    /// An empty panel.
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Self {
        Panel {
            title: title.into(),
            x,
            y,
            lines: Vec::new(),
            boxes: Vec::new(),
            bars: Vec::new(),
            vmarks: Vec::new(),
            diagonal: false,
        }
    }
}

/// How a legend entry's sample is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Swatch {
    /// A line with the style's marker.
    Line,
    /// A line without marker.
    Plain,
    /// A dashed line without marker.
    Dashed,
    /// A filled patch (boxes, bars).
    Patch,
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(super) struct LegendEntry {
    pub style: Style,
    pub swatch: Swatch,
    pub text: String,
}

/// A figure: a title, panels in a grid, one legend below them.
#[derive(Debug, Clone)]
pub(super) struct Figure {
    /// File stem under `charts/`.
    pub name: String,
    pub title: String,
    /// A second, smaller title line (the parameters common to every panel).
    pub subtitle: String,
    pub panels: Vec<Panel>,
    /// Panels share one y range (same metric in every panel).
    pub share_y: bool,
    pub legend: Vec<LegendEntry>,
}

/// A figure drawn to disk.
#[derive(Debug, Clone)]
pub(crate) struct Rendered {
    pub name: String,
    pub title: String,
    /// The SVG text (also written to `svg_path`), for inlining.
    pub svg: String,
    pub svg_path: PathBuf,
    pub png_path: PathBuf,
}

/// A linear f64 axis range with the key points (ticks and grid lines) chosen here.
#[derive(Clone)]
struct KeyedRange {
    lo: f64,
    hi: f64,
    keys: Vec<f64>,
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
fn tf(scale: Scale, v: f64) -> Option<f64> {
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
fn tick_text(v: f64) -> String {
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

/// An element of a panel in transformed coordinates.
struct Prepared {
    /// Lines with transformed, x-sorted points.
    lines: Vec<Line>,
    /// Style, x centre, half width, [lo, q1, median, q3, hi].
    boxes: Vec<(Style, f64, f64, [f64; 5])>,
    /// Style, x left, x right, value.
    bars: Vec<(Style, f64, f64, f64)>,
    vmarks: Vec<(Style, f64, String)>,
    xr: (f64, f64),
    yr: (f64, f64),
    xkeys: Vec<f64>,
    ykeys: Vec<f64>,
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

fn keys(axis: &Axis, r: (f64, f64), target: f64) -> Vec<f64> {
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

fn span_range(vals: &[f64], axis: &Axis, pad_lo: f64, pad_hi: f64) -> Option<(f64, f64)> {
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

/// Transforms a panel's data for drawing; `x_px` is the plot's width in pixels (tick density).
fn prepare(p: &Panel, x_px: f64) -> Option<Prepared> {
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

/// Pixel layout of a figure with `n` panels: (width, panel height, columns, rows).
fn layout(n: usize) -> (u32, u32, usize, usize) {
    match n {
        0 | 1 => (900, 520, 1, 1),
        2 => (1300, 480, 2, 1),
        4 => (1300, 440, 2, 2),
        n => (1500, 420, 3, n.div_ceil(3)),
    }
}

const TITLE_H: u32 = 44;
const SUBTITLE_H: u32 = 22;

fn title_h(fig: &Figure) -> u32 {
    if fig.subtitle.is_empty() {
        TITLE_H
    } else {
        TITLE_H + SUBTITLE_H - 6
    }
}

/// The largest font size (at most `max`) at which `text` fits in `width` pixels.
fn fitting_size(text: &str, max: f64, width: u32) -> f64 {
    let mut size = max;
    while size > 9.0 && measure(text, size).0 + 24 > width {
        size -= 1.0;
    }
    size
}

/// A text style with an em of `em` pixels.
fn font(em: f64) -> TextStyle<'static> {
    (FAMILY, em * SIZE_PER_EM).into_font().color(&BLACK)
}

/// Width and height of `text` with an em of `em` pixels.
fn measure(text: &str, em: f64) -> (u32, u32) {
    super::glyphs::text_size(text, em * SIZE_PER_EM)
}

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

/// Legend rows: entries per row, given measured entry widths and the figure width.
fn legend_rows(widths: &[u32], total: u32) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut used = 0;
    for (i, w) in widths.iter().enumerate() {
        if !cur.is_empty() && used + w > total.saturating_sub(40) {
            rows.push(std::mem::take(&mut cur));
            used = 0;
        }
        cur.push(i);
        used += w;
    }
    if !cur.is_empty() {
        rows.push(cur);
    }
    rows
}

const SWATCH_W: i32 = 34;

const LEGEND_FONT: f64 = 14.0;
const LEGEND_ROW_H: u32 = 26;

fn draw_marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    m: Marker,
    c: RGBColor,
    at: (i32, i32),
) -> Result<(), String> {
    let fill = c.filled();
    let (x, y) = at;
    match m {
        Marker::Circle => area.draw(&Circle::new(at, 4, fill)).map_err(err),
        Marker::Triangle => area
            .draw(&Polygon::new(
                vec![(x, y - 5), (x + 5, y + 4), (x - 5, y + 4)],
                fill,
            ))
            .map_err(err),
        Marker::Square => area
            .draw(&Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], fill))
            .map_err(err),
        Marker::Diamond => area
            .draw(&Polygon::new(
                vec![(x, y - 5), (x + 5, y), (x, y + 5), (x - 5, y)],
                fill,
            ))
            .map_err(err),
        Marker::Cross => area
            .draw(&Cross::new(at, 4, c.stroke_width(2)))
            .map_err(err),
    }
}

fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
    rows: &[Vec<usize>],
    widths: &[u32],
) -> Result<(), String> {
    let (w, _) = area.dim_in_pixel();
    let style = font(LEGEND_FONT);
    for (r, row) in rows.iter().enumerate() {
        let row_w: u32 = row.iter().map(|i| widths[*i]).sum();
        let mut x = (w.saturating_sub(row_w) / 2) as i32;
        let y = (r as u32 * LEGEND_ROW_H + LEGEND_ROW_H / 2) as i32;
        for &i in row {
            let e = &entries[i];
            let c = e.style.color;
            match e.swatch {
                Swatch::Line => {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + SWATCH_W - 6, y)],
                        c.stroke_width(2),
                    ))
                    .map_err(err)?;
                    draw_marker(area, e.style.marker, c, (x + (SWATCH_W - 6) / 2, y))?;
                }
                Swatch::Plain => {
                    area.draw(&PathElement::new(
                        vec![(x, y), (x + SWATCH_W - 6, y)],
                        c.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
                Swatch::Dashed => {
                    area.draw(&DashedPathElement::new(
                        vec![(x, y), (x + SWATCH_W - 6, y)],
                        5,
                        3,
                        c.stroke_width(2),
                    ))
                    .map_err(err)?;
                }
                Swatch::Patch => {
                    area.draw(&Rectangle::new(
                        [(x + 4, y - 7), (x + SWATCH_W - 10, y + 7)],
                        c.mix(0.45).filled(),
                    ))
                    .map_err(err)?;
                    area.draw(&Rectangle::new(
                        [(x + 4, y - 7), (x + SWATCH_W - 10, y + 7)],
                        c.stroke_width(1),
                    ))
                    .map_err(err)?;
                }
            }
            area.draw(&Text::new(
                e.text.clone(),
                (x + SWATCH_W, y),
                style.pos(Pos::new(HPos::Left, VPos::Center)),
            ))
            .map_err(err)?;
            x += widths[i] as i32;
        }
    }
    Ok(())
}

fn label_of(axis: &Axis, v: f64) -> String {
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

fn draw_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    panel: &Panel,
    p: &Prepared,
) -> Result<(), String> {
    let mut builder = ChartBuilder::on(area);
    if !panel.title.is_empty() {
        builder.caption(&panel.title, font(17.0));
    }
    let mut chart = builder
        .margin(12)
        .margin_right(24)
        .x_label_area_size(52)
        .y_label_area_size(78)
        .build_cartesian_2d(
            KeyedRange {
                lo: p.xr.0,
                hi: p.xr.1,
                keys: p.xkeys.clone(),
            },
            KeyedRange {
                lo: p.yr.0,
                hi: p.yr.1,
                keys: p.ykeys.clone(),
            },
        )
        .map_err(err)?;
    let xfmt = |v: &f64| label_of(&panel.x, *v);
    let yfmt = |v: &f64| label_of(&panel.y, *v);
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(panel.x.label.as_str())
        .y_desc(panel.y.label.as_str())
        .x_label_formatter(&xfmt)
        .y_label_formatter(&yfmt)
        .label_style(font(13.0))
        .axis_desc_style(font(15.0))
        .bold_line_style(BLACK.mix(0.12))
        .light_line_style(TRANSPARENT)
        .axis_style(BLACK.mix(0.8));
    if !panel.x.categories.is_empty() {
        mesh.disable_x_mesh();
    }
    mesh.draw().map_err(err)?;

    if panel.diagonal {
        let lo = p.xr.0.max(p.yr.0);
        let hi = p.xr.1.min(p.yr.1);
        if lo < hi {
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    vec![(lo, lo), (hi, hi)],
                    6,
                    4,
                    BLACK.mix(0.45).stroke_width(1),
                )))
                .map_err(err)?;
        }
    }

    // Bars first, then boxes, then lines on top.
    let y_base = if panel.y.scale == Scale::Linear {
        0f64.max(p.yr.0)
    } else {
        p.yr.0
    };
    for (s, l, r, v) in &p.bars {
        let c = s.color;
        chart
            .draw_series([
                Rectangle::new([(*l, y_base), (*r, *v)], c.mix(0.75).filled()),
                Rectangle::new([(*l, y_base), (*r, *v)], c.stroke_width(1)),
            ])
            .map_err(err)?;
    }
    for (s, cx, hw, v) in &p.boxes {
        let c = s.color;
        let [lo, q1, med, q3, hi] = *v;
        let cap = hw * 0.5;
        chart
            .draw_series([
                PathElement::new(vec![(*cx, lo), (*cx, q1)], c.stroke_width(1)),
                PathElement::new(vec![(*cx, q3), (*cx, hi)], c.stroke_width(1)),
                PathElement::new(vec![(cx - cap, lo), (cx + cap, lo)], c.stroke_width(1)),
                PathElement::new(vec![(cx - cap, hi), (cx + cap, hi)], c.stroke_width(1)),
            ])
            .map_err(err)?;
        chart
            .draw_series([
                Rectangle::new([(cx - hw, q1), (cx + hw, q3)], c.mix(0.35).filled()),
                Rectangle::new([(cx - hw, q1), (cx + hw, q3)], c.stroke_width(1)),
            ])
            .map_err(err)?;
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(cx - hw, med), (cx + hw, med)],
                c.stroke_width(3),
            )))
            .map_err(err)?;
    }
    for Line {
        style: s,
        pts,
        dashed,
        markers,
    } in &p.lines
    {
        let c = s.color;
        if *dashed {
            chart
                .draw_series(std::iter::once(DashedPathElement::new(
                    pts.clone(),
                    7,
                    4,
                    c.stroke_width(2),
                )))
                .map_err(err)?;
        } else {
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(err)?;
        }
        if *markers {
            let fill = c.filled();
            let it = pts.iter().copied();
            match s.marker {
                Marker::Circle => chart
                    .draw_series(it.map(|p| Circle::new(p, 4, fill)))
                    .map(|_| ()),
                Marker::Triangle => chart
                    .draw_series(it.map(|p| TriangleMarker::new(p, 5, fill)))
                    .map(|_| ()),
                Marker::Square => chart
                    .draw_series(
                        it.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], fill)),
                    )
                    .map(|_| ()),
                Marker::Diamond => chart
                    .draw_series(it.map(|p| {
                        EmptyElement::at(p)
                            + Polygon::new(vec![(0, -5), (5, 0), (0, 5), (-5, 0)], fill)
                    }))
                    .map(|_| ()),
                Marker::Cross => chart
                    .draw_series(it.map(|p| Cross::new(p, 4, c.stroke_width(2))))
                    .map(|_| ()),
            }
            .map_err(err)?;
        }
    }
    for (i, (s, x, label)) in p.vmarks.iter().enumerate() {
        let c = s.color;
        let top = p.yr.1 - (p.yr.1 - p.yr.0) * 0.02;
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(*x, p.yr.0), (*x, top)],
                4,
                4,
                c.stroke_width(2),
            )))
            .map_err(err)?;
        let dy = 2 + 18 * i as i32;
        let (tw, th) = measure(label, 13.0);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((*x, p.yr.1))
                    + Rectangle::new(
                        [(3, dy - 1), (7 + tw as i32, dy + th as i32 + 1)],
                        WHITE.mix(0.85).filled(),
                    )
                    + Text::new(label.clone(), (5, dy), font(13.0).color(&c)),
            ))
            .map_err(err)?;
    }
    Ok(())
}

fn draw_figure<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    fig: &Figure,
    panels: &[(&Panel, Prepared)],
) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let (w, h) = root.dim_in_pixel();
    let (_, _, cols, rows) = layout(panels.len());

    let widths: Vec<u32> = fig
        .legend
        .iter()
        .map(|e| measure(&e.text, LEGEND_FONT).0 + SWATCH_W as u32 + 20)
        .collect();
    let lrows = legend_rows(&widths, w);
    let legend_h = lrows.len() as u32 * LEGEND_ROW_H + if lrows.is_empty() { 0 } else { 10 };

    let th = title_h(fig);
    let (title_area, rest) = root.split_vertically(th);
    title_area
        .draw(&Text::new(
            fig.title.clone(),
            ((w / 2) as i32, (TITLE_H / 2 + 2) as i32),
            font(fitting_size(&fig.title, 21.0, w)).pos(Pos::new(HPos::Center, VPos::Center)),
        ))
        .map_err(err)?;
    if !fig.subtitle.is_empty() {
        title_area
            .draw(&Text::new(
                fig.subtitle.clone(),
                ((w / 2) as i32, (TITLE_H + 2) as i32),
                font(fitting_size(&fig.subtitle, 15.0, w))
                    .color(&RGBColor(90, 90, 90))
                    .pos(Pos::new(HPos::Center, VPos::Center)),
            ))
            .map_err(err)?;
    }
    let body_h = h.saturating_sub(th + legend_h);
    let (body, legend_area) = rest.split_vertically(body_h);
    let areas = body.split_evenly((rows, cols));
    for ((panel, prep), area) in panels.iter().zip(areas.iter()) {
        draw_panel(area, panel, prep)?;
    }
    draw_legend(&legend_area, &fig.legend, &lrows, &widths)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Runs a drawing closure, turning a plotters panic into an error (the report must survive).
fn guarded(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err("the chart library panicked".to_string()),
    }
}

/// Height in pixels of the legend of `fig` at width `w` (measured as drawing will).
fn legend_height(fig: &Figure, w: u32) -> u32 {
    if fig.legend.is_empty() {
        return 0;
    }
    let widths: Vec<u32> = fig
        .legend
        .iter()
        .map(|e| measure(&e.text, LEGEND_FONT).0 + SWATCH_W as u32 + 20)
        .collect();
    legend_rows(&widths, w).len() as u32 * LEGEND_ROW_H + 10
}

/// Draws `fig` into `dir/NAME.svg` and `dir/NAME.png`. Fails (and writes nothing) when no panel
/// has drawable data.
pub(super) fn render(fig: &Figure, dir: &Path) -> Result<Rendered, String> {
    ensure_font();
    let drawable = fig
        .panels
        .iter()
        .filter(|p| prepare(p, 800.0).is_some())
        .count();
    if drawable == 0 {
        return Err("no drawable data".to_string());
    }
    let (w, ph, cols, rows) = layout(drawable);
    let x_px = (w as f64 / cols as f64 - 78.0 - 36.0).max(100.0);
    let mut panels: Vec<(&Panel, Prepared)> = fig
        .panels
        .iter()
        .filter_map(|p| prepare(p, x_px).map(|q| (p, q)))
        .collect();
    // Panels of a figure share the y axis so they compare at a glance.
    let same_scale = panels
        .windows(2)
        .all(|w| w[0].0.y.scale == w[1].0.y.scale && w[0].0.y.categories == w[1].0.y.categories);
    if fig.share_y && panels.len() > 1 && same_scale {
        let lo = panels
            .iter()
            .map(|p| p.1.yr.0)
            .fold(f64::INFINITY, f64::min);
        let hi = panels
            .iter()
            .map(|p| p.1.yr.1)
            .fold(f64::NEG_INFINITY, f64::max);
        for (panel, prep) in &mut panels {
            prep.yr = (lo, hi);
            prep.ykeys = keys(&panel.y, (lo, hi), 6.0);
        }
    }
    let h = title_h(fig) + ph * rows as u32 + legend_height(fig, w) + 6;

    let mut svg = String::new();
    guarded(|| {
        let backend = GlyphText {
            inner: SVGBackend::with_string(&mut svg, (w, h)),
            raster: false,
        };
        draw_figure(backend.into_drawing_area(), fig, &panels)
    })?;
    let png_path = dir.join(format!("{}.png", fig.name));
    guarded(|| {
        let backend = GlyphText {
            inner: BitMapBackend::new(&png_path, (w, h)),
            raster: true,
        };
        draw_figure(backend.into_drawing_area(), fig, &panels)
    })?;
    let svg_path = dir.join(format!("{}.svg", fig.name));
    std::fs::write(&svg_path, &svg).map_err(|e| format!("{}: {e}", svg_path.display()))?;
    Ok(Rendered {
        name: fig.name.clone(),
        title: fig.title.clone(),
        svg,
        svg_path,
        png_path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_keys_are_powers_of_two() {
        let a = Axis::new("payload", Scale::Log2);
        let k = keys(&a, (1.6, 14.4), 7.0);
        assert!(k.iter().all(|v| v.fract() == 0.0));
        assert!(k.contains(&2.0) && k.contains(&14.0) || k.len() <= 8);
        assert_eq!(label_of(&a, 10.0), "1024");
    }

    #[test]
    fn tick_text_is_compact() {
        assert_eq!(tick_text(50_000.0), "50k");
        assert_eq!(tick_text(1_250_000.0), "1.25M");
        assert_eq!(tick_text(12.5), "12.5");
        assert_eq!(tick_text(0.0), "0");
    }

    #[test]
    fn degenerate_ranges_are_widened() {
        let a = Axis::new("y", Scale::Linear);
        let (lo, hi) = span_range(&[0.0, 0.0], &a, 0.05, 0.05).unwrap();
        assert!(hi > lo);
        let l = Axis::new("y", Scale::Log10);
        let (lo, hi) = span_range(&[2.0], &l, 0.05, 0.05).unwrap();
        assert!(hi > lo);
        assert!(span_range(&[], &l, 0.05, 0.05).is_none());
    }
}
