//! Leases written by clients of `serve`: what the API server checks before a write reaches the
//! store, and the answers it gives, as kube-apiserver v1.33 gives them.
//!
//! * the body decodes as a `coordination.k8s.io/v1` Lease, else 400 BadRequest;
//! * `pkg/apis/coordination/validation` `ValidateLease`: the name is a DNS subdomain,
//!   `leaseDurationSeconds` > 0 and `leaseTransitions` >= 0 when set, else 422 Invalid with
//!   one cause per field;
//! * `pkg/registry/coordination/lease/strategy.go`: `AllowUnconditionalUpdate` is false (a PUT
//!   without `metadata.resourceVersion` is 422) and `AllowCreateOnUpdate` is true (a PUT of a
//!   missing Lease creates it);
//! * 404 NotFound, 409 AlreadyExists and 409 Conflict with the registry's messages.
//!
//! The compare-and-swap itself is the simulated API server's (`crate::kube`): the written
//! holder, duration, times and transitions become a [`LeaseSpec`], times as milliseconds since
//! simulated time zero (a time before it reads as zero). The model keeps no labels, no absent
//! holder (an absent one is `""`) and milliseconds only, so `serve` answers with the object as
//! the client wrote it while the model's spec still equals it (see `serve::Publisher`).

use super::objects::object_status;
use super::store::Resource;
use crate::resources::LeaseSpec;
use serde_json::{Value, json};

/// An answer other than success: the HTTP status code and its `Status` body.
#[derive(Clone, Debug, PartialEq)]
pub struct Rejection {
    /// 400, 404, 409, 415, 422 or 503.
    pub code: u16,
    /// The `Status` JSON.
    pub body: Value,
}

fn reject(code: u16, reason: &str, message: &str, name: &str) -> Rejection {
    Rejection {
        code,
        body: object_status(code, reason, message, Resource::Leases, name, None),
    }
}

/// 404: `leases.coordination.k8s.io "NAME" not found`.
pub(crate) fn not_found(name: &str) -> Rejection {
    let message = format!("leases.coordination.k8s.io \"{name}\" not found");
    reject(404, "NotFound", &message, name)
}

/// 404 for a write into a namespace that does not exist.
pub(crate) fn namespace_not_found(namespace: &str) -> Rejection {
    let message = format!("namespaces \"{namespace}\" not found");
    Rejection {
        code: 404,
        body: object_status(
            404,
            "NotFound",
            &message,
            Resource::Namespaces,
            namespace,
            None,
        ),
    }
}

/// 409 AlreadyExists: a create of a name in use.
pub(crate) fn already_exists(name: &str) -> Rejection {
    let message = format!("leases.coordination.k8s.io \"{name}\" already exists");
    reject(409, "AlreadyExists", &message, name)
}

/// 409 Conflict: the write's resourceVersion (or precondition) is not the stored one.
pub(crate) fn conflict(name: &str, detail: &str) -> Rejection {
    let message =
        format!("Operation cannot be fulfilled on leases.coordination.k8s.io \"{name}\": {detail}");
    reject(409, "Conflict", &message, name)
}

/// The detail of a stale update's 409.
pub(crate) const MODIFIED: &str =
    "the object has been modified; please apply your changes to the latest version and try again";

/// 400 BadRequest.
pub(crate) fn bad_request(message: &str) -> Rejection {
    Rejection {
        code: 400,
        body: super::objects::status(400, "BadRequest", message),
    }
}

/// 503: the simulation has ended or stopped, so nothing is written any more.
pub(crate) fn stopped() -> Rejection {
    Rejection {
        code: 503,
        body: super::objects::status(503, "ServiceUnavailable", "the simulation has stopped"),
    }
}

/// One failed field check: the path, the value and what was wrong.
struct Cause {
    field: &'static str,
    value: Option<Value>,
    detail: &'static str,
}

