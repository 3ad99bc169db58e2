//! SVG charts (plotters, SVG backend only): panels of series against categories such as the
//! concurrency levels, and an RSS time line.

use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use crate::report::Report;

pub struct Series {
    pub name: String,
    /// One value per category; `None` leaves a gap.
    pub values: Vec<Option<f64>>,
}

pub struct Panel {
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
}

/// Distinct, print-friendly colours (Tableau 10); Palette99's yellow is hard to see on white.
const COLORS: [(u8, u8, u8); 8] = [
    (31, 119, 180),
    (214, 39, 40),
    (44, 160, 44),
    (255, 127, 14),
    (148, 103, 189),
    (140, 86, 75),
    (23, 190, 207),
    (127, 127, 127),
];

fn color(i: usize) -> RGBColor {
    let (r, g, b) = COLORS[i % COLORS.len()];
    RGBColor(r, g, b)
}

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("drawing chart: {e:?}")
}

/// Panels side by side; x is categorical (`categories`, e.g. the concurrency levels).
pub fn draw_panels(
    path: &Path,
    title: &str,
    x_label: &str,
    categories: &[String],
    panels: &[Panel],
) -> Result<()> {
    let n = categories.len().max(1);
    let width = 520 * panels.len().max(1) as u32;
    let root = SVGBackend::new(path, (width, 460)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(err)?;
    let areas = root.split_evenly((1, panels.len().max(1)));
    for (area, panel) in areas.iter().zip(panels) {
        let ymax = panel
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten())
            .fold(0.0f64, |m, &v| m.max(v));
        let ymax = if ymax > 0.0 { ymax * 1.15 } else { 1.0 };
        // Categorical x: one segment per category, points at segment centres.
        let xr = (0i32..(n as i32 - 1)).into_segmented();
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(64)
            .build_cartesian_2d(xr, 0f64..ymax)
            .map_err(err)?;
        let cats = categories.to_vec();
        let fmt = move |x: &SegmentValue<i32>| -> String {
            match x {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => usize::try_from(*i)
                    .ok()
                    .and_then(|i| cats.get(i))
                    .cloned()
                    .unwrap_or_default(),
                SegmentValue::Last => String::new(),
            }
        };
        chart
            .configure_mesh()
            .x_labels(n)
            .x_label_formatter(&fmt)
            .disable_x_mesh()
            .x_desc(x_label)
            .y_desc(&panel.y_label)
            .draw()
            .map_err(err)?;
        for (i, s) in panel.series.iter().enumerate() {
            let color = color(i);
            let pts: Vec<(SegmentValue<i32>, f64)> = s
                .values
                .iter()
                .enumerate()
                .filter_map(|(x, v)| v.map(|v| (SegmentValue::CenterOf(x as i32), v)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    pts.iter()
                        .map(|p| Circle::new(p.clone(), 3, color.filled())),
                )
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .draw()
            .map_err(err)?;
    }
    root.present().map_err(err)?;
    Ok(())
}

/// `chart.svg` of one report: throughput, p50/p99 latency and RSS (peak, mean) against the
/// closed-loop concurrency (or the open-loop rate when there are no levels).
pub fn draw_report(report: &Report, path: &Path) -> Result<bool> {
    let (cats, x_label, tput, p50, p99, peak, mean): (
        Vec<String>,
        &str,
        Vec<_>,
        Vec<_>,
        Vec<_>,
        Vec<_>,
        Vec<_>,
    ) = if !report.levels.is_empty() {
        let l = &report.levels;
        (
            l.iter().map(|l| l.concurrency.to_string()).collect(),
            "concurrency (requests in flight)",
            l.iter().map(|l| Some(l.throughput_rps)).collect(),
            l.iter().map(|l| l.latency_ms.map(|s| s.p50)).collect(),
            l.iter().map(|l| l.latency_ms.map(|s| s.p99)).collect(),
            l.iter().map(|l| l.rss_peak_mb).collect(),
            l.iter().map(|l| l.rss_mean_mb).collect(),
        )
    } else if !report.open_loop.is_empty() {
        let o = &report.open_loop;
        (
            o.iter().map(|o| o.rate_rps.to_string()).collect(),
            "offered rate (req/s, Poisson)",
            o.iter().map(|o| Some(o.throughput_rps)).collect(),
            o.iter().map(|o| o.latency_ms.map(|s| s.p50)).collect(),
            o.iter().map(|o| o.latency_ms.map(|s| s.p99)).collect(),
            o.iter().map(|o| o.rss_peak_mb).collect(),
            o.iter().map(|o| o.rss_mean_mb).collect(),
        )
    } else {
        return Ok(false);
    };
    let s = |name: &str, values| Series {
        name: name.into(),
        values,
    };
    let panels = vec![
        Panel {
            title: "Throughput".into(),
            y_label: "req/s".into(),
            series: vec![s("throughput", tput)],
        },
        Panel {
            title: "Latency".into(),
            y_label: "ms".into(),
            series: vec![s("p50", p50), s("p99", p99)],
        },
        Panel {
            title: "Server RSS".into(),
            y_label: "MB".into(),
            series: vec![s("peak", peak), s("mean", mean)],
        },
    ];
    let title = format!(
        "{}{} on {}",
        report
            .label
            .as_deref()
            .map(|l| format!("{l}: "))
            .unwrap_or_default(),
        report.settings.endpoint,
        report.machine.cpu_model
    );
    draw_panels(path, &title, x_label, &cats, &panels)?;
    Ok(true)
}

/// RSS against time, with the phases shaded by alternating bands.
pub fn draw_rss_timeline(
    path: &Path,
    title: &str,
    points: &[(f64, f64)],
    phases: &[(String, f64, f64)],
) -> Result<bool> {
    if points.is_empty() {
        return Ok(false);
    }
    let tmax = points.iter().map(|p| p.0).fold(0.0, f64::max).max(1.0);
    let ymax = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.15;
    let root = SVGBackend::new(path, (1200, 420)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..tmax, 0f64..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("time since start (s)")
        .y_desc("RSS (MB)")
        .draw()
        .map_err(err)?;
    for (i, (_, a, b)) in phases.iter().enumerate() {
        let shade = if i % 2 == 0 {
            BLUE.mix(0.06)
        } else {
            GREEN.mix(0.06)
        };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(*a, 0.0), (*b, ymax)],
                shade.filled(),
            )))
            .map_err(err)?;
    }
    for (label, a, _) in phases {
        chart
            .draw_series(std::iter::once(Text::new(
                label.clone(),
                (*a, ymax * 0.97),
                ("sans-serif", 11),
            )))
            .map_err(err)?;
    }
    chart
        .draw_series(LineSeries::new(points.iter().copied(), RED.stroke_width(1)))
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_panels_svg() {
        let dir = std::env::temp_dir().join(format!("loadgen-chart-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.svg");
        let cats: Vec<String> = ["1", "2", "4", "8", "16"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let panels = vec![Panel {
            title: "Throughput".into(),
            y_label: "req/s".into(),
            series: vec![
                Series {
                    name: "unlimited".into(),
                    values: vec![Some(1.0), Some(1.6), Some(1.7), None, Some(1.2)],
                },
                Series {
                    name: "capped".into(),
                    values: vec![Some(1.0), Some(1.7), Some(1.8), Some(1.8), Some(1.8)],
                },
            ],
        }];
        draw_panels(&path, "test", "concurrency", &cats, &panels).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        if std::env::var_os("KEEP_SVG").is_some() {
            std::fs::copy(&path, "/tmp/loadgen-test-chart.svg").unwrap();
        }
        assert!(svg.starts_with("<svg"));
        // Text elements hold their content on its own line.
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                t.split_once('>')
                    .and_then(|(_, rest)| rest.split_once("</text>"))
            })
            .map(|(body, _)| body.trim())
            .collect();
        for label in [
            "unlimited",
            "capped",
            "Throughput",
            "req/s",
            "concurrency",
            "1",
            "2",
            "4",
            "8",
            "16",
        ] {
            assert!(texts.contains(&label), "missing {label} in {texts:?}");
        }
        let tl = dir.join("t.svg");
        let pts: Vec<(f64, f64)> = (0..50)
            .map(|i| (i as f64 * 0.1, 100.0 + i as f64))
            .collect();
        assert!(draw_rss_timeline(&tl, "rss", &pts, &[("c=1".into(), 0.0, 2.0)]).unwrap());
        assert!(!draw_rss_timeline(&tl, "rss", &[], &[]).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
