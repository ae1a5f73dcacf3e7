//! The in-process HTTP edge of the simulated API server: a `tower::Service` that a
//! `kube::Client` (of kube 5 or kube 4) is built on with `Client::new(service, namespace)`.
//! No socket: each request's body is read in memory, parsed as a Lease call, delayed by the
//! network's latency, held or failed by the faults in force, answered by the Lease store,
//! and its answer delayed again on the way back.
//!
//! Faults, as the replica's client sees them:
//! * cut off from the API (a `partition` between a replica and `kube-api`): a request already
//!   on the established connection waits until the path heals (kube's clients have no read
//!   timeout unless one is configured: `kube::Config::read_timeout` is `None` by default,
//!   and TCP retransmits the request when the path is back), in both directions;
//! * `api_outage` in `error` mode: 503 ServiceUnavailable; in `hang` mode: held until the
//!   outage ends, or answered 504 after `[kube] request_timeout` (kube-apiserver's
//!   `--request-timeout`);
//! * `[cluster] api_error_rate`: 500 InternalError;
//! * a slow API: `[cluster] api_latency`, each way.

use crate::lease_store::{Answer, LeaseOp, NAMESPACE, PatchKind};
use crate::sim::{Node, Shared};
use bytes::Bytes;
use elasticsim::scenario::OutageMode;
use elasticsim::trace::Record;
use http::{Method, Request, Response};
use http_body_util::{BodyExt, Full};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::time::{Duration, sleep, sleep_until};

/// The errors a service hands back to the client (as a transport failure).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The path of the Lease collection in the namespace the crates use.
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/default/leases";

/// One replica's connection to the simulated API server.
#[derive(Clone)]
pub struct ApiService {
    shared: Arc<Shared>,
    replica: u32,
}

impl ApiService {
    /// The connection of replica `replica`.
    pub fn new(shared: Arc<Shared>, replica: u32) -> ApiService {
        ApiService { shared, replica }
    }
}

impl<B> tower::Service<Request<B>> for ApiService
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    type Response = Response<Full<Bytes>>;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        Box::pin(serve(self.shared.clone(), self.replica, request))
    }
}

/// One request, from the client's send to the answer's arrival.
async fn serve<B>(
    shared: Arc<Shared>,
    replica: u32,
    request: Request<B>,
) -> Result<Response<Full<Bytes>>, BoxError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let incarnation = shared.incarnation(replica);
    let (parts, body) = request.into_parts();
    let bytes = body.collect().await.map_err(Into::into)?.to_bytes();
    let parsed = parse(&parts.method, &parts.uri, &parts.headers, &bytes);
    travel(&shared, replica).await;
    let answer = match parsed {
        Err(answer) => answer,
        Ok(op) => match admit(&shared).await {
            Err(answer) => answer,
            Ok(()) => answer_op(&shared, replica, incarnation, op).await,
        },
    };
    let body = serde_json::to_vec(&answer.body)?;
    let response = Response::builder()
        .status(answer.status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))?;
    Ok(response)
}

/// Apply `op` at the API server, then carry the answer back; a write that made the replica
/// the holder is, on arrival, the replica's `LeaseHeld`.
async fn answer_op(shared: &Shared, replica: u32, incarnation: u64, op: LeaseOp) -> Answer {
    let mut records = Vec::new();
    let identity = crate::replica::identity(replica);
    let (answer, held_moved) = {
        let mut state = shared.lock();
        let now_ms = shared.clock.now_ms();
        let (answer, written) = state.store.serve(now_ms, replica, op, &mut records);
        let held = written
            .filter(|w| w.holder_after.as_deref() == Some(identity.as_str()))
            .map(|w| w.holder_before.as_deref() != Some(identity.as_str()));
        (answer, held)
    };
    for record in records {
        shared.emit(Node::KubeApi, record);
    }
    travel(shared, replica).await;
    if let Some(moved) = held_moved
        && shared.incarnation(replica) == incarnation
    {
        let term = shared.lock().held(replica, moved);
        shared.emit(Node::Replica(replica), Record::LeaseHeld { replica, term });
    }
    answer
}

