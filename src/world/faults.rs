//! Fault injection. Each fault is modelled as the real system behaves; what each
//! kind does is in `docs/scenario-format.md`, what it may break in `docs/policies.md`.

use super::Sink;
use super::build::{World, burst, groups};
use super::events::Event;
use super::run::node;
use crate::component::{Component, Random};
use crate::engine::{GroupMask, SimTime, Stream, StreamId};
use crate::gocd::JobState;
use crate::gocd::ServerInput;
use crate::kube::{KubeEffects, KubeletInput};
use crate::resources::PodPhase;
use crate::scenario::{FaultKind, FaultType, JobTarget, OutageMode, PodTarget, Range, ReplicaRef};
use crate::trace::{AgentRuntime, Record};
use std::collections::BTreeMap;

/// The id of the run's one cluster profile, in records and fault targets.
const CLUSTER_PROFILE_ID: &str = "cluster-profile";

/// What a pod fault does to each pod it hits.
#[derive(Clone, Copy)]
enum PodAction {
    /// `pod_delete`
    Delete,
    /// `container_restart`
    Restart,
    /// `pod_fail`
    Fail,
}

/// True for a lasting fault whose end the world signals itself (a restart, a resume, a newer
/// drift, a callback delivered) rather than a timer at its start plus its length.
fn ends_itself(kind: FaultType) -> bool {
    match kind {
        FaultType::ServerCrash
        | FaultType::ReplicaCrash
        | FaultType::ReplicaStop
        | FaultType::ReplicaPause
        | FaultType::ClockDrift
        | FaultType::CallbackDelay => true,
        FaultType::PodDelete
        | FaultType::ContainerRestart
        | FaultType::PodFail
        | FaultType::Partition
        | FaultType::ApiOutage
        | FaultType::ProfileEdit
        | FaultType::ClusterProfileEdit
        | FaultType::NodeLoss
        | FaultType::NodeAdd
        | FaultType::JobCancel
        | FaultType::Burst
        | FaultType::LeaseDelete => false,
    }
}

/// What starting a fault did.
enum Started {
    /// It acts on `target`; `lasting_ms` is `None` for an instant fault.
    Acting {
        target: String,
        lasting_ms: Option<u64>,
    },
    /// Its replica is not there at this moment: recorded as a fault without a target.
    NoTarget,
    /// Nothing to do and nothing recorded (a server crash while the server is down).
    Skipped,
}

/// The fault side of a run: the faults under way, the replicas they hit, what the swarm drew,
/// and the faults injected from outside.
pub(super) struct FaultHarness {
    /// Active fault intervals by fault index, for `FaultEnded` at the end of the safety phase.
    pub(super) active_faults: BTreeMap<usize, String>,
    /// The replica a running crash or pause fault hit, by fault index.
    pub(super) fault_targets: BTreeMap<usize, u32>,
    /// The safety phase is over: no new fault starts.
    pub(super) safety_over: bool,
    /// What the swarm drew for this seed, one line each.
    pub(super) swarm_drawn: Vec<String>,
    /// Faults injected from outside the run (`serve`'s pod deletes), numbered after the
    /// scenario's own.
    pub(super) injected_faults: usize,
    pub(super) random_faults: Stream,
}

impl FaultHarness {
    /// No fault under way yet; `swarm_drawn` says what the swarm drew.
    pub(super) fn new(seed: u64, swarm_drawn: Vec<String>) -> FaultHarness {
        FaultHarness {
            active_faults: BTreeMap::new(),
            fault_targets: BTreeMap::new(),
            safety_over: false,
            swarm_drawn,
            injected_faults: 0,
            random_faults: Stream::new(seed, StreamId::Faults),
        }
    }
}

