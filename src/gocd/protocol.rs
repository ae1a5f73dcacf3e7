//! What go-agents and the server say to each other over HTTP.

use std::sync::Arc;

/// A go-agent's HTTP request to the server. The agent id is shared with the sending process
/// (`Arc<str>`): every agent pings every 5 s, and a copy per request was a large part of
/// a day's allocations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentRequest {
    /// Auto-register with the pod's one-time key.
    Register {
        elastic_agent_id: Arc<str>,
        uuid: u64,
        key: String,
        environment: Option<String>,
    },
    /// Liveness ping, every 5 s; reports the job being built, if any.
    Ping {
        elastic_agent_id: Arc<str>,
        uuid: u64,
        building: Option<u64>,
    },
    /// Ask for work.
    GetWork {
        elastic_agent_id: Arc<str>,
        uuid: u64,
    },
    /// The job finished.
    ReportCompleted {
        elastic_agent_id: Arc<str>,
        uuid: u64,
        job: u64,
    },
}

impl AgentRequest {
    pub fn kind(&self) -> RequestKind {
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
pub enum RequestKind {
    Register,
    Ping,
    GetWork,
    ReportCompleted,
}

/// The server's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerReply {
    Registered,
    /// HTTP 422 with the reason.
    Refused(String),
    Pong,
    /// The server does not know this agent (deleted, or another uuid holds the id).
    NotRegistered,
    NoWork,
    /// The agent is disabled.
    Denied,
    Work {
        job: u64,
        runtime_ms: u64,
    },
    Ack,
    /// Ping reply carrying the cancel instruction for the build the agent runs; killing it
    /// takes `kill_ms`.
    Cancel {
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
pub enum AgentAction {
    Send(AgentRequest),
    Timer {
        delay_ms: u64,
        timer: super::AgentTimer,
    },
}
