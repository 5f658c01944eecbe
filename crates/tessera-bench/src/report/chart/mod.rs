//! A small figure model (panels of lines, boxes, bars and markers on linear, log2, log10 or
//! categorical axes) and its rendering with plotters into SVG and PNG.
//!
//! Axes are drawn in transformed coordinates (log2 of a payload, log10 of a rate) with explicit
//! key points, so one coordinate type serves every chart and tick labels are chosen here (powers
//! of two for payloads, 1-2-5 decades for rates) rather than by plotters' generic algorithm.
//! Values a scale cannot show (non-finite; zero or negative on a log axis) are dropped; a panel
//! left with nothing is dropped; a figure left with no panel is not drawn.

mod draw;
mod layout;
mod prepare;
mod scale;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;
use plotters::style::FontStyle;

// `self`: the submodules reach `report::glyphs` as `super::glyphs` through this import.
use super::glyphs::{self, GlyphText};

use draw::draw_figure;
use layout::{layout, legend_height, title_h};
use prepare::{prepare, Prepared};
use scale::keys;

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

/// Runs a drawing closure, turning a plotters panic into an error (the report must survive).
fn guarded(f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => Err("the chart library panicked".to_string()),
    }
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
