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
    /// `pipeline_name`: the pipeline the job belongs to.
    pub pipeline_name: String,
    /// `pipeline_label`: the label of the pipeline run (by default its counter).
    pub pipeline_label: String,
    /// `pipeline_counter`: the number of the pipeline run.
    pub pipeline_counter: u64,
    /// `stage_name`: the stage the job belongs to.
    pub stage_name: String,
    /// `stage_counter`: the number of the stage run (a string on the wire).
    pub stage_counter: String,
    /// `job_name`: the job's name in its stage.
    pub job_name: String,
    /// `job_id`: the server's database id of this job instance.
    pub job_id: u64,
}

/// `agent_state` of an agent as the server reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AgentState {
    /// `Idle`: registered and waiting for work.
    Idle,
    /// `Building`: running a job.
    Building,
    /// `LostContact`: no ping from the agent within the server's agent connection timeout.
    LostContact,
    /// `Missing`: known from before the server started and not heard from since.
    Missing,
    /// `Unknown`: the server does not know the agent's state.
    Unknown,
}

/// `build_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum BuildState {
    /// `Idle`: not running a job.
    Idle,
    /// `Building`: running a job.
    Building,
    /// `Cancelled`: its job was cancelled and the agent has not yet reported it stopped.
    Cancelled,
    /// `Unknown`: the server does not know the build state (a Missing or LostContact agent).
    Unknown,
}

/// `config_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ConfigState {
    /// `Pending`: registered but not yet approved.
    Pending,
    /// `Enabled`: approved and eligible for work.
    Enabled,
    /// `Disabled`: disabled by an administrator or by the plugin's `disable-agents`.
    Disabled,
}

/// `agent` (AgentMetadataDTO v5). `agent_id` is the elastic agent id, which is the pod name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentMetadata {
    /// Shared, not copied: the server lists every agent at every create-agent and ping.
    pub agent_id: Arc<str>,
    /// `agent_state`: the agent's runtime state at the server.
    pub agent_state: AgentState,
    /// `build_state`: whether the agent is building.
    pub build_state: BuildState,
    /// `config_state`: whether the agent may be given work.
    pub config_state: ConfigState,
}

impl crate::resources::Listed for AgentMetadata {
    fn name(&self) -> &str {
        &self.agent_id
    }
}

/// The server's agents as a shared, versioned listing (`ServerApi::agent_listing`).
pub(crate) type AgentList = crate::resources::Listing<AgentMetadata>;

/// `cd.go.elastic-agent.create-agent`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CreateAgentRequest {
    /// `auto_register_key`: the agent's one-time registration key, valid in this server process.
    pub auto_register_key: String,
    /// `elastic_agent_profile_properties`: the job's elastic agent profile (image and the like).
    pub elastic_agent_profile_properties: StringMap,
    /// `cluster_profile_properties`: the cluster profile the elastic profile belongs to.
    pub cluster_profile_properties: StringMap,
    /// The pipeline's GoCD environment, or null.
    pub environment: Option<String>,
    /// `job_identifier`: the job the agent is wanted for.
    pub job_identifier: JobIdentifier,
}

/// `cd.go.elastic-agent.should-assign-work`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShouldAssignWorkRequest {
    /// `agent`: the idle elastic agent the server would give the job to.
    pub agent: AgentMetadata,
    /// `environment`: the job's GoCD environment, or null.
    pub environment: Option<String>,
    /// `elastic_agent_profile_properties`: the job's elastic agent profile.
    pub elastic_agent_profile_properties: StringMap,
    /// `cluster_profile_properties`: the cluster profile the job's elastic profile belongs to.
    pub cluster_profile_properties: StringMap,
    /// `job_identifier`: the job waiting for an agent.
    pub job_identifier: JobIdentifier,
}

/// `cd.go.elastic-agent.job-completion`. Sent when a job reaches Completed (passed, failed or
/// cancelled), never for a Rescheduled instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCompletionRequest {
    /// `elastic_agent_id`: the agent, hence the pod name, that ran the job.
    pub elastic_agent_id: String,
    /// `job_identifier`: the job that completed.
    pub job_identifier: JobIdentifier,
    /// `elastic_agent_profile_properties`: the job's elastic agent profile.
    pub elastic_agent_profile_properties: StringMap,
    /// `cluster_profile_properties`: the cluster profile the job's elastic profile belongs to.
    pub cluster_profile_properties: StringMap,
}

/// `cd.go.elastic-agent.server-ping`: every cluster profile of this plugin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerPingRequest {
    /// `all_cluster_profile_properties`: the properties of each cluster profile.
    pub all_cluster_profile_properties: Vec<StringMap>,
}
