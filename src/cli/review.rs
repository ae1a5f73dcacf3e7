//! `elasticsim review FILE… --base P --candidate P`: the behaviour diff of two policies on
//! identical seeds, written as `review.md`, `review.json` and `index.html` (see
//! `crate::review`). Without files it reviews every elastic-agent scenario of
//! `scenarios/nightly.toml` the nightly runs with at least ten seeds, each with at most as
//! many seeds as the nightly runs it.
//! Exits 1 when the candidate violates an invariant the base keeps on the same seed.
//!
//! With `--shard K/N` it runs the cells (scenario, reuse, seed) of one shard, each cell both
//! policies: the cells are listed scenario by scenario in file order, reuse off before on,
//! seeds ascending, and cell i is shard i mod N.

use super::Failure;
use super::args::ReviewArgs;
use super::sim::load;
use super::sweep::{parse_seeds, parse_shard, progress_bar, shard_folder, writing_failed};
use crate::ablation::Ablations;
use crate::allocator::Policy;
use crate::explore::shard::{Assembled, Placed, ShardFile};
use crate::explore::{Cell, CommandKind, SeedRow, write_compare_files};
use crate::nightly::NightlyConfig;
use crate::report::atomic;
use crate::report::html::Link;
use crate::review::{
    Group, ScenarioReview, SeedReview, review_json, review_markdown, review_seed, scenario_review,
    shrink_new_violations, with_reuse, write_page,
};
use crate::run::RunError;
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The nightly plan whose elastic-agent scenarios a review runs by default.
const NIGHTLY_PLAN: &str = "scenarios/nightly.toml";

/// A scenario the nightly samples with fewer seeds than this (`day`: a simulated working day
/// costs seconds per seed, minutes under a slow candidate) is left out of the default set;
/// name its file to review it.
const DEFAULT_SEEDS_MIN: u64 = 10;

/// One group of the plan in `shard.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct PlanGroup {
    file: String,
    reuse: bool,
    seeds: Vec<u64>,
}

/// What a review's files depend on besides its rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct ReviewPlan {
    base: Policy,
    candidate: Policy,
    seeds: String,
    groups: Vec<PlanGroup>,
    /// `--ablate` as given: the candidate's ablations.
    #[serde(default)]
    ablate: Option<String>,
}

impl ReviewPlan {
    /// The candidate as the outputs name it: the policy, and its ablations if any.
    fn candidate_label(&self) -> String {
        match &self.ablate {
            Some(names) => format!("{} (ablated: {names})", self.candidate.name()),
            None => self.candidate.name().to_owned(),
        }
    }
}

/// The candidate's ablations: `--ablate` if given, else the scenario's own `ablate` key.
fn candidate_ablations(ablate: Option<&str>, scenario: &Scenario) -> Result<Ablations, Failure> {
    match ablate {
        Some(text) => crate::mutants::parse(text)
            .map_err(|message| Failure::Input(format!("--ablate: {message}"))),
        None => Ok(scenario.ablations.clone()),
    }
}

/// The files to review, each with its seed cap (the nightly's seed count when defaulted).
fn files(args: &ReviewArgs) -> Result<Vec<(PathBuf, Option<u64>)>, Failure> {
    if !args.files.is_empty() {
        return Ok(args.files.iter().map(|file| (file.clone(), None)).collect());
    }
    let plan_path = Path::new(NIGHTLY_PLAN);
    let plan = NightlyConfig::load(plan_path).map_err(Failure::Input)?;
    let folder = plan_path.parent().unwrap_or(Path::new("."));
    Ok(plan
        .scenarios
        .iter()
        .map(|(name, entry)| (name, entry.seeds.unwrap_or(plan.seeds)))
        .filter(|(_, seeds)| *seeds >= DEFAULT_SEEDS_MIN)
        .map(|(name, cap)| (folder.join(format!("{name}.toml")), Some(cap)))
        .collect())
}