/// 422 Invalid with the causes, as `apierrors.NewInvalid` words them.
fn invalid(name: &str, causes: &[Cause]) -> Rejection {
    let describe = |cause: &Cause| match &cause.value {
        Some(value) => format!("Invalid value: {value}: {}", cause.detail),
        None => format!("Required value: {}", cause.detail),
    };
    let list: Vec<String> = causes
        .iter()
        .map(|cause| format!("{}: {}", cause.field, describe(cause)))
        .collect();
    let joined = if list.len() == 1 {
        list[0].clone()
    } else {
        format!("[{}]", list.join(", "))
    };
    let message = format!("Lease.coordination.k8s.io \"{name}\" is invalid: {joined}");
    let causes: Vec<Value> = causes
        .iter()
        .map(|cause| {
            let reason = if cause.value.is_some() {
                "FieldValueInvalid"
            } else {
                "FieldValueRequired"
            };
            json!({ "reason": reason, "message": describe(cause), "field": cause.field })
        })
        .collect();
    let mut body = object_status(
        422,
        "Invalid",
        &message,
        Resource::Leases,
        name,
        Some(json!(causes)),
    );
    // NewInvalid names the kind, where NotFound and Conflict name the resource.
    body["details"]["kind"] = Value::from("Lease");
    Rejection { code: 422, body }
}

/// 422 for a PUT without `metadata.resourceVersion` (Leases allow no unconditional update).
pub(crate) fn version_required(name: &str) -> Rejection {
    let cause = Cause {
        field: "metadata.resourceVersion",
        value: Some(json!("0x0")),
        detail: "must be specified for an update",
    };
    invalid(name, &[cause])
}

/// 422 for an apply without `fieldManager`.
pub(crate) fn field_manager_required() -> Rejection {
    let message = "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: \
                   is required for apply patch";
    Rejection {
        code: 422,
        body: super::objects::status(422, "Invalid", message),
    }
}

/// True for a DNS-1123 subdomain: lowercase alphanumerics, `-` and `.`, starting and ending
/// alphanumeric, at most 253 characters.
fn is_subdomain(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 253
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && name
            .chars()
            .all(|c| alphanumeric(c) || c == '-' || c == '.')
}

/// A checked Lease: the object to store (namespace filled in) and the model's spec of it.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    /// The Lease JSON as written, `metadata.namespace` set.
    pub object: Value,
    /// Its name.
    pub name: String,
    /// The model's view of its spec.
    pub spec: LeaseSpec,
}

/// Decode and validate a Lease written into `namespace` (`path_name`: the name in the URL of a
/// PUT or PATCH). `epoch_ms` is the wall time of simulated time zero.
pub(crate) fn check(
    mut object: Value,
    namespace: &str,
    path_name: Option<&str>,
    epoch_ms: u64,
) -> Result<Checked, Rejection> {
    let decoded = decode(&object, namespace, path_name)?;
    let name = decoded.metadata.name.clone().unwrap_or_default();
    let spec = decoded.spec.unwrap_or_default();
    let causes = validate(&name, &spec);
    if !causes.is_empty() {
        return Err(invalid(&name, &causes));
    }
    object["metadata"]["namespace"] = Value::from(namespace);
    Ok(Checked {
        object,
        name,
        spec: model_spec(spec, epoch_ms),
    })
}

type ApiLease = k8s_openapi::api::coordination::v1::Lease;
type ApiLeaseSpec = k8s_openapi::api::coordination::v1::LeaseSpec;

/// The body as a Lease of `namespace` named as in the URL, else 400.
fn decode(object: &Value, namespace: &str, path_name: Option<&str>) -> Result<ApiLease, Rejection> {
    let kind_ok = object["kind"].as_str().is_none_or(|kind| kind == "Lease");
    let version_ok = object["apiVersion"]
        .as_str()
        .is_none_or(|version| version == "coordination.k8s.io/v1");
    if !object.is_object() || !kind_ok || !version_ok {
        return Err(bad_request(
            "the body is not a coordination.k8s.io/v1 Lease",
        ));
    }
    let decoded: ApiLease = serde_json::from_value(object.clone()).map_err(|error| {
        bad_request(&format!(
            "Lease in version \"v1\" cannot be handled as a Lease: {error}"
        ))
    })?;
    let name = decoded.metadata.name.as_deref().unwrap_or_default();
    if let Some(path_name) = path_name
        && name != path_name
    {
        return Err(bad_request(&format!(
            "the name of the object ({name}) does not match the name on the URL ({path_name})"
        )));
    }
    if decoded
        .metadata
        .namespace
        .as_deref()
        .is_some_and(|written| written != namespace)
    {
        return Err(bad_request(
            "the namespace of the provided object does not match the namespace sent on the \
             request",
        ));
    }
    Ok(decoded)
}

