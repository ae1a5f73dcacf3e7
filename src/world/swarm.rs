//! Swarm testing: the seed draws which fault kinds happen, how often and how hard.
//!
//! Everything here draws from the `Swarm` stream only, so turning swarm on never changes job
//! arrivals or runtimes (those come from the `Workload` stream). Drawn faults are ordinary
//! scheduled faults appended to the scenario's own; they all fall in the safety phase.

use crate::component::Random;
use crate::engine::{Stream, StreamId};
use crate::scenario::{
    DrawKind, ElasticFault, ElasticKind, Fault, FaultKind, FaultType, JobTarget, LeaderFault,
    LeaderKind, NODE_REPLACE_AFTER_MS, NetworkFault, NetworkKind, OutageMode, PodTarget, Range,
    ReplicaRef, Scenario, SwarmDraw,
};
use std::collections::BTreeMap;

const TARGETS: [PodTarget; 4] = [
    PodTarget::Idle,
    PodTarget::Busy,
    PodTarget::Pending,
    PodTarget::Any,
];

/// What a seed's swarm drew: the faults, the run's API latency (`[swarm] api_latency`), and
/// one line per enabled kind saying what it drew.
pub(crate) struct Drawn {
    /// Faults to append to the scenario's own.
    pub faults: Vec<Fault>,
    /// The API latency each way for the whole run, in place of `[cluster] api_latency`.
    pub api_latency: Option<Range>,
    /// One line per choice, for summaries.
    pub lines: Vec<String>,
}

