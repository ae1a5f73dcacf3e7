//! Ablations, the hunt and interrupted sweeps, through the binary (`docs/cli.md`).

use crate::common;

use common::fresh_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repository(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn elasticsim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the elasticsim binary runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// The fingerprint `sim --quiet` prints.
fn quiet_fingerprint(dir: &Path, extra: &[&str]) -> String {
    let golden = repository("tests/golden/small.toml");
    let mut args = vec![
        "sim",
        golden.to_str().expect("utf-8"),
        "--quiet",
        "--out",
        "out",
    ];
    args.extend_from_slice(extra);
    let output = elasticsim(dir, &args);
    let printed = text(&output);
    printed
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no fingerprint in {printed}"))
        .to_owned()
}

#[test]
fn an_ablated_run_has_another_fingerprint_and_a_plain_run_keeps_the_golden() {
    let dir = fresh_dir("hunt-ablate-fingerprint");
    let golden = std::fs::read_to_string(repository("tests/golden/small.fingerprint"))
        .expect("the golden digest is checked in");
    let plain = quiet_fingerprint(&dir, &[]);
    assert_eq!(
        plain,
        golden.trim(),
        "a run without --ablate keeps the golden"
    );
    let ablated = quiet_fingerprint(&dir, &["--ablate", "reservations"]);
    assert_ne!(ablated, plain);
    let both = quiet_fingerprint(&dir, &["--ablate", "limits,reservations"]);
    assert_ne!(both, ablated);
    let summary = std::fs::read_to_string(dir.join("out/summary.json")).expect("summary.json");
    assert!(summary.contains("\"ablations\""), "{summary}");
}

#[test]
fn an_unknown_ablation_is_bad_input_listing_the_valid_names() {
    let dir = fresh_dir("hunt-ablate-unknown");
    let golden = repository("tests/golden/small.toml");
    let output = elasticsim(
        &dir,
        &["sim", golden.to_str().expect("utf-8"), "--ablate", "nope"],
    );
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    let message = text(&output);
    for name in ["reservations", "limits", "term-check", "re-enter"] {
        assert!(message.contains(name), "{message}");
    }
    let listed = elasticsim(&dir, &["ablations"]);
    assert_eq!(listed.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&listed.stdout).lines().count(), 17);
}

/// Leader ablations of `fixed` bring back the hazard the fix closes, on the scenario that
/// shows that hazard.
#[test]
fn fixed_ablations_bring_back_their_hazards() {
    let dir = fresh_dir("hunt-fixed-ablations");
    for (scenario, seed, ablation) in [
        ("scenarios/leader-outage.toml", "1", "re-enter"),
        ("scenarios/explore/leader.toml", "91", "term-check"),
        (
            "scenarios/leader-blackhole.toml",
            "1",
            "stop-before-release",
        ),
        (
            "scenarios/explore/leader.toml",
            "94",
            "release-holder-check",
        ),
        ("scenarios/explore/leader.toml", "80", "rd-acquire-bound"),
    ] {
        let file = repository(scenario);
        let file = file.to_str().expect("utf-8");
        let plain = ["sim", file, "--seed", seed, "--variant", "fixed", "--quiet"];
        let plain = elasticsim(&dir, &plain);
        assert_eq!(plain.status.code(), Some(0), "{scenario}: {}", text(&plain));
        let ablated = elasticsim(
            &dir,
            &[
                "sim",
                file,
                "--seed",
                seed,
                "--variant",
                "fixed",
                "--quiet",
                "--ablate",
                ablation,
            ],
        );
        assert_eq!(
            ablated.status.code(),
            Some(1),
            "{scenario} seed {seed} without {ablation}: {}",
            text(&ablated)
        );
    }
}

fn hunt_json(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("hunt.json")).expect("hunt.json written");
    serde_json::from_str(&text).expect("hunt.json is JSON")
}

fn hunt(dir: &Path, args: &[&str]) -> serde_json::Value {
    let elastic = repository("scenarios/explore/elastic.toml");
    let leader = repository("scenarios/explore/leader.toml");
    let mut all = vec![
        "hunt",
        elastic.to_str().expect("utf-8"),
        leader.to_str().expect("utf-8"),
        "--out",
        "hunt",
        "--shrink-time",
        "3s",
    ];
    all.extend_from_slice(args);
    let output = elasticsim(dir, &all);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    hunt_json(&dir.join("hunt"))
}

#[test]
fn a_five_second_hunt_kills_pr355_with_a_repro_that_fails_alone() {
    let dir = fresh_dir("hunt-pr355");
    let json = hunt(&dir, &["--targets", "pr355", "--budget", "5s", "--uniform"]);
    let row = &json["targets"][0];
    assert_eq!(row["target"], "pr355");
    assert_eq!(row["mode"], "uniform");
    assert_eq!(row["killed"], true, "{json}");
    assert!(row["seeds_to_kill"].as_u64().is_some_and(|n| n >= 1));
    assert!(row["invariant"].is_string());
    assert_eq!(row["repro_fails"], true);
    let repro = dir.join(row["repro"].as_str().expect("a repro path"));
    let alone = elasticsim(&dir, &["sim", repro.to_str().expect("utf-8"), "--quiet"]);
    assert_eq!(alone.status.code(), Some(1), "{}", text(&alone));
}

/// hunt.json without its wall-clock fields.
fn without_wall_times(mut json: serde_json::Value) -> serde_json::Value {
    for row in json["targets"].as_array_mut().expect("targets[]") {
        let row = row.as_object_mut().expect("a target row");
        row.remove("wall_s");
        row.remove("wall_s_to_kill");
    }
    json
}