/// `ValidateLease`'s checks of the name and the spec: one cause per failed field.
fn validate(name: &str, spec: &ApiLeaseSpec) -> Vec<Cause> {
    let mut causes = Vec::new();
    if name.is_empty() {
        causes.push(Cause {
            field: "metadata.name",
            value: None,
            detail: "name or generateName is required",
        });
    } else if !is_subdomain(name) {
        causes.push(Cause {
            field: "metadata.name",
            value: Some(json!(name)),
            detail: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
                     characters, '-' or '.', and must start and end with an alphanumeric \
                     character",
        });
    }
    if let Some(seconds) = spec.lease_duration_seconds.filter(|s| *s <= 0) {
        causes.push(Cause {
            field: "spec.leaseDurationSeconds",
            value: Some(json!(seconds)),
            detail: "must be greater than 0",
        });
    }
    if let Some(transitions) = spec.lease_transitions.filter(|t| *t < 0) {
        causes.push(Cause {
            field: "spec.leaseTransitions",
            value: Some(json!(transitions)),
            detail: "must be greater than or equal to 0",
        });
    }
    causes
}

/// The model's view of a checked spec: times as milliseconds since simulated time zero.
fn model_spec(spec: ApiLeaseSpec, epoch_ms: u64) -> LeaseSpec {
    let since_zero = |time: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime>| {
        time.map_or(0, |time| {
            (time.0.as_millisecond() - epoch_ms as i64).max(0) as u64
        })
    };
    LeaseSpec {
        holder_identity: spec.holder_identity.unwrap_or_default(),
        lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0) as u32,
        acquire_time_ms: since_zero(spec.acquire_time),
        renew_time_ms: since_zero(spec.renew_time),
        lease_transitions: spec.lease_transitions.unwrap_or(0) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::check;
    use serde_json::json;

    #[test]
    fn a_written_lease_becomes_the_models_spec_with_times_since_zero() {
        let object = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": { "name": "lock" },
            "spec": {
                "holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 2,
                "renewTime": "1970-01-01T00:00:12.500000Z",
                "acquireTime": "1970-01-01T00:00:01.000000+00:00",
            },
        });
        let checked = check(object, "ns", None, 2_000).expect("valid");
        assert_eq!(checked.spec.holder_identity, "a");
        assert_eq!(checked.spec.renew_time_ms, 10_500);
        assert_eq!(checked.spec.acquire_time_ms, 0, "before zero reads as zero");
        assert_eq!(checked.spec.lease_transitions, 2);
        assert_eq!(checked.object["metadata"]["namespace"], "ns");
    }

    #[test]
    fn invalid_fields_are_422_with_one_cause_each() {
        let object = json!({
            "metadata": { "name": "Lock" },
            "spec": { "leaseDurationSeconds": 0, "leaseTransitions": -1 },
        });
        let rejection = check(object, "ns", None, 0).expect_err("invalid");
        assert_eq!(rejection.code, 422);
        assert_eq!(rejection.body["reason"], "Invalid");
        let causes = rejection.body["details"]["causes"]
            .as_array()
            .expect("causes");
        let fields: Vec<&str> = causes
            .iter()
            .map(|cause| cause["field"].as_str().expect("field"))
            .collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.leaseDurationSeconds",
                "spec.leaseTransitions"
            ]
        );
        assert!(
            rejection.body["message"]
                .as_str()
                .expect("message")
                .starts_with("Lease.coordination.k8s.io \"Lock\" is invalid: [metadata.name:")
        );
    }

    #[test]
    fn a_body_that_is_not_a_lease_is_400() {
        let object =
            json!({ "metadata": { "name": "x" }, "spec": { "leaseDurationSeconds": "soon" } });
        assert_eq!(check(object, "ns", None, 0).expect_err("bad").code, 400);
        let pod = json!({ "kind": "Pod", "metadata": { "name": "x" } });
        assert_eq!(check(pod, "ns", None, 0).expect_err("bad").code, 400);
    }
}
