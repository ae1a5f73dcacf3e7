//! Tests of the report folder, the atomic writes and the human summaries.

use super::{feed, run_info, workload};
use crate::report::atomic::{temporary_path, write_file, write_with};
use crate::report::{REPORT_FILES, summary, terminal, write_run};
use std::fs;
use std::io;
use std::path::PathBuf;

/// A fresh, empty folder unique to this test and process.
fn scratch_folder(test_name: &str) -> PathBuf {
    let folder = std::env::temp_dir().join(format!(
        "elasticsim-report-{}-{test_name}",
        std::process::id()
    ));
    // A leftover from an earlier run with the same process id may exist; start empty.
    let _ = fs::remove_dir_all(&folder);
    folder
}

/// The top-level keys of `summary.json` the output contract names.
const SUMMARY_KEYS: [&str; 14] = [
    "scenario",
    "seed",
    "policy",
    "variant",
    "version",
    "verdict",
    "failure_class",
    "fingerprint",
    "events",
    "sim_s",
    "wall_s",
    "metrics",
    "violations",
    "reproduce",
];

/// The numeric metrics of `summary.json` the output contract names.
const SUMMARY_METRICS: [&str; 20] = [
    "jobs_total",
    "jobs_completed",
    "reuse_ratio",
    "pods_created",
    "pods_per_job",
    "wait_s_p50",
    "wait_s_p95",
    "wait_s_p99",
    "wait_s_max",
    "pod_seconds_busy",
    "pod_seconds_idle",
    "pod_seconds_pending",
    "agent_utilisation",
    "failovers",
    "failover_s_max",
    "events",
    "sim_s",
    "wall_s",
    "events_per_s",
    "compression",
];

#[test]
fn write_run_writes_every_file_atomically_with_the_contract_keys() {
    let root = scratch_folder("write-run");
    let folder = root.join("burst").join("pr355").join("seed-7");
    write_run(&folder, &run_info(), &feed(&workload())).expect("the temp folder is writable");
    for file in REPORT_FILES {
        assert!(folder.join(file).is_file(), "{file} is missing");
    }
    let leftovers: Vec<String> = fs::read_dir(&folder)
        .expect("the folder exists")
        .map(|entry| {
            entry
                .expect("entries are readable")
                .file_name()
                .to_string_lossy()
                .into()
        })
        .filter(|name: &String| name.ends_with(".tmp"))
        .collect();
    assert_eq!(leftovers, Vec::<String>::new());

    let text = fs::read_to_string(folder.join("summary.json")).expect("summary.json exists");
    let json: serde_json::Value = serde_json::from_str(&text).expect("summary.json is JSON");
    for key in SUMMARY_KEYS {
        assert!(json.get(key).is_some(), "summary.json lacks {key}");
    }
    assert_eq!(json["seed"], 7);
    assert_eq!(json["verdict"], "fail");
    assert!(json["variant"].is_null());
    for metric in SUMMARY_METRICS {
        assert!(
            json["metrics"][metric].is_number(),
            "metrics lacks {metric}"
        );
    }
    assert_eq!(json["metrics"]["jobs_total"], 3);
    let violation = &json["violations"][0];
    assert_eq!(violation["id"], "job-wait-bound");
    assert_eq!(violation["kind"], "always");
    assert_eq!(violation["at_s"], 301.5);
    assert_eq!(violation["objects"][0], "job:17");
    assert_eq!(violation["context"].as_array().map(Vec::len), Some(2));

    let jobs = fs::read_to_string(folder.join("jobs.csv")).expect("jobs.csv exists");
    assert_eq!(jobs.lines().count(), 4, "a header and three job rows");
    fs::remove_dir_all(&root).expect("the scratch folder can be removed");
}

#[test]
fn an_interrupted_write_never_replaces_the_final_file() {
    let folder = scratch_folder("interrupted");
    fs::create_dir_all(&folder).expect("the temp folder is writable");
    let path = folder.join("summary.json");
    write_file(&path, b"complete old version").expect("the temp folder is writable");

    // A crash after the temporary file was written but before the rename.
    fs::write(temporary_path(&path), b"half a new ver").expect("the temp folder is writable");
    assert_eq!(
        fs::read(&path).expect("the final file exists"),
        b"complete old version"
    );

    // A writer that fails midway: the final file stays, the temporary file goes.
    let failed = write_with(&path, |out| {
        out.write_all(b"half a new ver")?;
        Err(io::Error::other("disk full"))
    });
    assert_eq!(
        failed.map_err(|error| error.to_string()),
        Err("disk full".to_owned())
    );
    assert_eq!(
        fs::read(&path).expect("the final file exists"),
        b"complete old version"
    );
    assert!(!temporary_path(&path).exists());

    // The next complete write replaces it.
    write_file(&path, b"complete new version").expect("the temp folder is writable");
    assert_eq!(
        fs::read(&path).expect("the final file exists"),
        b"complete new version"
    );
    assert!(!temporary_path(&path).exists());
    fs::remove_dir_all(&folder).expect("the scratch folder can be removed");
}

#[test]
fn terminal_summary_puts_the_verdict_first_and_the_reproduce_line_last() {
    let info = run_info();
    let metrics = feed(&workload()).metrics(&info);
    let text = terminal::summary(&info, &metrics);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "FAIL burst (policy pr355, seed 7) [safety]");
    assert_eq!(
        lines[1],
        "  jobs         3 total, 3 completed (3 instances)"
    );
    assert_eq!(
        lines[2],
        "  waits        p50 8.0s  p95 10.0s  max 10.0s  (bound 5m00s)"
    );
    assert_eq!(
        lines[3],
        "  pods         2 created, 0.667 per job, reuse ratio 0.333"
    );
    assert_eq!(lines[4], "  pod-seconds  busy 72  idle 77  pending 5");
    assert_eq!(
        lines[5],
        "  events       50000 in 0.5s wall, 100.0k events/s, compression 200x"
    );
    assert!(lines.contains(&"  job-wait-bound at 301.5s: job 17 waited 5m01s [job:17]"));
    assert!(lines.contains(&"fingerprint ab12"));
    assert_eq!(
        lines.last(),
        Some(&"reproduce: cargo xtask sim scenarios/burst.toml --seed 7 --policy pr355")
    );
}

#[test]
fn a_passing_run_with_a_variant_names_it_in_the_verdict_line() {
    let mut info = run_info();
    info.verdict = "pass".to_owned();
    info.failure_class = None;
    info.variant = Some(crate::leader::Variant::Fixed);
    info.violations.clear();
    let text = terminal::summary(&info, &feed(&workload()).metrics(&info));
    assert!(text.starts_with("PASS burst (variant fixed, seed 7)\n"));
    assert!(!text.contains("violations:"));
}

#[test]
fn markdown_summary_has_verdict_metrics_violation_context_and_reproduce_in_order() {
    let info = run_info();
    let markdown = summary::summary_markdown(&info, &feed(&workload()).metrics(&info));
    assert!(markdown.starts_with("# FAIL burst (policy pr355, seed 7)\n"));
    let positions: Vec<usize> = [
        "## Metrics",
        "| reuse_ratio | 0.333 |",
        "### `job-wait-bound` (always) at 301.5s",
        "Objects: `job:17`",
        "```\n300.0s job 17 scheduled\n301.5s bound\n```",
        "## Reproduce",
        "cargo xtask sim scenarios/burst.toml --seed 7 --policy pr355",
    ]
    .iter()
    .map(|needle| {
        markdown
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} is missing"))
    })
    .collect();
    assert!(
        positions.is_sorted(),
        "sections out of order: {positions:?}"
    );
}
