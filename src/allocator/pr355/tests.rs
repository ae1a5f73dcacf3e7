use crate::allocator::{AgentState, ClusterProfile, ConfigState, Policy};
use crate::resources::PodPhase;
use crate::testkit::{Driver, GRACE_MS};

fn driver(policy: Policy, process_id: u64, reuse: bool, pending_pods_count: u32) -> Driver {
    let profile = ClusterProfile {
        enable_agent_reuse: reuse,
        pending_pods_count,
        ..ClusterProfile::default()
    };
    let mut d = Driver::new(policy, process_id, profile);
    d.auto_answer = true;
    d
}

/// Job 1 runs on a new pod and completes; after a ping the pod is Idle and Running in the map.
fn with_one_idle_pod(process_id: u64) -> (Driver, String) {
    let mut d = driver(Policy::Pr355, process_id, true, 10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.set_phase(&pod, PodPhase::Running);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    assert!(d.should_assign(&pod, 1));
    d.put_agent(&pod, AgentState::Building, ConfigState::Enabled);
    d.job_completion(&pod, 1);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    d.ping();
    assert!(!d.kube.deleted(&pod), "a young idle pod survives the ping");
    (d, pod)
}

#[test]
fn five_create_agents_seeing_one_idle_running_pod_create_no_pod() {
    let (mut d, pod) = with_one_idle_pod(2);
    for job_id in 2..=6 {
        d.create_agent(job_id);
    }
    assert_eq!(d.kube.pod_count(), 1, "no pod created: {:?}", d.kube);
    for job_id in 2..=6 {
        assert_eq!(d.codes_for(job_id), ["skip-reuse"]);
    }
    assert!(d.has_decision("skip-reuse", &pod));
}

#[test]
fn job_completion_with_reuse_keeps_the_pod_and_the_enabled_agent() {
    let (mut d, pod) = with_one_idle_pod(2);
    assert!(
        !d.server
            .log
            .iter()
            .any(|line| line.contains("disable") || line.contains("delete"))
    );
    assert_eq!(d.server.agents[&pod].config_state, ConfigState::Enabled);
    assert!(d.has_decision("complete-idle", &pod));
    assert!(
        d.should_assign(&pod, 9),
        "any job with the same hash is assigned"
    );
}

#[test]
fn an_externally_deleted_idle_pod_is_still_counted_until_the_next_ping() {
    let (mut d, pod) = with_one_idle_pod(2);
    d.delete_externally(&pod);
    d.wait(GRACE_MS);
    d.create_agent(2);
    assert_eq!(
        d.codes_for(2),
        ["skip-reuse"],
        "the stale map still shows the idle pod"
    );
    assert_eq!(d.kube.pod_count(), 0);

    d.ping();
    assert!(
        d.has_decision("reap-missing", &pod),
        "the ping drops the pod and its agent"
    );
    d.create_agent(2);
    assert_eq!(d.pods_for_job(2).len(), 1);
}

#[test]
fn the_all_pods_limit_counts_running_pods_even_with_reuse_off() {
    let mut pr355 = driver(Policy::Pr355, 2, false, 1);
    let mut upstream = driver(Policy::Upstream, 2, false, 1);
    for d in [&mut pr355, &mut upstream] {
        d.create_agent(1);
        let pod = d.pod_of(1);
        d.set_phase(&pod, PodPhase::Running);
        d.put_agent(&pod, AgentState::Building, ConfigState::Enabled);
        d.ping();
        d.create_agent(2);
    }
    assert_eq!(pr355.codes_for(2), ["skip-limit"]);
    assert!(pr355.pods_for_job(2).is_empty());
    assert_eq!(
        upstream.pods_for_job(2).len(),
        1,
        "master limits only pods not Running"
    );
}

#[test]
fn a_false_from_should_assign_work_evicts_the_pod_and_its_job_gets_a_second_pod() {
    let mut d = driver(Policy::Pr355, 2, false, 10);
    d.create_agent(1);
    d.create_agent(2);
    let pod = d.pod_of(1);
    d.set_phase(&pod, PodPhase::Running);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);

    // The server asks about the earlier-queued job 2 first.
    assert!(!d.should_assign(&pod, 2));
    assert!(d.has_decision("evict", &pod));
    assert!(
        !d.should_assign(&pod, 1),
        "the evicted pod cannot take its own job"
    );
    d.create_agent(1);
    assert_eq!(
        d.pods_for_job(1).len(),
        2,
        "the starvation resend creates a second pod"
    );
}

