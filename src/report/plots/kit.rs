//! What every figure shares: rendering to SVG and PNG, the time axis, the legend column and
//! the fault shading.

use super::{FAULT_SHADE, FaultSpan, PlotError};
use crate::report::atomic;
use crate::report::format::number_text;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::Path;

/// Width of the legend column at the right of every time plot, in pixels.
pub(super) const LEGEND_WIDTH_PX: u32 = 260;
/// The size of a single-panel figure, in pixels.
pub(super) const FIGURE_SIZE_PX: (u32, u32) = (1200, 620);
pub(super) const FONT: &str = "sans-serif";
/// The minor grid lines: visible, but fainter than any data.
pub(super) const LIGHT_GRID: RGBColor = RGBColor(0xF0, 0xF0, 0xF0);
/// At most this many faults get a text label; the legend counts the rest.
const FAULT_LABELS_MAX: usize = 16;

pub(super) type TimeChart<'a, DB> =
    ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A figure that can draw itself on any backend.
pub(super) trait Figure {
    /// What the reader is looking at (the caption's first part).
    fn title(&self) -> String;
    /// Size in pixels.
    fn size_px(&self) -> (u32, u32) {
        FIGURE_SIZE_PX
    }
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Result<(), PlotError>;
}

/// A plotting error as text.
pub(super) fn drawing<T, E: std::fmt::Display>(result: Result<T, E>) -> Result<T, PlotError> {
    result.map_err(|error| PlotError::Draw {
        file: String::new(),
        message: error.to_string(),
    })
}

fn named(error: PlotError, file: &Path) -> PlotError {
    match error {
        PlotError::Draw { message, .. } => PlotError::Draw {
            file: file.display().to_string(),
            message,
        },
        other => other,
    }
}

/// Draw `figure` into `<dir>/<stem>.svg` and `<dir>/<stem>.png`, each written atomically.
pub(super) fn render<F: Figure>(dir: &Path, stem: &str, figure: &F) -> Result<(), PlotError> {
    let size = figure.size_px();
    let svg_path = dir.join(format!("{stem}.svg"));
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_on(&root, figure).map_err(|error| named(error, &svg_path))?;
    }
    atomic::write_file(&svg_path, svg.as_bytes()).map_err(|source| PlotError::Write {
        path: svg_path.display().to_string(),
        source,
    })?;
    // The bitmap encoder picks the format from the extension, so the temporary file of this
    // atomic write ends in `.png` too.
    let png_path = dir.join(format!("{stem}.png"));
    let temporary = dir.join(format!(".{stem}.partial.png"));
    let drawn = {
        let root = BitMapBackend::new(&temporary, size).into_drawing_area();
        draw_on(&root, figure)
    };
    let renamed = drawn
        .map_err(|error| named(error, &png_path))
        .and_then(|()| {
            std::fs::rename(&temporary, &png_path).map_err(|source| PlotError::Write {
                path: png_path.display().to_string(),
                source,
            })
        });
    if renamed.is_err() {
        // The partial image is garbage; the error that made it so is the one to report.
        let _ = std::fs::remove_file(&temporary);
    }
    renamed
}

fn draw_on<DB: DrawingBackend, F: Figure>(
    root: &DrawingArea<DB, Shift>,
    figure: &F,
) -> Result<(), PlotError> {
    drawing(root.fill(&WHITE))?;
    figure.draw(root)?;
    drawing(root.present())
}

/// The unit of a time axis, chosen so tick labels stay short.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct TimeUnit {
    pub seconds_per_unit: f64,
    pub name: &'static str,
}

impl TimeUnit {
    /// Seconds up to 10 minutes, minutes up to 3 hours, hours beyond.
    pub(super) fn for_span(span_s: f64) -> TimeUnit {
        if span_s <= 600.0 {
            TimeUnit {
                seconds_per_unit: 1.0,
                name: "s",
            }
        } else if span_s <= 3.0 * 3600.0 {
            TimeUnit {
                seconds_per_unit: 60.0,
                name: "min",
            }
        } else {
            TimeUnit {
                seconds_per_unit: 3600.0,
                name: "h",
            }
        }
    }

    pub(super) fn of(&self, seconds: f64) -> f64 {
        seconds / self.seconds_per_unit
    }
}

/// How a legend entry is drawn.
#[derive(Clone, Copy, Debug)]
pub(super) enum Swatch {
    Area(RGBAColor),
    Line(RGBColor),
    /// A text-only note (no swatch).
    Note,
}

pub(super) struct LegendEntry {
    pub label: String,
    pub swatch: Swatch,
}

impl LegendEntry {
    pub(super) fn new(label: impl Into<String>, swatch: Swatch) -> LegendEntry {
        LegendEntry {
            label: label.into(),
            swatch,
        }
    }
}

/// The chart a figure draws on: its caption (`what` for `run`), the shared margins, x from 0
/// to `x_max` and y from 0 to `y_max`, with `y_label_area_px` for the y labels.
pub(super) fn chart_on<'a, DB: DrawingBackend>(
    plot: &'a DrawingArea<DB, Shift>,
    what: &str,
    run: &str,
    y_label_area_px: u32,
    x_max: f64,
    y_max: f64,
) -> Result<TimeChart<'a, DB>, PlotError> {
    drawing(
        ChartBuilder::on(plot)
            .caption(caption(what, run), (FONT, 19))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(y_label_area_px)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max),
    )
}

