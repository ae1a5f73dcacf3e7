//! Kubernetes calls in flight: latency, partitions, outages, client timeouts.

use super::Sink;
use super::build::{Client, PendingCall, World, groups};
use super::events::Event;
use super::run::node;
use crate::allocator::CallId;
use crate::engine::{Epoch, GroupMask, SimTime};
use crate::gocd::ServerOut;
use crate::kube::KubeEffects;
use crate::resources::{KubeError, KubeRequest};
use crate::scenario::OutageMode;
use crate::trace::{Actor, Record};

impl World {
    fn api_latency_ms(&mut self) -> u64 {
        let range = self.scenario.cluster.api_latency;
        super::build::draw(&mut self.random_network, range)
    }

    fn client_mask(client: Client) -> GroupMask {
        match client {
            Client::Plugin { .. } => groups::GOCD,
            Client::Replica { index, .. } => groups::REPLICAS.union(groups::replica(index)),
        }
    }

    /// The plugin issues a call; it gives up after `cluster_request_timeout`.
    pub(super) fn send_plugin_call(
        &mut self,
        now: SimTime,
        epoch: Epoch,
        local: CallId,
        request: KubeRequest,
    ) {
        let timeout = self.scenario.plugin.cluster_request_timeout_ms;
        self.send_call(
            now,
            Client::Plugin { epoch, call: local },
            request,
            Some(timeout),
        );
    }

    /// A client issues a call: it travels to the API server unless a partition drops it, and
    /// the client gives up after `timeout_ms` (real milliseconds), if any.
    pub(super) fn send_call(
        &mut self,
        now: SimTime,
        client: Client,
        request: KubeRequest,
        timeout_ms: Option<u64>,
    ) {
        self.next_call += 1;
        let call = self.next_call;
        let reaches = self
            .partitions
            .connected(Self::client_mask(client), groups::KUBE_API);
        // A dropped request never reaches the server; the client still waits for its timeout.
        let request = reaches.then_some(request);
        self.calls.insert(
            call,
            PendingCall {
                client,
                request,
                result: None,
                done: false,
            },
        );
        if reaches {
            let latency = self.api_latency_ms();
            self.queue
                .push(now.plus_ms(latency), Event::KubeArrive { call });
        }
        if let Some(timeout) = timeout_ms {
            self.queue
                .push(now.plus_ms(timeout), Event::KubeTimeout { call });
        }
    }

    /// A request reaches the API server. It is served even if its client already gave up
    /// (an ambiguous outcome: the write happens, the client thinks it failed).
    pub(super) fn kube_arrive(&mut self, now: SimTime, call: u64, sink: &mut dyn Sink) {
        if !self.calls.contains_key(&call) {
            return;
        }
        match self.outage {
            Some(OutageMode::Hang) => {
                self.held.push(call);
                return;
            }
            Some(OutageMode::Error) => {
                self.answer(now, call, Err(KubeError::ServerError));
                return;
            }
            None => {}
        }
        self.serve(now, call, sink);
    }

    /// The API server handles the call and the answer starts back.
    fn serve(&mut self, now: SimTime, call: u64, sink: &mut dyn Sink) {
        let pending = self.calls.get_mut(&call).expect("caller checked");
        let request = pending.request.take().expect("a call is served once");
        let actor = match pending.client {
            Client::Plugin { .. } => Actor::Allocator,
            Client::Replica { index, .. } => Actor::Replica(index),
        };
        let error_rate = self.scenario.cluster.api_error_rate;
        if self.random_api.chance(error_rate) {
            self.answer(now, call, Err(KubeError::ServerError));
            return;
        }
        let mut fx = KubeEffects::default();
        let result = self
            .kube
            .serve(now, actor, request, &mut self.random_kubelet, &mut fx);
        self.apply_kube(now, fx, sink);
        self.answer(now, call, result);
    }