#[test]
fn with_reuse_on_a_hash_mismatch_also_evicts_the_pod() {
    let (mut d, pod) = with_one_idle_pod(2);
    let image = d
        .elastic_properties
        .insert("Image".to_owned(), "other".to_owned());
    assert!(
        !d.should_assign(&pod, 2),
        "a job of another elastic profile is refused"
    );
    d.elastic_properties
        .insert("Image".to_owned(), image.expect("the driver sets an image"));
    assert!(
        !d.should_assign(&pod, 2),
        "the pod is gone from the map until the next ping"
    );
    d.ping();
    assert!(d.should_assign(&pod, 2));
}

#[test]
fn after_a_restart_the_first_use_listing_finds_the_pods_before_any_decision() {
    // `getAgentInstancesFor` lists the pods the first time a process sees a cluster profile,
    // synchronously, before create-agent or should-assign-work decide: a job that has a pod
    // gets no second one after a restart.
    for (reuse, code) in [(false, "skip-existing"), (true, "skip-reuse")] {
        let mut d = driver(Policy::Pr355, 2, reuse, 10);
        d.create_agent(1);
        let pod = d.pod_of(1);
        d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
        d.restart(4);
        d.kube.served.clear();
        d.create_agent(1);
        assert_eq!(d.kube.served, ["list-pods"], "reuse {reuse}: no create-pod");
        assert_eq!(d.pods_for_job(1), std::slice::from_ref(&pod));
        assert_eq!(d.codes_for(1), ["create", code], "reuse {reuse}");
        assert!(
            d.should_assign(&pod, 1),
            "reuse {reuse}: the adopted pod takes its job"
        );
    }
}

#[test]
fn after_a_restart_should_assign_work_waits_for_the_first_listing() {
    let mut d = driver(Policy::Pr355, 2, false, 10);
    d.create_agent(1);
    let pod = d.pod_of(1);
    d.put_agent(&pod, AgentState::Idle, ConfigState::Enabled);
    d.restart(4);
    d.auto_answer = false;
    d.kube.served.clear();
    assert!(d.should_assign(&pod, 1), "answered once the listing is in");
    assert_eq!(d.kube.served, ["list-pods"]);
    assert_eq!(d.decided("first-use-refresh").len(), 2, "one per process");
}

#[test]
fn after_a_restart_adopted_pods_are_unknown_yet_still_win_should_assign_work() {
    let (mut d, pod) = with_one_idle_pod(2);
    // Process 4 salts `Map.of` like process 2, so the hash strings agree.
    d.restart(4);
    d.ping();
    d.create_agent(2);
    assert_eq!(
        d.codes_for(2),
        ["create"],
        "an Unknown pod is not eligible for reuse"
    );
    assert_eq!(d.pods_for_job(2).len(), 1);
    assert!(
        d.should_assign(&pod, 2),
        "yet it matches by hash and takes job 2 first"
    );
}

#[test]
fn after_a_restart_the_hash_string_of_a_different_process_may_not_match() {
    let (mut d, pod) = with_one_idle_pod(2);
    d.restart(3);
    d.ping();
    assert!(
        !d.should_assign(&pod, 2),
        "the JSON key order differs in process 3"
    );
    assert!(d.has_decision("evict", &pod));
    d.create_agent(2);
    assert_eq!(d.codes_for(2), ["evict", "create"]);
}
