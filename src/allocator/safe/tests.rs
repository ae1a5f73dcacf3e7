//! Behaviour of `safe`, one rule per test, driven through the allocator test kit.

use super::{EXPIRY_MARGIN_MS, Safe, view};
use crate::allocator::{AgentState, BuildState, ClusterProfile, RequestId};
use crate::resources::{KubeError, KubeRequest, PodPhase};
use crate::testkit;

type Driver = testkit::Driver<Safe>;

/// `safe` in process 1, with these settings.
fn driver(settings: ClusterProfile) -> Driver {
    Driver::with_allocator(Safe::new(1), settings)
}

/// Reuse on, idle timeout 5 minutes, auto-register timeout 10 minutes.
fn with_reuse() -> Driver {
    driver(ClusterProfile {
        enable_agent_reuse: true,
        ..ClusterProfile::default()
    })
}

const MINUTE_MS: u64 = 60_000;

#[test]
fn n_create_agents_seeing_one_idle_pod_claim_it_once_and_create_the_rest() {
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    driver.now_ms = 10_000;
    let ids: Vec<RequestId> = (2..=6).map(|job_id| driver.create_agent(job_id)).collect();
    driver.settle();
    assert!(ids.iter().all(|id| driver.is_finished(*id)));
    let claims = driver.decided("claim");
    assert_eq!(claims.len(), 1, "one idle pod answers one create-agent");
    assert_eq!(claims[0].pod.as_deref(), Some(idle.as_str()));
    let claimer = claims[0].job_id.expect("a claim names its job");
    let created: Vec<u64> = driver
        .decided("create")
        .iter()
        .filter_map(|d| d.job_id)
        .filter(|j| *j != 1)
        .collect();
    assert_eq!(created.len(), 4, "the other four jobs get pods at once");
    assert!(!created.contains(&claimer));
    for job_id in (2..=6).filter(|job_id| *job_id != claimer) {
        assert!(
            !driver.should_assign(&idle, job_id),
            "a claimed pod refuses job {job_id}"
        );
    }
    assert!(driver.should_assign(&idle, claimer));
}

#[test]
fn an_externally_deleted_idle_pod_does_not_suppress_creation() {
    // kubectl delete between the list and the claim. The pod's container runs, so the pod
    // stays listed, Terminating: the claim's CAS meets the delete's new resourceVersion, the
    // GET shows the deletion timestamp, and the pod is not reused.
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    let id = driver.create_agent(2);
    assert!(driver.answer_next(), "the create-agent lists pods first");
    driver.delete_externally(&idle);
    assert!(driver.answer_next(), "the claim meets the conflict");
    assert_eq!(
        driver.next_verb(),
        Some("get-pod"),
        "revalidated with a GET"
    );
    driver.settle();
    assert!(driver.is_finished(id));
    assert!(driver.decided("claim").is_empty());
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    assert_eq!(
        driver.kube.live_count(),
        1,
        "only the new pod for job 2 lives"
    );
}

#[test]
fn an_idle_pod_gone_before_the_claim_is_a_lost_claim() {
    // The same delete, its grace period over before the claim lands: the CAS answers
    // NotFound.
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    let id = driver.create_agent(2);
    assert!(driver.answer_next(), "the create-agent lists pods first");
    driver.delete_externally(&idle);
    driver.wait(testkit::GRACE_MS);
    driver.settle();
    assert!(driver.is_finished(id));
    assert_eq!(driver.decided("claim-lost").len(), 1);
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    assert_eq!(
        driver.pod_names().len(),
        1,
        "only the new pod for job 2 exists"
    );
}

#[test]
fn a_changed_idle_pod_is_not_claimed_on_a_stale_resource_version() {
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    driver.create_agent(2);
    assert!(driver.answer_next());
    // The container restarts between the list and the claim: the CAS answers Conflict.
    driver.restart_container(&idle);
    driver.settle();
    assert!(driver.decided("claim").is_empty());
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
}

