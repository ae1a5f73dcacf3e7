//! The typed scenario: what `docs/scenario-format.md` describes, after parsing, defaults and
//! validation. Every duration is in simulated milliseconds.

use super::fault_kind::FaultKind;
use super::fault_type::FaultType;
use crate::check::InvariantId;
use std::collections::BTreeMap;

/// A duration range: uniform in `[min_ms, max_ms]` (equal bounds for a fixed duration).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range {
    /// The shortest duration, in simulated milliseconds.
    pub min_ms: u64,
    /// The longest duration (inclusive).
    pub max_ms: u64,
}

impl Range {
    /// A fixed duration.
    pub(crate) const fn fixed(ms: u64) -> Range {
        Range {
            min_ms: ms,
            max_ms: ms,
        }
    }
}

/// A whole scenario.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// `name`: the scenario's name, used in report paths.
    pub name: String,
    /// `description`: one line on what the scenario shows.
    pub description: String,
    /// `seed`: the seed of every random stream (`--seed` and `--seeds` override it).
    pub seed: u64,
    /// `duration`: the safety phase `[0, duration)`, in which jobs and faults happen.
    pub duration_ms: u64,
    /// `settle`: the liveness phase after `duration`.
    pub settle_ms: u64,
    /// The simulated Kubernetes cluster.
    pub cluster: Cluster,
    /// The Kubernetes API server's and client-go's own timeouts.
    pub kube: Kube,
    /// The simulated GoCD server's timings.
    pub server: Server,
    /// The cluster profile and the policy under test.
    pub plugin: Plugin,
    /// The elastic agent profiles jobs and faults refer to.
    pub profiles: Vec<Profile>,
    /// The workload generators.
    pub jobs: Vec<JobSource>,
    /// The scheduled faults, in file order.
    pub faults: Vec<Fault>,
    /// Faults drawn by the seed, if enabled.
    pub swarm: Swarm,
    /// Bounds, switched-off and required invariants.
    pub invariants: Invariants,
    /// Leader-election replicas, when the scenario has a `[leader]` section.
    pub leader: Option<Leader>,
    /// `ablate`: rules of `safe` and fixes of `fixed` switched off (empty: none).
    pub ablations: crate::ablation::Ablations,
}

/// `[cluster]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cluster {
    /// `nodes`: Kubernetes nodes at the start.
    pub nodes: u32,
    /// `pods_per_node`: pod slots per node; pods beyond capacity stay Pending.
    pub pods_per_node: u32,
    /// `pod_startup`: scheduled to Running (image pull and container start).
    pub pod_startup: Range,
    /// `api_latency`: one Kubernetes API call, each way.
    pub api_latency: Range,
    /// `api_error_rate`: the fraction of API calls answered with a server error.
    pub api_error_rate: f64,
    /// `container_restart_backoff`: the kubelet's first restart delay after a container dies; it
    /// doubles on each restart.
    pub container_restart_backoff_ms: u64,
    /// `termination_grace`: how long a deleted pod whose container runs stays listed
    /// (Terminating) before it is gone.
    pub termination_grace_ms: u64,
    /// `node_eviction`: how long the pods of a lost node stay listed (not ready) before
    /// they are evicted.
    pub node_eviction_ms: u64,
}

/// `[kube]`: the timeouts of the Kubernetes API server and of its Go clients (kube-apiserver's
/// flags, client-go's transport), which decide how long a client waits on an API server that
/// does not answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Kube {
    /// `request_timeout`: kube-apiserver's `--request-timeout`: a request held by a `hang`
    /// outage is answered 504 after this long.
    pub request_timeout_ms: u64,
    /// `dial_timeout`: client-go's dial timeout: a replica whose connection died while cut
    /// off fails each new dial after this long (instead of the HTTP/2 dead-peer deadline).
    pub dial_timeout_ms: u64,
}

/// `[kube] request_timeout` when absent: kube-apiserver's `--request-timeout` default
/// (`k8s.io/apiserver` `RecommendedOptions`, `ServerRunOptions.RequestTimeout`, 60 s).
pub(crate) const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 60_000;

/// `[kube] dial_timeout` when absent: client-go's transport dials with a 30 s timeout
/// (`k8s.io/client-go/transport` cache, `net.Dialer{Timeout: 30 * time.Second}`).
pub(crate) const DEFAULT_DIAL_TIMEOUT_MS: u64 = 30_000;

