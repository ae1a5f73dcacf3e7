//! `safe` keeps every invariant on every scenario in `scenarios/` (present and future, except
//! leader-only ones) for 50 seeds each; `upstream` fails only with the defects a scenario's
//! comment names on its `# upstream-defects:` line.

use elasticsim::allocator::Policy;
use elasticsim::run::run_scenario;
use elasticsim::scenario::Scenario;
use elasticsim::world::RunSettings;
use rayon::prelude::*;
use std::path::{Path, PathBuf};

const SAFE_SEEDS: std::ops::RangeInclusive<u64> = 1..=50;
const UPSTREAM_SEEDS: std::ops::RangeInclusive<u64> = 1..=10;

/// Every scenario file, sorted by name.
fn scenario_files() -> Vec<PathBuf> {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&folder)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("scenarios/ is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        // The nightly plan lives beside the scenarios but is not one.
        .filter(|path| !path.ends_with("nightly.toml"))
        .collect();
    files.sort();
    files
}

/// Scenarios with elastic-agent work: leader-only ones have no jobs, no pods and no profiles.
fn elastic_scenarios() -> Vec<(PathBuf, Scenario)> {
    scenario_files()
        .into_iter()
        .map(|path| {
            let loaded = elasticsim::scenario::load(&path).expect("every scenario file loads");
            (path, loaded.scenario)
        })
        .filter(|(_, scenario)| scenario.leader.is_none() || !scenario.jobs.is_empty())
        .filter(|(_, scenario)| !SCALE_SCENARIOS.contains(&scenario.name.as_str()))
        .collect()
}

/// Scale benchmarks: a simulated day costs seconds per seed even in release, so 50 debug
/// seeds do not fit a test suite. `cargo xtask bench` runs it, and `.ci/run` runs its own
/// seed under `safe` in release.
const SCALE_SCENARIOS: [&str; 1] = ["day"];

/// The ids of `scenario` under `policy` and `seed` that failed it.
fn failing_ids(scenario: &Scenario, policy: Policy, seed: u64) -> Vec<String> {
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = seed;
    settings.policy = policy;
    let outcome =
        run_scenario(scenario, settings, None, String::new()).expect("every run finishes");
    outcome
        .info
        .violations
        .iter()
        .map(|violation| format!("{}: {}", violation.id, violation.message))
        .collect()
}

/// The ids named on the file's `# upstream-defects:` line (`none` or absent: none).
fn upstream_defects(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("the scenario file is readable");
    text.lines()
        .find_map(|line| line.strip_prefix("# upstream-defects:"))
        .map(|list| {
            list.split(',')
                .map(|id| id.trim().to_owned())
                .filter(|id| !id.is_empty() && id != "none")
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn safe_keeps_every_invariant_on_every_scenario_for_fifty_seeds() {
    let scenarios = elastic_scenarios();
    assert!(
        scenarios.len() >= 10,
        "the defect scenarios and chaos.toml are there"
    );
    let runs: Vec<(&Path, &Scenario, u64)> = scenarios
        .iter()
        .flat_map(|(path, scenario)| SAFE_SEEDS.map(move |seed| (path.as_path(), scenario, seed)))
        .collect();
    let failures: Vec<String> = runs
        .par_iter()
        .flat_map_iter(|(path, scenario, seed)| {
            failing_ids(scenario, Policy::Safe, *seed)
                .into_iter()
                .map(move |failure| format!("{} seed {seed}: {failure}", path.display()))
        })
        .collect();
    assert!(failures.is_empty(), "safe failed:\n{}", failures.join("\n"));
}

#[test]
fn upstream_fails_only_with_the_defects_each_scenario_documents() {
    let scenarios = elastic_scenarios();
    let runs: Vec<(&Path, &Scenario, u64)> = scenarios
        .iter()
        .flat_map(|(path, scenario)| {
            UPSTREAM_SEEDS.map(move |seed| (path.as_path(), scenario, seed))
        })
        .collect();
    let undocumented: Vec<String> = runs
        .par_iter()
        .flat_map_iter(|(path, scenario, seed)| {
            let allowed = upstream_defects(path);
            failing_ids(scenario, Policy::Upstream, *seed)
                .into_iter()
                .filter(move |failure| {
                    let id = failure.split(':').next().unwrap_or_default();
                    !allowed.iter().any(|allowed_id| allowed_id == id)
                })
                .map(move |failure| format!("{} seed {seed}: {failure}", path.display()))
        })
        .collect();
    assert!(
        undocumented.is_empty(),
        "upstream failed with defects its scenario does not name:\n{}",
        undocumented.join("\n")
    );
}
