//! Replay mode end to end: a run's exported trace replayed as a workload, and bad traces.
//!
//! What "exactly" means for the round trip. A pod trace cannot see when a job was scheduled or
//! how long its build took, only its pods (see `elasticsim::replay`). So the round trip is
//! exact against what the trace can tell, to the millisecond:
//! - the derived workload has one job per job of the original run (upstream: one pod per job,
//!   no pod faults), arriving when that job's pod was created, running for its pod's
//!   Running → deleted interval, under the profile it had;
//! - the replayed run schedules exactly those jobs: the same count, the same arrival times and
//!   profiles, and the server is handed exactly those runtimes;
//! - every replayed pod starts up in a latency drawn from the trace's own sample.

use elasticsim::replay::{Workload, derive_workload, read_trace};
use elasticsim::trace::Record;
use elasticsim::world::{RunSettings, Sink, World};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const CLUSTER: &str = r#"
seed = 11
duration = "20m"
settle = "20m"

[cluster]
nodes = 8
pods_per_node = 10
pod_startup = { min = "2s", max = "15s" }
api_latency = { min = "2ms", max = "40ms" }

[plugin]
policy = "upstream"
pending_pods_count = 40

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[profiles]]
name = "large"
image = "gocd/gocd-agent:v25.1.0"
cpu = "2"
memory = "4Gi"
"#;

const ORIGINAL_JOBS: &str = r#"
[[jobs]]
kind = "burst"
at = "1m"
count = 12
spread = "20s"
profile = "small"
runtime = { min = "30s", max = "3m" }

[[jobs]]
kind = "burst"
at = "4m"
count = 8
spread = "30s"
profile = "large"
runtime = { min = "1m", max = "4m" }
"#;

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("replay-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the cargo tmp dir is writable");
    dir
}

fn write_scenario(dir: &Path, name: &str, jobs: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("name = \"{name}\"\n{CLUSTER}{jobs}")).expect("writable");
    path
}

fn sim(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .arg("sim")
        .args(args)
        .output()
        .expect("the elasticsim binary runs")
}

/// Every record of a run, in order.
#[derive(Default)]
struct Records(Vec<(u64, Record)>);

impl Sink for Records {
    fn record(&mut self, t_ms: u64, _node: &str, record: &Record) {
        self.0.push((t_ms, record.clone()));
    }
}

fn run(path: &Path) -> (World, Records) {
    let loaded = elasticsim::scenario::load(path).expect("the test scenario is valid");
    let settings = RunSettings::from_scenario(&loaded.scenario);
    let mut world = World::new(loaded.scenario, settings).expect("the world builds");
    let mut records = Records::default();
    world.run(&mut records).expect("the run ends");
    (world, records)
}

/// A pod's (created_ms, job label, running_ms, deleted_ms).
type PodLife = (u64, Option<u64>, Option<u64>, Option<u64>);

/// Every pod's life, by name.
fn pod_lives(records: &Records) -> BTreeMap<String, PodLife> {
    let mut pods = BTreeMap::new();
    for (t_ms, record) in &records.0 {
        match record {
            Record::PodCreated { pod, job_label, .. } => {
                pods.insert(pod.clone(), (*t_ms, *job_label, None, None));
            }
            Record::PodRunning { pod } => {
                pods.get_mut(pod)
                    .expect("created first")
                    .2
                    .get_or_insert(*t_ms);
            }
            Record::PodDeleted { pod, .. } => {
                pods.get_mut(pod).expect("created first").3 = Some(*t_ms);
            }
            _ => {}
        }
    }
    pods
}

fn scheduled(records: &Records) -> Vec<(u64, String)> {
    let mut jobs: Vec<(u64, String)> = records
        .0
        .iter()
        .filter_map(|(t_ms, record)| match record {
            Record::JobScheduled { profile, .. } => Some((*t_ms, profile.clone())),
            _ => None,
        })
        .collect();
    jobs.sort();
    jobs
}

/// Each pod's creation time and how long its job ran (running to deleted), sorted.
fn created_and_runtime(lives: &BTreeMap<String, PodLife>) -> Vec<(u64, u64)> {
    let mut expected: Vec<(u64, u64)> = lives
        .values()
        .map(|&(created, _, running, deleted)| {
            (
                created,
                deleted.expect("upstream deletes every pod") - running.expect("ran"),
            )
        })
        .collect();
    expected.sort();
    expected
}

/// Each pod's creation time and the profile of the job it was made for, sorted.
fn created_with_profile(
    lives: &BTreeMap<String, PodLife>,
    records: &Records,
) -> Vec<(u64, String)> {
    let mut created: Vec<(u64, String)> = lives
        .values()
        .map(|&(created, label, _, _)| {
            let job = label.expect("upstream labels every pod");
            let profile = records
                .0
                .iter()
                .find_map(|(_, record)| match record {
                    Record::JobScheduled {
                        job: id, profile, ..
                    } if *id == job => Some(profile.clone()),
                    _ => None,
                })
                .expect("the pod's job was scheduled");
            (created, profile)
        })
        .collect();
    created.sort();
    created
}

