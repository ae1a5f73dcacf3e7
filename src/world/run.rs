//! The event loop.

use super::Sink;
use super::build::{World, WorldError};
use super::events::Event;
use crate::engine::SimTime;
use crate::gocd::{AgentInput, ServerInput, ServerOut, ServerReply};
use crate::kube::{KubeEffects, KubeTimer};
use crate::trace::Record;

/// Node names used in the trace.
pub(super) mod node {
    pub(crate) const GOCD: &str = "gocd";
    pub(crate) const KUBE_API: &str = "kube-api";
    pub(crate) const HARNESS: &str = "harness";
}

impl World {
    /// Run to the end of the settle phase, handing every record to `sink`: `start_run`, then
    /// `step` until it returns false.
    pub fn run(&mut self, sink: &mut dyn Sink) -> Result<(), WorldError> {
        self.start_run(sink);
        while self.step(sink)? {}
        Ok(())
    }

    pub(super) fn start(&mut self, sink: &mut dyn Sink) {
        let process_id = self.elastic.new_server_process();
        self.server_step(SimTime::ZERO, ServerInput::Start { process_id }, sink);
        self.elastic.queue_first_arrival(&mut self.queue);
        for index in 0..self.scenario.faults.len() {
            let at_ms = self.scenario.faults[index].at_ms;
            if at_ms < self.scenario.duration_ms {
                self.queue
                    .push(SimTime::from_ms(at_ms), Event::FaultStart { index });
            }
        }
        self.start_replicas(sink);
        self.queue.push(SimTime::ZERO, Event::Sample);
        self.queue.push(
            SimTime::from_ms(self.scenario.duration_ms),
            Event::SafetyEnd,
        );
        let end = self.scenario.duration_ms + self.scenario.settle_ms;
        self.queue.push(SimTime::from_ms(end), Event::End);
    }

    pub(super) fn emit(&mut self, sink: &mut dyn Sink, node: &str, record: Record) {
        sink.record_owned(self.queue.now().as_ms(), node, record);
    }

    pub(super) fn dispatch(&mut self, now: SimTime, event: Event, sink: &mut dyn Sink) {
        match event {
            Event::Arrival { index } => {
                self.elastic.queue_arrival(&mut self.queue, index + 1);
                self.arrive(now, index, sink);
            }
            Event::SingleArrival { index } => self.arrive(now, index, sink),
            Event::Server { epoch, timer } => {
                if self.nodes.is_current(self.gocd, epoch) {
                    self.server_step(now, ServerInput::Timer(timer), sink);
                }
            }
            Event::ServerRestart => self.restart_server(now, sink),
            Event::KubeArrive { call } => self.kube_arrive(now, call, sink),
            Event::KubeReturn { call } => self.kube_return(now, call, sink),
            Event::KubeTimeout { call } => self.kube_timeout(now, call, sink),
            Event::KubeDeadPeer { call, replica } => self.kube_dead_peer(now, call, replica, sink),
            Event::KubeServerTimeout { call } => self.kube_server_timeout(now, call, sink),
            Event::Kubelet(timer) => self.kubelet_timer(now, timer, sink),
            Event::AgentTimer {
                uid,
                incarnation,
                timer,
            } => {
                self.agent_input(now, uid, incarnation, AgentInput::Timer(timer));
            }
            Event::AgentArrive {
                uid,
                incarnation,
                request,
            } => {
                self.agent_arrive(now, uid, incarnation, request, sink);
            }
            Event::AgentReply {
                uid,
                incarnation,
                kind,
                reply,
            } => {
                let input = AgentInput::Reply { kind, reply };
                self.agent_input(now, uid, incarnation, input);
            }
            Event::Replica {
                replica,
                epoch,
                delivery,
            } => self.replica_event(now, (replica, epoch), delivery, sink),
            Event::ReplicaRestart { replica } => {
                // After the safety phase every replica is already running again.
                if !self.faults.safety_over() {
                    self.restart_replica(replica, sink);
                    self.end_replica_faults(now, replica, sink);
                }
            }
            Event::ReplicaResume { replica } => {
                self.resume_replica(now, replica, sink);
                self.end_replica_faults(now, replica, sink);
            }
            Event::ConfigChange { index } => self.config_change(now, index),
            Event::FaultStart { index } => self.fault_start(now, index, sink),
            Event::FaultEnd { index } => self.fault_end(now, index, sink),
            Event::Sample => self.sample(sink),
            Event::SafetyEnd => self.end_safety_phase(now, sink),
            Event::End => self.end_run(sink),
        }
    }

