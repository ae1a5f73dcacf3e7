//! The binary's contract (`docs/cli.md`): exit codes, error messages and report files.
//!
//! 0 every invariant held, 1 one was violated, 2 bad input (naming file, line, column and
//! key), never 3 or a panic's 101 for anything a user can type.

use crate::common;

use common::fresh_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const REPORT_FILES: [&str; 6] = [
    "summary.json",
    "summary.md",
    "jobs.csv",
    "pods.csv",
    "timeline.csv",
    "faults.csv",
];

fn repository(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

/// Run the binary in `dir` with `args`.
fn elasticsim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the elasticsim binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit code 2 with a message, never a panic or an internal error.
fn assert_bad_input(output: &Output, context: &str) {
    let text = stderr(output);
    assert_eq!(
        output.status.code(),
        Some(2),
        "{context}: expected exit 2\n{text}"
    );
    assert!(
        !text.contains("internal error") && !text.contains("panicked"),
        "{context}: bad input must not look like a harness bug\n{text}"
    );
    assert!(!text.trim().is_empty(), "{context}: no message");
}

/// Every `*.tmp` file under `dir`, recursively.
fn temporary_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(folder) = pending.pop() {
        for entry in std::fs::read_dir(&folder).expect("a readable folder") {
            let path = entry.expect("a readable entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.to_string_lossy().ends_with(".tmp") {
                found.push(path);
            }
        }
    }
    found
}

const PROFILE: &str = r#"
[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"
"#;

/// (file stem, content, `line:column` of the error, the key the message must name).
type Malformed = (&'static str, String, &'static str, &'static str);

/// Every malformed scenario: broken syntax and types, then values out of their domain.
fn malformed() -> Vec<Malformed> {
    let mut all = malformed_syntax_and_types();
    all.extend(malformed_values());
    all
}

fn malformed_syntax_and_types() -> Vec<Malformed> {
    vec![
        ("syntax", "name = \"x\"\nseed = \n".into(), "2:8", "seed"),
        (
            "syntax-in-table",
            format!("name = \"x\"\n{PROFILE}[[jobs]]\nkind = \"burst\"\ncount = = 3\n"),
            "10:9",
            "jobs[0].count",
        ),
        (
            "unknown-key",
            "name = \"x\"\nbogus = 1\n".into(),
            "2:1",
            "bogus",
        ),
        (
            "wrong-type",
            "name = \"x\"\nseed = \"seven\"\n".into(),
            "2:8",
            "seed",
        ),
        (
            "bad-enum",
            "name = \"x\"\n[plugin]\npolicy = \"nope\"\n".into(),
            "3:10",
            "plugin.policy",
        ),
    ]
}

fn malformed_values() -> Vec<Malformed> {
    vec![
        (
            "bad-duration",
            "name = \"x\"\nduration = \"ten minutes\"\n".into(),
            "2:12",
            "duration",
        ),
        (
            "min-over-max",
            "name = \"x\"\n[cluster]\npod_startup = { min = \"20s\", max = \"2s\" }\n".into(),
            "3:23",
            "cluster.pod_startup",
        ),
        (
            "negative-count",
            "name = \"x\"\n[cluster]\nnodes = -3\n".into(),
            "3:9",
            "cluster.nodes",
        ),
        (
            "unknown-profile",
            format!(
                "name = \"x\"\n[[jobs]]\nkind = \"single\"\nat = \"1m\"\nprofile = \"large\"\n\
                 runtime = \"1m\"\n{PROFILE}"
            ),
            "5:11",
            "jobs[0].profile",
        ),
        (
            "cluster-edit-zero-limit",
            "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"cluster_profile_edit\"\n\
             set = { pending_pods_count = 0 }\n"
                .into(),
            "5:30",
            "faults[0].set.pending_pods_count",
        ),
        (
            "cluster-edit-unknown-key",
            "name = \"x\"\n[[faults]]\nat = \"1m\"\nkind = \"cluster_profile_edit\"\n\
             set = { namespace = \"other\" }\n"
                .into(),
            "5:9",
            "faults[0].set.namespace",
        ),
    ]
}

#[test]
fn each_malformed_scenario_exits_2_naming_file_line_column_and_key() {
    let dir = fresh_dir("cli-malformed");
    for (stem, content, position, key) in malformed() {
        let name = format!("{stem}.toml");
        std::fs::write(dir.join(&name), content).expect("a writable scratch folder");
        for command in ["check", "sim"] {
            let mut args = vec![command, name.as_str()];
            if command == "sim" {
                args.push("--quiet");
            }
            let output = elasticsim(&dir, &args);
            let context = format!("{command} {name}");
            assert_bad_input(&output, &context);
            let text = stderr(&output);
            assert!(
                text.contains(&format!("{name}:{position}")),
                "{context}: no `file:line:column` ({name}:{position})\n{text}"
            );
            assert!(
                text.contains(key),
                "{context}: the key {key} is not named\n{text}"
            );
        }
    }
    assert!(
        !dir.join("reports").exists(),
        "a bad scenario writes no report"
    );
}

/// Deterministic garbage: `count` bytes from a linear congruential generator.
fn garbage(seed: u64, count: usize, printable: bool) -> Vec<u8> {
    let mut state = seed;
    (0..count)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let byte = (state >> 56) as u8;
            if printable { b' ' + byte % 95 } else { byte }
        })
        .collect()
}