#[test]
fn replaying_an_exported_run_reproduces_its_jobs_exactly() {
    let dir = scratch("round-trip");
    let original = write_scenario(&dir, "original", ORIGINAL_JOBS);
    let exported = dir.join("original.jsonl");
    let output = sim(&[
        original.to_str().expect("utf-8 path"),
        "--out",
        dir.join("report-original").to_str().expect("utf-8 path"),
        "--export-trace",
        exported.to_str().expect("utf-8 path"),
        "--quiet",
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let workload: Workload = derive_workload(&read_trace(&exported).expect("the export reads"));

    // The derived workload is the original run's pods, job by job.
    let (_, original_records) = run(&original);
    let original_jobs = scheduled(&original_records);
    assert_eq!(workload.jobs.len(), original_jobs.len());
    assert_eq!(workload.jobs.len(), 20);
    let lives = pod_lives(&original_records);
    let mut derived: Vec<(u64, u64)> = workload
        .jobs
        .iter()
        .map(|job| (job.at_ms, job.runtime_ms))
        .collect();
    derived.sort();
    assert_eq!(derived, created_and_runtime(&lives));

    // The replay schedules exactly the derived jobs, with the original profiles.
    let replay = write_scenario(
        &dir,
        "replay",
        "[[jobs]]\nkind = \"trace\"\nfile = \"original.jsonl\"\n",
    );
    let (replayed_world, replayed_records) = run(&replay);
    let profiles = ["small".to_owned(), "large".to_owned()];
    let planned: Vec<(u64, String, u64)> = workload
        .jobs
        .iter()
        .map(|job| {
            (
                job.at_ms,
                workload.profile_of(job, &profiles).to_owned(),
                job.runtime_ms,
            )
        })
        .collect();
    assert_eq!(replayed_world.planned_arrivals(), planned);
    assert_eq!(
        scheduled(&replayed_records),
        created_with_profile(&lives, &original_records)
    );

    // Every replayed start-up latency comes from the trace's sample.
    for (pod, (created, _, running, _)) in pod_lives(&replayed_records) {
        let startup = running.expect("every replayed pod runs") - created;
        assert!(
            workload.startup_sample_ms.contains(&startup),
            "{pod} started in {startup} ms, not in the trace's sample"
        );
    }
}

#[test]
fn the_same_replay_twice_has_the_same_fingerprint() {
    let dir = scratch("determinism");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/example.jsonl"),
        dir.join("example.jsonl"),
    )
    .expect("the example trace exists");
    let replay = write_scenario(
        &dir,
        "replay",
        "[[jobs]]\nkind = \"trace\"\nfile = \"example.jsonl\"\n",
    );
    let path = replay.to_str().expect("utf-8 path");
    let mut fingerprints = Vec::new();
    for policy in ["safe", "safe", "pr355"] {
        let out = dir.join(format!("report-{}", fingerprints.len()));
        let output = sim(&[
            path,
            "--policy",
            policy,
            "--quiet",
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        fingerprints.push(String::from_utf8(output.stdout).expect("utf-8"));
    }
    assert_eq!(fingerprints[0], fingerprints[1]);
    assert_ne!(fingerprints[0], fingerprints[2]);
}

fn replay_error(name: &str, trace: &str) -> (i32, String) {
    let dir = scratch(name);
    std::fs::write(dir.join("bad.jsonl"), trace).expect("writable");
    let replay = write_scenario(
        &dir,
        "replay",
        "[[jobs]]\nkind = \"trace\"\nfile = \"bad.jsonl\"\n",
    );
    let out = dir.join("report");
    let output = sim(&[
        replay.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8(output.stderr).expect("utf-8");
    (output.status.code().expect("exited"), stderr)
}

const HEADER: &str = concat!(
    r#"{"format":"elasticsim-trace","version":1,"source":"t","namespace":"ci","#,
    r#""started_at":"2026-01-01T00:00:00Z"}"#
);
const GOOD: &str = concat!(
    r#"{"t_ms":5,"event":"added","pod":"a","phase":"Pending","job_id":"1","#,
    r#""job_identifier":null,"config_hash":null,"restarts":0,"node":null}"#
);

#[test]
fn a_trace_of_the_wrong_version_exits_2_naming_line_1() {
    let (code, stderr) = replay_error("version", &HEADER.replace("\"version\":1", "\"version\":9"));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.jsonl:1: trace version 9 is not supported"),
        "{stderr}"
    );
}

#[test]
fn a_truncated_trace_line_exits_2_naming_its_line() {
    let (code, stderr) = replay_error("truncated", &format!("{HEADER}\n{GOOD}\n{}", &GOOD[..40]));
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("bad.jsonl:3: truncated line"), "{stderr}");
}

#[test]
fn an_unknown_trace_event_exits_2_naming_its_line() {
    let bad = GOOD.replace("added", "exploded");
    let (code, stderr) = replay_error("event", &format!("{HEADER}\n{GOOD}\n{GOOD}\n{bad}\n"));
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("bad.jsonl:4: unknown variant `exploded`"),
        "{stderr}"
    );
}
