//! The plots of a bench run, each written as SVG and as PNG side by side: initial sync time and
//! cache bytes per Pod against Pods, delivered against offered watch events per second, and the
//! stale-key wake latency distribution, Tidemark beside the peer ([`super::chart`] draws them).

use crate::bench::chart::{self, Axis, Chart, Look, Marker, Series};
use crate::bench::schema::{BenchReport, ChurnStep, Compared, SyncRun};
use plotters::style::RGBColor;
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

/// Tidemark's looks, one per series (solid lines): blue, bluish green, purple.
const TIDEMARK: [Look; 3] = [
    Look {
        colour: RGBColor(0, 114, 178),
        marker: Marker::Circle,
        dashed: false,
    },
    Look {
        colour: RGBColor(0, 150, 110),
        marker: Marker::Triangle,
        dashed: false,
    },
    Look {
        colour: RGBColor(150, 60, 150),
        marker: Marker::Diamond,
        dashed: false,
    },
];

/// The peer's looks (dashed lines): vermillion, dark orange, grey.
const PEER: [Look; 3] = [
    Look {
        colour: RGBColor(213, 94, 0),
        marker: Marker::Square,
        dashed: true,
    },
    Look {
        colour: RGBColor(190, 130, 0),
        marker: Marker::Cross,
        dashed: true,
    },
    Look {
        colour: RGBColor(90, 90, 90),
        marker: Marker::Ring,
        dashed: true,
    },
];

fn sync_chart(
    report: &BenchReport,
    title: &str,
    y_title: &str,
    figure: fn(&SyncRun) -> &Compared,
) -> Chart {
    let tidemark = report
        .sync
        .iter()
        .map(|s| (s.pods as f64, figure(s).tidemark))
        .collect();
    let peer: Vec<(f64, f64)> = report
        .sync
        .iter()
        .filter_map(|s| figure(s).peer.map(|p| (s.pods as f64, p)))
        .collect();
    let mut series = vec![Series {
        name: "Tidemark".into(),
        look: TIDEMARK[0],
        points: tidemark,
    }];
    if !peer.is_empty() {
        series.push(Series {
            name: "kube-rs reflector".into(),
            look: PEER[0],
            points: peer,
        });
    }
    Chart {
        title: title.into(),
        x: Axis {
            title: "Pods in the cache".into(),
            categories: None,
        },
        y: Axis {
            title: y_title.into(),
            categories: None,
        },
        series,
        diagonal: None,
    }
}

fn churn_chart(report: &BenchReport) -> Chart {
    let points = |steps: &[ChurnStep]| -> Vec<(f64, f64)> {
        steps
            .iter()
            .map(|s| (s.offered_per_second, s.events_per_second))
            .collect()
    };
    let mut tidemark = TIDEMARK.iter().cycle();
    let mut peer = PEER.iter().cycle();
    let mut series = Vec::new();
    for c in &report.churn {
        if let Some(look) = tidemark.next() {
            series.push(Series {
                name: format!(
                    "Tidemark, {} Pods",
                    crate::bench::ticks::si(c.pods as f64, 3)
                ),
                look: *look,
                points: points(&c.tidemark_steps),
            });
        }
    }
    for c in report.churn.iter().filter(|c| !c.peer_steps.is_empty()) {
        if let Some(look) = peer.next() {
            series.push(Series {
                name: format!(
                    "kube-rs, {} Pods",
                    crate::bench::ticks::si(c.pods as f64, 3)
                ),
                look: *look,
                points: points(&c.peer_steps),
            });
        }
    }
    Chart {
        title: "Watch events delivered to the cache against the offered rate".into(),
        x: Axis {
            title: "offered watch events per second".into(),
            categories: None,
        },
        y: Axis {
            title: "delivered events per second".into(),
            categories: None,
        },
        series,
        diagonal: Some("delivered = offered".into()),
    }
}

