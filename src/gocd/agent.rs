//! The go-agent process inside an elastic agent pod.
//!
//! The process boots before it registers: the container's entrypoint, the bootstrapper's
//! downloads of agent-launcher.jar, agent.jar, agent-plugins.zip and tfs-impl.jar from the
//! server, the agent JVM and its Spring context (gocd/gocd@f17b6f3fc9,
//! `agent-bootstrapper/.../AgentBootstrapper.java`, `agent-launcher/.../AgentLauncherImpl.java`
//! `launch`, `agent-process-launcher/.../AgentProcessParentImpl.java` `run`). Meanwhile the pod
//! is Running and no agent is registered; the world draws the boot time from
//! `[server] agent_boot` and hands it in with [`AgentInput::Start`].
//!
//! Timing from `agent.properties`: ping every 5 s; get-work with exponential back-off from 1 s
//! ×1.5 up to 10 s, reset to immediate after a job. A registration the server answers with
//! anything but success (a used or expired key, a duplicate elastic agent id) is retried every
//! 5 s, forever (`SslInfrastructureService.java` `registerIfNecessary`,
//! `REGISTER_RETRY_INTERVAL = 5000`); one that gets no answer (server down, partition) throws
//! out of the work loop, which retries after its back-off, 1 s ×1.5 up to 10 s
//! (`AgentWorkRetrievalScheduler.java`, `agent.properties` `agent.get.work.delay*`).
//!
//! [`GoAgent`] is a [`Component`]: an [`AgentInput`] in, [`AgentAction`]s out, its timers at
//! absolute simulated times. It draws no randomness.

use super::protocol::{AgentAction, AgentId, AgentRequest, Registration, RequestKind, ServerReply};
use crate::component::{ArmedTimers, Component, Random};

const PING_INTERVAL_MS: u64 = 5_000;
const POLL_BACKOFF_MS_MIN: u32 = 1_000;
const POLL_BACKOFF_MS_MAX: u32 = 10_000;
const REGISTER_RETRY_MS: u64 = 5_000;
const REPORT_RETRY_MS: u64 = 5_000;

/// A go-agent timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentTimer {
    /// The boot is over: the agent JVM's work loop starts and registers.
    Booted,
    /// Retry a registration that was refused (after 5 s) or failed (after the back-off).
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

/// Everything that happens to a go-agent process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentInput {
    /// The process starts: it boots for `boot_ms`, then registers (at once when 0).
    Start {
        /// How long the boot takes, from the container's start to the first registration.
        boot_ms: u64,
    },
    /// A timer it asked for is due.
    Timer(AgentTimer),
    /// The answer to one of its requests, or its failure.
    Reply {
        /// Which request is answered.
        kind: RequestKind,
        /// The answer.
        reply: ServerReply,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// The container runs, the agent is not up yet: nothing is sent.
    Booting,
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
///
/// Fields sit in memory in the order declared (`repr(C)`), the ones every ping, poll and reply
/// reads first: `world::layout` starts each process on a cache line so that they share one.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct GoAgent {
    phase: Phase,
    /// The agent's uuid, fresh for each process start.
    pub uuid: u64,
    /// The pod's name, which the agent registers as its elastic agent id, as a number.
    pub id: AgentId,
    /// The get-work back-off (at most `POLL_BACKOFF_MS_MAX`).
    poll_backoff_ms: u32,
    /// The timers asked for and not fired: the ping and one of poll, build, kill, report or
    /// registration, rarely a stale one besides.
    timers: ArmedTimers<AgentTimer>,
    ping_running: bool,
    /// The id's text, the key and the environment it registers with (boxed: read once per
    /// registration).
    registration: Box<Registration>,
}

impl GoAgent {
    /// The process starts with the pod's `GO_EA_*` environment (`registration`: its elastic
    /// agent id, numbered `id`, the key and the environment) and a fresh uuid (the default
    /// ephemeral container filesystem keeps no identity across restarts).
    pub(crate) fn new(id: AgentId, uuid: u64, registration: Registration) -> GoAgent {
        GoAgent {
            id,
            uuid,
            registration: Box::new(registration),
            phase: Phase::Booting,
            poll_backoff_ms: 0,
            ping_running: false,
            timers: ArmedTimers::default(),
        }
    }

