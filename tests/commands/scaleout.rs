//! Scale-out end to end, through the binary: shards of a sweep, a comparison and a nightly,
//! merged, write the same files as the unsharded run (byte for byte, but for wall-clock
//! fields named in `without_wall_clock`); `--shard auto/N` reads `JOB_COMPLETION_INDEX`; bad
//! shard values and incomplete or repeated shard sets are input errors (exit 2) naming what
//! is wrong. And the deployment files agree with each other and with the documented commands:
//! the Kubernetes Indexed Job, the Dockerfile and the matrix workflow.

mod deploy;

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `burst.toml` with a job-wait bound that a few of seeds 1..=40 exceed (5 at 47 s; beyond the
/// load budget, `docs/invariants.md`, which since it counts a limit full at any moment of a
/// create-agent covers every seed at 50 s), so the
/// merged tables have passing and failing seeds, and failing seeds have report folders.
fn tight_burst() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/burst.toml");
    let text = fs::read_to_string(path).expect("the shipped burst scenario exists");
    assert!(
        text.contains("max_job_wait = \"8m\""),
        "burst.toml changed its bound"
    );
    text.replace("max_job_wait = \"8m\"", "max_job_wait = \"47s\"")
}

/// A fresh scratch folder holding `burst.toml` (the tight one).
fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("elasticsim-scaleout-{}-{name}", std::process::id()));
    // A leftover of an earlier process with the same id may exist; start empty.
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("the temp folder is writable");
    fs::write(dir.join("burst.toml"), tight_burst()).expect("writable");
    dir
}

/// Run the binary in `dir` with `JOB_COMPLETION_INDEX` set to `index`, or unset.
fn elasticsim_with_index(dir: &Path, arguments: &[&str], index: Option<&str>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_elasticsim"));
    command.args(arguments).current_dir(dir);
    match index {
        Some(index) => command.env("JOB_COMPLETION_INDEX", index),
        None => command.env_remove("JOB_COMPLETION_INDEX"),
    };
    command.output().expect("the binary runs")
}

fn elasticsim(dir: &Path, arguments: &[&str]) -> Output {
    elasticsim_with_index(dir, arguments, None)
}

fn code(output: &Output) -> i32 {
    output.status.code().expect("the binary exits normally")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Assert that two files hold the same bytes.
fn assert_same_file(whole: &Path, merged: &Path) {
    let (a, b) = (fs::read(whole), fs::read(merged));
    let (a, b) = (
        a.unwrap_or_else(|e| panic!("{}: {e}", whole.display())),
        b.unwrap_or_else(|e| panic!("{}: {e}", merged.display())),
    );
    assert!(
        a == b,
        "{} and {} differ:\n{}\n---\n{}",
        whole.display(),
        merged.display(),
        String::from_utf8_lossy(&a),
        String::from_utf8_lossy(&b)
    );
}

/// The lines of a sweep or compare printout without its last two (timing and report path),
/// which name the run's own wall time and folder.
fn table_lines(output: &Output) -> Vec<String> {
    let text = stdout(output);
    let lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[..lines.len().saturating_sub(2)].to_vec()
}

/// `(seed, verdict, fingerprint)` of every row of a `sweep.csv`.
fn sweep_rows(path: &Path) -> Vec<(u64, String, String)> {
    read(path)
        .lines()
        .skip(1)
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            let seed = cells[0].parse().expect("the seed column is a number");
            (seed, cells[1].to_owned(), cells[3].to_owned())
        })
        .collect()
}

/// The `shard.json` of a shard folder.
fn shard_json(folder: &Path) -> serde_json::Value {
    serde_json::from_str(&read(&folder.join("shard.json"))).expect("shard.json is JSON")
}