impl World {
    /// A scheduled fault starts: act on its target, record it, and schedule its end if it
    /// lasts (one helper per family of fault kinds).
    pub(super) fn fault_start(&mut self, now: SimTime, index: usize, sink: &mut dyn Sink) {
        if self.faults.safety_over {
            return;
        }
        let kind = self.scenario.faults[index].kind.clone();
        let name = kind.name();
        let started = if kind.needs_leader() {
            self.start_leader_fault(now, index, &kind, sink)
        } else {
            self.start_elastic_fault(now, index, &kind, sink)
        };
        match started {
            Started::Acting { target, lasting_ms } => {
                self.record_fault_start(now, index, &kind, target, lasting_ms, sink);
            }
            Started::NoTarget => self.no_target(index, name, sink),
            Started::Skipped => {}
        }
    }

    /// The faults of the elastic-agent side: server, pods, network, API, profiles, nodes,
    /// job bursts.
    fn start_elastic_fault(
        &mut self,
        now: SimTime,
        index: usize,
        kind: &FaultKind,
        sink: &mut dyn Sink,
    ) -> Started {
        let (target, lasting_ms) = match kind {
            FaultKind::ServerCrash { downtime_ms } => {
                let Some(started) = self.crash_server(now, *downtime_ms, sink) else {
                    return Started::Skipped;
                };
                started
            }
            FaultKind::PodDelete { target, count } => {
                let pods = self.start_pod_fault(now, PodAction::Delete, *target, *count, sink);
                (pods, None)
            }
            FaultKind::ContainerRestart { target, count } => {
                let pods = self.start_pod_fault(now, PodAction::Restart, *target, *count, sink);
                (pods, None)
            }
            FaultKind::PodFail { target, count } => {
                let pods = self.start_pod_fault(now, PodAction::Fail, *target, *count, sink);
                (pods, None)
            }
            FaultKind::Partition { between, for_ms } => {
                (self.start_partition(now, index, between), Some(*for_ms))
            }
            FaultKind::ApiOutage { for_ms, mode } => (self.start_outage(*mode), Some(*for_ms)),
            FaultKind::ProfileEdit { profile, set } => {
                (self.edit_profile(now, profile, set, sink), None)
            }
            FaultKind::ClusterProfileEdit { set } => {
                (self.edit_cluster_profile(now, set, sink), None)
            }
            FaultKind::NodeLoss {
                count,
                replace_after_ms,
            } => (self.lose_nodes(now, *count, *replace_after_ms, sink), None),
            FaultKind::NodeAdd { count } => (self.add_nodes(now, *count, sink), None),
            FaultKind::JobCancel { target, count } => {
                (self.cancel_jobs(now, *target, *count, sink), None)
            }
            FaultKind::Burst {
                count,
                spread_ms,
                profile,
                runtime,
            } => {
                let jobs = self.start_burst(now, *count, *spread_ms, profile, *runtime);
                (jobs, None)
            }
            FaultKind::ReplicaCrash { .. }
            | FaultKind::ReplicaStop { .. }
            | FaultKind::ReplicaPause { .. }
            | FaultKind::ClockDrift { .. }
            | FaultKind::LeaseDelete
            | FaultKind::CallbackDelay { .. } => {
                unreachable!("leader faults start in start_leader_fault")
            }
        };
        Started::Acting { target, lasting_ms }
    }

    /// `partition`: the two groups stop reaching each other. Returns `a|b`.
    fn start_partition(&mut self, now: SimTime, index: usize, between: &[String; 2]) -> String {
        let a = self.group_mask(&between[0]);
        let b = self.group_mask(&between[1]);
        self.partitions.start(index as u32, a, b);
        self.partitions_changed(now);
        format!("{}|{}", between[0], between[1])
    }

    /// `api_outage`: every call fails or hangs from now on. Returns the mode.
    fn start_outage(&mut self, mode: OutageMode) -> String {
        self.outage = Some(mode);
        match mode {
            OutageMode::Error => "error",
            OutageMode::Hang => "hang",
        }
        .to_owned()
    }

