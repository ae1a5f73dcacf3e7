//! Kubernetes resource shapes and API calls, with no behaviour.
//!
//! This is the vocabulary shared by the allocator (which calls the API), the leader elector
//! (which reads and writes Leases) and the simulated API server in `crate::kube` (which
//! answers). It plays the role `k8s-openapi` plays for a real client: plain data, so the
//! allocator and leader code never import the simulator.

mod listing;

pub(crate) use listing::{Listed, Listing, PodList};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Labels or annotations: ordered, so that iteration is deterministic.
pub type StringMap = BTreeMap<String, String>;

/// `status.phase` of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PodPhase {
    /// Accepted, waiting for a node or for its container to start.
    Pending,
    /// Its container runs.
    Running,
    /// Its container exited successfully and will not restart.
    Succeeded,
    /// Its container exited with an error and will not restart.
    Failed,
    /// The pod's state could not be obtained (e.g. its node is unreachable).
    Unknown,
}

impl PodPhase {
    /// The phase as Kubernetes prints it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            PodPhase::Pending => "Pending",
            PodPhase::Running => "Running",
            PodPhase::Succeeded => "Succeeded",
            PodPhase::Failed => "Failed",
            PodPhase::Unknown => "Unknown",
        }
    }
}

/// What a client asks for when it creates a pod (the plugin's pod spec, reduced to what the
/// simulation needs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodTemplate {
    /// `metadata.name`; the plugin picks it (`k8s-ea-<uuid>`).
    pub name: String,
    /// `metadata.labels` (the plugin's creator and job labels).
    pub labels: StringMap,
    /// `metadata.annotations` (the plugin keeps its agent's settings here).
    pub annotations: StringMap,
    /// Container image of the single agent container.
    pub image: String,
    /// Environment of the agent container (`GO_EA_*`).
    pub env: StringMap,
}

/// A pod as the API server returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pod {
    /// `metadata.name`, unique among live pods.
    pub name: String,
    /// Unique per pod object, even if a name is reused.
    pub uid: u64,
    /// `metadata.labels`, shared by every copy of the pod: no write changes them, and the API
    /// server copies a pod at every write while clients hold the older copy.
    pub labels: Arc<StringMap>,
    /// `metadata.annotations`.
    pub annotations: StringMap,
    /// Container image of the single agent container.
    pub image: String,
    /// Environment of the agent container (the `GO_EA_*` registration settings), shared by
    /// every copy of the pod as the labels are.
    pub env: Arc<StringMap>,
    /// `status.phase`.
    pub phase: PodPhase,
    /// `spec.nodeName` once scheduled.
    pub node: Option<String>,
    /// `metadata.creationTimestamp`, in simulated milliseconds.
    pub created_ms: u64,
    /// `metadata.resourceVersion`: bumped on every write to this pod.
    pub resource_version: u64,
    /// `status.containerStatuses[0].restartCount`.
    pub restart_count: u32,
    /// `status.containerStatuses[0].ready`.
    pub ready: bool,
    /// `metadata.deletionTimestamp`, in simulated milliseconds: set when the pod was deleted
    /// while its container still ran; the pod stays listed, phase unchanged, until the
    /// container has stopped (at most `terminationGracePeriodSeconds` later).
    pub deletion_ms: Option<u64>,
}

impl Pod {
    /// A label value, if present.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.get(key).map(String::as_str)
    }

    /// An annotation value, if present.
    pub(crate) fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.get(key).map(String::as_str)
    }

    /// True once the pod was deleted and is waiting for its container to stop
    /// (`kubectl` shows it as `Terminating`).
    pub(crate) fn is_terminating(&self) -> bool {
        self.deletion_ms.is_some()
    }
}

/// `coordination.k8s.io/v1` Lease spec.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaseSpec {
    /// Empty means released.
    pub holder_identity: String,
    /// How long the Lease is valid after its last renewal, in seconds.
    pub lease_duration_seconds: u32,
    /// Writer's clock, milliseconds (informational: client-go never trusts it).
    pub acquire_time_ms: u64,
    /// Writer's clock, milliseconds (informational).
    pub renew_time_ms: u64,
    /// How many times the holder changed.
    pub lease_transitions: u32,
}

