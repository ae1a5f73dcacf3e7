//! Rule 9's limits for the job actually served, and lost agents that run a job of ours
//! (the explore/elastic triage of seeds 201-2000).

use super::super::Safe;
use super::{Driver, MINUTE_MS, driver, with_reuse};
use crate::allocator::{AgentState, ClusterProfile};

/// explore/elastic seeds 396, 727, 1785: a job rescheduled as hung keeps the plan of its
/// first instance, with the pending limit from before a cluster profile edit lowered it;
/// its request found room under that limit and rule 9 gave it to an older job turned away
/// under the lower one, whose pod broke that job's limit.
#[test]
fn the_room_goes_to_an_older_job_only_within_that_jobs_own_limit() {
    let mut driver = driver(ClusterProfile {
        pending_pods_count: 1,
        ..ClusterProfile::default()
    });
    driver.create_agent(1);
    driver.create_agent(2);
    driver.settle();
    assert_eq!(driver.decided("skip-limit")[0].job_id, Some(2));
    driver.settings.pending_pods_count = 2;
    driver.create_agent(3);
    driver.settle();
    assert!(
        driver.decided("skip-turn").is_empty(),
        "job 2's limit is full"
    );
    let created: Vec<Option<u64>> = driver.decided("create").iter().map(|d| d.job_id).collect();
    assert_eq!(created, vec![Some(1), Some(3)]);
}

/// explore/elastic seed 317: an agent cut from the server finished its build but could not
/// report it; the server marked it LostContact and `safe` reaped its pod 20 s before the
/// hung-job check rescheduled the job, losing the finished build. The pod of a lost agent
/// that runs a job of ours now stays until the server reschedules the job (a create-agent
/// for another instance of the same job).
#[test]
fn a_lost_agent_running_our_job_is_reaped_only_once_the_job_is_rescheduled() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.settle();
    driver.now_ms = 5 * MINUTE_MS;
    driver.set_agent(&pod, AgentState::LostContact);
    driver.ping();
    driver.settle();
    assert!(
        !driver.kube.deleted(&pod),
        "its build may be done, unreported"
    );
    assert!(driver.decided("reap-lost").is_empty());
    // The hung-job check reschedules job 1 as instance 2: its create-agent ends the
    // assignment, and the next ping reaps the lost agent's pod.
    driver.now_ms = 6 * MINUTE_MS;
    let rescheduled = crate::allocator::CreateAgentRequest {
        auto_register_key: "key-2".to_owned(),
        elastic_agent_profile_properties: driver.elastic_properties.clone(),
        cluster_profile_properties: driver.cluster_properties(),
        environment: None,
        job_identifier: crate::allocator::JobIdentifier {
            job_id: 2,
            ..Driver::job(1)
        },
    };
    driver.send(crate::allocator::PluginRequest::CreateAgent(rescheduled));
    driver.settle();
    driver.now_ms = 7 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert_eq!(driver.decided("reap-lost").len(), 1);
    assert!(driver.kube.deleted(&pod) || driver.kube.terminating(&pod));
}

/// explore/elastic seed 40453: the server crashed 24 s after our process gave a pod its job;
/// the restarted process saw the agent building, then a partition cut the agent from the
/// server, and the restarted process reaped the LostContact agent's pod with the build still
/// running, since it knew of no job of its own there. An agent seen building on a job an
/// older process gave is kept like one running a job of ours.
#[test]
fn a_lost_agent_seen_building_after_a_restart_is_not_reaped() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.settle();
    driver.now_ms = MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.set_agent(&pod, AgentState::Building);
    driver.now_ms = 2 * MINUTE_MS;
    driver.ping();
    driver.settle();
    driver.now_ms = 8 * MINUTE_MS;
    driver.set_agent(&pod, AgentState::LostContact);
    driver.ping();
    driver.settle();
    assert!(
        !driver.kube.deleted(&pod) && !driver.kube.terminating(&pod),
        "its build may still run: kept"
    );
    assert!(driver.decided("reap-lost").is_empty());
    // The agent is back and idle: its idle clock starts now, and it goes at its timeout.
    driver.now_ms = 9 * MINUTE_MS;
    driver.set_agent(&pod, AgentState::Idle);
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "idle since 9 min: kept");
    driver.now_ms = 15 * MINUTE_MS;
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod) || driver.kube.terminating(&pod));
}
