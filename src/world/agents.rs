//! go-agent processes: started and killed with their pod's container, talking to the server
//! over the agents↔gocd link.

use super::Sink;
use super::build::{World, groups};
use super::events::Event;
use crate::allocator::pod_spec::keys;
use crate::component::{Component, Random};
use crate::engine::SimTime;
use crate::gocd::{
    AgentAction, AgentInput, AgentRequest, GoAgent, Registration, RequestKind, ServerInput,
    ServerReply,
};

/// One-way latency between an agent and the server.
const AGENT_LATENCY_MS: (u64, u64) = (1, 5);
/// A request to a stopped server is refused at once.
const AGENT_REFUSED_MS: u64 = 1_000;
/// A request lost in a partition fails after the agent's HTTP timeout.
const AGENT_HTTP_TIMEOUT_MS: u64 = 30_000;

impl World {
    /// The container of pod `uid` started: its go-agent process starts with the pod's
    /// auto-register environment and a fresh uuid, and boots for a time drawn from
    /// `[server] agent_boot` before it registers.
    pub(super) fn start_agent(&mut self, now: SimTime, uid: u64, name: &str) {
        let pod = self
            .elastic
            .kube
            .pod(name)
            .expect("a started container belongs to a pod");
        let key = pod
            .env
            .get(keys::ENV_AUTO_REGISTER_KEY)
            .cloned()
            .unwrap_or_default();
        let elastic_agent_id = pod
            .env
            .get(keys::ENV_ELASTIC_AGENT_ID)
            .map_or(name, String::as_str);
        let environment = pod.env.get(keys::ENV_AUTO_REGISTER_ENVIRONMENT).cloned();
        let (id, elastic_agent_id) = self.elastic.agent_ids.number(elastic_agent_id);
        let registration = Registration {
            elastic_agent_id,
            key,
            environment,
        };
        let uuid = self.elastic.random_agents.next_u64();
        let boot = self.scenario.server.agent_boot;
        let boot_ms = super::build::draw(&mut self.elastic.random_agent_boot, boot);
        let mut agent = GoAgent::new(id, uuid, registration);
        let mut actions = std::mem::take(&mut self.elastic.agent_actions);
        let random = &mut self.elastic.random_agents;
        agent.handle(
            now.as_ms(),
            AgentInput::Start { boot_ms },
            random,
            &mut actions,
        );
        let incarnation = self.elastic.agents.start(uid, agent);
        self.apply_agent(now, uid, incarnation, actions);
    }

    /// The container died or the pod is gone: the process and everything addressed to it go.
    pub(super) fn kill_agent(&mut self, uid: u64) {
        self.elastic.agents.kill(uid);
    }

    /// Hand `input` (a timer, a reply) to the go-agent of `uid`, if `incarnation` is still
    /// the one running.
    pub(super) fn agent_input(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        input: AgentInput,
    ) {
        let Some(agent) = self.elastic.agents.current_mut(uid, incarnation) else {
            return;
        };
        // Every timer of a running process is queued and none is dropped, so the one popping
        // now is the earliest not fired: the process's next deadline.
        debug_assert!(
            !matches!(input, AgentInput::Timer(_)) || agent.next_deadline() == Some(now.as_ms()),
            "go-agent {uid}: next deadline {:?} when {input:?} fires at {now}",
            agent.next_deadline()
        );
        let mut actions = std::mem::take(&mut self.elastic.agent_actions);
        let random = &mut self.elastic.random_agents;
        agent.handle(now.as_ms(), input, random, &mut actions);
        self.apply_agent(now, uid, incarnation, actions);
    }

    /// Carry out an agent's actions; the emptied buffer goes back for the next event (agents
    /// act on most events of a run, and a fresh vector each time was an allocation each).
    fn apply_agent(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        mut actions: Vec<AgentAction>,
    ) {
        for action in actions.drain(..) {
            match action {
                AgentAction::Timer { at_ms, timer } => {
                    self.queue.push(
                        SimTime::from_ms(at_ms),
                        Event::AgentTimer {
                            uid,
                            incarnation,
                            timer,
                        },
                    );
                }
                AgentAction::Send(request) => {
                    self.send_agent_request(now, uid, incarnation, request)
                }
            }
        }
        self.elastic.agent_actions = actions;
    }

    fn send_agent_request(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        request: AgentRequest,
    ) {
        let kind = request.kind();
        if !self.elastic.server.is_up() {
            let event = Event::AgentReply {
                uid,
                incarnation,
                kind,
                reply: ServerReply::Failed,
            };
            self.queue.push(now.plus_ms(AGENT_REFUSED_MS), event);
        } else if !self.partitions.connected(groups::AGENTS, groups::GOCD) {
            let event = Event::AgentReply {
                uid,
                incarnation,
                kind,
                reply: ServerReply::Failed,
            };
            self.queue.push(now.plus_ms(AGENT_HTTP_TIMEOUT_MS), event);
        } else {
            let latency = self
                .random_network
                .range_inclusive(AGENT_LATENCY_MS.0, AGENT_LATENCY_MS.1);
            self.queue.push(
                now.plus_ms(latency),
                Event::AgentArrive {
                    uid,
                    incarnation,
                    request,
                },
            );
        }
    }

    pub(super) fn agent_arrive(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        request: AgentRequest,
        sink: &mut dyn Sink,
    ) {
        let kind = request.kind();
        let reply = if self.elastic.server.is_up() {
            self.server_step(now, ServerInput::Agent(request), sink)
                .expect("the server answers every agent request")
        } else {
            ServerReply::Failed
        };
        if let ServerReply::Held(hold) = reply {
            let previous = self.elastic.held_get_work.insert(hold, (uid, incarnation));
            assert!(previous.is_none(), "hold ids are fresh within a process");
            return;
        }
        self.reply_to_agent(now, uid, incarnation, kind, reply);
    }

    /// The server's reply starts back to the agent.
    fn reply_to_agent(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        kind: RequestKind,
        reply: ServerReply,
    ) {
        let latency = self
            .random_network
            .range_inclusive(AGENT_LATENCY_MS.0, AGENT_LATENCY_MS.1);
        self.queue.push(
            now.plus_ms(latency),
            Event::AgentReply {
                uid,
                incarnation,
                kind,
                reply,
            },
        );
    }

    /// The server answers get-work requests it held.
    pub(super) fn release_held(&mut self, now: SimTime, released: Vec<(u64, ServerReply)>) {
        for (hold, reply) in released {
            let (uid, incarnation) = self
                .elastic
                .held_get_work
                .remove(&hold)
                .expect("the server releases what it held");
            self.reply_to_agent(now, uid, incarnation, RequestKind::GetWork, reply);
        }
    }
}