fn groups(args: &ReviewArgs) -> Result<Vec<Group>, Failure> {
    let seeds = parse_seeds(&args.seeds)?;
    let defaulted = args.files.is_empty();
    let modes: &[bool] = match args.reuse.as_str() {
        "on" => &[true],
        "off" => &[false],
        _ => &[false, true],
    };
    let mut groups = Vec::new();
    for (file, cap) in files(args)? {
        let scenario = load(&file)?;
        if scenario.leader.is_some() {
            if defaulted {
                continue;
            }
            return Err(Failure::Input(format!(
                "{}: a leader-election scenario; review compares elastic-agent allocators",
                file.display()
            )));
        }
        let count = cap.unwrap_or(u64::MAX).min(seeds.len()) as usize;
        let ablations = candidate_ablations(args.ablate.as_deref(), &scenario)?;
        for reuse in modes {
            groups.push(Group {
                file: file.display().to_string(),
                scenario: with_reuse(&scenario, *reuse),
                reuse: *reuse,
                seeds: seeds.seeds().take(count).collect(),
                candidate_ablations: ablations.clone(),
            });
        }
    }
    Ok(groups)
}

fn plan_of(args: &ReviewArgs, groups: &[Group]) -> ReviewPlan {
    ReviewPlan {
        base: args.base,
        candidate: args.candidate,
        seeds: args.seeds.clone(),
        groups: groups
            .iter()
            .map(|group| PlanGroup {
                file: group.file.clone(),
                reuse: group.reuse,
                seeds: group.seeds.clone(),
            })
            .collect(),
        ablate: args.ablate.clone(),
    }
}

/// Every cell in canonical order: (position, group index, seed).
fn cells(groups: &[Group]) -> Vec<(usize, usize, u64)> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(index, group)| group.seeds.iter().map(move |seed| (index, *seed)))
        .enumerate()
        .map(|(position, (index, seed))| (position, index, seed))
        .collect()
}

/// Review each cell of `mine`; a cell not started when a stop was asked for
/// ([`crate::interrupt`]) is `None`.
fn run_cells(
    plan: &ReviewPlan,
    groups: &[Group],
    mine: &[(usize, usize, u64)],
    threads: Option<usize>,
) -> Result<Vec<Option<SeedReview>>, Failure> {
    crate::interrupt::install();
    let (base, candidate) = (plan.base, plan.candidate);
    let bar = progress_bar(mine.len() as u64, "review");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the worker pool: {e}")))?;
    let rows: Result<Vec<Option<SeedReview>>, RunError> = pool.install(|| {
        mine.par_iter()
            .map(|(_, index, seed)| {
                if crate::interrupt::requested() {
                    return Ok(None);
                }
                let row = review_seed(&groups[*index], base, candidate, *seed);
                bar.inc(1);
                row.map(Some)
            })
            .collect()
    });
    bar.finish_and_clear();
    Ok(rows?)
}

/// `interrupted: 12 of 300 cells done; not done: burst.toml reuse off seeds 7..51, …`.
fn interrupted_line(groups: &[Group], mine: &[(usize, usize, u64)], done: &[bool]) -> String {
    let ran = done.iter().filter(|ran| **ran).count();
    let not_done: Vec<String> = groups
        .iter()
        .enumerate()
        .filter_map(|(index, group)| {
            let seeds: Vec<u64> = mine
                .iter()
                .zip(done)
                .filter(|((_, owner, _), ran)| *owner == index && !**ran)
                .map(|((_, _, seed), _)| *seed)
                .collect();
            (!seeds.is_empty()).then(|| {
                let spans = crate::interrupt::spans(&seeds);
                format!("{} reuse {} seeds {spans}", group.file, group.reuse_text())
            })
        })
        .collect();
    format!(
        "interrupted: {ran} of {} cells done; not done: {}",
        mine.len(),
        not_done.join("; ")
    )
}

