//! The elastic-agent side of a run: the GoCD server (with the plugin inside), the simulated
//! Kubernetes API and kubelets, the go-agent processes, and the jobs still to arrive.
//!
//! Its state is private to this file: the world routes between it and the rest of the run
//! (the queue, the network, the faults) through the methods below, each of which touches
//! only this side's models and streams. What crosses comes in as arguments (the time, the
//! queue to put an arrival on, the fault stream a fault draws from) and goes back as values
//! (a server's or an agent's output, the API server's effects). The go-agent processes'
//! part is in `processes.rs`.

mod processes;

use super::agent_table::ProcessTable;
use super::build::Arrival;
use super::events::Event;
use super::requests::RequestBound;
use crate::component::{Component, Random};
use crate::engine::{Queue, SimTime, Stream, StreamId};
use crate::gocd::{AgentAction, AgentIds, GoAgent, Server};
use crate::gocd::{ServerInput, ServerOut};
use crate::kube::{ApiOutput, ApiRequest, KubeApi, KubeEffects, KubeTimer, KubeletInput};
use crate::scenario::PodTarget;
use crate::trace::{AgentRuntime, Record};
use std::collections::BTreeMap;

/// The elastic-agent models of one run and the state the world keeps to route between them.
pub(super) struct Elastic {
    server: Server,
    kube: KubeApi,
    agents: ProcessTable<GoAgent>,
    /// Elastic agent ids, numbered in first-seen order.
    agent_ids: AgentIds,
    arrivals: Vec<Arrival>,
    /// The sequence number reserved for `arrivals[0]`; planned arrival `i` has this plus `i`.
    arrival_sequence: u64,
    /// How many of `arrivals` were planned before the run (job-burst faults append more).
    planned_arrival_count: usize,
    /// A reused buffer for the actions of the go-agent handling the current event.
    agent_actions: Vec<AgentAction>,
    /// Arrivals that came while the server was down, scheduled at its restart.
    deferred: Vec<usize>,
    /// get-work requests the server holds, by hold id: the agent's uid and incarnation.
    held_get_work: BTreeMap<u64, (u64, u32)>,
    /// `bounded-requests`: ends the run in a request storm.
    request_bound: RequestBound,
    random_kubelet: Stream,
    random_server: Stream,
    random_agents: Stream,
    /// Go-agent boot times, drawn from `[server] agent_boot` at each container start.
    random_agent_boot: Stream,
}

impl Elastic {
    /// The models before the run, with the planned `arrivals`; `requests_per_job_max` bounds
    /// the server's requests per job (`bounded-requests`).
    pub(super) fn new(
        server: Server,
        kube: KubeApi,
        arrivals: Vec<Arrival>,
        requests_per_job_max: Option<u64>,
        seed: u64,
    ) -> Elastic {
        Elastic {
            server,
            kube,
            agents: ProcessTable::default(),
            agent_ids: AgentIds::default(),
            planned_arrival_count: arrivals.len(),
            arrivals,
            arrival_sequence: 0,
            agent_actions: Vec::new(),
            deferred: Vec::new(),
            held_get_work: BTreeMap::new(),
            request_bound: RequestBound::new(requests_per_job_max),
            random_kubelet: Stream::new(seed, StreamId::Kubelet),
            random_server: Stream::new(seed, StreamId::Server),
            random_agents: Stream::new(seed, StreamId::Agents),
            random_agent_boot: Stream::new(seed, StreamId::AgentBoot),
        }
    }

    /// The simulated API server, read-only (pods, Leases).
    pub(super) fn kube(&self) -> &KubeApi {
        &self.kube
    }

    /// The GoCD server, read-only (its profiles, agents and jobs as a fault targets them).
    pub(super) fn server(&self) -> &Server {
        &self.server
    }

    /// True while the server process runs.
    pub(super) fn server_up(&self) -> bool {
        self.server.is_up()
    }

    /// Every arrival: the planned ones in time order, then those job-burst faults added.
    pub(super) fn arrivals(&self) -> &[Arrival] {
        &self.arrivals
    }

    /// The id of a new server process (at the first boot and at each restart).
    pub(super) fn new_server_process(&mut self) -> u64 {
        self.random_server.next_u64()
    }

    /// Hand `input` to the server at `now` (its one entry point); what it wants done.
    pub(super) fn server_step(&mut self, now: SimTime, input: ServerInput) -> ServerOut {
        // Every timer of a running server is queued and none is dropped, so the one popping
        // now is the earliest not fired: the server's next deadline.
        debug_assert!(
            !matches!(input, ServerInput::Timer(_))
                || self.server.next_deadline() == Some(now.as_ms()),
            "the server's next deadline {:?} when {input:?} fires at {now}",
            self.server.next_deadline()
        );
        let mut out = ServerOut::default();
        let random = &mut self.random_server;
        self.server.handle(now.as_ms(), input, random, &mut out);
        out
    }