    /// The job being built or reported, if any.
    pub(crate) fn job(&self) -> Option<u64> {
        match self.phase {
            Phase::Building { job } | Phase::Cancelling { job } | Phase::Reporting { job } => {
                Some(job)
            }
            _ => None,
        }
    }

    /// Timer `timer` fired at `now_ms`, the time it was asked for.
    fn fired(&mut self, now_ms: u64, timer: AgentTimer) {
        let was_armed = self
            .timers
            .fired(|at_ms, armed| at_ms == now_ms && armed == timer);
        debug_assert!(
            was_armed.is_some(),
            "go-agent timer {timer:?} fired at {now_ms} unasked"
        );
    }

    fn register_request(&self) -> AgentRequest {
        AgentRequest::Register {
            agent: self.id,
            uuid: self.uuid,
            registration: self.registration.clone(),
        }
    }

    /// A timer fired.
    fn on_timer(&mut self, timer: AgentTimer, out: &mut Vec<AgentAction>) {
        match (timer, &self.phase) {
            (AgentTimer::Booted, Phase::Booting) => {
                self.phase = Phase::Registering;
                out.push(AgentAction::Send(self.register_request()));
            }
            (AgentTimer::Register, Phase::Registering) => {
                out.push(AgentAction::Send(self.register_request()));
            }
            (AgentTimer::Ping, _) if !matches!(self.phase, Phase::Registering | Phase::Booting) => {
                out.push(AgentAction::Send(AgentRequest::Ping {
                    agent: self.id,
                    uuid: self.uuid,
                    building: self.job(),
                }));
            }
            (AgentTimer::Ping, _) => self.ping_running = false,
            (AgentTimer::Poll, Phase::Idle) => out.push(AgentAction::Send(AgentRequest::GetWork {
                agent: self.id,
                uuid: self.uuid,
            })),
            (AgentTimer::Killed, Phase::Cancelling { .. }) => {
                // The job is over at the server already: nothing to report.
                self.phase = Phase::Idle;
                self.poll_backoff_ms = 0;
                out.push(AgentAction::Send(AgentRequest::GetWork {
                    agent: self.id,
                    uuid: self.uuid,
                }));
            }
            (AgentTimer::BuildDone, Phase::Building { job })
            | (AgentTimer::Report, Phase::Reporting { job }) => {
                let job = *job;
                self.phase = Phase::Reporting { job };
                out.push(AgentAction::Send(AgentRequest::ReportCompleted {
                    agent: self.id,
                    uuid: self.uuid,
                    job,
                }));
            }
            _ => {}
        }
    }

    /// The answer to a request of `kind`, at `now_ms`.
    fn on_reply(
        &mut self,
        now_ms: u64,
        kind: RequestKind,
        reply: ServerReply,
        out: &mut Vec<AgentAction>,
    ) {
        match kind {
            RequestKind::Register => self.on_register(now_ms, reply, out),
            RequestKind::Ping => self.on_ping(now_ms, reply, out),
            RequestKind::GetWork => self.on_work(now_ms, reply, out),
            RequestKind::ReportCompleted => self.on_report(now_ms, reply, out),
        }
    }

    fn on_register(&mut self, now_ms: u64, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if self.phase != Phase::Registering {
            return;
        }
        if reply == ServerReply::Registered {
            self.phase = Phase::Idle;
            self.poll_backoff_ms = 0;
            out.push(AgentAction::Send(AgentRequest::GetWork {
                agent: self.id,
                uuid: self.uuid,
            }));
            if !self.ping_running {
                self.ping_running = true;
                out.push(timer_at(now_ms, PING_INTERVAL_MS, AgentTimer::Ping));
            }
        } else if reply == ServerReply::Failed {
            let delay_ms = self.next_backoff_ms();
            out.push(timer_at(now_ms, delay_ms, AgentTimer::Register));
        } else {
            out.push(timer_at(now_ms, REGISTER_RETRY_MS, AgentTimer::Register));
        }
    }

