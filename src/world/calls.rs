//! Kubernetes calls in flight: latency, partitions, outages, client timeouts.
//!
//! A replica's call without a timeout rides an HTTP/2 connection: a partition stalls it (TCP
//! retransmits, so it is delivered when the partition heals) and the transport fails it
//! with a timeout once nothing was heard on the connection for `[leader] http2_dead`
//! (apimachinery: ReadIdleTimeout 30 s, then PingTimeout 15 s). While the replica reaches
//! the API server its connection's pings are answered, so the deadline only runs out while
//! it is cut off. A dead connection is replaced by a new dial, which a partition fails after
//! client-go's dial timeout (`[kube] dial_timeout`, 30 s: SYNs go unanswered, so the TLS
//! handshake timeout is never reached). A replica's call with a timeout rides the same
//! connection: a partition stalls its request or its answer as well (TCP retransmits), and
//! it is delivered after the heal if the client is still waiting; once the client's timeout
//! passed, it closed the stream and the stalled request is never served. The plugin's calls
//! (an elastic link) keep the simpler model: a request dropped by a partition is lost, as is
//! an answer (`docs/fidelity.md`, "Not modelled"). An API outage in `hang` mode holds the
//! requests that reach the server until it ends or the server's own request timeout
//! (`[kube] request_timeout`, kube-apiserver `--request-timeout`, 60 s) answers 504.