#[test]
fn four_shards_of_a_40_seed_sweep_merge_into_the_unsharded_sweep() {
    let dir = scratch("sweep");
    let sweep = ["sim", "burst.toml", "--seeds", "40"];
    let whole = elasticsim(
        &dir,
        &[&sweep[..], &["--threads", "2", "--out", "whole"]].concat(),
    );
    let mut shard_rows = Vec::new();
    for index in 0..4u64 {
        // Shards on different thread counts: the rule and the runs must not care.
        let threads = (1 + index % 2).to_string();
        let shard = format!("{index}/4");
        let arguments = ["--shard", &shard, "--threads", &threads, "--out", "shards"];
        let output = elasticsim(&dir, &[&sweep[..], &arguments].concat());
        assert!(matches!(code(&output), 0 | 1), "{}", stderr(&output));
        let folder = dir.join(format!("shards/shard-{index}-of-4"));
        let rows = sweep_rows(&folder.join("sweep.csv"));
        let seeds: Vec<u64> = rows.iter().map(|row| row.0).collect();
        let expected: Vec<u64> = (1..=40).filter(|seed| (seed - 1) % 4 == index).collect();
        assert_eq!(
            seeds, expected,
            "shard {index} runs cells i with i mod 4 = {index}"
        );
        assert_eq!(shard_json(&folder)["shard"]["index"], index);
        shard_rows.extend(rows);
    }
    let merged = elasticsim(&dir, &["merge", "shards", "--out", "merged"]);
    assert_eq!(code(&merged), code(&whole), "{}", stderr(&merged));
    assert_eq!(code(&whole), 1, "the tight bound fails some seeds");
    let whole_rows = sweep_rows(&dir.join("whole/sweep.csv"));
    shard_rows.sort();
    assert_eq!(shard_rows, whole_rows, "per-seed verdicts and fingerprints");
    let failing: Vec<u64> = whole_rows
        .iter()
        .filter(|row| row.1 == "fail")
        .map(|row| row.0)
        .collect();
    assert!(failing.len() > 1 && failing.len() < 40, "{failing:?}");
    for file in ["sweep.csv", "sweep.md"] {
        assert_same_file(
            &dir.join("whole").join(file),
            &dir.join("merged").join(file),
        );
    }
    assert_eq!(table_lines(&merged), table_lines(&whole));
    // Failing seeds' report folders are copied into the merged folder, where sweep.md's
    // readers look for them; passing seeds have none, as in the unsharded sweep.
    for (seed, verdict, fingerprint) in &whole_rows {
        let folder = dir.join(format!("merged/seed-{seed}"));
        assert_eq!(folder.is_dir(), verdict == "fail", "seed {seed}");
        if verdict == "fail" {
            let summary: serde_json::Value =
                serde_json::from_str(&read(&folder.join("summary.json"))).expect("JSON");
            assert_eq!(summary["fingerprint"], fingerprint.as_str(), "seed {seed}");
            assert!(folder.join("summary.md").is_file() && folder.join("jobs.csv").is_file());
        }
    }
}

