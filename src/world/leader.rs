//! Leader-election replicas on the engine: their clocks (offset and rate), crashes, pauses,
//! the configuration timeline, and the leader faults.
//!
//! A replica's `Replica` state machine only ever sees its own local time. The world maps real
//! (simulated) time to each replica's clock — `local = anchor_local + (real − anchor_real) ×
//! rate` — so clock offsets and drift are observable exactly as client-go would experience
//! them. A paused replica (GC, SIGSTOP) receives nothing until it resumes: its due timers and
//! answers are delivered late, in order.

use super::Sink;
use super::build::{Client, World, groups};
use super::events::{Event, ReplicaDelivery};
use crate::component::Component;
use crate::component::Random;
use crate::engine::{Epoch, GroupMask, NodeId, SimTime, Stream, StreamId};
use crate::leader::{Input, LeaderSettings, ModuleSpec, Observation, Output, Replica, Variant};
use crate::resources::KubeRequest;
use crate::trace::{Actor, Record};
use std::collections::BTreeMap;

/// The Lease all replicas compete for (agentk: `agent-<agentId>-lock`).
pub(super) const LEASE_NAME: &str = "agent-1-lock";
/// Trace node name of replica records.
const NODE: &str = "replica";

/// A replica's clock: `local = anchor_local + (real − anchor_real) × rate`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Clock {
    anchor_real_ms: u64,
    anchor_local_ms: u64,
    rate: f64,
}

impl Clock {
    pub(super) fn local(&self, real: SimTime) -> u64 {
        let elapsed = real.as_ms().saturating_sub(self.anchor_real_ms) as f64;
        self.anchor_local_ms + (elapsed * self.rate).floor() as u64
    }

    /// The first real instant at which the local clock reads at least `local_ms`.
    pub(super) fn real(&self, local_ms: u64) -> SimTime {
        let ahead = local_ms.saturating_sub(self.anchor_local_ms) as f64;
        SimTime::from_ms(self.anchor_real_ms + (ahead / self.rate).ceil() as u64)
    }

    /// Change the rate from `now` on, keeping the reading continuous.
    fn set_rate(&mut self, now: SimTime, rate: f64) {
        self.anchor_local_ms = self.local(now);
        self.anchor_real_ms = now.as_ms();
        self.rate = rate;
    }
}

/// The leader-election side of a run: the replicas, the runner variant they run, and the
/// configuration the `[[leader.config]]` entries have set so far.
pub(super) struct LeaderHarness {
    pub(super) replicas: Vec<ReplicaNode>,
    pub(super) variant: Option<Variant>,
    /// The configuration flags as of the latest `[[leader.config]]` entry, and every version.
    pub(super) config_flags: BTreeMap<String, bool>,
    pub(super) config_version: u64,
    pub(super) config_history: BTreeMap<u64, BTreeMap<String, bool>>,
    pub(super) random_leader: Stream,
}

impl LeaderHarness {
    /// No replicas yet (`World::add_replicas` adds them), running `variant` (the scenario's
    /// unless the run names another; a scenario without `[leader]` has no replicas, so `None`
    /// runs none).
    pub(super) fn new(seed: u64, variant: Option<Variant>) -> LeaderHarness {
        LeaderHarness {
            replicas: Vec::new(),
            variant,
            config_flags: BTreeMap::new(),
            config_version: 0,
            config_history: BTreeMap::new(),
            random_leader: Stream::new(seed, StreamId::Leader),
        }
    }
}

/// One replica process slot.
pub(super) struct ReplicaNode {
    pub(super) node: NodeId,
    pub(super) process: Option<Replica>,
    pub(super) clock: Clock,
    pub(super) random: Stream,
    pub(super) paused_until: Option<SimTime>,
    /// A graceful stop is under way: the new process starts this long after the old exits.
    pub(super) restart_after_exit_ms: Option<u64>,
    /// When the process last heard from the API server on its connection (an answer, or
    /// the connection's start); the HTTP/2 dead-peer deadline counts from here.
    pub(super) last_answer: SimTime,
    /// Its connection died while cut off: requests wait on a new dial since then.
    pub(super) dialing_since: Option<SimTime>,
    /// Since when the replica cannot reach the API server (`None`: it can, so its
    /// connection's pings are answered).
    pub(super) cut_since: Option<SimTime>,
}

