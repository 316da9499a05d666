//! SVG plots of a bench run (plotters' SVG backend: text is emitted as SVG elements, no system
//! fonts needed): sync time and bytes per object against N, delivered against offered events
//! per second, and wake latency distributions, Tidemark beside the peer.

use crate::bench::schema::BenchReport;
use plotters::coord::combinators::IntoLogRange;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// A plot could not be drawn or written.
#[derive(Debug, thiserror::Error)]
#[error("plot {path}: {message}")]
pub struct PlotError {
    /// The file.
    pub path: String,
    /// What went wrong.
    pub message: String,
}

type Series = (String, RGBColor, Vec<(f64, f64)>);

const TIDEMARK: RGBColor = RGBColor(0, 90, 180);
const PEER: RGBColor = RGBColor(210, 80, 30);
const EXTRA: [RGBColor; 3] = [
    RGBColor(60, 160, 60),
    RGBColor(140, 60, 160),
    RGBColor(120, 120, 120),
];

struct Chart<'a> {
    path: &'a Path,
    title: &'a str,
    x_desc: &'a str,
    y_desc: &'a str,
    log_x: bool,
    log_y: bool,
}

fn bounds(series: &[Series], log: bool, pick: fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, _, p)| p.iter().map(pick))
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !lo.is_finite() || !hi.is_finite() {
        return (1.0, 10.0);
    }
    if log {
        (lo / 1.5, hi * 1.5)
    } else {
        (0.0_f64.min(lo), if hi > 0.0 { hi * 1.1 } else { 1.0 })
    }
}

fn draw(chart: &Chart<'_>, series: &[Series]) -> Result<(), PlotError> {
    let err = |e: &dyn std::fmt::Display| PlotError {
        path: chart.path.display().to_string(),
        message: e.to_string(),
    };
    let root = SVGBackend::new(chart.path, (760, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let (x0, x1) = bounds(series, chart.log_x, |p| p.0);
    let (y0, y1) = bounds(series, chart.log_y, |p| p.1);
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70);
    macro_rules! finish {
        ($ctx:expr) => {{
            let mut ctx = $ctx.map_err(|e| err(&e))?;
            ctx.configure_mesh()
                .x_desc(chart.x_desc)
                .y_desc(chart.y_desc)
                .draw()
                .map_err(|e| err(&e))?;
            for (name, color, points) in series {
                let color = *color;
                ctx.draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
                ctx.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))
                    .map_err(|e| err(&e))?;
            }
            ctx.configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw()
                .map_err(|e| err(&e))?;
        }};
    }
    match (chart.log_x, chart.log_y) {
        (true, true) => {
            finish!(builder.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale()))
        }
        (true, false) => finish!(builder.build_cartesian_2d((x0..x1).log_scale(), y0..y1)),
        (false, true) => finish!(builder.build_cartesian_2d(x0..x1, (y0..y1).log_scale())),
        (false, false) => finish!(builder.build_cartesian_2d(x0..x1, y0..y1)),
    }
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// Writes every plot of `report` into `dir`; returns the files written.
pub fn write_all(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let mut written = Vec::new();
    let sides = |f: fn(&crate::bench::schema::SyncRun) -> &crate::bench::schema::Compared| {
        let tidemark: Vec<(f64, f64)> = report
            .sync
            .iter()
            .map(|s| (s.pods as f64, f(s).tidemark))
            .collect();
        let peer: Vec<(f64, f64)> = report
            .sync
            .iter()
            .filter_map(|s| f(s).peer.map(|p| (s.pods as f64, p)))
            .collect();
        vec![
            ("Tidemark".to_string(), TIDEMARK, tidemark),
            ("kube-rs reflector".to_string(), PEER, peer),
        ]
    };
    let path = dir.join("sync_seconds.svg");
    draw(
        &Chart {
            path: &path,
            title: "Initial sync time against Pods",
            x_desc: "Pods",
            y_desc: "seconds",
            log_x: true,
            log_y: true,
        },
        &sides(|s| &s.sync_seconds),
    )?;
    written.push(path);
    let path = dir.join("bytes_per_object.svg");
    draw(
        &Chart {
            path: &path,
            title: "Cache bytes per Pod (RSS delta) against Pods",
            x_desc: "Pods",
            y_desc: "bytes per Pod",
            log_x: true,
            log_y: true,
        },
        &sides(|s| &s.bytes_per_object),
    )?;
    written.push(path);
    let mut churn: Vec<Series> = Vec::new();
    let mut extra = EXTRA.iter().cycle();
    for c in &report.churn {
        let points = |steps: &[crate::bench::schema::ChurnStep]| -> Vec<(f64, f64)> {
            steps
                .iter()
                .map(|s| (s.offered_per_second, s.events_per_second))
                .collect()
        };
        let color = if churn.is_empty() {
            TIDEMARK
        } else {
            *extra.next().unwrap_or(&TIDEMARK)
        };
        churn.push((
            format!("Tidemark, {} Pods", c.pods),
            color,
            points(&c.tidemark_steps),
        ));
        if !c.peer_steps.is_empty() {
            churn.push((
                format!("kube-rs, {} Pods", c.pods),
                PEER,
                points(&c.peer_steps),
            ));
        }
    }
    let path = dir.join("churn_events_per_second.svg");
    draw(
        &Chart {
            path: &path,
            title: "Watch events delivered to the cache against offered rate",
            x_desc: "offered events/s",
            y_desc: "delivered events/s",
            log_x: false,
            log_y: false,
        },
        &churn,
    )?;
    written.push(path);
    if let Some(w) = &report.wake {
        let path = dir.join("wake_latency.svg");
        draw(
            &Chart {
                path: &path,
                title: "Stale-key wake latency distribution",
                x_desc: "percentile",
                y_desc: "microseconds",
                log_x: false,
                log_y: true,
            },
            &[
                (
                    "Tidemark park and wake".into(),
                    TIDEMARK,
                    w.tidemark_distribution.clone(),
                ),
                (
                    "requeue with backoff from 5 ms".into(),
                    PEER,
                    w.backoff_distribution.clone(),
                ),
            ],
        )?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::schema::{Better, Compared, SyncRun, WakeRun};

    #[test]
    fn plots_are_written_as_svg_with_text_elements() {
        let report = BenchReport {
            sync: vec![
                SyncRun {
                    pods: 1000,
                    sync_seconds: Compared::new(0.1, Some(0.5), Better::Lower),
                    bytes_per_object: Compared::new(900.0, Some(50_000.0), Better::Lower),
                    ..SyncRun::default()
                },
                SyncRun {
                    pods: 10_000,
                    sync_seconds: Compared::new(1.0, None, Better::Lower),
                    bytes_per_object: Compared::new(850.0, None, Better::Lower),
                    ..SyncRun::default()
                },
            ],
            wake: Some(WakeRun {
                tidemark_distribution: vec![(50.0, 2.0), (99.0, 8.0)],
                backoff_distribution: vec![(50.0, 2000.0), (99.0, 9000.0)],
                ..WakeRun::default()
            }),
            ..BenchReport::default()
        };
        let dir = std::env::temp_dir().join(format!("tidemark-plots-{}", std::process::id()));
        let files = write_all(&report, &dir).expect("plots");
        assert_eq!(files.len(), 4);
        let svg = std::fs::read_to_string(&files[0]).expect("read");
        assert!(svg.contains("<svg") && svg.contains("<text"), "{svg}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
