//! Determinism: a run is a pure function of its scenario and seed.
//!
//! The same scenario and seed give the same records and fingerprint; another seed gives
//! another fingerprint; a checked-in golden fingerprint and the pins of
//! `tests/golden/pins.txt` (the day, leader-chaos, an exploration sweep) hold the whole
//! simulation still; swarm faults never move job arrivals; `--trace` writes one JSON object
//! per record.

use crate::common;

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
        "the simulation changed: if on purpose, regenerate it and every pin with `{BLESS}`"
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

// ---------------------------------------------------------------------------------------------
// Pinned fingerprints: the golden run above, and the runs `tests/golden/pins.txt` lists.

const PINS: &str = "tests/golden/pins.txt";
const BLESS: &str = "ELASTICSIM_BLESS=1 cargo test --test claims determinism::pinned";

/// One line of `tests/golden/pins.txt`: a scenario run with one seed under its own policy or
/// variant, where it is checked (`test`: here; `release`: by `.ci/run`, too slow in a debug
/// build), and the fingerprint it must give.
struct Pin {
    scenario: String,
    seed: u64,
    checked: String,
    fingerprint: String,
}

/// The file's comment lines and its pins.
fn read_pins() -> (Vec<String>, Vec<Pin>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(PINS);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let (comments, lines): (Vec<&str>, Vec<&str>) =
        text.lines().partition(|line| line.starts_with('#'));
    let pins = lines
        .iter()
        .enumerate()
        .map(
            |(index, line)| match line.split_whitespace().collect::<Vec<_>>()[..] {
                [scenario, seed, checked, fingerprint]
                    if ["test", "release"].contains(&checked) && fingerprint.len() == 64 =>
                {
                    Pin {
                        scenario: scenario.to_owned(),
                        seed: seed
                            .parse()
                            .unwrap_or_else(|e| panic!("{PINS}: seed {seed}: {e}")),
                        checked: checked.to_owned(),
                        fingerprint: fingerprint.to_owned(),
                    }
                }
                _ => panic!(
                    "{PINS}: pin {}: `SCENARIO SEED test|release DIGEST`: {line:?}",
                    index + 1
                ),
            },
        )
        .collect();
    (comments.into_iter().map(str::to_owned).collect(), pins)
}

fn fingerprint_of(scenario: &str, seed: u64) -> String {
    run_outcome(&scenario_file(scenario), seed, None)
        .info
        .fingerprint
}

/// Every pin checked here gives its fingerprint. With `ELASTICSIM_BLESS=1` every pin (the
/// release-only ones too, slowly) and the golden digest are computed and written instead:
/// the one command to run after a change to the model that is meant to move them.
#[test]
fn pinned_fingerprints_hold() {
    let (comments, mut pins) = read_pins();
    assert!(pins.iter().any(|pin| pin.checked == "release"), "{PINS}");
    if std::env::var_os("ELASTICSIM_BLESS").is_some_and(|value| value == "1") {
        for pin in &mut pins {
            pin.fingerprint = fingerprint_of(&pin.scenario, pin.seed);
        }
        let mut text = comments.join("\n") + "\n";
        for pin in &pins {
            let Pin {
                scenario,
                seed,
                checked,
                fingerprint,
            } = pin;
            text += &format!("{scenario:<32} {seed:>3} {checked:<7} {fingerprint}\n");
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        std::fs::write(root.join(PINS), text).expect("pins written");
        let golden = scenario_file(GOLDEN_SCENARIO);
        let digest = fingerprint_of(GOLDEN_SCENARIO, golden.seed) + "\n";
        std::fs::write(root.join(GOLDEN_FINGERPRINT), digest).expect("golden written");
        return;
    }
    let moved: Vec<String> = pins
        .iter()
        .filter(|pin| pin.checked == "test")
        .filter_map(|pin| {
            let now = fingerprint_of(&pin.scenario, pin.seed);
            let Pin {
                scenario,
                seed,
                fingerprint,
                ..
            } = pin;
            (now != *fingerprint).then(|| format!("{scenario} seed {seed}: {fingerprint} -> {now}"))
        })
        .collect();
    assert!(
        moved.is_empty(),
        "pinned fingerprints moved:\n{}\nthe simulation changed: if on purpose, regenerate every \
         pin with `{BLESS}` and say so in the commit message",
        moved.join("\n")
    );
}