#[test]
fn idle_pods_are_deleted_after_idle_timeout_measured_from_idle_since() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.decided("create")[0]
        .pod
        .clone()
        .expect("create names the pod");
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    // A long job: the pod is far older than ART and idle_timeout when it finishes.
    driver.now_ms = 20 * MINUTE_MS;
    driver.ping();
    driver.settle();
    driver.complete(&pod, 1);
    driver.settle();
    driver.now_ms = 24 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle for 4 of 5 minutes: kept");
    assert!(driver.server.disabled.is_empty());
    driver.now_ms = 25 * MINUTE_MS;
    driver.ping();
    assert!(driver.answer_next(), "the ping lists pods first");
    assert!(
        driver.server.disabled.contains(&pod),
        "disabled at the server first"
    );
    assert!(!driver.kube.deleted(&pod), "then deleted");
    driver.settle();
    assert!(driver.kube.deleted(&pod));
    assert_eq!(driver.server.deleted, vec![pod.clone()]);
    assert_eq!(driver.decided("reap-idle").len(), 1);
}

#[test]
fn assigned_pods_are_never_reaped_and_a_taken_claim_keeps_its_pod() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = 4 * MINUTE_MS;
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("claim").len(), 1);
    assert!(driver.should_assign(&pod, 2));
    driver.now_ms = 30 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "building: kept");
    assert!(driver.server.disabled.is_empty());
    assert!(driver.decided("reap-idle").is_empty());
}

#[test]
fn a_claim_not_taken_by_the_idle_timeout_does_not_keep_its_pod_alive() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = 4 * MINUTE_MS;
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("claim").len(), 1);
    driver.now_ms = 4 * MINUTE_MS + 30_000;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "claimed, not expired: kept");
    // The agent never came for its job (cut off from the server): idle_timeout still holds.
    driver.now_ms = 5 * MINUTE_MS + 30_000;
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod));
    let reaped = driver.decided("reap-idle");
    assert_eq!(reaped.len(), 1);
    assert!(reaped[0].text.contains("claim for job 2 was not taken"));
    // The job's next create-agent makes a pod instead of waiting on the dead claim.
    driver.create_agent(2);
    driver.settle();
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
}

#[test]
fn an_idle_pod_about_to_expire_is_not_claimed() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = 5 * MINUTE_MS - EXPIRY_MARGIN_MS;
    driver.create_agent(2);
    driver.settle();
    assert!(driver.decided("claim").is_empty());
    let created = driver.decided("create");
    assert!(
        created
            .iter()
            .any(|d| d.job_id == Some(2) && d.pod.as_deref() != Some(&pod))
    );
}

#[test]
fn a_claim_keeps_the_idle_clock_so_a_pod_whose_claimer_ran_elsewhere_expires_on_time() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = 3 * MINUTE_MS;
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("claim").len(), 1);
    // Job 2 goes to another agent: the claim is spent, the pod idle since t=0 all along.
    driver.create_agent(3);
    driver.settle();
    let other = driver.decided("create").last().and_then(|d| d.pod.clone());
    let other = other.expect("job 3 gets a new pod");
    driver.register(&other);
    assert!(driver.should_assign(&other, 3));
    driver.complete(&other, 3);
    driver.settle();
    assert!(driver.should_assign(&other, 2));
    driver.now_ms = 5 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod), "reaped 5 minutes after t=0");
}

#[test]
fn a_claim_taken_by_assignment_while_in_flight_ends_the_create_without_a_pod() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    let id = driver.create_agent(2);
    assert!(driver.answer_next(), "the list");
    // The claim write is in flight when the agent asks for work and gets job 2.
    assert!(driver.should_assign(&pod, 2));
    driver.settle();
    assert!(driver.is_finished(id));
    assert!(driver.decided("create").iter().all(|d| d.job_id != Some(2)));
    assert_eq!(driver.pod_names(), vec![pod]);
}