#[test]
fn compare_shards_over_policy_and_seed_cells_merge_into_the_unsharded_comparison() {
    let dir = scratch("compare");
    let compare = [
        "compare",
        "burst.toml",
        "--policies",
        "upstream,safe",
        "--seeds",
        "12",
    ];
    let whole = elasticsim(
        &dir,
        &[&compare[..], &["--threads", "2", "--out", "whole"]].concat(),
    );
    // 24 cells over 5 shards: shards hold 5 or 4 cells, each spanning both policies.
    for index in 0..5 {
        let shard = format!("{index}/5");
        let arguments = ["--shard", &shard, "--threads", "1", "--out", "shards"];
        let output = elasticsim(&dir, &[&compare[..], &arguments].concat());
        assert!(matches!(code(&output), 0 | 1), "{}", stderr(&output));
    }
    let first = shard_json(&dir.join("shards/shard-0-of-5"));
    let positions: Vec<u64> = first["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["position"].as_u64().expect("a position"))
        .collect();
    assert_eq!(positions, [0, 5, 10, 15, 20]);
    assert_eq!(
        first["cells"][15]["case"], "safe",
        "cells run policy by policy"
    );
    assert_eq!(first["cells"][15]["seed"], 4);
    let merged = elasticsim(&dir, &["merge", "shards", "--out", "merged"]);
    assert_eq!(code(&merged), code(&whole), "{}", stderr(&merged));
    for file in ["compare.csv", "compare.md", "compare.svg"] {
        assert_same_file(
            &dir.join("whole").join(file),
            &dir.join("merged").join(file),
        );
    }
    assert_eq!(table_lines(&merged), table_lines(&whole));
}

/// A nightly folder: `calm` under two policies, `strict` failing every seed, a regression
/// entry, and `nightly.toml` with tolerances.
fn nightly_folder(dir: &Path) {
    let scenarios = dir.join("scenarios");
    fs::create_dir_all(scenarios.join("regressions")).expect("writable");
    let nightly_toml = "seeds = 4\nbaseline_seeds = 4\n[scenarios.calm]\n\
                        policies = [\"upstream\", \"safe\"]\n[metrics]\n\
                        wait_s_p95 = { worse = \"higher\", tolerance = 0.10 }\n\
                        pods_created = { worse = \"higher\", tolerance = 0.0 }\n";
    fs::write(scenarios.join("nightly.toml"), nightly_toml).expect("writable");
    fs::write(
        scenarios.join("calm.toml"),
        common::tiny_scenario_toml("calm", "5m"),
    )
    .expect("writable");
    fs::write(
        scenarios.join("strict.toml"),
        common::tiny_scenario_toml("strict", "1s"),
    )
    .expect("writable");
    let entry = "[[regression]]\nscenario = \"strict\"\nseed = 2\nverdict = \"fail\"\n";
    fs::write(scenarios.join("regressions/regressions.toml"), entry).expect("writable");
}

/// Blank out what measures the machine rather than the runs: JUnit `time="…"` attributes
/// and the nightly headline's "… of run time".
fn without_wall_clock(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let mut line = line.to_owned();
        for (open, close) in [(" time=\"", "\""), (" runs, ", " of run time")] {
            let mut from = 0;
            while let Some(start) = line[from..].find(open).map(|at| from + at + open.len()) {
                let end = start + line[start..].find(close).expect("the field is closed");
                line.replace_range(start..end, "*");
                from = start + 1;
            }
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn nightly(dir: &Path, extra: &[&str]) -> Output {
    let arguments = [
        "nightly",
        "--scenarios",
        "scenarios",
        "--baselines",
        "baselines",
    ];
    elasticsim(dir, &[&arguments[..], extra].concat())
}

/// A nightly folder with baselines, one of which claims calm/safe once needed fewer pods than
/// it can: every run of it fails on strict's violations and on that regression.
fn nightly_with_a_known_regression(dir: &Path) {
    nightly_folder(dir);
    let made = nightly(dir, &["--update-baseline", "--out", "baseline-run"]);
    assert_eq!(code(&made), 1, "strict fails: {}", stderr(&made));
    let baseline_path = dir.join("baselines/calm.json");
    let mut baseline: serde_json::Value =
        serde_json::from_str(&read(&baseline_path)).expect("the baseline was written");
    baseline["policies"]["safe"]["pods_created"] = serde_json::json!(0.5);
    fs::write(&baseline_path, baseline.to_string()).expect("writable");
}

#[test]
fn nightly_shards_merge_into_the_unsharded_junit_tables_and_index() {
    let dir = scratch("nightly");
    nightly_with_a_known_regression(&dir);
    let whole = nightly(&dir, &["--threads", "2", "--out", "whole"]);
    assert_eq!(code(&whole), 1, "{}", stderr(&whole));
    for index in 0..3 {
        let shard = format!("{index}/3");
        let output = nightly(
            &dir,
            &["--shard", &shard, "--threads", "1", "--out", "shards"],
        );
        assert!(matches!(code(&output), 0 | 1), "{}", stderr(&output));
        let page = read(&dir.join(format!("shards/shard-{index}-of-3/nightly.md")));
        assert!(
            page.contains("baselines are compared when the shards are merged"),
            "{page}"
        );
    }
    let merged = elasticsim(&dir, &["merge", "shards", "--out", "merged"]);
    assert_eq!(code(&merged), 1, "{}{}", stdout(&merged), stderr(&merged));
    assert!(
        stdout(&merged).contains("metric pods_created"),
        "{}",
        stdout(&merged)
    );
    for file in ["junit.xml", "nightly.md", "index.html"] {
        let (whole_text, merged_text) = (
            read(&dir.join("whole").join(file)),
            read(&dir.join("merged").join(file)),
        );
        assert_eq!(
            without_wall_clock(&merged_text),
            without_wall_clock(&whole_text),
            "{file}"
        );
    }
    let junit = read(&dir.join("merged/junit.xml"));
    let document = roxmltree::Document::parse(&junit).expect("junit.xml is XML");
    let failures = document
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .count();
    assert_eq!(
        failures, 2,
        "strict's violations and calm/safe's regression: {junit}"
    );
    for chart in ["calm/compare.svg", "strict/compare.svg"] {
        assert_same_file(
            &dir.join("whole").join(chart),
            &dir.join("merged").join(chart),
        );
    }
    for seed in 1..=4 {
        let report = format!("strict/upstream/seed-{seed}/summary.md");
        assert!(
            dir.join("merged").join(&report).is_file(),
            "{report} was not copied"
        );
    }
}

#[test]
fn a_sharded_nightly_cannot_update_the_baselines() {
    let dir = scratch("nightly-update");
    nightly_folder(&dir);
    let refused = nightly(&dir, &["--update-baseline", "--shard", "0/3"]);
    assert_eq!(code(&refused), 2);
    let printed = stderr(&refused);
    assert!(printed.contains("without --shard"), "{printed}");
    assert!(
        !dir.join("baselines").exists(),
        "no partial baseline is written"
    );
}

#[test]
fn auto_shard_takes_k_from_job_completion_index() {
    let dir = scratch("auto");
    let arguments = [
        "sim",
        "burst.toml",
        "--seeds",
        "8",
        "--shard",
        "auto/4",
        "--out",
        "auto",
    ];
    let output = elasticsim_with_index(&dir, &arguments, Some("2"));
    assert!(matches!(code(&output), 0 | 1), "{}", stderr(&output));
    let folder = dir.join("auto/shard-2-of-4");
    assert_eq!(
        shard_json(&folder)["shard"],
        serde_json::json!({"index": 2, "count": 4})
    );
    let seeds: Vec<u64> = sweep_rows(&folder.join("sweep.csv"))
        .iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(seeds, [3, 7]);
}

#[test]
fn bad_shard_values_exit_2_with_a_message_naming_the_problem() {
    let dir = scratch("bad");
    let cases: [(&str, Option<&str>, &str); 8] = [
        ("auto/4", None, "JOB_COMPLETION_INDEX is not set"),
        ("auto/4", Some("4"), "not below N = 4"),
        (
            "auto/4",
            Some("x"),
            "JOB_COMPLETION_INDEX=\"x\" is not a whole number",
        ),
        ("4/4", None, "not below N = 4"),
        ("0/0", None, "N must be at least 1"),
        ("two/4", None, "expected K/N"),
        ("1-4", None, "expected K/N"),
        ("1/four", None, "N is not a whole number"),
    ];
    for (shard, index, message) in cases {
        let arguments = [
            "sim",
            "burst.toml",
            "--seeds",
            "8",
            "--shard",
            shard,
            "--out",
            "bad",
        ];
        let output = elasticsim_with_index(&dir, &arguments, index);
        assert_eq!(code(&output), 2, "--shard {shard} with index {index:?}");
        let printed = stderr(&output);
        assert!(
            printed.contains("--shard") && printed.contains(message),
            "{printed}"
        );
    }
    assert!(!dir.join("bad").exists(), "a refused run writes nothing");
    let compare = ["compare", "burst.toml", "--seeds", "2", "--shard", "auto/2"];
    let nightly = ["nightly", "--seeds", "1", "--shard", "2/2", "--out", "bad"];
    for arguments in [&compare[..], &nightly[..]] {
        let output = elasticsim(&dir, arguments);
        assert_eq!(code(&output), 2, "{arguments:?}");
        assert!(stderr(&output).contains("--shard"), "{}", stderr(&output));
    }
    let single = elasticsim(&dir, &["sim", "burst.toml", "--shard", "0/2"]);
    assert_eq!(
        code(&single),
        2,
        "--shard needs --seeds: {}",
        stderr(&single)
    );
}

/// A scratch folder with the three shards of a 9-seed sweep in `s/`.
fn three_shards_of_nine_seeds(name: &str) -> PathBuf {
    let dir = scratch(name);
    for index in 0..3 {
        let shard = format!("{index}/3");
        let arguments = ["--seeds", "9", "--shard", &shard, "--out", "s"];
        let output = elasticsim(&dir, &[&["sim", "burst.toml"][..], &arguments].concat());
        assert!(matches!(code(&output), 0 | 1), "{}", stderr(&output));
    }
    dir
}

/// Merge `arguments` into `m`, expecting exit 2 and no `m`; the error text.
fn refused_merge(dir: &Path, arguments: &[&str]) -> String {
    let output = elasticsim(dir, &[&["merge"][..], arguments, &["--out", "m"]].concat());
    assert_eq!(code(&output), 2, "{}", stderr(&output));
    assert!(!dir.join("m").exists(), "a refused merge writes nothing");
    stderr(&output)
}

#[test]
fn merging_without_a_shard_fails_naming_the_shard_its_seeds_and_the_folders() {
    let dir = three_shards_of_nine_seeds("merge-missing");
    let printed = refused_merge(&dir, &["s/shard-0-of-3", "s/shard-2-of-3"]);
    assert!(
        printed.contains("s/shard-0-of-3, s/shard-2-of-3 (N = 3)"),
        "{printed}"
    );
    assert!(printed.contains("shard 1/3 is missing"), "{printed}");
    let seeds = "3 seeds of shard 1/3 are missing: burst / upstream seeds 2, 5, 8";
    assert!(printed.contains(seeds), "{printed}");
}

#[test]
fn merging_a_shard_twice_fails_naming_both_folders_and_the_repeated_seeds() {
    let dir = three_shards_of_nine_seeds("merge-repeated");
    fs::create_dir_all(dir.join("copy")).expect("writable");
    let from = dir.join("s/shard-0-of-3/shard.json");
    fs::copy(from, dir.join("copy/shard.json")).expect("copyable");
    let printed = refused_merge(&dir, &["s", "copy"]);
    let folders = "shard 0/3 appears in 2 folders: s/shard-0-of-3, copy";
    assert!(printed.contains(folders), "{printed}");
    let seeds = "3 seeds are in more than one folder (s/shard-0-of-3, copy): \
                 burst / upstream seeds 1, 4, 7";
    assert!(printed.contains(seeds), "{printed}");
}

#[test]
fn merging_shards_of_another_run_or_folders_without_shards_fails_naming_them() {
    let dir = three_shards_of_nine_seeds("merge-foreign");
    let other = [
        "sim",
        "burst.toml",
        "--seeds",
        "6",
        "--shard",
        "1/3",
        "--out",
        "other",
    ];
    assert!(matches!(code(&elasticsim(&dir, &other)), 0 | 1));
    let mixed = ["s/shard-0-of-3", "other/shard-1-of-3", "s/shard-2-of-3"];
    let printed = refused_merge(&dir, &mixed);
    let what = "s/shard-0-of-3 and other/shard-1-of-3 are not shards of the same run";
    assert!(printed.contains(what), "{printed}");
    assert!(printed.contains("cell lists differ"), "{printed}");
    let printed = refused_merge(&dir, &["s", "nowhere"]);
    assert!(
        printed.contains("nowhere: cannot read the folder"),
        "{printed}"
    );
    fs::create_dir_all(dir.join("empty/inner")).expect("writable");
    let printed = refused_merge(&dir, &["empty"]);
    assert!(printed.contains("empty: no shard.json"), "{printed}");
    let into_a_shard = ["merge", "s", "--out", "s/shard-1-of-3"];
    let output = elasticsim(&dir, &into_a_shard);
    assert_eq!(code(&output), 2);
    assert!(
        stderr(&output).contains("it is the shard folder"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_shard_file_naming_a_report_folder_outside_the_shard_is_refused() {
    let dir = scratch("nightly-escape");
    nightly_folder(&dir);
    let output = nightly(&dir, &["--shard", "0/1", "--out", "shards"]);
    assert_eq!(code(&output), 1, "strict fails: {}", stderr(&output));
    let path = dir.join("shards/shard-0-of-1/shard.json");
    let text = read(&path);
    let report = "\"report\":\"strict/upstream/seed-1\"";
    assert!(text.contains(report), "{text}");
    fs::write(&path, text.replace(report, "\"report\":\"../../escape\"")).expect("writable");
    let printed = refused_merge(&dir, &["shards"]);
    assert!(
        printed.contains("\"../../escape\" of seed 1 is not a relative path"),
        "{printed}"
    );
}
