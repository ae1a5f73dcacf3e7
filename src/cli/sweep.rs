//! `elasticsim sim FILE --seeds …`: many seeds in parallel, a verdict table, `sweep.csv` and
//! `sweep.md`, and a report folder for every failing seed only. With `--shard K/N` it runs
//! the seeds of one shard into `<folder>/shard-K-of-N/` and adds `shard.json`; `merge` of
//! sweep shards lives here too, so both paths share the writers and the printout.

use super::Failure;
use super::args::SimArgs;
use super::sim::{report_dir, reproduce, settings};
use crate::explore::shard::{self, Assembled, Placed, ShardFile};
use crate::explore::{
    Cell, CommandKind, SeedRange, SeedRow, Shard, SweepPlan, SweepSummary, sweep,
    write_sweep_files, write_sweep_page,
};
use crate::interrupt::Interrupted;
use crate::run::RunOutcome;
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
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
    seeds: Vec<u64>,
    threads: Option<usize>,
    failed_dir: Option<&(dyn Fn(&RunSettings) -> PathBuf + Sync)>,
) -> Result<Vec<SeedRow>, Failure> {
    crate::interrupt::install();
    let bar = progress_bar(seeds.len() as u64, settings.policy.name());
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

/// `--shard K/N` (or `auto/N`, reading `JOB_COMPLETION_INDEX`); bad values are bad input.
pub(super) fn parse_shard(text: Option<&str>) -> Result<Option<Shard>, Failure> {
    text.map(|text| {
        let index = std::env::var(shard::COMPLETION_INDEX_VARIABLE).ok();
        Shard::parse(text, index.as_deref()).map_err(Failure::Input)
    })
    .transpose()
}

/// The cells of `seeds` a shard runs, as (position, seed); every cell without a shard.
pub(super) fn owned(
    shard: Option<Shard>,
    first_position: usize,
    seeds: &[u64],
) -> Vec<(usize, u64)> {
    seeds
        .iter()
        .enumerate()
        .map(|(offset, seed)| (first_position + offset, *seed))
        .filter(|(position, _)| shard.is_none_or(|shard| shard.owns(*position)))
        .collect()
}

/// A shard writes into `<folder>/shard-K-of-N/`, so shards sharing a folder never collide.
pub(super) fn shard_folder(folder: PathBuf, shard: Option<Shard>) -> PathBuf {
    match shard {
        Some(shard) => folder.join(shard.folder_name()),
        None => folder,
    }
}

pub(super) fn writing_failed(folder: &Path) -> impl Fn(std::io::Error) -> Failure + '_ {
    move |e| Failure::Internal(format!("writing {}: {e}", folder.display()))
}

/// What a sweep's files depend on besides its rows: the plan in `shard.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct SweepShardPlan {
    scenario: String,
    /// The policy (and variant) label.
    case: String,
    /// The unsharded seed range, as given.
    seeds: String,
    title: String,
}

impl SweepShardPlan {
    fn new(scenario: &Scenario, settings: &RunSettings, seeds: SeedRange) -> SweepShardPlan {
        let mut case = settings.policy.name().to_owned();
        let mut title = format!("{} (policy {})", scenario.name, settings.policy.name());
        if let (Some(variant), Some(_)) = (settings.variant, &scenario.leader) {
            case = format!("{case}/{}", variant.name());
            // A leader run is named by its variant: the policy plays no part in it.
            title = format!("{} (variant {})", scenario.name, variant.name());
        }
        if !scenario.ablations.is_empty() {
            case = format!("{case}/ablate-{}", scenario.ablations.label());
            title = format!("{title} ablate {}", scenario.ablations.label());
        }
        SweepShardPlan {
            scenario: scenario.name.clone(),
            case,
            seeds: seeds.to_string(),
            title,
        }
    }

    /// The unsharded sweep's cells.
    fn cells(&self, seeds: &[u64]) -> Vec<Cell> {
        seeds
            .iter()
            .map(|seed| Cell {
                suite: self.scenario.clone(),
                case: self.case.clone(),
                seed: *seed,
            })
            .collect()
    }
}

/// Rows with the canonical positions of the cells they ran, for `shard.json`.
pub(super) fn placed(
    positions: impl Iterator<Item = usize>,
    rows: &[SeedRow],
) -> Vec<Placed<SeedRow>> {
    positions
        .zip(rows)
        .map(|(position, row)| Placed {
            position,
            row: row.clone(),
        })
        .collect()
}

/// The sweep folder: `--out`, or the parent of the seed folders
/// (`reports/<scenario>/<policy>/`); a shard's own folder inside it.
fn sweep_folder(
    args: &SimArgs,
    scenario: &Scenario,
    settings: &RunSettings,
    shard: Option<Shard>,
) -> PathBuf {
    let folder = match &args.out {
        Some(out) => out.clone(),
        None => report_dir(scenario, settings)
            .parent()
            .expect("a seed folder always sits in its policy folder")
            .to_path_buf(),
    };
    shard_folder(folder, shard)
}

/// "(policy safe, seeds 1–40, shard 1/2)"; a leader run is named by its variant, since the
/// policy plays no part in it.
fn headline(
    scenario: &Scenario,
    settings: &RunSettings,
    seeds: &SeedRange,
    shard: Option<Shard>,
) -> String {
    let scope = shard.map_or_else(String::new, |shard| format!(", shard {shard}"));
    let case = match (settings.variant, &scenario.leader) {
        (Some(variant), Some(_)) => format!("variant {}", variant.name()),
        _ => format!("policy {}", settings.policy.name()),
    };
    format!("({case}, seeds {seeds}{scope})")
}

