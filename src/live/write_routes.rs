//! The write routes of `serve`: Lease create, replace, patch and delete (handed to the world
//! thread, see `writes`), and namespace create and delete (namespaces live in the served store
//! only: the model has none; deleting one deletes its Leases, at once rather than after the
//! namespace controller's sweep).

use super::leases::{Rejection, bad_request};
use super::objects::{namespace_json, object_status};
use super::patch::PatchKind;
use super::router::{AppState, Command, missing, query_map, respond};
use super::store::{BUILT_IN_NAMESPACES, Resource};
use super::writes::{Answer, LeaseCall};
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

fn code(code: u16) -> StatusCode {
    StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn reply(result: Result<Answer, Rejection>) -> Response {
    match result {
        Ok((status, body)) => respond(code(status), &body),
        Err(rejection) => respond(code(rejection.code), &rejection.body),
    }
}

fn read_only() -> Rejection {
    let message = "this server is read-only";
    Rejection {
        code: 405,
        body: super::objects::status(405, "MethodNotAllowed", message),
    }
}

/// Hand `call` to the world thread and wait for its answer.
async fn on_world(state: &AppState, call: LeaseCall) -> Result<Answer, Rejection> {
    let commands = state.commands.as_ref().ok_or_else(read_only)?;
    let (sender, answer) = tokio::sync::oneshot::channel();
    let command = Command::Lease {
        call,
        reply: sender,
    };
    commands
        .send(command)
        .map_err(|_| super::leases::stopped())?;
    answer
        .await
        .unwrap_or_else(|_| Err(super::leases::stopped()))
}

fn json_body(body: &Bytes) -> Result<Value, Rejection> {
    serde_json::from_slice(body)
        .map_err(|error| bad_request(&format!("the request body is not JSON: {error}")))
}

/// `POST /apis/coordination.k8s.io/v1/namespaces/{namespace}/leases`.
pub(crate) async fn create_lease(
    state: State<AppState>,
    Path(namespace): Path<String>,
    body: Bytes,
) -> Response {
    let result = match json_body(&body) {
        Ok(object) => on_world(&state.0, LeaseCall::Create { namespace, object }).await,
        Err(rejection) => Err(rejection),
    };
    reply(result)
}

/// `PUT …/leases/{name}`.
pub(crate) async fn replace_lease(
    state: State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let result = match json_body(&body) {
        Ok(object) => {
            let call = LeaseCall::Replace {
                namespace,
                name,
                object,
            };
            on_world(&state.0, call).await
        }
        Err(rejection) => Err(rejection),
    };
    reply(result)
}

/// `PATCH …/leases/{name}`: merge, strategic merge, JSON patch or apply, by `Content-Type`.
pub(crate) async fn patch_lease(
    state: State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
    query: RawQuery,
    body: Bytes,
) -> Response {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    let Some(kind) = PatchKind::from_content_type(content_type) else {
        let message = format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, \
             application/apply-patch+yaml, application/strategic-merge-patch+json \
             (got {content_type:?})"
        );
        let body = super::objects::status(415, "UnsupportedMediaType", &message);
        return respond(StatusCode::UNSUPPORTED_MEDIA_TYPE, &body);
    };
    let field_manager = query_map(query.0).remove("fieldManager");
    let result = match json_body(&body) {
        Ok(patch) => {
            let call = LeaseCall::Patch {
                namespace,
                name,
                kind,
                patch,
                field_manager,
            };
            on_world(&state.0, call).await
        }
        Err(rejection) => Err(rejection),
    };
    reply(result)
}

/// `DELETE …/leases/{name}`, honouring `preconditions.resourceVersion` of a `DeleteOptions`
/// body.
pub(crate) async fn delete_lease(
    state: State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    let options: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let precondition = options["preconditions"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    let call = LeaseCall::Delete {
        namespace,
        name,
        precondition,
    };
    reply(on_world(&state.0, call).await)
}

/// True for a DNS-1123 label: what a namespace's name must be.
fn is_label(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.len() <= 63
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && name.chars().all(|c| alphanumeric(c) || c == '-')
}

/// The length-delimited field `number` of one protobuf message, if present.
fn proto_field(mut message: &[u8], number: u64) -> Option<&[u8]> {
    fn varint(bytes: &mut &[u8]) -> Option<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = bytes.split_first()?;
            *bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Some(value);
            }
        }
        None
    }
    while !message.is_empty() {
        let key = varint(&mut message)?;
        let length = match key & 7 {
            0 => {
                varint(&mut message)?;
                continue;
            }
            1 => 8,
            5 => 4,
            2 => usize::try_from(varint(&mut message)?).ok()?,
            _ => return None,
        };
        let (field, rest) = message.split_at_checked(length)?;
        message = rest;
        if key >> 3 == number && key & 7 == 2 {
            return Some(field);
        }
    }
    None
}

