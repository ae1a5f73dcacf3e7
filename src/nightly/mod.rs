//! The nightly regression run (`elasticsim nightly`, `docs/cli.md`): every entry of
//! `scenarios/regressions/regressions.toml` first, then every scenario in `scenarios/` under
//! the policies and seed counts of `scenarios/nightly.toml`; seeds run in parallel. Per
//! (scenario, policy) the metrics' means over seeds are compared with
//! `reports/baselines/<scenario>.json` under the tolerances of `nightly.toml`.
//!
//! The run fails on any violated invariant, any regression entry whose verdict changed, and
//! any metric worse than its baseline beyond tolerance. `--update-baseline` rewrites the
//! baselines from this run instead of comparing. Outputs go to `reports/nightly/`:
//! `junit.xml`, `nightly.md`, `index.html`, one `compare` chart per scenario, and a report
//! folder (with plots) for every failing seed.
//!
//! With `--shard K/N` it runs the tasks of one shard (see `crate::explore::shard` for the
//! rule), writes its outputs for those and a `shard.json`, and leaves the baseline comparison
//! to `merge`, which judges the means over every seed as the unsharded run would.

mod baseline;
mod config;
mod junit;
mod outputs;
mod regressions;
mod runner;
mod shard;

#[cfg(test)]
mod tests;

pub(crate) use baseline::{Baseline, Regression, WALL_CLOCK_METRICS, compare};
pub use config::{NightlyConfig, ScenarioPlan, Tolerance, Worse};
#[cfg(test)]
pub(crate) use junit::{Case, Suite, junit_xml};
pub(crate) use regressions::RegressionEntry;
pub(crate) use shard::merge;

use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::explore::Shard;
use crate::leader::Variant;
use crate::scenario::Scenario;
use runner::{SeedResult, Task};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What to run and where to write.
#[derive(Clone, Debug)]
pub(crate) struct NightlyOptions {
    /// The folder of `nightly.toml`, the scenarios and `regressions/`.
    pub scenarios_dir: PathBuf,
    /// The folder of the baseline files.
    pub baselines_dir: PathBuf,
    /// Where the reports, JUnit file and summary are written.
    pub out_dir: PathBuf,
    /// Seeds per (scenario, policy): replaces the default count, caps per-scenario counts.
    pub seeds: Option<u64>,
    /// Write new baselines instead of comparing with them.
    pub update_baseline: bool,
    /// Re-run the baseline seeds and require every baseline metric exactly (`.ci/run`).
    pub check_baseline: bool,
    /// Worker threads; `None`: one per core.
    pub threads: Option<usize>,
    /// Draw a progress bar on stderr (only shown on a terminal).
    pub progress: bool,
    /// Run only this shard's tasks (`out_dir` is then the shard's own folder).
    pub shard: Option<Shard>,
}

impl NightlyOptions {
    /// A baseline run (`--update-baseline`, `--check-baseline`): the scenarios that keep a
    /// baseline only, `baseline_seeds` seeds each, no regression entries.
    fn baseline_run(&self) -> bool {
        self.update_baseline || self.check_baseline
    }
}

/// Why the nightly could not produce a verdict.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NightlyError {
    /// A scenario or `nightly.toml` is invalid (exit 2).
    #[error("{0}")]
    Input(String),
    /// A run or an output failed (exit 3).
    #[error("{0}")]
    Internal(String),
}

/// One failing seed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SeedFailure {
    /// The failing seed.
    pub seed: u64,
    /// The ids of the invariants it violated.
    pub violated: Vec<crate::check::InvariantId>,
    /// The command that reruns it alone.
    pub reproduce: String,
    /// Its report folder, relative to the output folder.
    pub report: Option<String>,
}

/// One testcase of the nightly: a (scenario, policy) or a regression entry.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct GroupOutcome {
    /// The JUnit testsuite: the scenario's name, or `regressions`.
    pub suite: String,
    /// The JUnit testcase: the policy, or the entry's label.
    pub case: String,
    /// The scenario file the group ran.
    pub scenario_file: PathBuf,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds where every invariant held.
    pub passed: u64,
    /// The seeds that violated an invariant, in seed order.
    pub failing: Vec<SeedFailure>,
    /// Metrics worse than their baseline beyond tolerance.
    pub regressions: Vec<Regression>,
    /// A regression entry whose verdict or violated ids differ from what it expects.
    pub expectation: Option<String>,
    /// Each metric's mean over the seeds, by name.
    pub means: BTreeMap<String, f64>,
    /// Wall-clock seconds the group took.
    pub wall_s: f64,
    /// Why no baseline comparison happened, if it did not.
    pub note: Option<String>,
    /// The leader-runner variant of a leader scenario's case (its rows show leader figures).
    pub variant: Option<Variant>,
}

