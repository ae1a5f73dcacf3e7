//! The simulated Kubernetes API server and its kubelets.
//!
//! [`KubeApi`] answers [`KubeRequest`]s against an in-memory store (pods, Leases) with a
//! resourceVersion bumped on every write, and runs the pod lifecycle a kubelet would: schedule
//! on a node with a free slot (else stay Pending, Unschedulable), start after a start-up delay,
//! restart a dead container with doubling back-off (restartPolicy Always). Latency, errors,
//! partitions and outages are the caller's business (they depend on the network, not on the
//! store). It is a sans-IO component: time and randomness are passed in, and everything it
//! wants done later comes back as [`KubeEffects`].
//!
//! [`KubeRequest`]: crate::resources::KubeRequest

mod api;
mod invariants;
mod kubelet;
mod listings;
#[cfg(test)]
mod tests;

pub use api::{ApiOutput, ApiRequest, ApiServer, KubeApi};
pub(crate) use kubelet::KubeletInput;

use crate::engine::SimTime;
use crate::resources::Pod;
use crate::trace::Record;

/// Settings from `[cluster]`.
#[derive(Clone, Debug)]
pub struct KubeSettings {
    /// Nodes the cluster starts with.
    pub nodes: u32,
    /// Agent pods one node holds.
    pub pods_per_node: u32,
    /// The range a pod's start-up (scheduled to Running) is drawn from: (min, max) milliseconds.
    pub pod_startup_ms: (u64, u64),
    /// Replay: an empirical start-up sample (ms) that replaces `pod_startup_ms` when not empty;
    /// each start-up draws one element uniformly with the kubelet stream.
    pub pod_startup_sample_ms: Vec<u64>,
    /// The kubelet's first restart delay after a container dies; it doubles on each restart.
    pub container_restart_backoff_ms: u64,
    /// What the trace says about a pod the API creates. The API server does not know who
    /// labels pods or how; the harness that wires it to a client passes this in.
    pub describe_pod: fn(&Pod) -> PodDescription,
    /// `terminationGracePeriodSeconds`: a deleted pod whose container runs stays listed
    /// (Terminating) this long, until the kubelet has stopped the container.
    pub termination_grace_ms: u64,
    /// How long the pods of a lost node stay listed (not ready) before they are evicted
    /// (the NotReady/Unreachable toleration, 300 s by default).
    pub node_eviction_ms: u64,
}

/// The trace's view of a newly created pod: the job its client labelled it with, if any, and
/// the harness's identity of the config it was created with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodDescription {
    /// The job id of the pod's job label, if its client set one.
    pub job_label: Option<u64>,
    /// The config the pod was created with, as the harness names it (e.g. its config hash).
    pub config: String,
}

/// A kubelet timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KubeTimer {
    /// Image pulled and container started: the pod goes Running.
    PodStarted {
        /// The pod's uid.
        uid: u64,
    },
    /// Back-off over: the kubelet restarts the dead container.
    ContainerRestart {
        /// The pod's uid.
        uid: u64,
    },
    /// The grace period of a deleted pod is over: its container has stopped and the pod
    /// leaves the store.
    PodGone {
        /// The pod's uid.
        uid: u64,
    },
    /// The toleration of the pods of lost node `node` (an index) ran out: they are evicted.
    NodeEvicted {
        /// The lost node's index.
        node: u32,
    },
    /// A replacement node of the same size joins (a managed node group replaced a lost one).
    NodeJoins,
}

/// What the API server and kubelets want done: timers, agent processes started or killed,
/// and trace records.
#[derive(Debug, Default)]
pub struct KubeEffects {
    /// Kubelet timers to set, at absolute simulated times.
    pub timers: Vec<(SimTime, KubeTimer)>,
    /// A container started in pod `uid` (name): start its agent process.
    pub agent_started: Vec<(u64, String)>,
    /// The container of pod `uid` died or the pod is gone: kill its agent process.
    pub agent_killed: Vec<u64>,
    /// Trace records of what happened.
    pub records: Vec<Record>,
    /// How many kill, fail and delete inputs found their pod to act on.
    pub hits: u32,
    /// The nodes lost (`LoseNode` inputs), in order.
    pub lost_nodes: Vec<String>,
}