    /// A kubelet timer fired.
    fn kubelet_timer(&mut self, now: SimTime, timer: KubeTimer, sink: &mut dyn Sink) {
        let mut fx = KubeEffects::default();
        self.elastic.kubelet_timer(now, timer, &mut fx);
        self.apply_kube(now, fx, sink);
    }

    /// A sample record for the report's timeline, and the next sample.
    fn sample(&mut self, sink: &mut dyn Sink) {
        self.emit(sink, node::HARNESS, Record::Sample);
        self.queue
            .push_after(self.settings.sample_interval_ms, Event::Sample);
    }

    /// The run is over: nothing after this record happens.
    fn end_run(&mut self, sink: &mut dyn Sink) {
        self.emit(sink, node::HARNESS, Record::RunEnded);
        self.ended = true;
    }

    /// End the run now, because of `bound` (a bound's record), before the settle phase ends.
    fn stop_for(&mut self, bound: Record, sink: &mut dyn Sink) {
        self.emit(sink, node::HARNESS, bound);
        self.end_run(sink);
    }

    /// Arrival `index` reaches the server, or waits for its restart while it is down.
    fn arrive(&mut self, now: SimTime, index: usize, sink: &mut dyn Sink) {
        let Some(arrival) = self.elastic.arrival_for_server(index) else {
            return;
        };
        // GoCD sends the pipeline's environment with the job (gocd/gocd@f17b6f3fc9,
        // `ElasticAgentPluginService.createAgentsFor`: `envForPipeline`); a scenario job names
        // it, or inherits its profile's (the older spelling).
        let environment = match &arrival.environment {
            Some(environment) => Some(String::clone(environment)),
            None => self.profile_environment(&arrival.profile),
        };
        let input = ServerInput::ScheduleJob {
            logical: None,
            profile: String::clone(&arrival.profile),
            environment,
            runtime_ms: arrival.runtime_ms,
        };
        self.server_step(now, input, sink);
    }

    /// Hand `input` to the server at `now` (its one entry point) and apply what it asks for;
    /// returns the reply to an agent request ([`ServerInput::Agent`]), `None` for the rest.
    pub(super) fn server_step(
        &mut self,
        now: SimTime,
        input: ServerInput,
        sink: &mut dyn Sink,
    ) -> Option<ServerReply> {
        let mut out = self.elastic.server_step(now, input);
        let reply = out.reply.take();
        self.apply_server(now, out, sink);
        reply
    }

    /// Apply what the server asked for: records, Kubernetes calls, timers.
    pub(super) fn apply_server(&mut self, now: SimTime, out: ServerOut, sink: &mut dyn Sink) {
        for record in out.records {
            let stop = self.elastic.count_request(&record);
            self.emit(sink, node::GOCD, record);
            if let Some(stop) = stop {
                self.stop_for(stop, sink);
                return;
            }
        }
        let epoch = self.nodes.epoch(self.gocd);
        for (at_ms, timer) in out.timers {
            self.queue
                .push(SimTime::from_ms(at_ms), Event::Server { epoch, timer });
        }
        for (local, request) in out.kube_calls {
            self.send_plugin_call(now, epoch, local, request);
        }
        self.release_held(now, out.released);
    }

    /// Apply what the API server and kubelets asked for.
    pub(super) fn apply_kube(&mut self, now: SimTime, fx: KubeEffects, sink: &mut dyn Sink) {
        for record in fx.records {
            self.emit(sink, node::KUBE_API, record);
        }
        for (at, timer) in fx.timers {
            self.queue.push(at, Event::Kubelet(timer));
        }
        for uid in fx.agent_killed {
            self.elastic.kill_agent(uid);
        }
        for (uid, name) in fx.agent_started {
            self.start_agent(now, uid, &name);
        }
    }

    fn restart_server(&mut self, now: SimTime, sink: &mut dyn Sink) {
        if self.elastic.server_up() {
            return;
        }
        self.nodes.restart(self.gocd);
        let process_id = self.elastic.new_server_process();
        self.server_step(now, ServerInput::Start { process_id }, sink);
        self.end_server_crash_faults(now, sink);
        for index in self.elastic.take_deferred() {
            self.queue.push(now, Event::SingleArrival { index });
        }
    }

    /// `duration` reached: faults end (partitions heal, outages end, crashed processes come
    /// back) and no new jobs or faults start; the liveness phase begins.
    fn end_safety_phase(&mut self, now: SimTime, sink: &mut dyn Sink) {
        self.end_faults_of_safety_phase(now, sink);
        self.partitions.heal_all();
        self.partitions_changed(now);
        self.end_outage(now, sink);
        self.restart_server(now, sink);
        self.heal_replicas(now, sink);
        self.emit(sink, node::HARNESS, Record::SafetyPhaseEnded);
    }
}