/// A Lease as the API server returns it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// `metadata.name`.
    pub name: String,
    /// Holder, duration, times and transitions.
    pub spec: LeaseSpec,
    /// `metadata.resourceVersion`: changes on every write, for compare-and-swap updates.
    pub resource_version: u64,
}

/// One call to the Kubernetes API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KubeRequest {
    /// List pods whose labels include every pair of `selector`.
    ListPods {
        /// The labels a pod must carry to be listed.
        selector: StringMap,
    },
    /// Read one pod by name; fails with `NotFound` if there is none.
    GetPod {
        /// The pod's name.
        name: String,
    },
    /// Create a pod; fails with `Conflict` if the name is taken.
    CreatePod {
        /// The pod to create.
        template: PodTemplate,
    },
    /// Delete a pod (it may stay listed, Terminating, for the grace period).
    DeletePod {
        /// The pod's name.
        name: String,
    },
    /// Merge `set` into the annotations and remove `remove`. With `resource_version`, the write
    /// is a compare-and-swap: it fails with `Conflict` if the pod changed since.
    AnnotatePod {
        /// The pod's name.
        name: String,
        /// Annotations to add or overwrite.
        set: StringMap,
        /// Annotation keys to remove.
        remove: Vec<String>,
        /// The version the write expects; `None` writes unconditionally.
        resource_version: Option<u64>,
    },
    /// Read one Lease by name; fails with `NotFound` if there is none.
    GetLease {
        /// The Lease's name.
        name: String,
    },
    /// Fails with `Conflict` (AlreadyExists) if the Lease exists.
    CreateLease {
        /// The Lease's name.
        name: String,
        /// The Lease's holder, duration, times and transitions.
        spec: LeaseSpec,
    },
    /// Fails with `Conflict` if `resource_version` is not the current one.
    UpdateLease {
        /// The Lease's name.
        name: String,
        /// The spec to write.
        spec: LeaseSpec,
        /// The version the write expects.
        resource_version: u64,
    },
    /// Delete a Lease (a third-party edit, a fault).
    DeleteLease {
        /// The Lease's name.
        name: String,
    },
}

impl KubeRequest {
    /// A short verb for traces: `list`, `get`, `create`, `delete`, `annotate`, …
    pub fn verb(&self) -> &'static str {
        match self {
            KubeRequest::ListPods { .. } => "list-pods",
            KubeRequest::GetPod { .. } => "get-pod",
            KubeRequest::CreatePod { .. } => "create-pod",
            KubeRequest::DeletePod { .. } => "delete-pod",
            KubeRequest::AnnotatePod { .. } => "annotate-pod",
            KubeRequest::GetLease { .. } => "get-lease",
            KubeRequest::CreateLease { .. } => "create-lease",
            KubeRequest::UpdateLease { .. } => "update-lease",
            KubeRequest::DeleteLease { .. } => "delete-lease",
        }
    }
}

/// A successful answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KubeReply {
    /// A shared, persistent snapshot: a list costs O(1) to hand over, and a client keeping it
    /// never sees the store change underneath it (the store copies on write).
    Pods(PodList),
    /// One pod (a get, a create or an annotate).
    Pod(Arc<Pod>),
    /// One Lease (a get, a create or an update).
    Lease(Lease),
    /// Delete succeeded.
    Deleted,
}

/// A failed call, as a client sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum KubeError {
    /// 404.
    NotFound,
    /// 409: stale resourceVersion, or AlreadyExists on create.
    Conflict,
    /// 500 (injected error, or an outage in `error` mode).
    ServerError,
    /// No answer within the client's request timeout (partition, outage in `hang` mode).
    Timeout,
}

/// The outcome of one call.
pub type KubeResult = Result<KubeReply, KubeError>;
