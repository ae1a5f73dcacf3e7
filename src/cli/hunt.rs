//! `elasticsim hunt [FILE…]`: per target (a defective policy or variant, or one ablation),
//! sweep the generic scenarios until a violation or the budget; shrink each find into
//! `<out>/<target>/repro.toml` and check it fails on its own; write `hunt.md` and `hunt.json`.
//! Exits 0 when the hunt ran (finds are its result), 1 with `--fail-on-find` when a target
//! was killed (a gate for designs that should survive), 130 when interrupted.

use super::Failure;
use super::args::HuntArgs;
use super::sim::{load, reproduce};
use crate::ablation::{Ablation, Ablations, Owner};
use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::explore::hunt::{HuntResult, Limits, Mode, Target, hunt};
use crate::mutants::{Variant, declared_of};
use crate::report::atomic;
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

const DEFAULT_FILES: [&str; 2] = [
    "scenarios/explore/elastic.toml",
    "scenarios/explore/leader.toml",
];

/// One row of `hunt.json`'s `targets[]`.
#[derive(Clone, Debug, Serialize)]
pub(super) struct TargetRow {
    pub target: String,
    pub mode: &'static str,
    pub killed: bool,
    /// Candidates run up to the first violation (None when it survived).
    pub seeds_to_kill: Option<u64>,
    /// Candidates run in all.
    pub seeds_tried: u64,
    pub wall_s_to_kill: Option<f64>,
    pub wall_s: f64,
    pub invariant: Option<InvariantId>,
    /// `<out>/<target>/repro.toml` (None when it survived).
    pub repro: Option<String>,
    /// The shrunk repro, loaded from its file, fails the same invariant.
    pub repro_fails: Option<bool>,
    pub file: Option<String>,
    pub seed: Option<u64>,
    pub swarm_draw: Option<String>,
    pub reproduce: Option<String>,
    pub interrupted: bool,
    /// The hunt of this target hit a harness bug (a panic, printed above the table).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub harness_bug: bool,
}

impl TargetRow {
    fn harness_bug(target: &str, mode: Mode) -> TargetRow {
        TargetRow {
            target: target.to_owned(),
            mode: mode.name(),
            killed: false,
            seeds_to_kill: None,
            seeds_tried: 0,
            wall_s_to_kill: None,
            wall_s: 0.0,
            invariant: None,
            repro: None,
            repro_fails: None,
            file: None,
            seed: None,
            swarm_draw: None,
            reproduce: None,
            interrupted: false,
            harness_bug: true,
        }
    }
}

#[derive(Serialize)]
struct HuntFile<'a> {
    master_seed: u64,
    budget_s: f64,
    interrupted: bool,
    targets: &'a [TargetRow],
}

pub(super) fn run(args: &HuntArgs) -> Result<(), Failure> {
    let budget_s = seconds("--budget", &args.budget)?;
    let shrink_s = seconds("--shrink-time", &args.shrink_time)?;
    let files: Vec<PathBuf> = if args.files.is_empty() {
        DEFAULT_FILES.iter().map(PathBuf::from).collect()
    } else {
        args.files.clone()
    };
    let loaded: Vec<(PathBuf, Scenario)> = files
        .iter()
        .map(|file| load(file).map(|scenario| (file.clone(), scenario)))
        .collect::<Result<_, _>>()?;
    let targets = expand_targets(&args.targets, &loaded)?;
    let modes: Vec<Mode> = match (args.uniform, args.guided) {
        (true, _) => vec![Mode::Uniform],
        (_, true) => vec![Mode::Guided],
        _ => vec![Mode::Uniform, Mode::Guided],
    };
    crate::interrupt::install();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(args.threads.unwrap_or(0))
        .build()
        .map_err(|e| Failure::Internal(format!("cannot start the worker pool: {e}")))?;
    let mut rows = Vec::new();
    'hunt: for (target, target_files) in &targets {
        for &mode in &modes {
            if crate::interrupt::requested() {
                break 'hunt;
            }
            // A panic is a harness bug (exit 3 for a single run); in a long hunt it ends only
            // its target, reported as such, so the other targets still run.
            let hunted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                pool.install(|| hunt_one(target, mode, budget_s, args.master_seed))
            }));
            let Ok(result) = hunted else {
                rows.push(TargetRow::harness_bug(&target.name, mode));
                continue;
            };
            let result = result?;
            let repro_name = match (mode, modes.len()) {
                (Mode::Guided, 2) => "repro-guided.toml",
                _ => "repro.toml",
            };
            let repro = args.out.join(&target.name).join(repro_name);
            let row = row_of(&result, target_files, &repro, shrink_s)?;
            rows.push(row);
        }
    }
    let interrupted = crate::interrupt::requested();
    write_outputs(&args.out, args.master_seed, budget_s, interrupted, &rows)?;
    super::say(&table(&rows));
    super::say(&format!("report: {}\n", args.out.join("hunt.md").display()));
    if interrupted {
        let done: Vec<&str> = rows.iter().map(|row| row.target.as_str()).collect();
        return Err(Failure::Interrupted(format!(
            "interrupted: {} target runs done ({})",
            rows.len(),
            done.join(", ")
        )));
    }
    let killed: Vec<&str> = (rows.iter())
        .filter(|row| row.killed || row.harness_bug)
        .map(|row| row.target.as_str())
        .collect();
    if args.fail_on_find && !killed.is_empty() {
        eprintln!("--fail-on-find: killed {}", killed.join(", "));
        return Err(Failure::Violated);
    }
    Ok(())
}