impl World {
    /// Settings of replica `index`.
    fn leader_settings(&self, index: u32) -> LeaderSettings {
        let leader = self
            .scenario
            .leader
            .as_ref()
            .expect("replicas exist only with [leader]");
        LeaderSettings {
            identity: format!("agentk-{index}"),
            lease_name: LEASE_NAME.to_owned(),
            lease_duration_ms: leader.lease_duration_ms,
            renew_deadline_ms: leader.renew_deadline_ms,
            retry_period_ms: leader.retry_period_ms,
            variant: self.leader.variant.unwrap_or(leader.variant),
            modules: leader
                .modules
                .iter()
                .map(|m| ModuleSpec {
                    name: m.name.clone(),
                    runnable_when: m.runnable_when.clone(),
                    work_ctx: m.work_ctx,
                })
                .collect(),
            module_stop_latency_ms_min: leader.module_stop_latency.min_ms,
            module_stop_latency_ms_max: leader.module_stop_latency.max_ms,
            module_behaviour: leader.module_behaviour,
            ablations: self
                .scenario
                .ablations
                .owned_by(crate::ablation::Owner::Fixed),
        }
    }

    /// Create the replica nodes (at build time). Clocks start at large, different offsets:
    /// client-go must not care.
    pub(super) fn add_replicas(&mut self) {
        let Some(leader) = &self.scenario.leader else {
            return;
        };
        for index in 0..leader.replicas {
            let node = self.nodes.add();
            let mut random = self.leader.random_leader.fork();
            let offset_ms = 1_000_000_000 + random.below(3_600_000) + u64::from(index) * 86_400_000;
            let clock = Clock {
                anchor_real_ms: 0,
                anchor_local_ms: offset_ms,
                rate: 1.0,
            };
            self.leader.replicas.push(ReplicaNode {
                node,
                process: None,
                clock,
                random,
                paused_until: None,
                restart_after_exit_ms: None,
                last_answer: SimTime::from_ms(0),
                dialing_since: None,
                cut_since: None,
            });
        }
    }

    /// Start every replica and schedule the configuration timeline.
    pub(super) fn start_replicas(&mut self, sink: &mut dyn Sink) {
        let Some(leader) = &self.scenario.leader else {
            return;
        };
        let changes = leader.config.len();
        for index in 0..changes {
            let at = SimTime::from_ms(leader.config[index].at_ms);
            self.queue.push(at, Event::ConfigChange { index });
        }
        for index in 0..self.leader.replicas.len() as u32 {
            self.start_replica(index, sink);
        }
    }

    fn start_replica(&mut self, index: u32, sink: &mut dyn Sink) {
        let now = self.queue.now();
        let replica = Replica::new(self.leader_settings(index))
            .expect("scenario validation checked LD > RD > 1.2 RP");
        let slot = &mut self.leader.replicas[index as usize];
        slot.process = Some(replica);
        slot.restart_after_exit_ms = None;
        // A new process opens a new connection.
        slot.last_answer = now;
        slot.dialing_since = None;
        self.emit(sink, NODE, Record::ReplicaStarted { replica: index });
        self.replica_input(now, index, Input::Start, sink);
        // The configuration watcher delivers the current configuration shortly after start.
        if self.leader.config_version > 0 {
            let delay = self.leader.replicas[index as usize]
                .random
                .range_inclusive(50, 500);
            let epoch = self.nodes.epoch(self.leader.replicas[index as usize].node);
            let version = self.leader.config_version;
            self.queue.push(
                now.plus_ms(delay),
                Event::Replica {
                    replica: index,
                    epoch,
                    delivery: ReplicaDelivery::Config { version },
                },
            );
        }
    }

