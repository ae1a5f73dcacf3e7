//! Each name of `SAFE_ABLATIONS` changes a decision: the same steps as a rule's own test in
//! `tests.rs`, once with the rule and once without, and the decision that differs.

use crate::ablation::Ablations;
use crate::allocator::safe::{SAFE_ABLATIONS, Safe};
use crate::allocator::{AgentState, ClusterProfile};
use crate::testkit;

type Driver = testkit::Driver<Safe>;

const MINUTE_MS: u64 = 60_000;

/// `driver` with its allocator (process `process_id`) missing rule `name`.
fn ablate(driver: &mut Driver, process_id: u64, name: &str) {
    let rule = SAFE_ABLATIONS
        .iter()
        .map(|(declared, _)| *declared)
        .find(|declared| declared.name() == name);
    let rule = rule.unwrap_or_else(|| panic!("{name} is a declared rule"));
    let ablations = Ablations::of([rule]);
    driver.allocator = Safe::with_ablations(process_id, ablations);
}

/// A driver with reuse on, optionally without rule `name`.
fn driver(name: Option<&str>) -> Driver {
    let mut driver = Driver::with_allocator(
        Safe::new(1),
        ClusterProfile {
            enable_agent_reuse: true,
            ..ClusterProfile::default()
        },
    );
    if let Some(name) = name {
        ablate(&mut driver, 1, name);
    }
    driver
}

/// Pods claimed by the create-agents of jobs 2..=4 seeing one idle pod.
fn claims_of_three_jobs(name: Option<&str>) -> usize {
    let mut driver = driver(name);
    driver.idle_pod_after_job(1, None);
    driver.now_ms = 10_000;
    for job_id in 2..=4 {
        driver.create_agent(job_id);
    }
    driver.settle();
    driver.decided("claim").len()
}

#[test]
fn without_reservations_one_idle_pod_answers_several_create_agents() {
    assert_eq!(claims_of_three_jobs(None), 1);
    assert!(claims_of_three_jobs(Some("reservations")) >= 2);
}

/// Decisions `claim-lost` when an idle pod is deleted, and gone, before a create-agent lists
/// pods.
fn claims_lost_after_delete(name: Option<&str>) -> usize {
    let mut driver = driver(name);
    let idle = driver.idle_pod_after_job(1, None);
    driver.delete_externally(&idle);
    driver.wait(testkit::GRACE_MS);
    driver.create_agent(2);
    driver.settle();
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    driver.decided("claim-lost").len()
}

#[test]
fn without_fresh_state_a_deleted_pod_is_still_tried() {
    assert_eq!(
        claims_lost_after_delete(None),
        0,
        "the fresh list shows it gone"
    );
    assert_eq!(claims_lost_after_delete(Some("fresh-state")), 1);
}

/// Whether a pod that ran a 20-minute job is reaped one minute after it went idle.
fn reaped_one_minute_after_a_long_job(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    driver.create_agent(1);
    driver.settle();
    let pod = driver.decided("create")[0].pod.clone().expect("a pod");
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.now_ms = 20 * MINUTE_MS;
    driver.complete(&pod, 1);
    driver.settle();
    driver.now_ms = 21 * MINUTE_MS;
    driver.ping();
    driver.settle();
    !driver.decided("reap-idle").is_empty()
}

#[test]
fn without_idle_timeout_idleness_counts_from_creation() {
    assert!(!reaped_one_minute_after_a_long_job(None));
    assert!(reaped_one_minute_after_a_long_job(Some("idle-timeout")));
}

/// Whether an idle pod made before a server restart is claimed after it.
fn claimed_after_restart(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    driver.restart_with(Safe::new(2));
    if let Some(name) = name {
        ablate(&mut driver, 2, name);
    }
    driver.create_agent(2);
    driver.settle();
    !driver.decided("claim").is_empty()
}

#[test]
fn without_canonical_hash_a_restart_makes_idle_pods_foreign() {
    assert!(claimed_after_restart(None));
    assert!(!claimed_after_restart(Some("canonical-hash")));
}

