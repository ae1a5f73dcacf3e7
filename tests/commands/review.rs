//! `elasticsim review`: identical inputs for base and candidate, the behaviour diff it finds,
//! its files, its shards; and the `index.html` of `sim --seeds` and `compare`.

use crate::common;

use common::{fresh_dir, scenario, settings};
use elasticsim::allocator::Policy;
use elasticsim::check::InvariantId;
use elasticsim::review::inputs_text;
use elasticsim::run::run_scenario;
use elasticsim::trace::Record;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repository() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run the binary from the repository root (the default scenarios are found from there).
fn elasticsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(repository())
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

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} is readable: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} parses: {e}", path.display()))
}

fn keys(value: &Value) -> Vec<&str> {
    let mut keys: Vec<&str> = value
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    keys
}

const METRICS: [&str; 9] = [
    "pod_seconds_busy",
    "pod_seconds_idle",
    "pod_seconds_pending",
    "pods_created",
    "pods_per_job",
    "reuse_ratio",
    "wait_s_p50",
    "wait_s_p95",
    "waits_censored",
];

/// `review.json` has exactly the keys the issue lists, at every level.
fn assert_every_key(json: &Value) {
    assert_eq!(keys(json), ["base", "candidate", "scenarios"]);
    for entry in json["scenarios"].as_array().expect("scenarios is a list") {
        assert_eq!(
            keys(entry),
            [
                "clusters",
                "diverged_seeds",
                "first_divergences",
                "metrics",
                "new_violations",
                "reuse",
                "scenario",
                "seeds",
                "stop_consequences"
            ]
        );
        for first in entry["first_divergences"].as_array().expect("a list") {
            assert_eq!(
                keys(first),
                ["agent", "base", "candidate", "job", "seed", "t_ms"]
            );
            assert_eq!(keys(&first["base"]), ["code", "text"]);
            assert_eq!(keys(&first["candidate"]), ["code", "text"]);
        }
        for cluster in entry["clusters"].as_array().expect("a list") {
            assert_eq!(
                keys(cluster),
                ["base_code", "candidate_code", "example_seed", "seeds"]
            );
        }
        assert_eq!(keys(&entry["metrics"]), METRICS);
        for metric in METRICS {
            assert_eq!(
                keys(&entry["metrics"][metric]),
                [
                    "base_mean",
                    "candidate_mean",
                    "ci95_high",
                    "ci95_low",
                    "delta"
                ]
            );
        }
    }
}

/// "scenario reuse" for every elastic-agent scenario of the nightly plan with at least ten
/// seeds, reuse off and on: what `review` reviews by default.
fn default_review_entries() -> Vec<String> {
    let plan =
        elasticsim::nightly::NightlyConfig::load(&repository().join("scenarios/nightly.toml"))
            .expect("the nightly plan loads");
    let mut expected: Vec<String> = plan
        .scenarios
        .iter()
        .filter(|(name, entry)| {
            let file = repository().join(format!("scenarios/{name}.toml"));
            common::scenario_file(file.to_str().expect("UTF-8"))
                .leader
                .is_none()
                && entry.seeds.unwrap_or(plan.seeds) >= 10
        })
        .flat_map(|(name, _)| [format!("{name} off"), format!("{name} on")])
        .collect();
    expected.sort();
    expected
}

/// One scenario's review entry shows no divergence, no new violation and no metric change.
fn assert_no_change(entry: &serde_json::Value) {
    let name = format!("{} reuse {}", entry["scenario"], entry["reuse"]);
    assert_eq!(entry["diverged_seeds"], 0, "{name}");
    assert!(
        entry["first_divergences"]
            .as_array()
            .is_some_and(Vec::is_empty),
        "{name}"
    );
    assert!(
        entry["clusters"].as_array().is_some_and(Vec::is_empty),
        "{name}"
    );
    assert!(
        entry["new_violations"]
            .as_object()
            .is_some_and(|v| v.is_empty()),
        "{name}"
    );
    for metric in METRICS {
        let change = &entry["metrics"][metric];
        for key in ["delta", "ci95_low", "ci95_high"] {
            assert_eq!(change[key].as_f64(), Some(0.0), "{name} {metric} {key}");
        }
        assert_eq!(
            change["base_mean"], change["candidate_mean"],
            "{name} {metric}"
        );
    }
}