/// The faults a seed draws, its API latency level, and one line per choice.
pub(crate) fn draw(scenario: &Scenario, seed: u64) -> Drawn {
    if !scenario.swarm.enabled || scenario.swarm.kinds.is_empty() {
        return Drawn {
            faults: Vec::new(),
            api_latency: None,
            lines: Vec::new(),
        };
    }
    let mut random = Stream::new(seed, StreamId::Swarm);
    let (enabled, factor) = match &scenario.swarm.draw {
        Some(given) => given_selection(scenario, given),
        None => select(scenario, &mut random),
    };
    let mean_ms = scenario.swarm.mean_interval_ms as f64 * factor;
    let total_weight: f64 = enabled.iter().map(|(_, w)| w).sum();
    let mut faults = Vec::new();
    // By kind name (`DrawKind`), the order the summary lists them in.
    let mut counts: BTreeMap<DrawKind, u32> = BTreeMap::new();
    let mut t = 0u64;
    loop {
        t = t.saturating_add(random.exponential_ms(mean_ms).max(1));
        if t >= scenario.duration_ms {
            break;
        }
        let mut pick = random.unit() * total_weight;
        let kind = enabled
            .iter()
            .find(|(_, weight)| {
                pick -= weight;
                pick < 0.0
            })
            .map_or(enabled[enabled.len() - 1].0, |&(kind, _)| kind);
        if let Some(fault) = draw_fault(scenario, kind, t, &mut random) {
            *counts.entry(DrawKind(kind)).or_default() += 1;
            faults.push(fault);
        }
    }
    let mut drawn = vec![format!(
        "swarm: mean interval {:.0}s, kinds {}",
        mean_ms / 1000.0,
        enabled
            .iter()
            .map(|(k, w)| format!("{} (weight {w:.1})", k.name()))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    if let Some(given) = &scenario.swarm.draw {
        drawn.push(format!("given --swarm-draw {given}"));
    }
    drawn.extend(
        counts
            .iter()
            .map(|(kind, n)| format!("{} x{n}", kind.0.name())),
    );
    // Drawn last, so that the faults of a seed are the same with and without a level range.
    let api_latency = scenario.swarm.api_latency.map(|levels| {
        let band = latency_band(levels, &mut random);
        drawn.push(format!(
            "api latency level {} ms: each call {}-{} ms each way",
            band.max_ms, band.min_ms, band.max_ms
        ));
        band
    });
    Drawn {
        faults,
        api_latency,
        lines: drawn,
    }
}

/// A seed's API latency: a level drawn log-uniformly from `levels` (so that every order of
/// magnitude between them is as likely: a seed at seconds is as reachable as one at
/// milliseconds, without hiding the fast ones), and a narrow band below it, three quarters of
/// the level to the level, each call's draw.
fn latency_band(levels: Range, random: &mut Stream) -> Range {
    let low = (levels.min_ms.max(1) as f64).ln();
    let high = (levels.max_ms.max(1) as f64).ln();
    let level = (low + (high - low) * random.unit()).exp().round() as u64;
    let level = level.clamp(levels.min_ms.max(1), levels.max_ms.max(1));
    Range {
        min_ms: level - level / 4,
        max_ms: level,
    }
}

/// The seed's own choice: each kind is on with probability 1/2 (at least one is on), with a
/// weight in [1, 4); the mean interval is scaled by a factor in [0.5, 2).
fn select(scenario: &Scenario, random: &mut Stream) -> (Vec<(FaultType, f64)>, f64) {
    let mut enabled: Vec<(FaultType, f64)> = Vec::new();
    for &kind in &scenario.swarm.kinds {
        let on = random.chance(0.5);
        let weight = 1.0 + 3.0 * random.unit();
        if on {
            enabled.push((kind, weight));
        }
    }
    if enabled.is_empty() {
        let index = random.below(scenario.swarm.kinds.len() as u64) as usize;
        enabled.push((scenario.swarm.kinds[index], 1.0));
    }
    (enabled, 0.5 + 1.5 * random.unit())
}

/// A choice given as a [`SwarmDraw`] (`--swarm-draw`); with nothing on, the first kind is.
fn given_selection(scenario: &Scenario, given: &SwarmDraw) -> (Vec<(FaultType, f64)>, f64) {
    let mut enabled = given.enabled(&scenario.swarm.kinds);
    if enabled.is_empty() {
        enabled.push((scenario.swarm.kinds[0], 1.0));
    }
    (enabled, f64::from(given.interval_pct) / 100.0)
}

/// The choice seed `seed` makes, in hundredths: where a guided hunt starts mutating from.
pub(crate) fn seed_selection(scenario: &Scenario, seed: u64) -> SwarmDraw {
    let mut random = Stream::new(seed, StreamId::Swarm);
    let (enabled, factor) = select(scenario, &mut random);
    let pct = |x: f64| (x * 100.0).round() as u32;
    let mut weights: BTreeMap<DrawKind, u32> = scenario
        .swarm
        .kinds
        .iter()
        .map(|&kind| (DrawKind(kind), 0))
        .collect();
    for (kind, weight) in enabled {
        weights.insert(DrawKind(kind), pct(weight));
    }
    SwarmDraw {
        weights,
        interval_pct: pct(factor).max(1),
    }
}

fn range(random: &mut Stream, min_ms: u64, max_ms: u64) -> u64 {
    random.range_inclusive(min_ms, max_ms)
}

fn replica(scenario: &Scenario, random: &mut Stream) -> ReplicaRef {
    let replicas = scenario.leader.as_ref().map_or(1, |l| l.replicas.max(1));
    if random.chance(0.5) {
        ReplicaRef::Leader
    } else {
        ReplicaRef::Index(random.below(u64::from(replicas)) as u32)
    }
}

fn draw_fault(
    scenario: &Scenario,
    kind: FaultType,
    at_ms: u64,
    random: &mut Stream,
) -> Option<Fault> {
    let kind = match kind {
        FaultType::Elastic(kind) => FaultKind::Elastic(draw_elastic_fault(scenario, kind, random)?),
        FaultType::Network(kind) => FaultKind::Network(draw_network_fault(scenario, kind, random)),
        FaultType::Leader(kind) => FaultKind::Leader(draw_leader_fault(scenario, kind, random)),
    };
    Some(Fault { at_ms, kind })
}

/// A fault of the elastic-agent side, drawn like `draw_fault`'s; `None` when the scenario
/// has nothing it could hit.
fn draw_elastic_fault(
    scenario: &Scenario,
    kind: ElasticKind,
    random: &mut Stream,
) -> Option<ElasticFault> {
    Some(match kind {
        ElasticKind::ServerCrash => ElasticFault::ServerCrash {
            downtime_ms: range(random, 5_000, 180_000),
        },
        ElasticKind::PodDelete => ElasticFault::PodDelete {
            target: TARGETS[random.below(4) as usize],
            count: 1 + random.below(3) as u32,
        },
        ElasticKind::ContainerRestart => ElasticFault::ContainerRestart {
            target: TARGETS[random.below(4) as usize],
            count: 1 + random.below(2) as u32,
        },
        ElasticKind::PodFail => ElasticFault::PodFail {
            target: TARGETS[random.below(4) as usize],
            count: 1,
        },
        ElasticKind::ProfileEdit => draw_profile_edit(scenario, random)?,
        // A quarter of the edits also switch reuse, off or back on: the behaviour of a
        // policy with reuse off (and of the switch) is reachable from a generic scenario.
        ElasticKind::ClusterProfileEdit => ElasticFault::ClusterProfileEdit {
            set: crate::scenario::ClusterProfileChanges {
                pending_pods_count: Some(3 + random.below(10) as u32),
                enable_agent_reuse: random.chance(0.25).then(|| random.chance(0.5)),
                ..Default::default()
            },
        },
        // The node group replaces a lost node after the default `replace_after`, so a swarm
        // never leaves the cluster without a node for longer than that.
        ElasticKind::NodeLoss if scenario.cluster.nodes > 1 => ElasticFault::NodeLoss {
            count: 1,
            replace_after_ms: NODE_REPLACE_AFTER_MS,
        },
        // A one-node cluster loses no node: the swarm draws nothing.
        ElasticKind::NodeLoss => return None,
        ElasticKind::NodeAdd => ElasticFault::NodeAdd { count: 1 },
        ElasticKind::JobCancel => ElasticFault::JobCancel {
            target: if random.chance(0.5) {
                JobTarget::Building
            } else {
                JobTarget::Scheduled
            },
            count: 1 + random.below(2) as u32,
        },
        ElasticKind::Burst => draw_burst(scenario, random)?,
    })
}

/// A fault of the network or the API, drawn like `draw_fault`'s.
fn draw_network_fault(scenario: &Scenario, kind: NetworkKind, random: &mut Stream) -> NetworkFault {
    match kind {
        NetworkKind::Partition => draw_partition(scenario, random),
        NetworkKind::ApiOutage => NetworkFault::ApiOutage {
            for_ms: range(random, 3_000, 120_000),
            mode: if random.chance(0.5) {
                OutageMode::Error
            } else {
                OutageMode::Hang
            },
        },
    }
}

/// A partition between two of the parts the scenario has, for 5 s to 3 min.
fn draw_partition(scenario: &Scenario, random: &mut Stream) -> NetworkFault {
    let mut pairs = vec![
        ["gocd", "kube-api"],
        ["agents", "gocd"],
        ["agents", "kube-api"],
    ];
    if scenario.leader.is_some() {
        pairs.push(["leader", "kube-api"]);
        pairs.push(["replicas", "kube-api"]);
    }
    let pair = pairs[random.below(pairs.len() as u64) as usize];
    NetworkFault::Partition {
        between: pair.map(str::to_owned),
        for_ms: range(random, 5_000, 180_000),
    }
}

/// A new image for one of the profiles (none without profiles).
fn draw_profile_edit(scenario: &Scenario, random: &mut Stream) -> Option<ElasticFault> {
    let profile = scenario
        .profiles
        .get(random.below(scenario.profiles.len().max(1) as u64) as usize)?;
    let image = format!("{}-swarm{}", profile.image, random.below(1000));
    Some(ElasticFault::ProfileEdit {
        profile: profile.name.clone(),
        set: BTreeMap::from([("image".to_owned(), image)]),
    })
}

/// A burst of 5 to 30 jobs of one profile (none without profiles).
fn draw_burst(scenario: &Scenario, random: &mut Stream) -> Option<ElasticFault> {
    let profile = scenario
        .profiles
        .get(random.below(scenario.profiles.len().max(1) as u64) as usize)?;
    Some(ElasticFault::Burst {
        count: 5 + random.below(26) as u32,
        spread_ms: range(random, 0, 30_000),
        profile: profile.name.clone(),
        runtime: Range {
            min_ms: 10_000,
            max_ms: 180_000,
        },
    })
}

/// The faults of `[leader]` replicas and their Lease, drawn like `draw_fault`'s.
fn draw_leader_fault(scenario: &Scenario, kind: LeaderKind, random: &mut Stream) -> LeaderFault {
    match kind {
        LeaderKind::ReplicaCrash => LeaderFault::ReplicaCrash {
            replica: replica(scenario, random),
            downtime_ms: range(random, 2_000, 60_000),
        },
        LeaderKind::ReplicaStop => LeaderFault::ReplicaStop {
            replica: replica(scenario, random),
            downtime_ms: range(random, 2_000, 60_000),
        },
        LeaderKind::ReplicaPause => LeaderFault::ReplicaPause {
            replica: replica(scenario, random),
            for_ms: range(random, 500, 20_000),
        },
        LeaderKind::ClockDrift => LeaderFault::ClockDrift {
            replica: replica(scenario, random),
            rate: 0.9 + 0.3 * random.unit(),
        },
        LeaderKind::LeaseDelete => LeaderFault::LeaseDelete,
        LeaderKind::CallbackDelay => LeaderFault::CallbackDelay {
            replica: replica(scenario, random),
            delay_ms: range(random, 500, 30_000),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::draw_fault;
    use crate::engine::{Stream, StreamId};
    use crate::scenario::FaultType;
    use std::path::Path;

    const BOTH_SIDES: &str = r#"
name = "both-sides"
duration = "10m"

[cluster]
nodes = 2

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[leader]
replicas = 3
variant = "fixed"

[[leader.modules]]
name = "alpha"
runnable_when = "alpha"

[[leader.config]]
at = "0s"
set = { alpha = true }
"#;

    /// `[swarm] api_latency`: every seed draws a level inside the range, each call's band
    /// is 3/4 of it to it, and the faults are those the seed draws without a level.
    #[test]
    fn a_latency_level_is_drawn_per_seed_after_the_same_faults() {
        let swarm = "[swarm]\nenabled = true\nkinds = [\"replica_crash\", \"partition\"]\n\
                     mean_interval = \"1m\"\napi_latency = { min = \"2ms\", max = \"1300ms\" }\n\n";
        let text = BOTH_SIDES.replace("[leader]", &format!("{swarm}[leader]"));
        let with = crate::scenario::parse(&text, Path::new("with.toml"))
            .expect("the test scenario parses")
            .scenario;
        let mut without = with.clone();
        without.swarm.api_latency = None;
        let mut levels = Vec::new();
        for seed in 1..=200 {
            let drawn = super::draw(&with, seed);
            let band = drawn.api_latency.expect("a level per seed");
            assert!((2..=1_300).contains(&band.max_ms), "seed {seed}: {band:?}");
            assert_eq!(band.min_ms, band.max_ms - band.max_ms / 4);
            assert_eq!(drawn.faults, super::draw(&without, seed).faults);
            levels.push(band.max_ms);
        }
        // Log-uniform: about a fifth of the seeds below 8 ms, about a twentieth above 900 ms.
        let fast = levels.iter().filter(|&&l| l < 8).count();
        let slow = levels.iter().filter(|&&l| l > 900).count();
        assert!(
            (20..=70).contains(&fast) && (3..=25).contains(&slow),
            "{fast} {slow}"
        );
    }

    #[test]
    fn a_swarm_can_draw_every_fault_kind() {
        let scenario = crate::scenario::parse(BOTH_SIDES, Path::new("both.toml"))
            .expect("the test scenario parses")
            .scenario;
        let mut random = Stream::new(1, StreamId::Swarm);
        for kind in FaultType::ALL {
            let fault = draw_fault(&scenario, kind, 1_000, &mut random)
                .unwrap_or_else(|| panic!("the swarm cannot draw {}", kind.name()));
            assert_eq!(fault.kind.fault_type(), kind);
            assert_eq!(fault.at_ms, 1_000);
        }
    }
}
