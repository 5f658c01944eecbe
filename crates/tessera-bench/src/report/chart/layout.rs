//! Pixel layout of a figure: panel grid, title heights, fonts and text measurement, and how
//! legend entries wrap into rows.

use plotters::prelude::*;

use super::glyphs::SIZE_PER_EM;
use super::{Figure, FAMILY};

/// Pixel layout of a figure with `n` panels: (width, panel height, columns, rows).
pub(super) fn layout(n: usize) -> (u32, u32, usize, usize) {
    match n {
        0 | 1 => (900, 520, 1, 1),
        2 => (1300, 480, 2, 1),
        4 => (1300, 440, 2, 2),
        n => (1500, 420, 3, n.div_ceil(3)),
    }
}

pub(super) const TITLE_H: u32 = 44;
const SUBTITLE_H: u32 = 22;

pub(super) fn title_h(fig: &Figure) -> u32 {
    if fig.subtitle.is_empty() {
        TITLE_H
    } else {
        TITLE_H + SUBTITLE_H - 6
    }
}

/// The largest font size (at most `max`) at which `text` fits in `width` pixels.
pub(super) fn fitting_size(text: &str, max: f64, width: u32) -> f64 {
    let mut size = max;
    while size > 9.0 && measure(text, size).0 + 24 > width {
        size -= 1.0;
    }
    size
}

/// A text style with an em of `em` pixels.
pub(super) fn font(em: f64) -> TextStyle<'static> {
    (FAMILY, em * SIZE_PER_EM).into_font().color(&BLACK)
}

/// Width and height of `text` with an em of `em` pixels.
pub(super) fn measure(text: &str, em: f64) -> (u32, u32) {
    super::glyphs::text_size(text, em * SIZE_PER_EM)
}

/// Legend rows: entries per row, given measured entry widths and the figure width.
pub(super) fn legend_rows(widths: &[u32], total: u32) -> Vec<Vec<usize>> {
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

pub(super) const SWATCH_W: i32 = 34;

pub(super) const LEGEND_FONT: f64 = 14.0;
pub(super) const LEGEND_ROW_H: u32 = 26;

/// Height in pixels of the legend of `fig` at width `w` (measured as drawing will).
pub(super) fn legend_height(fig: &Figure, w: u32) -> u32 {
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
