//! The `[server]` settings of a run (`docs/scenario-format.md`) and the plugin the server
//! hosts.

use crate::allocator::{ClusterProfile, Policy};

/// `[server]` settings plus the plugin under test.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// How long a scheduled job waits before the server sends create-agent for it again, in
    /// simulated milliseconds; a queued create-agent expires 10 s before this.
    pub job_starvation_timeout_ms: u64,
    /// The period of the plugin's server-ping.
    pub server_ping_interval_ms: u64,
    /// The period of the build-assignment loop (create-agent requests for waiting jobs).
    pub assignment_interval_ms: u64,
    /// An agent silent this long becomes LostContact.
    pub agent_connection_timeout_ms: u64,
    /// The period of the check that reschedules the jobs of lost agents.
    pub hung_job_check_interval_ms: u64,
    /// How long a single-use auto-register key stays valid.
    pub auto_register_key_ttl_ms: u64,
    /// Threads that send create-agent requests to the plugin (the queue's workers).
    pub create_agent_threads: u32,
    /// How long a go-agent takes to kill a cancelled build (told in the cancel instruction).
    pub cancel_kill_ms: u64,
    /// How long a job's completion takes to reach the plugin through the job-status
    /// listener (`job_status.rs`); 0 calls the plugin at once.
    pub job_completion_delay_ms: u64,
    /// The allocator policy the server loads as its plugin.
    pub policy: Policy,
    /// The cluster profile's settings, sent with every plugin request.
    pub cluster_profile: ClusterProfile,
    /// Rules of `safe` switched off (an ablation mutant); empty in ordinary runs.
    pub ablations: crate::ablation::Ablations,
}
