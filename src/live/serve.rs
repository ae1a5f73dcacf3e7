//! `elasticsim serve`: a scenario run paced against the wall clock on its own thread, its
//! Kubernetes API served on 127.0.0.1 (see `router`). Writes `kubeconfig`, `trace.jsonl` (every
//! record, with `kubectl delete pod` as `pod_delete` faults) and `export.jsonl` (the run's pod
//! observations in the recorded trace format) into the output folder.

use super::publish::Publisher;
use super::router::{AppState, Command, router};
use super::store::{Hub, Store};
use super::writes::Writer;
use crate::engine::SimTime;
use crate::export::{Exporter, PodDiff, Touched, export_header};
use crate::scenario::Scenario;
use crate::trace::JsonlWriter;
use crate::world::{RunSettings, Sink, World};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// How to serve.
#[derive(Clone, Debug)]
pub(crate) struct ServeOptions {
    /// 0 picks a free port (printed, and written to the kubeconfig).
    pub port: u16,
    /// Simulated seconds per wall second.
    pub speed: f64,
    /// Stop after this much wall time (None: until Ctrl-C).
    pub for_ms: Option<u64>,
    /// The folder the kubeconfig and the run's files are written to.
    pub out: PathBuf,
}

/// How a serve session ended.
#[derive(Debug)]
pub struct ServeSummary {
    /// The loopback address the API was served on.
    pub address: std::net::SocketAddr,
    /// Engine events popped.
    pub events: u64,
    /// Simulated milliseconds the session covered.
    pub sim_ms: u64,
    /// Pods deleted through the served API (`kubectl delete pod`).
    pub pods_deleted_by_kubectl: u32,
}

/// The kubeconfig for a server on `address` (no credentials: loopback only).
pub(crate) fn kubeconfig(address: std::net::SocketAddr) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: elasticsim\n  cluster:\n    server: \
         http://{address}\ncontexts:\n- name: elasticsim\n  context:\n    cluster: elasticsim\n    \
         namespace: default\n    user: elasticsim\ncurrent-context: elasticsim\nusers:\n- name: \
         elasticsim\n  user: {{}}\n"
    )
}

