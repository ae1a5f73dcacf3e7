//! go-agent processes: started and killed with their pod's container, talking to the server
//! over the agents↔gocd link.

use super::Sink;
use super::build::{World, groups};
use super::events::Event;
use crate::component::Random;
use crate::engine::SimTime;
use crate::gocd::{AgentAction, AgentInput, AgentRequest, RequestKind, ServerInput, ServerReply};

/// One-way latency between an agent and the server.
const AGENT_LATENCY_MS: (u64, u64) = (1, 5);
/// A request to a stopped server is refused at once.
const AGENT_REFUSED_MS: u64 = 1_000;
/// A request lost in a partition fails after the agent's HTTP timeout.
const AGENT_HTTP_TIMEOUT_MS: u64 = 30_000;

impl World {
    /// The container of pod `uid` started: its go-agent process starts (booting for a time
    /// drawn from `[server] agent_boot`) and what it asks for is carried out.
    pub(super) fn start_agent(&mut self, now: SimTime, uid: u64, name: &str) {
        let boot = self.scenario.server.agent_boot;
        let (incarnation, actions) = self.elastic.start_agent(now, uid, name, boot);
        self.apply_agent(now, uid, incarnation, actions);
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
        if let Some(actions) = self.elastic.agent_input(now, uid, incarnation, input) {
            self.apply_agent(now, uid, incarnation, actions);
        }
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
        self.elastic.recycle_actions(actions);
    }

    fn send_agent_request(
        &mut self,
        now: SimTime,
        uid: u64,
        incarnation: u32,
        request: AgentRequest,
    ) {
        let kind = request.kind();
        if !self.elastic.server_up() {
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
        let reply = if self.elastic.server_up() {
            self.server_step(now, ServerInput::Agent(request), sink)
                .expect("the server answers every agent request")
        } else {
            ServerReply::Failed
        };
        if let ServerReply::Held(hold) = reply {
            self.elastic.hold_get_work(hold, uid, incarnation);
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
            let (uid, incarnation) = self.elastic.release_get_work(hold);
            self.reply_to_agent(now, uid, incarnation, RequestKind::GetWork, reply);
        }
    }
}