    /// A `[[leader.config]]` entry takes effect: every replica gets it after a small delay.
    pub(super) fn config_change(&mut self, now: SimTime, index: usize) {
        let leader = self
            .scenario
            .leader
            .as_ref()
            .expect("config timeline needs [leader]");
        for (flag, value) in &leader.config[index].set {
            self.leader.config_flags.insert(flag.clone(), *value);
        }
        self.leader.config_version += 1;
        self.leader
            .config_history
            .insert(self.leader.config_version, self.leader.config_flags.clone());
        let version = self.leader.config_version;
        for replica in 0..self.leader.replicas.len() as u32 {
            let slot = &mut self.leader.replicas[replica as usize];
            let delay = slot.random.range_inclusive(0, 300);
            let epoch = self.nodes.epoch(slot.node);
            self.queue.push(
                now.plus_ms(delay),
                Event::Replica {
                    replica,
                    epoch,
                    delivery: ReplicaDelivery::Config { version },
                },
            );
        }
    }

    /// True if the replica is paused: the delivery is put back until it resumes.
    fn deferred_by_pause(
        &mut self,
        index: u32,
        epoch: Epoch,
        delivery: ReplicaDelivery,
    ) -> Option<ReplicaDelivery> {
        match self.leader.replicas[index as usize].paused_until {
            Some(until) => {
                let event = Event::Replica {
                    replica: index,
                    epoch,
                    delivery,
                };
                self.queue.push(until, event);
                None
            }
            None => Some(delivery),
        }
    }

    /// A timer or a configuration reaches replica `index` of process `epoch`: dropped if the
    /// process is gone, held while it is paused or its clock has not reached the timer.
    pub(super) fn replica_event(
        &mut self,
        now: SimTime,
        (index, epoch): (u32, Epoch),
        delivery: ReplicaDelivery,
        sink: &mut dyn Sink,
    ) {
        if !self
            .nodes
            .is_current(self.leader.replicas[index as usize].node, epoch)
        {
            return;
        }
        let Some(delivery) = self.deferred_by_pause(index, epoch, delivery) else {
            return;
        };
        let input = match delivery {
            // A clock that slowed down since the timer was set has not reached its local
            // time yet: the timer waits (a replica never sees a timer before it is due).
            ReplicaDelivery::Timer { token, at_local_ms } => {
                let clock = self.leader.replicas[index as usize].clock;
                if clock.local(now) < at_local_ms {
                    let event = Event::Replica {
                        replica: index,
                        epoch,
                        delivery: ReplicaDelivery::Timer { token, at_local_ms },
                    };
                    self.queue
                        .push(clock.real(at_local_ms).max(now.plus_ms(1)), event);
                    return;
                }
                Input::Timer(token)
            }
            ReplicaDelivery::Config { version } => Input::Config {
                version,
                flags: self
                    .leader
                    .config_history
                    .get(&version)
                    .cloned()
                    .unwrap_or_default(),
            },
        };
        self.replica_input(now, index, input, sink);
    }

    /// Feed one input to a replica at its local time and apply its output.
    pub(super) fn replica_input(
        &mut self,
        now: SimTime,
        index: u32,
        input: Input,
        sink: &mut dyn Sink,
    ) {
        let slot = &mut self.leader.replicas[index as usize];
        let Some(process) = slot.process.as_mut() else {
            return;
        };
        let local = slot.clock.local(now);
        let mut out = Output::default();
        process.handle(local, input, &mut slot.random, &mut out);
        let epoch = self.nodes.epoch(slot.node);
        let clock = slot.clock;
        for timer in out.timers {
            let at = clock.real(timer.at_local_ms).max(now);
            self.queue.push(
                at,
                Event::Replica {
                    replica: index,
                    epoch,
                    delivery: ReplicaDelivery::Timer {
                        token: timer.token,
                        at_local_ms: timer.at_local_ms,
                    },
                },
            );
        }
        for call in out.calls {
            let timeout = call
                .timeout_ms
                .map(|ms| clock.real(clock.local(now) + ms).since(now).max(1));
            self.send_call(
                now,
                Client::Replica {
                    index,
                    epoch,
                    call: call.call,
                },
                call.request,
                timeout,
            );
        }
        for observation in out.observations {
            let record = observation_record(index, observation);
            self.emit(sink, NODE, record);
        }
        self.end_delivered_callback_delays(now, index, sink);
        self.exit_if_stopped(now, index, sink);
    }

