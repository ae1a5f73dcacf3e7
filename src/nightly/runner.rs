//! Runs the nightly's seeds in parallel (rayon) and folds them per (scenario, policy).

use crate::allocator::Policy;
use crate::report::Metrics;
use crate::run::run_scenario;
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Held while a failing seed's report folder is written (see `run_task`).
static REPORT_WRITES: Mutex<()> = Mutex::new(());

/// One run to do.
#[derive(Clone, Debug)]
pub(super) struct Task {
    /// Index of the group (scenario × policy, or regression entry) it belongs to.
    pub group: usize,
    pub file: PathBuf,
    pub scenario: usize,
    pub seed: u64,
    pub policy: Policy,
    pub variant: Option<crate::leader::Variant>,
}

/// What one run left. Kept exactly (floats as text) in a shard's `shard.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(super) struct SeedResult {
    pub group: usize,
    pub seed: u64,
    pub passed: bool,
    pub violated: Vec<crate::check::InvariantId>,
    #[serde(with = "crate::explore::exact::metrics")]
    pub metrics: Metrics,
    pub reproduce: String,
    #[serde(with = "crate::explore::exact::float")]
    pub wall_s: f64,
    /// The failing seed's report folder, relative to the nightly output folder.
    pub report: Option<String>,
}

/// The command that reruns one seed.
pub(super) fn reproduce(
    file: &Path,
    seed: u64,
    policy: Policy,
    variant: Option<crate::leader::Variant>,
) -> String {
    let mut command = format!(
        "cargo xtask sim {} --seed {seed} --policy {}",
        file.display(),
        policy.name()
    );
    if let Some(variant) = variant {
        command.push_str(&format!(" --variant {}", variant.name()));
    }
    command
}

fn run_task(task: &Task, scenarios: &[Scenario], out_dir: &Path) -> Result<SeedResult, String> {
    let scenario = &scenarios[task.scenario];
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = task.seed;
    settings.policy = task.policy;
    if task.variant.is_some() {
        settings.variant = task.variant;
    }
    let variant = settings.leader_variant(scenario);
    let command = reproduce(&task.file, task.seed, task.policy, variant);
    let stopwatch = Stopwatch::start();
    let mut outcome =
        run_scenario(scenario, settings, None, command.clone()).map_err(|e| e.to_string())?;
    outcome.info.wall_s = stopwatch.seconds();
    let passed = outcome.passed();
    let report = if passed {
        None
    } else {
        // Only failing seeds get a report folder (with plots): a nightly of thousands of
        // passing seeds writes no per-seed files.
        // A leader run's folder is named by its variant, as its case is.
        let case = variant.map_or(task.policy.name(), crate::leader::Variant::name);
        let relative = format!("{}/{case}/seed-{}", scenario.name, task.seed);
        let dir = out_dir.join(&relative);
        // A regression entry may name a seed a nightly group runs too: both tasks fail alike
        // and write the same folder, and two writers of one file share its temporary path
        // (one's rename takes the other's file). Reports are written one at a time.
        let _one_writer = REPORT_WRITES
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        crate::report::write_run(&dir, &outcome.info, &outcome.collector)
            .map_err(|e| format!("writing {}: {e}", dir.display()))?;
        Some(relative)
    };
    Ok(SeedResult {
        group: task.group,
        seed: task.seed,
        passed,
        violated: outcome.violated_ids(),
        metrics: outcome.collector.metrics(&outcome.info),
        reproduce: command,
        wall_s: outcome.info.wall_s,
        report,
    })
}

/// Run every task on `threads` workers (all cores when `None`), in task order. After an
/// interrupt ([`crate::interrupt`]) the tasks not started are left out of the results.
pub(super) fn run_all(
    tasks: &[Task],
    scenarios: &[Scenario],
    out_dir: &Path,
    threads: Option<usize>,
    progress: bool,
) -> Result<Vec<SeedResult>, String> {
    let bar = if progress {
        ProgressBar::new(tasks.len() as u64)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("nightly {bar:40} {pos}/{len} runs ({eta} left)")
            .expect("the progress template is valid"),
    );
    let mut builder = rayon::ThreadPoolBuilder::new();
    if let Some(threads) = threads {
        builder = builder.num_threads(threads);
    }
    let pool = builder
        .build()
        .map_err(|e| format!("cannot start worker threads: {e}"))?;
    let results = pool.install(|| {
        tasks
            .par_iter()
            .map(|task| {
                // After Ctrl-C no new run starts; the runs in flight finish.
                if crate::interrupt::requested() {
                    return Ok(None);
                }
                let result = run_task(task, scenarios, out_dir);
                bar.inc(1);
                result.map(Some)
            })
            .collect::<Result<Vec<_>, String>>()
            .map(|results| results.into_iter().flatten().collect())
    });
    bar.finish_and_clear();
    results
}

/// Mean of every metric over `results` (by name).
pub(super) fn means<'a>(results: impl Iterator<Item = &'a SeedResult>) -> BTreeMap<String, f64> {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut count = 0.0;
    for result in results {
        count += 1.0;
        for (name, value) in result.metrics.entries() {
            *sums.entry(name.to_owned()).or_insert(0.0) += value;
        }
    }
    if count > 0.0 {
        sums.values_mut().for_each(|sum| *sum /= count);
    }
    sums
}