impl Default for Kube {
    fn default() -> Self {
        Kube {
            request_timeout_ms: DEFAULT_REQUEST_TIMEOUT_MS,
            dial_timeout_ms: DEFAULT_DIAL_TIMEOUT_MS,
        }
    }
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
    /// `job_starvation_timeout`: how long a scheduled job waits before the server sends
    /// create-agent for it again.
    pub job_starvation_timeout_ms: u64,
    /// `server_ping_interval`: the period of the plugin's server-ping.
    pub server_ping_interval_ms: u64,
    /// `assignment_interval`: the period of the build-assignment loop.
    pub assignment_interval_ms: u64,
    /// `agent_connection_timeout`: an agent silent this long becomes LostContact.
    pub agent_connection_timeout_ms: u64,
    /// `hung_job_check_interval`: the period of the check that reschedules jobs of lost agents.
    pub hung_job_check_interval_ms: u64,
    /// `auto_register_key_ttl`: how long a single-use auto-register key stays valid.
    pub auto_register_key_ttl_ms: u64,
    /// `create_agent_threads`: threads that send create-agent requests to the plugin.
    pub create_agent_threads: u32,
    /// `cancel_kill`: how long a go-agent takes to kill a cancelled build.
    pub cancel_kill_ms: u64,
    /// `job_completion_delay`: how long a completed job's status message takes to reach the
    /// job-status listener's plugin call; 0 sends job-completion at once, inside the call
    /// that completed the job.
    pub job_completion_delay_ms: u64,
    /// `agent_boot`: how long a go-agent takes from its container's start to its first
    /// registration (entrypoint, downloads from the server, agent JVM); meanwhile the pod is
    /// Running and no agent is registered.
    pub agent_boot: Range,
}

/// `[server] agent_boot` when absent: 5 s to 30 s, container running to first registration.
/// The low end is the fastest report, ~4 s from agent.jar ready to "Starting to register" on a
/// LAN with a cached image (gocd/kubernetes-elastic-agents#302, GoCD 22.1); the high end the
/// "circa 30s for the agent to start, connect to GoCD server" of
/// gocd/kubernetes-elastic-agents#53 (users also report 30 s to 60 s, gocd/gocd#13975, and
/// 40 s to 50 s with pod scheduling, gocd/gocd#5061). `docs/fidelity.md` has the chain.
pub(crate) const DEFAULT_AGENT_BOOT: Range = Range {
    min_ms: 5_000,
    max_ms: 30_000,
};

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
            job_completion_delay_ms: 5,
            agent_boot: DEFAULT_AGENT_BOOT,
        }
    }
}

/// `[plugin]`: the cluster profile plus the policy under test.
#[derive(Clone, Debug, PartialEq)]
pub struct Plugin {
    /// `upstream`, `pr355` or `safe`.
    pub policy: crate::allocator::Policy,
    /// `enable_agent_reuse`: the cluster profile's reuse flag (ignored by `upstream`).
    pub enable_agent_reuse: bool,
    /// `auto_register_timeout` (ART): a pod not registered this long after creation is deleted.
    pub auto_register_timeout_ms: u64,
    /// `pending_pods_count`: no new pod while this many pods are not Running.
    pub pending_pods_count: u32,
    /// `idle_timeout` (IDLE): how long an idle reusable pod lives.
    pub idle_timeout_ms: u64,
    /// `cluster_request_timeout`: the client timeout of the plugin's Kubernetes calls.
    pub cluster_request_timeout_ms: u64,
    /// Extension: `safe`'s optional limit on all pods.
    pub max_pods: Option<u32>,
}

