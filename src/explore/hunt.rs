//! Hunting one target: run seeds (or guided swarm draws) of generic scenarios until one
//! violates an invariant or the wall-clock budget is spent.
//!
//! Candidates are made in batches of [`BATCH`] (a constant, so the search does not depend on
//! the thread count), run in parallel, and judged in candidate order: the first failing
//! candidate of a batch is the find (for a mutant, only if the unmutated policy or variant
//! passes the same candidate). Uniform mode walks seeds in order from the master seed.
//! Guided mode keeps a corpus of swarm draws that reached new coverage
//! ([`super::coverage`]) and derives new draws from them by mutation; every choice comes
//! from one generator seeded by the master seed and the target's name, so a guided hunt is
//! itself reproducible. Wall time is measured by the caller (`elapsed`), outside every run.

use super::coverage::Coverage;
use crate::check::InvariantId;
use crate::run::{RunError, run_scenario, run_scenario_tapped};
use crate::scenario::{DrawKind, FaultType, Scenario, SwarmDraw};
use crate::world::{RunSettings, seed_selection};
use rayon::prelude::*;
use std::collections::BTreeSet;

/// Candidates per batch.
pub(crate) const BATCH: usize = 8;

/// How a target is searched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Seeds in order from the master seed, each with its own swarm draw.
    Uniform,
    /// Swarm draws mutated from a corpus of draws that reached new coverage.
    Guided,
}

impl Mode {
    /// The mode as the CLI and reports spell it: `uniform` or `guided`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Uniform => "uniform",
            Mode::Guided => "guided",
        }
    }
}

/// What is hunted: scenarios (already with the target's ablations) and the settings they run
/// under (policy, variant; the seed is replaced per candidate).
pub struct Target {
    /// The target's name, as the hunt's tables show it.
    pub name: String,
    /// The scenarios candidates are drawn from, with the target's ablations.
    pub scenarios: Vec<Scenario>,
    /// Policy, variant and limits of every run (the seed is replaced per candidate).
    pub settings: RunSettings,
}

impl Target {
    /// A mutant (its scenarios carry ablations) is killed only by a candidate the unmutated
    /// policy or variant passes: a failure both share is the scenario's, not the rule's.
    fn is_mutant(&self) -> bool {
        self.scenarios
            .iter()
            .any(|scenario| !scenario.ablations.is_empty())
    }
}

/// One candidate run: which scenario, which seed, which swarm draw (None: the seed's own).
#[derive(Clone, Debug, PartialEq)]
pub struct Candidate {
    /// Index into the target's `scenarios`.
    pub scenario: usize,
    /// The run's seed.
    pub seed: u64,
    /// The swarm draw given to the run; `None`: the seed draws its own.
    pub draw: Option<SwarmDraw>,
}

/// The first violation found.
#[derive(Clone, Debug)]
pub struct Find {
    /// The candidate that failed.
    pub candidate: Candidate,
    /// Candidates run up to and including the find, in candidate order.
    pub seeds_to_kill: u64,
    /// Wall-clock seconds from the hunt's start to the find.
    pub wall_s: f64,
    /// The invariant that failed first in the run.
    pub invariant: InvariantId,
    /// The scenario as run (the draw written in), and its settings.
    pub scenario: Scenario,
    /// The run settings, with the candidate's seed.
    pub settings: RunSettings,
}

/// How a hunt of one target ended.
#[derive(Clone, Debug)]
pub struct HuntResult {
    /// The target's name.
    pub target: String,
    /// How the target was searched.
    pub mode: Mode,
    /// The first violation found, if any.
    pub find: Option<Find>,
    /// Candidates run (all of them, to the end of the last batch).
    pub seeds_tried: u64,
    /// Wall-clock seconds the hunt took.
    pub wall_s: f64,
    /// Guided only: corpus size and distinct features at the end.
    pub corpus: usize,
    /// Guided only: distinct coverage features at the end.
    pub features: usize,
    /// True when a stop was requested (Ctrl-C) before a find or the budget.
    pub interrupted: bool,
}

/// The limits of one hunt.
pub struct Limits<'a> {
    /// Wall-clock seconds the hunt may spend on this target.
    pub budget_s: f64,
    /// The seed uniform mode starts from and guided mode's generator derives from.
    pub master_seed: u64,
    /// Seconds since this target's hunt started (measured by the caller).
    pub elapsed: &'a (dyn Fn() -> f64 + Sync),
    /// Called after each batch with the candidates run so far.
    pub progress: &'a (dyn Fn(u64) + Sync),
    /// True once the hunt should stop (Ctrl-C); checked between batches.
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// One run's verdict (first failing invariant) and, in guided mode, its coverage.
struct Ran {
    failed: Option<InvariantId>,
    features: BTreeSet<String>,
}

