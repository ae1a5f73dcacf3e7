//! Idle starts through lost writes and late or stale job-completions (issue 48 and the
//! explore/elastic triage of seeds 201-2000).

use super::super::Safe;
use super::{Driver, MINUTE_MS, annotated_idle_since, with_reuse};
use crate::allocator::AgentState;
use crate::resources::{KubeError, KubeRequest};

#[test]
fn an_idle_since_whose_write_failed_is_written_at_the_next_ping_and_a_restart_reads_it() {
    // Found by the explore swarm (seed 20 of scenarios/explore/elastic.toml): both writes
    // of a job's turn failed in an API outage, so the pod kept the idle-since of its earlier
    // idle period, and a process restarted later reaped it minutes early.
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert_eq!(annotated_idle_since(&driver, &pod).as_deref(), Some("0"));
    driver.now_ms = 4 * MINUTE_MS;
    assert!(driver.should_assign(&pod, 2));
    let removal = driver.answer_next_with(Err(KubeError::Timeout));
    assert!(
        matches!(removal, KubeRequest::AnnotatePod { .. }),
        "{removal:?}"
    );
    driver.now_ms = 10 * MINUTE_MS;
    driver.complete(&pod, 2);
    // The removal owed since 4 min is retried first (`retry_lost_writes`); it fails too.
    let retry = driver.answer_next_with(Err(KubeError::ServerError));
    assert!(
        matches!(&retry, KubeRequest::AnnotatePod { remove, .. } if !remove.is_empty()),
        "{retry:?}"
    );
    let write = driver.answer_next_with(Err(KubeError::ServerError));
    assert!(
        matches!(write, KubeRequest::AnnotatePod { .. }),
        "{write:?}"
    );
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod).as_deref(),
        Some("0"),
        "stale"
    );

    driver.now_ms = 11 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod).as_deref(),
        Some("600000"),
        "the ping writes the idle-since of the job that ended at 10 min"
    );
    driver.now_ms = 12 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.now_ms = 14 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle 4 of 5 minutes: kept");
    driver.now_ms = 15 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod), "idle 5 minutes: reaped");
}

/// Issue 48 and explore/elastic seeds 838, 914, 1415, 1971: the write removing a pod's
/// idle-since when it takes a job was lost in an API outage and never retried, so a restart
/// in a later outage read the earlier idle period's start and reaped the pod early.
#[test]
fn an_idle_since_whose_removal_failed_is_removed_at_the_next_request() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert_eq!(annotated_idle_since(&driver, &pod).as_deref(), Some("0"));
    driver.now_ms = MINUTE_MS;
    assert!(driver.should_assign(&pod, 2));
    let removal = driver.answer_next_with(Err(KubeError::ServerError));
    assert!(
        matches!(removal, KubeRequest::AnnotatePod { .. }),
        "{removal:?}"
    );
    driver.settle();
    assert_eq!(annotated_idle_since(&driver, &pod).as_deref(), Some("0"));
    driver.now_ms = 2 * MINUTE_MS;
    driver.create_agent(3);
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod),
        None,
        "the next request removes the idle start of the pod's earlier idle period"
    );
    // The job ends while the server is down; the restarted process sees the pod idle and
    // starts its clock then.
    driver.now_ms = 3 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.set_agent(&pod, AgentState::Idle);
    driver.now_ms = 5 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle for 0 of 5 minutes: kept");
}

/// explore/elastic seeds 392 and 1181: the job-completion of a pod's earlier job came
/// after the pod took its next job; it wiped that assignment, so the pod counted as idle
/// from then and was reaped 21.6 s after the next job ended.
#[test]
fn a_completion_of_an_earlier_job_leaves_the_pod_running_its_current_one() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.settle();
    // Job 1 ends at the server; a ping sees the agent idle before job 1's completion came.
    driver.now_ms = MINUTE_MS;
    driver.set_agent(&pod, AgentState::Idle);
    driver.ping();
    driver.settle();
    assert!(driver.should_assign(&pod, 2), "the idle pod takes job 2");
    driver.settle();
    driver.job_completion(&pod, 1);
    driver.settle();
    assert_eq!(driver.decided("complete-stale").len(), 1);
    assert!(driver.decided("complete-idle").is_empty());
    // Job 2 ends at 10 min, its completion not come yet: the pod is idle from then.
    driver.now_ms = 10 * MINUTE_MS;
    driver.set_agent(&pod, AgentState::Idle);
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle since 10 min: kept");
}

/// explore/elastic seeds 1414, 1971, 1181: a restarted process got a job-completion before
/// any list showed it the pod, and dropped the idle start; the first list read the
/// annotation of the pod's earlier idle period (its removal lost) and reaped it early.
#[test]
fn a_completion_before_the_restarted_process_lists_the_pod_dates_its_idle_start() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    assert!(driver.should_assign(&pod, 2));
    driver.answer_next_with(Err(KubeError::Timeout));
    driver.settle();
    driver.now_ms = 2 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.now_ms = 3 * MINUTE_MS;
    driver.complete(&pod, 2);
    let write = driver.answer_next_with(Err(KubeError::ServerError));
    assert!(
        matches!(write, KubeRequest::AnnotatePod { .. }),
        "{write:?}"
    );
    driver.settle();
    assert_eq!(annotated_idle_since(&driver, &pod).as_deref(), Some("0"));
    driver.now_ms = 5 * MINUTE_MS + 30_000;
    driver.ping();
    driver.settle();
    assert!(
        !driver.kube.deleted(&pod),
        "idle since its job ended at 3 min, not since 0: kept"
    );
}