impl Default for Plugin {
    fn default() -> Self {
        Plugin {
            policy: crate::allocator::Policy::Upstream,
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
    /// The profile's name, which jobs and faults refer to.
    pub name: String,
    /// The agent container image.
    pub image: String,
    /// The CPU request, e.g. `500m`.
    pub cpu: String,
    /// The memory request, e.g. `1Gi`.
    pub memory: String,
    /// The GoCD environment of the jobs that name no `environment` of their own (the older
    /// spelling, from before environments belonged to jobs). An elastic profile has no
    /// environment in GoCD: the server sends the pipeline's with each create-agent.
    pub environment: Option<String>,
}

/// `[[jobs]]`: a workload generator.
#[derive(Clone, Debug, PartialEq)]
pub enum JobSource {
    /// `count` jobs scheduled within `spread_ms` after `at_ms`.
    Burst {
        /// When the burst starts.
        at_ms: u64,
        /// How many jobs.
        count: u32,
        /// The window the jobs arrive in.
        spread_ms: u64,
        /// The `[[profiles]]` name the jobs ask for.
        profile: String,
        /// Each job's build time.
        runtime: Range,
        /// The jobs' GoCD environment (their pipeline's); `None`: the profile's `environment`.
        environment: Option<String>,
    },
    /// Exponential inter-arrival times in `[from_ms, until_ms)`.
    Poisson {
        /// The first possible arrival.
        from_ms: u64,
        /// The end of the arrivals (exclusive).
        until_ms: u64,
        /// Mean arrivals per minute.
        per_minute: f64,
        /// The `[[profiles]]` name the jobs ask for.
        profile: String,
        /// Each job's build time.
        runtime: Range,
        /// The jobs' GoCD environment (their pipeline's); `None`: the profile's `environment`.
        environment: Option<String>,
    },
    /// Replay: arrivals, runtimes and start-up times from a recorded trace (path resolved
    /// relative to the scenario file).
    Trace {
        /// The trace path, joined to the scenario file's folder when parsed.
        file: std::path::PathBuf,
    },
    /// One explicit job (what `shrink` writes): scheduled at `at_ms`, runs `runtime_ms`.
    Single {
        /// When the job is scheduled.
        at_ms: u64,
        /// The `[[profiles]]` name the job asks for.
        profile: String,
        /// The build time.
        runtime_ms: u64,
        /// The job's GoCD environment (its pipeline's); `None`: the profile's `environment`.
        environment: Option<String>,
    },
}

/// Which pods a pod fault picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PodTarget {
    /// Pods whose agent is registered and idle.
    Idle,
    /// Pods whose agent is building a job.
    Busy,
    /// Pods not yet Running.
    Pending,
    /// Any pod.
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
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobTarget::Building => "building",
            JobTarget::Scheduled => "scheduled",
        }
    }
}

/// A replica named by a fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReplicaRef {
    /// The replica with this index (`0` or `"replica-0"`).
    Index(u32),
    /// Whoever leads when the fault starts.
    Leader,
}

/// `api_outage` mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutageMode {
    /// The API answers every call with a server error.
    Error,
    /// The API never answers; calls time out on the client.
    Hang,
}

/// `[[faults]]`: one scheduled fault.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// When the fault starts, in simulated milliseconds.
    pub at_ms: u64,
    /// What the fault does.
    pub kind: FaultKind,
}

/// `[swarm]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Swarm {
    /// `enabled`: draw faults per seed.
    pub enabled: bool,
    /// `kinds`: the fault kinds a seed may draw from, in the scenario's order (the order the
    /// seed draws them in).
    pub kinds: Vec<FaultType>,
    /// `mean_interval`: the mean time between drawn faults in the safety phase.
    pub mean_interval_ms: u64,
    /// `draw`: a choice given instead of the seed's own (`sim --swarm-draw`, or written by
    /// a guided hunt's repro), see [`super::SwarmDraw`].
    pub draw: Option<super::SwarmDraw>,
    /// `api_latency`: the range of a seed's API latency level. With it, each seed draws a
    /// level (log-uniform) and every API call of the run takes between three quarters of it
    /// and it, each way, in place of `[cluster] api_latency`; `None` keeps that.
    pub api_latency: Option<Range>,
}

/// `set` of a `cluster_profile_edit`: new cluster profile values; `None` keeps a value.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ClusterProfileChanges {
    /// `go_server_url`: injected into every pod, so it shapes pods.
    pub go_server_url: Option<String>,
    /// `enable_agent_reuse`: agent reuse on or off.
    pub enable_agent_reuse: Option<bool>,
    /// `auto_register_timeout`: the new ART.
    pub auto_register_timeout_ms: Option<u64>,
    /// `pending_pods_count`: the new pending-pod limit.
    pub pending_pods_count: Option<u32>,
    /// `idle_timeout`: the new idle timeout (`safe` only).
    pub idle_timeout_ms: Option<u64>,
    /// `max_pods`: the new pod cap (`safe` only).
    pub max_pods: Option<u32>,
}