    /// `replica_stop`: SIGTERM. The process shuts down gracefully (modules, then the
    /// elector and its release) and exits when done; a new one starts `downtime_ms` later.
    pub(super) fn stop_replica(
        &mut self,
        now: SimTime,
        index: u32,
        downtime_ms: u64,
        sink: &mut dyn Sink,
    ) -> bool {
        let slot = &mut self.leader.replicas[index as usize];
        if slot.process.is_none()
            || slot.paused_until.is_some()
            || slot.restart_after_exit_ms.is_some()
        {
            return false;
        }
        slot.restart_after_exit_ms = Some(downtime_ms);
        self.replica_input(now, index, Input::Shutdown, sink);
        true
    }

    /// A process whose graceful shutdown finished exits.
    fn exit_if_stopped(&mut self, now: SimTime, index: u32, sink: &mut dyn Sink) {
        let slot = &mut self.leader.replicas[index as usize];
        let exited = slot.process.as_ref().is_some_and(Replica::has_exited);
        let Some(downtime_ms) = slot.restart_after_exit_ms.filter(|_| exited) else {
            return;
        };
        slot.process = None;
        slot.restart_after_exit_ms = None;
        let node = slot.node;
        self.nodes.crash(node);
        self.emit(sink, NODE, Record::ReplicaStopped { replica: index });
        self.queue.push(
            now.plus_ms(downtime_ms),
            Event::ReplicaRestart { replica: index },
        );
    }

    /// The replica currently leading (holder of the Lease, else the one believing it leads).
    pub(super) fn leading_replica(&self) -> Option<u32> {
        let holder = self
            .elastic
            .kube
            .lease(LEASE_NAME)
            .map(|l| l.spec.holder_identity.clone());
        if let Some(index) = holder.and_then(|h| {
            h.strip_prefix("agentk-")
                .and_then(|n| n.parse::<u32>().ok())
        }) {
            return Some(index);
        }
        (0..self.leader.replicas.len() as u32).find(|i| {
            self.leader.replicas[*i as usize]
                .process
                .as_ref()
                .is_some_and(|p| p.believed_term().is_some())
        })
    }

    pub(super) fn replica_index(&self, replica: crate::scenario::ReplicaRef) -> Option<u32> {
        match replica {
            crate::scenario::ReplicaRef::Index(index) => {
                (index < self.leader.replicas.len() as u32).then_some(index)
            }
            crate::scenario::ReplicaRef::Leader => self.leading_replica(),
        }
    }

    /// `replica_crash`: the process dies (no release); it restarts after `downtime_ms`.
    pub(super) fn crash_replica(
        &mut self,
        now: SimTime,
        index: u32,
        downtime_ms: u64,
        sink: &mut dyn Sink,
    ) -> bool {
        let slot = &mut self.leader.replicas[index as usize];
        if slot.process.is_none() {
            return false;
        }
        slot.process = None;
        slot.paused_until = None;
        slot.restart_after_exit_ms = None;
        let node = slot.node;
        self.nodes.crash(node);
        self.emit(sink, NODE, Record::ReplicaStopped { replica: index });
        self.end_delivered_callback_delays(now, index, sink);
        self.queue.push(
            now.plus_ms(downtime_ms),
            Event::ReplicaRestart { replica: index },
        );
        true
    }