/// One way between the replica and the API server: the latency, then, while the replica is
/// cut off, until the path heals.
async fn travel(shared: &Shared, replica: u32) {
    let latency_ms = shared.lock().draw_latency_ms(shared.network.latency_ms);
    sleep(Duration::from_millis(latency_ms)).await;
    let mut changes = shared.subscribe_faults();
    while shared.lock().is_cut_off(replica) {
        // The sender lives as long as the run.
        if changes.changed().await.is_err() {
            return;
        }
    }
}

/// The API server takes the call: `Ok` to serve it, or the error answer an outage or an
/// injected error gives.
async fn admit(shared: &Shared) -> Result<(), Answer> {
    let deadline = shared
        .clock
        .at(shared.clock.now_ms() + shared.network.request_timeout_ms);
    let mut changes = shared.subscribe_faults();
    loop {
        let outage = shared.lock().outage();
        match outage {
            None => break,
            Some(OutageMode::Error) => {
                let message = "the server is currently unable to handle the request".to_owned();
                return Err(Answer::status(503, "ServiceUnavailable", message));
            }
            Some(OutageMode::Hang) => {
                tokio::select! {
                    biased;
                    changed = changes.changed() => if changed.is_err() { break },
                    () = sleep_until(deadline) => {
                        let message = "Timeout: request did not complete within the allotted \
                                       timeout".to_owned();
                        return Err(Answer::status(504, "Timeout", message));
                    }
                }
            }
        }
    }
    let fails = {
        let mut state = shared.lock();
        state.draw_error(shared.network.error_rate)
    };
    if fails {
        let message = "an error on the server has prevented the request from succeeding";
        return Err(Answer::status(500, "InternalError", message.to_owned()));
    }
    Ok(())
}

/// The Lease call a request makes, or the answer to a request the server does not serve.
fn parse(
    method: &Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<LeaseOp, Answer> {
    let query = uri.query().unwrap_or("");
    let param = |key: &str| {
        query.split('&').find_map(|pair| {
            let (name, value) = pair.split_once('=')?;
            (name == key).then(|| value.to_owned())
        })
    };
    let manager = param("fieldManager").unwrap_or_else(|| user_agent(headers));
    let force = param("force").is_some_and(|value| value == "true");
    let name = match uri.path().strip_prefix(LEASES) {
        Some("") => None,
        Some(rest) => rest.strip_prefix('/').map(str::to_owned),
        None => return Err(not_served(uri.path())),
    };
    let json = || -> Result<serde_json::Value, Answer> {
        serde_json::from_slice(body).map_err(|error| {
            Answer::status(400, "BadRequest", format!("the body is not JSON: {error}"))
        })
    };
    match (method, name) {
        (&Method::GET, Some(name)) => Ok(LeaseOp::Get { name }),
        (&Method::POST, None) => Ok(LeaseOp::Create {
            body: json()?,
            manager,
        }),
        (&Method::PATCH, Some(name)) => Ok(LeaseOp::Patch {
            name,
            kind: patch_kind(headers)?,
            manager,
            force,
            body: json()?,
        }),
        (&Method::PUT, Some(name)) => Ok(LeaseOp::Replace {
            name,
            body: json()?,
            manager,
        }),
        (&Method::DELETE, Some(name)) => Ok(LeaseOp::Delete { name }),
        _ => Err(Answer::status(
            405,
            "MethodNotAllowed",
            format!("{method} {} is not served", uri.path()),
        )),
    }
}

fn patch_kind(headers: &http::HeaderMap) -> Result<PatchKind, Answer> {
    let content_type = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("");
    match content_type {
        "application/merge-patch+json" => Ok(PatchKind::Merge),
        "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
        "application/apply-patch+yaml" => Ok(PatchKind::Apply),
        other => Err(Answer::status(
            415,
            "UnsupportedMediaType",
            format!("the simulated API server takes no {other:?} patch"),
        )),
    }
}

/// The API server names a manager that gave no `fieldManager` by its user agent's product.
fn user_agent(headers: &http::HeaderMap) -> String {
    let agent = headers
        .get(http::header::USER_AGENT)
        .and_then(|value| value.to_str().ok())
        .unwrap_or("unknown");
    agent.split('/').next().unwrap_or(agent).to_owned()
}

fn not_served(path: &str) -> Answer {
    let message =
        format!("the simulated API server serves Leases in namespace {NAMESPACE} only, not {path}");
    Answer::status(404, "NotFound", message)
}
