//! The typed scenario: what `docs/scenario-format.md` describes, after parsing, defaults and
//! validation. Every duration is in simulated milliseconds.

use std::collections::BTreeMap;

/// A duration range: uniform in `[min_ms, max_ms]` (equal bounds for a fixed duration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    pub min_ms: u64,
    pub max_ms: u64,
}

impl Range {
    /// A fixed duration.
    pub const fn fixed(ms: u64) -> Range {
        Range {
            min_ms: ms,
            max_ms: ms,
        }
    }
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    pub name: String,
    pub description: String,
    pub seed: u64,
    pub duration_ms: u64,
    pub settle_ms: u64,
    pub cluster: Cluster,
    pub server: Server,
    pub plugin: Plugin,
    pub profiles: Vec<Profile>,
    pub jobs: Vec<JobSource>,
    pub faults: Vec<Fault>,
    pub swarm: Swarm,
    pub invariants: Invariants,
    pub leader: Option<Leader>,
    /// `ablate`: rules of `safe` and fixes of `fixed` switched off (empty: none).
    pub ablations: crate::ablation::Ablations,
}

/// `[cluster]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    pub nodes: u32,
    pub pods_per_node: u32,
    pub pod_startup: Range,
    pub api_latency: Range,
    pub api_error_rate: f64,
    pub container_restart_backoff_ms: u64,
    /// `termination_grace`: how long a deleted pod whose container runs stays listed
    /// (Terminating) before it is gone.
    pub termination_grace_ms: u64,
    /// `node_eviction`: how long the pods of a lost node stay listed (not ready) before
    /// they are evicted.
    pub node_eviction_ms: u64,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            nodes: 4,
            pods_per_node: 10,
            pod_startup: Range {
                min_ms: 2_000,
                max_ms: 15_000,
            },
            api_latency: Range {
                min_ms: 2,
                max_ms: 40,
            },
            api_error_rate: 0.0,
            container_restart_backoff_ms: 10_000,
            termination_grace_ms: 30_000,
            node_eviction_ms: 5 * 60_000,
        }
    }
}

/// `[server]` (defaults are GoCD's).
#[derive(Clone, Debug, PartialEq)]
pub struct Server {
    pub job_starvation_timeout_ms: u64,
    pub server_ping_interval_ms: u64,
    pub assignment_interval_ms: u64,
    pub agent_connection_timeout_ms: u64,
    pub hung_job_check_interval_ms: u64,
    pub auto_register_key_ttl_ms: u64,
    pub create_agent_threads: u32,
    /// `cancel_kill`: how long a go-agent takes to kill a cancelled build.
    pub cancel_kill_ms: u64,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            job_starvation_timeout_ms: 120_000,
            server_ping_interval_ms: 60_000,
            assignment_interval_ms: 5_000,
            agent_connection_timeout_ms: 300_000,
            hung_job_check_interval_ms: 30_000,
            auto_register_key_ttl_ms: 30 * 60_000,
            create_agent_threads: 5,
            cancel_kill_ms: 10_000,
        }
    }
}

/// `[plugin]`: the cluster profile plus the policy under test.
#[derive(Clone, Debug, PartialEq)]
pub struct Plugin {
    /// `upstream`, `pr355` or `safe`.
    pub policy: String,
    pub enable_agent_reuse: bool,
    pub auto_register_timeout_ms: u64,
    pub pending_pods_count: u32,
    pub idle_timeout_ms: u64,
    pub cluster_request_timeout_ms: u64,
    /// Extension: `safe`'s optional limit on all pods.
    pub max_pods: Option<u32>,
}

impl Default for Plugin {
    fn default() -> Self {
        Plugin {
            policy: "upstream".to_owned(),
            enable_agent_reuse: false,
            auto_register_timeout_ms: 10 * 60_000,
            pending_pods_count: 10,
            idle_timeout_ms: 5 * 60_000,
            cluster_request_timeout_ms: 10_000,
            max_pods: None,
        }
    }
}

/// `[[profiles]]`: an elastic agent profile.
#[derive(Clone, Debug, PartialEq)]
pub struct Profile {
    pub name: String,
    pub image: String,
    pub cpu: String,
    pub memory: String,
    /// GoCD environment of the pipelines using this profile.
    pub environment: Option<String>,
}

