// SPDX-License-Identifier: GPL-2.0-only
//! PNG plots of the bench reports, in the seed paper's spirit: one bar
//! per policy (and per experiment), the value printed on the bar, so a
//! figure reads without its table.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// Where Debian's fonts-dejavu-core puts the face the plots use.
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// A bar chart: `groups` along the x axis, one bar per series in each.
pub struct Bars {
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    /// (name, one value per group); NaN leaves a gap.
    pub series: Vec<(String, Vec<f64>)>,
    /// How a value is printed on its bar.
    pub fmt: fn(f64) -> String,
}

pub const COLOURS: [RGBColor; 7] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0xc4, 0x4e, 0x52),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0x93, 0x78, 0x60),
    RGBColor(0x8c, 0x8c, 0x8c),
];

/// The plots' font, registered once from the system's DejaVu Sans.
pub fn register_font() -> Result<()> {
    static DONE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if DONE.get().is_some() {
        return Ok(());
    }
    let bytes = std::fs::read(FONT)
        .with_context(|| format!("reading {FONT} (Debian package fonts-dejavu-core)"))?;
    // plotters keeps the face for the life of the process.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow!("{FONT} is not a font plotters can use"))?;
    let _ = DONE.set(true);
    Ok(())
}

/// The y range: always includes 0, with room above the bars for labels.
fn y_range(series: &[(String, Vec<f64>)]) -> (f64, f64) {
    let vals = series
        .iter()
        .flat_map(|s| s.1.iter())
        .filter(|v| v.is_finite());
    let (lo, hi) = vals.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(*v), b.max(*v)));
    let pad = ((hi - lo) * 0.15).max(1e-9);
    (if lo < 0.0 { lo - pad } else { 0.0 }, hi + pad)
}

/// Draw `bars` to a PNG at `path`.
pub fn draw(path: &Path, bars: &Bars) -> Result<()> {
    register_font()?;
    let draw_err = |e: DrawingAreaErrorKind<_>| anyhow!("drawing {}: {e}", path.display());
    let root = BitMapBackend::new(path, (1000, 520)).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    let (lo, hi) = y_range(&bars.series);
    let n = bars.groups.len().max(1);
    // Several series: their legend goes in a column right of the plot,
    // where no bar can hide it.
    let legend_width = if bars.series.len() > 1 { 150 } else { 0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(&bars.title, ("sans-serif", 22))
        .margin(16)
        .margin_right(16 + legend_width)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(0f64..n as f64, lo..hi)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(bars.y_label.as_str())
        .label_style(("sans-serif", 15))
        .draw()
        .map_err(draw_err)?;

    // Each group is one unit wide; its bars share the middle 80%.
    let width = 0.8 / bars.series.len().max(1) as f64;
    let value_style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
    for (si, (name, values)) in bars.series.iter().enumerate() {
        let colour = COLOURS[si % COLOURS.len()];
        let rects = values
            .iter()
            .enumerate()
            .filter(|(_, v)| v.is_finite())
            .map(|(gi, v)| {
                let x0 = gi as f64 + 0.1 + si as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.92, *v)], colour.filled())
            });
        chart.draw_series(rects).map_err(draw_err)?;
        if bars.series.len() > 1 {
            let (x, y) = (1000 - legend_width, 70 + 24 * si as i32);
            root.draw(&Rectangle::new([(x, y), (x + 14, y + 14)], colour.filled()))
                .map_err(draw_err)?;
            root.draw(&Text::new(name.as_str(), (x + 20, y), ("sans-serif", 15)))
                .map_err(draw_err)?;
        }
        for (gi, v) in values.iter().enumerate().filter(|(_, v)| v.is_finite()) {
            let x = gi as f64 + 0.1 + (si as f64 + 0.46) * width;
            let at = chart.backend_coord(&(x, v.max(0.0)));
            root.draw(&Text::new((bars.fmt)(*v), (at.0, at.1 - 2), &value_style))
                .map_err(draw_err)?;
        }
    }
    let group_style =
        TextStyle::from(("sans-serif", 16).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    for (gi, g) in bars.groups.iter().enumerate() {
        let at = chart.backend_coord(&(gi as f64 + 0.5, lo));
        root.draw(&Text::new(g.as_str(), (at.0, at.1 + 8), &group_style))
            .map_err(draw_err)?;
    }
    root.present().map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn y_range_holds_zero_and_leaves_room_for_labels() {
        let s = |v: Vec<f64>| vec![("a".to_string(), v)];
        assert_eq!(y_range(&s(vec![10.0, 20.0])), (0.0, 23.0));
        let (lo, hi) = y_range(&s(vec![-10.0, 10.0, f64::NAN]));
        assert!(lo < -10.0 && hi > 10.0);
    }

    #[test]
    fn draws_a_grouped_chart_to_png() {
        let dir = tempdir();
        let path = dir.join("t.png");
        draw(
            &path,
            &Bars {
                title: "throughput gain".into(),
                y_label: "%".into(),
                groups: vec!["cpu-bound".into(), "io-bound".into()],
                series: vec![
                    ("nice 19".into(), vec![1.0, 30.0]),
                    ("scx_linger".into(), vec![0.5, f64::NAN]),
                ],
                fmt: |v| format!("{v:+.1}%"),
            },
        )
        .unwrap();
        let png = std::fs::read(&path).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        let _ = std::fs::remove_dir_all(dir);
    }

    fn tempdir() -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("bench-plot-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