#[test]
fn a_claim_written_before_a_restart_for_a_job_served_then_does_not_pin_the_pod() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("claim").len(), 1);
    // Job 2 ran on another agent; then the server restarts: the new process never hears
    // of job 2 again, so its claim on the pod is void.
    driver.restart_with(Safe::new(2));
    driver.now_ms = 2 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(driver.should_assign(&pod, 7), "the pod is free for any job");
}

#[test]
fn should_assign_work_answering_false_changes_nothing() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.create_agent(2);
    driver.settle();
    let before = format!("{:?}", driver.allocator.view);
    assert!(!driver.should_assign(&pod, 3), "claimed for job 2");
    assert!(
        !driver.should_assign_in(&pod, 2, Some("other")),
        "another environment"
    );
    assert_eq!(format!("{:?}", driver.allocator.view), before);
    assert!(driver.queue.is_empty(), "no calls issued");
    assert!(
        driver.should_assign(&pod, 2),
        "the claiming job still gets the pod"
    );
}

#[test]
fn a_pod_whose_container_restarted_is_never_reused_and_is_disabled_then_deleted() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.restart_container(&pod);
    driver.create_agent(2);
    assert!(driver.answer_next(), "the list shows the restart");
    assert!(driver.server.disabled.contains(&pod));
    assert!(!driver.should_assign(&pod, 3));
    driver.settle();
    assert!(driver.kube.deleted(&pod));
    assert!(driver.server.deleted.contains(&pod));
    assert!(driver.decided("claim").is_empty());
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    assert_eq!(driver.decided("reap-restarted").len(), 1);
}

/// No list issued since the agent registered dated the container: the restart may have come
/// before the registration (`restarted_builds.rs` has the other edge).
#[test]
fn a_restarted_pod_still_building_at_the_server_is_disabled_but_not_deleted_yet() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.set_agent(&pod, AgentState::Building);
    driver.restart_container(&pod);
    driver.ping();
    driver.settle();
    assert!(driver.server.disabled.contains(&pod));
    assert!(
        !driver.kube.deleted(&pod),
        "no kill while the server shows a build"
    );
    // The server gives up on the build (LostContact) and reschedules the job itself.
    driver.set_agent(&pod, AgentState::LostContact);
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod));
}

#[test]
fn after_a_rebuild_registered_pods_are_adopted_and_unregistered_old_pods_deleted_at_once() {
    let mut driver = with_reuse();
    let busy = driver.idle_pod_after_job(1, None);
    assert!(driver.should_assign(&busy, 3));
    driver.create_agent(2);
    driver.settle();
    let stuck = driver
        .decided("create")
        .last()
        .and_then(|d| d.pod.clone())
        .expect("a pod");
    driver.now_ms = MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.now_ms = MINUTE_MS + 10_000;
    driver.create_agent(2);
    driver.settle();
    assert!(
        driver.kube.deleted(&stuck),
        "its key died: deleted long before ART"
    );
    assert_eq!(driver.decided("reap-orphan").len(), 1);
    let replacement = driver.decided("create").last().and_then(|d| d.pod.clone());
    let replacement = replacement.expect("job 2 gets a new pod despite the old job label");
    assert_ne!(replacement, stuck);
    assert!(!driver.kube.deleted(&busy), "the building pod is adopted");
    driver.complete(&busy, 3);
    driver.settle();
    driver.create_agent(4);
    driver.settle();
    let claim = driver.decided("claim");
    assert_eq!(
        claim.last().and_then(|d| d.pod.as_deref()),
        Some(busy.as_str())
    );
}

#[test]
fn idle_since_survives_a_server_restart() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = 3 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.now_ms = 5 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(
        driver.kube.deleted(&pod),
        "idle since t=0, so reaped at t=5 min"
    );
    assert_eq!(driver.decided("reap-idle").len(), 1);
}

