//! `elasticsim compare FILE --policies … --seeds …`: the same seeds under each policy, side
//! by side; `compare.csv`, `compare.md`, the chart and `index.html` in
//! `reports/<scenario>/compare/`, with each failing seed's report in `<policy>/seed-N/`.
//! Exits 1 when any seed under any policy violated an invariant, as every command does.
//! With `--shard K/N` it runs the cells (policy, seed) of one shard: the cells are listed
//! policy by policy in flag order, each with every seed ascending, and cell i is shard i mod N.
//! With `--variants agentk-v1,fixed` the cases are leader-runner variants instead of
//! policies (the scenario's own policy, folders `<variant>/seed-N/`), and the tables show the
//! leader figures.

use super::Failure;
use super::args::CompareArgs;
use super::sim::load;
use super::sweep::{
    copy_report, owned, parse_seeds, parse_shard, placed, run_seeds, shard_folder, writing_failed,
};
use crate::explore::shard::{Assembled, ShardFile};
use crate::explore::{
    Cell, CommandKind, PolicyRow, SeedRow, Shard, compare_table, write_compare_files,
    write_compare_page,
};
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a comparison's files depend on besides its rows: the plan in `shard.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct CompareShardPlan {
    scenario: String,
    /// The unsharded seed range, as given.
    seeds: String,
    /// The compared cases in order: policy names, or variant names for `--variants`.
    #[serde(rename = "policies")]
    cases: Vec<String>,
    title: String,
}

/// The compared cases: (label, that case's run settings), in flag order.
fn cases(
    args: &CompareArgs,
    base: &RunSettings,
    leader: bool,
) -> Result<Vec<(String, RunSettings)>, Failure> {
    let Some(variants) = &args.variants else {
        return Ok(args
            .policies
            .iter()
            .map(|&policy| {
                let mut settings = base.clone();
                settings.policy = policy;
                (policy.name().to_owned(), settings)
            })
            .collect());
    };
    if !leader {
        return Err(Failure::Input(format!(
            "--variants {}: {} has no [leader] section",
            variants
                .iter()
                .map(|variant| variant.name())
                .collect::<Vec<_>>()
                .join(","),
            args.file.display()
        )));
    }
    Ok(variants
        .iter()
        .map(|variant| {
            let mut settings = base.clone();
            settings.variant = Some(*variant);
            (variant.name().to_owned(), settings)
        })
        .collect())
}

pub(super) fn run(args: &CompareArgs) -> Result<(), Failure> {
    let seeds = parse_seeds(&args.seeds)?;
    let shard = parse_shard(args.shard.as_deref())?;
    let mut scenario = load(&args.file)?;
    super::sim::apply_ablate(&mut scenario, args.ablate.as_deref())?;
    let base = RunSettings::from_scenario(&scenario);
    let all: Vec<u64> = seeds.seeds().collect();
    let folder = args.out.clone().unwrap_or_else(|| {
        PathBuf::from("reports")
            .join(&scenario.name)
            .join("compare")
    });
    let folder = shard_folder(folder, shard);
    let stopwatch = Stopwatch::start();
    let cases = cases(args, &base, scenario.leader.is_some())?;
    let CaseRuns {
        runs,
        cells,
        positions,
    } = run_cases(args, &scenario, &cases, &all, shard, &folder)?;
    let wall_s = stopwatch.seconds();
    let plan = CompareShardPlan {
        scenario: scenario.name.clone(),
        seeds: seeds.to_string(),
        cases: cases.iter().map(|(case, _)| case.clone()).collect(),
        title: format!("{} (seeds {seeds})", scenario.name),
    };
    let planned = cases.len() * all.len();
    let ran: usize = runs.iter().map(|(_, rows)| rows.len()).sum();
    let mut plan = plan;
    let interrupted = (shard.is_none() && ran < planned).then(|| {
        let line = interruption(&runs, &all, ran, planned);
        plan.title = format!("{} ({line})", plan.title);
        line
    });
    let rows = write_files(&folder, &plan, &runs)?;
    if let Some(line) = interrupted {
        print!("{}", compare_table(&rows));
        println!("report: {}", folder.join("compare.md").display());
        return Err(Failure::Interrupted(line));
    }
    if let Some(shard) = shard {
        let all_rows: Vec<SeedRow> = runs.iter().flat_map(|(_, rows)| rows.clone()).collect();
        let ran = placed(positions.into_iter(), &all_rows);
        let file = ShardFile::new(CommandKind::Compare, shard, plan.clone(), cells, ran);
        file.write(&folder).map_err(writing_failed(&folder))?;
    }
    let scope = shard.map_or_else(String::new, |shard| format!(", shard {shard}"));
    let total: usize = runs.iter().map(|(_, rows)| rows.len()).sum();
    let timing = format!("{total} runs in {wall_s:.2}s");
    report(&plan, &scope, &rows, &timing, &folder)
}

