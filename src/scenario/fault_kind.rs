//! What a fault does: its kind ([`super::FaultType`]) with its parameters, nested by owner
//! as the kinds are, so that the code of one side takes that side's faults only.

use super::fault_type::{ElasticKind, FaultType, LeaderKind, NetworkKind};
use super::model::{ClusterProfileChanges, JobTarget, OutageMode, PodTarget, Range, ReplicaRef};
use std::collections::BTreeMap;

/// What a fault does.
#[derive(Clone, Debug, PartialEq)]
pub enum FaultKind {
    /// A fault of the GoCD server, its pods, profiles, nodes or jobs.
    Elastic(ElasticFault),
    /// A fault of the network or the Kubernetes API, whoever uses them.
    Network(NetworkFault),
    /// A fault of the `[leader]` replicas or their Lease.
    Leader(LeaderFault),
}

/// The faults of the elastic-agent side.
#[derive(Clone, Debug, PartialEq)]
pub enum ElasticFault {
    /// The GoCD server process dies and restarts `downtime_ms` later.
    ServerCrash {
        /// How long until the restart.
        downtime_ms: u64,
    },
    /// `kubectl delete pod` on `count` pods of `target`.
    PodDelete {
        /// Which pods are candidates.
        target: PodTarget,
        /// How many pods (fewer if fewer match).
        count: u32,
    },
    /// The agent container of `count` pods of `target` dies; the kubelet restarts it after its
    /// back-off.
    ContainerRestart {
        /// Which pods are candidates.
        target: PodTarget,
        /// How many pods (fewer if fewer match).
        count: u32,
    },
    /// Extension: the pod fails for good (eviction, image error): phase Failed, no restart.
    PodFail {
        /// Which pods are candidates.
        target: PodTarget,
        /// How many pods (fewer if fewer match).
        count: u32,
    },
    /// An elastic profile's properties change (`set` holds the new values).
    ProfileEdit {
        /// The `[[profiles]]` name.
        profile: String,
        /// The new values by key (`image`, `cpu`, `memory`, `environment`).
        set: BTreeMap<String, String>,
    },
    /// The cluster profile's properties change (`set` holds the new values): under
    /// `upstream` and `pr355` a new cluster uuid, hence a new pod map; under `pr355` a new
    /// config hash whenever a hashed field changes.
    ClusterProfileEdit {
        /// The new values; unset ones are kept.
        set: ClusterProfileChanges,
    },
    /// `count` nodes become unreachable; `replace_after_ms` later a new empty node of the
    /// same size joins for each (a managed node group).
    NodeLoss {
        /// How many nodes.
        count: u32,
        /// When a replacement node joins, after each lost node.
        replace_after_ms: u64,
    },
    /// `count` new empty nodes of the cluster's size join (a cluster autoscaler's scale-up,
    /// a node group grown by hand) and take the pods waiting for a slot.
    NodeAdd {
        /// How many nodes.
        count: u32,
    },
    /// The server cancels `count` jobs (`target` building or scheduled): job-completion for
    /// a building one, whose agent reports Building until it has killed the build.
    JobCancel {
        /// Which jobs are candidates.
        target: JobTarget,
        /// How many jobs, chosen at random.
        count: u32,
    },
    /// Extra jobs scheduled within `spread_ms` of the fault's start.
    Burst {
        /// How many jobs.
        count: u32,
        /// The window the jobs arrive in.
        spread_ms: u64,
        /// The `[[profiles]]` name the jobs ask for.
        profile: String,
        /// Each job's build time.
        runtime: Range,
    },
}

/// The faults of the network and the Kubernetes API.
#[derive(Clone, Debug, PartialEq)]
pub enum NetworkFault {
    /// Node groups: "gocd", "kube-api", "agents", "replica-N", "replicas", "leader".
    Partition {
        /// The two sides.
        between: [String; 2],
        /// How long the partition lasts.
        for_ms: u64,
    },
    /// The Kubernetes API fails every call for `for_ms`.
    ApiOutage {
        /// How long the outage lasts.
        for_ms: u64,
        /// Whether calls fail at once or hang.
        mode: OutageMode,
    },
}

