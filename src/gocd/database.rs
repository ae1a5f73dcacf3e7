//! What the GoCD server keeps in its database: jobs and registered agents. It survives a
//! server crash; everything else (plugin state, keys, scheduling memory) does not.

use super::agent_table::AgentTable;
use crate::trace::AgentRuntime;
use std::collections::BTreeMap;

/// A live job instance's state (`JobState.java`, with Assigned..Completing folded into
/// Assigned). Completed and rescheduled instances leave the database: the trace keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobState {
    Scheduled,
    Assigned,
}

/// One job instance.
#[derive(Clone, Debug)]
pub struct Job {
    pub id: u64,
    pub logical: u64,
    pub profile: String,
    pub environment: Option<String>,
    pub runtime_ms: u64,
    pub state: JobState,
    pub agent: Option<String>,
    pub scheduled_ms: u64,
}

/// One registered agent (keyed by elastic agent id = pod name; the key's name is shared with
/// every listing of the agent).
#[derive(Clone, Debug)]
pub struct AgentRecord {
    pub uuid: u64,
    pub environment: Option<String>,
    pub enabled: bool,
    pub runtime: AgentRuntime,
    pub last_heard_ms: u64,
    pub job: Option<u64>,
    /// A cancelled job whose build the agent has not finished killing yet: the server
    /// reports the agent Building (build state Cancelled) until it pings without it.
    pub cancelling: Option<u64>,
}

/// The server's database.
#[derive(Debug, Default)]
pub struct Database {
    /// Live jobs: scheduled or assigned.
    pub jobs: BTreeMap<u64, Job>,
    /// Registered agents by elastic agent id, with their listing (`agent_table.rs`).
    pub agents: AgentTable,
    next_job_id: u64,
    next_logical: u64,
}

impl Database {
    /// A new job instance id.
    pub fn next_job_id(&mut self) -> u64 {
        self.next_job_id += 1;
        self.next_job_id
    }

    /// A new logical job id.
    pub fn next_logical(&mut self) -> u64 {
        self.next_logical += 1;
        self.next_logical
    }
}
