//! The go-agent boots before it registers (`[server] agent_boot`): the container's entrypoint,
//! the bootstrapper's downloads of the agent's jars and plugins from the server, then the agent
//! JVM (gocd/gocd@f17b6f3fc9, `AgentBootstrapper.java`, `AgentLauncherImpl.launch`,
//! `AgentProcessParentImpl.run`, `AgentController.performWork` → `SslInfrastructureService
//! .registerIfNecessary`). Meanwhile the pod is Running and no agent is registered, and the
//! plugin's auto-register timeout counts from the pod's creation
//! (gocd/kubernetes-elastic-agents@8128178, `KubernetesAgentInstances
//! .terminateUnregisteredInstances`).

use elasticsim::allocator::Policy;
use elasticsim::trace::Record;

fn records_of(text: &str, policy: Policy, seed: u64) -> Vec<(u64, Record)> {
    crate::common::records_under(&crate::common::scenario(text), seed, policy)
}

/// One job; its pod starts in 5 s and its agent boots `boot`; the plugin deletes pods that
/// have not registered `art` after their creation.
fn one_job(boot: &str, art: &str) -> String {
    format!(
        r#"
name = "agent-boot"
duration = "10m"
settle = "10m"

[cluster]
pod_startup = "5s"

[server]
agent_boot = "{boot}"

[plugin]
auto_register_timeout = "{art}"

[[profiles]]
name = "small"

[[jobs]]
kind = "single"
at = "10s"
profile = "small"
runtime = "1m"
"#
    )
}

/// The first time a record matching `wanted` appears.
fn first(records: &[(u64, Record)], wanted: impl Fn(&Record) -> bool) -> Option<u64> {
    records
        .iter()
        .find(|(_, record)| wanted(record))
        .map(|(t_ms, _)| *t_ms)
}

#[test]
fn an_agent_registers_only_after_its_boot_and_its_job_waits_for_it() {
    for policy in [Policy::Upstream, Policy::Pr355, Policy::Safe] {
        let records = records_of(&one_job("40s", "10m"), policy, 1);
        let running = first(&records, |r| matches!(r, Record::PodRunning { .. }));
        let registered = first(&records, |r| matches!(r, Record::AgentRegistered { .. }));
        let assigned = first(&records, |r| matches!(r, Record::JobAssigned { .. }));
        let (Some(running), Some(registered), Some(assigned)) = (running, registered, assigned)
        else {
            panic!("{policy:?}: the pod runs, its agent registers and takes the job");
        };
        let boot = registered - running;
        assert!(
            (40_000..41_000).contains(&boot),
            "{policy:?}: registered {boot} ms after Running"
        );
        assert!(assigned >= registered, "{policy:?}");
    }
}

#[test]
fn an_agent_still_booting_at_the_auto_register_timeout_is_deleted_as_never_registered() {
    // The agent boots 3 minutes; the plugin gives a pod 1 minute to register. The server-ping
    // after the minute finds the pod Running with no agent and deletes it: the agent never
    // registers, and neither do the pods made for the job's starvation resends.
    let records = records_of(&one_job("3m", "1m"), Policy::Upstream, 1);
    let reaped = first(
        &records,
        |r| matches!(r, Record::Decision { code, .. } if code == "reap-unregistered"),
    );
    let registered = first(&records, |r| matches!(r, Record::AgentRegistered { .. }));
    assert!(reaped.is_some(), "the booting pod is reaped");
    assert_eq!(registered, None, "no agent ever registers");
    // With a boot shorter than the timeout the same job runs.
    let records = records_of(&one_job("20s", "1m"), Policy::Upstream, 1);
    assert!(first(&records, |r| matches!(r, Record::JobCompleted { .. })).is_some());
}