    /// The work loop's next back-off: 1 s, then ×1.5 up to 10 s (reset after a success).
    fn next_backoff_ms(&mut self) -> u64 {
        self.poll_backoff_ms = if self.poll_backoff_ms == 0 {
            POLL_BACKOFF_MS_MIN
        } else {
            (self.poll_backoff_ms * 3 / 2).min(POLL_BACKOFF_MS_MAX)
        };
        debug_assert!(
            (POLL_BACKOFF_MS_MIN..=POLL_BACKOFF_MS_MAX).contains(&self.poll_backoff_ms),
            "the poll back-off stays within its bounds"
        );
        u64::from(self.poll_backoff_ms)
    }

    fn on_ping(&mut self, now_ms: u64, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if reply == ServerReply::NotRegistered && self.phase == Phase::Idle {
            self.reregister(now_ms, out);
        }
        if let (ServerReply::Cancel { kill_ms }, Phase::Building { job }) = (&reply, &self.phase) {
            self.phase = Phase::Cancelling { job: *job };
            out.push(timer_at(now_ms, *kill_ms, AgentTimer::Killed));
        }
        out.push(timer_at(now_ms, PING_INTERVAL_MS, AgentTimer::Ping));
    }

    fn reregister(&mut self, now_ms: u64, out: &mut Vec<AgentAction>) {
        self.phase = Phase::Registering;
        out.push(timer_at(now_ms, REGISTER_RETRY_MS, AgentTimer::Register));
    }

    fn on_work(&mut self, now_ms: u64, reply: ServerReply, out: &mut Vec<AgentAction>) {
        if self.phase != Phase::Idle {
            return;
        }
        match reply {
            ServerReply::Work { job, runtime_ms } => {
                debug_assert!(job > 0, "the server assigns known jobs");
                self.phase = Phase::Building { job };
                self.poll_backoff_ms = 0;
                out.push(timer_at(now_ms, runtime_ms, AgentTimer::BuildDone));
            }
            ServerReply::NotRegistered => self.reregister(now_ms, out),
            _ => {
                let delay_ms = self.next_backoff_ms();
                out.push(timer_at(now_ms, delay_ms, AgentTimer::Poll));
            }
        }
    }

    fn on_report(&mut self, now_ms: u64, reply: ServerReply, out: &mut Vec<AgentAction>) {
        let Phase::Reporting { .. } = self.phase else {
            return;
        };
        if reply == ServerReply::Failed {
            out.push(timer_at(now_ms, REPORT_RETRY_MS, AgentTimer::Report));
            return;
        }
        self.phase = Phase::Idle;
        self.poll_backoff_ms = 0;
        out.push(AgentAction::Send(AgentRequest::GetWork {
            agent: self.id,
            uuid: self.uuid,
        }));
    }
}

/// Timer `timer` at `delay_ms` after `now_ms`.
fn timer_at(now_ms: u64, delay_ms: u64, timer: AgentTimer) -> AgentAction {
    AgentAction::Timer {
        at_ms: now_ms.saturating_add(delay_ms),
        timer,
    }
}

impl Component for GoAgent {
    type Input = AgentInput;
    type Output = Vec<AgentAction>;

    /// One input at `now_ms`; the actions are appended to `out`. The go-agent draws nothing
    /// from `random`.
    fn handle(
        &mut self,
        now_ms: u64,
        input: AgentInput,
        _random: &mut dyn Random,
        out: &mut Vec<AgentAction>,
    ) {
        let asked_before = out.len();
        match input {
            AgentInput::Start { boot_ms: 0 } => {
                debug_assert_eq!(self.phase, Phase::Booting, "a go-agent starts once");
                self.phase = Phase::Registering;
                out.push(AgentAction::Send(self.register_request()));
            }
            AgentInput::Start { boot_ms } => {
                debug_assert_eq!(self.phase, Phase::Booting, "a go-agent starts once");
                out.push(timer_at(now_ms, boot_ms, AgentTimer::Booted));
            }
            AgentInput::Timer(timer) => {
                self.fired(now_ms, timer);
                self.on_timer(timer, out);
            }
            AgentInput::Reply { kind, reply } => self.on_reply(now_ms, kind, reply, out),
        }
        for action in &out[asked_before..] {
            if let AgentAction::Timer { at_ms, timer } = action {
                self.timers.arm(*at_ms, *timer);
            }
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        self.timers.next_deadline()
    }
}

#[cfg(test)]
mod tests;