    /// Count one server record against `bounded-requests`: the record that ends the run, if
    /// this one passes the bound.
    pub(super) fn count_request(&mut self, record: &Record) -> Option<Record> {
        self.request_bound.observe(record)
    }

    /// Reserve the planned arrivals' sequence numbers on `queue` and queue the first one.
    /// Arrivals are in time order: only the next one waits in the queue, under the sequence
    /// number it would have had if all were queued now (same order, small heap).
    pub(super) fn queue_first_arrival(&mut self, queue: &mut Queue<Event>) {
        let count = self.planned_arrival_count as u64;
        self.arrival_sequence = queue.reserve_sequences(count);
        self.queue_arrival(queue, 0);
    }

    /// Queue planned arrival `index`, if there is one, under its reserved sequence number.
    pub(super) fn queue_arrival(&self, queue: &mut Queue<Event>, index: usize) {
        if index < self.planned_arrival_count {
            let at = SimTime::from_ms(self.arrivals[index].at_ms);
            let sequence = self.arrival_sequence + index as u64;
            queue.push_reserved(at, sequence, Event::Arrival { index });
        }
    }

    /// Arrival `index` for the server to schedule; `None` while the server is down (it waits
    /// for the restart, [`Elastic::take_deferred`]).
    pub(super) fn arrival_for_server(&mut self, index: usize) -> Option<Arrival> {
        if !self.server.is_up() {
            self.deferred.push(index);
            return None;
        }
        Some(self.arrivals[index].clone())
    }

    /// A job-burst fault's job joins the arrivals; its index.
    pub(super) fn add_arrival(&mut self, arrival: Arrival) -> usize {
        self.arrivals.push(arrival);
        self.arrivals.len() - 1
    }

    /// The arrivals that came while the server was down, in their order.
    pub(super) fn take_deferred(&mut self) -> Vec<usize> {
        std::mem::take(&mut self.deferred)
    }

    /// The API server handles `input` now (its writes' kubelet work draws from the kubelet
    /// stream).
    pub(super) fn api_request(&mut self, now: SimTime, input: ApiRequest) -> ApiOutput {
        let mut out = ApiOutput::default();
        let random = &mut self.random_kubelet;
        self.kube
            .api_server()
            .handle(now.as_ms(), input, random, &mut out);
        out
    }

    /// Hand `input` to the kubelets; they draw from the kubelet stream.
    pub(super) fn kubelet_input(
        &mut self,
        now: SimTime,
        input: KubeletInput,
        fx: &mut KubeEffects,
    ) {
        let random = &mut self.random_kubelet;
        self.kube.kubelets().handle(now.as_ms(), input, random, fx);
    }

    /// A kubelet timer fired.
    pub(super) fn kubelet_timer(&mut self, now: SimTime, timer: KubeTimer, fx: &mut KubeEffects) {
        // Every kubelet timer asked for is queued and none is dropped, so the one popping
        // now is the earliest not fired: the kubelets' next deadline.
        debug_assert_eq!(
            self.kube.kubelets().next_deadline(),
            Some(now.as_ms()),
            "the kubelets' next deadline when {timer:?} fires"
        );
        self.kubelet_input(now, KubeletInput::Timer(timer), fx);
    }

    /// A fault acts on the kubelets (a node lost or added), drawing from the fault's own
    /// stream `random`.
    pub(super) fn kubelet_fault(
        &mut self,
        now: SimTime,
        input: KubeletInput,
        random: &mut dyn Random,
        fx: &mut KubeEffects,
    ) {
        self.kube.kubelets().handle(now.as_ms(), input, random, fx);
    }

    /// Pods a pod fault may hit, by name: not terminating (deleting or failing one again
    /// does nothing), and matching `target` as the pod and the server see them now.
    pub(super) fn pods_in(&self, target: PodTarget) -> Vec<String> {
        let runtime = |pod: &crate::resources::Pod| self.server.agent_runtime(pod.name.as_str());
        self.kube
            .pods()
            .filter(|pod| !pod.is_terminating())
            .filter(|pod| match target {
                PodTarget::Any => true,
                PodTarget::Pending => pod.phase == crate::resources::PodPhase::Pending,
                PodTarget::Idle => runtime(pod) == Some(AgentRuntime::Idle),
                PodTarget::Busy => runtime(pod) == Some(AgentRuntime::Building),
            })
            .map(|pod| pod.name.clone())
            .collect()
    }
}
