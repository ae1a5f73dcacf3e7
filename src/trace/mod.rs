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
pub(crate) use identity::config_identity;
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
    /// Registered and not building.
    Idle,
    /// Building a job (or killing a cancelled one).
    Building,
    /// Known from the database but not heard from since the server started.
    Missing,
    /// Silent for longer than `agent_connection_timeout`.
    LostContact,
}

/// One observable step. Field names are stable: they appear in `trace.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    // ── workload and GoCD server ──────────────────────────────────────────────────────────
    /// A job instance enters Scheduled. `logical` groups a job with its reschedules.
    JobScheduled {
        /// The job instance's id.
        job: u64,
        /// The id every instance of the same job shares.
        logical: u64,
        /// The elastic profile the job asks for.
        profile: String,
        /// The job's GoCD environment, if any.
        environment: Option<String>,
        /// Harness-computed identity of the job's elastic profile and environment as frozen
        /// in its plan at scheduling (independent of any policy's hash); a reschedule keeps
        /// the first instance's.
        config: String,
    },
    /// The server posted a create-agent for this job on the plugin queue.
    CreateAgentQueued {
        /// The job instance.
        job: u64,
        /// The plugin request's id (`PluginRequestDone` names it too).
        request: u64,
    },
    /// A plugin thread picked it up.
    CreateAgentStarted {
        /// The job instance.
        job: u64,
        /// The plugin request's id.
        request: u64,
    },
    /// It sat in the queue past its time-to-live and was dropped.
    CreateAgentExpired {
        /// The job instance.
        job: u64,
        /// The plugin request's id.
        request: u64,
    },
    /// The plugin finished handling a request (its server thread is free).
    PluginRequestDone {
        /// The plugin request's id.
        request: u64,
    },
    /// should-assign-work was asked and answered.
    ShouldAssignWork {
        /// The agent that asked for work (its elastic agent id).
        agent: String,
        /// The job instance it was offered.
        job: u64,
        /// The plugin's answer: true lets the agent take the job.
        answer: bool,
    },
    /// A job instance was given to an agent. `config` is the job's identity as in
    /// `JobScheduled`: the config frozen in its plan at scheduling.
    JobAssigned {
        /// The job instance.
        job: u64,
        /// The agent's elastic agent id.
        agent: String,
        /// The job's config identity, frozen at scheduling.
        config: String,
    },
    /// The agent reported the job finished.
    JobCompleted {
        /// The job instance.
        job: u64,
        /// The agent's elastic agent id.
        agent: String,
    },
    /// A job instance was rescheduled as `new_job` (hung job, abandoned build).
    JobRescheduled {
        /// The instance given up.
        job: u64,
        /// The instance scheduled in its place.
        new_job: u64,
        /// Why, in a few words.
        reason: String,
    },
    /// A job instance was cancelled.
    JobCancelled {
        /// The job instance.
        job: u64,
    },
    /// An agent process registered (`agent` is the elastic agent id, i.e. the pod name;
    /// `uuid` changes when the container restarts).
    AgentRegistered {
        /// The elastic agent id (pod name).
        agent: String,
        /// The go-agent process's uuid.
        uuid: u64,
    },
    /// Registration refused (HTTP 422) with the server's reason.
    AgentRegistrationRefused {
        /// The elastic agent id (pod name).
        agent: String,
        /// The go-agent process's uuid.
        uuid: u64,
        /// The server's reason, e.g. a used or expired key.
        reason: String,
    },
    /// The server's runtime state of an agent changed.
    AgentState {
        /// The elastic agent id.
        agent: String,
        /// The new runtime state.
        state: AgentRuntime,
    },
    /// An agent was enabled or disabled.
    AgentConfig {
        /// The elastic agent id.
        agent: String,
        /// True when enabled.
        enabled: bool,
    },
    /// An agent was deleted from the server's registry.
    AgentDeleted {
        /// The elastic agent id.
        agent: String,
    },
    /// The server sent server-ping to the plugin.
    ServerPing,
    /// The server process stopped (crash) or started.
    ServerStopped,
    /// The server process started (first boot or restart).
    ServerStarted,
    // ── allocator ─────────────────────────────────────────────────────────────────────────
    /// Something the allocator decided (see `allocator::Decision`).
    Decision {
        /// The job the decision is about, if any.
        job: Option<u64>,
        /// The pod the decision is about, if any.
        pod: Option<String>,
        /// The decision's stable code (`allocator::DecisionCode`, kebab-case).
        code: String,
        /// One sentence for people.
        text: String,
    },
    // ── Kubernetes ────────────────────────────────────────────────────────────────────────
    /// The API server accepted a pod create. `config` is the harness's identity of the
    /// config the pod was created with; `job_label` its `Elastic-Agent-Job-Id`.
    PodCreated {
        /// The pod's name.
        pod: String,
        /// The job label's value, if the pod has one.
        job_label: Option<u64>,
        /// The config identity the pod was created with.
        config: String,
        /// Who created it.
        by: Actor,
    },
    /// The scheduler bound the pod to a node.
    PodScheduled {
        /// The pod's name.
        pod: String,
        /// The node's name.
        node: String,
    },
    /// No node has a free slot: the pod stays Pending until one frees.
    PodUnschedulable {
        /// The pod's name.
        pod: String,
    },
    /// Container started; phase Running.
    PodRunning {
        /// The pod's name.
        pod: String,
    },
    /// The agent container died and will be restarted by the kubelet.
    ContainerDied {
        /// The pod's name.
        pod: String,
    },
    /// The kubelet restarted the container (restartCount is now `restart_count`).
    ContainerRestarted {
        /// The pod's name.
        pod: String,
        /// The container's restarts so far.
        restart_count: u32,
    },
    /// Phase changed to Failed or Succeeded.
    PodPhase {
        /// The pod's name.
        pod: String,
        /// The new phase, `Failed` or `Succeeded`.
        phase: String,
    },
    /// The API server accepted the pod's deletion (or evicted it). A pod whose container
    /// runs stays listed, Terminating, until its grace period is over.
    PodDeleted {
        /// The pod's name.
        pod: String,
        /// Who deleted it.
        by: Actor,
    },
    /// A terminating pod left the API server: its grace period is over (or it was evicted).
    PodGone {
        /// The pod's name.
        pod: String,
    },
    /// A Kubernetes node became unreachable: its containers are gone, its pods stay listed
    /// (not ready) until they are evicted.
    NodeLost {
        /// The node's name.
        node: String,
    },
    /// A new empty node joined (a managed node group replacing a lost one).
    NodeJoined {
        /// The node's name.
        node: String,
    },
    /// One Kubernetes API call answered (or timed out) for a client.
    KubeCall {
        /// Who made the call, e.g. `plugin`.
        caller: String,
        /// The request's verb (may be empty).
        verb: String,
        /// What the call was about, e.g. `call 12`.
        target: String,
        /// `ok`, `not-found`, `conflict`, `error` or `timeout`.
        outcome: String,
    },
    // ── leader election ───────────────────────────────────────────────────────────────────
    /// The API server accepted a Lease write. `rv_current` is the Lease's resourceVersion
    /// before the write (None if absent); `rv_sent` what the writer sent (None for create and
    /// unconditional writes).
    LeaseWritten {
        /// Who wrote it.
        by: Actor,
        /// `create`, `update` or `delete`.
        verb: String,
        /// `holderIdentity` after the write (empty: released).
        holder: String,
        /// `leaseTransitions` after the write.
        transitions: u32,
        /// The resourceVersion before the write.
        rv_current: Option<u64>,
        /// The resourceVersion the writer sent.
        rv_sent: Option<u64>,
        /// The resourceVersion after the write.
        rv_new: u64,
    },
    /// A replica started or stopped competing in the election.
    ElectionStarted {
        /// The replica.
        replica: u32,
    },
    /// The replica stopped competing in the election.
    ElectionStopped {
        /// The replica.
        replica: u32,
    },
    /// The replica's elector acquired or renewed the Lease (a successful write), on its own
    /// observation.
    LeaseHeld {
        /// The replica.
        replica: u32,
        /// The elector's term the write was made in (terms restart at 1 after a crash).
        term: u64,
    },
    /// The replica's runner believes it leads (OnStartedLeading of `term` delivered) / stopped.
    LeadingStarted {
        /// The replica.
        replica: u32,
        /// The term that started.
        term: u64,
    },
    /// The replica's runner no longer believes it leads (the term ended).
    LeadingStopped {
        /// The replica.
        replica: u32,
        /// The term that ended.
        term: u64,
    },
    /// A leader module started / stopped running on a replica.
    ModuleStarted {
        /// The replica.
        replica: u32,
        /// The module's name.
        module: String,
        /// The term it runs under.
        term: u64,
    },
    /// A leader module stopped running on a replica.
    ModuleStopped {
        /// The replica.
        replica: u32,
        /// The module's name.
        module: String,
    },
    /// The replica's runner blocks until these modules returned (agentk-v1's `holder.wait()`),
    /// or for ever on a wrapper blocked on it (agentk-v2 and HEAD, H5).
    RunnerBlocked {
        /// The replica.
        replica: u32,
        /// Where the runner waits, in the real code.
        waits_in: String,
        /// The modules it waits for.
        modules: Vec<String>,
    },
    /// A module received a configuration (`version` grows with the config timeline).
    ModuleConfig {
        /// The replica.
        replica: u32,
        /// The module's name.
        module: String,
        /// The configuration's version.
        version: u64,
    },
    /// A running module did one unit of its periodic work.
    ModuleAction {
        /// The replica.
        replica: u32,
        /// The module's name.
        module: String,
    },
    /// A configuration reached the replica's runner; `runnable_modules` names the leader
    /// modules it makes runnable (the demand `election-iff-demand` follows).
    ConfigReceived {
        /// The replica.
        replica: u32,
        /// The configuration's version.
        version: u64,
        /// The modules runnable under it.
        runnable_modules: Vec<String>,
    },
    /// A replica process crashed / started / paused / resumed.
    ReplicaStopped {
        /// The replica.
        replica: u32,
    },
    /// A replica process started (first boot or restart).
    ReplicaStarted {
        /// The replica.
        replica: u32,
    },
    /// A replica process was paused.
    ReplicaPaused {
        /// The replica.
        replica: u32,
    },
    /// A paused replica process resumed.
    ReplicaResumed {
        /// The replica.
        replica: u32,
    },
    // ── faults and phases ─────────────────────────────────────────────────────────────────
    /// A fault started (scheduled, or drawn by the swarm).
    FaultStarted {
        /// The fault's index among the run's faults.
        index: u32,
        /// The fault's kind, e.g. `node_loss`.
        fault: String,
        /// What it acts on (a node group, a node, a replica, pods).
        target: String,
    },
    /// A fault with a duration ended.
    FaultEnded {
        /// The fault's index, as in `FaultStarted`.
        index: u32,
        /// The fault's kind.
        fault: String,
    },
    /// An elastic profile was edited: its config identity is now `config`.
    ProfileEdited {
        /// The profile's name.
        profile: String,
        /// The profile's new config identity.
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
        /// Job-driven plugin requests sent so far.
        requests: u64,
        /// Jobs scheduled so far.
        jobs: u64,
        /// The scenario's `plugin_requests_per_job_max`.
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
        /// The cluster profile's id.
        cluster: String,
        /// The pending-pod limit now.
        pending_pods_count: u32,
        /// Whether agent reuse is on now.
        enable_agent_reuse: bool,
        /// The auto-register timeout (ART) now, in simulated milliseconds.
        auto_register_timeout_ms: u64,
        /// The idle timeout now, in simulated milliseconds.
        idle_timeout_ms: u64,
        /// The pod cap now (`safe` only), if any.
        max_pods: Option<u32>,
    },
}

impl Record {
    /// The leader replica a record is about: its own leader-election, module, configuration
    /// and process records, and the Lease writes it made. `None` for every other record.
    pub(crate) fn replica(&self) -> Option<u32> {
        match self {
            Record::ElectionStarted { replica }
            | Record::ElectionStopped { replica }
            | Record::LeaseHeld { replica, .. }
            | Record::LeadingStarted { replica, .. }
            | Record::LeadingStopped { replica, .. }
            | Record::ModuleStarted { replica, .. }
            | Record::ModuleStopped { replica, .. }
            | Record::ModuleConfig { replica, .. }
            | Record::RunnerBlocked { replica, .. }
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
pub(crate) struct TraceEvent<'a> {
    /// Simulated time of the record, in milliseconds.
    pub t_ms: u64,
    /// The node that emitted it (`gocd`, `kube-api`, `harness`, a pod, a replica).
    pub node: &'a str,
    /// The record itself (its fields are flattened into the event's JSON).
    #[serde(flatten)]
    pub record: &'a Record,
}
