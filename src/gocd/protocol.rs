//! What go-agents and the server say to each other over HTTP.

use crate::ids::Names;
use std::sync::Arc;

/// An elastic agent id as a number. The harness numbers each distinct id once, in first-seen
/// order, the way the server's HTTP layer hands a request's identity to the endpoint: a
/// request names its agent by this number, so that a ping (every agent, every 5 s) neither
/// carries the id's text nor hashes it. The text travels once, with the registration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AgentId(pub u32);

/// The harness's numbering of elastic agent ids: one [`AgentId`] per distinct id, for the
/// whole run, and the id's text shared by everything that names the agent.
#[derive(Clone, Debug, Default)]
pub(crate) struct AgentIds(Names);

impl AgentIds {
    /// The number of `elastic_agent_id` and its shared text, numbering it on first sight.
    pub(crate) fn number(&mut self, elastic_agent_id: &str) -> (AgentId, Arc<str>) {
        let index = self.0.intern(elastic_agent_id);
        (AgentId(index), self.0.shared(index))
    }
}

/// A go-agent's HTTP request to the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentRequest {
    /// Auto-register with the pod's one-time key.
    Register {
        /// The agent's id, as a number.
        agent: AgentId,
        /// The go-agent process's uuid.
        uuid: u64,
        /// The id's text, the key and the environment, boxed: a registration is rare, and
        /// inline they made every queued event half as large again.
        registration: Box<Registration>,
    },
    /// Liveness ping, every 5 s; reports the job being built, if any.
    Ping {
        /// The agent's id, as a number.
        agent: AgentId,
        /// The go-agent process's uuid.
        uuid: u64,
        /// The job the agent is building, if any.
        building: Option<u64>,
    },
    /// Ask for work.
    GetWork {
        /// The agent's id, as a number.
        agent: AgentId,
        /// The go-agent process's uuid.
        uuid: u64,
    },
    /// The job finished.
    ReportCompleted {
        /// The agent's id, as a number.
        agent: AgentId,
        /// The go-agent process's uuid.
        uuid: u64,
        /// The job instance that finished.
        job: u64,
    },
}

/// What an auto-registration carries besides the agent's identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The pod's name, the agent's id towards the plugin.
    pub elastic_agent_id: Arc<str>,
    /// The auto-register key from the pod's environment.
    pub key: String,
    /// The environment from the pod's environment, if any.
    pub environment: Option<String>,
}

impl AgentRequest {
    /// The agent that sent it.
    pub fn agent(&self) -> AgentId {
        match self {
            AgentRequest::Register { agent, .. }
            | AgentRequest::Ping { agent, .. }
            | AgentRequest::GetWork { agent, .. }
            | AgentRequest::ReportCompleted { agent, .. } => *agent,
        }
    }

    /// Which request this is, for matching its reply.
    pub(crate) fn kind(&self) -> RequestKind {
        match self {
            AgentRequest::Register { .. } => RequestKind::Register,
            AgentRequest::Ping { .. } => RequestKind::Ping,
            AgentRequest::GetWork { .. } => RequestKind::GetWork,
            AgentRequest::ReportCompleted { .. } => RequestKind::ReportCompleted,
        }
    }
}

/// Which request a reply answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum RequestKind {
    /// An auto-registration.
    Register,
    /// A liveness ping.
    Ping,
    /// A get-work.
    GetWork,
    /// A completion report.
    ReportCompleted,
}

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerReply {
    /// The registration was accepted.
    Registered,
    /// HTTP 422 with the reason.
    Refused(String),
    /// The ping was recorded; nothing to do.
    Pong,
    /// The server does not know this agent (deleted, or another uuid holds the id).
    NotRegistered,
    /// No job for this agent now; ask again after the back-off.
    NoWork,
    /// The agent is disabled.
    Denied,
    /// The job assigned to this agent.
    Work {
        /// The job instance to build.
        job: u64,
        /// How long the build runs, in simulated milliseconds.
        runtime_ms: u64,
    },
    /// The completion report was accepted.
    Ack,
    /// Ping reply carrying the cancel instruction for the build the agent runs; killing it
    /// takes `kill_ms`.
    Cancel {
        /// How long the agent takes to kill the build, in simulated milliseconds.
        kill_ms: u64,
    },
    /// No answer yet: the server holds this get-work (the plugin lists pods first) and
    /// replies later under this hold id (`ServerOut::released`).
    Held(u64),
    /// No answer: server down, connection refused, or the request timed out.
    Failed,
}

/// What a go-agent wants done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum AgentAction {
    /// Send this request to the server.
    Send(AgentRequest),
    /// Set a timer on the agent's own process.
    Timer {
        /// The simulated time it fires at (absolute).
        at_ms: u64,
        /// Which timer fires.
        timer: super::AgentTimer,
    },
}