fn wake_chart(tidemark: &[(f64, f64)], backoff: &[(f64, f64)]) -> Chart {
    let percentiles: Vec<f64> = tidemark.iter().map(|(p, _)| *p).collect();
    let indexed = |d: &[(f64, f64)]| -> Vec<(f64, f64)> {
        d.iter()
            .filter_map(|(p, v)| {
                percentiles
                    .iter()
                    .position(|q| q == p)
                    .map(|i| (i as f64, *v))
            })
            .collect()
    };
    Chart {
        title: "Stale-key wake latency distribution".into(),
        x: Axis {
            title: "percentile".into(),
            categories: Some(percentiles.iter().map(|p| format!("p{p}")).collect()),
        },
        y: Axis {
            title: "wake latency, µs".into(),
            categories: None,
        },
        series: vec![
            Series {
                name: "Tidemark: park, wake on the watermark".into(),
                look: TIDEMARK[0],
                points: indexed(tidemark),
            },
            Series {
                name: "requeue with backoff from 5 ms".into(),
                look: PEER[0],
                points: indexed(backoff),
            },
        ],
        diagonal: None,
    }
}

/// A series added to a chart: its name, its look and its points.
type ExtraSeries<'a> = (&'a str, Look, Vec<(f64, f64)>);

/// The charts of `report`, each with its file stem.
pub fn charts(report: &BenchReport) -> Vec<(&'static str, Chart)> {
    let mut charts = vec![
        (
            "sync_seconds",
            sync_chart(
                report,
                "Initial sync time against Pods",
                "initial sync, seconds",
                |s| &s.sync_seconds,
            ),
        ),
        (
            "bytes_per_object",
            sync_chart(
                report,
                "Cache bytes per Pod (RSS delta and jemalloc allocated) against Pods",
                "bytes per cached Pod",
                |s| &s.bytes_per_object,
            ),
        ),
        ("churn_events_per_second", churn_chart(report)),
    ];
    let wire = |f: fn(&crate::bench::schema::WireRun) -> f64| -> Vec<(f64, f64)> {
        report
            .wire
            .iter()
            .map(|w| (w.pods as f64, f(w)))
            .filter(|(_, y)| *y > 0.0)
            .collect()
    };
    let extra_sync = [
        (
            "Tidemark, Pods over protobuf",
            TIDEMARK[1],
            wire(|w| w.protobuf.sync_seconds.tidemark),
        ),
        (
            "null client, JSON",
            PEER[1],
            wire(|w| w.json.sync_seconds.null_client),
        ),
        (
            "null client, Pods over protobuf",
            PEER[2],
            wire(|w| w.protobuf.sync_seconds.null_client),
        ),
    ];
    let allocated = |f: fn(&SyncRun) -> Option<f64>| -> Vec<(f64, f64)> {
        report
            .sync
            .iter()
            .filter_map(|s| f(s).map(|y| (s.pods as f64, y)))
            .collect()
    };
    let extra_bytes = [
        (
            "Tidemark, jemalloc allocated",
            TIDEMARK[1],
            allocated(|s| Some(s.jemalloc_bytes_per_object.tidemark)),
        ),
        (
            "kube-rs reflector, jemalloc allocated",
            PEER[1],
            allocated(|s| s.jemalloc_bytes_per_object.peer),
        ),
    ];
    for (name, chart) in charts.iter_mut() {
        let extra: &[ExtraSeries<'_>] = match *name {
            "sync_seconds" => &extra_sync,
            "bytes_per_object" => &extra_bytes,
            _ => &[],
        };
        for (series, look, points) in extra {
            if !points.is_empty() {
                chart.series.push(Series {
                    name: (*series).into(),
                    look: *look,
                    points: points.clone(),
                });
            }
        }
    }
    if let Some(w) = &report.wake {
        charts.push((
            "wake_latency",
            wake_chart(&w.tidemark_distribution, &w.backoff_distribution),
        ));
    }
    charts
}

/// Writes every plot of `report` into `dir` as `NAME.svg` and `NAME.png`; returns the files.
pub fn write_all(report: &BenchReport, dir: &Path) -> Result<Vec<PathBuf>, PlotError> {
    std::fs::create_dir_all(dir).map_err(|e| PlotError {
        path: dir.display().to_string(),
        message: e.to_string(),
    })?;
    let mut written = Vec::new();
    for (stem, chart) in charts(report) {
        let svg = dir.join(format!("{stem}.svg"));
        chart::write_svg(&chart, &svg).map_err(|message| PlotError {
            path: svg.display().to_string(),
            message,
        })?;
        written.push(svg);
        let png = dir.join(format!("{stem}.png"));
        chart::write_png(&chart, &png).map_err(|message| PlotError {
            path: png.display().to_string(),
            message,
        })?;
        written.push(png);
    }
    Ok(written)
}