/// Hunt `target` in `mode` within `limits`.
pub fn hunt(target: &Target, mode: Mode, limits: &Limits<'_>) -> Result<HuntResult, RunError> {
    let mut search = Search::new(target, mode, limits.master_seed);
    let mut tried = 0u64;
    loop {
        if limits.stop() || (limits.elapsed)() >= limits.budget_s {
            return Ok(search.result(target, mode, None, tried, limits));
        }
        let batch: Vec<Candidate> = (0..BATCH).map(|_| search.next()).collect();
        let ran = batch
            .par_iter()
            .map(|candidate| run_candidate(target, candidate, mode))
            .collect::<Result<Vec<Ran>, RunError>>()?;
        for (candidate, ran) in batch.into_iter().zip(ran) {
            tried += 1;
            if let Some(invariant) = ran.failed {
                let find = search.find(target, candidate, tried, invariant, limits);
                (limits.progress)(tried);
                return Ok(search.result(target, mode, Some(find), tried, limits));
            }
            search.learn(candidate, ran.features);
        }
        (limits.progress)(tried);
    }
}

impl Limits<'_> {
    fn stop(&self) -> bool {
        (self.stop)()
    }
}

/// The scenario a candidate runs: the target's, with the candidate's draw written in.
pub(crate) fn candidate_scenario(target: &Target, candidate: &Candidate) -> Scenario {
    let mut scenario = target.scenarios[candidate.scenario].clone();
    if candidate.draw.is_some() {
        scenario.swarm.draw = candidate.draw.clone();
    }
    scenario
}

fn run_candidate(target: &Target, candidate: &Candidate, mode: Mode) -> Result<Ran, RunError> {
    let scenario = candidate_scenario(target, candidate);
    let mut settings = target.settings.clone();
    settings.seed = candidate.seed;
    let (outcome, features) = match mode {
        Mode::Uniform => (
            run_scenario(&scenario, settings, None, String::new())?,
            BTreeSet::new(),
        ),
        Mode::Guided => {
            let mut coverage = Coverage::default();
            let outcome = run_scenario_tapped(
                &scenario,
                settings,
                None,
                String::new(),
                Some(&mut coverage),
            )?;
            (outcome, coverage.features())
        }
    };
    let mut failed = super::first_violated(&outcome);
    if failed.is_some() && target.is_mutant() {
        let mut control = scenario.clone();
        control.ablations = crate::ablation::Ablations::none();
        let mut settings = target.settings.clone();
        settings.seed = candidate.seed;
        if !run_scenario(&control, settings, None, String::new())?.passed() {
            failed = None;
        }
    }
    Ok(Ran { failed, features })
}

/// The candidate generator and, in guided mode, the corpus and the coverage seen so far.
struct Search {
    mode: Mode,
    scenarios: usize,
    count: u64,
    base_seed: u64,
    random: SplitMix,
    corpus: Vec<Candidate>,
    seen: BTreeSet<String>,
    /// The kinds each scenario's swarm may draw from (for mutation).
    kinds: Vec<Vec<FaultType>>,
    /// Seeds' own draws, as starting points (scenario index, seed) → draw.
    selections: Vec<Scenario>,
}

impl Search {
    fn new(target: &Target, mode: Mode, master_seed: u64) -> Search {
        Search {
            mode,
            scenarios: target.scenarios.len().max(1),
            count: 0,
            base_seed: master_seed.saturating_sub(1).saturating_mul(1_000_003) + 1,
            random: SplitMix::new(master_seed ^ name_hash(&target.name)),
            corpus: Vec::new(),
            seen: BTreeSet::new(),
            kinds: target
                .scenarios
                .iter()
                .map(|s| {
                    if s.swarm.enabled {
                        s.swarm.kinds.clone()
                    } else {
                        Vec::new()
                    }
                })
                .collect(),
            selections: target.scenarios.clone(),
        }
    }

    /// The next candidate: uniform walks seeds in order; guided draws fresh seeds a quarter
    /// of the time (and while the corpus is empty), else mutates a corpus entry.
    fn next(&mut self) -> Candidate {
        let k = self.count;
        self.count += 1;
        let scenario = (k % self.scenarios as u64) as usize;
        if self.mode == Mode::Uniform {
            return Candidate {
                scenario,
                seed: self.base_seed + k / self.scenarios as u64,
                draw: None,
            };
        }
        if self.corpus.is_empty() || self.random.below(4) == 0 {
            return Candidate {
                scenario,
                seed: 1 + self.random.below(1_000_000_000),
                draw: None,
            };
        }
        let parent = self.corpus[self.random.below(self.corpus.len() as u64) as usize].clone();
        self.mutate(parent)
    }