pub(super) fn run(args: &ReviewArgs) -> Result<(), Failure> {
    let shard = parse_shard(args.shard.as_deref())?;
    let groups = groups(args)?;
    let plan = plan_of(args, &groups);
    let all = cells(&groups);
    let mine: Vec<(usize, usize, u64)> = all
        .iter()
        .filter(|(position, _, _)| shard.is_none_or(|shard| shard.owns(*position)))
        .copied()
        .collect();
    let stopwatch = Stopwatch::start();
    let cells_run = run_cells(&plan, &groups, &mine, args.threads)?;
    let done: Vec<bool> = cells_run.iter().map(Option::is_some).collect();
    let interrupted = done
        .contains(&false)
        .then(|| interrupted_line(&groups, &mine, &done));
    let (mine, rows): (Vec<(usize, usize, u64)>, Vec<SeedReview>) = mine
        .iter()
        .zip(cells_run)
        .filter_map(|(cell, row)| Some((*cell, row?)))
        .unzip();
    let indexed: Vec<(usize, SeedReview)> = mine
        .iter()
        .map(|(_, index, _)| *index)
        .zip(rows.iter().cloned())
        .collect();
    let folder = shard_folder(args.out.clone(), shard);
    let reviews = write_review(&folder, &plan, &groups, &indexed, interrupted.as_deref())?;
    if let Some(line) = interrupted {
        // A shard file would claim cells it never ran: an interrupted shard writes none.
        let _ = report(&plan, &reviews, &line, &folder);
        return Err(Failure::Interrupted(line));
    }
    if let Some(shard) = shard {
        let cell_list = all
            .iter()
            .map(|(_, index, seed)| cell(&groups[*index], *seed))
            .collect();
        let placed = mine
            .iter()
            .zip(rows)
            .map(|((position, _, _), row)| Placed {
                position: *position,
                row,
            })
            .collect();
        let file = ShardFile::new(CommandKind::Review, shard, plan.clone(), cell_list, placed);
        file.write(&folder).map_err(writing_failed(&folder))?;
    }
    let timing = format!(
        "{} seeds × 2 policies in {:.2}s",
        mine.len(),
        stopwatch.seconds()
    );
    report(&plan, &reviews, &timing, &folder)
}

fn cell(group: &Group, seed: u64) -> Cell {
    Cell {
        suite: group.scenario.name.clone(),
        case: format!("reuse-{}", group.reuse_text()),
        seed,
    }
}

/// Aggregate, shrink and write every output; the one writer for a review, a shard of one
/// and a merge of shards.
fn write_review(
    folder: &Path,
    plan: &ReviewPlan,
    groups: &[Group],
    rows: &[(usize, SeedReview)],
    interrupted: Option<&str>,
) -> Result<Vec<ScenarioReview>, Failure> {
    let candidate = plan.candidate;
    let per_group: Vec<(usize, Vec<SeedReview>)> = (0..groups.len())
        .map(|index| {
            let mine = rows.iter().filter(|(group, _)| *group == index);
            (index, mine.map(|(_, row)| row.clone()).collect())
        })
        .filter(|(_, rows): &(usize, Vec<SeedReview>)| !rows.is_empty())
        .collect();
    let reviews: Vec<ScenarioReview> = per_group
        .par_iter()
        .map(|(index, rows)| {
            let group = &groups[*index];
            let mut review = scenario_review(group, rows);
            let events = |seed: u64| {
                rows.iter()
                    .find(|row| row.seed == seed)
                    .map_or(0, |row| row.candidate.metrics.events)
            };
            let scenario = group.candidate_scenario();
            review.repros = shrink_new_violations(&review, &scenario, candidate, &events);
            review
        })
        .collect();
    std::fs::create_dir_all(folder).map_err(writing_failed(folder))?;
    let mut plots = Vec::new();
    for ((index, rows), review) in per_group.iter().zip(&reviews) {
        plots.extend(write_chart(folder, plan, &groups[*index], rows, review));
    }
    write_repros(folder, &reviews)?;
    let mut json = review_json(plan.base.name(), plan.candidate.name(), &reviews);
    json.ablate = plan.ablate.clone();
    json.interrupted = interrupted.map(str::to_owned);
    let mut bytes = serde_json::to_vec_pretty(&json)
        .map_err(|e| Failure::Internal(format!("serialising review.json: {e}")))?;
    bytes.push(b'\n');
    let write = |name: &str, bytes: &[u8]| {
        atomic::write_file(&folder.join(name), bytes).map_err(writing_failed(folder))
    };
    write("review.json", &bytes)?;
    let shown = folder.display().to_string();
    let label = plan.candidate_label();
    let mut markdown = review_markdown(plan.base.name(), &label, &reviews, &shown);
    if let Some(line) = interrupted {
        // After the summary paragraph, so the file still opens with it.
        markdown = markdown.replacen("\n\n", &format!("\n\n**{line}**\n\n"), 1);
    }
    write("review.md", markdown.as_bytes())?;
    write_page(
        folder,
        plan.base.name(),
        &label,
        &reviews,
        plots,
        interrupted,
    )
    .map_err(writing_failed(folder))?;
    Ok(reviews)
}