#[test]
fn a_guided_hunt_is_reproducible_from_its_master_seed() {
    let dir = fresh_dir("hunt-guided");
    let args = [
        "--targets",
        "pr355,agentk-v1",
        "--budget",
        "60s",
        "--guided",
        "--master-seed",
        "7",
    ];
    let first = without_wall_times(hunt(&dir, &args));
    let second = without_wall_times(hunt(&dir, &args));
    assert_eq!(first, second);
    for row in first["targets"].as_array().expect("targets[]") {
        assert_eq!(row["mode"], "guided");
        assert_eq!(row["killed"], true, "{row}");
    }
}

/// Two jobs on an idle cluster, no faults: nothing in it can fail under `safe`.
const QUIET: &str = r#"
name = "quiet"
seed = 1
duration = "5m"
settle = "10m"

[cluster]
nodes = 2
pods_per_node = 3

[plugin]
policy = "safe"
enable_agent_reuse = true

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "1m"
count = 2
spread = "10s"
profile = "small"
runtime = { min = "20s", max = "1m" }
"#;

#[test]
fn a_survived_target_is_reported_with_the_seeds_tried() {
    let dir = fresh_dir("hunt-survived");
    let quiet = dir.join("quiet.toml");
    std::fs::write(&quiet, QUIET).expect("write quiet.toml");
    let args = [
        "hunt",
        quiet.to_str().expect("utf-8"),
        "--out",
        "hunt",
        "--targets",
        "safe",
        "--budget",
        "1s",
        "--uniform",
    ];
    let output = elasticsim(&dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let json = hunt_json(&dir.join("hunt"));
    let row = &json["targets"][0];
    assert_eq!(row["target"], "safe");
    assert_eq!(row["killed"], false, "{json}");
    assert!(row["seeds_to_kill"].is_null());
    assert!(row["repro"].is_null());
    assert!(row["seeds_tried"].as_u64().is_some_and(|n| n >= 8));
    let markdown = std::fs::read_to_string(dir.join("hunt/hunt.md")).expect("hunt.md");
    assert!(markdown.contains("survived"), "{markdown}");
}

/// The data rows of a sweep.csv by seed.
fn rows(path: &Path) -> Vec<(u64, String)> {
    let text = std::fs::read_to_string(path).expect("sweep.csv written");
    text.lines()
        .skip(1)
        .map(|line| {
            let seed = line.split(',').next().and_then(|s| s.parse().ok());
            (seed.expect("a seed column"), line.to_owned())
        })
        .collect()
}

#[cfg(unix)]
#[test]
fn sigint_during_a_sweep_keeps_the_rows_of_the_seeds_done() {
    let dir = fresh_dir("hunt-sigint");
    let chaos = repository("scenarios/chaos.toml");
    let chaos = chaos.to_str().expect("utf-8");
    let child = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(&dir)
        .args([
            "sim",
            chaos,
            "--seeds",
            "5000",
            "--threads",
            "1",
            "--out",
            "cut",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let sweep = dir.join("cut/sweep.csv");
    // Let a few seeds finish (failing seeds would write folders; chaos passes under safe).
    common::let_run(3);
    assert!(!sweep.exists(), "no sweep.csv before the sweep ends");
    let output = common::interrupt(child);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let cut = rows(&sweep);
    assert!(!cut.is_empty() && cut.len() < 5000, "{} rows", cut.len());
    let markdown = std::fs::read_to_string(dir.join("cut/sweep.md")).expect("sweep.md");
    assert!(markdown.contains("interrupted"), "{markdown}");
    let seeds: Vec<u64> = cut.iter().map(|(seed, _)| *seed).collect();
    let last = seeds.iter().max().expect("rows");
    let range = format!("1..{}", last + 1);
    let whole = elasticsim(
        &dir,
        &[
            "sim",
            chaos,
            "--seeds",
            &range,
            "--threads",
            "2",
            "--out",
            "whole",
        ],
    );
    assert_eq!(whole.status.code(), Some(0), "{}", text(&whole));
    let whole = rows(&dir.join("whole/sweep.csv"));
    for (seed, line) in &cut {
        let same = whole.iter().find(|(s, _)| s == seed).map(|(_, l)| l);
        assert_eq!(same, Some(line), "seed {seed}");
    }
}

/// The nightly hunts the designs this project proposes with `--fail-on-find`: a find there is
/// a defect, so the hunt fails (exit 1), after shrinking and reporting it like any other.
#[test]
fn a_find_in_our_own_design_fails_the_hunt_with_fail_on_find() {
    let dir = fresh_dir("hunt-own-find");
    let strict = dir.join("strict.toml");
    std::fs::write(&strict, common::tiny_scenario_toml("strict", "1s")).expect("write");
    let args = |fail: bool| {
        let mut args = vec![
            "hunt",
            strict.to_str().expect("utf-8"),
            "--out",
            "hunt",
            "--targets",
            "safe",
            "--budget",
            "5s",
            "--uniform",
            "--shrink-time",
            "2s",
        ];
        if fail {
            args.push("--fail-on-find");
        }
        args
    };
    let output = elasticsim(&dir, &args(false));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let output = elasticsim(&dir, &args(true));
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let json = hunt_json(&dir.join("hunt"));
    let row = &json["targets"][0];
    assert_eq!(row["target"], "safe");
    assert_eq!(row["killed"], true, "{json}");
    assert!(row["repro"].is_string(), "{json}");
}