#[test]
fn random_bytes_exit_2_with_a_position_never_a_panic() {
    let dir = fresh_dir("cli-random-bytes");
    for seed in 0..6 {
        let name = format!("random-{seed}.toml");
        std::fs::write(dir.join(&name), garbage(seed, 400, seed % 2 == 0))
            .expect("a writable scratch folder");
        let output = elasticsim(&dir, &["check", &name]);
        assert_bad_input(&output, &name);
        let text = stderr(&output);
        let position = text
            .split(&format!("{name}:"))
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: the file is not named\n{text}"));
        let mut numbers = position.splitn(3, ':');
        let line = numbers.next().and_then(|n| n.parse::<u32>().ok());
        let column = numbers.next().and_then(|n| n.parse::<u32>().ok());
        assert!(
            line.is_some() && column.is_some(),
            "{name}: no line:column\n{text}"
        );
    }
}

#[test]
fn a_missing_scenario_file_exits_2_naming_it() {
    let dir = fresh_dir("cli-missing");
    for command in ["check", "sim"] {
        let output = elasticsim(&dir, &[command, "no-such-scenario.toml"]);
        assert_bad_input(&output, command);
        assert!(stderr(&output).contains("no-such-scenario.toml"));
    }
}

#[test]
fn bad_flags_exit_2() {
    let dir = fresh_dir("cli-flags");
    let burst = repository("scenarios/burst.toml");
    let burst = burst.to_str().expect("a UTF-8 repository path");
    let cases: [&[&str]; 5] = [
        &["sim", burst, "--policy", "nope"],
        &["sim", burst, "--seed", "x"],
        &["sim", burst, "--seed", "-1"],
        &["sim", burst, "--no-such-flag"],
        &["no-such-command"],
    ];
    for args in cases {
        let output = elasticsim(&dir, args);
        assert_bad_input(&output, &args.join(" "));
    }
    assert!(!dir.join("reports").exists(), "a bad flag runs nothing");
}

