//! Trace records: every observable step of a run, in order.
//!
//! Records feed four consumers, in this order: the fingerprint (SHA-256 over a canonical
//! binary encoding, [`Fingerprint`]), the invariant monitors (`crate::check`), the metrics and
//! tables (`crate::report`) and, with `--trace`, `trace.jsonl` ([`JsonlWriter`]).
//! The record vocabulary is the contract between the models and the checkers: a monitor sees
//! nothing but these records.

mod fingerprint;
mod identity;
mod jsonl;

pub use fingerprint::Fingerprint;
pub use identity::config_identity;
pub use jsonl::JsonlWriter;

use serde::Serialize;

/// Who did something to a pod or Lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Actor {
    /// The plugin's allocator (any policy).
    Allocator,
    /// A fault: `kubectl delete pod`, a third-party Lease edit.
    External,
    /// A Kubernetes node disappeared.
    NodeLoss,
    /// A leader-election replica.
    Replica(u32),
}

/// The server's view of an agent's runtime state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRuntime {
    Idle,
    Building,
    Missing,
    LostContact,
}

/// One observable step. Field names are stable: they appear in `trace.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    // ── workload and GoCD server ──────────────────────────────────────────────────────────
    /// A job instance enters Scheduled. `logical` groups a job with its reschedules.
    JobScheduled {
        job: u64,
        logical: u64,
        profile: String,
        environment: Option<String>,
        /// Harness-computed identity of the job's elastic profile + cluster profile +
        /// environment at this moment (independent of any policy's hash).
        config: String,
    },
    /// The server posted a create-agent for this job on the plugin queue.
    CreateAgentQueued {
        job: u64,
        request: u64,
    },
    /// A plugin thread picked it up.
    CreateAgentStarted {
        job: u64,
        request: u64,
    },
    /// It sat in the queue past its time-to-live and was dropped.
    CreateAgentExpired {
        job: u64,
        request: u64,
    },
    /// The plugin finished handling a request (its server thread is free).
    PluginRequestDone {
        request: u64,
    },
    /// should-assign-work was asked and answered.
    ShouldAssignWork {
        agent: String,
        job: u64,
        answer: bool,
    },
    /// A job instance was given to an agent. `config` is the job's identity as in
    /// `JobScheduled`, recomputed now.
    JobAssigned {
        job: u64,
        agent: String,
        config: String,
    },
    /// The agent reported the job finished.
    JobCompleted {
        job: u64,
        agent: String,
    },
    /// A job instance was rescheduled as `new_job` (hung job, abandoned build).
    JobRescheduled {
        job: u64,
        new_job: u64,
        reason: String,
    },
    /// A job instance was cancelled.
    JobCancelled {
        job: u64,
    },
    /// An agent process registered (`agent` is the elastic agent id, i.e. the pod name;
    /// `uuid` changes when the container restarts).
    AgentRegistered {
        agent: String,
        uuid: u64,
    },
    /// Registration refused (HTTP 422) with the server's reason.
    AgentRegistrationRefused {
        agent: String,
        uuid: u64,
        reason: String,
    },
    /// The server's runtime state of an agent changed.
    AgentState {
        agent: String,
        state: AgentRuntime,
    },
    /// An agent was enabled or disabled.
    AgentConfig {
        agent: String,
        enabled: bool,
    },
    /// An agent was deleted from the server's registry.
    AgentDeleted {
        agent: String,
    },
    /// The server sent server-ping to the plugin.
    ServerPing,
    /// The server process stopped (crash) or started.
    ServerStopped,
    ServerStarted,
    // ── allocator ─────────────────────────────────────────────────────────────────────────
    /// Something the allocator decided (see `allocator::Decision`).
    Decision {
        job: Option<u64>,
        pod: Option<String>,
        code: String,
        text: String,
    },
    // ── Kubernetes ────────────────────────────────────────────────────────────────────────
    /// The API server accepted a pod create. `config` is the harness's identity of the
    /// config the pod was created with; `job_label` its `Elastic-Agent-Job-Id`.
    PodCreated {
        pod: String,
        job_label: Option<u64>,
        config: String,
        by: Actor,
    },
    PodScheduled {
        pod: String,
        node: String,
    },
    PodUnschedulable {
        pod: String,
    },
    /// Container started; phase Running.
    PodRunning {
        pod: String,
    },
    /// The agent container died and will be restarted by the kubelet.
    ContainerDied {
        pod: String,
    },
    /// The kubelet restarted the container (restartCount is now `restart_count`).
    ContainerRestarted {
        pod: String,
        restart_count: u32,
    },
    /// Phase changed to Failed or Succeeded.
    PodPhase {
        pod: String,
        phase: String,
    },
    /// The API server accepted the pod's deletion (or evicted it). A pod whose container
    /// runs stays listed, Terminating, until its grace period is over.
    PodDeleted {
        pod: String,
        by: Actor,
    },
    /// A terminating pod left the API server: its grace period is over (or it was evicted).
    PodGone {
        pod: String,
    },
    /// A Kubernetes node became unreachable: its containers are gone, its pods stay listed
    /// (not ready) until they are evicted.
    NodeLost {
        node: String,
    },
    /// A new empty node joined (a managed node group replacing a lost one).
    NodeJoined {
        node: String,
    },
    /// One Kubernetes API call answered (or timed out) for a client.
    KubeCall {
        caller: String,
        verb: String,
        target: String,
        outcome: String,
    },
    // ── leader election ───────────────────────────────────────────────────────────────────
    /// The API server accepted a Lease write. `rv_current` is the Lease's resourceVersion
    /// before the write (None if absent); `rv_sent` what the writer sent (None for create and
    /// unconditional writes).
    LeaseWritten {
        by: Actor,
        verb: String,
        holder: String,
        transitions: u32,
        rv_current: Option<u64>,
        rv_sent: Option<u64>,
        rv_new: u64,
    },
    /// A replica started or stopped competing in the election.
    ElectionStarted {
        replica: u32,
    },
    ElectionStopped {
        replica: u32,
    },
    /// The replica's elector acquired or renewed the Lease (a successful write), on its own
    /// observation.
    LeaseHeld {
        replica: u32,
        term: u64,
    },
    /// The replica's runner believes it leads (OnStartedLeading of `term` delivered) / stopped.
    LeadingStarted {
        replica: u32,
        term: u64,
    },
    LeadingStopped {
        replica: u32,
        term: u64,
    },
    /// A leader module started / stopped running on a replica.
    ModuleStarted {
        replica: u32,
        module: String,
        term: u64,
    },
    ModuleStopped {
        replica: u32,
        module: String,
    },
    /// A module received a configuration (`version` grows with the config timeline).
    ModuleConfig {
        replica: u32,
        module: String,
        version: u64,
    },
    /// A running module did one unit of its periodic work.
    ModuleAction {
        replica: u32,
        module: String,
    },
    /// A configuration reached the replica's runner; `runnable_modules` names the leader
    /// modules it makes runnable (the demand `election-iff-demand` follows).
    ConfigReceived {
        replica: u32,
        version: u64,
        runnable_modules: Vec<String>,
    },
    /// A replica process crashed / started / paused / resumed.
    ReplicaStopped {
        replica: u32,
    },
    ReplicaStarted {
        replica: u32,
    },
    ReplicaPaused {
        replica: u32,
    },
    ReplicaResumed {
        replica: u32,
    },
    // ── faults and phases ─────────────────────────────────────────────────────────────────
    FaultStarted {
        index: u32,
        fault: String,
        target: String,
    },
    FaultEnded {
        index: u32,
        fault: String,
    },
    /// An elastic profile was edited: its config identity is now `config`.
    ProfileEdited {
        profile: String,
        config: String,
    },
    /// Periodic sample tick for the timeline (not fingerprinted).
    Sample,
    /// `duration` reached: no new faults or jobs; the liveness phase starts.
    SafetyPhaseEnded,
    /// The server sent more job-driven plugin requests (create-agent and should-assign-work)
    /// than `per_job_max` for each job scheduled so far: a request storm. The run ends here
    /// (`bounded-requests`), its eventually-invariants judged at this instant.
    RequestsBounded {
        requests: u64,
        jobs: u64,
        per_job_max: u64,
    },
    /// End of the settle phase (or of a run a bound stopped).
    RunEnded,
    /// The cluster profile was edited (`cluster_profile_edit`): requests the server sends
    /// from now on carry these settings; requests already queued keep the old ones.
    /// `cluster` is the cluster profile's id (a run has one). Last in the enum so that the
    /// encoding of every other record, and so every fingerprint of a run without this
    /// fault, stays as it was.
    ClusterProfileEdited {
        cluster: String,
        pending_pods_count: u32,
        enable_agent_reuse: bool,
        auto_register_timeout_ms: u64,
        idle_timeout_ms: u64,
        max_pods: Option<u32>,
    },
}

impl Record {
    /// The leader replica a record is about: its own leader-election, module, configuration
    /// and process records, and the Lease writes it made. `None` for every other record.
    pub fn replica(&self) -> Option<u32> {
        match self {
            Record::ElectionStarted { replica }
            | Record::ElectionStopped { replica }
            | Record::LeaseHeld { replica, .. }
            | Record::LeadingStarted { replica, .. }
            | Record::LeadingStopped { replica, .. }
            | Record::ModuleStarted { replica, .. }
            | Record::ModuleStopped { replica, .. }
            | Record::ModuleConfig { replica, .. }
            | Record::ModuleAction { replica, .. }
            | Record::ConfigReceived { replica, .. }
            | Record::ReplicaStopped { replica }
            | Record::ReplicaStarted { replica }
            | Record::ReplicaPaused { replica }
            | Record::ReplicaResumed { replica } => Some(*replica),
            Record::LeaseWritten {
                by: Actor::Replica(replica),
                ..
            } => Some(*replica),
            _ => None,
        }
    }
}

/// A record with its time and the node that emitted it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceEvent<'a> {
    pub t_ms: u64,
    pub node: &'a str,
    #[serde(flatten)]
    pub record: &'a Record,
}