/// The idle-since annotation of `pod` in the cluster.
fn annotated_idle_since(driver: &Driver, pod: &str) -> Option<String> {
    let annotations = &driver.kube.pod(pod).expect("the pod is listed").annotations;
    annotations.get(view::annotation::IDLE_SINCE_MS).cloned()
}

#[test]
fn a_pod_in_environment_a_is_never_counted_for_a_job_in_environment_b() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, Some("a"));
    driver.create_agent_in(2, Some("b"));
    driver.settle();
    assert!(driver.decided("claim").is_empty());
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    assert!(!driver.should_assign_in(&pod, 2, Some("b")));
    driver.create_agent_in(3, Some("a"));
    driver.settle();
    assert_eq!(driver.decided("claim")[0].job_id, Some(3));
}

#[test]
fn the_pending_limit_counts_only_pods_not_running() {
    let settings = ClusterProfile {
        pending_pods_count: 2,
        ..ClusterProfile::default()
    };
    let mut driver = driver(settings);
    for job_id in 1..=3 {
        driver.create_agent(job_id);
    }
    driver.settle();
    assert_eq!(driver.pod_names().len(), 2);
    assert_eq!(driver.decided("skip-limit").len(), 1);
    for pod in driver.pod_names() {
        driver.register(&pod);
    }
    for job_id in 3..=4 {
        driver.create_agent(job_id);
    }
    driver.settle();
    assert_eq!(
        driver.pod_names().len(),
        4,
        "two Running pods do not block two more"
    );
    let fourth = driver.pod_names()[3].clone();
    driver.set_phase(&fourth, PodPhase::Failed);
    driver.create_agent(5);
    driver.settle();
    assert_eq!(
        driver.decided("skip-limit").len(),
        2,
        "Pending + Failed fill the limit"
    );
}

#[test]
fn max_pods_limits_all_pods() {
    let settings = ClusterProfile {
        max_pods: Some(2),
        ..ClusterProfile::default()
    };
    let mut driver = driver(settings);
    for job_id in 1..=2 {
        driver.create_agent(job_id);
    }
    driver.settle();
    for pod in driver.pod_names() {
        driver.register(&pod);
    }
    driver.create_agent(3);
    driver.settle();
    assert_eq!(driver.pod_names().len(), 2);
    assert_eq!(driver.decided("skip-max-pods").len(), 1);
}

#[test]
fn every_request_finishes_exactly_once_when_calls_time_out() {
    for error in [KubeError::Timeout, KubeError::ServerError] {
        let mut driver = with_reuse();
        let pod = driver.idle_pod_after_job(1, None);
        assert!(driver.should_assign(&pod, 5));
        let mut ids = vec![
            driver.create_agent(2),
            driver.ping(),
            driver.complete(&pod, 5),
        ];
        ids.push(driver.create_agent(3));
        while !driver.queue.is_empty() {
            driver.answer_next_with(Err(error));
        }
        assert!(
            ids.iter().all(|id| driver.is_finished(*id)),
            "{error:?}: all finished"
        );
        // The driver asserts that no request finishes twice; the next round still works.
        driver.create_agent(6);
        driver.settle();
        assert!(driver.allocator.calls.is_empty());
        assert!(driver.allocator.lock_holder.is_none());
    }
}

#[test]
fn a_claim_that_times_out_still_creates_a_pod() {
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    let id = driver.create_agent(2);
    assert!(driver.answer_next());
    let claim = driver.answer_next_with(Err(KubeError::Timeout));
    assert!(matches!(
        claim,
        KubeRequest::AnnotatePod {
            resource_version: Some(_),
            ..
        }
    ));
    driver.settle();
    assert!(driver.is_finished(id));
    assert!(driver.decided("create").iter().any(|d| d.job_id == Some(2)));
    assert!(
        !driver.should_assign(&idle, 3),
        "still reserved for job 2 only"
    );
}