/// explore/elastic seed 11557: the removal of the idle-since was lost in an API cut the
/// server crashed in; the job ended after the restart, and the restarted process's first
/// list (before the job's delayed completion came) read the earlier idle start and reaped
/// the pod 7 s after its job ended. It had seen the agent building on a job it never gave.
#[test]
fn a_pod_seen_building_on_a_job_an_older_process_gave_starts_its_idle_clock_anew() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert_eq!(annotated_idle_since(&driver, &pod).as_deref(), Some("0"));
    driver.now_ms = MINUTE_MS;
    assert!(driver.should_assign(&pod, 2));
    driver.answer_next_with(Err(KubeError::Timeout));
    driver.settle();
    driver.now_ms = 2 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.set_agent(&pod, AgentState::Building);
    // The restarted process's ping cannot list pods, but the server's agents show the build.
    driver.now_ms = 3 * MINUTE_MS;
    driver.ping();
    driver.answer_next_with(Err(KubeError::Timeout));
    driver.settle();
    // The job ends at 4 min; its completion has not come when the next ping lists the pod.
    driver.now_ms = 4 * MINUTE_MS;
    driver.set_agent(&pod, AgentState::Idle);
    driver.now_ms = 5 * MINUTE_MS + 30_000;
    driver.ping();
    driver.settle();
    assert!(
        !driver.kube.deleted(&pod),
        "idle since its build ended after 3 min, not since 0: kept"
    );
    assert_eq!(
        annotated_idle_since(&driver, &pod).as_deref(),
        Some("330000")
    );
    driver.now_ms = 11 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(
        driver.kube.deleted(&pod),
        "idle 5 minutes since it was seen idle: reaped"
    );
}

/// explore/elastic-slow seed 3: a server-ping waited 22 s for the lock behind six
/// create-agents whose API calls took seconds, and reaped an idle pod past IDLE + PING.
/// A create-agent's list reaps expired idle pods too, under the latest ping's settings.
#[test]
fn a_create_agent_list_reaps_an_idle_pod_past_its_idle_timeout() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle 1 of 5 minutes: kept");
    driver.now_ms = 5 * MINUTE_MS + 1;
    driver.create_agent_in(2, Some("other"));
    driver.settle();
    assert!(
        driver.kube.deleted(&pod),
        "reaped at the create-agent's list"
    );
    assert_eq!(driver.decided("reap-idle").len(), 1);
}

/// A pod running job 1 whose agent is idle again at the server at 1 min, job 1's
/// job-completion not come yet, and a create-agent for job `next` (in `environment`) listing
/// the pods then.
fn job_ended_before_its_completion(next: u64, environment: Option<&str>) -> (Driver, String) {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.settle();
    driver.now_ms = MINUTE_MS;
    driver.set_agent(&pod, AgentState::Idle);
    driver.create_agent_in(next, environment);
    driver.settle();
    (driver, pod)
}

/// explore/elastic-slow seed 1126: a job-completion came 28 s after its job ended (queued in
/// the server's one job-status listener behind others after a gocd|kube-api cut) and the
/// idle clock started only then, so the pod was reaped past IDLE + PING after the job's end.
#[test]
fn a_create_agent_list_starts_the_idle_clock_of_a_pod_whose_job_completion_is_late() {
    let (mut driver, pod) = job_ended_before_its_completion(2, Some("prod"));
    driver.now_ms = 2 * MINUTE_MS;
    driver.job_completion(&pod, 1);
    driver.settle();
    let completions = driver.decided("complete-idle");
    assert_eq!(completions.len(), 1);
    let text = &completions[0].text;
    assert!(text.contains("since t=60000"), "{text}");
    // Idle since the list at 1 min, not since the completion at 2 min.
    driver.now_ms = 6 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod), "idle for 5 of 5 minutes: reaped");
}

/// The same late job-completion after the list claimed the idle pod for the next job:
/// the claim stands.
#[test]
fn a_late_job_completion_keeps_a_claim_made_since() {
    let (mut driver, pod) = job_ended_before_its_completion(2, None);
    assert!(
        driver.has_decision("claim", &pod),
        "the released pod is claimed"
    );
    driver.job_completion(&pod, 1);
    driver.settle();
    assert!(!driver.should_assign(&pod, 3), "reserved for job 2");
    assert!(driver.should_assign(&pod, 2));
}

/// explore/elastic seed 60472: a process restarted inside a gocd|kube-api cut got a
/// job-completion before any list showed it the pod, and its write failed; its first list
/// (a create-agent's, after the cut) gave the pod that idle start but did not write it, and
/// a crash 2.2 s later left the next process the earlier idle period's start, so it reaped
/// the pod 116 s after its job ended.
#[test]
fn a_create_agent_list_writes_the_idle_start_of_a_completion_that_came_before_it() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    driver.now_ms = MINUTE_MS;
    assert!(driver.should_assign(&pod, 2));
    driver.answer_next_with(Err(KubeError::Timeout));
    driver.settle();
    driver.now_ms = 2 * MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.now_ms = 3 * MINUTE_MS;
    driver.complete(&pod, 2);
    driver.answer_next_with(Err(KubeError::ServerError));
    driver.settle();
    driver.now_ms = 4 * MINUTE_MS;
    driver.create_agent_in(3, Some("other"));
    driver.settle();
    assert_eq!(
        annotated_idle_since(&driver, &pod).as_deref(),
        Some("180000"),
        "the create-agent's list writes the idle start the completion dated"
    );
    driver.now_ms = 4 * MINUTE_MS + 5_000;
    driver.restart_with(Safe::new(3));
    driver.now_ms = 5 * MINUTE_MS + 30_000;
    driver.ping();
    driver.settle();
    assert!(
        !driver.kube.deleted(&pod),
        "idle since its job ended at 3 min, not since 0: kept"
    );
}
