// SPDX-License-Identifier: GPL-2.0-only
//! A timeline plot: panels stacked over one time axis, each with a few
//! series from a CSV whose first column is the time in seconds (the
//! soak's `soak-timeline.csv`).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{anyhow, Result};
use plotters::prelude::*;

use super::plot::{register_font, COLOURS};

/// Columns by name: (t, value) points, NaN values left out.
pub type Columns = BTreeMap<String, Vec<(f64, f64)>>;

/// Parse a CSV with a header line; the first column is the x axis.
pub fn parse_csv(text: &str) -> Columns {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Columns::new();
    };
    let names: Vec<&str> = header.split(',').collect();
    let mut out = Columns::new();
    for line in lines {
        let v: Vec<f64> = line
            .split(',')
            .map(|x| x.trim().parse().unwrap_or(f64::NAN))
            .collect();
        let Some(&t) = v.first() else { continue };
        for (name, y) in names.iter().zip(&v).skip(1) {
            if y.is_finite() {
                out.entry(name.to_string()).or_default().push((t, *y));
            }
        }
    }
    out
}

/// One panel: its y label and its series.
pub struct Panel {
    pub y_label: String,
    pub series: Vec<(String, Vec<(f64, f64)>)>,
}

impl Panel {
    pub fn new(y_label: &str, cols: &Columns, names: &[&str]) -> Panel {
        Panel {
            y_label: y_label.into(),
            series: names
                .iter()
                .map(|n| (n.to_string(), cols.get(*n).cloned().unwrap_or_default()))
                .collect(),
        }
    }
}

/// Draw `panels` one above the other to a PNG at `path`.
pub fn draw(path: &Path, title: &str, panels: &[Panel]) -> Result<()> {
    register_font()?;
    let draw_err = |e: DrawingAreaErrorKind<_>| anyhow!("drawing {}: {e}", path.display());
    let root = BitMapBackend::new(path, (1000, 220 * panels.len() as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(draw_err)?;
    let t_max = panels
        .iter()
        .flat_map(|p| p.series.iter().flat_map(|s| s.1.iter().map(|x| x.0)))
        .fold(1.0f64, f64::max);
    for (area, panel) in root.split_evenly((panels.len(), 1)).iter().zip(panels) {
        let y_max = panel
            .series
            .iter()
            .flat_map(|s| s.1.iter().map(|x| x.1))
            .fold(0.0f64, f64::max)
            * 1.15
            + 1e-9;
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .x_label_area_size(30)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..t_max, 0f64..y_max)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("s")
            .y_desc(panel.y_label.as_str())
            .label_style(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
        for (i, (name, points)) in panel.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))
                .map_err(draw_err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 16, y)], colour.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .label_font(("sans-serif", 13))
            .draw()
            .map_err(draw_err)?;
    }
    root.present().map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_columns_and_draws_them() {
        let cols = parse_csv("t_s,a,b\n0,1,NaN\n5,2,3\n");
        assert_eq!(cols["a"], [(0.0, 1.0), (5.0, 2.0)]);
        assert_eq!(cols["b"], [(5.0, 3.0)]);
        let dir = std::env::temp_dir().join(format!("bench-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        draw(&path, "t", &[Panel::new("y", &cols, &["a", "b"])]).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[1..4], b"PNG");
        let _ = std::fs::remove_dir_all(dir);
    }
}
