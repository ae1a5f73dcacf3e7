use super::{Trace, config_hash_of, derive_workload, parse_trace, rfc3339};
use std::path::Path;

const HEADER: &str = concat!(
    r#"{"format":"elasticsim-trace","version":1,"source":"test","namespace":"ci","#,
    r#""started_at":"2026-01-01T00:00:00Z"}"#
);

fn line(t_ms: u64, event: &str, pod: &str, phase: &str, job: &str, hash: &str) -> String {
    format!(
        concat!(
            r#"{{"t_ms":{},"event":"{}","pod":"{}","phase":"{}","#,
            r#""job_id":"{}","job_identifier":null,"config_hash":"{}","restarts":0,"#,
            r#""node":null}}"#
        ),
        t_ms, event, pod, phase, job, hash
    )
}

fn trace(lines: &[String]) -> Trace {
    let text = format!("{HEADER}\n{}\n", lines.join("\n"));
    parse_trace(&text, Path::new("t.jsonl")).expect("test traces are well formed")
}

#[test]
fn a_job_arrives_at_its_first_pod_and_runs_from_running_to_deletion() {
    let workload = derive_workload(&trace(&[
        line(1_000, "added", "a", "Pending", "7", "h1"),
        line(4_000, "modified", "a", "Running", "7", "h1"),
        line(64_000, "deleted", "a", "Running", "7", "h1"),
    ]));
    assert_eq!(workload.jobs.len(), 1);
    let job = &workload.jobs[0];
    assert_eq!(
        (job.at_ms, job.runtime_ms, job.runtime_observed),
        (1_000, 60_000, true)
    );
    assert_eq!(workload.startup_sample_ms, vec![3_000]);
}

#[test]
fn a_replacement_pod_for_the_same_job_is_not_a_new_job_and_its_run_counts() {
    let workload = derive_workload(&trace(&[
        line(0, "added", "a", "Pending", "7", "h1"),
        line(2_000, "modified", "a", "Running", "7", "h1"),
        line(5_000, "deleted", "a", "Running", "7", "h1"),
        line(6_000, "added", "b", "Pending", "7", "h1"),
        line(9_000, "modified", "b", "Running", "7", "h1"),
        line(19_000, "modified", "b", "Succeeded", "7", "h1"),
    ]));
    assert_eq!(workload.jobs.len(), 1);
    assert_eq!(workload.jobs[0].at_ms, 0);
    assert_eq!(workload.jobs[0].runtime_ms, 10_000);
    assert_eq!(workload.startup_sample_ms, vec![2_000, 3_000]);
}

#[test]
fn a_job_that_never_ran_gets_the_median_runtime_and_one_still_running_ends_with_the_trace() {
    let workload = derive_workload(&trace(&[
        line(0, "added", "a", "Pending", "1", "h1"),
        line(1_000, "modified", "a", "Running", "1", "h1"),
        line(11_000, "deleted", "a", "Running", "1", "h1"),
        line(12_000, "added", "b", "Pending", "2", "h1"),
        line(13_000, "added", "c", "Pending", "3", "h1"),
        line(14_000, "modified", "c", "Running", "3", "h1"),
        line(50_000, "deleted", "b", "Pending", "2", "h1"),
    ]));
    let runtimes: Vec<(u64, bool)> = workload
        .jobs
        .iter()
        .map(|j| (j.runtime_ms, j.runtime_observed))
        .collect();
    // Known runtimes: 10 s (job 1) and 36 s (job 3, still running at the last line).
    assert_eq!(
        runtimes,
        vec![(10_000, true), (36_000, false), (36_000, true)]
    );
}

#[test]
fn distinct_config_hashes_map_to_profiles_in_order_of_first_appearance() {
    let workload = derive_workload(&trace(&[
        line(0, "added", "a", "Pending", "1", "blue"),
        line(1, "added", "b", "Pending", "2", "red"),
        line(2, "added", "c", "Pending", "3", "blue"),
        line(3, "added", "d", "Pending", "4", "green"),
    ]));
    let profiles = ["small".to_owned(), "large".to_owned()];
    let mapped: Vec<&str> = workload
        .jobs
        .iter()
        .map(|job| workload.profile_of(job, &profiles))
        .collect();
    assert_eq!(mapped, vec!["small", "large", "small", "small"]);
}

#[test]
fn a_wrong_version_names_line_one_and_the_supported_version() {
    let text = HEADER.replace("\"version\":1", "\"version\":2");
    let error = parse_trace(&text, Path::new("t.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("t.jsonl:1: trace version 2"), "{error}");
}

#[test]
fn a_truncated_line_names_its_line_number() {
    let good = line(0, "added", "a", "Pending", "1", "h");
    let text = format!("{HEADER}\n{good}\n{}\n", &good[..good.len() / 2]);
    let error = parse_trace(&text, Path::new("t.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("t.jsonl:3: truncated line"), "{error}");
}

#[test]
fn an_unknown_event_names_its_line_number_and_the_known_events() {
    let text = format!(
        "{HEADER}\n{}\n",
        line(0, "bounced", "a", "Pending", "1", "h")
    );
    let error = parse_trace(&text, Path::new("t.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("t.jsonl:2: unknown variant `bounced`"),
        "{error}"
    );
}

#[test]
fn lines_going_back_in_time_are_rejected() {
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        line(5, "added", "a", "Pending", "1", "h"),
        line(4, "added", "b", "Pending", "2", "h")
    );
    let error = parse_trace(&text, Path::new("t.jsonl"))
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("t.jsonl:3: t_ms 4 goes back in time"),
        "{error}"
    );
}

#[test]
fn rfc3339_formats_known_instants() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
    assert_eq!(rfc3339(1_767_225_599_000), "2025-12-31T23:59:59Z");
}

#[test]
fn the_config_hash_prefers_the_plugins_annotation_and_never_copies_a_value() {
    let labels = crate::resources::StringMap::new();
    let mut annotations = crate::resources::StringMap::from([(
        "Image".to_owned(),
        "secret-registry/agent:1".to_owned(),
    )]);
    let identity = config_hash_of(&labels, &annotations).expect("a profile property");
    assert!(!identity.contains("secret"), "{identity}");
    annotations.insert(
        crate::allocator::pod_spec::keys::CONFIG_HASH.to_owned(),
        "abc".to_owned(),
    );
    assert_eq!(
        config_hash_of(&labels, &annotations).as_deref(),
        Some("abc")
    );
}
