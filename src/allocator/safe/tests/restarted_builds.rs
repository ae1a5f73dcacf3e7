//! Pods whose build died (container restarted under a job of ours, or pod failed) go at
//! once, although the server still shows their agent building (explore/elastic seeds 40880
//! and 20298): the server reschedules the job only once the agent is gone or lost.

use super::super::Safe;
use super::{MINUTE_MS, with_reuse};
use crate::allocator::AgentState;
use crate::resources::PodPhase;

/// explore/elastic seed 40880: a container restart killed job 90's build; `safe` disabled
/// the pod but waited to delete it while the server showed the agent building. The server
/// marked it LostContact 300 s later, crashed before a hung-job check, came back with the
/// agent Missing (live), and when the agent was lost again `safe` deleted it at the same
/// ping as the last idle agents: with no agent live the server never rescheduled job 90.
/// A restart after a list that was issued once the agent was known registered killed the
/// registered go-agent, and its successor cannot register: whatever the server shows it
/// building is dead. (`tests.rs` has the other edge: no such list.)
#[test]
fn a_restart_after_a_list_dated_the_registered_container_deletes_the_pod_at_once() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert!(driver.should_assign(&pod, 2));
    driver.set_agent(&pod, AgentState::Building);
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "a healthy pod building job 2");
    driver.restart_container(&pod);
    driver.ping();
    driver.settle();
    assert!(driver.server.disabled.contains(&pod));
    assert!(
        driver.kube.deleted(&pod) || driver.kube.terminating(&pod),
        "the build died with the container: nothing to wait for"
    );
    assert!(
        driver.server.deleted.contains(&pod),
        "the agent goes too, so the server's hung-job check reschedules job 2"
    );
    assert_eq!(driver.decided("reap-restarted").len(), 1);
}

/// explore/elastic seed 20298: a failed pod's agent stayed Building at the server until LOST,
/// twice, and the long job's last instance started too late to end in the run. No container
/// runs in a failed pod: it goes at once, so the hung-job check reschedules the job.
#[test]
fn a_failed_pod_goes_at_once_while_the_server_shows_it_building() {
    let mut driver = with_reuse();
    let pod = driver.idle_pod_after_job(1, None);
    assert!(driver.should_assign(&pod, 2));
    driver.set_agent(&pod, AgentState::Building);
    driver.set_phase(&pod, PodPhase::Failed);
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod) || driver.kube.terminating(&pod));
    assert!(driver.server.deleted.contains(&pod));
    assert_eq!(driver.decided("reap-failed").len(), 1);
}

/// explore/elastic seed 1784: the server crashed while a pod built a long job; the restarted
/// process, which had not given the job, saw the agent building, and when the container
/// restarted later it waited for LOST, which a second crash pushed 500 s out. An agent seen
/// building is registered just as one this process gave a job.
#[test]
fn a_restart_after_a_restarted_process_saw_the_agent_building_deletes_the_pod_at_once() {
    let mut driver = with_reuse();
    driver.create_agent(1);
    driver.settle();
    let pod = driver.pod_of(1);
    driver.register(&pod);
    assert!(driver.should_assign(&pod, 1));
    driver.now_ms = MINUTE_MS;
    driver.restart_with(Safe::new(2));
    driver.set_agent(&pod, AgentState::Building);
    driver.ping();
    driver.settle();
    driver.ping();
    driver.settle();
    assert!(!driver.kube.deleted(&pod), "a healthy pod building job 1");
    driver.restart_container(&pod);
    driver.ping();
    driver.settle();
    assert!(driver.kube.deleted(&pod) || driver.kube.terminating(&pod));
    assert!(driver.server.deleted.contains(&pod));
}
