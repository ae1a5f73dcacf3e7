//! Shrinking a failing run: materialise it as an explicit scenario, delta-debug its jobs and
//! faults, then simplify what is left (shorter phases, smaller counts, shorter faults), while
//! the same invariant still fails.
//!
//! A candidate is accepted only if, written with `scenario::to_toml` and parsed back, it
//! loads, runs, violates the target invariant and violates nothing the starting point did not
//! (so a repro never gains a failure its original did not have, e.g. from a settle phase cut
//! too short). Every candidate runs with the seed, policy and variant pinned in the file, so
//! the final `repro.toml` fails on its own.

use super::ddmin::{bisect_down, ddmin};
use super::materialise::{Size, materialise, pin};
use super::sweep::first_violated;
use crate::check::{InvariantId, Kind};
use crate::run::{RunError, run_scenario};
use crate::scenario::{
    ElasticFault, FaultKind, JobSource, LeaderFault, NetworkFault, Scenario, to_toml,
};
use crate::world::RunSettings;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// What a shrink produced.
#[derive(Clone, Debug)]
pub struct ShrinkOutcome {
    /// The invariant the repro fails.
    pub invariant: InvariantId,
    /// The minimised, pinned scenario (write it with `scenario::to_toml`).
    pub repro: Scenario,
    /// The size of the scenario as found.
    pub original: Size,
    /// The size of the repro.
    pub shrunk: Size,
    /// Simulations run while shrinking (cached candidates are not rerun).
    pub runs: u64,
    /// True when the explicit scenario lost the failure and only the scenario's own entries
    /// (generators, explicit faults; swarm kept) were shrunk.
    pub fallback: bool,
    /// True when the time budget ran out before the reductions finished.
    pub stopped_early: bool,
}

/// Shrink the run of `scenario` under `settings`. `invariant` picks the id to keep failing
/// (default: the earliest failing violation); `out_of_time` is polled between runs.
/// Errors: the run passes or does not violate `invariant` (input), or the pinned scenario
/// stops failing (a harness bug: determinism broke).
pub fn shrink(
    scenario: &Scenario,
    settings: &RunSettings,
    invariant: Option<InvariantId>,
    out_of_time: &dyn Fn() -> bool,
) -> Result<ShrinkOutcome, RunError> {
    let original_run = run_scenario(scenario, settings.clone(), None, String::new())?;
    let violated = original_run.violated_ids();
    let target = match invariant {
        Some(id) if violated.contains(&id) => id,
        Some(id) => {
            return Err(RunError::Input(format!(
                "seed {} does not violate {id}; it violates: {}",
                settings.seed,
                list_or_nothing(&violated)
            )));
        }
        None => first_violated(&original_run).ok_or_else(|| {
            RunError::Input(format!("seed {} passes: nothing to shrink", settings.seed))
        })?,
    };
    let liveness = original_run
        .info
        .violations
        .iter()
        .any(|violation| violation.id == target && violation.kind != Kind::Always);
    let allowed = violated.iter().copied().collect();
    let mut checker = Candidates::new(target, allowed);
    let explicit = materialise(scenario, settings)?;
    let (mut current, fallback) = if checker.fails(&explicit) {
        (explicit, false)
    } else {
        let pinned = pin(scenario, settings);
        if !checker.fails(&pinned) {
            return Err(RunError::Internal(format!(
                "the scenario with seed {} pinned no longer fails {target}: a determinism bug",
                settings.seed
            )));
        }
        (pinned, true)
    };
    reduce_lists(&mut checker, &mut current, out_of_time);
    simplify(&mut checker, &mut current, liveness, out_of_time);
    reduce_lists(&mut checker, &mut current, out_of_time);
    let stopped_early = out_of_time();
    current.name = format!("{}-repro", scenario.name);
    current.description = format!(
        "shrunk from {} seed {} (policy {}): fails {target}",
        scenario.name,
        settings.seed,
        settings.policy.name()
    );
    let shrunk_settings = RunSettings::from_scenario(&current);
    Ok(ShrinkOutcome {
        invariant: target,
        original: Size::of(scenario, settings)?,
        shrunk: Size::of(&current, &shrunk_settings)?,
        repro: current,
        runs: checker.runs,
        fallback,
        stopped_early,
    })
}

