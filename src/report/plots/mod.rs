//! Plots people look at: SVG always, and PNG next to it (rendered with the system's fonts
//! through fontconfig/freetype, plotters' default features).
//!
//! A run folder gets, from its CSVs (so `elasticsim plot DIR` can redraw them):
//!
//! | file stem | what it shows |
//! |---|---|
//! | `reuse` | reuse ratio over simulated time, faults shaded and labelled |
//! | `states` | pods and agents by state (stacked areas) and jobs waiting, faults shaded |
//! | `wait_cdf` | the job-wait distribution (CDF) with the `max_job_wait` bound |
//! | `leader` | runs with leader records: one lane per replica (led, modules ran, down, paused) |
//!
//! A comparison gets `compare` from [`compare_charts`]: one panel per metric, one bar per
//! policy. Every figure keeps its legend in a column of its own, so no legend covers data.
//! Drawing never reads the clock or the network: it depends only on the files it is given.

mod compare;
mod data;
mod kit;
mod leader;
mod run_charts;

#[cfg(test)]
mod tests;

pub use compare::{LeaderBars, PolicyRow, compare_charts};
pub(crate) use data::{FaultSpan, PlotContext, RunData, TimelinePoint};

use kit::{Figure, render};
use plotters::style::RGBColor;
use std::path::Path;

/// The colour that shades a fault's interval in every time plot (drawn translucent).
pub(crate) const FAULT_SHADE: RGBColor = RGBColor(0x8E, 0x24, 0xAA);
/// [`FAULT_SHADE`] as it appears in an SVG `fill` attribute.
pub const FAULT_SHADE_SVG: &str = "#8E24AA";

/// Why a plot could not be drawn. Callers writing a run report treat it as a warning.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// An input table is missing, unreadable or malformed.
    #[error("reading {path}: {message}")]
    Read {
        /// The table's path.
        path: String,
        /// What was wrong with it.
        message: String,
    },
    /// The plotting library refused to draw.
    #[error("drawing {file}: {message}")]
    Draw {
        /// The figure's file name.
        file: String,
        /// The library's message.
        message: String,
    },
    /// The image could not be written.
    #[error("writing {path}: {source}")]
    Write {
        /// The image's path.
        path: String,
        /// Why writing it failed.
        source: std::io::Error,
    },
}

/// One drawn figure: `<stem>.svg` and `<stem>.png` in the folder it was drawn into.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFile {
    /// The file name without extension, e.g. `wait_cdf`.
    pub stem: String,
    /// What the reader is looking at, for links and captions.
    pub title: String,
}

impl PlotFile {
    /// The SVG file's name, `<stem>.svg`.
    pub(crate) fn svg_name(&self) -> String {
        format!("{}.svg", self.stem)
    }

    /// The PNG file's name, `<stem>.png`.
    pub(crate) fn png_name(&self) -> String {
        format!("{}.png", self.stem)
    }
}

/// Draw every plot of the run folder `dir` from its CSVs (`timeline.csv` and `jobs.csv` are
/// required; `faults.csv` and `leader.csv` are used when present). Returns the figures drawn.
pub(crate) fn write_run_plots(
    dir: &Path,
    context: &PlotContext,
) -> Result<Vec<PlotFile>, PlotError> {
    let data = RunData::load(dir, context)?;
    let mut drawn = vec![
        draw(dir, "reuse", &run_charts::ReuseFigure(&data))?,
        draw(dir, "states", &run_charts::StatesFigure(&data))?,
        draw(dir, "wait_cdf", &run_charts::WaitFigure(&data))?,
    ];
    if !data.replicas.is_empty() {
        drawn.push(draw(dir, "leader", &leader::LeaderFigure(&data))?);
    }
    Ok(drawn)
}

/// Redraw a run folder's plots from its files alone: the title, the run's end and the
/// `max_job_wait` bound come from its `summary.json` when it has one.
pub fn redraw_run_plots(dir: &Path) -> Result<Vec<PlotFile>, PlotError> {
    let context = PlotContext::from_folder(dir);
    write_run_plots(dir, &context)
}

fn draw<F: Figure>(dir: &Path, stem: &str, figure: &F) -> Result<PlotFile, PlotError> {
    render(dir, stem, figure)?;
    Ok(PlotFile {
        stem: stem.to_owned(),
        title: figure.title(),
    })
}
