//! The recorder against the serve router over turmoil's simulated TCP: a partition in the
//! middle of a watch loses no pod event, because the recorder resumes from the last
//! resourceVersion it saw and the server replays its history from there.

use elasticsim::live::record::{RecordStats, TraceWriter, record};
use elasticsim::live::router::{AppState, router};
use elasticsim::live::store::{Hub, Store};
use elasticsim::replay::{PodEvent, PodState, parse_trace, pod_state_of};
use elasticsim::resources::{Pod, PodPhase, StringMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `Write` the test can read after the simulation.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("not poisoned")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn pod(index: u64, phase: PodPhase, node: Option<&str>, agent: bool) -> Pod {
    let mut labels = StringMap::from([("Elastic-Agent-Job-Id".to_owned(), index.to_string())]);
    if agent {
        labels.insert("kind".to_owned(), "kubernetes-elastic-agent".to_owned());
    }
    Pod {
        name: format!("k8s-ea-{index}"),
        uid: index,
        labels: Arc::new(labels),
        annotations: StringMap::from([("Image".to_owned(), "gocd/gocd-agent".to_owned())]),
        image: "gocd/gocd-agent".to_owned(),
        env: Arc::default(),
        phase,
        node: node.map(str::to_owned),
        created_ms: index * 1000,
        resource_version: 0,
        restart_count: 0,
        deletion_ms: None,
        ready: phase == PodPhase::Running,
    }
}

/// Every change the server publishes, two seconds apart: six agent pods go Pending →
/// scheduled → Running → deleted, overlapping; one pod without the agent label is noise.
fn script() -> Vec<(PodEvent, Pod)> {
    let mut changes = Vec::new();
    for index in 0..6 {
        changes.push((PodEvent::Added, pod(index, PodPhase::Pending, None, true)));
        changes.push((
            PodEvent::Modified,
            pod(index, PodPhase::Pending, Some("node-0"), true),
        ));
        if index == 2 {
            changes.push((PodEvent::Added, pod(99, PodPhase::Pending, None, false)));
        }
        changes.push((
            PodEvent::Modified,
            pod(index, PodPhase::Running, Some("node-0"), true),
        ));
        changes.push((
            PodEvent::Deleted,
            pod(index, PodPhase::Running, Some("node-0"), true),
        ));
    }
    changes
}

const STEP_MS: u64 = 2_000;

/// The API server host: `elasticsim serve`'s router over a store that plays [`script`] from
/// 5 s on, one change every [`STEP_MS`].
fn add_apiserver(sim: &mut turmoil::Sim<'_>) {
    sim.host("apiserver", || async {
        let hub = Hub::new(Store::new(0));
        let publisher = hub.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5_000)).await;
            for (event, pod) in script() {
                publisher.with(|store| store.publish_pod(event, &pod));
                tokio::time::sleep(Duration::from_millis(STEP_MS)).await;
            }
        });
        let app = router(AppState {
            hub,
            commands: None,
        });
        let listener = turmoil::net::TcpListener::bind(("0.0.0.0", 80)).await?;
        loop {
            let (stream, _) = listener.accept().await?;
            let service = hyper_util::service::TowerToHyperService::new(app.clone());
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
}

/// The recorder client: records the API server's pods for 300 s into `sink`, then leaves its
/// list and watch counts in `stats_out`.
fn add_recorder(sim: &mut turmoil::Sim<'_>, sink: Shared, stats_out: Arc<Mutex<RecordStats>>) {
    sim.client("recorder", async move {
        let service = tower::service_fn(|request: http::Request<kube::client::Body>| async move {
            let stream = turmoil::net::TcpStream::connect(("apiserver", 80)).await?;
            let io = hyper_util::rt::TokioIo::new(stream);
            let (mut sender, connection) = hyper::client::conn::http1::handshake(io).await?;
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok::<_, tower::BoxError>(sender.send_request(request).await?)
        });
        let client = kube::Client::new(service, "default");
        let mut writer = TraceWriter::new(sink, "turmoil", "default", "2023-11-14T22:13:20Z")?;
        tokio::select! {
            biased;
            result = record(client, "default", &mut writer) => result?,
            () = tokio::time::sleep(Duration::from_secs(300)) => {}
        }
        *stats_out.lock().expect("not poisoned") = writer.stats.clone();
        Ok(())
    });
}

/// Run to the end, partitioning the two hosts 20 s into the script (a watch is streaming by
/// then) for 30 s.
fn run_with_a_partition(sim: &mut turmoil::Sim<'_>) {
    let mut partitioned = false;
    let mut repaired = false;
    while !sim.step().expect("the simulation runs") {
        let elapsed = sim.elapsed();
        if !partitioned && elapsed >= Duration::from_secs(25) {
            sim.partition("apiserver", "recorder");
            partitioned = true;
        }
        if partitioned && !repaired && elapsed >= Duration::from_secs(55) {
            sim.repair("apiserver", "recorder");
            repaired = true;
        }
    }
    assert!(repaired, "the simulation ended before the partition healed");
}

#[test]
fn a_partition_in_the_middle_of_a_watch_loses_no_pod_event() {
    let mut sim = turmoil::Builder::new()
        .simulation_duration(Duration::from_secs(400))
        .tick_duration(Duration::from_millis(10))
        .epoch(std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000))
        .rng_seed(7)
        .build();
    add_apiserver(&mut sim);
    let output = Shared::default();
    let stats: Arc<Mutex<RecordStats>> = Arc::default();
    add_recorder(&mut sim, output.clone(), stats.clone());
    run_with_a_partition(&mut sim);

    let text = String::from_utf8(output.0.lock().expect("not poisoned").clone()).expect("utf-8");
    let trace = parse_trace(&text, std::path::Path::new("recorded")).expect("a valid trace");
    // Nothing got through while partitioned; what was published then arrived after repair.
    let during: Vec<u64> = trace
        .lines
        .iter()
        .map(|line| line.t_ms)
        .filter(|t_ms| (25_500..55_000).contains(t_ms))
        .collect();
    assert!(
        during.is_empty(),
        "lines recorded during the partition at {during:?}"
    );
    let recorded: Vec<(PodEvent, PodState)> = trace
        .lines
        .into_iter()
        .map(|line| (line.event, line.state))
        .collect();
    let expected: Vec<(PodEvent, PodState)> = script()
        .into_iter()
        .filter(|(_, pod)| pod.label("kind").is_some())
        .map(|(event, pod)| (event, pod_state_of(&pod)))
        .collect();
    assert_eq!(recorded, expected);
    let stats = stats.lock().expect("not poisoned").clone();
    assert!(
        stats.watches >= 2,
        "the partition should have forced a new watch: {stats:?}"
    );
    assert_eq!(
        stats.lists, 1,
        "resuming from a resourceVersion needs no re-list: {stats:?}"
    );
}
