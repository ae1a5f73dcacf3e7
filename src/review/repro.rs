//! Shrunk repros of new violations: the smallest seed of each, minimised with `shrink` under
//! a budget of [`SHRINK_RUNS`] candidate runs (a count, not wall time, so a review and a merge
//! of its shards write the same repro). A seed whose run took more than [`SHRINK_EVENTS_MAX`]
//! events is written pinned but not shrunk (each shrink step would cost a run that long); the
//! review says how to shrink it by hand.

use super::ScenarioReview;
use super::reuse_text;
use crate::allocator::Policy;
use crate::check::InvariantId;
use crate::explore::{pin, shrink};
use crate::scenario::{Scenario, to_toml};
use crate::world::RunSettings;
use std::sync::atomic::{AtomicU64, Ordering};

/// How many times the shrinker may ask whether its budget is spent (about one run each).
pub(crate) const SHRINK_RUNS: u64 = 12;

/// Runs with more events than this are pinned, not shrunk.
pub(crate) const SHRINK_EVENTS_MAX: u64 = 200_000;

/// A new violation's repro.
#[derive(Clone, Debug, PartialEq)]
pub struct Repro {
    /// The new violation's invariant id.
    pub invariant: InvariantId,
    /// The smallest seed that showed it.
    pub seed: u64,
    /// The file's name inside the review's `repro/` folder.
    pub file_name: String,
    /// The repro scenario (pinned: seed, policy and reuse are in the file); `None` when the
    /// shrink failed, with the reason in `error`.
    pub toml: Option<String>,
    /// Why the shrink failed, when it did.
    pub error: Option<String>,
    /// `jobs 40 → 3, faults 0 → 0`.
    pub size: String,
}

impl Repro {
    /// The command that runs the repro, given the folder the review wrote.
    pub(crate) fn command(&self, out: &str) -> String {
        format!("cargo xtask sim {out}/repro/{}", self.file_name)
    }
}

/// Shrink the smallest seed of each new violation of `review` (`scenario` with its reuse
/// forced, run under `candidate`); `events` gives a seed's candidate run length.
pub(crate) fn shrink_new_violations(
    review: &ScenarioReview,
    scenario: &Scenario,
    candidate: Policy,
    events: &dyn Fn(u64) -> u64,
) -> Vec<Repro> {
    review
        .new_violations
        .iter()
        .filter_map(|(&id, seeds)| Some((id, *seeds.first()?)))
        .map(|(id, seed)| shrink_one(review, scenario, candidate, id, (seed, events(seed))))
        .collect()
}

fn shrink_one(
    review: &ScenarioReview,
    scenario: &Scenario,
    candidate: Policy,
    id: InvariantId,
    (seed, events): (u64, u64),
) -> Repro {
    let file_name = format!(
        "{}-reuse-{}-{id}-seed-{seed}.toml",
        review.scenario,
        reuse_text(review.reuse)
    );
    let mut repro = Repro {
        invariant: id,
        seed,
        file_name,
        toml: None,
        error: None,
        size: String::new(),
    };
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = seed;
    settings.policy = candidate;
    if events > SHRINK_EVENTS_MAX {
        repro.size = format!(
            "not shrunk: {events} events; `cargo xtask shrink {} --seed {seed} --policy {}` \
             shrinks it",
            review.file,
            candidate.name()
        );
        repro.toml = Some(to_toml(&pin(scenario, &settings)));
        return repro;
    }
    let polls = AtomicU64::new(0);
    let out_of_budget = || polls.fetch_add(1, Ordering::Relaxed) >= SHRINK_RUNS;
    match shrink(scenario, &settings, Some(id), &out_of_budget) {
        Ok(outcome) => {
            repro.size = format!(
                "jobs {} → {}, faults {} → {}",
                outcome.original.jobs,
                outcome.shrunk.jobs,
                outcome.original.faults,
                outcome.shrunk.faults
            );
            repro.toml = Some(to_toml(&outcome.repro));
        }
        Err(error) => repro.error = Some(error.to_string()),
    }
    repro
}
