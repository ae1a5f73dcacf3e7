//! Building a world from a scenario and a seed.

use super::elastic::Elastic;
use super::events::Event;
use super::faults::FaultHarness;
use super::leader::LeaderHarness;
use crate::allocator::{ClusterProfile, Policy};
use crate::component::Random;
use crate::engine::{NodeId, Nodes, Partitions, Queue, SimTime, Stream, StreamId};
use crate::gocd::{Server, ServerSettings};
use crate::kube::{KubeApi, KubeSettings};
use crate::resources::{KubeRequest, KubeResult, StringMap};
use crate::scenario::{JobSource, OutageMode, Range, Scenario};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Run-level choices that override the scenario.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// The seed every random stream of the run derives from.
    pub seed: u64,
    /// The allocator policy under test.
    pub policy: Policy,
    /// The leader runner variant, for a scenario with a `[leader]` section.
    pub variant: Option<crate::leader::Variant>,
    /// A run that pops more events than this ends as a harness failure, never a hang.
    pub events_max: u64,
    /// Timeline sample interval.
    pub sample_interval_ms: u64,
}

impl RunSettings {
    /// The scenario's own seed, policy and variant.
    pub fn from_scenario(scenario: &Scenario) -> RunSettings {
        let total_ms = scenario.duration_ms + scenario.settle_ms;
        RunSettings {
            seed: scenario.seed,
            policy: scenario.plugin.policy,
            variant: scenario.leader.as_ref().map(|l| l.variant),
            events_max: 500_000_000,
            sample_interval_ms: (total_ms / 720).clamp(1_000, 60_000),
        }
    }

    /// The variant the replicas of `scenario` run: the run's, else the scenario's own; `None`
    /// for a scenario without `[leader]`.
    pub(crate) fn leader_variant(&self, scenario: &Scenario) -> Option<crate::leader::Variant> {
        let leader = scenario.leader.as_ref()?;
        Some(self.variant.unwrap_or(leader.variant))
    }
}

/// Why a world could not be built or run.
#[derive(Debug, thiserror::Error)]
pub enum WorldError {
    /// The scenario asks for something this build cannot do.
    #[error("{0}")]
    Input(String),
    /// The run broke one of its own bounds (a harness bug or a livelock).
    #[error("{0}")]
    Bound(String),
}

/// One planned job arrival. A day plans tens of thousands, all held from the start, so the
/// profile name is shared by every arrival of the same source (an `Arc<String>`: one word,
/// where an `Arc<str>` takes two).
#[derive(Clone, Debug)]
pub(super) struct Arrival {
    pub(super) at_ms: u64,
    pub(super) profile: Arc<String>,
    pub(super) runtime_ms: u64,
    /// The job's own GoCD environment, shared like the profile; `None`: the profile's.
    pub(super) environment: Option<Arc<String>>,
}

/// Who issued a Kubernetes call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Client {
    /// The plugin inside the server process of this epoch.
    Plugin {
        epoch: crate::engine::Epoch,
        call: crate::allocator::CallId,
    },
    /// Leader replica `index` in process `epoch`.
    Replica {
        index: u32,
        epoch: crate::engine::Epoch,
        call: crate::leader::CallId,
    },
}

/// A Kubernetes call in flight.
pub(super) struct PendingCall {
    pub(super) client: Client,
    pub(super) request: Option<KubeRequest>,
    pub(super) result: Option<KubeResult>,
    pub(super) done: bool,
    /// Stalled by a partition: the request (if `request` is kept) or the answer (if
    /// `result` is kept) moves on when the partition heals.
    pub(super) stalled: bool,
}

/// Node-group bits for partitions.
pub(super) mod groups {
    use crate::engine::GroupMask;
    pub(crate) const GOCD: GroupMask = GroupMask(1);
    pub(crate) const KUBE_API: GroupMask = GroupMask(2);
    pub(crate) const AGENTS: GroupMask = GroupMask(4);
    pub(crate) const REPLICAS: GroupMask = GroupMask(8);
    /// `replica-N` is bit 16 + N.
    pub(crate) fn replica(index: u32) -> GroupMask {
        GroupMask(1 << (16 + index.min(40)))
    }
}

