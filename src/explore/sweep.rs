//! Many seeds of one scenario, one simulation per rayon task. Nothing is shared between runs
//! but the read-only scenario, so a seed's fingerprint never depends on the thread count or on
//! which other seeds ran.

use super::exact;
use crate::check::{InvariantId, Kind};
use crate::report::Metrics;
use crate::run::{RunError, RunOutcome, run_scenario};
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// An invariant that failed in a run, with how it is judged: `{ "id": …, "kind": "always" }`
/// in `shard.json` (an unknown id or kind is an error there).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ViolatedId {
    /// The invariant's id.
    pub id: InvariantId,
    /// How the invariant is judged.
    pub kind: Kind,
}

impl ViolatedId {
    /// `safety` for an `always` invariant, `liveness` for the others (`eventually`, required
    /// `sometimes`): the same split as `RunInfo::failure_class`.
    pub(crate) fn class(&self) -> &'static str {
        if self.kind == Kind::Always {
            "safety"
        } else {
            "liveness"
        }
    }
}

/// The hazards failing violations name, sorted by number, without repeats.
fn hazard_names(violations: &[crate::check::Violation]) -> Vec<String> {
    let mut hazards: Vec<crate::check::Hazard> = violations
        .iter()
        .filter(|violation| !violation.expected)
        .filter_map(crate::check::hazard_of)
        .collect();
    hazards.sort_unstable();
    hazards.dedup();
    hazards
        .iter()
        .map(|hazard| hazard.name().to_string())
        .collect()
}

/// What a sweep keeps of one seed's run: verdict, failing ids, fingerprint and metrics.
/// Serialised exactly (floats as text) in `shard.json`, so merged tables equal unsharded ones.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedRow {
    /// The run's seed.
    pub seed: u64,
    /// `pass` or `fail`.
    pub verdict: String,
    /// `safety`, `liveness` or `both` for a failing run.
    pub failure_class: Option<String>,
    /// Failing invariants, sorted by id, without repeats.
    pub violated: Vec<ViolatedId>,
    /// The earliest failing violation's id (what `shrink` picks by default).
    pub first_violated: Option<InvariantId>,
    /// The run's trace fingerprint (SHA-256, hex).
    pub fingerprint: String,
    /// The run's metrics.
    #[serde(with = "exact::metrics")]
    pub metrics: Metrics,
    /// Every job instance's wait, ascending (for pooled percentiles): assigned instances'
    /// waits and, censored at the run's end, the waits so far of those never assigned
    /// (`metrics.waits_censored` counts them).
    pub waits_ms: Vec<u64>,
    /// Job assignments, and those to an agent that had already run a job.
    pub assigned: u64,
    /// Of `assigned`, those to an agent that had already run a job.
    pub reused: u64,
    /// The command that reruns this seed alone.
    pub reproduce: String,
    /// The leader-election variant of a leader run (`None` for an elastic-agent run).
    #[serde(default)]
    pub variant: Option<crate::leader::Variant>,
    /// Every failover's duration, ascending (for pooled percentiles; empty without a leader).
    #[serde(default)]
    pub failover_ms: Vec<u64>,
    /// A leader run's defects: the hazards its failing violations name (`H8`), sorted,
    /// without repeats (`docs/policies.md`, "Hazards"); empty for a pass or an elastic run.
    #[serde(default)]
    pub hazards: Vec<String>,
}

impl SeedRow {
    /// Fold a finished run into a row.
    pub(crate) fn from_outcome(outcome: &RunOutcome) -> SeedRow {
        let info = &outcome.info;
        let mut violated: Vec<ViolatedId> = info
            .violations
            .iter()
            .map(|violation| ViolatedId {
                id: violation.id,
                kind: violation.kind,
            })
            .collect();
        violated.sort_unstable();
        violated.dedup_by_key(|violated| violated.id);
        let end_ms = outcome.collector.end_ms();
        let mut waits_ms: Vec<u64> = outcome
            .collector
            .jobs()
            .filter_map(|row| row.wait_ms().or_else(|| row.censored_wait_ms(end_ms)))
            .collect();
        waits_ms.sort_unstable();
        let (assigned, reused) = outcome.collector.assignments();
        SeedRow {
            seed: info.seed,
            verdict: info.verdict.clone(),
            failure_class: info.failure_class.clone(),
            violated,
            first_violated: first_violated(outcome),
            fingerprint: info.fingerprint.clone(),
            metrics: outcome.collector.metrics(info),
            waits_ms,
            assigned,
            reused,
            reproduce: info.reproduce.clone(),
            variant: info.variant,
            failover_ms: outcome.collector.failover_durations_ms(),
            hazards: hazard_names(&info.violations),
        }
    }

    /// True if no invariant failed.
    pub(crate) fn passed(&self) -> bool {
        self.verdict == "pass"
    }

    /// The failing ids, sorted.
    pub(crate) fn violated_ids(&self) -> Vec<InvariantId> {
        self.violated.iter().map(|violated| violated.id).collect()
    }
}

/// The id of the earliest failing violation (the first listed among equal times).
pub fn first_violated(outcome: &RunOutcome) -> Option<InvariantId> {
    outcome
        .info
        .violations
        .iter()
        .enumerate()
        .min_by_key(|(index, violation)| (violation.at_ms, *index))
        .map(|(_, violation)| violation.id)
}

/// One sweep: a scenario, the run settings every seed shares (their seed is replaced), the
/// seeds (a whole `SeedRange`, or one shard's part of it) and the worker count (`None`: one
/// per core).
pub struct SweepPlan<'a> {
    /// The scenario every seed runs.
    pub scenario: &'a Scenario,
    /// Policy, variant and limits (the seed is replaced per run).
    pub settings: RunSettings,
    /// The seeds to run, in order.
    pub seeds: Vec<u64>,
    /// Worker threads; `None`: one per core.
    pub threads: Option<usize>,
}

/// Called by the worker that ran a seed, as soon as it finished: write a failing seed's
/// report folder, tick a progress bar. An error ends the sweep.
pub type Finished<'a> = dyn Fn(&RunOutcome) -> Result<(), RunError> + Sync + 'a;

/// The command that reruns one seed, given its settings.
pub type Reproduce<'a> = dyn Fn(&RunSettings) -> String + Sync + 'a;

/// Run every seed of `plan` on a local rayon pool; rows come back in seed order. The first
/// run or hook error (in seed order) ends the sweep. Once an interrupt was requested
/// ([`crate::interrupt`]) no further seed starts: the rows are those of the seeds that ran.
pub fn sweep(
    plan: &SweepPlan<'_>,
    reproduce: &Reproduce<'_>,
    finished: &Finished<'_>,
) -> Result<Vec<SeedRow>, RunError> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(plan.threads.unwrap_or(0))
        .build()
        .map_err(|e| RunError::Internal(format!("cannot start the worker pool: {e}")))?;
    pool.install(|| {
        plan.seeds
            .par_iter()
            .map(|&seed| {
                if crate::interrupt::requested() {
                    return Ok(None);
                }
                let mut settings = plan.settings.clone();
                settings.seed = seed;
                let command = reproduce(&settings);
                let stopwatch = Stopwatch::start();
                let mut outcome = run_scenario(plan.scenario, settings, None, command)?;
                outcome.info.wall_s = stopwatch.seconds();
                finished(&outcome)?;
                Ok(Some(SeedRow::from_outcome(&outcome)))
            })
            .collect::<Result<Vec<Option<SeedRow>>, RunError>>()
            .map(|rows| rows.into_iter().flatten().collect())
    })
}