/// The group's comparison (`compare.csv`, `compare.md`, chart) in its own subfolder.
fn write_chart(
    folder: &Path,
    plan: &ReviewPlan,
    group: &Group,
    rows: &[SeedReview],
    review: &ScenarioReview,
) -> Option<Link> {
    let name = format!("{}-reuse-{}", group.scenario.name, group.reuse_text());
    let candidate_label = if plan.candidate == plan.base && plan.ablate.is_none() {
        format!("{} (candidate)", plan.candidate.name())
    } else {
        plan.candidate_label()
    };
    let runs: Vec<(String, Vec<SeedRow>)> = vec![
        (
            plan.base.name().to_owned(),
            rows.iter().map(|r| r.base.clone()).collect(),
        ),
        (
            candidate_label,
            rows.iter().map(|r| r.candidate.clone()).collect(),
        ),
    ];
    match write_compare_files(&folder.join(&name), &review.label(), &runs) {
        Ok(files) if files.chart_warning.is_none() => Some(Link {
            label: review.label(),
            href: format!("{name}/compare.svg"),
        }),
        Ok(files) => {
            eprintln!("warning: {}", files.chart_warning.unwrap_or_default());
            None
        }
        Err(error) => {
            eprintln!("warning: {name}: comparison not written: {error}");
            None
        }
    }
}

fn write_repros(folder: &Path, reviews: &[ScenarioReview]) -> Result<(), Failure> {
    let repro_folder = folder.join("repro");
    for review in reviews {
        for repro in &review.repros {
            let Some(toml) = &repro.toml else { continue };
            std::fs::create_dir_all(&repro_folder).map_err(writing_failed(&repro_folder))?;
            atomic::write_file(&repro_folder.join(&repro.file_name), toml.as_bytes())
                .map_err(writing_failed(&repro_folder))?;
        }
    }
    Ok(())
}

fn report(
    plan: &ReviewPlan,
    reviews: &[ScenarioReview],
    timing: &str,
    folder: &Path,
) -> Result<(), Failure> {
    let verdict =
        crate::review::verdict_sentence(plan.base.name(), &plan.candidate_label(), reviews);
    println!(
        "review {} against {}",
        plan.candidate_label(),
        plan.base.name()
    );
    println!("{verdict}");
    println!("{timing}");
    println!("review: {}", folder.join("review.md").display());
    if reviews
        .iter()
        .any(|review| !review.new_violations.is_empty())
    {
        Err(Failure::Violated)
    } else {
        Ok(())
    }
}

/// `merge` of review shards: the same outputs as the unsharded review (the scenario files
/// are read again to shrink the new violations).
pub(super) fn merge(assembled: &Assembled, out: &Path) -> Result<(), Failure> {
    let (plan, placed): (ReviewPlan, Vec<(SeedReview, PathBuf)>) =
        assembled.typed().map_err(Failure::Input)?;
    let mut groups = Vec::new();
    for planned in &plan.groups {
        let scenario = load(Path::new(&planned.file))?;
        groups.push(Group {
            file: planned.file.clone(),
            scenario: with_reuse(&scenario, planned.reuse),
            reuse: planned.reuse,
            seeds: planned.seeds.clone(),
            candidate_ablations: candidate_ablations(plan.ablate.as_deref(), &scenario)?,
        });
    }
    let owners: Vec<usize> = cells(&groups).iter().map(|(_, index, _)| *index).collect();
    let rows: Vec<(usize, SeedReview)> = owners
        .into_iter()
        .zip(placed.into_iter().map(|(row, _)| row))
        .collect();
    let reviews = write_review(out, &plan, &groups, &rows, None)?;
    let timing = format!(
        "{} seeds merged from {} shards",
        rows.len(),
        assembled.count
    );
    report(&plan, &reviews, &timing, out)
}