/// `[[jobs]]`: a workload generator.
#[derive(Clone, Debug, PartialEq)]
pub enum JobSource {
    /// `count` jobs scheduled within `spread_ms` after `at_ms`.
    Burst {
        at_ms: u64,
        count: u32,
        spread_ms: u64,
        profile: String,
        runtime: Range,
    },
    /// Exponential inter-arrival times in `[from_ms, until_ms)`.
    Poisson {
        from_ms: u64,
        until_ms: u64,
        per_minute: f64,
        profile: String,
        runtime: Range,
    },
    /// Replay: arrivals, runtimes and start-up times from a recorded trace (path resolved
    /// relative to the scenario file).
    Trace { file: std::path::PathBuf },
    /// One explicit job (what `shrink` writes): scheduled at `at_ms`, runs `runtime_ms`.
    Single {
        at_ms: u64,
        profile: String,
        runtime_ms: u64,
    },
}

/// Which pods a pod fault picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodTarget {
    Idle,
    Busy,
    Pending,
    Any,
}

/// Which jobs a `job_cancel` fault picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobTarget {
    /// Assigned to an agent (building).
    Building,
    /// Waiting for an agent.
    Scheduled,
}

impl JobTarget {
    /// The `target` string of the scenario format.
    pub fn name(self) -> &'static str {
        match self {
            JobTarget::Building => "building",
            JobTarget::Scheduled => "scheduled",
        }
    }
}

/// A replica named by a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReplicaRef {
    Index(u32),
    /// Whoever leads when the fault starts.
    Leader,
}

/// `api_outage` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutageMode {
    Error,
    Hang,
}

/// `[[faults]]`: one scheduled fault.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    pub at_ms: u64,
    pub kind: FaultKind,
}

/// What a fault does.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    ServerCrash {
        downtime_ms: u64,
    },
    PodDelete {
        target: PodTarget,
        count: u32,
    },
    ContainerRestart {
        target: PodTarget,
        count: u32,
    },
    /// Extension: the pod fails for good (eviction, image error): phase Failed, no restart.
    PodFail {
        target: PodTarget,
        count: u32,
    },
    /// Node groups: "gocd", "kube-api", "agents", "replica-N", "replicas", "leader".
    Partition {
        between: [String; 2],
        for_ms: u64,
    },
    ApiOutage {
        for_ms: u64,
        mode: OutageMode,
    },
    ProfileEdit {
        profile: String,
        set: BTreeMap<String, String>,
    },
    /// The cluster profile's properties change (`set` holds the new values): under
    /// `upstream` and `pr355` a new cluster uuid, hence a new pod map; under `pr355` a new
    /// config hash whenever a hashed field changes.
    ClusterProfileEdit {
        set: ClusterProfileChanges,
    },
    /// `count` nodes become unreachable; `replace_after_ms` later a new empty node of the
    /// same size joins for each (a managed node group).
    NodeLoss {
        count: u32,
        replace_after_ms: u64,
    },
    /// The server cancels `count` jobs (`target` building or scheduled): job-completion for
    /// a building one, whose agent reports Building until it has killed the build.
    JobCancel {
        target: JobTarget,
        count: u32,
    },
    Burst {
        count: u32,
        spread_ms: u64,
        profile: String,
        runtime: Range,
    },
    ReplicaCrash {
        replica: ReplicaRef,
        downtime_ms: u64,
    },
    ReplicaPause {
        replica: ReplicaRef,
        for_ms: u64,
    },
    /// Graceful shutdown (a rolling update's SIGTERM); a new process starts `downtime_ms`
    /// after the old one exited.
    ReplicaStop {
        replica: ReplicaRef,
        downtime_ms: u64,
    },
    ClockDrift {
        replica: ReplicaRef,
        rate: f64,
    },
    LeaseDelete,
    CallbackDelay {
        replica: ReplicaRef,
        delay_ms: u64,
    },
}