/// Everything one run needs.
pub struct World {
    pub(super) scenario: Scenario,
    pub(super) settings: RunSettings,
    pub(super) queue: Queue<Event>,
    pub(super) nodes: Nodes,
    pub(super) gocd: NodeId,
    pub(super) partitions: Partitions,
    pub(super) outage: Option<OutageMode>,
    /// Calls held by an API outage in `hang` mode, answered when it ends.
    pub(super) held: Vec<u64>,
    /// Boxed: a call carries its request and answer (hundreds of bytes), and the map's
    /// inserts and removals shift the values of a node.
    pub(super) calls: BTreeMap<u64, Box<PendingCall>>,
    pub(super) next_call: u64,
    pub(super) random_network: Stream,
    pub(super) random_api: Stream,
    pub(super) ended: bool,
    /// The GoCD server, the Kubernetes model, the go-agents and the job arrivals.
    pub(super) elastic: Elastic,
    /// The leader-election replicas and their configuration.
    pub(super) leader: LeaderHarness,
    /// The faults under way and what the swarm drew.
    pub(super) faults: FaultHarness,
}

/// The Kubernetes model's settings from `[cluster]`; `pod_startup_sample_ms` is a replayed
/// trace's start-up sample (empty: draw from `pod_startup`).
fn kube_settings(scenario: &Scenario, pod_startup_sample_ms: Vec<u64>) -> KubeSettings {
    KubeSettings {
        nodes: scenario.cluster.nodes,
        pods_per_node: scenario.cluster.pods_per_node,
        pod_startup_ms: (
            scenario.cluster.pod_startup.min_ms,
            scenario.cluster.pod_startup.max_ms,
        ),
        container_restart_backoff_ms: scenario.cluster.container_restart_backoff_ms,
        pod_startup_sample_ms,
        describe_pod: super::plugin_pods::describe_pod,
        termination_grace_ms: scenario.cluster.termination_grace_ms,
        node_eviction_ms: scenario.cluster.node_eviction_ms,
    }
}

/// The GoCD server's settings from `[server]` and `[plugin]`, for the run's policy.
fn server_settings(scenario: &Scenario, settings: &RunSettings) -> ServerSettings {
    let plugin = &scenario.plugin;
    let cluster_profile = ClusterProfile {
        auto_register_timeout_ms: plugin.auto_register_timeout_ms,
        pending_pods_count: plugin.pending_pods_count,
        cluster_request_timeout_ms: plugin.cluster_request_timeout_ms,
        enable_agent_reuse: plugin.enable_agent_reuse,
        idle_timeout_ms: plugin.idle_timeout_ms,
        max_pods: plugin.max_pods,
        ..ClusterProfile::default()
    };
    let s = &scenario.server;
    ServerSettings {
        job_starvation_timeout_ms: s.job_starvation_timeout_ms,
        server_ping_interval_ms: s.server_ping_interval_ms,
        assignment_interval_ms: s.assignment_interval_ms,
        agent_connection_timeout_ms: s.agent_connection_timeout_ms,
        hung_job_check_interval_ms: s.hung_job_check_interval_ms,
        auto_register_key_ttl_ms: s.auto_register_key_ttl_ms,
        create_agent_threads: s.create_agent_threads,
        cancel_kill_ms: s.cancel_kill_ms,
        job_completion_delay_ms: s.job_completion_delay_ms,
        policy: settings.policy,
        ablations: scenario.ablations.owned_by(crate::ablation::Owner::Safe),
        cluster_profile,
    }
}

