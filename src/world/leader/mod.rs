//! Leader-election replicas on the engine: their clocks (offset and rate), crashes, pauses,
//! the configuration timeline, and the leader faults.
//!
//! A replica's `Replica` state machine only ever sees its own local time. The world maps real
//! (simulated) time to each replica's clock — `local = anchor_local + (real − anchor_real) ×
//! rate` — so clock offsets and drift are observable exactly as client-go would experience
//! them. A paused replica (GC, SIGSTOP) receives nothing until it resumes: its due timers and
//! answers are delivered late, in order.
//!
//! The replicas' own state (processes, clocks, pauses, connections, the configuration
//! timeline) is the [`LeaderHarness`]'s, private to `harness.rs`; the world's methods here
//! route: they decide what happens to which replica and carry what crosses (events on the
//! queue, node epochs, trace records, Kubernetes calls).

mod harness;

use super::Sink;
use super::build::{Client, World, groups};
use super::events::{Event, ReplicaDelivery};
use crate::engine::{Epoch, GroupMask, SimTime};
use crate::leader::{Input, LeaderSettings, ModuleSpec, Observation, Replica};
use crate::resources::KubeRequest;
use crate::trace::{Actor, Record};
pub(super) use harness::LeaderHarness;

/// The Lease all replicas compete for (agentk: `agent-<agentId>-lock`).
pub(super) const LEASE_NAME: &str = "agent-1-lock";
/// Trace node name of replica records.
const NODE: &str = "replica";

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
            variant: self.leader.variant().unwrap_or(leader.variant),
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

    /// Create the replica nodes (at build time), each on a node of its own.
    pub(super) fn add_replicas(&mut self) {
        let Some(leader) = &self.scenario.leader else {
            return;
        };
        for _ in 0..leader.replicas {
            let node = self.nodes.add();
            self.leader.add_replica(node);
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
        for index in 0..self.leader.count() {
            self.start_replica(index, sink);
        }
    }

    fn start_replica(&mut self, index: u32, sink: &mut dyn Sink) {
        let now = self.queue.now();
        let replica = Replica::new(self.leader_settings(index))
            .expect("scenario validation checked LD > RD > 1.2 RP");
        // A new process opens a new connection.
        self.leader.start(index, replica, now);
        self.emit(sink, NODE, Record::ReplicaStarted { replica: index });
        self.replica_input(now, index, Input::Start, sink);
        // The configuration watcher delivers the current configuration shortly after start.
        let version = self.leader.config_version();
        if version > 0 {
            let delay = self.leader.draw_delay_ms(index, 50, 500);
            let epoch = self.nodes.epoch(self.leader.node(index));
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
        let version = self.leader.configure(&leader.config[index].set);
        for replica in 0..self.leader.count() {
            let delay = self.leader.draw_delay_ms(replica, 0, 300);
            let epoch = self.nodes.epoch(self.leader.node(replica));
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
        match self.leader.paused_until(index) {
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
        if !self.nodes.is_current(self.leader.node(index), epoch) {
            return;
        }
        let Some(delivery) = self.deferred_by_pause(index, epoch, delivery) else {
            return;
        };
        let input = match delivery {
            // A clock that slowed down since the timer was set has not reached its local
            // time yet: the timer waits (a replica never sees a timer before it is due).
            ReplicaDelivery::Timer { token, at_local_ms } => {
                let clock = self.leader.clock(index);
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
                flags: self.leader.config(version),
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
        let Some((out, clock)) = self.leader.handle(index, now, input) else {
            return;
        };
        let epoch = self.nodes.epoch(self.leader.node(index));
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
        if !self.leader.begin_stop(index, downtime_ms) {
            return false;
        }
        self.replica_input(now, index, Input::Shutdown, sink);
        true
    }

    /// A process whose graceful shutdown finished exits.
    fn exit_if_stopped(&mut self, now: SimTime, index: u32, sink: &mut dyn Sink) {
        let Some(downtime_ms) = self.leader.take_exited(index) else {
            return;
        };
        self.nodes.crash(self.leader.node(index));
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
            .kube()
            .lease(LEASE_NAME)
            .map(|l| l.spec.holder_identity.clone());
        if let Some(index) = holder.and_then(|h| {
            h.strip_prefix("agentk-")
                .and_then(|n| n.parse::<u32>().ok())
        }) {
            return Some(index);
        }
        self.leader.believed_leader()
    }

    pub(super) fn replica_index(&self, replica: crate::scenario::ReplicaRef) -> Option<u32> {
        match replica {
            crate::scenario::ReplicaRef::Index(index) => {
                (index < self.leader.count()).then_some(index)
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
        if !self.leader.kill(index) {
            return false;
        }
        self.nodes.crash(self.leader.node(index));
        self.emit(sink, NODE, Record::ReplicaStopped { replica: index });
        self.end_delivered_callback_delays(now, index, sink);
        self.queue.push(
            now.plus_ms(downtime_ms),
            Event::ReplicaRestart { replica: index },
        );
        true
    }

    pub(super) fn restart_replica(&mut self, index: u32, sink: &mut dyn Sink) {
        if self.leader.is_running(index) {
            return;
        }
        self.nodes.restart(self.leader.node(index));
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
        let until = now.plus_ms(for_ms);
        if !self.leader.pause(index, until) {
            return false;
        }
        self.emit(sink, NODE, Record::ReplicaPaused { replica: index });
        self.queue
            .push(until, Event::ReplicaResume { replica: index });
        true
    }

    pub(super) fn resume_replica(&mut self, now: SimTime, index: u32, sink: &mut dyn Sink) {
        if !self.leader.resume(index, now) {
            return;
        }
        self.emit(sink, NODE, Record::ReplicaResumed { replica: index });
    }

    pub(super) fn drift_replica(&mut self, now: SimTime, index: u32, rate: f64) {
        self.leader.set_rate(index, now, rate);
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
        for index in 0..self.leader.count() {
            if self.leader.cut_pause_short(index, now) {
                self.resume_replica(now, index, sink);
            }
            self.drift_replica(now, index, 1.0);
            self.restart_replica(index, sink);
            self.leader.disarm_callback_delay(index);
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
