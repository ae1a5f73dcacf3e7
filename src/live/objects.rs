//! Kubernetes JSON for the served objects: pods, Leases, namespaces, Status, and Table rows for
//! `kubectl get`. Container environments are never served (they hold the auto-register key).

use crate::resources::{Lease, Pod};
use serde_json::{Value, json};

/// The namespace every simulated object lives in.
pub(crate) const NAMESPACE: &str = "default";

/// Milliseconds since the Unix epoch as RFC 3339 with microseconds (`MicroTime`).
pub(crate) fn micro_time(ms: u64) -> String {
    let seconds = crate::replay::rfc3339(ms);
    format!(
        "{}.{:06}Z",
        seconds.trim_end_matches('Z'),
        (ms % 1000) * 1000
    )
}

/// A pod as `v1` JSON. `epoch_ms` is the wall time of simulated time zero. A deleted pod
/// that is still terminating carries `metadata.deletionTimestamp`.
pub(crate) fn pod_json(pod: &Pod, resource_version: u64, epoch_ms: u64) -> Value {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod.name,
            "namespace": NAMESPACE,
            "uid": format!("00000000-0000-0000-0000-{:012x}", pod.uid),
            "resourceVersion": resource_version.to_string(),
            "creationTimestamp": crate::replay::rfc3339(epoch_ms + pod.created_ms),
            "labels": pod.labels,
            "annotations": pod.annotations,
        },
        "spec": {
            "nodeName": pod.node,
            "restartPolicy": "Always",
            "containers": [{ "name": "gocd-agent", "image": pod.image }],
        },
        "status": {
            "phase": pod.phase.as_str(),
            "containerStatuses": [{
                "name": "gocd-agent",
                "image": pod.image,
                "imageID": "",
                "ready": pod.ready,
                "restartCount": pod.restart_count,
            }],
        },
    });
    if let Some(deletion_ms) = pod.deletion_ms {
        object["metadata"]["deletionTimestamp"] =
            Value::from(crate::replay::rfc3339(epoch_ms + deletion_ms));
    }
    object
}

/// The STATUS column `kubectl get pods` prints: `Terminating` once the pod has a deletion
/// timestamp, else its phase.
pub(crate) fn pod_status(object: &Value) -> Value {
    if object["metadata"]["deletionTimestamp"].is_string() {
        Value::from("Terminating")
    } else {
        object["status"]["phase"].clone()
    }
}

/// A simulated Lease of key `key` (see `store::lease_key`) as `coordination.k8s.io/v1` JSON;
/// the store sets its resourceVersion, uid and creation time when it publishes it.
pub(crate) fn lease_json(key: &str, lease: &Lease, epoch_ms: u64) -> Value {
    let (namespace, name) = super::store::split_lease_key(key);
    let spec = &lease.spec;
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": { "name": name, "namespace": namespace },
        "spec": {
            "holderIdentity": spec.holder_identity,
            "leaseDurationSeconds": spec.lease_duration_seconds,
            "acquireTime": micro_time(epoch_ms + spec.acquire_time_ms),
            "renewTime": micro_time(epoch_ms + spec.renew_time_ms),
            "leaseTransitions": spec.lease_transitions,
        },
    })
}

/// A namespace as `v1` JSON: `Active`, or `Terminating` with a deletion timestamp once
/// deleted (the DELETE answer and the watch's last event).
pub(crate) fn namespace_json(
    name: &str,
    resource_version: u64,
    created_unix_ms: u64,
    deleted: bool,
) -> Value {
    let mut object = json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "uid": format!("00000000-0000-0000-0002-{resource_version:012x}"),
            "resourceVersion": resource_version.to_string(),
            "creationTimestamp": crate::replay::rfc3339(created_unix_ms),
            "labels": { "kubernetes.io/metadata.name": name },
        },
        "spec": { "finalizers": ["kubernetes"] },
        "status": { "phase": if deleted { "Terminating" } else { "Active" } },
    });
    if deleted {
        object["metadata"]["deletionTimestamp"] =
            Value::from(crate::replay::rfc3339(created_unix_ms));
    }
    object
}