#[test]
fn a_create_agent_for_an_already_assigned_job_makes_no_pod() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert!(
        driver.should_assign(&pod, 7),
        "an unclaimed idle pod takes a matching job"
    );
    driver.settle();
    driver.create_agent(7);
    assert!(driver.queue.is_empty());
    assert_eq!(driver.decided("skip-assigned").len(), 1);
    // The same when the assignment lands while the list is in flight.
    driver.complete(&pod, 7);
    driver.settle();
    driver.create_agent(8);
    assert!(driver.should_assign(&pod, 8));
    driver.settle();
    assert_eq!(driver.decided("skip-assigned").len(), 2);
    assert_eq!(driver.pod_names().len(), 1);
}

#[test]
fn a_repeated_create_agent_waits_on_the_pod_reserved_for_its_job() {
    let mut driver = driver(ClusterProfile::default());
    driver.create_agent(1);
    driver.settle();
    driver.now_ms = 2 * MINUTE_MS;
    driver.create_agent(1);
    driver.settle();
    assert_eq!(driver.pod_names().len(), 1);
    assert_eq!(driver.decided("skip-existing").len(), 1);
}

#[test]
fn a_pod_that_never_registers_is_deleted_after_art_and_its_job_gets_a_new_pod() {
    let mut driver = driver(ClusterProfile::default());
    driver.create_agent(1);
    driver.settle();
    let first = driver.pod_names()[0].clone();
    driver.now_ms = 9 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&first), "within ART: kept");
    driver.now_ms = 10 * MINUTE_MS;
    driver.create_agent(1);
    driver.settle();
    assert!(driver.kube.deleted(&first));
    assert_eq!(driver.decided("reap-unregistered").len(), 1);
    assert_eq!(driver.pod_names().len(), 1, "a replacement pod for job 1");
}

#[test]
fn without_reuse_a_pod_runs_only_its_own_job_and_is_deleted_on_completion() {
    let mut driver = driver(ClusterProfile::default());
    driver.create_agent(1);
    driver.create_agent(2);
    driver.settle();
    let pods = driver.pod_names();
    assert_eq!(pods.len(), 2, "one pod per job");
    for pod in &pods {
        driver.register(pod);
    }
    let for_job_1 = driver.decided("create")[0]
        .pod
        .clone()
        .expect("create names the pod");
    assert!(!driver.should_assign(&for_job_1, 2));
    assert!(driver.should_assign(&for_job_1, 1));
    driver.complete(&for_job_1, 1);
    assert!(
        driver.server.disabled.contains(&for_job_1),
        "disabled before the delete"
    );
    driver.settle();
    assert!(driver.kube.deleted(&for_job_1));
    assert!(driver.server.deleted.contains(&for_job_1));
}

#[test]
fn a_claim_meeting_a_conflict_is_revalidated_with_a_get_and_retried() {
    let mut driver = with_reuse();
    let idle = driver.idle_pod_after_job(1, None);
    driver.create_agent(2);
    assert!(driver.answer_next());
    // A harmless write between the list and the claim (`kubectl annotate`).
    driver.kube.annotate_externally(driver.now_ms, &idle);
    assert!(driver.answer_next(), "the claim meets the conflict");
    assert!(matches!(
        driver.queue.front(),
        Some((_, KubeRequest::GetPod { .. }))
    ));
    driver.settle();
    let claims = driver.decided("claim");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].pod.as_deref(), Some(idle.as_str()));
    assert!(!driver.decided("create").iter().any(|d| d.job_id == Some(2)));
}

