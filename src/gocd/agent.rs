//! The go-agent process inside an elastic agent pod.
//!
//! Timing from `agent.properties`: ping every 5 s; get-work with exponential back-off from 1 s
//! ×1.5 up to 10 s, reset to immediate after a job. Registration is retried every 10 s; a
//! refused registration (a used or expired key, a duplicate elastic agent id) is retried
//! forever, as the real agent does.

use super::protocol::{AgentAction, AgentRequest, RequestKind, ServerReply};
use std::sync::Arc;

const PING_INTERVAL_MS: u64 = 5_000;
const POLL_BACKOFF_MS_MIN: u64 = 1_000;
const POLL_BACKOFF_MS_MAX: u64 = 10_000;
const REGISTER_RETRY_MS: u64 = 10_000;
const REPORT_RETRY_MS: u64 = 5_000;

/// A go-agent timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentTimer {
    /// Retry a registration that failed or was refused (every 10 s).
    Register,
    /// Send the next liveness ping (every 5 s).
    Ping,
    /// Ask for work again, after the get-work back-off.
    Poll,
    /// The job's runtime is over: report it completed.
    BuildDone,
    /// Retry a completion report the server did not answer (every 5 s).
    Report,
    /// The cancelled build is killed.
    Killed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Registering,
    Idle,
    Building {
        job: u64,
    },
    /// Killing a cancelled build: still reported as building until the kill is over.
    Cancelling {
        job: u64,
    },
    Reporting {
        job: u64,
    },
}

/// One go-agent process (one container incarnation).
#[derive(Debug)]
pub struct GoAgent {
    /// The pod's name, which the agent registers as its elastic agent id.
    pub elastic_agent_id: Arc<str>,
    /// The agent's uuid, fresh for each process start.
    pub uuid: u64,
    key: String,
    environment: Option<String>,
    phase: Phase,
    poll_backoff_ms: u64,
    ping_running: bool,
}

impl GoAgent {
    /// The process starts with the pod's `GO_EA_*` environment and a fresh uuid (the default
    /// ephemeral container filesystem keeps no identity across restarts).
    pub fn new(
        elastic_agent_id: String,
        uuid: u64,
        key: String,
        environment: Option<String>,
    ) -> GoAgent {
        GoAgent {
            elastic_agent_id: Arc::from(elastic_agent_id),
            uuid,
            key,
            environment,
            phase: Phase::Registering,
            poll_backoff_ms: 0,
            ping_running: false,
        }
    }

    /// The job being built or reported, if any.
    pub fn job(&self) -> Option<u64> {
        match self.phase {
            Phase::Building { job } | Phase::Cancelling { job } | Phase::Reporting { job } => {
                Some(job)
            }
            _ => None,
        }
    }

    /// Start: register at once.
    pub fn start(&mut self, out: &mut Vec<AgentAction>) {
        out.push(AgentAction::Send(self.register_request()));
    }

    fn register_request(&self) -> AgentRequest {
        AgentRequest::Register {
            elastic_agent_id: Arc::clone(&self.elastic_agent_id),
            uuid: self.uuid,
            key: self.key.clone(),
            environment: self.environment.clone(),
        }
    }

    /// A timer fired. `runtime_ms` is unused except for `BuildDone` bookkeeping by the caller.
    pub fn handle_timer(&mut self, timer: AgentTimer, out: &mut Vec<AgentAction>) {
        match (timer, &self.phase) {
            (AgentTimer::Register, Phase::Registering) => {
                out.push(AgentAction::Send(self.register_request()));
            }
            (AgentTimer::Ping, _) if self.phase != Phase::Registering => {
                out.push(AgentAction::Send(AgentRequest::Ping {
                    elastic_agent_id: Arc::clone(&self.elastic_agent_id),
                    uuid: self.uuid,
                    building: self.job(),
                }));
            }
            (AgentTimer::Ping, _) => self.ping_running = false,
            (AgentTimer::Poll, Phase::Idle) => out.push(AgentAction::Send(AgentRequest::GetWork {
                elastic_agent_id: Arc::clone(&self.elastic_agent_id),
                uuid: self.uuid,
            })),
            (AgentTimer::Killed, Phase::Cancelling { .. }) => {
                // The job is over at the server already: nothing to report.
                self.phase = Phase::Idle;
                self.poll_backoff_ms = 0;
                out.push(AgentAction::Send(AgentRequest::GetWork {
                    elastic_agent_id: Arc::clone(&self.elastic_agent_id),
                    uuid: self.uuid,
                }));
            }
            (AgentTimer::BuildDone, Phase::Building { job })
            | (AgentTimer::Report, Phase::Reporting { job }) => {
                let job = *job;
                self.phase = Phase::Reporting { job };
                out.push(AgentAction::Send(AgentRequest::ReportCompleted {
                    elastic_agent_id: Arc::clone(&self.elastic_agent_id),
                    uuid: self.uuid,
                    job,
                }));
            }
            _ => {}
        }
    }

    /// The answer to a request of `kind`.
    pub fn handle_reply(
        &mut self,
        kind: RequestKind,
        reply: ServerReply,
        out: &mut Vec<AgentAction>,
    ) {
        match kind {
            RequestKind::Register => self.on_register(reply, out),
            RequestKind::Ping => self.on_ping(reply, out),
            RequestKind::GetWork => self.on_work(reply, out),
            RequestKind::ReportCompleted => self.on_report(reply, out),
        }
    }