    fn mutate(&mut self, parent: Candidate) -> Candidate {
        let kinds = &self.kinds[parent.scenario];
        let mut draw = parent
            .draw
            .clone()
            .unwrap_or_else(|| seed_selection(&self.selections[parent.scenario], parent.seed));
        let steps = 1 + self.random.below(3);
        for _ in 0..steps {
            match self.random.below(4) {
                0 if !kinds.is_empty() => {
                    let kind = kinds[self.random.below(kinds.len() as u64) as usize];
                    let weight = draw.weights.entry(DrawKind(kind)).or_insert(0);
                    *weight = if *weight == 0 {
                        100 + 25 * self.random.below(13) as u32
                    } else {
                        0
                    };
                }
                1 if !kinds.is_empty() => {
                    let kind = kinds[self.random.below(kinds.len() as u64) as usize];
                    let weight = draw.weights.entry(DrawKind(kind)).or_insert(100);
                    *weight = if self.random.below(2) == 0 {
                        (*weight * 2).min(1_600)
                    } else {
                        (*weight / 2).max(25)
                    };
                }
                2 => {
                    draw.interval_pct = if self.random.below(2) == 0 {
                        (draw.interval_pct * 3 / 2).min(400)
                    } else {
                        (draw.interval_pct * 2 / 3).max(10)
                    };
                }
                _ => {}
            }
        }
        let seed = if self.random.below(2) == 0 {
            parent.seed
        } else {
            1 + self.random.below(1_000_000_000)
        };
        Candidate {
            scenario: parent.scenario,
            seed,
            draw: (!kinds.is_empty()).then_some(draw),
        }
    }

    /// Keep a candidate that reached a feature not seen before.
    fn learn(&mut self, candidate: Candidate, features: BTreeSet<String>) {
        let before = self.seen.len();
        self.seen.extend(features);
        if self.seen.len() > before && self.mode == Mode::Guided {
            self.corpus.push(candidate);
        }
    }

    fn find(
        &self,
        target: &Target,
        candidate: Candidate,
        tried: u64,
        invariant: InvariantId,
        limits: &Limits<'_>,
    ) -> Find {
        let scenario = candidate_scenario(target, &candidate);
        let mut settings = target.settings.clone();
        settings.seed = candidate.seed;
        Find {
            candidate,
            seeds_to_kill: tried,
            wall_s: (limits.elapsed)(),
            invariant,
            scenario,
            settings,
        }
    }

    fn result(
        &self,
        target: &Target,
        mode: Mode,
        find: Option<Find>,
        tried: u64,
        limits: &Limits<'_>,
    ) -> HuntResult {
        HuntResult {
            target: target.name.clone(),
            mode,
            interrupted: find.is_none() && limits.stop(),
            find,
            seeds_tried: tried,
            wall_s: (limits.elapsed)(),
            corpus: self.corpus.len(),
            features: self.seen.len(),
        }
    }
}

/// SplitMix64: a tiny, documented generator, enough for choosing candidates.
struct SplitMix(u64);

impl SplitMix {
    fn new(seed: u64) -> SplitMix {
        SplitMix(seed)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound.max(1)
    }
}

/// FNV-1a of a target name, so each target's guided search differs under one master seed.
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::{Mode, Search, SplitMix, name_hash};
    use std::collections::BTreeSet;

    #[test]
    fn uniform_candidates_walk_seeds_over_the_scenarios() {
        let mut search = Search {
            mode: Mode::Uniform,
            scenarios: 2,
            count: 0,
            base_seed: 1,
            random: SplitMix::new(1),
            corpus: Vec::new(),
            seen: BTreeSet::new(),
            kinds: vec![Vec::new(), Vec::new()],
            selections: Vec::new(),
        };
        let seeds: Vec<(usize, u64)> = (0..4)
            .map(|_| search.next())
            .map(|c| (c.scenario, c.seed))
            .collect();
        assert_eq!(seeds, vec![(0, 1), (1, 1), (0, 2), (1, 2)]);
    }

    #[test]
    fn the_generator_is_a_function_of_its_seed() {
        let a: Vec<u64> = (0..5).map(|_| SplitMix::new(7).below(100)).collect();
        let mut one = SplitMix::new(7);
        let mut two = SplitMix::new(7);
        assert_eq!(a[0], SplitMix::new(7).below(100));
        for _ in 0..100 {
            assert_eq!(one.next_u64(), two.next_u64());
        }
        assert_ne!(name_hash("pr355"), name_hash("agentk-v1"));
    }
}