#[test]
fn a_replacement_pod_is_created_only_after_the_dead_pod_of_its_job_is_deleted() {
    let mut driver = driver(ClusterProfile::default());
    driver.create_agent(1);
    driver.settle();
    let old = driver.pod_names()[0].clone();
    driver.restart_with(Safe::new(2));
    driver.now_ms = 15_000;
    let id = driver.create_agent(1);
    assert!(driver.answer_next(), "the list");
    assert_eq!(driver.queue.len(), 1);
    assert!(matches!(&driver.queue[0].1, KubeRequest::DeletePod { name } if *name == old));
    assert!(driver.answer_next(), "the delete of the pod whose key died");
    assert!(matches!(&driver.queue[0].1, KubeRequest::CreatePod { .. }));
    driver.settle();
    assert!(driver.is_finished(id));
    assert_eq!(driver.pod_names().len(), 1);
    assert_ne!(driver.pod_names()[0], old);
}

#[test]
fn a_pod_whose_job_ran_elsewhere_starts_its_idle_clock_when_seen_idle() {
    let mut driver = with_reuse();
    let first = driver.idle_pod_after_job(1, None);
    assert!(driver.should_assign(&first, 5));
    driver.settle();
    driver.create_agent(2);
    driver.settle();
    let second = driver
        .decided("create")
        .last()
        .and_then(|d| d.pod.clone())
        .expect("a pod");
    driver.complete(&first, 5);
    driver.settle();
    assert!(
        driver.should_assign(&first, 2),
        "an unclaimed idle pod takes job 2 at once"
    );
    driver.now_ms = 30_000;
    driver.register(&second);
    assert!(
        !driver.should_assign(&second, 2),
        "job 2 already runs elsewhere"
    );
    driver.now_ms = 40_000;
    driver.ping();
    driver.settle();
    let marks = driver.decided("idle-since");
    assert!(
        marks
            .iter()
            .any(|d| d.pod.as_deref() == Some(second.as_str()))
    );
    driver.now_ms = 40_000 + 5 * MINUTE_MS - 1;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&second));
    driver.now_ms = 40_000 + 5 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(
        driver.kube.deleted(&second),
        "reaped idle_timeout after idle-since"
    );
}

#[test]
fn a_create_waiting_for_a_failed_delete_finishes_without_a_second_pod() {
    let mut driver = driver(ClusterProfile::default());
    driver.create_agent(1);
    driver.settle();
    driver.restart_with(Safe::new(2));
    driver.now_ms = 15_000;
    let id = driver.create_agent(1);
    assert!(driver.answer_next(), "the list");
    driver.answer_next_with(Err(KubeError::Timeout));
    assert!(driver.is_finished(id));
    assert!(driver.queue.is_empty());
    assert_eq!(driver.decided("skip-deleting").len(), 1);
    driver.create_agent(1);
    driver.settle();
    assert_eq!(
        driver.pod_names().len(),
        1,
        "the retry deletes the old pod, then replaces it"
    );
    assert_eq!(driver.decided("create").len(), 2);
}

#[test]
fn agent_lookups_in_any_order_find_exactly_the_listed_agents() {
    use super::super::messages::{AgentMetadata, BuildState, ConfigState};
    let listed = ["a", "c", "d", "f", "g"];
    let listing: super::super::AgentList = listed
        .iter()
        .rev()
        .map(|id| {
            std::sync::Arc::new(AgentMetadata {
                agent_id: (*id).into(),
                agent_state: AgentState::Idle,
                build_state: BuildState::Idle,
                config_state: ConfigState::Enabled,
            })
        })
        .collect();
    let agents = view::View::default().agents(listing);
    // In order, backwards, and jumping about, with misses between.
    let walks = ["abcdefgh", "hgfedcba", "gadbfce", "ffaagg"];
    for walk in walks {
        for id in walk.chars().map(String::from) {
            let found = agents.get(&id).map(|agent| &*agent.agent_id);
            let expected = listed.contains(&id.as_str()).then_some(id.as_str());
            assert_eq!(found, expected, "looking up {id} in walk {walk}");
        }
    }
    assert_eq!(agents.ids().collect::<Vec<_>>(), listed);
}

