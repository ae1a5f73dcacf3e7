//! `elasticsim review`: a behaviour diff between two allocator policies on identical seeds,
//! written as the review a plugin maintainer asked for.
//!
//! Map:
//!
//! | file | owns |
//! |---|---|
//! | `tape.rs` | a run's decisions, tagged with the request each answers (a trace tap) |
//! | `align.rs` | aligning two runs' decisions by request; the first divergence |
//! | `stats.rs` | paired metric deltas over seeds, the seeded bootstrap interval, judgements |
//! | `summary.rs` | one scenario's review: clusters, new violations, metrics; `review.json` |
//! | `repro.rs` | shrinking the smallest seed of each new violation into a repro file |
//! | `cause.rs` | each row's verdict word and its cause in one sentence, invariants in words |
//! | `markdown.rs` | `review.md`: the comment to paste into the pull request |
//! | `page.rs` | `index.html` and the comparison charts |
//!
//! Base and candidate of a seed run the same scenario with the same seed: arrivals, runtimes,
//! faults and swarm draws come from per-concern random streams no policy draws from, so both
//! see the same inputs ([`inputs_text`]; the review checks it for every seed).

mod align;
mod cause;
mod markdown;
mod page;
mod repro;
mod stats;
mod summary;
mod tape;

pub(crate) use align::{Alignment, Side, align};
pub use markdown::{IN_WORDS_MAX, review_markdown, summary_paragraph, verdict_sentence};
pub(crate) use page::write_page;
pub(crate) use repro::shrink_new_violations;
pub use summary::{ReviewJson, ScenarioReview, review_json, scenario_review};
pub(crate) use tape::Tape;

use crate::ablation::Ablations;
use crate::allocator::Policy;
use crate::explore::SeedRow;
use crate::run::{RunError, run_scenario_tapped};
use crate::scenario::Scenario;
use crate::world::{RunSettings, World};
use serde::{Deserialize, Serialize};

/// One scenario under one reuse setting, as a review runs it.
#[derive(Clone, Debug)]
pub struct Group {
    /// The file as given (repro commands name it).
    pub file: String,
    /// The scenario with `enable_agent_reuse` forced to `reuse`.
    pub scenario: Scenario,
    /// Whether agent reuse is on in this group's runs.
    pub reuse: bool,
    /// The seeds to run.
    pub seeds: Vec<u64>,
    /// Rules of `safe` or fixes of `fixed` switched off in the candidate's runs only
    /// (`review --ablate`): the base stays the as-is behaviour.
    pub candidate_ablations: Ablations,
}

impl Group {
    /// `on` or `off`.
    pub(crate) fn reuse_text(&self) -> &'static str {
        reuse_text(self.reuse)
    }

    /// The scenario the candidate runs: the group's, with the candidate's ablations.
    pub(crate) fn candidate_scenario(&self) -> Scenario {
        let mut scenario = self.scenario.clone();
        scenario.ablations = self.candidate_ablations.clone();
        scenario
    }
}

/// `on` or `off`.
pub(crate) fn reuse_text(reuse: bool) -> &'static str {
    if reuse { "on" } else { "off" }
}

/// `scenario` with `enable_agent_reuse` forced.
pub fn with_reuse(scenario: &Scenario, reuse: bool) -> Scenario {
    let mut forced = scenario.clone();
    forced.plugin.enable_agent_reuse = reuse;
    forced
}

/// What a review keeps of one seed: both runs' rows and where their decisions differ.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedReview {
    /// The seed.
    pub seed: u64,
    /// The base policy's run.
    pub base: SeedRow,
    /// The candidate policy's run.
    pub candidate: SeedRow,
    /// Where their decisions first differ.
    pub alignment: Alignment,
}

/// The inputs a run of `scenario` under `settings` sees, as text: every planned arrival
/// (time, profile, runtime), every planned fault (the scenario's own and the swarm's) and the
/// swarm's draws. Equal text for base and candidate proves the two saw the same workload.
pub fn inputs_text(scenario: &Scenario, settings: &RunSettings) -> Result<String, RunError> {
    let world = World::new(scenario.clone(), settings.clone())?;
    Ok(format!(
        "arrivals {:?} {:?}\nfaults {:?}\nswarm {:?}\n",
        world.planned_arrivals(),
        world.planned_environments(),
        world.planned_faults(),
        world.swarm_drawn()
    ))
}

fn run_one(
    scenario: &Scenario,
    policy: Policy,
    seed: u64,
) -> Result<(SeedRow, Tape, String), RunError> {
    let mut settings = RunSettings::from_scenario(scenario);
    settings.policy = policy;
    settings.seed = seed;
    let inputs = inputs_text(scenario, &settings)?;
    let mut tape = Tape::new(policy.declaration());
    let outcome = run_scenario_tapped(scenario, settings, None, String::new(), Some(&mut tape))?;
    Ok((SeedRow::from_outcome(&outcome), tape, inputs))
}

/// Run `seed` of `group` under `base` and `candidate` and align their decisions. Different
/// inputs for the two runs are a harness bug.
pub fn review_seed(
    group: &Group,
    base: Policy,
    candidate: Policy,
    seed: u64,
) -> Result<SeedReview, RunError> {
    let (base_row, base_tape, base_inputs) = run_one(&group.scenario, base, seed)?;
    let candidate_scenario = group.candidate_scenario();
    let (candidate_row, candidate_tape, candidate_inputs) =
        run_one(&candidate_scenario, candidate, seed)?;
    if base_inputs != candidate_inputs {
        return Err(RunError::Internal(format!(
            "{} seed {seed}: {} and {} saw different arrivals or faults",
            group.scenario.name,
            base.name(),
            candidate.name()
        )));
    }
    let alignment = align(
        &base_tape,
        &candidate_tape,
        candidate.declaration(),
        group.reuse,
    );
    Ok(SeedReview {
        seed,
        base: base_row,
        candidate: candidate_row,
        alignment,
    })
}