    pub(super) fn restart_replica(&mut self, index: u32, sink: &mut dyn Sink) {
        let slot = &self.leader.replicas[index as usize];
        if slot.process.is_some() {
            return;
        }
        let node = slot.node;
        self.nodes.restart(node);
        self.start_replica(index, sink);
    }

    /// `replica_pause`: frozen until `now + for_ms`.
    pub(super) fn pause_replica(
        &mut self,
        now: SimTime,
        index: u32,
        for_ms: u64,
        sink: &mut dyn Sink,
    ) -> bool {
        let slot = &mut self.leader.replicas[index as usize];
        if slot.process.is_none() || slot.paused_until.is_some() {
            return false;
        }
        let until = now.plus_ms(for_ms);
        slot.paused_until = Some(until);
        self.emit(sink, NODE, Record::ReplicaPaused { replica: index });
        self.queue
            .push(until, Event::ReplicaResume { replica: index });
        true
    }

    pub(super) fn resume_replica(&mut self, now: SimTime, index: u32, sink: &mut dyn Sink) {
        let slot = &mut self.leader.replicas[index as usize];
        if slot.paused_until.is_none_or(|until| until > now) {
            return;
        }
        slot.paused_until = None;
        self.emit(sink, NODE, Record::ReplicaResumed { replica: index });
    }

    pub(super) fn drift_replica(&mut self, now: SimTime, index: u32, rate: f64) {
        self.leader.replicas[index as usize]
            .clock
            .set_rate(now, rate);
    }

    /// `lease_delete`: a third party deletes the Lease.
    pub(super) fn delete_lease(&mut self, now: SimTime, sink: &mut dyn Sink) -> bool {
        let request = KubeRequest::DeleteLease {
            name: LEASE_NAME.to_owned(),
        };
        let input = crate::kube::ApiRequest {
            actor: Actor::External,
            request,
        };
        self.api_request(now, input, sink).is_ok()
    }

    /// End of the safety phase: crashed replicas restart, paused ones resume, clocks run true.
    pub(super) fn heal_replicas(&mut self, now: SimTime, sink: &mut dyn Sink) {
        for index in 0..self.leader.replicas.len() as u32 {
            if self.leader.replicas[index as usize].paused_until.is_some() {
                self.leader.replicas[index as usize].paused_until = Some(now);
                self.resume_replica(now, index, sink);
            }
            self.drift_replica(now, index, 1.0);
            self.restart_replica(index, sink);
            if let Some(process) = self.leader.replicas[index as usize].process.as_mut() {
                process.disarm_callback_delay();
            }
            self.end_delivered_callback_delays(now, index, sink);
        }
    }

    /// The partition mask of `leader` at this moment.
    pub(super) fn leader_mask(&self) -> GroupMask {
        self.leading_replica().map_or(GroupMask(0), groups::replica)
    }
}

/// The trace record of one replica observation (the mapping is 1:1).
pub(crate) fn observation_record(replica: u32, observation: Observation) -> Record {
    match observation {
        Observation::ConfigReceived {
            version,
            runnable_modules,
        } => Record::ConfigReceived {
            replica,
            version,
            runnable_modules,
        },
        Observation::ElectionStarted => Record::ElectionStarted { replica },
        Observation::ElectionStopped => Record::ElectionStopped { replica },
        Observation::LeaseHeld { term } => Record::LeaseHeld { replica, term },
        Observation::LeadingStarted { term } => Record::LeadingStarted { replica, term },
        Observation::LeadingStopped { term } => Record::LeadingStopped { replica, term },
        Observation::ModuleStarted { module, term } => Record::ModuleStarted {
            replica,
            module,
            term,
        },
        Observation::ModuleStopped { module } => Record::ModuleStopped { replica, module },
        Observation::ModuleConfig { module, version } => Record::ModuleConfig {
            replica,
            module,
            version,
        },
        Observation::ModuleAction { module } => Record::ModuleAction { replica, module },
        Observation::RunnerBlocked { waits_in, modules } => Record::RunnerBlocked {
            replica,
            waits_in,
            modules,
        },
    }
}