impl Default for Swarm {
    fn default() -> Self {
        Swarm {
            enabled: false,
            kinds: FaultType::ALL
                .into_iter()
                .filter(|kind| kind.in_default_swarm())
                .collect(),
            mean_interval_ms: 5 * 60_000,
            draw: None,
            api_latency: None,
        }
    }
}

/// `[invariants]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Invariants {
    /// `max_job_wait`: the bound of `job-wait-bound`.
    pub max_job_wait_ms: u64,
    /// `plugin_requests_per_job_max`: the run ends (`bounded-requests`) when the server has
    /// sent more create-agent and should-assign-work requests than this per job scheduled.
    pub plugin_requests_per_job_max: u64,
    /// `disable`: invariant ids not checked.
    pub disable: Vec<InvariantId>,
    /// `sometimes` invariants the scenario requires to happen.
    pub require: Vec<InvariantId>,
}

impl Invariants {
    /// True unless `bounded-requests` is disabled: the run stops at the request budget.
    pub(crate) fn requests_bounded(&self) -> bool {
        !self.disable.contains(&InvariantId::BoundedRequests)
    }
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
    /// `replicas`: how many agentk replicas run the elector.
    pub replicas: u32,
    /// `variant`: the runner the replicas run (`fixed` when absent).
    pub variant: crate::mutants::Variant,
    /// `lease_duration` (LD): how long a Lease is valid after its last renewal.
    pub lease_duration_ms: u64,
    /// `renew_deadline` (RD): how long a leader keeps trying to renew before it stops leading.
    pub renew_deadline_ms: u64,
    /// `retry_period` (RP): the pause between acquire or renew attempts.
    pub retry_period_ms: u64,
    /// `module_stop_latency`: how long a module's `Run` takes to return once told to stop.
    pub module_stop_latency: Range,
    /// `module_behaviour`: `shipped` (the real modules ignore ctx) or `obeys-ctx`.
    pub module_behaviour: crate::mutants::ModuleBehaviour,
    /// HTTP/2 dead-peer deadline: a request without a timeout fails this long after the
    /// last answer on its connection (apimachinery's ReadIdleTimeout 30 s + PingTimeout 15 s).
    pub http2_dead_ms: u64,
    /// `[[leader.modules]]`: the modules a leader runs.
    pub modules: Vec<LeaderModule>,
    /// `[[leader.config]]`: the configuration timeline.
    pub config: Vec<LeaderConfigChange>,
    /// `lease_crate`: the replicas run this crate's own code instead of the agentk models
    /// (`cargo xtask sim` runs such a scenario with `elasticsim-crates`, docs/crates.md).
    pub lease_crate: Option<LeaseCrate>,
}

/// The Rust lease-election crates a scenario can run unmodified (`[leader] lease_crate`),
/// each at one pinned version (the `cratesim/` runner depends on exactly that version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LeaseCrate {
    /// kube-lease-manager 0.13.1 (kube 5): `LeaseManager::watch`.
    KubeLeaseManager,
    /// kube-leader-election 0.44.0 (kube 4): `LeaseLock::try_acquire_or_renew`.
    KubeLeaderElection,
}

impl LeaseCrate {
    /// Every crate, in the order of docs/crates.md.
    pub(crate) const ALL: [LeaseCrate; 2] =
        [LeaseCrate::KubeLeaseManager, LeaseCrate::KubeLeaderElection];

    /// The crate's name on crates.io.
    pub const fn name(self) -> &'static str {
        match self {
            LeaseCrate::KubeLeaseManager => "kube-lease-manager",
            LeaseCrate::KubeLeaderElection => "kube-leader-election",
        }
    }

    /// The version the runner pins.
    pub const fn version(self) -> &'static str {
        match self {
            LeaseCrate::KubeLeaseManager => "0.13.1",
            LeaseCrate::KubeLeaderElection => "0.44.0",
        }
    }
}

/// `[[leader.modules]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderModule {
    /// The module's name.
    pub name: String,
    /// The configuration flag that makes it runnable.
    pub runnable_when: String,
    /// `work_ctx`: the ctx its workers run on, `background` (gitops) or `run` (starboard).
    pub work_ctx: crate::mutants::WorkCtx,
}

/// `[[leader.config]]`: flags set at `at_ms`, delivered to every replica with a small delay.
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderConfigChange {
    /// When the configuration changes.
    pub at_ms: u64,
    /// Flags switched on or off.
    pub set: BTreeMap<String, bool>,
}