/// The name of a namespace to create: from JSON, or from the protobuf body kubectl sends for
/// built-in kinds (`k8s\0`, then `runtime.Unknown` whose field 2 holds the Namespace, whose
/// field 1 is its ObjectMeta, whose field 1 is the name).
fn namespace_name(headers: &HeaderMap, body: &Bytes) -> Result<String, Rejection> {
    let protobuf = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/vnd.kubernetes.protobuf"));
    if !protobuf {
        let object = json_body(body)?;
        return Ok(object["metadata"]["name"].as_str().unwrap_or("").to_owned());
    }
    body.strip_prefix(b"k8s\0")
        .and_then(|unknown| proto_field(unknown, 2))
        .and_then(|namespace| proto_field(namespace, 1))
        .and_then(|metadata| proto_field(metadata, 1))
        .and_then(|name| std::str::from_utf8(name).ok())
        .map(str::to_owned)
        .ok_or_else(|| bad_request("the protobuf body holds no namespace name"))
}

/// `POST /api/v1/namespaces`.
pub(crate) async fn create_namespace(
    state: State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if state.commands.is_none() {
        return reply(Err(read_only()));
    }
    let name = match namespace_name(&headers, &body) {
        Ok(name) => name,
        Err(rejection) => return reply(Err(rejection)),
    };
    if !is_label(&name) {
        let message = format!(
            "Namespace \"{name}\" is invalid: metadata.name: Invalid value: \"{name}\": a \
             lowercase RFC 1123 label must consist of lower case alphanumeric characters or \
             '-', and must start and end with an alphanumeric character"
        );
        let body = object_status(422, "Invalid", &message, Resource::Namespaces, &name, None);
        return respond(StatusCode::UNPROCESSABLE_ENTITY, &body);
    }
    let created = state.hub.with(|store| {
        if store.get(Resource::Namespaces, &name).is_some() {
            return None;
        }
        store.publish_namespace(&name, false);
        store.get(Resource::Namespaces, &name)
    });
    match created {
        Some(stored) => respond(StatusCode::CREATED, &stored.object),
        None => {
            let message = format!("namespaces \"{name}\" already exists");
            let body = object_status(
                409,
                "AlreadyExists",
                &message,
                Resource::Namespaces,
                &name,
                None,
            );
            respond(StatusCode::CONFLICT, &body)
        }
    }
}

/// `DELETE /api/v1/namespaces/{name}`: the namespace, Terminating, as the API server answers;
/// it and its Leases are gone at once.
pub(crate) async fn delete_namespace(state: State<AppState>, Path(name): Path<String>) -> Response {
    if BUILT_IN_NAMESPACES.contains(&name.as_str()) {
        let message =
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted");
        let body = object_status(
            403,
            "Forbidden",
            &message,
            Resource::Namespaces,
            &name,
            None,
        );
        return respond(StatusCode::FORBIDDEN, &body);
    }
    let Some(stored) = state.hub.lock().get(Resource::Namespaces, &name) else {
        return missing(Resource::Namespaces, &name);
    };
    let call = LeaseCall::DeleteNamespace {
        namespace: name.clone(),
    };
    if let Err(rejection) = on_world(&state.0, call).await {
        return reply(Err(rejection));
    }
    let epoch_ms = state.hub.with(|store| {
        store.publish_namespace(&name, true);
        store.epoch_ms
    });
    let version = stored.object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let object = namespace_json(&name, version, epoch_ms + stored.created_ms, true);
    respond(StatusCode::OK, &object)
}

#[cfg(test)]
mod tests {
    use super::namespace_name;
    use axum::body::Bytes;
    use axum::http::{HeaderMap, HeaderValue, header};

    /// The body `kubectl create namespace team` (v1.33) sends.
    #[test]
    fn a_protobuf_namespace_from_kubectl_names_itself() {
        let body: &[u8] = &[
            b"k8s\0\n\x0f\n\x02v1\x12\tNamespace\x12\x1c\n\x14\n\x04team".as_slice(),
            b"\x12\x00\x1a\x00\"\x00*\x002\x008\x00B\x00\x12\x00\x1a\x02\n\x00\x1a\x00\"\x00",
        ]
        .concat();
        let mut headers = HeaderMap::new();
        let protobuf = HeaderValue::from_static("application/vnd.kubernetes.protobuf");
        headers.insert(header::CONTENT_TYPE, protobuf);
        let name = namespace_name(&headers, &Bytes::copy_from_slice(body));
        assert_eq!(name, Ok("team".to_owned()));
    }
}