/// The seed range and shard of a `--seeds` run (`--trace` needs one seed).
fn seeds_and_shard(args: &SimArgs) -> Result<(SeedRange, Option<Shard>), Failure> {
    let text = args
        .seeds
        .as_deref()
        .expect("dispatch sends only --seeds runs here");
    let seeds = parse_seeds(text)?;
    let shard = parse_shard(args.shard.as_deref())?;
    if args.trace {
        return Err(Failure::Input(
            "--trace needs one seed: rerun a failing seed with --seed N --trace".to_owned(),
        ));
    }
    Ok((seeds, shard))
}

pub(super) fn run(args: &SimArgs) -> Result<(), Failure> {
    let (seeds, shard) = seeds_and_shard(args)?;
    let scenario = super::sim::load_with(args)?;
    let settings = settings(&scenario, args)?;
    let folder = sweep_folder(args, &scenario, &settings, shard);
    let seed_dir = |settings: &RunSettings| folder.join(format!("seed-{}", settings.seed));
    let all: Vec<u64> = seeds.seeds().collect();
    let mine = owned(shard, 0, &all);
    let stopwatch = Stopwatch::start();
    let rows = run_seeds(
        &args.file,
        &scenario,
        &settings,
        mine.iter().map(|(_, seed)| *seed).collect(),
        args.threads,
        Some(&seed_dir),
    )?;
    let wall_s = stopwatch.seconds();
    let plan = SweepShardPlan::new(&scenario, &settings, seeds);
    let planned: Vec<u64> = mine.iter().map(|(_, seed)| *seed).collect();
    let ran: Vec<u64> = rows.iter().map(|row| row.seed).collect();
    let stopped = Interrupted::of(&planned, &ran);
    let title = match &stopped {
        Some(stopped) => format!("{} ({})", plan.title, stopped.line()),
        None => plan.title.clone(),
    };
    let summary = write_sweep_files(&folder, &title, &rows).map_err(writing_failed(&folder))?;
    write_sweep_page(&folder, &title, &plan.case, &rows).map_err(writing_failed(&folder))?;
    if let Some(stopped) = stopped {
        // A shard file would claim cells it never ran: an interrupted shard writes none.
        print!("{}", crate::explore::sweep_table(&summary, &rows));
        println!("report: {}", folder.join("sweep.md").display());
        return Err(Failure::Interrupted(stopped.line()));
    }
    if let Some(shard) = shard {
        let positions = mine.iter().map(|(position, _)| *position);
        let file = ShardFile::new(
            CommandKind::Sweep,
            shard,
            plan.clone(),
            plan.cells(&all),
            placed(positions, &rows),
        );
        file.write(&folder).map_err(writing_failed(&folder))?;
    }
    let rate = if wall_s > 0.0 {
        rows.len() as f64 / wall_s
    } else {
        0.0
    };
    let timing = format!("{rate:.1} seeds/s ({} seeds in {wall_s:.2}s)", rows.len());
    let headline = headline(&scenario, &settings, &seeds, shard);
    report(
        args.quiet,
        &plan.scenario,
        &headline,
        &summary,
        &rows,
        &timing,
        &folder,
    )
}

/// Print a sweep's verdict, table and report path; the exit status follows the verdict.
fn report(
    quiet: bool,
    scenario: &str,
    headline: &str,
    summary: &SweepSummary,
    rows: &[SeedRow],
    timing: &str,
    folder: &Path,
) -> Result<(), Failure> {
    if quiet {
        println!(
            "{} {}/{} seeds passed",
            verdict(summary),
            summary.passed,
            summary.seeds
        );
    } else {
        println!("{} {scenario} {headline}", verdict(summary));
        print!("{}", crate::explore::sweep_table(summary, rows));
        println!("{timing}");
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

/// `merge` of sweep shards: the same `sweep.csv` and `sweep.md` as the unsharded sweep, and
/// every failing seed's report folder copied from its shard, so `out` stands alone.
pub(super) fn merge(assembled: &Assembled, out: &Path) -> Result<(), Failure> {
    let (plan, placed): (SweepShardPlan, Vec<(SeedRow, PathBuf)>) =
        assembled.typed().map_err(Failure::Input)?;
    let rows: Vec<SeedRow> = placed.iter().map(|(row, _)| row.clone()).collect();
    let summary = write_sweep_files(out, &plan.title, &rows).map_err(writing_failed(out))?;
    for (row, folder) in placed.iter().filter(|(row, _)| !row.passed()) {
        let name = format!("seed-{}", row.seed);
        copy_report(&folder.join(&name), &out.join(&name))?;
    }
    write_sweep_page(out, &plan.title, &plan.case, &rows).map_err(writing_failed(out))?;
    let headline = format!("(policy {}, seeds {})", plan.case, plan.seeds);
    let timing = format!(
        "{} seeds merged from {} shards",
        rows.len(),
        assembled.count
    );
    report(
        false,
        &plan.scenario,
        &headline,
        &summary,
        &rows,
        &timing,
        out,
    )
}

/// Copy a failing seed's report folder from its shard; a shard folder that lost it is a
/// warning, since the tables are the result.
pub(super) fn copy_report(from: &Path, to: &Path) -> Result<(), Failure> {
    if !from.is_dir() {
        eprintln!(
            "warning: {} is missing: the merged report cannot link to it",
            from.display()
        );
        return Ok(());
    }
    shard::copy_folder(from, to).map_err(|e| {
        Failure::Internal(format!(
            "copying {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })
}