fn seconds(flag: &str, text: &str) -> Result<f64, Failure> {
    crate::scenario::parse_duration_ms(text)
        .map(|ms| ms as f64 / 1000.0)
        .map_err(|e| {
            Failure::Input(format!(
                "{flag} {text:?}: expected a duration such as 60s or 5m, found {}",
                e.describe()
            ))
        })
}

/// The hunt of one target in one mode, with a progress spinner on a terminal.
fn hunt_one(
    target: &Target,
    mode: Mode,
    budget_s: f64,
    master_seed: u64,
) -> Result<HuntResult, Failure> {
    let bar = spinner(&format!("{} ({})", target.name, mode.name()));
    let stopwatch = Stopwatch::start();
    let elapsed = || stopwatch.seconds();
    let progress = |tried: u64| bar.set_message(format!("{tried} seeds"));
    let stop = crate::interrupt::requested;
    let limits = Limits {
        budget_s,
        master_seed,
        elapsed: &elapsed,
        progress: &progress,
        stop: &stop,
    };
    let result = hunt(target, mode, &limits);
    bar.finish_and_clear();
    Ok(result?)
}

fn spinner(label: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
    let template = format!("{{spinner}} {label} {{msg}} {{elapsed}}");
    if let Ok(style) = ProgressStyle::with_template(&template) {
        bar.set_style(style);
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    bar
}

/// What a hunt target runs: a policy on the elastic files or a variant on the `[leader]`
/// files, with at most one ablation of that policy's or variant's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Elastic(Policy),
    Leader(Variant),
}

impl Side {
    /// The side whose policy or variant declares `owner`'s ablations.
    fn of_owner(owner: Owner) -> Side {
        match owner {
            Owner::Safe => Side::Elastic(Policy::Safe),
            Owner::Fixed => Side::Leader(Variant::Fixed),
        }
    }
}

/// The target named `name`: a policy, a variant, or `OWNER-ABLATION` (`safe-limits`).
fn named_target(name: &str) -> Option<(Side, Option<Ablation>)> {
    if let Some(policy) = Policy::from_name(name) {
        return Some((Side::Elastic(policy), None));
    }
    if let Some(variant) = Variant::from_name(name) {
        return Some((Side::Leader(variant), None));
    }
    let (owner, ablation) = name.split_once('-')?;
    let owner = Owner::ALL.into_iter().find(|o| o.name() == owner)?;
    let ablation = declared_of(owner)
        .into_iter()
        .find(|a| a.name() == ablation)?;
    Some((Side::of_owner(owner), Some(ablation)))
}

