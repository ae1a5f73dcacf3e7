//! What the harness reads off the plugin's pods for the trace: the job label and the config
//! the pod was created with. It lives here, where the plugin meets the simulated cluster, so
//! that neither the Kubernetes model nor the trace format knows the plugin's label keys.

use crate::allocator::pod_spec::keys;
use crate::kube::PodDescription;
use crate::resources::{Pod, StringMap};
use crate::trace::config_identity;

/// The trace's view of a pod the plugin created: `Elastic-Agent-Job-Id` and the harness's own
/// config identity (independent of every policy's hash, so that `no-cross-config-reuse` never
/// shares a bug with the allocator it checks).
pub(crate) fn describe_pod(pod: &Pod) -> PodDescription {
    PodDescription {
        job_label: pod.label(keys::JOB_ID).and_then(|v| v.parse().ok()),
        config: config_identity_of_pod(pod),
    }
}

/// The identity of the config a pod was created with: the plugin writes every elastic profile
/// property as an annotation (policies add their own keys, which contain `/` or `.`), and the
/// environment as a label.
pub(crate) fn config_identity_of_pod(pod: &Pod) -> String {
    let properties: StringMap = pod
        .annotations
        .iter()
        .filter(|(key, _)| {
            key.as_str() != keys::JOB_IDENTIFIER && !key.contains('/') && !key.contains('.')
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    config_identity(&properties, pod.label(keys::ENVIRONMENT))
}
