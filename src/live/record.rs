//! `elasticsim record`: watch a cluster's elastic-agent pods with kube-rs and write a recorded
//! trace as it goes. Read-only: it only lists and watches pods (RBAC: a Role with `get`,
//! `list`, `watch` on `pods` in the namespace). Only the fields of the trace format are written.
//!
//! The loop: list (every pod not yet written, or changed, becomes a line; pods gone since
//! become `deleted`), then watch from the list's resourceVersion. A dropped or silent
//! connection resumes from the last resourceVersion seen; `410 Gone` re-lists; other errors
//! back off (0.5 s doubling to 30 s). A line is written only when a pod's trace fields
//! changed, so a resumed or repeated event never writes a line twice.

use crate::allocator::pod_spec::keys;
use crate::replay::{
    FORMAT, Header, PodEvent, PodState, TraceLine, VERSION, header_json, line_json, pod_state,
};
use crate::resources::StringMap;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use std::collections::BTreeMap;
use std::io::Write;
use std::time::Duration;

/// The server closes each watch after this long; a new one resumes from the last version.
const WATCH_TIMEOUT_S: u32 = 60;
/// A watch silent for this long (a partition) is abandoned and resumed.
const WATCH_SILENCE_MS: u64 = (WATCH_TIMEOUT_S as u64 + 10) * 1000;
const BACKOFF_MIN_MS: u64 = 500;
const BACKOFF_MAX_MS: u64 = 30_000;

/// Counters of a recording.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordStats {
    /// Trace lines written.
    pub lines: u64,
    /// Pod lists made (the first, and one after each `410 Gone`).
    pub lists: u64,
    /// Watches started.
    pub watches: u64,
    /// Errors from the API that led to a back-off.
    pub errors: u64,
}

/// The trace state of a Kubernetes pod.
pub(crate) fn state_of(pod: &Pod) -> PodState {
    let empty = StringMap::new();
    let labels = pod.metadata.labels.as_ref().unwrap_or(&empty);
    let annotations = pod.metadata.annotations.as_ref().unwrap_or(&empty);
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending");
    let restarts = status
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |all| {
            all.iter().map(|c| c.restart_count.max(0) as u32).sum()
        });
    let node = pod.spec.as_ref().and_then(|spec| spec.node_name.as_deref());
    let name = pod.metadata.name.as_deref().unwrap_or("");
    pod_state(name, labels, annotations, phase, restarts, node)
}

/// Writes lines, one flushed write each, remembering each pod's last written state.
pub struct TraceWriter<W: Write> {
    out: W,
    written: BTreeMap<String, PodState>,
    /// What the recording has done so far.
    pub stats: RecordStats,
}

impl<W: Write> TraceWriter<W> {
    /// A writer that has written the trace's header (from `source`, `namespace` and `started_at`)
    /// to `out`.
    pub fn new(
        mut out: W,
        source: &str,
        namespace: &str,
        started_at: &str,
    ) -> std::io::Result<Self> {
        let header = Header {
            format: FORMAT.to_owned(),
            version: VERSION,
            source: source.to_owned(),
            namespace: namespace.to_owned(),
            started_at: started_at.to_owned(),
        };
        writeln!(out, "{}", header_json(&header))?;
        out.flush()?;
        Ok(TraceWriter {
            out,
            written: BTreeMap::new(),
            stats: RecordStats::default(),
        })
    }

    fn write(&mut self, t_ms: u64, event: PodEvent, state: PodState) -> std::io::Result<()> {
        let line = TraceLine { t_ms, event, state };
        writeln!(self.out, "{}", line_json(&line))?;
        self.out.flush()?;
        self.stats.lines += 1;
        Ok(())
    }

    /// A pod exists in this state: `added` if new, `modified` if its trace fields changed.
    pub(crate) fn present(&mut self, t_ms: u64, state: PodState) -> std::io::Result<()> {
        let event = match self.written.get(&state.pod) {
            None => PodEvent::Added,
            Some(old) if *old == state => return Ok(()),
            Some(_) => PodEvent::Modified,
        };
        self.written.insert(state.pod.clone(), state.clone());
        self.write(t_ms, event, state)
    }

    /// A pod is gone (its last state, as the API reported it).
    pub(crate) fn deleted(&mut self, t_ms: u64, state: PodState) -> std::io::Result<()> {
        if self.written.remove(&state.pod).is_none() {
            return Ok(());
        }
        self.write(t_ms, PodEvent::Deleted, state)
    }

    /// After a list: every written pod not in `names` is gone.
    fn vanished(&mut self, t_ms: u64, names: &[String]) -> std::io::Result<()> {
        let gone: Vec<PodState> = self
            .written
            .values()
            .filter(|state| !names.contains(&state.pod))
            .cloned()
            .collect();
        for state in gone {
            self.deleted(t_ms, state)?;
        }
        Ok(())
    }