    fn answer(&mut self, now: SimTime, call: u64, result: crate::resources::KubeResult) {
        let pending = self.calls.get_mut(&call).expect("caller checked");
        pending.result = Some(result);
        let (client, done) = (pending.client, pending.done);
        if !done
            && self
                .partitions
                .connected(groups::KUBE_API, Self::client_mask(client))
        {
            let latency = self.api_latency_ms();
            self.queue
                .push(now.plus_ms(latency), Event::KubeReturn { call });
        } else {
            // Nobody is waiting, or the answer is lost on the way back.
            self.calls.remove(&call);
        }
    }

    pub(super) fn kube_return(&mut self, now: SimTime, call: u64, sink: &mut dyn Sink) {
        // A paused replica reads its answer when it resumes.
        if let Some(PendingCall {
            client: Client::Replica { index, .. },
            done: false,
            ..
        }) = self.calls.get(&call)
            && let Some(until) = self.replicas[*index as usize].paused_until
        {
            self.queue.push(until, Event::KubeReturn { call });
            return;
        }
        let Some(pending) = self.calls.remove(&call) else {
            return;
        };
        if pending.done {
            return;
        }
        let result = pending.result.expect("answered before returning");
        self.deliver(now, pending.client, result, sink);
    }

    pub(super) fn kube_timeout(&mut self, now: SimTime, call: u64, sink: &mut dyn Sink) {
        let Some(pending) = self.calls.get_mut(&call) else {
            return;
        };
        if pending.done {
            return;
        }
        // A paused replica cannot notice its timeout until it resumes.
        if let Client::Replica { index, .. } = pending.client
            && let Some(until) = self.replicas[index as usize].paused_until
        {
            self.queue.push(until, Event::KubeTimeout { call });
            return;
        }
        pending.done = true;
        let client = pending.client;
        // A request still travelling or held stays tracked so that the API server's side
        // effects happen when it arrives; a dropped one (no request left, no answer) goes.
        if pending.request.is_none() && pending.result.is_none() {
            self.calls.remove(&call);
        }
        self.deliver(now, client, Err(KubeError::Timeout), sink);
    }

    /// Hand an answer to its client, if the client's process is still the one that asked.
    fn deliver(
        &mut self,
        now: SimTime,
        client: Client,
        result: crate::resources::KubeResult,
        sink: &mut dyn Sink,
    ) {
        match client {
            Client::Replica { index, epoch, call } => {
                if self
                    .nodes
                    .is_current(self.replicas[index as usize].node, epoch)
                {
                    self.replica_input(now, index, crate::leader::Input::Kube(call, result), sink);
                }
            }
            Client::Plugin { epoch, call: local } => {
                if !self.nodes.is_current(self.gocd, epoch) {
                    return;
                }
                let outcome = match &result {
                    Ok(_) => "ok",
                    Err(KubeError::NotFound) => "not-found",
                    Err(KubeError::Conflict) => "conflict",
                    Err(KubeError::ServerError) => "error",
                    Err(KubeError::Timeout) => "timeout",
                };
                if result.is_err() {
                    let record = Record::KubeCall {
                        caller: "plugin".to_owned(),
                        verb: String::new(),
                        target: format!("call {}", local.0),
                        outcome: outcome.to_owned(),
                    };
                    self.emit(sink, node::GOCD, record);
                }
                let mut out = ServerOut::default();
                self.server
                    .handle_kube(now.as_ms(), local, result, &mut out);
                self.apply_server(now, out, sink);
            }
        }
    }

    /// An API outage ends: held calls are served now.
    pub(super) fn end_outage(&mut self, now: SimTime, sink: &mut dyn Sink) {
        self.outage = None;
        for call in std::mem::take(&mut self.held) {
            // A client that gave up closed its connection: the server never sees it.
            match self.calls.get(&call) {
                Some(p) if !p.done => self.serve(now, call, sink),
                _ => {
                    self.calls.remove(&call);
                }
            }
        }
    }
}
