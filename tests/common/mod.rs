//! Helpers shared by the integration tests: inline scenarios, runs that keep every trace
//! record, and scratch folders.
//!
//! Each test binary uses a different subset of these helpers, so unused ones are expected.
#![allow(dead_code)]

use elasticsim::allocator::Policy;
use elasticsim::run::{RunOutcome, run_scenario};
use elasticsim::scenario::Scenario;
use elasticsim::trace::Record;
use elasticsim::world::{RunSettings, Sink, World};
use std::path::{Path, PathBuf};

/// One trace record with its time and the node that emitted it.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    pub t_ms: u64,
    pub node: String,
    pub record: Record,
}

/// A sink that keeps every record of a run, in order.
#[derive(Debug, Default)]
pub struct Recording {
    pub events: Vec<Recorded>,
}

impl Sink for Recording {
    fn record(&mut self, t_ms: u64, node: &str, record: &Record) {
        self.events.push(Recorded {
            t_ms,
            node: node.to_owned(),
            record: record.clone(),
        });
    }
}

impl Recording {
    /// Times of the records `pick` selects, in order.
    pub fn times(&self, pick: impl Fn(&Record) -> bool) -> Vec<u64> {
        self.events
            .iter()
            .filter(|e| pick(&e.record))
            .map(|e| e.t_ms)
            .collect()
    }

    /// Time of the first record `pick` selects; panics naming `what` if there is none.
    pub fn first(&self, what: &str, pick: impl Fn(&Record) -> bool) -> u64 {
        self.events
            .iter()
            .find(|e| pick(&e.record))
            .map(|e| e.t_ms)
            .unwrap_or_else(|| panic!("no {what} in the run:\n{}", self.dump()))
    }

    /// The records in `[from_ms, until_ms)` that `pick` selects.
    pub fn between(
        &self,
        from_ms: u64,
        until_ms: u64,
        pick: impl Fn(&Record) -> bool,
    ) -> Vec<&Recorded> {
        self.events
            .iter()
            .filter(|e| e.t_ms >= from_ms && e.t_ms < until_ms && pick(&e.record))
            .collect()
    }

    /// The run as text, without the noisiest records, for assertion messages.
    pub fn dump(&self) -> String {
        self.events
            .iter()
            .filter(|e| {
                !matches!(
                    e.record,
                    Record::KubeCall { .. } | Record::Sample | Record::PluginRequestDone { .. }
                )
            })
            .map(|e| format!("{:>9} {:<8} {:?}", e.t_ms, e.node, e.record))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Parse an inline scenario; a test scenario that does not load is a bug in the test.
pub fn scenario(toml: &str) -> Scenario {
    match elasticsim::scenario::parse(toml, Path::new("test.toml")) {
        Ok(loaded) => loaded.scenario,
        Err(error) => panic!("test scenario does not load: {error}\n{toml}"),
    }
}

/// Load a scenario file of the repository (path relative to the crate root).
pub fn scenario_file(relative: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    match elasticsim::scenario::load(&path) {
        Ok(loaded) => loaded.scenario,
        Err(error) => panic!("{} does not load: {error}", path.display()),
    }
}

/// The scenario's own settings with another seed.
pub fn settings(scenario: &Scenario, seed: u64) -> RunSettings {
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = seed;
    settings
}

/// Run `scenario` with `seed` and keep every record.
pub fn record_run(scenario: &Scenario, seed: u64) -> Recording {
    record_with(scenario, settings(scenario, seed))
}

/// Run `scenario` with `seed` under `policy` and keep every record with its time, in order.
pub fn records_under(scenario: &Scenario, seed: u64, policy: Policy) -> Vec<(u64, Record)> {
    let mut settings = settings(scenario, seed);
    settings.policy = policy;
    let recording = record_with(scenario, settings);
    recording
        .events
        .into_iter()
        .map(|e| (e.t_ms, e.record))
        .collect()
}

fn record_with(scenario: &Scenario, settings: RunSettings) -> Recording {
    let mut world =
        World::new(scenario.clone(), settings).unwrap_or_else(|e| panic!("the world builds: {e}"));
    let mut recording = Recording::default();
    world
        .run(&mut recording)
        .unwrap_or_else(|e| panic!("the run stays within its bounds: {e}"));
    recording
}

/// Run `scenario` with `seed` (and `policy`, if given) through the library entry point.
pub fn run_outcome(scenario: &Scenario, seed: u64, policy: Option<Policy>) -> RunOutcome {
    let mut settings = settings(scenario, seed);
    if let Some(policy) = policy {
        settings.policy = policy;
    }
    run_scenario(scenario, settings, None, String::new())
        .unwrap_or_else(|e| panic!("the run completes: {e}"))
}

/// A fresh, empty scratch folder for one test, under Cargo's temporary folder for tests.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot clear {}: {e}", dir.display()));
    }
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    dir
}

/// The pod a `PodCreated` record names, if `record` is one made by the allocator.
pub fn allocator_created(record: &Record) -> Option<&str> {
    match record {
        Record::PodCreated {
            pod,
            by: elasticsim::trace::Actor::Allocator,
            ..
        } => Some(pod),
        _ => None,
    }
}

/// A tiny nightly-sized scenario: three jobs on one node under `upstream`. `max_job_wait` is
/// the knob that makes it fail (`"1s"`) or pass (`"5m"`).
pub fn tiny_scenario_toml(name: &str, max_job_wait: &str) -> String {
    format!(
        r#"name = "{name}"
seed = 1
duration = "2m"
settle = "15m"

[cluster]
nodes = 1
pods_per_node = 10

[plugin]
policy = "upstream"

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "10s"
count = 3
spread = "5s"
profile = "small"
runtime = {{ min = "10s", max = "30s" }}

[invariants]
max_job_wait = "{max_job_wait}"
"#
    )
}

/// Let a child process run for `seconds` of wall time. This waits on another process,
/// outside any run, so the ban on sleeping inside a run does not apply.
pub fn let_run(seconds: u64) {
    #[allow(clippy::disallowed_methods)]
    std::thread::sleep(std::time::Duration::from_secs(seconds));
}

/// Send SIGINT (Ctrl-C) to a child process and wait for it to end.
#[cfg(unix)]
pub fn interrupt(child: std::process::Child) -> std::process::Output {
    let pid = child.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status();
    assert!(sent.is_ok_and(|status| status.success()));
    child.wait_with_output().expect("the child ends")
}