    /// `job_cancel`: the server cancels `count` jobs of `target`. Returns them, `job:N`
    /// comma-separated.
    fn cancel_jobs(
        &mut self,
        now: SimTime,
        target: JobTarget,
        count: u32,
        sink: &mut dyn Sink,
    ) -> String {
        let jobs = self.pick_jobs(target, count);
        self.server_step(now, ServerInput::CancelJobs(jobs.clone()), sink);
        let jobs: Vec<String> = jobs.iter().map(|job| format!("job:{job}")).collect();
        jobs.join(",")
    }

    /// `server_crash`: the server process dies and restarts after `downtime_ms`; nothing (the
    /// fault is skipped) while it is down already.
    fn crash_server(
        &mut self,
        now: SimTime,
        downtime_ms: u64,
        sink: &mut dyn Sink,
    ) -> Option<(String, Option<u64>)> {
        if !self.elastic.server.is_up() {
            return None;
        }
        // The node's epoch moves on first: what the crash releases is applied
        // after it, as before.
        self.nodes.crash(self.gocd);
        self.server_step(now, ServerInput::Crash, sink);
        self.queue
            .push(now.plus_ms(downtime_ms), Event::ServerRestart);
        Some(("gocd".to_owned(), Some(downtime_ms)))
    }

    /// `profile_edit`: the server's elastic profile changes, and the trace gets the profile's
    /// new config identity. Returns the profile's name.
    fn edit_profile(
        &mut self,
        now: SimTime,
        profile: &str,
        set: &BTreeMap<String, String>,
        sink: &mut dyn Sink,
    ) -> String {
        let input = ServerInput::EditProfile {
            profile: profile.to_owned(),
            set: set.clone(),
        };
        self.server_step(now, input, sink);
        let environment = self.profile_environment(profile);
        let config = self
            .elastic
            .server
            .config_identity(profile, environment.as_deref());
        let record = Record::ProfileEdited {
            profile: profile.to_owned(),
            config,
        };
        self.emit(sink, node::GOCD, record);
        profile.to_owned()
    }

    /// `node_loss`: `count` nodes become unreachable, each replaced after `replace_after_ms`.
    /// Returns the nodes lost, comma-separated.
    fn lose_nodes(
        &mut self,
        now: SimTime,
        count: u32,
        replace_after_ms: u64,
        sink: &mut dyn Sink,
    ) -> String {
        let mut fx = KubeEffects::default();
        for _ in 0..count {
            let random = &mut self.faults.random_faults;
            let input = KubeletInput::LoseNode {
                replace_after_ms: Some(replace_after_ms),
            };
            self.elastic
                .kube
                .kubelets()
                .handle(now.as_ms(), input, random, &mut fx);
        }
        let lost = std::mem::take(&mut fx.lost_nodes);
        self.apply_kube(now, fx, sink);
        lost.join(",")
    }

    /// `node_add`: `count` new empty nodes join. Returns the nodes added, comma-separated.
    fn add_nodes(&mut self, now: SimTime, count: u32, sink: &mut dyn Sink) -> String {
        let mut fx = KubeEffects::default();
        for _ in 0..count {
            let random = &mut self.faults.random_faults;
            self.elastic.kube.kubelets().handle(
                now.as_ms(),
                KubeletInput::AddNode,
                random,
                &mut fx,
            );
        }
        let added: Vec<String> = fx
            .records
            .iter()
            .filter_map(|record| match record {
                Record::NodeJoined { node } => Some(node.clone()),
                _ => None,
            })
            .collect();
        self.apply_kube(now, fx, sink);
        added.join(",")
    }