#[test]
fn a_pod_still_killing_a_cancelled_build_takes_no_job_until_its_agent_is_idle() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.decided("create")[0]
        .pod
        .clone()
        .expect("create names the pod");
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    // The user cancels job 1: job-completion comes at once, while the agent still reports
    // Building (build state Cancelled) until it has killed the build.
    driver.complete(&pod, 1);
    driver.settle();
    let agent = driver.server.agents.get_mut(&pod).expect("registered");
    agent.agent_state = AgentState::Building;
    agent.build_state = BuildState::Cancelled;
    assert!(!driver.should_assign(&pod, 2), "the build is being killed");
    let refused = driver.decided("assign-no");
    assert!(
        refused
            .last()
            .is_some_and(|d| d.text.contains("cancelled build"))
    );
    driver.set_agent(&pod, AgentState::Idle);
    assert!(driver.should_assign(&pod, 2), "the kill is over");
}

/// Found by `explore/elastic.toml` (19 of seeds 1–200 once it drew `job_cancel`): a job
/// cancelled while scheduled gets no job-completion (the server sends one only for a job an
/// elastic agent ran) and no further create-agent, so its fresh pod's reservation stays live
/// until the claim deadline. The idle clock must run from the first idle sighting anyway, as
/// for any idle pod (rule 3: a claimed pod is kept only until its idle timeout).
#[test]
fn a_pod_reserved_for_a_job_that_never_comes_is_reaped_idle_timeout_after_it_was_seen_idle() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver
        .decided("create")
        .last()
        .and_then(|d| d.pod.clone())
        .expect("a pod for job 1");
    // Job 1 is cancelled while scheduled: the plugin hears nothing more about it.
    driver.now_ms = 30_000;
    driver.register(&pod);
    driver.now_ms = 40_000;
    driver.ping();
    driver.settle();
    let marked = driver.decided("idle-since");
    assert!(
        marked
            .iter()
            .any(|d| d.pod.as_deref() == Some(pod.as_str())),
        "the reserved pod's idle clock starts when it is first seen idle"
    );
    driver.now_ms = 40_000 + 5 * MINUTE_MS - 1;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "not before idle_timeout");
    driver.now_ms = 40_000 + 5 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(
        driver.kube.deleted(&pod),
        "reaped idle_timeout after it was seen idle, long before the claim deadline"
    );
}

/// Found by `explore/elastic.toml` (seeds 77, 81 and 200 of 1–200, once its cluster-profile
/// edits could switch reuse off): under a full `pending_pods_count`, each waiting job's
/// create-agent came back at its own phase of the resend period, and one job's phase kept
/// landing just after younger jobs had filled the room; it waited past the 8-minute bound.
/// Rule 9 serves the jobs a limit turned away in turn: the room job 3's request finds makes
/// job 2's pod.
#[test]
fn the_room_a_younger_job_finds_makes_the_pod_of_a_job_the_limit_turned_away() {
    let settings = ClusterProfile {
        pending_pods_count: 1,
        ..ClusterProfile::default()
    };
    let mut driver = driver(settings);
    driver.create_agent(1);
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("skip-limit")[0].job_id, Some(2));
    let first = driver.pod_names()[0].clone();
    driver.register(&first);
    driver.now_ms = 20_000;
    driver.create_agent(3);
    driver.settle();
    assert_eq!(driver.decided("skip-turn")[0].job_id, Some(3));
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created, vec![Some(1), Some(2)]);
    let second = driver.pod_names()[1].clone();
    assert!(
        !driver.should_assign(&second, 3),
        "job 2's pod is reserved for it"
    );
    assert!(driver.should_assign(&second, 2));
    // Job 2's own resend finds its pod; job 3 keeps its turn for the next room.
    driver.register(&second);
    driver.now_ms = 120_000;
    driver.create_agent(2);
    driver.create_agent(4);
    driver.settle();
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created, vec![Some(1), Some(2), Some(3)]);
}