#[test]
fn a_passing_scenario_exits_0_and_writes_every_report_file_in_out() {
    let dir = fresh_dir("cli-pass");
    let out = dir.join("my-report");
    let golden = repository("tests/golden/small.toml");
    let output = elasticsim(
        &dir,
        &[
            "sim",
            golden.to_str().expect("a UTF-8 repository path"),
            "--trace",
            "--out",
            "my-report",
        ],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("PASS"), "{stdout}");
    for file in REPORT_FILES.iter().chain(&["trace.jsonl"]) {
        let size = std::fs::metadata(out.join(file))
            .unwrap_or_else(|e| panic!("{file} missing from --out: {e}"))
            .len();
        assert!(size > 0, "{file} is empty");
    }
    assert!(
        !dir.join("reports").exists(),
        "with --out nothing goes to the default folder"
    );
    assert_eq!(temporary_files(&dir), Vec::<PathBuf>::new());
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(out.join("summary.json")).expect("summary.json is readable"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["verdict"], "pass");
    assert_eq!(summary["scenario"], "golden-small");
    assert_eq!(summary["seed"], 11);
    assert_eq!(summary["policy"], "safe");
    let jobs = std::fs::read_to_string(out.join("jobs.csv")).expect("jobs.csv is readable");
    assert_eq!(
        jobs.lines().next(),
        Some(
            "job_id,logical_job,profile,environment,scheduled_at_s,assigned_at_s,\
             completed_at_s,wait_s,agent_id,pod_reused,outcome"
        )
    );
    assert_eq!(
        jobs.lines().count() as u64,
        1 + summary["metrics"]["job_instances"]
            .as_u64()
            .expect("job_instances is a count"),
        "one row per job instance"
    );
}

#[test]
fn without_out_the_report_goes_to_the_default_folder() {
    let dir = fresh_dir("cli-default-out");
    let golden = repository("tests/golden/small.toml");
    let output = elasticsim(
        &dir,
        &[
            "sim",
            golden.to_str().expect("a UTF-8 repository path"),
            "--seed",
            "3",
            "--policy",
            "upstream",
            "--quiet",
        ],
    );
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        stderr(&output)
    );
    let report = dir.join("reports/golden-small/upstream/seed-3");
    for file in REPORT_FILES {
        assert!(
            report.join(file).is_file(),
            "{file} missing from {report:?}"
        );
    }
    assert_eq!(temporary_files(&dir), Vec::<PathBuf>::new());
}

#[test]
fn a_failing_scenario_exits_1_and_still_writes_its_report() {
    let dir = fresh_dir("cli-fail");
    let burst = std::fs::read_to_string(repository("scenarios/burst.toml"))
        .expect("burst.toml is readable");
    assert!(burst.contains("max_job_wait = \"8m\""));
    let strict = burst.replace("max_job_wait = \"8m\"", "max_job_wait = \"1s\"");
    std::fs::write(dir.join("strict.toml"), strict).expect("a writable scratch folder");
    let output = elasticsim(&dir, &["sim", "strict.toml", "--out", "out"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("job-wait-bound"), "{stdout}");
    for file in REPORT_FILES {
        assert!(dir.join("out").join(file).is_file(), "{file} missing");
    }
    let summary: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.join("out/summary.json")).expect("summary.json is readable"),
    )
    .expect("summary.json is JSON");
    assert_eq!(summary["verdict"], "fail");
    let violations = summary["violations"]
        .as_array()
        .expect("violations is a list");
    assert!(violations.iter().any(|v| v["id"] == "job-wait-bound"));
    assert_eq!(temporary_files(&dir), Vec::<PathBuf>::new());
}

#[test]
fn check_exits_0_for_valid_scenarios_and_2_if_any_is_invalid() {
    let dir = fresh_dir("cli-check");
    let mut valid: Vec<String> = std::fs::read_dir(repository("scenarios"))
        .expect("scenarios/ is readable")
        .map(|entry| entry.expect("a readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        // The nightly plan lives beside the scenarios but is not one.
        .filter(|path| !path.ends_with("nightly.toml"))
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    valid.sort();
    valid.push(
        repository("tests/golden/small.toml")
            .to_string_lossy()
            .into_owned(),
    );
    let args: Vec<&str> = std::iter::once("check")
        .chain(valid.iter().map(String::as_str))
        .collect();
    let output = elasticsim(&dir, &args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ok ")).count(),
        valid.len(),
        "{stdout}"
    );
    std::fs::write(dir.join("bad.toml"), "name = \"x\"\nbogus = 1\n")
        .expect("a writable scratch folder");
    let output = elasticsim(&dir, &["check", &valid[0], "bad.toml"]);
    assert_bad_input(&output, "check valid bad");
    assert!(stderr(&output).contains("bad.toml:2:1"));
    assert!(!dir.join("reports").exists(), "check runs nothing");
}
