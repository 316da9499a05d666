//! One chart, drawn the same way as SVG and as PNG: axes laid out by [`super::ticks`] (log where
//! the values span decades, round ticks written as integers or with an SI suffix), every series
//! its own colour, marker and line, each measured point labelled with its value where the label
//! covers no other point or label, and the legend in the emptiest corner. PNG text is drawn with
//! the DejaVu Sans built into the binary, so no system font is needed.

use super::label_place::{Placer, Rect};
use super::ticks::{self, Layout, Scale};
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Pixels of every chart.
pub const SIZE: (u32, u32) = (960, 600);

/// The shape drawn at each measured point.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    /// Filled circle.
    Circle,
    /// Filled square.
    Square,
    /// Filled triangle.
    Triangle,
    /// Filled diamond.
    Diamond,
    /// Two crossed strokes.
    Cross,
    /// Hollow circle.
    Ring,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Look {
    /// Line, marker and label colour.
    pub colour: RGBColor,
    /// The point marker.
    pub marker: Marker,
    /// A dashed line (the peer's series), else solid.
    pub dashed: bool,
}

/// One line of measured points.
#[derive(Debug, Clone)]
pub struct Series {
    /// Its legend entry.
    pub name: String,
    /// How it is drawn.
    pub look: Look,
    /// `(x, y)` as measured (on a category axis, x is the category's index).
    pub points: Vec<(f64, f64)>,
}

/// An axis: its title with units, and named categories instead of numbers if it has them.
#[derive(Debug, Clone, Default)]
pub struct Axis {
    /// The title, units included (` (log scale)` is added when the axis is logarithmic).
    pub title: String,
    /// Category names, indexed by the x of the points.
    pub categories: Option<Vec<String>>,
}

/// A chart.
#[derive(Debug, Clone, Default)]
pub struct Chart {
    /// The caption.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// The series, each with its own look.
    pub series: Vec<Series>,
    /// A dashed grey `y = x` line, labelled with this text.
    pub diagonal: Option<String>,
}

/// Writes `chart` as SVG to `path`.
pub fn write_svg(chart: &Chart, path: &std::path::Path) -> Result<(), String> {
    register_font();
    let root = SVGBackend::new(path, SIZE).into_drawing_area();
    draw(&root, chart)?;
    root.present().map_err(|e| e.to_string())
}

/// Writes `chart` as PNG to `path`.
pub fn write_png(chart: &Chart, path: &std::path::Path) -> Result<(), String> {
    register_font();
    let (w, h) = SIZE;
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        draw(&root, chart)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let file = std::fs::File::create(path).map_err(|e| e.to_string())?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), w, h);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| e.to_string())?;
    writer
        .write_image_data(&pixels)
        .map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| e.to_string())
}

/// plotters draws and measures text with the fonts registered here (its `ab_glyph` feature).
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _invalid_font_is_impossible = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

fn font(size: f64) -> TextStyle<'static> {
    TextStyle::from(("sans-serif", size).into_font())
}

/// The layout of an axis for the given positions.
fn axis_layout(axis: &Axis, values: &[f64]) -> Layout {
    match &axis.categories {
        Some(names) => Layout {
            scale: Scale::Linear,
            lo: -0.5,
            hi: names.len() as f64 - 0.5,
            ticks: (0..names.len()).map(|i| i as f64).collect(),
        },
        None => ticks::layout(values, ticks::scale_for(values)),
    }
}

/// A laid-out axis as plotters' coordinate: linear over the layout's range, bold ticks exactly
/// at the layout's ticks and no light ones.
struct Coord(Layout);

impl Ranged for Coord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let span = (self.0.hi - self.0.lo).max(f64::MIN_POSITIVE);
        let share = (value - self.0.lo) / span;
        limit.0 + (share * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.0.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.0.lo..self.0.hi
    }
}

fn title(axis: &Axis, layout: &Layout) -> String {
    match layout.scale {
        Scale::Log => format!("{} (log scale)", axis.title),
        Scale::Linear => axis.title.clone(),
    }
}

fn tick_label(axis: &Axis, layout: &Layout, at: f64) -> String {
    match &axis.categories {
        Some(names) => names
            .get(at.round().max(0.0) as usize)
            .cloned()
            .unwrap_or_default(),
        None => ticks::si(layout.value(at), 3),
    }
}

