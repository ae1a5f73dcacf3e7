//! The HTTP face of `serve`: enough of the Kubernetes API for `kubectl get/delete/create` and
//! kube-rs clients — discovery, pods, Leases and namespaces list/get/watch (label and name
//! selectors, resourceVersion, Table responses), pod delete, which becomes a fault in the run,
//! and Lease and namespace writes (`write_routes`).

use super::leases::Rejection;
use super::objects::{status, table, table_row};
use super::store::{Change, Filter, Hub, Resource, Stored};
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::get;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A request for the world thread.
pub enum Command {
    /// `kubectl delete pod NAME`: the pod as it was, or None if there is no such pod.
    DeletePod {
        /// The pod's name.
        name: String,
        /// Where the world thread sends the deleted pod's JSON (None: no such pod).
        reply: tokio::sync::oneshot::Sender<Option<Value>>,
    },
    /// A Lease write (or a namespace delete, which deletes its Leases).
    Lease {
        /// The write.
        call: super::writes::LeaseCall,
        /// Where the world thread sends the answer.
        reply: tokio::sync::oneshot::Sender<Result<super::writes::Answer, Rejection>>,
    },
}

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    /// The served objects and the change notifier.
    pub hub: Arc<Hub>,
    /// Where pod deletes go; None serves read-only (deletes answer 405).
    pub commands: Option<std::sync::mpsc::Sender<Command>>,
}

/// The router; the same one runs on loopback TCP and on turmoil's simulated network.
pub fn router(state: AppState) -> Router {
    use super::write_routes::{
        create_lease, create_namespace, delete_lease, delete_namespace, patch_lease, replace_lease,
    };
    let pods = "/api/v1/namespaces/{namespace}/pods";
    let leases = "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases";
    Router::new()
        .route("/version", get(version))
        .route("/api", get(api_versions))
        .route("/apis", get(api_groups))
        .route("/api/v1", get(core_resources))
        .route("/apis/coordination.k8s.io/v1", get(coordination_resources))
        .route("/api/v1/pods", get(list_pods_everywhere))
        .route(pods, get(list_pods))
        .route(&format!("{pods}/{{name}}"), get(get_pod).delete(delete_pod))
        .route(
            "/apis/coordination.k8s.io/v1/leases",
            get(list_leases_everywhere),
        )
        .route(leases, get(list_leases).post(create_lease))
        .route(
            &format!("{leases}/{{name}}"),
            get(get_lease)
                .put(replace_lease)
                .patch(patch_lease)
                .delete(delete_lease),
        )
        .route(
            "/api/v1/namespaces",
            get(list_namespaces).post(create_namespace),
        )
        .route(
            "/api/v1/namespaces/{name}",
            get(get_namespace).delete(delete_namespace),
        )
        .fallback(not_found)
        .with_state(state)
}

/// A JSON response.
pub(crate) fn respond(code: StatusCode, value: &Value) -> Response {
    Response::builder()
        .status(code)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(value.to_string()))
        .expect("a status, one header and a body make a response")
}

async fn not_found() -> Response {
    respond(
        StatusCode::NOT_FOUND,
        &status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ),
    )
}

async fn version() -> Response {
    respond(
        StatusCode::OK,
        &json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0-elasticsim",
            "gitCommit": "", "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": "none", "compiler": "elasticsim", "platform": "simulated/any",
        }),
    )
}

async fn api_versions() -> Response {
    respond(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [
                { "clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1" }
            ],
        }),
    )
}

async fn api_groups() -> Response {
    let version = json!({ "groupVersion": "coordination.k8s.io/v1", "version": "v1" });
    respond(
        StatusCode::OK,
        &json!({
            "kind": "APIGroupList", "apiVersion": "v1",
            "groups": [{
                "name": "coordination.k8s.io",
                "versions": [version],
                "preferredVersion": version
            }],
        }),
    )
}

