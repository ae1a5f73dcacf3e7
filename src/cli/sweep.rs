//! `elasticsim sim FILE --seeds …`: many seeds in parallel, a verdict table, `sweep.csv` and
//! `sweep.md`, and a report folder for every failing seed only.

use super::Failure;
use super::args::SimArgs;
use super::sim::{load, report_dir, reproduce, settings};
use crate::explore::{SeedRange, SeedRow, SweepPlan, SweepSummary, sweep};
use crate::live::wall::Stopwatch;
use crate::report::atomic;
use crate::run::RunOutcome;
use crate::scenario::Scenario;
use crate::world::RunSettings;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// A progress bar on stderr, hidden when stderr is not a terminal (CI logs, pipes).
pub(super) fn progress_bar(seeds: u64, label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(seeds), ProgressDrawTarget::stderr());
    let template = format!("{label} {{bar:40}} {{pos}}/{{len}} seeds, {{per_sec}}, eta {{eta}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar
}

/// Run `seeds` of `scenario` with a progress bar; `failed_dir` says where a failing seed's
/// report folder goes (none: failing seeds write nothing).
pub(super) fn run_seeds(
    file: &Path,
    scenario: &Scenario,
    settings: &RunSettings,
    seeds: SeedRange,
    threads: Option<usize>,
    failed_dir: Option<&(dyn Fn(&RunSettings) -> PathBuf + Sync)>,
) -> Result<Vec<SeedRow>, Failure> {
    let bar = progress_bar(seeds.len(), settings.policy.name());
    let plan = SweepPlan {
        scenario,
        settings: settings.clone(),
        seeds,
        threads,
    };
    let command = |settings: &RunSettings| reproduce(file, settings, scenario);
    let finished = |outcome: &RunOutcome| {
        if let (false, Some(dir_of)) = (outcome.passed(), failed_dir) {
            let mut seed_settings = settings.clone();
            seed_settings.seed = outcome.info.seed;
            let dir = dir_of(&seed_settings);
            crate::report::write_run(&dir, &outcome.info, &outcome.collector).map_err(|e| {
                crate::run::RunError::Internal(format!("writing {}: {e}", dir.display()))
            })?;
        }
        bar.inc(1);
        Ok(())
    };
    let rows = sweep(&plan, &command, &finished);
    bar.finish_and_clear();
    Ok(rows?)
}

pub(super) fn parse_seeds(text: &str) -> Result<SeedRange, Failure> {
    SeedRange::parse(text).map_err(Failure::Input)
}

pub(super) fn run(args: &SimArgs) -> Result<(), Failure> {
    let text = args
        .seeds
        .as_deref()
        .expect("dispatch sends only --seeds runs here");
    let seeds = parse_seeds(text)?;
    if args.trace {
        return Err(Failure::Input(
            "--trace needs one seed: rerun a failing seed with --seed N --trace".to_owned(),
        ));
    }
    let scenario = load(&args.file)?;
    let settings = settings(&scenario, args)?;
    // The sweep folder is the parent of the seed folders: reports/<scenario>/<policy>/.
    let folder = match &args.out {
        Some(out) => out.clone(),
        None => report_dir(&scenario, &settings)
            .parent()
            .expect("a seed folder always sits in its policy folder")
            .to_path_buf(),
    };
    let seed_dir = |settings: &RunSettings| match &args.out {
        Some(out) => out.join(format!("seed-{}", settings.seed)),
        None => report_dir(&scenario, settings),
    };
    let stopwatch = Stopwatch::start();
    let rows = run_seeds(
        &args.file,
        &scenario,
        &settings,
        seeds,
        args.threads,
        Some(&seed_dir),
    )?;
    let wall_s = stopwatch.seconds();
    let summary = SweepSummary::of(&rows);
    write_sweep(&folder, &scenario, &settings, &summary, &rows)?;
    let rate = if wall_s > 0.0 {
        rows.len() as f64 / wall_s
    } else {
        0.0
    };
    if args.quiet {
        println!(
            "{} {}/{} seeds passed",
            verdict(&summary),
            summary.passed,
            summary.seeds
        );
    } else {
        println!(
            "{} {} (policy {}, seeds {seeds})",
            verdict(&summary),
            scenario.name,
            settings.policy.name()
        );
        print!("{}", crate::explore::sweep_table(&summary, &rows));
        println!("{:.1} seeds/s ({} seeds in {wall_s:.2}s)", rate, rows.len());
        println!("report: {}", folder.join("sweep.md").display());
    }
    if summary.failed() == 0 {
        Ok(())
    } else {
        Err(Failure::Violated)
    }
}

fn verdict(summary: &SweepSummary) -> &'static str {
    if summary.failed() == 0 {
        "PASS"
    } else {
        "FAIL"
    }
}

fn write_sweep(
    folder: &Path,
    scenario: &Scenario,
    settings: &RunSettings,
    summary: &SweepSummary,
    rows: &[SeedRow],
) -> Result<(), Failure> {
    let failed =
        |e: std::io::Error| Failure::Internal(format!("writing {}: {e}", folder.display()));
    std::fs::create_dir_all(folder).map_err(failed)?;
    atomic::write_with(&folder.join("sweep.csv"), |out| {
        crate::explore::write_sweep_csv(out, rows)
    })
    .map_err(failed)?;
    let title = format!("{} (policy {})", scenario.name, settings.policy.name());
    let markdown = crate::explore::sweep_markdown(&title, summary, rows);
    atomic::write_file(&folder.join("sweep.md"), markdown.as_bytes()).map_err(failed)
}
