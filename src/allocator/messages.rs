//! Elastic-agent extension v5 message bodies, with their real JSON field names.
//!
//! Request names carry the prefix `cd.go.elastic-agent.` (`create-agent`,
//! `should-assign-work`, `job-completion`, `server-ping`). Property maps are string to string,
//! secrets already resolved by the server.

use crate::resources::StringMap;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// `job_identifier`. `job_id` is the database id of the job *instance*: a reschedule makes a
/// new instance with a new id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobIdentifier {
    pub pipeline_name: String,
    pub pipeline_label: String,
    pub pipeline_counter: u64,
    pub stage_name: String,
    pub stage_counter: String,
    pub job_name: String,
    pub job_id: u64,
}

/// `agent_state` of an agent as the server reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AgentState {
    Idle,
    Building,
    LostContact,
    Missing,
    Unknown,
}

/// `build_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum BuildState {
    Idle,
    Building,
    Cancelled,
    Unknown,
}

/// `config_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ConfigState {
    Pending,
    Enabled,
    Disabled,
}

/// `agent` (AgentMetadataDTO v5). `agent_id` is the elastic agent id, which is the pod name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMetadata {
    /// Shared, not copied: the server lists every agent at every create-agent and ping.
    pub agent_id: Arc<str>,
    pub agent_state: AgentState,
    pub build_state: BuildState,
    pub config_state: ConfigState,
}

/// `cd.go.elastic-agent.create-agent`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateAgentRequest {
    pub auto_register_key: String,
    pub elastic_agent_profile_properties: StringMap,
    pub cluster_profile_properties: StringMap,
    /// The pipeline's GoCD environment, or null.
    pub environment: Option<String>,
    pub job_identifier: JobIdentifier,
}

/// `cd.go.elastic-agent.should-assign-work`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShouldAssignWorkRequest {
    pub agent: AgentMetadata,
    pub environment: Option<String>,
    pub elastic_agent_profile_properties: StringMap,
    pub cluster_profile_properties: StringMap,
    pub job_identifier: JobIdentifier,
}

/// `cd.go.elastic-agent.job-completion`. Sent when a job reaches Completed (passed, failed or
/// cancelled), never for a Rescheduled instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCompletionRequest {
    pub elastic_agent_id: String,
    pub job_identifier: JobIdentifier,
    pub elastic_agent_profile_properties: StringMap,
    pub cluster_profile_properties: StringMap,
}

/// `cd.go.elastic-agent.server-ping`: every cluster profile of this plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPingRequest {
    pub all_cluster_profile_properties: Vec<StringMap>,
}