/// Targets by name: `pr355`, `upstream`, `safe`, a leader variant (`agentk-v1`,
/// `agentk-v2`, `agentk-head`, `fixed`: [`crate::mutants::Variant`]), `safe-ablations`,
/// `fixed-ablations`, `safe-NAME`, `fixed-NAME`. Each keeps the files of its side (elastic
/// files for policies, files with `[leader]` for variants) and their paths.
pub(super) fn expand_targets(
    names: &[String],
    loaded: &[(PathBuf, Scenario)],
) -> Result<Vec<(Target, Vec<PathBuf>)>, Failure> {
    let mut targets = Vec::new();
    for name in names {
        let name = name.trim();
        let every_of = Owner::ALL
            .into_iter()
            .find(|owner| name == format!("{}-ablations", owner.name()));
        if let Some(owner) = every_of {
            for ablation in declared_of(owner) {
                let label = format!("{}-{}", owner.name(), ablation.name());
                let side = Side::of_owner(owner);
                targets.push(target(&label, side, Some(ablation), loaded)?);
            }
            continue;
        }
        let Some((side, ablation)) = named_target(name) else {
            return Err(Failure::Input(format!(
                "--targets: unknown target {name:?}; valid: {}, {}, safe-ablations, \
                 fixed-ablations, safe-NAME, fixed-NAME (NAME from `elasticsim ablations`)",
                Policy::NAMES.join(", "),
                Variant::NAMES.join(", ")
            )));
        };
        targets.push(target(name, side, ablation, loaded)?);
    }
    Ok(targets)
}

fn target(
    name: &str,
    side: Side,
    ablation: Option<Ablation>,
    loaded: &[(PathBuf, Scenario)],
) -> Result<(Target, Vec<PathBuf>), Failure> {
    let leader = matches!(side, Side::Leader(_));
    let side_files: Vec<&(PathBuf, Scenario)> = loaded
        .iter()
        .filter(|(_, s)| s.leader.is_some() == leader)
        .collect();
    let Some((_, first)) = side_files.first() else {
        let kind = if leader { "a [leader]" } else { "no [leader]" };
        return Err(Failure::Input(format!(
            "target {name}: no scenario file with {kind} section among the hunt's files"
        )));
    };
    let ablations = Ablations::of(ablation);
    let scenarios: Vec<Scenario> = side_files
        .iter()
        .map(|(_, scenario)| {
            let mut scenario = scenario.clone();
            scenario.ablations = ablations.clone();
            scenario
        })
        .collect();
    let mut settings = RunSettings::from_scenario(first);
    match side {
        Side::Elastic(policy) => settings.policy = policy,
        Side::Leader(variant) => settings.variant = Some(variant),
    }
    let files = side_files.iter().map(|(file, _)| file.clone()).collect();
    let target = Target {
        name: name.to_owned(),
        scenarios,
        settings,
    };
    Ok((target, files))
}

/// The row of one hunt; a find is shrunk into `repro` and the repro is run on its own.
fn row_of(
    result: &HuntResult,
    files: &[PathBuf],
    repro: &Path,
    shrink_s: f64,
) -> Result<TargetRow, Failure> {
    let mut row = TargetRow {
        target: result.target.clone(),
        mode: result.mode.name(),
        killed: result.find.is_some(),
        seeds_to_kill: None,
        seeds_tried: result.seeds_tried,
        wall_s_to_kill: None,
        wall_s: result.wall_s,
        invariant: None,
        repro: None,
        repro_fails: None,
        file: None,
        seed: None,
        swarm_draw: None,
        reproduce: None,
        interrupted: result.interrupted,
        harness_bug: false,
    };
    let Some(find) = &result.find else {
        return Ok(row);
    };
    let file = &files[find.candidate.scenario];
    row.seeds_to_kill = Some(find.seeds_to_kill);
    row.wall_s_to_kill = Some(find.wall_s);
    row.invariant = Some(find.invariant);
    row.file = Some(file.display().to_string());
    row.seed = Some(find.settings.seed);
    row.swarm_draw = find.candidate.draw.as_ref().map(ToString::to_string);
    row.reproduce = Some(reproduce(file, &find.settings, &find.scenario));
    row.repro_fails = Some(shrink_find(find, repro, shrink_s)?);
    row.repro = Some(repro.display().to_string());
    Ok(row)
}

/// Shrink the find into `repro` (keeping its invariant), then load the file and run it alone:
/// true when it fails that invariant.
fn shrink_find(
    find: &crate::explore::hunt::Find,
    repro: &Path,
    shrink_s: f64,
) -> Result<bool, Failure> {
    let stopwatch = Stopwatch::start();
    let out_of_time = || stopwatch.seconds() >= shrink_s;
    let outcome = crate::explore::shrink(
        &find.scenario,
        &find.settings,
        Some(find.invariant),
        &out_of_time,
    )?;
    if let Some(parent) = repro.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Failure::Internal(format!("cannot create {}: {e}", parent.display())))?;
    }
    let text = crate::scenario::to_toml(&outcome.repro);
    atomic::write_file(repro, text.as_bytes())
        .map_err(|e| Failure::Internal(format!("writing {}: {e}", repro.display())))?;
    let loaded = load(repro)?;
    let settings = RunSettings::from_scenario(&loaded);
    let rerun = crate::run::run_scenario(&loaded, settings, None, String::new())?;
    Ok(rerun.violated_ids().contains(&find.invariant))
}

