//! The harness's own acceptance test (`docs/policies.md`, the defect tables):
//! for every elastic-agent row, the faulty policy trips the listed invariant on several
//! seeds, and `safe` keeps every invariant on the same seeds.

use elasticsim::allocator::Policy;
use elasticsim::check::InvariantId;
use elasticsim::run::{RunOutcome, run_scenario};
use elasticsim::world::RunSettings;
use std::path::{Path, PathBuf};

/// The seeds every row is judged on.
const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"))
}

fn run(name: &str, policy: Policy, seed: u64) -> RunOutcome {
    let path = scenario_path(name);
    let loaded = elasticsim::scenario::load(&path).expect("the scenario files load");
    let mut settings = RunSettings::from_scenario(&loaded.scenario);
    settings.seed = seed;
    settings.policy = policy;
    run_scenario(&loaded.scenario, settings, None, String::new()).expect("the run finishes")
}

/// On every seed: `faulty` trips one of `expected`, and `safe` passes.
fn assert_row(name: &str, faulty: Policy, expected: &[InvariantId]) {
    for seed in SEEDS {
        let outcome = run(name, faulty, seed);
        let ids = outcome.violated_ids();
        assert!(
            expected.iter().any(|id| ids.contains(id)),
            "{name} seed {seed}: {faulty:?} should trip one of {expected:?}, tripped {ids:?}"
        );
        let safe = run(name, Policy::Safe, seed);
        assert!(
            safe.passed(),
            "{name} seed {seed}: safe must keep every invariant: {:#?}",
            safe.info.violations
        );
    }
}

#[test]
fn n_jobs_seeing_one_idle_pod_serialize_under_pr355_and_are_served_in_parallel_by_safe() {
    assert_row("reuse-burst", Policy::Pr355, &[InvariantId::JobWaitBound]);
}

#[test]
fn an_externally_deleted_idle_pod_blocks_creation_under_pr355_but_not_under_safe() {
    assert_row(
        "reuse-pod-deleted",
        Policy::Pr355,
        &[InvariantId::JobWaitBound],
    );
}

#[test]
fn pr355_has_no_idle_timeout_so_the_report_gives_its_idle_pod_seconds_instead_of_a_verdict() {
    // pr355's only reaper is "older than the auto-register timeout since creation": it has no
    // idle timeout, so `idle-timeout` is not applicable to it and the report measures how
    // long its pods sat idle instead. safe, which has one, is judged on it and keeps it.
    for seed in SEEDS {
        let pr355 = run("reuse-idle-timeout", Policy::Pr355, seed);
        assert!(
            !pr355.violated_ids().contains(&InvariantId::IdleTimeout),
            "seed {seed}"
        );
        let not_applicable: Vec<InvariantId> = (pr355.info.not_applicable.iter())
            .map(|&(id, _)| id)
            .collect();
        assert_eq!(not_applicable, [InvariantId::IdleTimeout], "seed {seed}");
        let metrics = pr355.collector.metrics(&pr355.info);
        assert!(
            metrics.pod_seconds_idle > 0.0,
            "seed {seed}: no idle pod measured"
        );
        let summary = elasticsim::report::summary::summary_markdown(&pr355.info, &metrics);
        let figure =
            elasticsim::report::summary::measured_instead(InvariantId::IdleTimeout, &metrics);
        assert!(figure.ends_with(" idle pod-seconds"), "{figure}");
        let measured = format!(
            "| idle-timeout | pr355 has no idle timeout: an idle pod lives until a server-ping \
             finds it older than the auto-register timeout since its creation | {figure} |"
        );
        assert!(summary.contains(&measured), "seed {seed}: {summary}");
        let safe = run("reuse-idle-timeout", Policy::Safe, seed);
        assert!(safe.passed(), "seed {seed}: {:#?}", safe.info.violations);
        assert!(safe.info.not_applicable.is_empty());
    }
}

