//! The simulated GoCD server and go-agent processes.
//!
//! [`Server`] is the server's behaviour around elastic agents, with the reference's defaults:
//! the build-assignment loop (create-agent for new and starving jobs through a bounded pool of
//! plugin threads with message expiry), should-assign-work asked job by job on each get-work,
//! single-use expiring auto-register keys, agent states and liveness, server-ping, job
//! completion and hung-job rescheduling. It hosts the allocator in-process, as the real server
//! loads the plugin into its JVM. [`GoAgent`] is the agent process inside one pod's container.
//! Both are sans-IO: the world delivers their messages and timers.

mod agent;
mod agent_table;
mod database;
mod job_table;
mod protocol;
mod registry;
mod server;
mod settings;

pub(crate) use agent::{AgentInput, AgentTimer, GoAgent};
pub(crate) use database::JobState;
pub(crate) use protocol::{
    AgentAction, AgentIds, AgentRequest, Registration, RequestKind, ServerReply,
};
pub use server::{Server, ServerInput, ServerOut, ServerTimer, profile_key};
pub(crate) use settings::ServerSettings;