impl GroupOutcome {
    /// Failing seeds matter only where passing is expected: a regression entry that must
    /// fail is judged by `expectation` alone.
    pub(crate) fn failed(&self) -> bool {
        let violations_count = self.suite != "regressions" && !self.failing.is_empty();
        violations_count || !self.regressions.is_empty() || self.expectation.is_some()
    }

    /// Every problem as lines: violations with reproduce commands, regressions, expectations.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut lines = Vec::new();
        lines.extend(self.expectation.clone());
        if self.suite != "regressions" {
            for failure in &self.failing {
                lines.push(format!(
                    "seed {} violated {}; reproduce: {}",
                    failure.seed,
                    crate::check::InvariantId::join(&failure.violated, ", "),
                    failure.reproduce
                ));
            }
        }
        for regression in &self.regressions {
            lines.push(format!(
                "{}; reproduce: cargo xtask nightly --seeds {}",
                regression.message(),
                self.seeds
            ));
        }
        lines
    }
}

/// Everything the nightly found.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct NightlyOutcome {
    /// One outcome per (scenario, policy) and regression entry, in run order.
    pub groups: Vec<GroupOutcome>,
    /// Problems that do not fail the nightly: skipped regression entries, scenario warnings,
    /// undrawn charts, an interruption.
    pub warnings: Vec<String>,
    /// Baseline files written by `--update-baseline`.
    pub baselines_written: Vec<PathBuf>,
    /// Stopped by Ctrl-C/SIGTERM: the line saying how many runs were done and not done.
    pub interrupted: Option<String>,
}

impl NightlyOutcome {
    /// True when any group failed: a violation, a regression or an unmet expectation.
    pub(crate) fn failed(&self) -> bool {
        self.groups.iter().any(GroupOutcome::failed)
    }
}

/// A planned group before it runs. Kept in `shard.json`, so `merge` folds the same groups.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Group {
    suite: String,
    case: String,
    file: PathBuf,
    /// Index into the loaded scenarios; only the run that loaded them uses it.
    #[serde(skip)]
    scenario: usize,
    policy: Policy,
    variant: Option<Variant>,
    seeds: Vec<u64>,
    entry: Option<RegressionEntry>,
}

/// The scenario files of `dir` (every `*.toml` but `nightly.toml`), sorted.
fn scenario_files(dir: &Path) -> Result<Vec<PathBuf>, NightlyError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| NightlyError::Input(format!("cannot read {}: {e}", dir.display())))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.is_file()
                && path
                    .extension()
                    .is_some_and(|extension| extension == "toml")
                && path.file_name().is_some_and(|name| name != "nightly.toml")
        })
        .collect();
    files.sort();
    Ok(files)
}

fn load_scenario(file: &Path, warnings: &mut Vec<String>) -> Result<Scenario, NightlyError> {
    let loaded =
        crate::scenario::load(file).map_err(|error| NightlyError::Input(error.to_string()))?;
    warnings.extend(loaded.warnings);
    Ok(loaded.scenario)
}

/// Plan the regression entries' groups (one seed each).
fn plan_regressions(
    entries: Vec<RegressionEntry>,
    scenarios: &mut Vec<Scenario>,
    warnings: &mut Vec<String>,
) -> Vec<Group> {
    let mut groups = Vec::new();
    for entry in entries {
        let scenario = match load_scenario(&entry.file, warnings) {
            Ok(scenario) => scenario,
            Err(error) => {
                warnings.push(format!("regression entry skipped: {error}"));
                continue;
            }
        };
        let policy = entry.policy.unwrap_or(scenario.plugin.policy);
        let stem = entry.file.file_stem().unwrap_or_default().to_string_lossy();
        groups.push(Group {
            suite: "regressions".to_owned(),
            case: format!("{stem} seed {} {}", entry.seed, policy.name()),
            file: entry.file.clone(),
            scenario: scenarios.len(),
            policy,
            variant: entry.variant,
            seeds: vec![entry.seed],
            entry: Some(entry),
        });
        scenarios.push(scenario);
    }
    groups
}