/// One resource of an `APIResourceList`.
fn resource(name: &str, kind: &str, namespaced: bool, verbs: &[&str], short: &[&str]) -> Value {
    json!({
        "name": name, "singularName": kind.to_lowercase(), "namespaced": namespaced,
        "kind": kind, "verbs": verbs, "shortNames": short,
    })
}

fn resource_list(group_version: &str, resources: &[Value]) -> Value {
    json!({
        "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version,
        "resources": resources,
    })
}

async fn core_resources() -> Response {
    let pods = resource(
        "pods",
        "Pod",
        true,
        &["get", "list", "watch", "delete"],
        &["po"],
    );
    let verbs = ["create", "delete", "get", "list", "watch"];
    let namespaces = resource("namespaces", "Namespace", false, &verbs, &["ns"]);
    respond(StatusCode::OK, &resource_list("v1", &[pods, namespaces]))
}

async fn coordination_resources() -> Response {
    let verbs = [
        "create", "delete", "get", "list", "patch", "update", "watch",
    ];
    let leases = resource("leases", "Lease", true, &verbs, &[]);
    let list = resource_list("coordination.k8s.io/v1", &[leases]);
    respond(StatusCode::OK, &list)
}

/// The query string as a map (`+` and `%XX` decoded).
pub(crate) fn query_map(raw: Option<String>) -> BTreeMap<String, String> {
    raw.unwrap_or_default()
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(key), decode(value))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'+' => out.push(b' '),
            b'%' if index + 2 < bytes.len() => {
                let digit = |byte: u8| (byte as char).to_digit(16);
                match (digit(bytes[index + 1]), digit(bytes[index + 2])) {
                    (Some(high), Some(low)) => {
                        out.push((high * 16 + low) as u8);
                        index += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            byte => out.push(byte),
        }
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn wants_table(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|accept| accept.contains("as=Table"))
}

async fn list_pods_everywhere(
    state: State<AppState>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    collection(state.0, Resource::Pods, None, &headers, query.0)
}

async fn list_pods(
    state: State<AppState>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    collection(state.0, Resource::Pods, Some(namespace), &headers, query.0)
}

async fn list_leases_everywhere(
    state: State<AppState>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    collection(state.0, Resource::Leases, None, &headers, query.0)
}

async fn list_leases(
    state: State<AppState>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
    query: RawQuery,
) -> Response {
    collection(
        state.0,
        Resource::Leases,
        Some(namespace),
        &headers,
        query.0,
    )
}

async fn list_namespaces(state: State<AppState>, headers: HeaderMap, query: RawQuery) -> Response {
    collection(state.0, Resource::Namespaces, None, &headers, query.0)
}

async fn get_pod(
    state: State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let found = namespace == super::objects::NAMESPACE;
    one(
        &state.0,
        Resource::Pods,
        &name,
        found.then_some(name.as_str()),
        &headers,
    )
}

async fn get_lease(
    state: State<AppState>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let key = super::store::lease_key(&namespace, &name);
    one(&state.0, Resource::Leases, &name, Some(&key), &headers)
}

async fn get_namespace(
    state: State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> Response {
    one(&state.0, Resource::Namespaces, &name, Some(&name), &headers)
}

/// 404 for object `name`, as the API server words it (`leases.coordination.k8s.io "x" not
/// found`, with `details`).
pub(crate) fn missing(resource: Resource, name: &str) -> Response {
    let message = format!("{} \"{name}\" not found", resource.qualified());
    let body = super::objects::object_status(404, "NotFound", &message, resource, name, None);
    respond(StatusCode::NOT_FOUND, &body)
}

/// One object: `name` as the client named it, `key` as the store keeps it (None: cannot exist).
fn one(
    state: &AppState,
    resource: Resource,
    name: &str,
    key: Option<&str>,
    headers: &HeaderMap,
) -> Response {
    let (stored, now_ms, rv) = {
        let store = state.hub.lock();
        (
            key.and_then(|key| store.get(resource, key)),
            store.sim_ms,
            store.resource_version(),
        )
    };
    match stored {
        None => missing(resource, name),
        Some(stored) if wants_table(headers) => {
            let row = table_row(resource.plural(), &stored.object, stored.created_ms, now_ms);
            respond(StatusCode::OK, &table(resource.plural(), vec![row], rv))
        }
        Some(stored) => respond(StatusCode::OK, &stored.object),
    }
}

async fn delete_pod(
    state: State<AppState>,
    Path((_namespace, name)): Path<(String, String)>,
) -> Response {
    let Some(commands) = &state.commands else {
        let message = "this server is read-only";
        return respond(
            StatusCode::METHOD_NOT_ALLOWED,
            &status(405, "MethodNotAllowed", message),
        );
    };
    let (reply, answer) = tokio::sync::oneshot::channel();
    let sent = commands.send(Command::DeletePod {
        name: name.clone(),
        reply,
    });
    match (sent, answer.await) {
        (Ok(()), Ok(Some(pod))) => respond(StatusCode::OK, &pod),
        (Ok(()), Ok(None)) => missing(Resource::Pods, &name),
        _ => {
            let message = "the simulation has stopped";
            respond(
                StatusCode::SERVICE_UNAVAILABLE,
                &status(503, "ServiceUnavailable", message),
            )
        }
    }
}

/// A list, or a watch with `?watch=true`.
fn collection(
    state: AppState,
    resource: Resource,
    namespace: Option<String>,
    headers: &HeaderMap,
    raw: Option<String>,
) -> Response {
    let query = query_map(raw);
    let mut filter = match Filter::parse(
        query.get("labelSelector").map(String::as_str),
        query.get("fieldSelector").map(String::as_str),
    ) {
        Ok(filter) => filter,
        Err(message) => {
            return respond(
                StatusCode::BAD_REQUEST,
                &status(400, "BadRequest", &message),
            );
        }
    };
    filter.namespace = namespace;
    let table_wanted = wants_table(headers);
    if query.get("watch").is_some_and(|w| w == "true" || w == "1") {
        let from = query
            .get("resourceVersion")
            .and_then(|rv| rv.parse::<u64>().ok())
            .filter(|rv| *rv > 0);
        let timeout_s = query
            .get("timeoutSeconds")
            .and_then(|t| t.parse::<u64>().ok());
        return super::watch::stream(state.hub, resource, filter, from, table_wanted, timeout_s);
    }
    let (items, now_ms, rv) = {
        let store = state.hub.lock();
        (
            store.list(resource, &filter),
            store.sim_ms,
            store.resource_version(),
        )
    };
    if table_wanted {
        let rows = items
            .iter()
            .map(|stored| table_row(resource.plural(), &stored.object, stored.created_ms, now_ms))
            .collect();
        return respond(StatusCode::OK, &table(resource.plural(), rows, rv));
    }
    let (api_version, kind) = match resource {
        Resource::Pods => ("v1", "PodList"),
        Resource::Leases => ("coordination.k8s.io/v1", "LeaseList"),
        Resource::Namespaces => ("v1", "NamespaceList"),
    };
    let items: Vec<Value> = items
        .into_iter()
        .map(|stored: Stored| stored.object)
        .collect();
    respond(
        StatusCode::OK,
        &json!({
            "apiVersion": api_version, "kind": kind,
            "metadata": { "resourceVersion": rv.to_string() }, "items": items,
        }),
    )
}

/// One watch event line.
pub(crate) fn event_line(change: &Change, table_wanted: bool, now_ms: u64) -> String {
    let object = if table_wanted {
        let plural = change.resource.plural();
        let row = table_row(
            plural,
            &change.stored.object,
            change.stored.created_ms,
            now_ms,
        );
        table(plural, vec![row], change.resource_version)
    } else {
        change.stored.object.clone()
    };
    format!("{}\n", json!({ "type": change.kind, "object": object }))
}

/// The 410 event that sends a watcher back to list.
pub(crate) fn gone_line() -> String {
    let message = "too old resource version: the watch history has moved on";
    format!(
        "{}\n",
        json!({ "type": "ERROR", "object": status(410, "Expired", message) })
    )
}