fn list_or_nothing(ids: &[InvariantId]) -> String {
    if ids.is_empty() {
        "nothing".to_owned()
    } else {
        let names: Vec<&str> = ids.iter().map(|id| id.name()).collect();
        names.join(", ")
    }
}

/// Judges candidates, with a cache keyed by the candidate's TOML text.
struct Candidates {
    target: InvariantId,
    allowed: BTreeSet<InvariantId>,
    cache: BTreeMap<String, bool>,
    runs: u64,
}

impl Candidates {
    fn new(target: InvariantId, allowed: BTreeSet<InvariantId>) -> Candidates {
        Candidates {
            target,
            allowed,
            cache: BTreeMap::new(),
            runs: 0,
        }
    }

    fn fails(&mut self, candidate: &Scenario) -> bool {
        let text = to_toml(candidate);
        if let Some(&known) = self.cache.get(&text) {
            return known;
        }
        self.runs += 1;
        let verdict = self.judge(&text);
        self.cache.insert(text, verdict);
        verdict
    }

    /// Load the text as a file would be loaded and run it with its own pinned settings.
    fn judge(&self, text: &str) -> bool {
        let Ok(loaded) = crate::scenario::parse(text, Path::new("repro.toml")) else {
            return false;
        };
        let settings = RunSettings::from_scenario(&loaded.scenario);
        let Ok(outcome) = run_scenario(&loaded.scenario, settings, None, String::new()) else {
            return false;
        };
        let ids = outcome.violated_ids();
        ids.contains(&self.target) && ids.iter().all(|id| self.allowed.contains(id))
    }
}

fn reduce_lists(checker: &mut Candidates, current: &mut Scenario, out_of_time: &dyn Fn() -> bool) {
    let base = current.clone();
    current.jobs = ddmin(
        base.jobs.clone(),
        &mut |jobs| {
            let mut candidate = base.clone();
            candidate.jobs = jobs.to_vec();
            checker.fails(&candidate)
        },
        out_of_time,
    );
    let base = current.clone();
    current.faults = ddmin(
        base.faults.clone(),
        &mut |faults| {
            let mut candidate = base.clone();
            candidate.faults = faults.to_vec();
            checker.fails(&candidate)
        },
        out_of_time,
    );
}

const SECOND_MS: u64 = 1_000;

/// Shorter phases, smaller fault counts, shorter faults. A liveness target keeps its settle
/// phase (cutting it would make "never converged" trivially true) and only loses the idle
/// tail of its safety phase; a safety target's settle phase stops at ART + PING.
fn simplify(
    checker: &mut Candidates,
    current: &mut Scenario,
    liveness: bool,
    out_of_time: &dyn Fn() -> bool,
) {
    let floor_ms = (last_event_ms(current) + 1).div_ceil(SECOND_MS) * SECOND_MS;
    if liveness {
        let mut candidate = current.clone();
        candidate.duration_ms = floor_ms.min(current.duration_ms);
        if checker.fails(&candidate) {
            *current = candidate;
        }
    } else {
        shrink_number(checker, current, out_of_time, floor_ms, |s| {
            &mut s.duration_ms
        });
        // Below ART + PING the parser warns that the settle phase is too short for the
        // eventually-invariants, so a repro stops there and loads without warnings.
        let settle_floor_ms =
            current.plugin.auto_register_timeout_ms + current.server.server_ping_interval_ms;
        let settle_floor_ms = settle_floor_ms.min(current.settle_ms);
        shrink_number(checker, current, out_of_time, settle_floor_ms, |s| {
            &mut s.settle_ms
        });
    }
    for index in 0..current.faults.len() {
        for knob in [Knob::Count, Knob::Length] {
            let Some(value) = knob.get(&current.faults[index].kind) else {
                continue;
            };
            let (lower, step) = knob.bounds(&current.faults[index].kind);
            let base = current.clone();
            let smallest = bisect_down(
                value,
                lower,
                step,
                &mut |value| {
                    let mut candidate = base.clone();
                    knob.set(&mut candidate.faults[index].kind, value);
                    checker.fails(&candidate)
                },
                out_of_time,
            );
            knob.set(&mut current.faults[index].kind, smallest);
        }
    }
}