/// Wall-clock milliseconds since the Unix epoch.
#[allow(clippy::disallowed_methods)] // Object timestamps of a served run: live code only.
pub(crate) fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// Serve `scenario` until `--for` passes or Ctrl-C. Blocks; builds its own runtime.
pub(crate) fn serve(
    scenario: Scenario,
    settings: RunSettings,
    options: ServeOptions,
    announce: impl FnOnce(std::net::SocketAddr, &Path),
) -> Result<ServeSummary, String> {
    std::fs::create_dir_all(&options.out)
        .map_err(|e| format!("cannot create {}: {e}", options.out.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(serve_async(scenario, settings, options, announce))
}

async fn serve_async(
    scenario: Scenario,
    settings: RunSettings,
    options: ServeOptions,
    announce: impl FnOnce(std::net::SocketAddr, &Path),
) -> Result<ServeSummary, String> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", options.port))
        .await
        .map_err(|e| format!("cannot listen on 127.0.0.1:{}: {e}", options.port))?;
    let address = listener.local_addr().map_err(|e| e.to_string())?;
    let config_path = options.out.join("kubeconfig");
    std::fs::write(&config_path, kubeconfig(address))
        .map_err(|e| format!("cannot write {}: {e}", config_path.display()))?;
    let hub = Hub::new(Store::new(unix_ms()));
    let (commands, inbox) = std::sync::mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let pacer = {
        let (hub, stop, out, speed) = (
            hub.clone(),
            stop.clone(),
            options.out.clone(),
            options.speed,
        );
        std::thread::Builder::new()
            .name("elasticsim-world".to_owned())
            .spawn(move || pace(scenario, settings, &hub, &inbox, &stop, &out, speed))
            .map_err(|e| format!("cannot start the world thread: {e}"))?
    };
    let app = router(AppState {
        hub,
        commands: Some(commands),
    });
    announce(address, &config_path);
    let server = axum::serve(listener, app);
    let until = async {
        match options.for_ms {
            Some(ms) => {
                tokio::select! {
                    _ = tokio::time::sleep(std::time::Duration::from_millis(ms)) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    };
    tokio::select! {
        result = server => result.map_err(|e| format!("the HTTP server failed: {e}"))?,
        () = until => {}
    }
    stop.store(true, Ordering::SeqCst);
    let (events, sim_ms, deleted) = pacer
        .join()
        .map_err(|_| "the world thread panicked".to_owned())??;
    Ok(ServeSummary {
        address,
        events,
        sim_ms,
        pods_deleted_by_kubectl: deleted,
    })
}

/// The world thread's outputs.
struct Outputs {
    trace: JsonlWriter,
    trace_error: Option<std::io::Error>,
}

impl Sink for Outputs {
    fn record(&mut self, t_ms: u64, node: &str, record: &crate::trace::Record) {
        if let Err(error) = self.trace.write(t_ms, node, record) {
            self.trace_error.get_or_insert(error);
        }
    }
}

/// `export.jsonl` in `out`, its header written.
fn open_export(
    out: &Path,
    scenario: &Scenario,
    settings: &RunSettings,
) -> Result<Exporter<std::io::LineWriter<std::fs::File>>, String> {
    let header = export_header(scenario, settings);
    let export_path = out.join("export.jsonl");
    let file = std::fs::File::create(&export_path)
        .map_err(|e| format!("cannot create {}: {e}", export_path.display()))?;
    Exporter::new(std::io::LineWriter::new(file), &header)
        .map_err(|e| format!("writing {}: {e}", export_path.display()))
}

/// Answer every request waiting in `inbox`: a `kubectl delete pod` with the pod as it was (or
/// nothing), injecting each delete of a pod that exists; a Lease write with its answer.
/// Returns how many pods were deleted.
fn answer_commands(
    first: Option<Command>,
    inbox: &std::sync::mpsc::Receiver<Command>,
    world: &mut World,
    sink: &mut dyn Sink,
    publisher: &mut Publisher<'_>,
) -> Result<u32, String> {
    let mut deleted = 0;
    for command in first
        .into_iter()
        .chain(std::iter::from_fn(|| inbox.try_recv().ok()))
    {
        match command {
            Command::DeletePod { name, reply } => {
                let before = publisher
                    .hub
                    .lock()
                    .get(super::store::Resource::Pods, &name)
                    .map(|stored| stored.object);
                if before.is_some() && world.inject_pod_delete(&name, sink) {
                    deleted += 1;
                    publisher.publish(world)?;
                }
                let _ = reply.send(before);
            }
            Command::Lease { call, reply } => {
                let mut writer = Writer {
                    world,
                    sink,
                    publisher,
                };
                let _ = reply.send(writer.write(call));
            }
        }
    }
    Ok(deleted)
}

/// Handle every event due by `target`, publishing what each changed.
fn step_to(
    target: SimTime,
    world: &mut World,
    touched: &mut Touched<'_>,
    publisher: &mut Publisher<'_>,
) -> Result<(), String> {
    while !world.has_ended() && world.next_event_time().is_some_and(|t| t <= target) {
        touched.touched = false;
        world.step(touched).map_err(|e| e.to_string())?;
        // `Touched` notes pod records only: a Lease write (a renewal every retry period in a
        // leader scenario) is found by the Lease versions.
        if touched.touched || publisher.leases_changed(world) {
            publisher.publish(world)?;
        }
    }
    Ok(())
}

/// Run the world paced against the wall clock until `stop`; answer pod deletes and Lease
/// writes.
#[allow(clippy::disallowed_methods)] // Pacing against the wall clock is what serve does.
fn pace(
    scenario: Scenario,
    settings: RunSettings,
    hub: &Hub,
    inbox: &std::sync::mpsc::Receiver<Command>,
    stop: &AtomicBool,
    out: &Path,
    speed: f64,
) -> Result<(u64, u64, u32), String> {
    let export = open_export(out, &scenario, &settings)?;
    let trace_path = out.join("trace.jsonl");
    let trace = JsonlWriter::create(&trace_path)
        .map_err(|e| format!("cannot create {}: {e}", trace_path.display()))?;
    let mut outputs = Outputs {
        trace,
        trace_error: None,
    };
    let mut publisher = Publisher {
        hub,
        pods: PodDiff::default(),
        leases: BTreeMap::new(),
        written: BTreeMap::new(),
        export,
    };
    let mut world = World::new(scenario, settings).map_err(|e| e.to_string())?;
    let end_ms = world.scenario().duration_ms + world.scenario().settle_ms;
    let started = std::time::Instant::now();
    let mut deleted = 0;
    let mut waiting = None;
    let mut touched = Touched {
        inner: &mut outputs,
        touched: false,
    };
    world.start_run(&mut touched);
    while !stop.load(Ordering::SeqCst) {
        let first = waiting.take();
        deleted += answer_commands(first, inbox, &mut world, &mut touched, &mut publisher)?;
        let target_ms = ((started.elapsed().as_secs_f64() * speed * 1000.0) as u64).min(end_ms);
        step_to(
            SimTime::from_ms(target_ms),
            &mut world,
            &mut touched,
            &mut publisher,
        )?;
        let ended = world.has_ended();
        hub.with(|store| {
            store.sim_ms = target_ms;
            store.ended = ended;
        });
        // Wait for the next tick, or less if a request comes: its answer waits for no tick.
        waiting = inbox
            .recv_timeout(std::time::Duration::from_millis(10))
            .ok();
    }
    if let Some(error) = outputs.trace_error {
        return Err(format!("writing trace.jsonl: {error}"));
    }
    outputs
        .trace
        .finish()
        .map_err(|e| format!("finishing trace.jsonl: {e}"))?;
    publisher
        .export
        .finish()
        .map_err(|e| format!("finishing export.jsonl: {e}"))?;
    Ok((world.events(), world.now().as_ms(), deleted))
}