/// The markdown that shows the plots of `report` beside its tables: each PNG, linking to its
/// SVG, with the files named under `link_dir` (relative to the markdown file, or as given).
pub fn markdown(report: &BenchReport, link_dir: &Path) -> String {
    let mut out = String::from("### Plots\n\n");
    for (stem, chart) in charts(report) {
        let png = link_dir.join(format!("{stem}.png"));
        let svg = link_dir.join(format!("{stem}.svg"));
        out.push_str(&format!(
            "[![{}]({})]({})\n\n",
            chart.title,
            png.display(),
            svg.display()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::schema::{Better, ChurnRun, WakeRun};

    fn report() -> BenchReport {
        let step = |offered: f64, delivered: f64| ChurnStep {
            offered_per_second: offered,
            events_per_second: delivered,
            ..ChurnStep::default()
        };
        BenchReport {
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
            churn: vec![
                ChurnRun {
                    pods: 1000,
                    tidemark_steps: vec![step(10_000.0, 9990.0), step(25_000.0, 21_000.0)],
                    peer_steps: vec![step(10_000.0, 9000.0), step(25_000.0, 9100.0)],
                    ..ChurnRun::default()
                },
                ChurnRun {
                    pods: 10_000,
                    tidemark_steps: vec![step(10_000.0, 9980.0), step(25_000.0, 20_000.0)],
                    peer_steps: vec![step(10_000.0, 9500.0), step(25_000.0, 11_000.0)],
                    ..ChurnRun::default()
                },
            ],
            wake: Some(WakeRun {
                tidemark_distribution: vec![(50.0, 2.0), (99.0, 8.0)],
                backoff_distribution: vec![(50.0, 2000.0), (99.0, 9000.0)],
                ..WakeRun::default()
            }),
            ..BenchReport::default()
        }
    }

    #[test]
    fn every_plot_is_written_as_svg_and_png() {
        let dir = std::env::temp_dir().join(format!("tidemark-plots-{}", std::process::id()));
        let files = write_all(&report(), &dir).expect("plots");
        assert_eq!(files.len(), 8);
        let svg = std::fs::read_to_string(&files[0]).expect("read");
        assert!(svg.contains("<svg") && svg.contains("<text"), "{svg}");
        let png = std::fs::read(&files[1]).expect("read");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG signature");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_markdown_shows_each_png_linked_to_its_svg() {
        let text = markdown(&report(), Path::new(""));
        assert!(
            text.contains(
                "[![Initial sync time against Pods](sync_seconds.png)](sync_seconds.svg)"
            )
        );
        assert_eq!(text.matches("![").count(), 4);
    }

    #[test]
    fn every_series_of_a_chart_has_its_own_colour_and_marker() {
        for (stem, chart) in charts(&report()) {
            let looks: Vec<Look> = chart.series.iter().map(|s| s.look).collect();
            for (i, a) in looks.iter().enumerate() {
                for b in &looks[i + 1..] {
                    assert_ne!(a.colour, b.colour, "{stem}");
                    assert_ne!(a.marker, b.marker, "{stem}");
                }
            }
        }
    }

    #[test]
    fn ticks_and_labels_are_integers_or_si_suffixed() {
        let dir = std::env::temp_dir().join(format!("tidemark-plot-text-{}", std::process::id()));
        let files = write_all(&report(), &dir).expect("plots");
        for svg in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "svg"))
        {
            let text = std::fs::read_to_string(svg).expect("read");
            assert!(!text.contains(".0\n"), "no x.0 tick: {}", svg.display());
        }
        // plotters writes each text element's content on a line of its own.
        let shown = |svg: &str, text: &str| svg.contains(&format!(">\n{text}\n</text>"));
        let bytes = std::fs::read_to_string(dir.join("bytes_per_object.svg")).expect("read");
        assert!(
            shown(&bytes, "10k") && shown(&bytes, "2k"),
            "Pods and bytes ticks"
        );
        assert!(
            bytes.contains("bytes per cached Pod (log scale)"),
            "900 to 50k bytes span decades"
        );
        assert!(
            shown(&bytes, "900") && shown(&bytes, "50k"),
            "values labelled"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