fn shrink_number(
    checker: &mut Candidates,
    current: &mut Scenario,
    out_of_time: &dyn Fn() -> bool,
    lower: u64,
    field: fn(&mut Scenario) -> &mut u64,
) {
    let base = current.clone();
    let value = *field(&mut current.clone());
    let smallest = bisect_down(
        value,
        lower,
        SECOND_MS,
        &mut |value| {
            let mut candidate = base.clone();
            *field(&mut candidate) = value;
            checker.fails(&candidate)
        },
        out_of_time,
    );
    *field(current) = smallest;
}

/// When the last job arrives or the last fault ends (its start plus its length).
fn last_event_ms(scenario: &Scenario) -> u64 {
    let jobs = scenario.jobs.iter().map(|job| match job {
        JobSource::Single { at_ms, .. } => *at_ms,
        JobSource::Burst {
            at_ms, spread_ms, ..
        } => at_ms + spread_ms,
        JobSource::Poisson { until_ms, .. } => *until_ms,
        JobSource::Trace { .. } => scenario.duration_ms,
    });
    let faults = scenario
        .faults
        .iter()
        .map(|fault| fault.at_ms + Knob::Length.get(&fault.kind).unwrap_or(0));
    jobs.chain(faults).max().unwrap_or(0)
}

/// A number in a fault that can be made smaller.
#[derive(Clone, Copy)]
enum Knob {
    /// How many pods, nodes or jobs it hits.
    Count,
    /// How long it lasts (downtime, `for`, delay; a burst's spread).
    Length,
}

/// The count and the length of `kind`, where it has them (a burst has both).
fn knob_fields(kind: &mut FaultKind) -> (Option<&mut u32>, Option<&mut u64>) {
    use {ElasticFault as E, LeaderFault as L, NetworkFault as N};
    match kind {
        FaultKind::Elastic(
            E::PodDelete { count, .. }
            | E::ContainerRestart { count, .. }
            | E::PodFail { count, .. }
            | E::NodeLoss { count, .. }
            | E::NodeAdd { count }
            | E::JobCancel { count, .. },
        ) => (Some(count), None),
        FaultKind::Elastic(E::Burst {
            count, spread_ms, ..
        }) => (Some(count), Some(spread_ms)),
        FaultKind::Elastic(E::ServerCrash { downtime_ms })
        | FaultKind::Leader(
            L::ReplicaCrash { downtime_ms, .. } | L::ReplicaStop { downtime_ms, .. },
        ) => (None, Some(downtime_ms)),
        FaultKind::Network(N::Partition { for_ms, .. } | N::ApiOutage { for_ms, .. })
        | FaultKind::Leader(L::ReplicaPause { for_ms, .. }) => (None, Some(for_ms)),
        FaultKind::Leader(L::CallbackDelay { delay_ms, .. }) => (None, Some(delay_ms)),
        FaultKind::Elastic(E::ProfileEdit { .. } | E::ClusterProfileEdit { .. })
        | FaultKind::Leader(L::ClockDrift { .. } | L::LeaseDelete) => (None, None),
    }
}

impl Knob {
    fn get(self, kind: &FaultKind) -> Option<u64> {
        let mut kind = kind.clone();
        let (count, length) = knob_fields(&mut kind);
        match self {
            Knob::Count => count.map(|count| u64::from(*count)),
            Knob::Length => length.map(|length| *length),
        }
    }

    fn set(self, kind: &mut FaultKind, value: u64) {
        let name = kind.name();
        let (count, length) = knob_fields(kind);
        match (self, count, length) {
            (Knob::Count, Some(count), _) => {
                *count = u32::try_from(value).expect("counts only ever shrink from a u32");
            }
            (Knob::Length, _, Some(length)) => *length = value,
            (knob, _, _) => panic!("{name} has no {} to set", knob.name()),
        }
    }

    /// The floor and the step of the bisection.
    fn bounds(self, kind: &FaultKind) -> (u64, u64) {
        match self {
            Knob::Count => (1, 1),
            // A burst's spread may shrink to nothing (its jobs at once).
            Knob::Length if matches!(kind, FaultKind::Elastic(ElasticFault::Burst { .. })) => {
                (0, SECOND_MS)
            }
            Knob::Length => (SECOND_MS, SECOND_MS),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Knob::Count => "count",
            Knob::Length => "length",
        }
    }
}
