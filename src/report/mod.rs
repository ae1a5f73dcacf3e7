//! Run reports: metrics, CSV tables, `summary.json`, `summary.md` and the terminal summary
//! (`docs/cli.md` describes them).
//!
//! Map:
//!
//! | file | owns |
//! |---|---|
//! | `collector.rs` | [`Collector`]: folds trace records into rows and counters |
//! | `rows.rs` | the rows of the CSV tables |
//! | `leader.rs` | leadership clocks and failover rules |
//! | `metrics.rs` | [`Metrics`] and the percentile rule |
//! | `tables.rs` | `jobs.csv`, `pods.csv`, `timeline.csv`, `faults.csv` |
//! | `summary.rs` | `summary.json`, `summary.md` |
//! | `terminal.rs` | the post-run terminal summary |
//! | `info.rs` | [`RunInfo`]: what the caller knows about a run |
//! | `atomic.rs` | temp-file-and-rename writes |
//! | `lanes.rs` | leader lanes (`leader.csv`) |
//! | `plots/` | SVG and PNG plots of a run and of a comparison |
//! | `html.rs` | the static `index.html` of sweep, compare and nightly folders |
//!
//! Use: feed every record to [`Collector::observe`] as the run goes, then build a
//! [`RunInfo`], call [`write_run`] and print [`terminal::summary`].

pub mod atomic;
mod collector;
pub(crate) mod format;
pub(crate) mod html;
mod info;
mod job_table;
mod lanes;
mod leader;
mod metrics;
pub mod plots;
mod pod_table;
mod rows;
pub mod summary;
pub mod tables;
pub(crate) mod terminal;

#[cfg(test)]
mod tests;

pub(crate) use collector::Collector;
pub(crate) use info::{RunInfo, classify};
pub(crate) use lanes::LaneState;
pub(crate) use metrics::{Metrics, percentile_nearest_rank, seconds};
#[cfg(test)]
pub(crate) use rows::JobOutcome;

use std::io;
use std::path::Path;

/// The files [`write_run`] writes into a report folder.
#[cfg(test)]
pub(crate) const REPORT_FILES: [&str; 6] = [
    "summary.json",
    "summary.md",
    "jobs.csv",
    "pods.csv",
    "timeline.csv",
    "faults.csv",
];

/// Create `dir` and write the whole report into it, each file atomically. Tables come first
/// and `summary.json` last, so a folder with a `summary.json` has all its tables. Runs with
/// leader records also get `leader.csv`. The plots are drawn after the tables; a plot that
/// cannot be drawn is a warning on stderr, never an error of the run.
pub fn write_run(dir: &Path, info: &RunInfo, collector: &Collector) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let metrics = collector.metrics(info);
    atomic::write_with(&dir.join("jobs.csv"), |out| {
        tables::write_jobs(out, collector)
    })?;
    atomic::write_with(&dir.join("pods.csv"), |out| {
        tables::write_pods(out, collector)
    })?;
    atomic::write_with(&dir.join("timeline.csv"), |out| {
        tables::write_timeline(out, collector)
    })?;
    atomic::write_with(&dir.join("faults.csv"), |out| {
        tables::write_faults(out, collector)
    })?;
    if collector.has_leader_records() {
        atomic::write_with(&dir.join("leader.csv"), |out| {
            tables::write_leader(out, collector)
        })?;
    }
    let context = plots::PlotContext::from_info(info);
    let drawn = match plots::write_run_plots(dir, &context) {
        Ok(drawn) => drawn,
        Err(error) => {
            eprintln!("warning: plots of {} not drawn: {error}", dir.display());
            Vec::new()
        }
    };
    let markdown = summary::summary_markdown_with_plots(info, &metrics, &drawn);
    atomic::write_file(&dir.join("summary.md"), markdown.as_bytes())?;
    atomic::write_file(
        &dir.join("summary.json"),
        &summary::summary_json(info, &metrics),
    )
}