impl FaultKind {
    /// The `kind` string of the scenario format.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::ServerCrash { .. } => "server_crash",
            FaultKind::PodDelete { .. } => "pod_delete",
            FaultKind::ContainerRestart { .. } => "container_restart",
            FaultKind::PodFail { .. } => "pod_fail",
            FaultKind::Partition { .. } => "partition",
            FaultKind::ApiOutage { .. } => "api_outage",
            FaultKind::ProfileEdit { .. } => "profile_edit",
            FaultKind::ClusterProfileEdit { .. } => "cluster_profile_edit",
            FaultKind::NodeLoss { .. } => "node_loss",
            FaultKind::JobCancel { .. } => "job_cancel",
            FaultKind::Burst { .. } => "burst",
            FaultKind::ReplicaCrash { .. } => "replica_crash",
            FaultKind::ReplicaPause { .. } => "replica_pause",
            FaultKind::ReplicaStop { .. } => "replica_stop",
            FaultKind::ClockDrift { .. } => "clock_drift",
            FaultKind::LeaseDelete => "lease_delete",
            FaultKind::CallbackDelay { .. } => "callback_delay",
        }
    }

    /// True for faults that need a `[leader]` section.
    pub fn needs_leader(&self) -> bool {
        matches!(
            self,
            FaultKind::ReplicaCrash { .. }
                | FaultKind::ReplicaStop { .. }
                | FaultKind::ReplicaPause { .. }
                | FaultKind::ClockDrift { .. }
                | FaultKind::LeaseDelete
                | FaultKind::CallbackDelay { .. }
        )
    }
}

/// `[swarm]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Swarm {
    pub enabled: bool,
    pub kinds: Vec<String>,
    pub mean_interval_ms: u64,
    /// `draw`: a choice given instead of the seed's own (`sim --swarm-draw`, or written by
    /// a guided hunt's repro), see [`super::SwarmDraw`].
    pub draw: Option<super::SwarmDraw>,
}

/// `set` of a `cluster_profile_edit`: new cluster profile values; `None` keeps a value.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClusterProfileChanges {
    /// `go_server_url`: injected into every pod, so it shapes pods.
    pub go_server_url: Option<String>,
    pub enable_agent_reuse: Option<bool>,
    pub auto_register_timeout_ms: Option<u64>,
    pub pending_pods_count: Option<u32>,
    pub idle_timeout_ms: Option<u64>,
    pub max_pods: Option<u32>,
}

impl Default for Swarm {
    fn default() -> Self {
        Swarm {
            enabled: false,
            kinds: [
                "server_crash",
                "pod_delete",
                "container_restart",
                "partition",
                "api_outage",
            ]
            .map(str::to_owned)
            .to_vec(),
            mean_interval_ms: 5 * 60_000,
            draw: None,
        }
    }
}

/// `[invariants]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Invariants {
    pub max_job_wait_ms: u64,
    /// `plugin_requests_per_job_max`: the run ends (`bounded-requests`) when the server has
    /// sent more create-agent and should-assign-work requests than this per job scheduled.
    pub plugin_requests_per_job_max: u64,
    pub disable: Vec<String>,
    /// `sometimes` invariants the scenario requires to happen.
    pub require: Vec<String>,
}

impl Default for Invariants {
    fn default() -> Self {
        Invariants {
            max_job_wait_ms: 5 * 60_000,
            plugin_requests_per_job_max: 1_000,
            disable: Vec::new(),
            require: Vec::new(),
        }
    }
}

/// `[leader]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Leader {
    pub replicas: u32,
    /// `agentk-v1` or `fixed`.
    pub variant: String,
    pub lease_duration_ms: u64,
    pub renew_deadline_ms: u64,
    pub retry_period_ms: u64,
    pub module_stop_latency: Range,
    /// HTTP/2 dead-peer deadline: a request without a timeout fails this long after the
    /// last answer on its connection (apimachinery's ReadIdleTimeout 30 s + PingTimeout 15 s).
    pub http2_dead_ms: u64,
    pub modules: Vec<LeaderModule>,
    pub config: Vec<LeaderConfigChange>,
}

/// `[[leader.modules]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderModule {
    pub name: String,
    pub runnable_when: String,
}

/// `[[leader.config]]`: flags set at `at_ms`, delivered to every replica with a small delay.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderConfigChange {
    pub at_ms: u64,
    pub set: BTreeMap<String, bool>,
}