    /// The output, once the recording is over.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Milliseconds since the recording started (tokio's clock: simulated under turmoil).
fn elapsed_ms(started: tokio::time::Instant) -> u64 {
    started.elapsed().as_millis() as u64
}

/// Record pods labelled `kind=kubernetes-elastic-agent` in `namespace` until the future
/// returned by the caller's `select!` ends (this function itself never returns `Ok`). I/O
/// errors on the trace end the recording.
pub async fn record<W: Write>(
    client: kube::Client,
    namespace: &str,
    writer: &mut TraceWriter<W>,
) -> std::io::Result<()> {
    let api: Api<Pod> = Api::namespaced(client, namespace);
    let selector = format!("{}={}", keys::KIND, keys::KIND_VALUE);
    let started = tokio::time::Instant::now();
    let mut resource_version: Option<String> = None;
    let mut backoff_ms = BACKOFF_MIN_MS;
    loop {
        let version = match &resource_version {
            Some(version) => version.clone(),
            None => match api.list(&ListParams::default().labels(&selector)).await {
                Ok(list) => {
                    writer.stats.lists += 1;
                    let t_ms = elapsed_ms(started);
                    let names: Vec<String> = list
                        .items
                        .iter()
                        .filter_map(|pod| pod.metadata.name.clone())
                        .collect();
                    writer.vanished(t_ms, &names)?;
                    for pod in &list.items {
                        writer.present(t_ms, state_of(pod))?;
                    }
                    let version = list.metadata.resource_version.unwrap_or_default();
                    resource_version = Some(version.clone());
                    version
                }
                Err(error) => {
                    writer.stats.errors += 1;
                    eprintln!("record: list failed ({error}); retrying in {backoff_ms} ms");
                    tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                    backoff_ms = (backoff_ms * 2).min(BACKOFF_MAX_MS);
                    continue;
                }
            },
        };
        let params = WatchParams::default()
            .labels(&selector)
            .timeout(WATCH_TIMEOUT_S);
        let outcome = watch_once(&api, &params, &version, writer, started).await?;
        match outcome {
            WatchEnd::Resume(Some(version)) => {
                resource_version = Some(version);
                backoff_ms = BACKOFF_MIN_MS;
            }
            WatchEnd::Resume(None) => backoff_ms = BACKOFF_MIN_MS,
            WatchEnd::Gone => resource_version = None,
            WatchEnd::Failed(version) => {
                writer.stats.errors += 1;
                if version.is_some() {
                    resource_version = version;
                }
                tokio::time::sleep(Duration::from_millis(backoff_ms)).await;
                backoff_ms = (backoff_ms * 2).min(BACKOFF_MAX_MS);
            }
        }
    }
}

/// How one watch request ended.
enum WatchEnd {
    /// Closed or silent: resume from this version (None: the one it started from).
    Resume(Option<String>),
    /// 410: the version is too old; list again.
    Gone,
    /// An error: back off, then resume from this version if any.
    Failed(Option<String>),
}

async fn watch_once<W: Write>(
    api: &Api<Pod>,
    params: &WatchParams,
    version: &str,
    writer: &mut TraceWriter<W>,
    started: tokio::time::Instant,
) -> std::io::Result<WatchEnd> {
    let stream = match api.watch(params, version).await {
        Ok(stream) => stream,
        Err(error) => {
            eprintln!("record: watch failed ({error})");
            return Ok(WatchEnd::Failed(None));
        }
    };
    writer.stats.watches += 1;
    let mut stream = stream.boxed();
    let mut last: Option<String> = None;
    loop {
        let silence = Duration::from_millis(WATCH_SILENCE_MS);
        let next = match tokio::time::timeout(silence, stream.try_next()).await {
            Err(_silent) => return Ok(WatchEnd::Resume(last)),
            Ok(Err(error)) => {
                eprintln!("record: watch stream broke ({error}); resuming");
                return Ok(WatchEnd::Failed(last));
            }
            Ok(Ok(None)) => return Ok(WatchEnd::Resume(last)),
            Ok(Ok(Some(event))) => event,
        };
        let t_ms = elapsed_ms(started);
        match next {
            WatchEvent::Added(pod) | WatchEvent::Modified(pod) => {
                last = pod.metadata.resource_version.clone().or(last);
                writer.present(t_ms, state_of(&pod))?;
            }
            WatchEvent::Deleted(pod) => {
                last = pod.metadata.resource_version.clone().or(last);
                writer.deleted(t_ms, state_of(&pod))?;
            }
            WatchEvent::Bookmark(bookmark) => last = Some(bookmark.metadata.resource_version),
            WatchEvent::Error(status) if status.code == 410 => return Ok(WatchEnd::Gone),
            WatchEvent::Error(status) => {
                eprintln!("record: watch error {} ({})", status.code, status.message);
                return Ok(WatchEnd::Failed(last));
            }
        }
    }
}

/// A client from `--kubeconfig PATH`, or the usual inference (KUBECONFIG, ~/.kube/config,
/// in-cluster service account). Credentials stay inside the client.
pub async fn client(kubeconfig: Option<&std::path::Path>) -> Result<kube::Client, String> {
    let config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| format!("no cluster configuration: {e}"))?,
    };
    kube::Client::try_from(config).map_err(|e| format!("cannot build a client: {e}"))
}