/// Whether the claiming job still gets its pod after a refusal for another job.
fn claimer_served_after_a_refusal(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    let pod = driver.idle_pod_after_job(1, None);
    driver.create_agent(2);
    driver.settle();
    assert!(!driver.should_assign(&pod, 3), "claimed for job 2");
    driver.should_assign(&pod, 2)
}

#[test]
fn without_pure_assign_a_refusal_forgets_the_pod() {
    assert!(claimer_served_after_a_refusal(None));
    assert!(!claimer_served_after_a_refusal(Some("pure-assign")));
}

/// Whether an idle pod whose agent the server shows building is claimed for another job.
fn busy_at_the_server_claimed(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    let pod = driver.idle_pod_after_job(1, None);
    // The server gave the agent a job the allocator has not heard of yet.
    driver.set_agent(&pod, AgentState::Building);
    driver.create_agent(2);
    driver.settle();
    !driver.decided("claim").is_empty()
}

#[test]
fn without_assignable_a_pod_busy_at_the_server_is_claimed() {
    // (The environment half of rule 6 is also in rule 4's hash, which covers it.)
    assert!(!busy_at_the_server_claimed(None));
    assert!(busy_at_the_server_claimed(Some("assignable")));
}

/// Whether an unregistered pod of the previous server process is deleted at once.
fn orphan_reaped_after_restart(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    driver.create_agent(2);
    driver.settle();
    driver.now_ms = MINUTE_MS;
    driver.restart_with(Safe::new(2));
    if let Some(name) = name {
        ablate(&mut driver, 2, name);
    }
    driver.now_ms = MINUTE_MS + 10_000;
    driver.create_agent(2);
    driver.settle();
    !driver.decided("reap-orphan").is_empty()
}

#[test]
fn without_restart_adoption_old_unregistered_pods_wait_out_art() {
    assert!(orphan_reaped_after_restart(None));
    assert!(!orphan_reaped_after_restart(Some("restart-adoption")));
}

/// Whether an idle pod whose container restarted is claimed for the next job.
fn restarted_pod_claimed(name: Option<&str>) -> bool {
    let mut driver = driver(name);
    let pod = driver.idle_pod_after_job(1, None);
    driver.restart_container(&pod);
    driver.create_agent(2);
    driver.settle();
    driver
        .decided("claim")
        .iter()
        .any(|d| d.pod.as_deref() == Some(pod.as_str()))
}

#[test]
fn without_container_restart_a_restarted_pod_is_reused() {
    assert!(!restarted_pod_claimed(None));
    assert!(restarted_pod_claimed(Some("container-restart")));
}

/// Pods after two Running pods and two more create-agents, with pending_pods_count 2.
fn pods_after_running_ones(name: Option<&str>) -> usize {
    let mut driver = Driver::with_allocator(
        Safe::new(1),
        ClusterProfile {
            pending_pods_count: 2,
            ..ClusterProfile::default()
        },
    );
    if let Some(name) = name {
        ablate(&mut driver, 1, name);
    }
    for job_id in 1..=2 {
        driver.create_agent(job_id);
    }
    driver.settle();
    for pod in driver.pod_names() {
        driver.register(&pod);
    }
    for job_id in 3..=4 {
        driver.create_agent(job_id);
    }
    driver.settle();
    driver.pod_names().len()
}

#[test]
fn without_limits_running_pods_block_creates() {
    assert_eq!(pods_after_running_ones(None), 4);
    assert_eq!(pods_after_running_ones(Some("limits")), 2);
}

#[test]
fn every_declared_rule_has_a_test_here() {
    let tested = [
        "reservations",
        "fresh-state",
        "idle-timeout",
        "canonical-hash",
        "pure-assign",
        "assignable",
        "restart-adoption",
        "container-restart",
        "limits",
    ];
    let declared: Vec<&str> = SAFE_ABLATIONS.iter().map(|(rule, _)| rule.name()).collect();
    assert_eq!(declared, tested);
}
