//! Long-lived watch responses: newline-delimited `{"type","object"}` events streamed as the
//! world thread publishes changes, until `timeoutSeconds` or the server stops.

use super::router::{event_line, gone_line};
use super::store::{Change, Filter, Hub, Resource};
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use std::sync::Arc;

struct Cursor {
    hub: Arc<Hub>,
    changes: tokio::sync::watch::Receiver<u64>,
    resource: Resource,
    filter: Filter,
    after: u64,
    table_wanted: bool,
    deadline: Option<tokio::time::Instant>,
    /// The first chunk: synthetic ADDED events for a watch without a resourceVersion.
    initial: Option<String>,
    done: bool,
}

/// A streaming watch from resourceVersion `from` (None: the current objects first, as ADDED).
pub(crate) fn stream(
    hub: Arc<Hub>,
    resource: Resource,
    filter: Filter,
    from: Option<u64>,
    table_wanted: bool,
    timeout_s: Option<u64>,
) -> Response {
    let changes = hub.subscribe();
    let (initial, after) = match from {
        Some(rv) => (None, rv),
        None => {
            let store = hub.lock();
            let rv = store.resource_version();
            let lines: String = store
                .list(resource, &filter)
                .into_iter()
                .map(|stored| {
                    let change = Change {
                        resource_version: rv,
                        resource,
                        kind: "ADDED",
                        stored,
                    };
                    event_line(&change, table_wanted, store.sim_ms)
                })
                .collect();
            (Some(lines).filter(|text| !text.is_empty()), rv)
        }
    };
    let cursor = Cursor {
        hub,
        changes,
        resource,
        filter,
        after,
        table_wanted,
        deadline: timeout_s
            .map(|seconds| tokio::time::Instant::now() + std::time::Duration::from_secs(seconds)),
        initial,
        done: false,
    };
    let body = futures::stream::unfold(cursor, |mut cursor| async move {
        let chunk = next_chunk(&mut cursor).await?;
        Some((Ok::<_, std::convert::Infallible>(chunk), cursor))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(body))
        .expect("a status, one header and a streaming body make a response")
}

/// The next lines to send, waiting for changes; None ends the response.
async fn next_chunk(cursor: &mut Cursor) -> Option<String> {
    if let Some(initial) = cursor.initial.take() {
        return Some(initial);
    }
    loop {
        if cursor.done {
            return None;
        }
        let found = {
            let store = cursor.hub.lock();
            store
                .changes_after(cursor.after, cursor.resource, &cursor.filter)
                .map(|changes| (changes, store.sim_ms, store.resource_version()))
        };
        match found {
            Err(_gone) => {
                cursor.done = true;
                return Some(gone_line());
            }
            Ok((changes, now_ms, rv)) => {
                // Changes to other resources or filtered out still move the cursor on.
                cursor.after = rv;
                if !changes.is_empty() {
                    let lines = changes
                        .iter()
                        .map(|change| event_line(change, cursor.table_wanted, now_ms))
                        .collect();
                    return Some(lines);
                }
            }
        }
        let changed = cursor.changes.changed();
        let woke = match cursor.deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, changed).await.ok(),
            None => Some(changed.await),
        };
        if !matches!(woke, Some(Ok(()))) {
            return None;
        }
    }
}