/// Seeds per (scenario, policy) for this run. `--seeds N` is a quick-run knob: it replaces the
/// default count and caps a scenario's own (a simulated day planned for 3 seeds stays at 3).
fn seed_count(options: &NightlyOptions, config: &NightlyConfig, plan: &ScenarioPlan) -> u64 {
    match (options.seeds, options.baseline_run()) {
        (Some(seeds), _) => plan.seeds.map_or(seeds, |planned| planned.min(seeds)),
        (None, true) => config.baseline_seeds,
        (None, false) => plan.seeds.unwrap_or(config.seeds),
    }
}

fn plan_scenarios(
    options: &NightlyOptions,
    config: &NightlyConfig,
    scenarios: &mut Vec<Scenario>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Group>, NightlyError> {
    let mut groups = Vec::new();
    for file in scenario_files(&options.scenarios_dir)? {
        let scenario = load_scenario(&file, warnings)?;
        if options.baseline_run() && !config.has_baseline(&scenario.name) {
            continue;
        }
        let plan = config
            .scenarios
            .get(&scenario.name)
            .cloned()
            .unwrap_or_default();
        let policies = plan
            .policies
            .clone()
            .unwrap_or_else(|| vec![scenario.plugin.policy]);
        let seeds: Vec<u64> = (1..=seed_count(options, config, &plan)).collect();
        // A leader scenario's case is its variant: the policy plays no part in it.
        if let (Some(leader), None) = (&scenario.leader, &plan.policies) {
            groups.push(Group {
                suite: scenario.name.clone(),
                case: leader.variant.name().to_owned(),
                file: file.clone(),
                scenario: scenarios.len(),
                policy: scenario.plugin.policy,
                variant: Some(leader.variant),
                seeds,
                entry: None,
            });
            scenarios.push(scenario);
            continue;
        }
        for policy in policies {
            groups.push(Group {
                suite: scenario.name.clone(),
                case: policy.name().to_owned(),
                file: file.clone(),
                scenario: scenarios.len(),
                policy,
                variant: None,
                seeds: seeds.clone(),
                entry: None,
            });
        }
        scenarios.push(scenario);
    }
    Ok(groups)
}

/// A regression entry's mismatch, if its run did not end as expected.
fn expectation(entry: &RegressionEntry, result: &SeedResult) -> Option<String> {
    let verdict = if result.passed { "pass" } else { "fail" };
    let ids_differ = entry
        .violated
        .as_ref()
        .is_some_and(|expected| *expected != result.violated);
    (verdict != entry.verdict || ids_differ).then(|| {
        format!(
            "expected {} [{}], got {verdict} [{}]; reproduce: {}",
            entry.verdict,
            InvariantId::join(entry.violated.as_deref().unwrap_or_default(), ", "),
            InvariantId::join(&result.violated, ", "),
            result.reproduce
        )
    })
}

fn fold_group(position: usize, group: &Group, results: &[SeedResult]) -> GroupOutcome {
    let mine: Vec<&SeedResult> = results.iter().filter(|r| r.group == position).collect();
    let failing = mine
        .iter()
        .filter(|result| !result.passed)
        .map(|result| SeedFailure {
            seed: result.seed,
            violated: result.violated.clone(),
            reproduce: result.reproduce.clone(),
            report: result.report.clone(),
        })
        .collect();
    let expectation = match (&group.entry, mine.first()) {
        (Some(entry), Some(result)) => expectation(entry, result),
        _ => None,
    };
    GroupOutcome {
        suite: group.suite.clone(),
        case: group.case.clone(),
        scenario_file: group.file.clone(),
        seeds: mine.len() as u64,
        passed: mine.iter().filter(|result| result.passed).count() as u64,
        failing,
        regressions: Vec::new(),
        expectation,
        means: runner::means(mine.iter().copied()),
        wall_s: mine.iter().map(|result| result.wall_s).sum(),
        note: None,
        variant: group.variant,
    }
}

fn tasks_of(groups: &[Group]) -> Vec<Task> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(position, group)| {
            group.seeds.iter().map(move |seed| Task {
                group: position,
                file: group.file.clone(),
                scenario: group.scenario,
                seed: *seed,
                policy: group.policy,
                variant: group.variant,
            })
        })
        .collect()
}