#[test]
fn a_turn_is_forgotten_once_its_job_stops_asking_and_the_ablation_keeps_none() {
    let settings = ClusterProfile {
        pending_pods_count: 1,
        ..ClusterProfile::default()
    };
    // (ablated, when job 3 asks, the job of the last pod made). Ablated, the limit counts the
    // Running pod too (job 3 is turned away) and no turn is kept: no pod is made for job 2.
    for (ablated, later_ms, made_for) in
        [(false, 100_000, 2), (false, 200_000, 3), (true, 100_000, 1)]
    {
        let mut driver = driver(settings.clone());
        if ablated {
            let ablations = crate::ablation::Ablations::of([crate::ablation::Ablation::Limits]);
            driver.allocator = Safe::with_ablations(1, ablations);
        }
        driver.create_agent(1);
        driver.create_agent(2);
        driver.settle();
        let first = driver.pod_names()[0].clone();
        driver.register(&first);
        // Job 2 was cancelled while scheduled: it never asks again.
        driver.now_ms = later_ms;
        driver.create_agent(3);
        driver.settle();
        let created = driver.decided("create").last().and_then(|d| d.job_id);
        assert_eq!(
            created,
            Some(made_for),
            "ablated {ablated}, at {later_ms} ms"
        );
        assert_eq!(driver.decided("skip-turn").is_empty(), made_for != 2);
    }
}

/// Found by `explore/elastic.toml` (seed 32 of 1–40): the write that removes a new pod's
/// claim when it takes its job was lost in a partition, the job ran past the claim's
/// deadline, its job-completion's idle-since write was lost in another partition and the
/// server crashed before a ping wrote it again. The restarted process saw the pod idle with
/// no idle-since and the old claim, dated the idle start from the claim's deadline, and
/// reaped the pod 142 s after its job ended. A claim an older process wrote may have been
/// taken since, so it does not date the idle start.
#[test]
fn a_claim_an_older_process_wrote_does_not_date_the_idle_start() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    let removal = driver.answer_next_with(Err(KubeError::Timeout));
    assert!(
        matches!(removal, KubeRequest::AnnotatePod { .. }),
        "{removal:?}"
    );
    // The job runs 30 minutes, past the claim's deadline (ART + 150 s).
    driver.now_ms = 30 * MINUTE_MS;
    driver.complete(&pod, 1);
    let write = driver.answer_next_with(Err(KubeError::Timeout));
    assert!(
        matches!(write, KubeRequest::AnnotatePod { .. }),
        "{write:?}"
    );
    assert_eq!(annotated_idle_since(&driver, &pod), None);
    driver.restart_with(Safe::new(2));
    driver.now_ms = 31 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod).as_deref(),
        Some("1860000"),
        "idle from the restarted process's first sighting, not from the claim's deadline"
    );
    driver.now_ms = 32 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle 2 of 5 minutes: kept");
    driver.now_ms = 36 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(
        driver.kube.deleted(&pod),
        "idle 5 minutes: reaped (gone or Terminating)"
    );
}

/// Found by `explore/elastic.toml` (seed 59 of 1–200): a job-completion's idle-since write
/// and the next assignment's write removing it were in flight together and applied out of
/// order, so the busy pod carried the idle start; the server crashed inside a later
/// partition and the restarted process reaped the pod 128 s after its next job ended.
#[test]
fn an_idle_since_landing_after_the_assignment_removed_it_is_removed_again() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.settle();
    driver.now_ms = MINUTE_MS;
    driver.complete(&pod, 1);
    assert!(
        driver.should_assign(&pod, 2),
        "the idle pod takes the next job"
    );
    // The assignment's removal is applied first, the completion's write second.
    driver.answer_at(1);
    driver.answer_at(0);
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod),
        None,
        "a pod running job 2 carries no idle start"
    );
}

mod ablation;
mod lost_agents_and_limits;
mod lost_writes;
mod merge;
mod pod_table;
mod restarted_builds;
mod turns;