use super::Sink;
use super::build::{Client, PendingCall, World, groups};
use super::events::Event;
use super::run::node;
use crate::allocator::CallId;
use crate::component::Random;
use crate::engine::{Epoch, GroupMask, SimTime};
use crate::gocd::ServerInput;
use crate::kube::ApiRequest;
use crate::resources::{KubeError, KubeRequest, KubeResult};
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
        let replica = matches!(client, Client::Replica { .. });
        let untimed = timeout_ms.is_none() && replica;
        // The plugin's dropped request never reaches the server; the client still waits for
        // its timeout. A replica's stalls until the partition heals (TCP retransmits) or its
        // client gives up.
        let stalled = !reaches && replica;
        let request = (reaches || stalled).then_some(request);
        self.calls.insert(
            call,
            Box::new(PendingCall {
                client,
                request,
                result: None,
                done: false,
                stalled,
            }),
        );
        if let (true, Client::Replica { index, .. }) = (untimed, client) {
            let at = self.dead_peer_deadline(now, index);
            let event = Event::KubeDeadPeer {
                call,
                replica: index,
            };
            self.queue.push(at, event);
        }
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
                let timeout_ms = self.scenario.kube.request_timeout_ms;
                self.queue
                    .push(now.plus_ms(timeout_ms), Event::KubeServerTimeout { call });
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
        let result = self.api_request(now, ApiRequest { actor, request }, sink);
        self.answer(now, call, result);
    }

    /// The API server handles `input` now (its writes' kubelet work draws from the kubelet
    /// stream); the effects are applied and the reply returned.
    pub(super) fn api_request(
        &mut self,
        now: SimTime,
        input: ApiRequest,
        sink: &mut dyn Sink,
    ) -> KubeResult {
        let out = self.elastic.api_request(now, input);
        self.apply_kube(now, out.effects, sink);
        out.reply.expect("the API server answers every request")
    }

    fn answer(&mut self, now: SimTime, call: u64, result: crate::resources::KubeResult) {
        let pending = self.calls.get_mut(&call).expect("caller checked");
        pending.result = Some(result);
        let (client, done) = (pending.client, pending.done);
        let connected = self
            .partitions
            .connected(groups::KUBE_API, Self::client_mask(client));
        if !done && connected {
            let latency = self.api_latency_ms();
            self.queue
                .push(now.plus_ms(latency), Event::KubeReturn { call });
        } else if !done && matches!(client, Client::Replica { .. }) {
            // The answer waits for the partition to heal (TCP retransmits it).
            pending.stalled = true;
        } else if !done {
            // The answer is lost on the way back; the client still waits for its timeout,
            // which must find the call (a removed call's timeout delivers nothing, and the
            // client would wait for ever).
            pending.result = None;
        } else {
            // Nobody is waiting.
            self.calls.remove(&call);
        }
    }

    pub(super) fn kube_return(&mut self, now: SimTime, call: u64, sink: &mut dyn Sink) {
        // A paused replica reads its answer when it resumes.
        if let Some(PendingCall {
            client: Client::Replica { index, .. },
            done: false,
            ..
        }) = self.calls.get(&call).map(Box::as_ref)
            && let Some(until) = self.leader.paused_until(*index)
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
        if let Client::Replica { index, .. } = pending.client {
            self.leader.heard_answer(index, now);
        }
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
            && let Some(until) = self.leader.paused_until(index)
        {
            self.queue.push(until, Event::KubeTimeout { call });
            return;
        }
        pending.done = true;
        let client = pending.client;
        // A request still travelling or held stays tracked so that the API server's side
        // effects happen when it arrives; a dropped or stalled one goes (the client closed
        // its stream).
        if pending.stalled || (pending.request.is_none() && pending.result.is_none()) {
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
                if self.nodes.is_current(self.leader.node(index), epoch) {
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
                let input = ServerInput::Kube {
                    call: local,
                    result,
                };
                self.server_step(now, input, sink);
            }
        }
    }

    /// The HTTP/2 dead-peer deadline of a call of replica `index`: while the replica reaches
    /// the API server its pings are answered, so the next check is one deadline from now;
    /// once cut off, the connection dies `http2_dead` after the later of its last answer
    /// and the cut.
    fn dead_peer_deadline(&self, now: SimTime, index: u32) -> SimTime {
        let dead_ms = self
            .scenario
            .leader
            .as_ref()
            .expect("replica calls exist only with [leader]")
            .http2_dead_ms;
        let dial_timeout_ms = self.scenario.kube.dial_timeout_ms;
        self.leader
            .dead_peer_deadline(index, now, dead_ms, dial_timeout_ms)
    }

    /// A call without a timeout checks its connection: dead, it fails with a timeout;
    /// alive, it checks again at the next deadline.
    pub(super) fn kube_dead_peer(
        &mut self,
        now: SimTime,
        call: u64,
        index: u32,
        sink: &mut dyn Sink,
    ) {
        let Some(pending) = self.calls.get(&call) else {
            return;
        };
        debug_assert!(
            matches!(pending.client, Client::Replica { index: caller, .. } if caller == index),
            "call {call}'s dead-peer check is replica {index}'s"
        );
        if pending.done {
            return;
        }
        let deadline = self.dead_peer_deadline(now, index);
        if deadline > now || !self.leader.is_cut(index) {
            let next = deadline.max(now.plus_ms(1));
            let event = Event::KubeDeadPeer {
                call,
                replica: index,
            };
            self.queue.push(next, event);
            return;
        }
        // The transport closes the connection (or the dial failed); the next request dials a
        // new one, bounded by the dial timeout while the replica stays cut off.
        self.leader.connection_died(index, now);
        self.kube_timeout(now, call, sink);
    }

    /// Partitions started or healed: note which replicas are cut off since when, and move
    /// the stalled calls of those that reach the API server again.
    pub(super) fn partitions_changed(&mut self, now: SimTime) {
        let mut healed = false;
        for index in 0..self.leader.count() {
            let mask = groups::REPLICAS.union(groups::replica(index));
            let connected = self.partitions.connected(mask, groups::KUBE_API)
                && self.partitions.connected(groups::KUBE_API, mask);
            healed |= self.leader.set_reach(index, connected, now);
        }
        if healed {
            self.resume_stalled_calls(now);
        }
    }

    fn resume_stalled_calls(&mut self, now: SimTime) {
        let stalled = self
            .calls
            .iter()
            .filter(|(_, pending)| pending.stalled && !pending.done)
            .map(|(&call, pending)| (call, pending.client, pending.result.is_some()))
            .collect::<Vec<_>>();
        for (call, client, answered) in stalled {
            let mask = Self::client_mask(client);
            let connected = self.partitions.connected(mask, groups::KUBE_API)
                && self.partitions.connected(groups::KUBE_API, mask);
            if !connected {
                continue;
            }
            if let Client::Replica { index, epoch, .. } = client
                && !self.nodes.is_current(self.leader.node(index), epoch)
            {
                // The process that asked is gone, and its connection with it.
                self.calls.remove(&call);
                continue;
            }
            self.calls.get_mut(&call).expect("listed above").stalled = false;
            let latency = self.api_latency_ms();
            let event = if answered {
                Event::KubeReturn { call }
            } else {
                Event::KubeArrive { call }
            };
            self.queue.push(now.plus_ms(latency), event);
        }
    }

    /// The API server's request timeout ends a call it still holds: 504 (a server error to
    /// the client).
    pub(super) fn kube_server_timeout(&mut self, now: SimTime, call: u64, _sink: &mut dyn Sink) {
        let Some(position) = self.held.iter().position(|held| *held == call) else {
            return;
        };
        self.held.remove(position);
        match self.calls.get(&call) {
            Some(pending) if !pending.done => self.answer(now, call, Err(KubeError::ServerError)),
            _ => {
                self.calls.remove(&call);
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