/// The grid and both axes with their descriptions, in the shared style.
pub(super) fn draw_mesh<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    x_desc: &str,
    y_desc: &str,
) -> Result<(), PlotError> {
    drawing(
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .axis_desc_style((FONT, 15))
            .light_line_style(LIGHT_GRID)
            .x_label_formatter(&|value| number_text(*value))
            .y_label_formatter(&|value| number_text(*value))
            .draw(),
    )
}

/// Split off the legend column at the right of `root`: (plot area, legend area).
pub(super) fn with_legend_column<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
) -> (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>) {
    let (width, _) = root.dim_in_pixel();
    root.split_horizontally(width.saturating_sub(LEGEND_WIDTH_PX))
}

/// Draw the legend entries top-down in the legend column.
pub(super) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[LegendEntry],
) -> Result<(), PlotError> {
    let label_style = (FONT, 15).into_font().color(&BLACK);
    drawing(area.draw(&Text::new(
        "Legend",
        (10, 60),
        (FONT, 16).into_font().color(&BLACK),
    )))?;
    for (position, entry) in entries.iter().enumerate() {
        let top = 88 + 26 * position as i32;
        match entry.swatch {
            Swatch::Area(color) => {
                drawing(area.draw(&Rectangle::new([(10, top), (34, top + 14)], color.filled())))?;
            }
            Swatch::Line(color) => {
                let line =
                    PathElement::new(vec![(10, top + 7), (34, top + 7)], color.stroke_width(3));
                drawing(area.draw(&line))?;
            }
            Swatch::Note => {}
        }
        drawing(area.draw(&Text::new(
            entry.label.clone(),
            (42, top),
            label_style.clone(),
        )))?;
    }
    Ok(())
}

/// The fault's interval on the time axis; an instantaneous fault gets a thin visible band.
fn fault_band(fault: &FaultSpan, end_s: f64, unit: TimeUnit, x_max: f64) -> (f64, f64) {
    let from = unit.of(fault.from_s);
    let until = unit.of(fault.until_s.unwrap_or(end_s).max(fault.from_s));
    let width_min = x_max * 0.004;
    (from, until.max(from + width_min))
}

/// The label of a fault: its kind and target, shortened.
fn fault_label(fault: &FaultSpan) -> String {
    let label = if fault.target.is_empty() {
        fault.kind.clone()
    } else {
        format!("{} {}", fault.kind, fault.target)
    };
    if label.chars().count() > 28 {
        let short: String = label.chars().take(27).collect();
        format!("{short}…")
    } else {
        label
    }
}

/// Shade every fault's interval over the chart's full height and label the first
/// [`FAULT_LABELS_MAX`] at the top, staggered over four rows so neighbours do not collide.
pub(super) fn shade_faults<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    faults: &[FaultSpan],
    end_s: f64,
    unit: TimeUnit,
) -> Result<(), PlotError> {
    shade_faults_in_lanes(chart, faults, end_s, unit, None)
}

/// [`shade_faults`], where `lane_of` (replica → the y of its lane's bottom, one unit high)
/// confines a fault that names its replicas to their lanes; other faults shade every lane.
pub(super) fn shade_faults_in_lanes<DB: DrawingBackend>(
    chart: &mut TimeChart<'_, DB>,
    faults: &[FaultSpan],
    end_s: f64,
    unit: TimeUnit,
    lane_of: Option<&dyn Fn(u32) -> Option<f64>>,
) -> Result<(), PlotError> {
    let x_range = chart.x_range();
    let y_range = chart.y_range();
    let shade = FAULT_SHADE.mix(0.16).filled();
    for fault in faults {
        let (from, until) = fault_band(fault, end_s, unit, x_range.end);
        let extents: Vec<(f64, f64)> = match (lane_of, &fault.replicas) {
            (Some(lane_of), Some(replicas)) => replicas
                .iter()
                .filter_map(|replica| lane_of(*replica))
                .map(|bottom| (bottom, bottom + 1.0))
                .collect(),
            _ => vec![(y_range.start, y_range.end)],
        };
        let bands = extents
            .into_iter()
            .map(|(bottom, top)| Rectangle::new([(from, bottom), (until, top)], shade));
        drawing(chart.draw_series(bands))?;
    }
    let label_style = (FONT, 12).into_font().color(&FAULT_SHADE);
    let height = y_range.end - y_range.start;
    for (position, fault) in faults.iter().take(FAULT_LABELS_MAX).enumerate() {
        let (from, _) = fault_band(fault, end_s, unit, x_range.end);
        let y = y_range.end - height * (0.015 + 0.05 * (position % 4) as f64);
        let text = Text::new(fault_label(fault), (from, y), label_style.clone());
        drawing(chart.draw_series(std::iter::once(text)))?;
    }
    Ok(())
}

/// The legend entry for the fault shading (with a count of unlabelled faults).
pub(super) fn fault_legend(faults: &[FaultSpan]) -> Vec<LegendEntry> {
    if faults.is_empty() {
        return vec![LegendEntry::new("no faults in this run", Swatch::Note)];
    }
    let mut entries = vec![LegendEntry::new(
        format!("fault active ({})", faults.len()),
        Swatch::Area(FAULT_SHADE.mix(0.3)),
    )];
    if faults.len() > FAULT_LABELS_MAX {
        let unlabelled = faults.len() - FAULT_LABELS_MAX;
        entries.push(LegendEntry::new(
            format!("({unlabelled} more not labelled)"),
            Swatch::Note,
        ));
    }
    entries
}

/// A caption: what the figure shows, then which run.
pub(super) fn caption(what: &str, run: &str) -> String {
    if run.is_empty() {
        what.to_owned()
    } else {
        format!("{what} — {run}")
    }
}