/// The faults of the `[leader]` replicas and their Lease.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaderFault {
    /// A leader replica's process dies and restarts `downtime_ms` later.
    ReplicaCrash {
        /// Which replica.
        replica: ReplicaRef,
        /// How long until the restart.
        downtime_ms: u64,
    },
    /// The replica's process is frozen (a GC pause, SIGSTOP) for `for_ms`: it takes no steps, then
    /// resumes.
    ReplicaPause {
        /// Which replica.
        replica: ReplicaRef,
        /// How long the pause lasts.
        for_ms: u64,
    },
    /// Graceful shutdown (a rolling update's SIGTERM); a new process starts `downtime_ms`
    /// after the old one exited.
    ReplicaStop {
        /// Which replica.
        replica: ReplicaRef,
        /// How long after the old process exited the new one starts.
        downtime_ms: u64,
    },
    /// The replica's clock runs at `rate` times real time from then on.
    ClockDrift {
        /// Which replica.
        replica: ReplicaRef,
        /// The clock rate (1.0: no drift).
        rate: f64,
    },
    /// A third party deletes the Lease object (outside the fault budget).
    LeaseDelete,
    /// The replica's next OnStartedLeading is delivered `delay_ms` late.
    CallbackDelay {
        /// Which replica.
        replica: ReplicaRef,
        /// How late.
        delay_ms: u64,
    },
}

impl FaultKind {
    /// The kind, without its parameters.
    pub(crate) fn fault_type(&self) -> FaultType {
        match self {
            FaultKind::Elastic(fault) => FaultType::Elastic(fault.kind()),
            FaultKind::Network(fault) => FaultType::Network(fault.kind()),
            FaultKind::Leader(fault) => FaultType::Leader(fault.kind()),
        }
    }

    /// The `kind` string of the scenario format.
    pub fn name(&self) -> &'static str {
        self.fault_type().name()
    }
}

impl ElasticFault {
    /// The kind, without its parameters.
    pub fn kind(&self) -> ElasticKind {
        match self {
            ElasticFault::ServerCrash { .. } => ElasticKind::ServerCrash,
            ElasticFault::PodDelete { .. } => ElasticKind::PodDelete,
            ElasticFault::ContainerRestart { .. } => ElasticKind::ContainerRestart,
            ElasticFault::PodFail { .. } => ElasticKind::PodFail,
            ElasticFault::ProfileEdit { .. } => ElasticKind::ProfileEdit,
            ElasticFault::ClusterProfileEdit { .. } => ElasticKind::ClusterProfileEdit,
            ElasticFault::NodeLoss { .. } => ElasticKind::NodeLoss,
            ElasticFault::NodeAdd { .. } => ElasticKind::NodeAdd,
            ElasticFault::JobCancel { .. } => ElasticKind::JobCancel,
            ElasticFault::Burst { .. } => ElasticKind::Burst,
        }
    }
}

impl NetworkFault {
    /// The kind, without its parameters.
    pub fn kind(&self) -> NetworkKind {
        match self {
            NetworkFault::Partition { .. } => NetworkKind::Partition,
            NetworkFault::ApiOutage { .. } => NetworkKind::ApiOutage,
        }
    }
}

impl LeaderFault {
    /// The kind, without its parameters.
    pub fn kind(&self) -> LeaderKind {
        match self {
            LeaderFault::ReplicaCrash { .. } => LeaderKind::ReplicaCrash,
            LeaderFault::ReplicaPause { .. } => LeaderKind::ReplicaPause,
            LeaderFault::ReplicaStop { .. } => LeaderKind::ReplicaStop,
            LeaderFault::ClockDrift { .. } => LeaderKind::ClockDrift,
            LeaderFault::LeaseDelete => LeaderKind::LeaseDelete,
            LeaderFault::CallbackDelay { .. } => LeaderKind::CallbackDelay,
        }
    }
}
