//! Determinism: a run is a pure function of its scenario and seed.
//!
//! The same scenario and seed give the same records and fingerprint; another seed gives
//! another fingerprint; a checked-in golden fingerprint pins the whole simulation; swarm
//! faults never move job arrivals; `--trace` writes one JSON object per record.

mod common;

use common::{fresh_dir, record_run, run_outcome, scenario, scenario_file};
use elasticsim::trace::{Fingerprint, Record};
use elasticsim::world::World;
use std::path::Path;
use std::process::Command;

const GOLDEN_SCENARIO: &str = "tests/golden/small.toml";
const GOLDEN_FINGERPRINT: &str = "tests/golden/small.fingerprint";

/// The golden digest as checked in: the file holds the hex digest and nothing else (one
/// trailing newline allowed), so `.ci/run` can compare it with the binary's output.
fn golden_digest() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN_FINGERPRINT);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let digest = text.strip_suffix('\n').unwrap_or(&text);
    assert!(
        digest.len() == 64
            && digest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{GOLDEN_FINGERPRINT} must hold exactly one lowercase hex SHA-256 digest, found {text:?}"
    );
    digest.to_owned()
}

#[test]
fn the_same_scenario_and_seed_give_the_same_records_and_fingerprint() {
    let burst = scenario_file("scenarios/burst.toml");
    let first = record_run(&burst, 7);
    let second = record_run(&burst, 7);
    assert_eq!(
        first.events.len(),
        second.events.len(),
        "records per run differ"
    );
    assert!(
        first.events == second.events,
        "the two runs' records differ"
    );
    let fingerprint_first = run_outcome(&burst, 7, None).info.fingerprint;
    let fingerprint_second = run_outcome(&burst, 7, None).info.fingerprint;
    assert_eq!(fingerprint_first, fingerprint_second);
}

#[test]
fn the_fingerprint_is_the_digest_of_exactly_the_records_a_sink_sees() {
    let burst = scenario_file("scenarios/burst.toml");
    let recording = record_run(&burst, 7);
    let mut fingerprint = Fingerprint::default();
    for event in &recording.events {
        fingerprint.add(event.t_ms, &event.node, &event.record);
    }
    assert_eq!(
        fingerprint.hex(),
        run_outcome(&burst, 7, None).info.fingerprint
    );
}

#[test]
fn another_seed_gives_another_fingerprint() {
    let burst = scenario_file("scenarios/burst.toml");
    let fingerprints: Vec<String> = [7, 8, 9]
        .iter()
        .map(|seed| run_outcome(&burst, *seed, None).info.fingerprint)
        .collect();
    assert_ne!(fingerprints[0], fingerprints[1]);
    assert_ne!(fingerprints[0], fingerprints[2]);
    assert_ne!(fingerprints[1], fingerprints[2]);
}

#[test]
fn the_golden_scenario_keeps_its_checked_in_fingerprint() {
    let golden = scenario_file(GOLDEN_SCENARIO);
    let outcome = run_outcome(&golden, golden.seed, None);
    assert!(
        outcome.passed(),
        "the golden run must pass: {:#?}",
        outcome.info.violations
    );
    assert_eq!(
        outcome.info.fingerprint,
        golden_digest(),
        "the simulation changed: if intended, write the new digest to {GOLDEN_FINGERPRINT}"
    );
}

#[test]
fn the_binary_prints_the_golden_fingerprint_with_quiet() {
    // The same command `.ci/run` runs in release, here on the debug binary.
    let out = fresh_dir("determinism-golden-binary");
    let output = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["sim", GOLDEN_SCENARIO, "--quiet", "--out"])
        .arg(&out)
        .output()
        .expect("the elasticsim binary runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    let words: Vec<&str> = stdout.split_whitespace().collect();
    assert_eq!(
        words.len(),
        2,
        "--quiet prints `VERDICT DIGEST`: {stdout:?}"
    );
    assert_eq!(words[0], "PASS");
    assert_eq!(words[1], golden_digest());
}

const SWARM_SCENARIO: &str = r#"
name = "swarm-arrivals"
duration = "40m"
settle = "20m"

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "1m"
count = 12
spread = "30s"
profile = "small"
runtime = { min = "30s", max = "3m" }

[[jobs]]
kind = "poisson"
from = "0s"
until = "35m"
per_minute = 1.5
profile = "small"
runtime = { min = "1m", max = "5m" }

[swarm]
enabled = SWARM
mean_interval = "2m"
"#;

#[test]
fn enabling_swarm_leaves_job_arrivals_unchanged() {
    let quiet = scenario(&SWARM_SCENARIO.replace("SWARM", "false"));
    let swarm = scenario(&SWARM_SCENARIO.replace("SWARM", "true"));
    for seed in 1..=8 {
        let without =
            World::new(quiet.clone(), common::settings(&quiet, seed)).expect("the world builds");
        let with =
            World::new(swarm.clone(), common::settings(&swarm, seed)).expect("the world builds");
        assert!(
            without.planned_faults().is_empty(),
            "no swarm, no faults (seed {seed})"
        );
        assert!(
            !with.planned_faults().is_empty(),
            "the swarm must draw faults for the comparison to mean anything (seed {seed})"
        );
        assert!(
            without.planned_arrivals().len() > 12,
            "both generators plan arrivals (seed {seed})"
        );
        assert_eq!(
            without.planned_arrivals(),
            with.planned_arrivals(),
            "seed {seed}: swarm moved job arrivals or runtimes"
        );
    }
}

#[test]
fn the_trace_file_has_one_json_object_per_record() {
    let out = fresh_dir("determinism-trace");
    let output = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["sim", GOLDEN_SCENARIO, "--quiet", "--trace", "--out"])
        .arg(&out)
        .output()
        .expect("the elasticsim binary runs");
    assert_eq!(output.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.split_whitespace().nth(1),
        Some(golden_digest().as_str()),
        "writing the trace must not change the run"
    );
    let text = std::fs::read_to_string(out.join("trace.jsonl")).expect("trace.jsonl exists");
    let mut previous_ms = 0;
    let mut kinds = std::collections::BTreeSet::new();
    let lines: Vec<&str> = text.lines().collect();
    for (number, line) in lines.iter().enumerate() {
        let value: serde_json::Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("line {} is not JSON ({e}): {line}", number + 1));
        let t_ms = value["t_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("line {}: no integer t_ms: {line}", number + 1));
        assert!(
            value["node"].is_string(),
            "line {}: no node: {line}",
            number + 1
        );
        let kind = value["kind"]
            .as_str()
            .unwrap_or_else(|| panic!("line {}: no kind: {line}", number + 1));
        assert!(t_ms >= previous_ms, "line {}: time went back", number + 1);
        previous_ms = t_ms;
        kinds.insert(kind.to_owned());
    }
    // Every record but the (unfingerprinted) timeline samples is in the trace.
    let golden = scenario_file(GOLDEN_SCENARIO);
    let recording = record_run(&golden, golden.seed);
    let records = recording
        .events
        .iter()
        .filter(|e| !matches!(e.record, Record::Sample))
        .count();
    assert_eq!(lines.len(), records);
    for kind in [
        "server_started",
        "job_scheduled",
        "pod_created",
        "run_ended",
    ] {
        assert!(kinds.contains(kind), "the trace has no {kind}");
    }
}