/// What the cases of a comparison ran: each case's rows, every cell of the plan, and the
/// plan positions of the seeds this shard ran.
struct CaseRuns {
    runs: Vec<(String, Vec<SeedRow>)>,
    cells: Vec<Cell>,
    positions: Vec<usize>,
}

/// Run this shard's seeds of every case in turn, until an interrupt.
fn run_cases(
    args: &CompareArgs,
    scenario: &Scenario,
    cases: &[(String, RunSettings)],
    all: &[u64],
    shard: Option<Shard>,
    folder: &Path,
) -> Result<CaseRuns, Failure> {
    let mut runs = Vec::new();
    let mut cells = Vec::new();
    let mut positions = Vec::new();
    for (position, (case, settings)) in cases.iter().enumerate() {
        if crate::interrupt::requested() {
            break;
        }
        let mine = owned(shard, position * all.len(), all);
        let mine_seeds = mine.iter().map(|(_, seed)| *seed).collect();
        // A failing seed's report goes to `<folder>/<case>/seed-N/`, linked from index.html.
        let seed_dir =
            |settings: &RunSettings| folder.join(case).join(format!("seed-{}", settings.seed));
        let rows = run_seeds(
            &args.file,
            scenario,
            settings,
            mine_seeds,
            args.threads,
            Some(&seed_dir),
        )?;
        cells.extend(all.iter().map(|seed| Cell {
            suite: scenario.name.clone(),
            case: case.clone(),
            seed: *seed,
        }));
        positions.extend(mine.iter().map(|(position, _)| *position));
        runs.push((case.clone(), rows));
    }
    Ok(CaseRuns {
        runs,
        cells,
        positions,
    })
}

/// "interrupted: 7 of 20 runs done (policy safe: 1–2); not done: 3–10": the runs done, the
/// case that was running and its seeds done and not done.
fn interruption(
    runs: &[(String, Vec<SeedRow>)],
    all: &[u64],
    ran: usize,
    planned: usize,
) -> String {
    let done: Vec<u64> = runs.last().map_or_else(Vec::new, |(_, rows)| {
        rows.iter().map(|row| row.seed).collect()
    });
    let policy = runs.last().map_or("", |(policy, _)| policy.as_str());
    format!(
        "interrupted: {ran} of {planned} runs done (policy {policy}: {}); not done: {}",
        crate::interrupt::spans(&done),
        crate::interrupt::Interrupted::of(all, &done).map_or_else(String::new, |stopped| {
            crate::interrupt::spans(&stopped.not_done)
        })
    )
}

fn write_files(
    folder: &Path,
    plan: &CompareShardPlan,
    runs: &[(String, Vec<SeedRow>)],
) -> Result<Vec<PolicyRow>, Failure> {
    let files = write_compare_files(folder, &plan.title, runs).map_err(writing_failed(folder))?;
    write_compare_page(folder, &plan.title, runs).map_err(writing_failed(folder))?;
    // A chart that cannot be drawn is a warning: the tables are the result.
    if let Some(warning) = files.chart_warning {
        eprintln!("warning: {warning}");
    }
    Ok(files.rows)
}

/// Print the side-by-side table and report path; the exit status follows the verdicts.
fn report(
    plan: &CompareShardPlan,
    scope: &str,
    rows: &[PolicyRow],
    timing: &str,
    folder: &Path,
) -> Result<(), Failure> {
    println!("compare {} over seeds {}{scope}", plan.scenario, plan.seeds);
    print!("{}", compare_table(rows));
    println!("{timing}");
    println!("report: {}", folder.join("compare.md").display());
    if rows.iter().all(|row| row.passed == row.seeds) {
        Ok(())
    } else {
        Err(Failure::Violated)
    }
}

/// `merge` of compare shards: the same `compare.csv`, `compare.md` and chart as the
/// unsharded comparison.
pub(super) fn merge(assembled: &Assembled, out: &Path) -> Result<(), Failure> {
    let (plan, placed): (CompareShardPlan, Vec<(SeedRow, PathBuf)>) =
        assembled.typed().map_err(Failure::Input)?;
    let per_policy = placed.len() / plan.cases.len().max(1);
    let runs: Vec<(String, Vec<SeedRow>)> = plan
        .cases
        .iter()
        .zip(placed.chunks(per_policy.max(1)))
        .map(|(policy, chunk)| {
            let rows = chunk.iter().map(|(row, _)| row.clone()).collect();
            (policy.clone(), rows)
        })
        .collect();
    for (policy, chunk) in plan.cases.iter().zip(placed.chunks(per_policy.max(1))) {
        for (row, folder) in chunk.iter().filter(|(row, _)| !row.passed()) {
            let name = PathBuf::from(policy).join(format!("seed-{}", row.seed));
            copy_report(&folder.join(&name), &out.join(&name))?;
        }
    }
    let rows = write_files(out, &plan, &runs)?;
    let timing = format!(
        "{} runs merged from {} shards",
        placed.len(),
        assembled.count
    );
    report(&plan, "", &rows, &timing, out)
}
