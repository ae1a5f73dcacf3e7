//! `serve`, `record` and kubectl, on loopback and on turmoil's simulated network.
//!
//! Every test that uses wall time is bounded: `serve` and `record` run with `--for`, every
//! child process is killed when its guard drops, and every wait has a deadline.

#![cfg(feature = "live")]
// These tests drive real processes on loopback: waiting on the wall clock, with deadlines, is
// their point.
#![allow(clippy::disallowed_methods)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod leases;
mod turmoil_partition;

/// Kills its process when dropped, so a failing test leaves nothing running.
struct Guard(Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Guard {
    /// Wait for the process to exit on its own, at most `limit`.
    fn wait(&mut self, limit: Duration) -> std::process::ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.0.try_wait().expect("waitable child") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the process did not exit within {limit:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("live-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("the cargo tmp dir is writable");
    dir
}

/// A scenario whose first pods appear about `first_job` in, with long-running jobs.
fn scenario(dir: &Path, first_job: &str, runtime: &str) -> PathBuf {
    let path = dir.join("served.toml");
    let text = format!(
        r#"name = "served"
seed = 3
duration = "30m"
settle = "12m"

[cluster]
nodes = 2
pods_per_node = 10
pod_startup = {{ min = "5s", max = "40s" }}

[plugin]
policy = "upstream"

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "{first_job}"
count = 6
spread = "2m"
profile = "small"
runtime = {runtime}
"#
    );
    std::fs::write(&path, text).expect("writable");
    path
}

/// Start `serve` and wait for its banner; returns the guard and the kubeconfig path.
fn serve(dir: &Path, scenario: &Path, speed: &str, for_wall: &str) -> (Guard, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .args([
            "serve",
            scenario.to_str().expect("utf-8 path"),
            "--port",
            "0",
        ])
        .args(["--speed", speed, "--for", for_wall, "--out"])
        .arg(dir.join("served"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("the elasticsim binary runs");
    let stdout = child.stdout.take().expect("piped");
    let guard = Guard(child);
    let (sender, banner) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Keep reading to the end, so serve never writes into a closed pipe.
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let line = banner
        .recv_timeout(Duration::from_secs(20))
        .expect("serve prints its address within 20 s");
    assert!(line.starts_with("serving on http://127.0.0.1:"), "{line}");
    (guard, dir.join("served/kubeconfig"))
}

fn kubectl(dir: &Path, kubeconfig: &Path) -> Option<Command> {
    let binary = Path::new("/usr/bin/kubectl");
    if !binary.exists() {
        println!("SKIPPED: /usr/bin/kubectl is absent, so the kubectl test cannot run");
        return None;
    }
    let mut command = Command::new(binary);
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(dir.join("kube-cache"))
        .arg("--request-timeout=10s");
    Some(command)
}

fn run(mut command: Command) -> String {
    let output = command.output().expect("kubectl runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// `kubectl get pods` rows (NAME, READY, STATUS, …) once at least `count` pods exist.
fn pods_when(dir: &Path, kubeconfig: &Path, count: usize) -> Vec<Vec<String>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let mut command = kubectl(dir, kubeconfig).expect("checked by the caller");
        command.args(["get", "pods"]);
        let text = run(command);
        let rows: Vec<Vec<String>> = text
            .lines()
            .map(|line| line.split_whitespace().map(str::to_owned).collect())
            .collect();
        if rows.len() > count {
            return rows;
        }
        assert!(
            Instant::now() < deadline,
            "fewer than {count} pods after 20 s:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn kubectl_lists_simulated_phases_streams_changes_and_its_delete_becomes_a_fault() {
    let dir = scratch("kubectl");
    let file = scenario(&dir, "5s", r#"{ min = "20m", max = "25m" }"#);
    let (mut server, kubeconfig) = serve(&dir, &file, "60", "14s");
    if kubectl(&dir, &kubeconfig).is_none() {
        return;
    }
    let rows = pods_when(&dir, &kubeconfig, 3);
    assert_eq!(rows[0], ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
    for row in &rows[1..] {
        assert!(["Pending", "Running"].contains(&row[2].as_str()), "{row:?}");
    }

    let mut watch = kubectl(&dir, &kubeconfig).expect("present");
    watch.args(["get", "pods", "-w"]).stdout(Stdio::piped());
    let mut watcher = Guard(watch.spawn().expect("kubectl runs"));
    let stdout = watcher.0.stdout.take().expect("piped");
    let (sender, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    let victim = rows[1][0].clone();
    let mut delete = kubectl(&dir, &kubeconfig).expect("present");
    delete.args(["delete", "pod", &victim, "--wait=false"]);
    assert!(run(delete).contains(&format!("pod \"{victim}\" deleted")));

    // The watch streams on after its initial list: the delete (and the run) change pods.
    let mut streamed = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(8);
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => streamed.push(line),
            Err(_) => break,
        }
    }
    drop(watcher);
    assert!(
        streamed.len() > rows.len(),
        "kubectl get pods -w printed no change after its list:\n{}",
        streamed.join("\n")
    );

    assert!(server.wait(Duration::from_secs(30)).success());
    let trace = std::fs::read_to_string(dir.join("served/trace.jsonl")).expect("trace written");
    let fault = trace
        .lines()
        .find(|line| line.contains("\"kind\":\"fault_started\""))
        .expect("the delete is recorded as a fault");
    assert!(fault.contains("\"fault\":\"pod_delete\""), "{fault}");
    assert!(
        fault.contains(&format!("\"target\":\"{victim}\"")),
        "{fault}"
    );
    assert!(
        trace.contains(&format!(
            "\"kind\":\"pod_deleted\",\"pod\":\"{victim}\",\"by\":\"external\""
        )),
        "the pod was deleted by the fault"
    );
}

/// The trace lines without their times.
fn untimed(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).expect("trace written");
    text.lines()
        .skip(1)
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("json line");
            value.as_object_mut().expect("object").remove("t_ms");
            value
        })
        .collect()
}

/// The recording of a served run and the run's own export contain the same pod changes in the
/// same order; only `t_ms` differs (wall time since recording started versus simulated time).
/// The recorder starts before the first pod exists and outlives the server, so both see the
/// whole run.
#[test]
fn recording_a_served_run_matches_the_runs_own_export() {
    let dir = scratch("record");
    let file = scenario(&dir, "2m", r#"{ min = "1m", max = "3m" }"#);
    let (mut server, kubeconfig) = serve(&dir, &file, "60", "9s");
    let recorded = dir.join("recorded.jsonl");
    let mut recorder = Guard(
        Command::new(env!("CARGO_BIN_EXE_elasticsim"))
            .args([
                "record",
                "--namespace",
                "default",
                "--for",
                "12s",
                "--kubeconfig",
            ])
            .arg(&kubeconfig)
            .arg("--out")
            .arg(&recorded)
            .stderr(Stdio::null())
            .spawn()
            .expect("the elasticsim binary runs"),
    );
    assert!(server.wait(Duration::from_secs(30)).success());
    assert!(recorder.wait(Duration::from_secs(30)).success());
    let exported = untimed(&dir.join("served/export.jsonl"));
    assert!(
        exported.len() >= 18,
        "6 pods added, scheduled/running, deleted: {exported:?}"
    );
    assert_eq!(untimed(&recorded), exported);
    let trace = elasticsim::replay::read_trace(&recorded).expect("the recording reads back");
    assert!(
        trace
            .lines
            .windows(2)
            .all(|pair| pair[0].t_ms <= pair[1].t_ms)
    );
}

#[test]
fn record_with_a_bad_duration_exits_2_naming_the_flag() {
    let output = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .args([
            "record",
            "--namespace",
            "x",
            "--out",
            "/dev/null",
            "--for",
            "soon",
        ])
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--for \"soon\""));
}