#[test]
fn should_assign_work_evicting_pods_on_false_delays_jobs_under_pr355_only() {
    assert_row(
        "reuse-two-profiles",
        Policy::Pr355,
        &[InvariantId::JobWaitBound, InvariantId::OnePodPerJob],
    );
}

#[test]
fn an_idle_pod_of_another_environment_counted_as_reusable_starves_jobs_under_pr355_only() {
    assert_row(
        "reuse-two-environments",
        Policy::Pr355,
        &[InvariantId::JobWaitBound],
    );
}

#[test]
fn a_restarted_container_counted_as_idle_starves_jobs_under_pr355_only() {
    assert_row(
        "reuse-container-restart",
        Policy::Pr355,
        &[InvariantId::JobWaitBound],
    );
}

#[test]
fn counting_running_pods_against_the_pending_limit_starves_jobs_under_pr355_only() {
    assert_row(
        "reuse-pod-limit",
        Policy::Pr355,
        &[InvariantId::JobWaitBound],
    );
}

#[test]
fn pods_pending_at_a_server_crash_never_register_under_upstream_and_safe_replaces_them() {
    assert_row(
        "server-crash-pending",
        Policy::Upstream,
        &[InvariantId::NoOrphanPods, InvariantId::JobWaitBound],
    );
}

#[test]
fn after_a_profile_edit_no_old_pod_receives_a_new_job_under_any_reusing_policy() {
    for seed in SEEDS {
        for policy in [Policy::Pr355, Policy::Safe] {
            let outcome = run("reuse-profile-edit", policy, seed);
            let ids = outcome.violated_ids();
            assert!(
                !ids.contains(&InvariantId::NoCrossConfigReuse),
                "seed {seed}: {policy:?} reused an old pod after the edit: {:#?}",
                outcome.info.violations
            );
            // Reuse did happen after the edit, so the check had something to judge.
            let metrics = outcome.collector.metrics(&outcome.info);
            assert!(
                metrics.reuse_ratio > 0.3,
                "seed {seed}: {policy:?} barely reused"
            );
        }
        // pr355's idle reaping there is not judged (it has no idle timeout): it passes.
        let pr355 = run("reuse-profile-edit", Policy::Pr355, seed);
        assert!(
            pr355.violated_ids().is_empty(),
            "seed {seed}: {:?}",
            pr355.violated_ids()
        );
        assert!(run("reuse-profile-edit", Policy::Safe, seed).passed());
    }
}

#[test]
fn a_pr355_violation_report_names_objects_times_decisions_and_the_reproduce_command() {
    let out = std::env::temp_dir().join(format!("elasticsim-defects-{}", std::process::id()));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_elasticsim"))
        .arg("sim")
        .arg(scenario_path("reuse-burst"))
        .args(["--policy", "pr355", "--seed", "2", "--quiet", "--out"])
        .arg(&out)
        .status()
        .expect("the binary runs");
    assert_eq!(status.code(), Some(1), "a failing run exits 1");
    let summary = std::fs::read_to_string(out.join("summary.md")).expect("summary.md exists");
    std::fs::remove_dir_all(&out).expect("the report folder is ours to remove");
    let expected = [
        // The invariant, with the time it broke.
        "### `job-wait-bound` (always) at ",
        // The job and how long it waited, against the bound.
        "waited 90.000s without being assigned (bound 90.000s)",
        // What the allocator decided when asked, naming the idle pod it counted.
        "the allocator answered: skip-reuse ([reuse] found 1 eligible pod(s)",
        // The objects involved.
        "Objects: `job:",
        "`pod:k8s-ea-",
        // The trace events touching them.
        "decision code=complete-idle",
        // The command that reproduces the run.
        "## Reproduce",
        "cargo xtask sim ",
        "--seed 2 --policy pr355",
    ];
    for text in expected {
        assert!(
            summary.contains(text),
            "summary.md lacks {text:?}:\n{summary}"
        );
    }
}
