use crate::allocator::{AgentState, ClusterProfile, ConfigState, Policy};
use crate::resources::{KubeError, PodPhase};
use crate::testkit::{Driver, GRACE_MS};

const ART_MS: u64 = 600_000;

fn driver(pending_pods_count: u32) -> Driver {
    let profile = ClusterProfile {
        pending_pods_count,
        ..ClusterProfile::default()
    };
    let mut d = Driver::new(Policy::Upstream, 2, profile);
    d.auto_answer = true;
    d
}

#[test]
fn creates_only_while_fewer_than_pending_pods_count_pods_are_not_running() {
    let mut d = driver(2);
    d.create_agent(1);
    d.create_agent(2);
    d.create_agent(3);
    assert_eq!(d.kube.pod_count(), 2);
    assert!(d.pods_for_job(3).is_empty());
    assert_eq!(d.codes_for(3), ["skip-limit"]);
    let text = &d.decisions.last().expect("a decision was made").text;
    assert!(text.contains("2 pods not Running"), "{text}");

    let first = d.pod_of(1);
    d.set_phase(&first, PodPhase::Running);
    d.create_agent(3);
    assert_eq!(
        d.pods_for_job(3).len(),
        1,
        "a Running pod frees a pending slot"
    );
    assert_eq!(d.finished.len(), 4);
}

#[test]
fn failed_pods_count_toward_the_limit_until_a_ping_reaps_them() {
    let mut d = driver(1);
    d.create_agent(1);
    let failed = d.pod_of(1);
    d.set_phase(&failed, PodPhase::Failed);
    d.create_agent(2);
    assert_eq!(d.codes_for(2), ["skip-limit"]);

    d.now_ms += ART_MS + 1;
    d.ping();
    assert!(
        !d.kube.listed(&failed),
        "the unregistered failed pod is reaped (no container runs: gone at once)"
    );
    assert!(d.has_decision("reap-unregistered", &failed));
    d.create_agent(2);
    assert_eq!(d.pods_for_job(2).len(), 1);
}

#[test]
fn a_resent_create_agent_for_a_job_that_has_a_pod_creates_nothing() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.set_phase(&pod, PodPhase::Running);
    d.create_agent(1);
    d.create_agent(1);
    assert_eq!(d.pods_for_job(1), [pod]);
    assert_eq!(d.codes_for(1), ["create", "skip-existing", "skip-existing"]);
}

#[test]
fn should_assign_work_is_true_only_for_the_pods_own_job() {
    let mut d = driver(10);
    d.create_agent(1);
    d.create_agent(2);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    assert!(!d.should_assign(&pod, 2));
    assert!(
        d.should_assign(&pod, 1),
        "a false answer leaves the pod known"
    );
    assert!(!d.should_assign("k8s-ea-unknown", 1));
}

#[test]
fn job_completion_disables_the_agent_deletes_the_pod_then_deletes_the_agent() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Building, ConfigState::Enabled);
    d.server.log.clear();
    let id = d.job_completion(&pod, 1);
    assert_eq!(
        d.server.log,
        [
            format!("disable-agent {pod}"),
            format!("delete-pod {pod}"),
            format!("delete-agent {pod}")
        ]
    );
    assert!(
        d.kube.terminating(&pod),
        "its container stops within the grace period"
    );
    assert!(d.server.agents.is_empty());
    assert!(d.finished.contains(&id));
    d.wait(GRACE_MS);
    assert_eq!(d.kube.pod_count(), 0);
}

#[test]
fn a_failed_pod_delete_on_job_completion_leaves_the_disabled_agent_to_the_next_ping() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Building, ConfigState::Enabled);
    d.auto_answer = false;
    let id = d.job_completion(&pod, 1);
    d.answer_next_with(Err(KubeError::Timeout));
    assert!(d.finished.contains(&id));
    assert_eq!(d.server.agents[&pod].config_state, ConfigState::Disabled);
    assert!(d.has_decision("delete-failed", &pod));

    d.auto_answer = true;
    d.put_agent(&pod, AgentState::Idle, ConfigState::Disabled);
    d.ping();
    assert!(
        d.kube.terminating(&pod),
        "the ping deletes the disabled idle agent's pod"
    );
    assert!(d.server.agents.is_empty());
}

#[test]
fn a_ping_deletes_an_unregistered_pod_only_once_it_is_older_than_the_auto_register_timeout() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.now_ms += ART_MS;
    d.ping();
    assert!(d.kube.listed(&pod), "exactly ART old is not older than ART");
    d.now_ms += 1;
    d.ping();
    assert!(!d.kube.listed(&pod), "never started: gone at once");
    assert_eq!(d.codes_for(1), ["create", "reap-unregistered"]);
}