#[test]
fn safe_against_safe_finds_no_divergence_and_no_change_on_every_default_scenario() {
    let out = fresh_dir("review-safe-safe");
    let output = elasticsim(&[
        "review",
        "--base",
        "safe",
        "--candidate",
        "safe",
        "--seeds",
        "2",
        "--out",
        out.to_str().expect("a UTF-8 path"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let json = read_json(&out.join("review.json"));
    assert_every_key(&json);
    let scenarios = json["scenarios"].as_array().expect("a list");
    let expected = default_review_entries();
    let mut reviewed: Vec<String> = scenarios
        .iter()
        .map(|entry| {
            format!(
                "{} {}",
                entry["scenario"].as_str().unwrap_or("?"),
                entry["reuse"].as_str().unwrap_or("?")
            )
        })
        .collect();
    reviewed.sort();
    assert_eq!(
        reviewed, expected,
        "every elastic-agent scenario, reuse off and on"
    );
    assert!(expected.len() >= 20, "{expected:?}");
    for entry in scenarios {
        assert_no_change(entry);
    }
    let markdown = std::fs::read_to_string(out.join("review.md")).expect("review.md");
    assert!(markdown.contains("decides exactly as safe"), "{markdown}");
}

const SWARM: &str = r#"
name = "review-swarm"
seed = 1
duration = "20m"
settle = "20m"

[cluster]
nodes = 2
pods_per_node = 6

[plugin]
policy = "upstream"
enable_agent_reuse = true
pending_pods_count = 4

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "poisson"
from = "0s"
until = "20m"
per_minute = 1.5
profile = "small"
runtime = { min = "20s", max = "3m" }

[swarm]
enabled = true
kinds = ["server_crash", "pod_delete", "container_restart", "partition", "api_outage"]
mean_interval = "3m"
"#;

/// The fault timeline a run went through: every fault start as (time, index, kind).
fn fault_timeline(scenario: &elasticsim::scenario::Scenario, seed: u64, policy: Policy) -> String {
    let mut pinned = scenario.clone();
    pinned.plugin.policy = policy;
    let recording = common::record_run(&pinned, seed);
    let starts: Vec<(u64, u32, &str)> = recording
        .events
        .iter()
        .filter_map(|event| match &event.record {
            Record::FaultStarted { index, fault, .. } => Some((event.t_ms, *index, fault.as_str())),
            _ => None,
        })
        .collect();
    format!("{starts:?}")
}

#[test]
fn base_and_candidate_see_byte_equal_arrivals_faults_and_swarm_draws_on_every_seed() {
    let swarm = scenario(SWARM);
    let mut drew = 0;
    for seed in 1..=12 {
        let inputs = |policy: Policy| {
            let mut run_settings = settings(&swarm, seed);
            run_settings.policy = policy;
            inputs_text(&swarm, &run_settings).expect("the world builds")
        };
        let upstream = inputs(Policy::Upstream);
        assert!(upstream.contains("arrivals [("), "{upstream}");
        if !upstream.contains("swarm []") {
            drew += 1;
        }
        for candidate in [Policy::Pr355, Policy::Safe] {
            assert_eq!(
                upstream.as_bytes(),
                inputs(candidate).as_bytes(),
                "seed {seed}: {} saw other inputs",
                candidate.name()
            );
            assert_eq!(
                fault_timeline(&swarm, seed, Policy::Upstream).as_bytes(),
                fault_timeline(&swarm, seed, candidate).as_bytes(),
                "seed {seed}: the runs went through different faults"
            );
        }
    }
    assert!(
        drew >= 6,
        "the swarm drew faults in only {drew} of 12 seeds"
    );
}

/// The review's repro of `id` on burst seed 1 (reuse off) is named in `markdown` with its
/// command, and fails `id` on its own under `pr355`.
fn assert_burst_repro_fails_alone(out: &std::path::Path, markdown: &str, id: InvariantId) {
    let out_text = out.to_str().expect("a UTF-8 path");
    let repro = out.join(format!("repro/burst-reuse-off-{id}-seed-1.toml"));
    assert!(
        markdown.contains(&format!(
            "cargo xtask sim {out_text}/repro/burst-reuse-off-{id}-seed-1.toml"
        )),
        "{markdown}"
    );
    let alone = elasticsim::scenario::load(&repro)
        .unwrap_or_else(|e| panic!("{} loads: {e}", repro.display()))
        .scenario;
    assert!(!alone.plugin.enable_agent_reuse);
    let run_settings = elasticsim::world::RunSettings::from_scenario(&alone);
    assert_eq!(run_settings.policy, Policy::Pr355);
    let outcome = run_scenario(&alone, run_settings, None, String::new()).expect("runs");
    assert!(
        outcome.violated_ids().contains(&id),
        "{id}: {:?}",
        outcome.violated_ids()
    );
}

/// Seed 1's first divergence: the PR's pod limit counts every known pod, Running ones
/// included, so with agents booting after their pods run (`[server] agent_boot`) it refuses a
/// create that upstream, counting only pods not Running, makes; the eviction on a `false`
/// (upstream answers false, pr355 drops the pod from its map) is among the clusters.
fn assert_burst_first_divergence_is_the_limit_and_the_eviction_follows(burst: &serde_json::Value) {
    let first = &burst["first_divergences"][0];
    assert_eq!(first["seed"], 1);
    let (base, candidate) = (&first["base"], &first["candidate"]);
    assert_eq!(base["code"], "create", "{first}");
    assert_eq!(candidate["code"], "skip-limit", "{first}");
    assert!(
        candidate["text"]
            .as_str()
            .is_some_and(|t| t.contains("Running included")),
        "{first}"
    );
    let clusters = burst["clusters"].as_array().expect("a list");
    assert!(
        clusters
            .iter()
            .any(|c| c["base_code"] == "assign-no" && c["candidate_code"] == "evict"),
        "{clusters:?}"
    );
}

#[test]
fn burst_reuse_off_pr355_diverges_at_the_limit_and_the_eviction_and_breaks_one_pod_per_job() {
    let out = fresh_dir("review-burst-pr355");
    let out_text = out.to_str().expect("a UTF-8 path");
    let output = elasticsim(&[
        "review",
        "scenarios/burst.toml",
        "--candidate",
        "pr355",
        "--reuse",
        "off",
        "--seeds",
        "1..2",
        "--out",
        out_text,
    ]);
    assert_eq!(
        output.status.code(),
        Some(1),
        "new violations exit 1: {}",
        text(&output)
    );
    let json = read_json(&out.join("review.json"));
    assert_every_key(&json);
    assert_eq!(
        (json["base"].as_str(), json["candidate"].as_str()),
        (Some("upstream"), Some("pr355"))
    );
    let burst = &json["scenarios"][0];
    assert_eq!(
        (burst["scenario"].as_str(), burst["reuse"].as_str()),
        (Some("burst"), Some("off"))
    );
    assert_burst_first_divergence_is_the_limit_and_the_eviction_follows(burst);
    let markdown = std::fs::read_to_string(out.join("review.md")).expect("review.md");
    let mut lines = markdown.lines();
    assert_eq!(lines.next(), Some("# Review of `pr355` against `upstream`"));
    let verdict = lines.nth(1).unwrap_or_default();
    assert!(
        verdict.starts_with("**Verdict.**") && verdict.contains("one-pod-per-job"),
        "{verdict}"
    );
    assert!(markdown.contains("| **breaks** | burst |"), "{markdown}");
    assert!(
        markdown.contains("## Feature off (`enable_agent_reuse = false`, the default"),
        "{markdown}"
    );
    for id in [InvariantId::OnePodPerJob, InvariantId::JobWaitBound] {
        let seeds = &burst["new_violations"][id.name()];
        assert_eq!(seeds.as_array().map(Vec::len), Some(1), "{id}: {burst}");
        assert_burst_repro_fails_alone(&out, &markdown, id);
    }
    let html = std::fs::read_to_string(out.join("index.html")).expect("index.html");
    roxmltree::Document::parse_with_options(&html, html_options())
        .expect("index.html is well-formed");
    assert!(html.contains("burst-reuse-off/compare.svg") && !html.contains("<script"));
}

#[test]
fn review_shards_merge_into_the_unsharded_review() {
    let root = fresh_dir("review-shards");
    let run = |extra: &[&str], out: &Path| {
        let mut args = vec![
            "review",
            "scenarios/reuse-burst.toml",
            "--candidate",
            "safe",
            "--seeds",
            "3",
            "--out",
            out.to_str().expect("UTF-8"),
        ];
        args.extend_from_slice(extra);
        let output = elasticsim(&args);
        assert!(
            output.status.code().is_some_and(|code| code <= 1),
            "{}",
            text(&output)
        );
    };
    run(&[], &root.join("whole"));
    run(&["--shard", "0/2"], &root.join("shards"));
    run(&["--shard", "1/2"], &root.join("shards"));
    let merged = root.join("merged");
    let output = elasticsim(&[
        "merge",
        root.join("shards").to_str().expect("UTF-8"),
        "--out",
        merged.to_str().expect("UTF-8"),
    ]);
    assert!(
        output.status.code().is_some_and(|code| code <= 1),
        "{}",
        text(&output)
    );
    assert_eq!(
        read_json(&root.join("whole/review.json")),
        read_json(&merged.join("review.json"))
    );
}

/// Every `href` of an `index.html` that parses as XML.
fn links(path: &Path) -> Vec<String> {
    let html = std::fs::read_to_string(path).expect("index.html is written");
    let document = roxmltree::Document::parse_with_options(&html, html_options())
        .expect("index.html is well-formed");
    assert!(!html.contains("<script"));
    document
        .descendants()
        .filter_map(|node| node.attribute("href").map(str::to_owned))
        .collect()
}

/// The failing seeds of a `sweep.csv`.
fn failing_seeds(sweep_csv: &Path) -> Vec<u64> {
    let text = std::fs::read_to_string(sweep_csv).expect("sweep.csv");
    text.lines()
        .skip(1)
        .filter(|line| line.split(',').nth(1) == Some("fail"))
        .map(|line| {
            line.split(',')
                .next()
                .and_then(|s| s.parse().ok())
                .expect("a seed")
        })
        .collect()
}

#[test]
fn sim_seeds_and_compare_write_an_index_that_parses_and_links_every_failing_seed() {
    let out = fresh_dir("review-index-pages");
    let sweep = out.join("sweep");
    let output = elasticsim(&[
        "sim",
        "scenarios/reuse-burst.toml",
        "--policy",
        "pr355",
        "--seeds",
        "4",
        "--out",
        sweep.to_str().expect("UTF-8"),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let failing = failing_seeds(&sweep.join("sweep.csv"));
    assert!(!failing.is_empty());
    let hrefs = links(&sweep.join("index.html"));
    for seed in &failing {
        let href = format!("seed-{seed}/summary.md");
        assert!(hrefs.contains(&href), "{href} not in {hrefs:?}");
        assert!(sweep.join(&href).is_file(), "{href}");
    }
    assert!(hrefs.iter().any(|href| href.ends_with(".svg")), "{hrefs:?}");
    let compare = out.join("compare");
    let output = elasticsim(&[
        "compare",
        "scenarios/reuse-burst.toml",
        "--policies",
        "upstream,pr355",
        "--seeds",
        "4",
        "--out",
        compare.to_str().expect("UTF-8"),
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let hrefs = links(&compare.join("index.html"));
    for seed in &failing {
        let href = format!("pr355/seed-{seed}/summary.md");
        assert!(hrefs.contains(&href), "{href} not in {hrefs:?}");
        assert!(compare.join(&href).is_file(), "{href}");
    }
    let failing_links = hrefs
        .iter()
        .filter(|href| href.ends_with("summary.md"))
        .count();
    assert_eq!(
        failing_links,
        failing.len(),
        "upstream passes reuse-burst: {hrefs:?}"
    );
    assert!(hrefs.contains(&"compare.svg".to_owned()), "{hrefs:?}");
}

/// The pages start with `<!DOCTYPE html>`: parse them as XML with the DTD allowed.
fn html_options() -> roxmltree::ParsingOptions {
    roxmltree::ParsingOptions {
        allow_dtd: true,
        ..roxmltree::ParsingOptions::default()
    }
}

/// `review --ablate` switches the rules off in the candidate's runs only: `safe` against
/// `safe` without the pending-pod limit diverges, where plain `safe` against `safe` never does
/// (see the test above), and every output names the ablation.
#[test]
fn an_ablated_candidate_diverges_from_its_plain_self_and_the_outputs_say_so() {
    let dir = fresh_dir("review-ablate");
    let out = dir.join("out");
    let output = elasticsim(&[
        "review",
        "scenarios/reuse-pod-limit.toml",
        "--base",
        "safe",
        "--candidate",
        "safe",
        "--ablate",
        "limits",
        "--seeds",
        "3",
        "--reuse",
        "on",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert!(
        matches!(output.status.code(), Some(0 | 1)),
        "{}",
        text(&output)
    );
    let json = read_json(&out.join("review.json"));
    assert_eq!(json["ablate"], "limits", "{json}");
    assert!(json.get("interrupted").is_none(), "{json}");
    let scenario = &json["scenarios"][0];
    assert_eq!(scenario["seeds"], 3);
    assert!(
        scenario["diverged_seeds"].as_u64().is_some_and(|n| n > 0),
        "the ablated candidate decides differently: {scenario}"
    );
    let markdown = std::fs::read_to_string(out.join("review.md")).expect("review.md");
    assert!(
        markdown.starts_with("# Review of `safe (ablated: limits)` against `safe`"),
        "{markdown}"
    );
}

/// Ctrl-C during a review: the cells in flight finish, every file is written for the seeds
/// done, marked interrupted, and the exit code is 130 (docs/cli.md, "Interrupting").
#[cfg(unix)]
#[test]
fn sigint_during_a_review_writes_the_seeds_done_marked_interrupted() {
    use std::process::Stdio;
    let dir = fresh_dir("review-sigint");
    let out = dir.join("cut");
    let child = Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .current_dir(repository())
        .args(["review", "scenarios/chaos.toml", "--candidate", "safe"])
        .args([
            "--seeds",
            "3000",
            "--reuse",
            "off",
            "--threads",
            "1",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    common::let_run(3);
    assert!(
        !out.join("review.json").exists(),
        "nothing written before the end"
    );
    let output = common::interrupt(child);
    assert_eq!(output.status.code(), Some(130), "{}", text(&output));
    let json = read_json(&out.join("review.json"));
    let line = json["interrupted"].as_str().expect("marked interrupted");
    assert!(line.starts_with("interrupted: "), "{line}");
    assert!(
        line.contains("scenarios/chaos.toml reuse off seeds "),
        "{line}"
    );
    let done = json["scenarios"][0]["seeds"].as_u64().expect("seeds done");
    assert!(done > 0 && done < 3000, "{done} seeds done");
    let markdown = std::fs::read_to_string(out.join("review.md")).expect("review.md");
    assert!(markdown.starts_with("# Review of `safe` against `upstream`"));
    assert!(markdown.contains(line), "{markdown}");
    assert!(out.join("index.html").exists());
}

#[test]
fn a_stopped_runs_eventually_failures_are_consequences_of_the_stop_not_new_violations() {
    use elasticsim::ablation::Ablations;
    use elasticsim::review::{Group, review_markdown, review_seed, scenario_review, with_reuse};
    let file = "scenarios/capacity.toml";
    let loaded = elasticsim::scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .expect("capacity.toml loads");
    let group = Group {
        file: file.to_owned(),
        scenario: with_reuse(&loaded.scenario, false),
        reuse: false,
        seeds: vec![1],
        candidate_ablations: Ablations::none(),
    };
    // Seed 1: pr355 storms (idle agents asked about every queued job, each `false` evicting
    // a pod), the run stops at `bounded-requests`, and `all-jobs-complete` and
    // `no-orphan-pods` are judged at that instant. (On burst.toml the storm stopped seed 1
    // too until agents took their boot time to register: `docs/fidelity.md`.)
    let row = review_seed(&group, Policy::Upstream, Policy::Pr355, 1).expect("both runs end");
    let review = scenario_review(&group, &[row]);
    assert!(
        review
            .new_violations
            .contains_key(&InvariantId::BoundedRequests)
    );
    assert!(
        review
            .new_violations
            .contains_key(&InvariantId::OnePodPerJob)
    );
    for id in [InvariantId::AllJobsComplete, InvariantId::NoOrphanPods] {
        assert!(
            !review.new_violations.contains_key(&id),
            "{id} counted as new"
        );
        assert_eq!(review.stop_consequences.get(&id), Some(&vec![1]), "{id}");
    }
    let markdown = review_markdown("upstream", "pr355", &[review], "out");
    let first_screen = markdown
        .split("## In words")
        .next()
        .expect("a first screen");
    assert!(
        first_screen.contains("| **breaks** | capacity |"),
        "{first_screen}"
    );
    assert!(
        first_screen
            .contains("at should-assign-work, pr355 answers false and drops the pod from its map"),
        "{first_screen}"
    );
    assert!(first_screen.contains("consequences only follow from runs stopped"));
    assert!(
        first_screen.contains("≥"),
        "censored waits are marked: {first_screen}"
    );
}

/// The first screen a maintainer pastes on the pull request: the verdict, a feature-off table
/// and a feature-on table, each row with its cause in one plain sentence, and "In words" in at
/// most 150 words without the harness's vocabulary. On `reuse-two-environments` with reuse on,
/// pr355's row breaks and its cause is the create-agent skip (issue #47).
#[test]
fn the_first_screen_splits_feature_off_and_on_and_says_why_each_row_breaks() {
    use elasticsim::ablation::Ablations;
    use elasticsim::review::{
        Group, IN_WORDS_MAX, review_markdown, review_seed, scenario_review, summary_paragraph,
        with_reuse,
    };
    let file = "scenarios/reuse-two-environments.toml";
    let loaded = elasticsim::scenario::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
        .expect("the scenario loads");
    let reviews: Vec<_> = [false, true]
        .into_iter()
        .map(|reuse| {
            let group = Group {
                file: file.to_owned(),
                scenario: with_reuse(&loaded.scenario, reuse),
                reuse,
                seeds: vec![1, 2],
                candidate_ablations: Ablations::none(),
            };
            let rows: Vec<_> = (group.seeds.iter())
                .map(|seed| review_seed(&group, Policy::Upstream, Policy::Pr355, *seed))
                .collect::<Result<_, _>>()
                .expect("both runs end");
            scenario_review(&group, &rows)
        })
        .collect();
    let markdown = review_markdown("upstream", "pr355", &reviews, "out");
    let first_screen = markdown
        .split("## In words")
        .next()
        .expect("a first screen");
    let off = first_screen
        .find("## Feature off")
        .expect("a feature-off table");
    let on = first_screen
        .find("## Feature on")
        .expect("a feature-on table");
    assert!(off < on, "{first_screen}");
    let row = (first_screen[on..].lines())
        .find(|line| line.contains("| reuse-two-environments |"))
        .expect("the scenario's feature-on row");
    assert!(row.starts_with("| **breaks** |"), "{row}");
    assert!(
        row.contains(
            "at create-agent, pr355 creates no pod because an idle pod with the same profile exists"
        ),
        "{row}"
    );
    assert!(
        row.contains("jobs wait for an agent longer than allowed"),
        "{row}"
    );
    let in_words = summary_paragraph("upstream", "pr355", &reviews);
    assert!(
        in_words.split_whitespace().count() <= IN_WORDS_MAX,
        "{in_words}"
    );
    for harness_word in ["seed", "invariant", "`", "scenario", "pr355", "upstream"] {
        assert!(
            !in_words.contains(harness_word),
            "{harness_word}: {in_words}"
        );
    }
    assert!(in_words.starts_with("With the feature off, which every current user gets,"));
}