    /// `pod_delete`, `container_restart`, `pod_fail`: the pods hit, comma-separated.
    fn start_pod_fault(
        &mut self,
        now: SimTime,
        action: PodAction,
        target: PodTarget,
        count: u32,
        sink: &mut dyn Sink,
    ) -> String {
        let mut fx = KubeEffects::default();
        let pods = match action {
            PodAction::Delete => {
                let pods = self.pick_pods(target, count);
                for pod in &pods {
                    let input = KubeletInput::DeletePod { pod: pod.clone() };
                    self.kubelet_input(now, input, &mut fx);
                }
                pods
            }
            PodAction::Restart => {
                let pods: Vec<String> = self
                    .pick_pods(target, u32::MAX)
                    .into_iter()
                    .filter(|p| self.elastic.kube.container_running(p))
                    .collect();
                let pods = self.choose(pods, count);
                for pod in &pods {
                    let input = KubeletInput::KillContainer { pod: pod.clone() };
                    self.kubelet_input(now, input, &mut fx);
                }
                pods
            }
            PodAction::Fail => {
                let pods = self.pick_pods(target, count);
                for pod in &pods {
                    let input = KubeletInput::FailPod { pod: pod.clone() };
                    self.kubelet_input(now, input, &mut fx);
                }
                pods
            }
        };
        self.apply_kube(now, fx, sink);
        pods.join(",")
    }

    /// A `burst` fault: its jobs join the arrivals, drawn from the fault stream.
    fn start_burst(
        &mut self,
        now: SimTime,
        count: u32,
        spread_ms: u64,
        profile: &str,
        runtime: Range,
    ) -> String {
        let mut planned = Vec::new();
        burst(
            &mut planned,
            &mut self.faults.random_faults,
            now.as_ms(),
            count,
            spread_ms,
            profile,
            runtime,
        );
        for arrival in planned {
            let at = SimTime::from_ms(arrival.at_ms);
            self.elastic.arrivals.push(arrival);
            self.queue.push(
                at,
                Event::SingleArrival {
                    index: self.elastic.arrivals.len() - 1,
                },
            );
        }
        format!("{count} jobs of {profile}")
    }

    /// The faults of `[leader]` replicas and their Lease.
    fn start_leader_fault(
        &mut self,
        now: SimTime,
        index: usize,
        kind: &FaultKind,
        sink: &mut dyn Sink,
    ) -> Started {
        match kind {
            FaultKind::LeaseDelete => {
                let deleted = self.delete_lease(now, sink);
                let target = if deleted { "lease" } else { "lease (absent)" }.to_owned();
                Started::Acting {
                    target,
                    lasting_ms: None,
                }
            }
            FaultKind::ReplicaCrash {
                replica,
                downtime_ms,
            } => self.on_replica(index, *replica, |world, at| {
                let crashed = world.crash_replica(now, at, *downtime_ms, sink);
                crashed.then(|| (format!("replica-{at}"), Some(*downtime_ms)))
            }),
            FaultKind::ReplicaStop {
                replica,
                downtime_ms,
            } => self.on_replica(index, *replica, |world, at| {
                let stopped = world.stop_replica(now, at, *downtime_ms, sink);
                stopped.then(|| (format!("replica-{at}"), Some(*downtime_ms)))
            }),
            FaultKind::ReplicaPause { replica, for_ms } => {
                self.on_replica(index, *replica, |world, at| {
                    let paused = world.pause_replica(now, at, *for_ms, sink);
                    paused.then(|| (format!("replica-{at}"), Some(*for_ms)))
                })
            }
            // A drift lasts until the safety phase ends or a newer drift of the same
            // replica replaces it: the monitors judge the fault budget on drifts in force.
            FaultKind::ClockDrift { replica, rate } => {
                self.on_replica(index, *replica, |world, at| {
                    world.end_drift_faults(now, at, sink);
                    world.drift_replica(now, at, *rate);
                    Some((format!("replica-{at} rate={rate}"), Some(0)))
                })
            }
            // The fault lasts until the late callback is delivered (or the process dies):
            // the failover monitor holds its clock while it is in force.
            FaultKind::CallbackDelay { replica, delay_ms } => {
                self.on_replica(index, *replica, |world, at| {
                    let process = world.leader.replicas[at as usize].process.as_mut()?;
                    process.delay_next_started_leading(*delay_ms);
                    Some((format!("replica-{at} +{delay_ms}ms"), Some(0)))
                })
            }
            FaultKind::ServerCrash { .. }
            | FaultKind::PodDelete { .. }
            | FaultKind::ContainerRestart { .. }
            | FaultKind::PodFail { .. }
            | FaultKind::Partition { .. }
            | FaultKind::ApiOutage { .. }
            | FaultKind::ProfileEdit { .. }
            | FaultKind::ClusterProfileEdit { .. }
            | FaultKind::NodeLoss { .. }
            | FaultKind::NodeAdd { .. }
            | FaultKind::JobCancel { .. }
            | FaultKind::Burst { .. } => {
                unreachable!("elastic faults start in start_elastic_fault")
            }
        }
    }

