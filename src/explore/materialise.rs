//! A run turned into an explicit scenario: what `shrink` starts from.
//!
//! The explicit scenario has the swarm off, every planned job arrival as a `single` job and
//! every planned fault (the scenario's own, then what the swarm drew) as an explicit fault,
//! and pins the run's seed, policy and variant. Every other random draw (latencies, start-up
//! times, runtimes of bursts-as-faults) comes from streams the swarm and the workload never
//! touch, so with the same seed the explicit scenario replays the original run.

use crate::run::RunError;
use crate::scenario::{JobSource, Scenario};
use crate::world::{RunSettings, World};

/// `scenario` with the run's seed, policy and variant written in, so the file reproduces the
/// run on its own (`sim FILE`, no flags).
pub fn pin(scenario: &Scenario, settings: &RunSettings) -> Scenario {
    let mut pinned = scenario.clone();
    pinned.seed = settings.seed;
    pinned.plugin.policy = settings.policy;
    if let (Some(leader), Some(variant)) = (&mut pinned.leader, settings.variant) {
        leader.variant = variant;
    }
    pinned
}

/// The run of `scenario` under `settings` as an explicit, pinned scenario.
pub fn materialise(scenario: &Scenario, settings: &RunSettings) -> Result<Scenario, RunError> {
    let world = World::new(scenario.clone(), settings.clone())?;
    let mut explicit = pin(scenario, settings);
    explicit.swarm.enabled = false;
    explicit.cluster.api_latency = world.scenario().cluster.api_latency;
    explicit.jobs = world
        .planned_arrivals()
        .into_iter()
        .zip(world.planned_environments())
        .map(
            |((at_ms, profile, runtime_ms), environment)| JobSource::Single {
                at_ms,
                profile,
                runtime_ms,
                environment,
            },
        )
        .collect();
    explicit.faults = world.planned_faults().to_vec();
    Ok(explicit)
}

/// The size of a scenario as a run sees it: job arrivals and faults planned for `seed`
/// (generators expanded, swarm draws included) and simulated milliseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size {
    /// Job instances the scenario schedules.
    pub jobs: u64,
    /// Faults it injects.
    pub faults: u64,
    /// The run's simulated length (`duration` + `settle`).
    pub simulated_ms: u64,
}

impl Size {
    /// Measure `scenario` as run by `settings`.
    pub fn of(scenario: &Scenario, settings: &RunSettings) -> Result<Size, RunError> {
        let world = World::new(scenario.clone(), settings.clone())?;
        Ok(Size {
            jobs: world.planned_arrivals().len() as u64,
            faults: world.planned_faults().len() as u64,
            simulated_ms: scenario.duration_ms + scenario.settle_ms,
        })
    }
}