/// Fold every group's results into the outcome (before any baseline judgement).
fn fold(groups: &[Group], results: &[SeedResult], warnings: Vec<String>) -> NightlyOutcome {
    NightlyOutcome {
        groups: groups
            .iter()
            .enumerate()
            .map(|(position, group)| fold_group(position, group, results))
            .collect(),
        warnings,
        baselines_written: Vec::new(),
        interrupted: None,
    }
}

/// Note on the outcome and on every case that only `done` of `planned` runs ran.
fn mark_interrupted(outcome: &mut NightlyOutcome, done: usize, planned: usize) {
    let line = format!(
        "interrupted: {done} of {planned} runs done, {} not done",
        planned - done
    );
    for group in &mut outcome.groups {
        group.note = Some(format!("{line} (this case: {} seeds done)", group.seeds));
    }
    outcome.warnings.push(line.clone());
    outcome.interrupted = Some(line);
}

/// Flags that exclude each other.
fn check_flags(options: &NightlyOptions) -> Result<(), NightlyError> {
    if options.update_baseline && options.check_baseline {
        return Err(NightlyError::Input(
            "--update-baseline and --check-baseline exclude each other".to_owned(),
        ));
    }
    if options.baseline_run() && options.shard.is_some() {
        return Err(NightlyError::Input(
            "--update-baseline and --check-baseline need every seed of the run: run them \
             without --shard"
                .to_owned(),
        ));
    }
    Ok(())
}

/// Run the nightly and write its outputs. The outcome says whether it failed; errors are
/// bad input or a harness failure.
pub(crate) fn run(options: &NightlyOptions) -> Result<NightlyOutcome, NightlyError> {
    check_flags(options)?;
    let config_path = options.scenarios_dir.join("nightly.toml");
    let config_text = NightlyConfig::read_text(&config_path).map_err(NightlyError::Input)?;
    let config = match &config_text {
        Some(text) => NightlyConfig::parse(text, &config_path).map_err(NightlyError::Input)?,
        None => NightlyConfig::default(),
    };
    let mut warnings = Vec::new();
    let mut scenarios = Vec::new();
    let mut groups = Vec::new();
    if !options.baseline_run() {
        let (entries, entry_warnings) = regressions::load(&options.scenarios_dir);
        warnings.extend(entry_warnings);
        groups = plan_regressions(entries, &mut scenarios, &mut warnings);
    }
    groups.extend(plan_scenarios(
        options,
        &config,
        &mut scenarios,
        &mut warnings,
    )?);
    let (positions, tasks): (Vec<usize>, Vec<Task>) = tasks_of(&groups)
        .into_iter()
        .enumerate()
        .filter(|(position, _)| options.shard.is_none_or(|shard| shard.owns(*position)))
        .unzip();
    std::fs::create_dir_all(&options.out_dir).map_err(|e| {
        NightlyError::Internal(format!("cannot create {}: {e}", options.out_dir.display()))
    })?;
    let results = runner::run_all(
        &tasks,
        &scenarios,
        &options.out_dir,
        options.threads,
        options.progress,
    )
    .map_err(NightlyError::Internal)?;
    let mut outcome = fold(&groups, &results, warnings);
    if results.len() < tasks.len() {
        // Means over part of the seeds are not the means a baseline holds: no judgement, no
        // shard file; the tables say what ran.
        mark_interrupted(&mut outcome, results.len(), tasks.len());
        outputs::write_all(&options.out_dir, &mut outcome)?;
        return Ok(outcome);
    }
    match options.shard {
        None => outputs::judge_baselines(options, &config, &mut outcome)?,
        Some(shard) => {
            let written = shard::ShardRun {
                options,
                shard,
                config: config_text.map(|text| (config_path, text)),
                groups: &groups,
                positions: &positions,
                results: &results,
            };
            written.write(&mut outcome)?;
        }
    }
    outputs::write_all(&options.out_dir, &mut outcome)?;
    Ok(outcome)
}