/// A `Status` failure.
pub(crate) fn status(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Status",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

/// A `Status` failure about one object, with the `details` the API server gives
/// (`name`, `group`, `kind` as the resource's plural, and `causes` for 422 Invalid).
pub(crate) fn object_status(
    code: u16,
    reason: &str,
    message: &str,
    resource: super::store::Resource,
    name: &str,
    causes: Option<Value>,
) -> Value {
    let mut body = status(code, reason, message);
    let mut details = json!({ "name": name, "kind": resource.plural() });
    if !resource.group().is_empty() {
        details["group"] = Value::from(resource.group());
    }
    if let Some(causes) = causes {
        details["causes"] = causes;
    }
    body["details"] = details;
    body
}

/// `kubectl`'s short age: `45s`, `3m12s`, `25m`, `4h10m`, `20h`, `3d`.
pub(crate) fn age(ms: u64) -> String {
    let seconds = ms / 1000;
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    match seconds {
        0..120 => format!("{seconds}s"),
        120..600 => format!("{minutes}m{}s", seconds % 60),
        600..10_800 => format!("{minutes}m"),
        10_800..28_800 => format!("{hours}h{}m", minutes % 60),
        28_800..172_800 => format!("{hours}h"),
        _ => format!("{}d", seconds / 86_400),
    }
}

fn column(name: &str, kind: &str, format: &str, priority: u32) -> Value {
    json!({ "name": name, "type": kind, "format": format, "description": "", "priority": priority })
}

/// The Table columns of a resource (`pods`, `leases` or `namespaces`), as the API server
/// prints them.
pub(crate) fn table_columns(resource: &str) -> Value {
    match resource {
        "pods" => json!([
            column("Name", "string", "name", 0),
            column("Ready", "string", "", 0),
            column("Status", "string", "", 0),
            column("Restarts", "integer", "", 0),
            column("Age", "string", "", 0),
            column("Node", "string", "", 1),
        ]),
        "namespaces" => json!([
            column("Name", "string", "name", 0),
            column("Status", "string", "", 0),
            column("Age", "string", "", 0),
        ]),
        _ => json!([
            column("Name", "string", "name", 0),
            column("Holder", "string", "", 0),
            column("Age", "string", "", 0),
        ]),
    }
}

/// One Table row for an object; ages are simulated (`now_ms` and the creation time are
/// simulated milliseconds).
pub(crate) fn table_row(resource: &str, object: &Value, created_ms: u64, now_ms: u64) -> Value {
    let name = object["metadata"]["name"].clone();
    let age = age(now_ms.saturating_sub(created_ms));
    let cells = if resource == "pods" {
        let status = &object["status"]["containerStatuses"][0];
        let ready = if status["ready"].as_bool() == Some(true) {
            "1/1"
        } else {
            "0/1"
        };
        json!([
            name,
            ready,
            pod_status(object),
            status["restartCount"],
            age,
            object["spec"]["nodeName"].as_str().unwrap_or("<none>"),
        ])
    } else if resource == "namespaces" {
        json!([name, object["status"]["phase"], age])
    } else {
        // A Lease without a holder prints as the API server prints it: an empty cell.
        let holder = object["spec"]["holderIdentity"].as_str().unwrap_or("");
        json!([name, holder, age])
    };
    json!({ "cells": cells, "object": object })
}

/// A Table of rows.
pub(crate) fn table(resource: &str, rows: Vec<Value>, resource_version: u64) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "Table",
        "metadata": { "resourceVersion": resource_version.to_string() },
        "columnDefinitions": table_columns(resource),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::{age, micro_time, pod_json, table_row};
    use crate::resources::Pod;

    #[test]
    fn ages_read_like_kubectl() {
        let cases = [
            (5_000, "5s"),
            (192_000, "3m12s"),
            (1_500_000, "25m"),
            (15_000_000, "4h10m"),
        ];
        for (ms, expected) in cases {
            assert_eq!(age(ms), expected);
        }
        assert_eq!(age(3 * 86_400_000), "3d");
    }

    #[test]
    fn a_served_pod_never_carries_its_environment() {
        let pod = Pod {
            name: "p".to_owned(),
            uid: 1,
            labels: Default::default(),
            annotations: Default::default(),
            image: "i".to_owned(),
            env: std::sync::Arc::new(
                [("GO_EA_AUTO_REGISTER_KEY".to_owned(), "secret".to_owned())].into(),
            ),
            phase: crate::resources::PodPhase::Running,
            node: None,
            created_ms: 0,
            resource_version: 1,
            restart_count: 0,
            deletion_ms: None,
            ready: true,
        };
        let text = pod_json(&pod, 1, 0).to_string();
        assert!(!text.contains("secret"), "{text}");
        assert_eq!(micro_time(1_500), "1970-01-01T00:00:01.500000Z");
    }

    #[test]
    fn a_terminating_pod_reads_terminating_like_kubectl() {
        let mut pod = Pod {
            name: "p".to_owned(),
            uid: 1,
            labels: Default::default(),
            annotations: Default::default(),
            image: "i".to_owned(),
            env: Default::default(),
            phase: crate::resources::PodPhase::Running,
            node: Some("node-0".to_owned()),
            created_ms: 0,
            resource_version: 1,
            restart_count: 0,
            deletion_ms: None,
            ready: true,
        };
        let cells = |pod: &Pod| {
            let object = pod_json(pod, 1, 0);
            table_row("pods", &object, 0, 60_000)["cells"].clone()
        };
        assert_eq!(cells(&pod)[2], "Running");
        pod.deletion_ms = Some(45_000);
        pod.ready = false;
        let object = pod_json(&pod, 2, 0);
        assert_eq!(
            object["metadata"]["deletionTimestamp"],
            "1970-01-01T00:00:45Z"
        );
        assert_eq!(
            object["status"]["phase"], "Running",
            "the phase is unchanged"
        );
        assert_eq!(cells(&pod)[1], "0/1");
        assert_eq!(cells(&pod)[2], "Terminating");
    }
}
