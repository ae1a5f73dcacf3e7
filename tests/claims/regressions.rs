//! Every entry of `scenarios/regressions/regressions.toml` keeps its verdict, and every
//! scenario file in that folder is replayed by at least one entry.

use elasticsim::check::InvariantId;
use elasticsim::explore::regressions::{LIST_FILE, load, replay, unlisted_files};
use std::path::Path;

fn folder() -> &'static Path {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/regressions"
    ))
}

#[test]
fn every_regression_entry_reproduces_its_expected_verdict() {
    let entries = load(&folder().join(LIST_FILE)).expect("the regressions list loads");
    assert!(entries.len() >= 10, "only {} entries", entries.len());
    let mismatches: Vec<String> = entries
        .iter()
        .filter_map(|entry| {
            let replayed = replay(entry)
                .unwrap_or_else(|e| panic!("{} did not run: {e}", entry.scenario.display()));
            entry.mismatch(&replayed)
        })
        .collect();
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

#[test]
fn every_repro_file_is_replayed_by_an_entry_and_fails_on_its_own() {
    let entries = load(&folder().join(LIST_FILE)).expect("the regressions list loads");
    let unlisted = unlisted_files(folder(), &entries).expect("the folder is readable");
    assert!(unlisted.is_empty(), "not in {LIST_FILE}: {unlisted:?}");
    let repros: Vec<_> = entries
        .iter()
        .filter(|entry| entry.scenario.to_string_lossy().ends_with("-repro.toml"))
        .filter(|entry| entry.seed.is_none() && entry.policy.is_none())
        .collect();
    // Two since pr355-idle-timeout-repro.toml left (no defect: pr355 has no idle timeout).
    assert!(repros.len() >= 2, "expected the shrunk repros to be listed");
    for entry in repros {
        // A repro pins seed and policy in the file: the entry overrides nothing.
        assert_eq!(entry.verdict, "fail", "{}", entry.scenario.display());
        let replayed = replay(entry).expect("a repro runs");
        assert_eq!(replayed.verdict, "fail", "{}", entry.scenario.display());
    }
}

#[test]
fn a_mismatched_expectation_is_reported_with_what_differs() {
    let entries = load(&folder().join(LIST_FILE)).expect("the regressions list loads");
    let mut entry = entries
        .into_iter()
        .find(|entry| entry.verdict == "pass")
        .expect("the list has a passing entry");
    entry.verdict = "fail".to_owned();
    entry.violated = vec![InvariantId::OnePodPerJob];
    let replayed = replay(&entry).expect("the entry runs");
    let message = entry
        .mismatch(&replayed)
        .expect("a pass is not the expected fail");
    assert!(
        message.contains("expected fail violating [one-pod-per-job], got pass"),
        "{message}"
    );
}