#[test]
fn a_ping_disables_and_deletes_an_idle_agent_older_than_the_auto_register_timeout() {
    let mut d = driver(10);
    d.create_agent(1);
    d.create_agent(2);
    let idle = d.pod_of(1);
    let busy = d.pod_of(2);
    d.put_agent(&idle, AgentState::Idle, ConfigState::Enabled);
    d.put_agent(&busy, AgentState::Building, ConfigState::Enabled);
    d.ping();
    assert_eq!(d.kube.live_count(), 2, "young agents are kept");

    d.now_ms += ART_MS + 1;
    d.server.log.clear();
    d.ping();
    let expected = [
        format!("disable-agent {idle}"),
        format!("delete-pod {idle}"),
        format!("delete-agent {idle}"),
    ];
    assert_eq!(d.server.log, expected);
    assert!(d.kube.terminating(&idle));
    assert!(!d.kube.deleted(&busy), "a Building agent is never reaped");
    assert!(d.has_decision("disable-old", &idle));
    assert!(d.has_decision("reap-idle", &idle));
}

#[test]
fn a_ping_disables_and_deletes_agents_whose_pod_is_gone() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Building, ConfigState::Enabled);
    d.delete_externally(&pod);
    d.wait(GRACE_MS);
    assert!(!d.kube.listed(&pod));
    d.ping();
    assert_eq!(d.server.log.last(), Some(&format!("delete-agent {pod}")));
    assert!(d.has_decision("reap-missing", &pod));
}

#[test]
fn create_requests_queue_behind_the_lock_and_each_finishes_once_even_when_calls_time_out() {
    let mut d = driver(10);
    // A first ping makes the cluster's map, so no first-use listing comes before the lock.
    d.ping();
    d.finished.clear();
    d.auto_answer = false;
    let first = d.create_agent(1);
    let second = d.create_agent(2);
    let third = d.create_agent(3);
    assert_eq!(d.queue.len(), 1, "only the lock holder lists pods");
    assert_eq!(d.codes_for(2), ["queued"]);

    d.answer_next_with(Err(KubeError::Timeout));
    assert_eq!(
        d.next_verb(),
        Some("create-pod"),
        "a failed refresh decides on the stale map"
    );
    d.answer_next_with(Err(KubeError::Timeout));
    assert_eq!(d.finished, [first]);
    assert_eq!(
        d.next_verb(),
        Some("list-pods"),
        "the next request takes the lock"
    );

    // A server ping is not under the lock: it runs while the second create-agent waits.
    let ping = d.ping();
    assert_eq!(d.queue.len(), 2);
    d.settle();
    assert_eq!(d.finished, [first, ping, second, third]);
    assert!(d.pods_for_job(1).is_empty());
    assert_eq!(d.pods_for_job(2).len(), 1);
    assert_eq!(d.pods_for_job(3).len(), 1);
}

#[test]
fn after_a_restart_listed_pods_are_adopted_from_their_labels() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.restart(3);
    d.create_agent(1);
    assert_eq!(
        d.pods_for_job(1),
        std::slice::from_ref(&pod),
        "the adopted pod still dedupes its job"
    );
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    assert!(d.should_assign(&pod, 1));
}

#[test]
fn a_failed_pod_delete_ends_the_ping_which_still_finishes_once() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Disabled);
    d.put_agent("k8s-ea-orphan", AgentState::Idle, ConfigState::Enabled);
    d.auto_answer = false;
    let ping = d.ping();
    d.answer_next_with(Err(KubeError::Timeout));
    assert_eq!(
        d.next_verb(),
        Some("delete-pod"),
        "a failed refresh keeps the stale map"
    );
    d.answer_next_with(Err(KubeError::ServerError));
    assert_eq!(d.finished.last(), Some(&ping));
    assert!(d.queue.is_empty());
    assert!(d.has_decision("ping-aborted", &pod));
    assert!(!d.kube.deleted(&pod));
    assert!(
        d.server.agents.contains_key(&pod),
        "the agent delete is skipped"
    );
    assert!(
        d.server.agents.contains_key("k8s-ea-orphan"),
        "checkForPossiblyMissingAgents never runs"
    );
}

#[test]
fn after_a_restart_should_assign_work_is_answered_after_the_first_listing() {
    let mut d = driver(10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    d.restart(3);
    d.auto_answer = false;
    d.kube.served.clear();
    assert!(
        d.should_assign(&pod, 1),
        "the held get-work is answered from the listing"
    );
    assert_eq!(d.kube.served, ["list-pods"]);
    d.kube.served.clear();
    assert!(
        !d.should_assign(&pod, 2),
        "a known cluster profile needs no listing"
    );
    assert!(d.kube.served.is_empty());
}