fn write_outputs(
    out: &Path,
    master_seed: u64,
    budget_s: f64,
    interrupted: bool,
    rows: &[TargetRow],
) -> Result<(), Failure> {
    std::fs::create_dir_all(out)
        .map_err(|e| Failure::Internal(format!("cannot create {}: {e}", out.display())))?;
    let file = HuntFile {
        master_seed,
        budget_s,
        interrupted,
        targets: rows,
    };
    let json = serde_json::to_string_pretty(&file)
        .map_err(|e| Failure::Internal(format!("encoding hunt.json: {e}")))?;
    let written = atomic::write_file(&out.join("hunt.json"), json.as_bytes()).and_then(|()| {
        let markdown = markdown(master_seed, budget_s, interrupted, rows);
        atomic::write_file(&out.join("hunt.md"), markdown.as_bytes())
    });
    written.map_err(|e| Failure::Internal(format!("writing {}: {e}", out.display())))
}

fn markdown(master_seed: u64, budget_s: f64, interrupted: bool, rows: &[TargetRow]) -> String {
    let mut text = format!(
        "# Hunt (master seed {master_seed}, budget {budget_s:.0}s per target and mode){}\n\n",
        if interrupted { " — interrupted" } else { "" }
    );
    text.push_str("| target | mode | killed | seeds | wall s | invariant | repro |\n");
    text.push_str("|---|---|---|---:|---:|---|---|\n");
    for row in rows {
        let (seeds, wall) = match (row.seeds_to_kill, row.wall_s_to_kill) {
            (Some(seeds), Some(wall)) => (seeds.to_string(), format!("{wall:.1}")),
            _ => (
                format!("{} tried", row.seeds_tried),
                format!("{:.1}", row.wall_s),
            ),
        };
        text.push_str(&format!(
            "| {} | {} | {} | {seeds} | {wall} | {} | {} |\n",
            row.target,
            row.mode,
            match (row.killed, row.harness_bug) {
                (_, true) => "harness bug",
                (true, _) => "killed",
                _ => "survived",
            },
            row.invariant.map_or("–", |id| id.name()),
            row.repro.as_deref().unwrap_or("–"),
        ));
    }
    let finds: Vec<&TargetRow> = rows.iter().filter(|row| row.killed).collect();
    if !finds.is_empty() {
        text.push_str("\n## Reproduce\n\n");
        for row in finds {
            text.push_str(&format!(
                "- {} ({}): `{}`\n",
                row.target,
                row.mode,
                row.reproduce.as_deref().unwrap_or("")
            ));
        }
    }
    text
}

/// The terminal table: one line per target, uniform and guided side by side.
pub(super) fn table(rows: &[TargetRow]) -> String {
    let cell = |row: Option<&TargetRow>| match row {
        None => "–".to_owned(),
        Some(row) if row.harness_bug => "harness bug (panic)".to_owned(),
        Some(row) if row.killed => format!(
            "killed {:>5.1}s {:>4} seeds",
            row.wall_s_to_kill.unwrap_or(0.0),
            row.seeds_to_kill.unwrap_or(0)
        ),
        Some(row) => format!("survived {:>3} seeds", row.seeds_tried),
    };
    let mut names: Vec<&str> = Vec::new();
    for row in rows {
        if !names.contains(&row.target.as_str()) {
            names.push(&row.target);
        }
    }
    let mut text = format!(
        "{:<26} {:<24} {:<24} {}\n",
        "target", "uniform", "guided", "invariant"
    );
    for name in names {
        let of = |mode: &str| rows.iter().find(|r| r.target == name && r.mode == mode);
        let mut found: Vec<InvariantId> = [of("uniform"), of("guided")]
            .into_iter()
            .flatten()
            .filter_map(|row| row.invariant)
            .collect();
        found.dedup();
        let invariant = if found.is_empty() {
            "–".to_owned()
        } else {
            InvariantId::join(&found, " / ")
        };
        text.push_str(&format!(
            "{name:<26} {:<24} {:<24} {invariant}\n",
            cell(of("uniform")),
            cell(of("guided"))
        ));
    }
    text
}
