//! The `nightly` command end to end on a tiny scenarios folder: JUnit structure with a known
//! failure, baseline regressions named in the output, `--update-baseline`, lenient
//! regression entries; and the CI workflow files parse as YAML.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NIGHTLY_TOML: &str = r#"
seeds = 2
baseline_seeds = 2
[scenarios.calm]
policies = ["upstream", "safe"]
[metrics]
wait_s_p95 = { worse = "higher", tolerance = 0.10 }
pods_created = { worse = "higher", tolerance = 0.0 }
"#;

struct Folder {
    root: PathBuf,
}

impl Folder {
    fn new(test_name: &str) -> Folder {
        let root = std::env::temp_dir().join(format!(
            "elasticsim-nightly-cli-{}-{test_name}",
            std::process::id()
        ));
        // A leftover of an earlier process with the same id may exist; start empty.
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("scenarios")).expect("the temp folder is writable");
        fs::write(root.join("scenarios/nightly.toml"), NIGHTLY_TOML).expect("writable");
        fs::write(
            root.join("scenarios/calm.toml"),
            common::tiny_scenario_toml("calm", "5m"),
        )
        .expect("writable");
        Folder { root }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.root.join(relative)
    }

    fn nightly(&self, extra: &[&str]) -> Output {
        self.command(extra).output().expect("the binary runs")
    }

    fn command(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_elasticsim"));
        command.arg("nightly");
        for (flag, relative) in [
            ("--scenarios", "scenarios"),
            ("--baselines", "baselines"),
            ("--out", "out"),
        ] {
            command.arg(flag).arg(self.path(relative));
        }
        command.args(extra).args(["--threads", "2"]);
        command
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn junit_xml_has_one_suite_per_scenario_one_case_per_policy_and_the_known_failure() {
    let folder = Folder::new("junit");
    fs::write(
        folder.path("scenarios/strict.toml"),
        common::tiny_scenario_toml("strict", "1s"),
    )
    .expect("writable");
    let output = folder.nightly(&["--update-baseline"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let xml = fs::read_to_string(folder.path("out/junit.xml")).expect("junit.xml was written");
    let document = roxmltree::Document::parse(&xml).expect("junit.xml is XML");
    let root = document.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<roxmltree::Node> = root.children().filter(|n| n.is_element()).collect();
    let names: Vec<&str> = suites.iter().filter_map(|s| s.attribute("name")).collect();
    assert_eq!(names, ["calm", "strict"]);
    let cases = |suite: &roxmltree::Node| -> Vec<String> {
        suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .filter_map(|n| n.attribute("name").map(str::to_owned))
            .collect()
    };
    assert_eq!(cases(&suites[0]), ["upstream", "safe"]);
    assert_eq!(
        cases(&suites[1]),
        ["upstream"],
        "strict is not in nightly.toml: its own policy"
    );
    let failures: Vec<roxmltree::Node> = document
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .collect();
    assert_eq!(failures.len(), 1, "{xml}");
    assert_eq!(
        failures[0]
            .parent()
            .and_then(|case| case.attribute("classname")),
        Some("nightly.strict")
    );
    let detail = failures[0].text().unwrap_or_default();
    assert!(detail.contains("job-wait-bound"), "{detail}");
    assert!(
        detail.contains("cargo xtask sim") && detail.contains("--seed 1"),
        "{detail}"
    );
    assert_eq!(root.attribute("failures"), Some("1"));
    for file in [
        "nightly.md",
        "index.html",
        "calm/compare.svg",
        "strict/upstream/seed-1/summary.md",
    ] {
        assert!(folder.path("out").join(file).is_file(), "{file} missing");
    }
}

fn set_metric(path: &Path, policy: &str, metric: &str, value: f64) {
    let text = fs::read_to_string(path).expect("the baseline was written");
    let mut baseline: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    baseline["policies"][policy][metric] = serde_json::json!(value);
    fs::write(path, serde_json::to_string_pretty(&baseline).expect("JSON")).expect("writable");
}

#[test]
fn a_better_baseline_fails_the_nightly_naming_the_metric_until_the_baseline_is_updated() {
    let folder = Folder::new("baseline");
    let output = folder.nightly(&["--update-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let baseline = folder.path("baselines/calm.json");
    assert!(baseline.is_file());
    assert_eq!(
        folder.nightly(&[]).status.code(),
        Some(0),
        "a fresh baseline passes"
    );
    // Claim the past was better: fewer pods than jobs can ever need.
    set_metric(&baseline, "safe", "pods_created", 0.5);
    let output = folder.nightly(&[]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("scenario calm, policy safe, metric pods_created"),
        "{printed}"
    );
    assert!(printed.contains("baseline 0.5"), "{printed}");
    let xml = fs::read_to_string(folder.path("out/junit.xml")).expect("junit.xml was written");
    assert!(xml.contains("metric pods_created"), "{xml}");
    let output = folder.nightly(&["--update-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let output = folder.nightly(&[]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}

/// `.ci/run` re-runs the baseline seeds: a fresh baseline passes; any metric that moves, in
/// either direction, by however little, fails (exit 1) naming it and the command that
/// re-makes the baselines; a scenario `baselines` does not list keeps none.
#[test]
fn check_baseline_requires_every_metric_exactly_until_the_baselines_are_re_made() {
    let folder = Folder::new("check");
    fs::write(
        folder.path("scenarios/other.toml"),
        common::tiny_scenario_toml("other", "5m"),
    )
    .expect("writable");
    let config = NIGHTLY_TOML.replace(
        "baseline_seeds = 2",
        "baseline_seeds = 2\nbaselines = [\"calm\"]",
    );
    fs::write(folder.path("scenarios/nightly.toml"), config).expect("writable");
    let output = folder.nightly(&["--update-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(folder.path("baselines/calm.json").is_file());
    assert!(
        !folder.path("baselines/other.json").exists(),
        "other keeps no baseline"
    );
    let output = folder.nightly(&["--check-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let baseline = folder.path("baselines/calm.json");
    let text_of = |path: &Path| fs::read_to_string(path).expect("the baseline was written");
    let value: serde_json::Value = serde_json::from_str(&text_of(&baseline)).expect("JSON");
    let pending = value["policies"]["safe"]["pods_created"]
        .as_f64()
        .expect("pods_created is measured");
    // Better or worse, a moved metric fails.
    set_metric(&baseline, "safe", "pods_created", pending + 0.001);
    let output = folder.nightly(&["--check-baseline"]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(1), "{printed}");
    assert!(
        printed.contains("baseline moved (calm, safe): pods_created: baseline")
            && printed.contains("cargo xtask nightly --update-baseline"),
        "{printed}"
    );
    let output = folder.nightly(&["--update-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let output = folder.nightly(&["--check-baseline"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let output = folder.nightly(&["--check-baseline", "--update-baseline"]);
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
}

/// Leader election only: the leader crashes once, a follower takes over.
const LEADER_TOML: &str = r#"
name = "lead"
seed = 1
duration = "2m"
settle = "1m"
[leader]
replicas = 3
variant = "fixed"
[[leader.modules]]
name = "gitops"
runnable_when = "gitops"
[[leader.config]]
at = "0s"
set = { gitops = true }
[[faults]]
at = "40s"
kind = "replica_crash"
replica = "leader"
downtime = "30s"
"#;

#[test]
fn a_leader_scenario_is_a_case_named_by_its_variant_with_leader_figures() {
    let folder = Folder::new("leader");
    fs::write(folder.path("scenarios/lead.toml"), LEADER_TOML).expect("writable");
    let output = folder.nightly(&["--seeds", "2"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let markdown = fs::read_to_string(folder.path("out/nightly.md")).expect("nightly.md");
    let row: Vec<&str> = markdown
        .lines()
        .find(|line| line.contains("| lead |"))
        .unwrap_or_else(|| panic!("no lead row: {markdown}"))
        .split('|')
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .collect();
    // verdict, scenario, case, seeds, passed, regressions, 3 elastic, 3 leader columns.
    assert_eq!(
        row[..6],
        ["PASS", "lead", "fixed", "2", "2", "0"],
        "{markdown}"
    );
    assert_eq!(row[6..9], ["–", "–", "–"], "{markdown}");
    let failovers: f64 = row[9].parse().expect("a number");
    assert!(failovers >= 1.0, "the crash makes a failover: {markdown}");
    let failover_p95: f64 = row[10].parse().expect("a number");
    assert!(failover_p95 > 0.0, "{markdown}");
    let calm = markdown
        .lines()
        .find(|line| line.contains("| calm | safe |"))
        .expect("the calm row");
    assert!(calm.ends_with("| – | – | – |"), "{calm}");
    let xml = fs::read_to_string(folder.path("out/junit.xml")).expect("junit.xml");
    assert!(
        xml.contains(r#"classname="nightly.lead" name="fixed""#),
        "{xml}"
    );
    let svg = fs::read_to_string(folder.path("out/lead/compare.svg")).expect("chart");
    assert!(svg.contains("failover p95"), "{svg}");
}

#[test]
fn an_unparsable_regressions_file_is_a_warning_not_a_failure() {
    let folder = Folder::new("regressions");
    fs::create_dir_all(folder.path("scenarios/regressions")).expect("writable");
    fs::write(
        folder.path("scenarios/regressions/regressions.toml"),
        "[[oops",
    )
    .expect("writable");
    let output = folder.nightly(&["--seeds", "1"]);
    let printed = text(&output);
    assert_eq!(output.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("warning") && printed.contains("regressions.toml"),
        "{printed}"
    );
}

#[test]
fn the_ci_workflows_parse_as_yaml_and_run_the_expected_commands() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(".github/workflows");
    let read = |name: &str| -> serde_yaml_ng::Value {
        let text = fs::read_to_string(root.join(name)).expect("the workflow exists");
        serde_yaml_ng::from_str(&text).expect("the workflow is YAML")
    };
    let nightly = read("nightly.yml");
    assert!(
        nightly["on"]["schedule"][0]["cron"].is_string(),
        "{nightly:?}"
    );
    let steps = nightly["jobs"]["nightly"]["steps"]
        .as_sequence()
        .expect("steps");
    let runs: Vec<&str> = steps
        .iter()
        .filter_map(|step| step["run"].as_str())
        .collect();
    assert!(runs.contains(&"cargo xtask nightly"), "{runs:?}");
    assert!(
        runs.iter()
            .any(|run| run.starts_with("cargo xtask hunt --targets safe,fixed")),
        "the nightly hunts our own designs: {runs:?}"
    );
    let uses: Vec<&str> = steps
        .iter()
        .filter_map(|step| step["uses"].as_str())
        .collect();
    assert!(
        uses.iter()
            .any(|action| action.starts_with("actions/upload-artifact"))
    );
    assert!(
        uses.iter()
            .any(|action| action.starts_with("EnricoMi/publish-unit-test-result-action"))
    );
    let junit = steps
        .iter()
        .find_map(|step| step["with"]["files"].as_str())
        .expect("the JUnit step names its file");
    assert_eq!(junit, "reports/nightly/junit.xml");
    let pr = read("pr.yml");
    let steps = pr["jobs"]["ci"]["steps"].as_sequence().expect("steps");
    assert!(
        steps
            .iter()
            .any(|step| step["run"].as_str() == Some("bash .ci/run"))
    );
}

/// Ctrl-C during a nightly: the runs in flight finish, `junit.xml`, `nightly.md` and
/// `index.html` are written for the runs done and say the nightly was interrupted, no
/// baseline is judged, and the exit code is 130.
#[cfg(unix)]
#[test]
fn sigint_during_a_nightly_writes_the_runs_done_marked_interrupted() {
    use std::process::Stdio;
    let folder = Folder::new("sigint");
    let many = NIGHTLY_TOML.replacen("seeds = 2\n", "seeds = 50000\n", 1);
    fs::write(folder.path("scenarios/nightly.toml"), many).expect("writable");
    let child = folder
        .command(&[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    common::let_run(3);
    assert!(
        !folder.path("out/junit.xml").exists(),
        "nothing written yet"
    );
    let output = common::interrupt(child);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let markdown = fs::read_to_string(folder.path("out/nightly.md")).expect("nightly.md");
    assert!(markdown.contains("interrupted: "), "{markdown}");
    assert!(
        !markdown.contains("no baseline yet"),
        "no judgement of part of the seeds"
    );
    let xml = fs::read_to_string(folder.path("out/junit.xml")).expect("junit.xml");
    let document = roxmltree::Document::parse(&xml).expect("junit.xml is XML");
    let cases = document
        .descendants()
        .filter(|node| node.has_tag_name("testcase"))
        .count();
    assert_eq!(
        cases, 2,
        "both policies of calm, with the seeds done: {xml}"
    );
    assert!(folder.path("out/index.html").is_file());
    assert!(
        !folder.path("baselines").exists(),
        "an interrupted nightly writes no baseline"
    );
}