/// Draws `chart` onto `root`.
pub fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let xs: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let ys: Vec<f64> = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .collect();
    let x = axis_layout(&chart.x, &xs);
    let y = axis_layout(&chart.y, &ys);
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, font(24.0))
        .margin(16)
        .margin_right(36)
        .x_label_area_size(54)
        .y_label_area_size(88)
        .build_cartesian_2d(Coord(x.clone()), Coord(y.clone()))
        .map_err(|e| err(&e))?;
    let x_label = |at: &f64| tick_label(&chart.x, &x, *at);
    let y_label = |at: &f64| tick_label(&chart.y, &y, *at);
    ctx.configure_mesh()
        .x_desc(title(&chart.x, &x))
        .y_desc(title(&chart.y, &y))
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .label_style(font(15.0))
        .axis_desc_style(font(17.0))
        .bold_line_style(RGBColor(222, 222, 222))
        .axis_style(RGBColor(90, 90, 90))
        .draw()
        .map_err(|e| err(&e))?;
    let place = |p: &(f64, f64)| {
        let px = if chart.x.categories.is_some() {
            p.0
        } else {
            x.position(p.0)
        };
        (px, y.position(p.1))
    };
    let grey = RGBColor(150, 150, 150);
    if let Some(label) = &chart.diagonal {
        let from = x.value(x.lo).max(y.value(y.lo));
        let to = x.value(x.hi).min(y.value(y.hi));
        let ends = [place(&(from, from)), place(&(to, to))];
        ctx.draw_series(DashedLineSeries::new(ends, 6, 6, grey.stroke_width(1)))
            .map_err(|e| err(&e))?;
        let (ex, ey) = ctx.backend_coord(&ends[1]);
        let style = font(14.0).color(&grey);
        let (w, _) = root
            .estimate_text_size(label, &style)
            .map_err(|e| err(&e))?;
        root.draw(&Text::new(
            label.clone(),
            (ex - w as i32 - 6, ey + 6),
            style,
        ))
        .map_err(|e| err(&e))?;
    }
    for series in &chart.series {
        let points: Vec<(f64, f64)> = series.points.iter().map(place).collect();
        let stroke = series.look.colour.stroke_width(2);
        if series.look.dashed {
            ctx.draw_series(DashedLineSeries::new(points, 9, 5, stroke))
                .map_err(|e| err(&e))?;
        } else {
            ctx.draw_series(LineSeries::new(points, stroke))
                .map_err(|e| err(&e))?;
        }
    }
    let (xr, yr) = ctx.plotting_area().get_pixel_range();
    let area = Rect::new(xr.start, yr.start, xr.end, yr.end);
    let pixels: Vec<Vec<(i32, i32)>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .map(|p| ctx.backend_coord(&place(p)))
                .collect()
        })
        .collect();
    let mut placer = Placer::new(area);
    for points in &pixels {
        for p in points {
            placer.take(Rect::around(*p, 7));
        }
        for pair in points.windows(2) {
            placer.note_line(pair[0], pair[1]);
        }
    }
    legend(root, chart, &mut placer)?;
    for (series, points) in chart.series.iter().zip(&pixels) {
        for (p, measured) in points.iter().zip(&series.points) {
            marker(root, *p, series.look).map_err(|e| err(&e))?;
            let text = ticks::si(measured.1, 3);
            let style = font(14.0).color(&series.look.colour);
            let (w, h) = root
                .estimate_text_size(&text, &style)
                .map_err(|e| err(&e))?;
            let at = placer.place(*p, (w as i32, h as i32));
            root.draw(&Rectangle::new(
                [(at.x0 - 1, at.y0 - 1), (at.x1 + 1, at.y1 + 1)],
                WHITE.mix(0.85).filled(),
            ))
            .map_err(|e| err(&e))?;
            root.draw(&Text::new(text, (at.x0, at.y0), style))
                .map_err(|e| err(&e))?;
        }
    }
    Ok(())
}

/// Draws `look`'s marker centred on pixel `at`.
fn marker<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    look: Look,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let fill = look.colour.filled();
    match look.marker {
        Marker::Circle => root.draw(&Circle::new((x, y), 5, fill)),
        Marker::Square => root.draw(&Rectangle::new([(x - 5, y - 5), (x + 5, y + 5)], fill)),
        Marker::Triangle => root.draw(&Polygon::new(
            vec![(x, y - 7), (x + 7, y + 5), (x - 7, y + 5)],
            fill,
        )),
        Marker::Diamond => root.draw(&Polygon::new(
            vec![(x, y - 7), (x + 7, y), (x, y + 7), (x - 7, y)],
            fill,
        )),
        Marker::Cross => {
            let stroke = look.colour.stroke_width(3);
            root.draw(&PathElement::new(
                vec![(x - 5, y - 5), (x + 5, y + 5)],
                stroke,
            ))?;
            root.draw(&PathElement::new(
                vec![(x - 5, y + 5), (x + 5, y - 5)],
                stroke,
            ))
        }
        Marker::Ring => {
            root.draw(&Circle::new((x, y), 5, WHITE.filled()))?;
            root.draw(&Circle::new((x, y), 5, look.colour.stroke_width(2)))
        }
    }
}

/// Draws the legend in the plotting area's emptiest corner and marks it taken.
fn legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    placer: &mut Placer,
) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| e.to_string();
    const ROW: i32 = 24;
    const SWATCH: i32 = 34;
    let style = font(15.0);
    let mut widest = 0;
    for s in &chart.series {
        let (w, _) = root
            .estimate_text_size(&s.name, &style)
            .map_err(|e| err(&e))?;
        widest = widest.max(w as i32);
    }
    let size = (
        SWATCH + 16 + widest + 10,
        ROW * chart.series.len() as i32 + 10,
    );
    let boxed = placer.corner(size);
    root.draw(&Rectangle::new(
        [(boxed.x0, boxed.y0), (boxed.x1, boxed.y1)],
        WHITE.mix(0.92).filled(),
    ))
    .map_err(|e| err(&e))?;
    root.draw(&Rectangle::new(
        [(boxed.x0, boxed.y0), (boxed.x1, boxed.y1)],
        RGBColor(160, 160, 160).stroke_width(1),
    ))
    .map_err(|e| err(&e))?;
    for (i, s) in chart.series.iter().enumerate() {
        let cy = boxed.y0 + 5 + ROW * i as i32 + ROW / 2;
        let (x0, x1) = (boxed.x0 + 8, boxed.x0 + 8 + SWATCH);
        let stroke = s.look.colour.stroke_width(2);
        if s.look.dashed {
            root.draw(&DashedPathElement::new(
                vec![(x0, cy), (x1, cy)],
                9,
                5,
                stroke,
            ))
            .map_err(|e| err(&e))?;
        } else {
            root.draw(&PathElement::new(vec![(x0, cy), (x1, cy)], stroke))
                .map_err(|e| err(&e))?;
        }
        marker(root, ((x0 + x1) / 2, cy), s.look).map_err(|e| err(&e))?;
        root.draw(&Text::new(s.name.clone(), (x1 + 10, cy - 8), style.clone()))
            .map_err(|e| err(&e))?;
    }
    Ok(())
}
