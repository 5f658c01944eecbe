//! Drawing with plotters: markers, the legend, one panel (bars, boxes, lines, marker lines) and
//! a whole figure (title, panel grid, legend).

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::layout::{
    fitting_size, font, layout, legend_rows, measure, title_h, LEGEND_FONT, LEGEND_ROW_H, SWATCH_W,
    TITLE_H,
};
use super::prepare::Prepared;
use super::scale::{label_of, KeyedRange};
use super::{Figure, LegendEntry, Line, Marker, Panel, Scale, Swatch};

fn err<E: std::fmt::Display>(e: E) -> String {
    e.to_string()
}

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

pub(super) fn draw_figure<DB: DrawingBackend>(
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