    /// A fault of one replica: `act` on the replica `replica` names now (its index), which
    /// gives the fault's target and how long it lasts, or `None` when it finds nothing to hit.
    fn on_replica(
        &mut self,
        index: usize,
        replica: ReplicaRef,
        act: impl FnOnce(&mut World, u32) -> Option<(String, Option<u64>)>,
    ) -> Started {
        let Some(replica_index) = self.replica_index(replica) else {
            return Started::NoTarget;
        };
        let Some((target, lasting_ms)) = act(self, replica_index) else {
            return Started::NoTarget;
        };
        self.faults.fault_targets.insert(index, replica_index);
        Started::Acting { target, lasting_ms }
    }

    /// Record a started fault; a lasting one is active until its end (scheduled here unless
    /// the fault ends itself), an instant one ends at once.
    fn record_fault_start(
        &mut self,
        now: SimTime,
        index: usize,
        kind: &FaultKind,
        target: String,
        lasting_ms: Option<u64>,
        sink: &mut dyn Sink,
    ) {
        let name = kind.name();
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultStarted {
                index: index as u32,
                fault: name.to_owned(),
                target,
            },
        );
        match lasting_ms {
            Some(ms) => {
                self.faults.active_faults.insert(index, name.to_owned());
                if !ends_itself(kind.fault_type()) {
                    self.queue.push(now.plus_ms(ms), Event::FaultEnd { index });
                }
            }
            None => {
                let record = Record::FaultEnded {
                    index: index as u32,
                    fault: name.to_owned(),
                };
                self.emit(sink, node::HARNESS, record);
            }
        }
    }

    /// A lasting fault ends (also called for every active fault at the end of the safety
    /// phase, and when a crashed server restarts).
    pub(super) fn fault_end(&mut self, now: SimTime, index: usize, sink: &mut dyn Sink) {
        let Some(name) = self.faults.active_faults.remove(&index) else {
            return;
        };
        match &self.scenario.faults[index].kind {
            FaultKind::Partition { .. } => {
                self.partitions.heal(index as u32);
                self.partitions_changed(now);
            }
            FaultKind::ApiOutage { .. } => self.end_outage(now, sink),
            // Nothing to undo: the restart, the resume or the last step already happened,
            // or the fault never lasted.
            FaultKind::ServerCrash { .. }
            | FaultKind::PodDelete { .. }
            | FaultKind::ContainerRestart { .. }
            | FaultKind::PodFail { .. }
            | FaultKind::ProfileEdit { .. }
            | FaultKind::ClusterProfileEdit { .. }
            | FaultKind::NodeLoss { .. }
            | FaultKind::NodeAdd { .. }
            | FaultKind::JobCancel { .. }
            | FaultKind::Burst { .. }
            | FaultKind::ReplicaCrash { .. }
            | FaultKind::ReplicaStop { .. }
            | FaultKind::ReplicaPause { .. }
            | FaultKind::ClockDrift { .. }
            | FaultKind::LeaseDelete
            | FaultKind::CallbackDelay { .. } => {}
        }
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultEnded {
                index: index as u32,
                fault: name,
            },
        );
    }

    /// A fault with no target at this moment (no leader, replica down): recorded as such.
    fn no_target(&mut self, index: usize, name: &str, sink: &mut dyn Sink) {
        let target = "none (no such replica at this moment)".to_owned();
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultStarted {
                index: index as u32,
                fault: name.to_owned(),
                target,
            },
        );
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultEnded {
                index: index as u32,
                fault: name.to_owned(),
            },
        );
    }

    /// Called when a replica restarts or resumes: its crash or pause fault ends.
    pub(super) fn end_replica_faults(&mut self, now: SimTime, replica: u32, sink: &mut dyn Sink) {
        self.end_faults(now, sink, |kind, target| {
            matches!(
                kind,
                FaultKind::ReplicaCrash { .. }
                    | FaultKind::ReplicaStop { .. }
                    | FaultKind::ReplicaPause { .. }
            ) && target == Some(replica)
        });
    }

    /// `callback_delay` faults of `replica` end once no late callback is pending any more.
    pub(super) fn end_delivered_callback_delays(
        &mut self,
        now: SimTime,
        replica: u32,
        sink: &mut dyn Sink,
    ) {
        let pending = self.leader.replicas[replica as usize]
            .process
            .as_ref()
            .is_some_and(|process| process.callback_delay_pending());
        if pending {
            return;
        }
        self.end_faults(now, sink, |kind, target| {
            matches!(kind, FaultKind::CallbackDelay { .. }) && target == Some(replica)
        });
    }

    /// A new drift of `replica` replaces the one in force, which ends.
    fn end_drift_faults(&mut self, now: SimTime, replica: u32, sink: &mut dyn Sink) {
        self.end_faults(now, sink, |kind, target| {
            matches!(kind, FaultKind::ClockDrift { .. }) && target == Some(replica)
        });
    }

    /// Called when the server restarts: its crash fault ends.
    pub(super) fn end_server_crash_faults(&mut self, now: SimTime, sink: &mut dyn Sink) {
        self.end_faults(now, sink, |kind, _| {
            matches!(kind, FaultKind::ServerCrash { .. })
        });
    }

    /// End every active fault for which `ends(kind, target replica)` holds, in index order.
    fn end_faults(
        &mut self,
        now: SimTime,
        sink: &mut dyn Sink,
        ends: impl Fn(&FaultKind, Option<u32>) -> bool,
    ) {
        let ended: Vec<usize> = self
            .faults
            .active_faults
            .keys()
            .copied()
            .filter(|i| {
                ends(
                    &self.scenario.faults[*i].kind,
                    self.faults.fault_targets.get(i).copied(),
                )
            })
            .collect();
        for index in ended {
            self.faults.fault_targets.remove(&index);
            self.fault_end(now, index, sink);
        }
    }

    /// The GoCD environment of the pipelines using `profile`.
    pub(super) fn profile_environment(&self, profile: &str) -> Option<String> {
        self.scenario
            .profiles
            .iter()
            .find(|p| p.name == profile)
            .and_then(|p| p.environment.clone())
    }

    fn group_mask(&self, group: &str) -> GroupMask {
        match group {
            "gocd" => groups::GOCD,
            "kube-api" => groups::KUBE_API,
            "agents" => groups::AGENTS,
            "replicas" => groups::REPLICAS,
            "leader" => self.leader_mask(),
            other => other
                .strip_prefix("replica-")
                .and_then(|n| n.parse().ok())
                .map_or(GroupMask(0), groups::replica),
        }
    }

    /// Pods matching `target`, sorted by name, `count` of them chosen at random.
    fn pick_pods(&mut self, target: PodTarget, count: u32) -> Vec<String> {
        let candidates: Vec<String> = self
            .elastic
            .kube
            .pods()
            // A terminating pod is on its way out: deleting or failing it again does nothing.
            .filter(|pod| !pod.is_terminating())
            .filter(|pod| {
                let agent = self.elastic.server.db.agents.get(pod.name.as_str());
                match target {
                    PodTarget::Any => true,
                    PodTarget::Pending => pod.phase == PodPhase::Pending,
                    PodTarget::Idle => agent.is_some_and(|a| a.runtime == AgentRuntime::Idle),
                    PodTarget::Busy => agent.is_some_and(|a| a.runtime == AgentRuntime::Building),
                }
            })
            .map(|pod| pod.name.clone())
            .collect();
        self.choose(candidates, count)
    }

    /// Live jobs in `target`'s state, by id, `count` of them chosen at random.
    fn pick_jobs(&mut self, target: JobTarget, count: u32) -> Vec<u64> {
        if !self.elastic.server.is_up() {
            return Vec::new();
        }
        let state = match target {
            JobTarget::Building => JobState::Assigned,
            JobTarget::Scheduled => JobState::Scheduled,
        };
        let mut candidates: Vec<u64> = self
            .elastic
            .server
            .db
            .jobs
            .values()
            .filter(|job| job.state == state)
            .map(|job| job.id)
            .collect();
        let mut chosen = Vec::new();
        while chosen.len() < count as usize && !candidates.is_empty() {
            let index = self.faults.random_faults.below(candidates.len() as u64) as usize;
            chosen.push(candidates.swap_remove(index));
        }
        chosen.sort_unstable();
        chosen
    }

    /// `cluster_profile_edit`: the server's cluster profile takes the new values, and a
    /// `cluster_profile_edited` record says which settings later requests carry.
    fn edit_cluster_profile(
        &mut self,
        now: SimTime,
        set: &crate::scenario::ClusterProfileChanges,
        sink: &mut dyn Sink,
    ) -> String {
        let edited = edited_cluster_profile(&self.elastic.server.settings.cluster_profile, set);
        let record = Record::ClusterProfileEdited {
            cluster: CLUSTER_PROFILE_ID.to_owned(),
            pending_pods_count: edited.pending_pods_count,
            enable_agent_reuse: edited.enable_agent_reuse,
            auto_register_timeout_ms: edited.auto_register_timeout_ms,
            idle_timeout_ms: edited.idle_timeout_ms,
            max_pods: edited.max_pods,
        };
        self.server_step(now, ServerInput::SetClusterProfile(edited), sink);
        self.emit(sink, node::GOCD, record);
        CLUSTER_PROFILE_ID.to_owned()
    }

    fn choose(&mut self, mut candidates: Vec<String>, count: u32) -> Vec<String> {
        let mut chosen = Vec::new();
        while chosen.len() < count as usize && !candidates.is_empty() {
            let index = self.faults.random_faults.below(candidates.len() as u64) as usize;
            chosen.push(candidates.swap_remove(index));
        }
        chosen.sort();
        chosen
    }
}

/// The cluster profile after a `cluster_profile_edit`.
fn edited_cluster_profile(
    profile: &crate::allocator::ClusterProfile,
    set: &crate::scenario::ClusterProfileChanges,
) -> crate::allocator::ClusterProfile {
    let mut edited = profile.clone();
    if let Some(url) = &set.go_server_url {
        edited.go_server_url.clone_from(url);
    }
    if let Some(reuse) = set.enable_agent_reuse {
        edited.enable_agent_reuse = reuse;
    }
    if let Some(ms) = set.auto_register_timeout_ms {
        edited.auto_register_timeout_ms = ms;
    }
    if let Some(count) = set.pending_pods_count {
        edited.pending_pods_count = count;
    }
    if let Some(ms) = set.idle_timeout_ms {
        edited.idle_timeout_ms = ms;
    }
    if let Some(count) = set.max_pods {
        edited.max_pods = Some(count);
    }
    edited
}