    fn on_register(&mut self, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if self.phase != Phase::Registering {
            return;
        }
        if reply == ServerReply::Registered {
            self.phase = Phase::Idle;
            self.poll_backoff_ms = 0;
            out.push(AgentAction::Send(AgentRequest::GetWork {
                elastic_agent_id: Arc::clone(&self.elastic_agent_id),
                uuid: self.uuid,
            }));
            if !self.ping_running {
                self.ping_running = true;
                out.push(AgentAction::Timer {
                    delay_ms: PING_INTERVAL_MS,
                    timer: AgentTimer::Ping,
                });
            }
        } else {
            out.push(AgentAction::Timer {
                delay_ms: REGISTER_RETRY_MS,
                timer: AgentTimer::Register,
            });
        }
    }

    fn on_ping(&mut self, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if reply == ServerReply::NotRegistered && self.phase == Phase::Idle {
            self.reregister(out);
        }
        if let (ServerReply::Cancel { kill_ms }, Phase::Building { job }) = (&reply, &self.phase) {
            self.phase = Phase::Cancelling { job: *job };
            out.push(AgentAction::Timer {
                delay_ms: *kill_ms,
                timer: AgentTimer::Killed,
            });
        }
        out.push(AgentAction::Timer {
            delay_ms: PING_INTERVAL_MS,
            timer: AgentTimer::Ping,
        });
    }

    fn reregister(&mut self, out: &mut Vec<AgentAction>) {
        self.phase = Phase::Registering;
        out.push(AgentAction::Timer {
            delay_ms: REGISTER_RETRY_MS,
            timer: AgentTimer::Register,
        });
    }

    fn on_work(&mut self, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if self.phase != Phase::Idle {
            return;
        }
        match reply {
            ServerReply::Work { job, runtime_ms } => {
                self.phase = Phase::Building { job };
                self.poll_backoff_ms = 0;
                out.push(AgentAction::Timer {
                    delay_ms: runtime_ms,
                    timer: AgentTimer::BuildDone,
                });
            }
            ServerReply::NotRegistered => self.reregister(out),
            _ => {
                self.poll_backoff_ms = if self.poll_backoff_ms == 0 {
                    POLL_BACKOFF_MS_MIN
                } else {
                    (self.poll_backoff_ms * 3 / 2).min(POLL_BACKOFF_MS_MAX)
                };
                out.push(AgentAction::Timer {
                    delay_ms: self.poll_backoff_ms,
                    timer: AgentTimer::Poll,
                });
            }
        }
    }

    fn on_report(&mut self, reply: ServerReply, out: &mut Vec<AgentAction>) {
        let Phase::Reporting { .. } = self.phase else {
            return;
        };
        if reply == ServerReply::Failed {
            out.push(AgentAction::Timer {
                delay_ms: REPORT_RETRY_MS,
                timer: AgentTimer::Report,
            });
            return;
        }
        self.phase = Phase::Idle;
        self.poll_backoff_ms = 0;
        out.push(AgentAction::Send(AgentRequest::GetWork {
            elastic_agent_id: Arc::clone(&self.elastic_agent_id),
            uuid: self.uuid,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::{AgentTimer, GoAgent, REGISTER_RETRY_MS};
    use crate::gocd::protocol::{AgentAction, RequestKind, ServerReply};

    fn sent(out: &[AgentAction]) -> Vec<RequestKind> {
        out.iter()
            .filter_map(|a| match a {
                AgentAction::Send(r) => Some(r.kind()),
                AgentAction::Timer { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_refused_registration_is_retried_forever() {
        let mut agent = GoAgent::new("k8s-ea-1".into(), 9, "key".into(), None);
        let mut out = Vec::new();
        agent.start(&mut out);
        assert_eq!(sent(&out), [RequestKind::Register]);
        for _ in 0..3 {
            out.clear();
            agent.handle_reply(
                RequestKind::Register,
                ServerReply::Refused("used key".into()),
                &mut out,
            );
            assert_eq!(
                out,
                [AgentAction::Timer {
                    delay_ms: REGISTER_RETRY_MS,
                    timer: AgentTimer::Register
                }]
            );
            out.clear();
            agent.handle_timer(AgentTimer::Register, &mut out);
            assert_eq!(sent(&out), [RequestKind::Register]);
        }
    }

    #[test]
    fn get_work_backs_off_from_one_to_ten_seconds() {
        let mut agent = GoAgent::new("k8s-ea-1".into(), 9, "key".into(), None);
        let mut out = Vec::new();
        agent.handle_reply(RequestKind::Register, ServerReply::Registered, &mut out);
        let mut delays = Vec::new();
        for _ in 0..8 {
            out.clear();
            agent.handle_reply(RequestKind::GetWork, ServerReply::NoWork, &mut out);
            if let [AgentAction::Timer { delay_ms, .. }] = out.as_slice() {
                delays.push(*delay_ms);
            }
            agent.handle_timer(AgentTimer::Poll, &mut Vec::new());
        }
        assert_eq!(
            delays,
            [1_000, 1_500, 2_250, 3_375, 5_062, 7_593, 10_000, 10_000]
        );
    }
}
