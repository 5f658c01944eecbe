//! Text for the charts, from the bundled DejaVu Sans.
//!
//! plotters 0.3.7 rasterises ab_glyph text without each glyph's left side bearing, so narrow
//! glyphs (`1`, `i`, `l`, `.`, `:`) sit at the left of their advance and numbers look gappy
//! ("1 00"). [`GlyphText`] wraps a backend and lays text out itself: kerning, bearings, anchors
//! and the rotations plotters asks for (the y-axis description). It also measures text the way a
//! browser sizes the SVG's `font-size`, so label areas and legends fit in both outputs.

use std::sync::OnceLock;

use ab_glyph::{point, Font, FontRef, GlyphId, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
};

/// DejaVu Sans (see `assets/DejaVuSans-LICENSE.txt`).
pub(super) static FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok())
        .as_ref()
}

/// Text laid out on a baseline: glyphs with their pen positions, and the box.
struct Layout {
    glyphs: Vec<(GlyphId, f32)>,
    scale: PxScale,
    width: f32,
    ascent: f32,
    descent: f32,
}

/// plotters' text size is 1.24 em (its SVG backend writes `font-size` = size / 1.24).
pub(super) const SIZE_PER_EM: f64 = 1.24;

/// Lays `text` out at plotters text size `size` (an em of `size / 1.24` pixels).
fn layout(f: &FontRef<'static>, size: f64, text: &str) -> Layout {
    let upem = f.units_per_em().unwrap_or(2048.0);
    let em = size / SIZE_PER_EM;
    // ab_glyph scales by ascent - descent; convert so that one em is `em` pixels, as in SVG.
    let scale = PxScale::from(em as f32 * f.height_unscaled() / upem);
    let sf = f.as_scaled(scale);
    let mut x = 0.0;
    let mut prev: Option<GlyphId> = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = sf.glyph_id(c);
        if let Some(p) = prev {
            x += sf.kern(p, id);
        }
        glyphs.push((id, x));
        x += sf.h_advance(id);
        prev = Some(id);
    }
    Layout {
        glyphs,
        scale,
        width: x,
        ascent: sf.ascent(),
        descent: sf.descent(),
    }
}

/// Width and height in pixels of `text` at plotters text size `size`.
pub(super) fn text_size(text: &str, size: f64) -> (u32, u32) {
    match font() {
        Some(f) => {
            let l = layout(f, size, text);
            (l.width.ceil() as u32, (l.ascent - l.descent).ceil() as u32)
        }
        None => (
            (text.chars().count() as f64 * size * 0.45) as u32,
            (size / SIZE_PER_EM) as u32,
        ),
    }
}

/// A backend that draws text with [`layout`] (when `raster`) and measures it the same way.
pub(super) struct GlyphText<B> {
    pub inner: B,
    /// Rasterise text here (bitmaps); otherwise pass text to the inner backend (SVG).
    pub raster: bool,
}

impl<B: DrawingBackend> DrawingBackend for GlyphText<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        (iw, ih): (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, (iw, ih), src)
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        Ok(text_size(text, style.size()))
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        let color = style.color();
        let f = match font() {
            Some(f) if self.raster => f,
            _ => return self.inner.draw_text(text, style, pos),
        };
        if color.alpha == 0.0 || text.is_empty() {
            return Ok(());
        }
        let l = layout(f, style.size(), text);
        let height = l.ascent - l.descent;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -l.width / 2.0,
            HPos::Right => -l.width,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -height / 2.0,
            VPos::Bottom => -height,
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        let mut pixels: Vec<(BackendCoord, f32)> = Vec::new();
        for &(id, x) in &l.glyphs {
            let glyph = id.with_scale_and_position(l.scale, point(x + dx, l.ascent + dy));
            if let Some(o) = f.outline_glyph(glyph) {
                let b = o.px_bounds();
                o.draw(|gx, gy, cov| {
                    if cov <= 0.0 {
                        return;
                    }
                    let lx = b.min.x as i32 + gx as i32;
                    let ly = b.min.y as i32 + gy as i32;
                    let (tx, ty) = trans.transform(lx, ly);
                    let p = (pos.0 + tx, pos.1 + ty);
                    if p.0 >= 0 && p.1 >= 0 && p.0 < w as i32 && p.1 < h as i32 {
                        pixels.push((p, cov.min(1.0)));
                    }
                });
            }
        }
        for (p, cov) in pixels {
            self.inner.draw_pixel(
                p,
                BackendColor {
                    alpha: color.alpha * cov as f64,
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundled_font_loads_and_measures() {
        assert!(font().is_some());
        let (w1, h) = text_size("100", 15.0 * SIZE_PER_EM);
        let (w2, _) = text_size("100000", 15.0);
        assert!(w1 > 20 && w1 < 40, "{w1}");
        assert!(w2 > w1 * 3 / 2);
        assert!((15..=20).contains(&h), "{h}");
    }
}