impl World {
    /// Build the world for `scenario` under `settings`. Nothing runs yet.
    pub fn new(mut scenario: Scenario, settings: RunSettings) -> Result<World, WorldError> {
        let seed = settings.seed;
        let drawn = super::swarm::draw(&scenario, seed);
        scenario.faults.extend(drawn.faults);
        if let Some(latency) = drawn.api_latency {
            scenario.cluster.api_latency = latency;
        }
        let swarm_drawn = drawn.lines;
        let mut random_workload = Stream::new(seed, StreamId::Workload);
        let (arrivals, pod_startup_sample_ms) = plan_arrivals(&scenario, &mut random_workload)?;
        let mut nodes = Nodes::default();
        let gocd = nodes.add();
        let kube = KubeApi::new(kube_settings(&scenario, pod_startup_sample_ms));
        let server_settings = server_settings(&scenario, &settings);
        let profiles = scenario
            .profiles
            .iter()
            .map(|p| (p.name.clone(), profile_properties(p)))
            .collect();
        let server = Server::new(server_settings, profiles);
        let requests_max = requests_per_job_max(&scenario);
        let mut world = World {
            queue: Queue::default(),
            nodes,
            gocd,
            partitions: Partitions::default(),
            outage: None,
            held: Vec::new(),
            calls: BTreeMap::new(),
            next_call: 0,
            ended: false,
            random_network: Stream::new(seed, StreamId::Network),
            random_api: Stream::new(seed, StreamId::KubeApi),
            elastic: Elastic::new(server, kube, arrivals, requests_max, seed),
            leader: LeaderHarness::new(seed, settings.leader_variant(&scenario)),
            faults: FaultHarness::new(seed, swarm_drawn),
            scenario,
            settings,
        };
        world.add_replicas();
        Ok(world)
    }

    /// The scenario being run, with what the swarm drew applied (its faults; its API latency
    /// under `[swarm] api_latency`).
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Events popped so far.
    pub(crate) fn events(&self) -> u64 {
        self.queue.popped_count()
    }

    /// Current simulated time.
    pub fn now(&self) -> SimTime {
        self.queue.now()
    }

    /// Every scheduled fault of this run: the scenario's own, then what the swarm drew.
    pub fn planned_faults(&self) -> &[crate::scenario::Fault] {
        &self.scenario.faults
    }

    /// What the swarm drew for this seed (empty without swarm).
    pub(crate) fn swarm_drawn(&self) -> &[String] {
        self.faults.swarm_drawn()
    }

    /// Job arrivals planned from `[[jobs]]`: (at_ms, profile, runtime_ms).
    pub fn planned_arrivals(&self) -> Vec<(u64, String, u64)> {
        self.elastic
            .arrivals()
            .iter()
            .map(|a| (a.at_ms, a.profile.to_string(), a.runtime_ms))
            .collect()
    }

    /// The GoCD environment each of [`World::planned_arrivals`] names of its own (`None`: its
    /// profile's), in the same order.
    pub(crate) fn planned_environments(&self) -> Vec<Option<String>> {
        self.elastic
            .arrivals()
            .iter()
            .map(|a| a.environment.as_deref().cloned())
            .collect()
    }
}

/// The elastic profile properties the server sends for a scenario profile.
pub(super) fn profile_properties(profile: &crate::scenario::Profile) -> StringMap {
    let mut properties = StringMap::new();
    properties.insert("PodSpecType".to_owned(), "properties".to_owned());
    // The same key mapping a `profile_edit` uses, so an edit changes exactly these properties.
    for (key, value) in [
        ("image", &profile.image),
        ("cpu", &profile.cpu),
        ("memory", &profile.memory),
    ] {
        properties.insert(crate::gocd::profile_key(key).to_owned(), value.clone());
    }
    properties
}

/// Draw a duration from a range.
pub(super) fn draw(random: &mut Stream, range: Range) -> u64 {
    random.range_inclusive(range.min_ms, range.max_ms)
}

/// Every `[[jobs]]` arrival in the safety phase, from the workload stream only, sorted by
/// time (ties keep generator order), and the empirical pod start-up sample of any trace jobs
/// (empty without one: `[cluster] pod_startup` applies).
fn plan_arrivals(
    scenario: &Scenario,
    random: &mut Stream,
) -> Result<(Vec<Arrival>, Vec<u64>), WorldError> {
    let mut arrivals = Vec::new();
    let mut startup_sample_ms = Vec::new();
    for source in &scenario.jobs {
        match source {
            JobSource::Burst {
                at_ms,
                count,
                spread_ms,
                profile,
                runtime,
                environment,
            } => {
                let start = arrivals.len();
                burst(
                    &mut arrivals,
                    random,
                    *at_ms,
                    *count,
                    *spread_ms,
                    profile,
                    *runtime,
                );
                set_environment(&mut arrivals[start..], environment.as_deref());
            }
            JobSource::Poisson { .. } => poisson(&mut arrivals, random, source),
            JobSource::Single {
                at_ms,
                profile,
                runtime_ms,
                environment,
            } => {
                arrivals.push(Arrival {
                    at_ms: *at_ms,
                    profile: Arc::new(profile.clone()),
                    runtime_ms: *runtime_ms,
                    environment: environment.clone().map(Arc::new),
                });
            }
            JobSource::Trace { file } => {
                trace_arrivals(scenario, file, &mut arrivals, &mut startup_sample_ms)?;
            }
        }
    }
    arrivals.retain(|a| a.at_ms < scenario.duration_ms);
    arrivals.sort_by_key(|a| a.at_ms);
    // The table lives as long as the run: give back the growth slack.
    arrivals.shrink_to_fit();
    Ok((arrivals, startup_sample_ms))
}

