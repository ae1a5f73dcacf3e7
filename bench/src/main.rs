//! `cargo xtask bench [--quick] [--out DIR]`: elasticsim's speed and scale figures, each the
//! median of several repetitions, all measured in one invocation so that ratios compare like
//! with like on a shared, noisy machine. Writes `bench.json` and `bench.md` (default folder
//! `reports/bench/`).
//!
//! Usage: `elasticsim-bench [--quick] [--out DIR] [--scenarios DIR]`.

// Wall time is what a bench measures: `Instant::now` is read here, in the bench crate, around
// whole runs, never inside the simulator.
#![allow(clippy::disallowed_methods)]
#![deny(unsafe_code)]

mod discovery;
mod figures;
mod hold;
mod model;
mod output;
mod stats;
mod turmoil_burst;
mod turmoil_messages;

use anyhow::{Context, bail};
use figures::{Bench, Plan};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// The allocator the `elasticsim` binary runs with (its `main.rs` says why): the figures are
/// the model's speed and memory as users run it.
#[cfg(unix)]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// The repository root, where `scenarios/` and `reports/` live.
fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the bench crate lives in a folder of the workspace")
        .to_path_buf()
}

/// The folder of the ready scenarios.
pub fn scenarios_folder() -> PathBuf {
    workspace_root().join("scenarios")
}

struct Arguments {
    quick: bool,
    out: PathBuf,
    scenarios: PathBuf,
    /// Hidden: run the day in this process for `hours` and write a report to this file.
    child_rss: Option<PathBuf>,
    hours: u64,
    day: Option<PathBuf>,
}

fn parse_arguments(arguments: &[String]) -> anyhow::Result<Arguments> {
    let mut parsed = Arguments {
        quick: false,
        out: workspace_root().join("reports").join("bench"),
        scenarios: scenarios_folder(),
        child_rss: None,
        hours: 24,
        day: None,
    };
    let mut iterator = arguments.iter();
    while let Some(argument) = iterator.next() {
        let mut value = |flag: &str| {
            iterator
                .next()
                .cloned()
                .with_context(|| format!("{flag} needs a value"))
        };
        match argument.as_str() {
            "--quick" => parsed.quick = true,
            "--out" => parsed.out = PathBuf::from(value("--out")?),
            "--scenarios" => parsed.scenarios = PathBuf::from(value("--scenarios")?),
            "--child-rss" => parsed.child_rss = Some(PathBuf::from(value("--child-rss")?)),
            "--hours" => parsed.hours = value("--hours")?.parse().context("--hours")?,
            "--day" => parsed.day = Some(PathBuf::from(value("--day")?)),
            "-h" | "--help" => {
                println!("elasticsim-bench [--quick] [--out DIR] [--scenarios DIR]");
                std::process::exit(0);
            }
            other => bail!("unknown argument {other:?} (try --help)"),
        }
    }
    Ok(parsed)
}

fn run_bench(arguments: &Arguments) -> anyhow::Result<bool> {
    let plan = Plan::new(arguments.quick);
    std::fs::create_dir_all(&arguments.out)
        .with_context(|| format!("creating {}", arguments.out.display()))?;
    let mut bench = Bench {
        plan,
        scenarios: arguments.scenarios.clone(),
        scratch: arguments.out.clone(),
        figures: Vec::new(),
        sweep_fingerprints_identical: None,
    };
    let mode = if plan.quick { "quick" } else { "full" };
    println!("elasticsim bench ({mode}): each figure is the median of n repetitions\n");
    println!("{}", output::TABLE_HEADER);
    bench.hold_loops()?;
    bench.models()?;
    bench.sweeps()?;
    bench.turmoil()?;
    bench.day()?;
    bench.day_x10()?;
    bench.discovery()?;
    let targets_met = bench.figures.iter().all(|figure| figure.status != "fail");
    let document = output::Document {
        quick: plan.quick,
        threads_available: std::thread::available_parallelism().map_or(1, |n| n.get()),
        figures: &bench.figures,
        targets_met,
        sweep_fingerprints_identical: bench.sweep_fingerprints_identical,
    };
    output::write(&arguments.out, &document)?;
    println!("\nreport: {}", arguments.out.join("bench.md").display());
    if bench.sweep_fingerprints_identical == Some(false) {
        eprintln!("bench: per-seed fingerprints differ between 1 and 2 threads");
        return Ok(false);
    }
    Ok(true)
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let result = parse_arguments(&arguments).and_then(|arguments| {
        if let Some(out) = &arguments.child_rss {
            let day = arguments
                .day
                .clone()
                .unwrap_or_else(|| arguments.scenarios.join("day.toml"));
            model::child_rss(&day, arguments.hours, out).map(|()| true)
        } else {
            run_bench(&arguments)
        }
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("bench: {error:#}");
            ExitCode::from(3)
        }
    }
}