/// A `poisson` source's arrivals: exponential inter-arrival times in `[from, until)`.
fn poisson(arrivals: &mut Vec<Arrival>, random: &mut Stream, source: &JobSource) {
    let JobSource::Poisson {
        from_ms,
        until_ms,
        per_minute,
        profile,
        runtime,
        environment,
    } = source
    else {
        return;
    };
    let mean_ms = 60_000.0 / per_minute;
    let profile = Arc::new(profile.clone());
    let environment = environment.clone().map(Arc::new);
    let mut t = *from_ms;
    loop {
        t = t.saturating_add(random.exponential_ms(mean_ms));
        if t >= *until_ms {
            break;
        }
        let runtime_ms = draw(random, *runtime);
        arrivals.push(Arrival {
            at_ms: t,
            profile: Arc::clone(&profile),
            runtime_ms,
            environment: environment.clone(),
        });
    }
}

/// Replay: the jobs of a recorded trace (see `crate::replay` for each derivation), with
/// config n of the trace mapped to the scenario's n-th profile.
fn trace_arrivals(
    scenario: &Scenario,
    file: &std::path::Path,
    arrivals: &mut Vec<Arrival>,
    startup_sample_ms: &mut Vec<u64>,
) -> Result<(), WorldError> {
    let workload =
        crate::replay::load_workload(file).map_err(|e| WorldError::Input(e.to_string()))?;
    let profiles: Vec<String> = scenario.profiles.iter().map(|p| p.name.clone()).collect();
    let shared: Vec<Arc<String>> = profiles.iter().map(|p| Arc::new(p.clone())).collect();
    for job in &workload.jobs {
        let profile = workload.profile_of(job, &profiles);
        let profile = match profiles.iter().position(|p| p == profile) {
            Some(index) => Arc::clone(&shared[index]),
            None => Arc::new(profile.to_owned()),
        };
        arrivals.push(Arrival {
            at_ms: job.at_ms,
            profile,
            runtime_ms: job.runtime_ms,
            environment: None,
        });
    }
    startup_sample_ms.extend(&workload.startup_sample_ms);
    Ok(())
}

/// `count` jobs uniformly within `spread_ms` after `at_ms`.
pub(super) fn burst(
    arrivals: &mut Vec<Arrival>,
    random: &mut Stream,
    at_ms: u64,
    count: u32,
    spread_ms: u64,
    profile: &str,
    runtime: Range,
) {
    let profile = Arc::new(profile.to_owned());
    for _ in 0..count {
        let offset = random.range_inclusive(0, spread_ms);
        let runtime_ms = draw(random, runtime);
        arrivals.push(Arrival {
            at_ms: at_ms + offset,
            profile: Arc::clone(&profile),
            runtime_ms,
            environment: None,
        });
    }
}

/// The jobs of one `[[jobs]]` entry get its `environment`, if it names one.
fn set_environment(arrivals: &mut [Arrival], environment: Option<&str>) {
    if let Some(environment) = environment {
        let shared = Arc::new(environment.to_owned());
        for arrival in arrivals {
            arrival.environment = Some(Arc::clone(&shared));
        }
    }
}

/// `[invariants] plugin_requests_per_job_max`, or `None` when `bounded-requests` is disabled.
fn requests_per_job_max(scenario: &Scenario) -> Option<u64> {
    let invariants = &scenario.invariants;
    (invariants.requests_bounded()).then_some(invariants.plugin_requests_per_job_max)
}
