//! Faults behave as the real system does (`docs/scenario-format.md`): a server crash keeps the
//! builds of agents that come back in time, kills the auto-register keys of pending pods, and
//! a restarted agent container cannot register again.

use elasticsim::allocator::Policy;
use elasticsim::trace::Record;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn records_of(text: &str, policy: Policy, seed: u64) -> Vec<(u64, Record)> {
    crate::common::records_under(&crate::common::scenario(text), seed, policy)
}

fn scenario_text(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"));
    std::fs::read_to_string(path).expect("the scenario file exists")
}

/// Five long jobs are building when the server crashes for 45 s.
const CRASH_WHILE_BUILDING: &str = r#"
name = "crash-while-building"
duration = "20m"
settle = "20m"

[plugin]
enable_agent_reuse = true

[[profiles]]
name = "small"
image = "gocd/gocd-agent:v25.1.0"
cpu = "500m"
memory = "1Gi"

[[jobs]]
kind = "burst"
at = "10s"
count = 5
spread = "5s"
profile = "small"
runtime = { min = "6m", max = "8m" }

[[faults]]
at = "3m"
kind = "server_crash"
downtime = "45s"
"#;

#[test]
fn agents_that_ping_again_within_the_connection_timeout_keep_their_jobs_across_a_crash() {
    for policy in [Policy::Upstream, Policy::Pr355, Policy::Safe] {
        for seed in 1..=3 {
            let records = records_of(CRASH_WHILE_BUILDING, policy, seed);
            let crash_ms = records
                .iter()
                .find(|(_, record)| matches!(record, Record::ServerStopped))
                .map(|(t_ms, _)| *t_ms)
                .expect("the crash happens");
            let mut building: BTreeMap<u64, String> = BTreeMap::new();
            for (t_ms, record) in &records {
                if let Record::JobAssigned { job, agent, .. } = record
                    && *t_ms < crash_ms
                {
                    building.insert(*job, agent.clone());
                }
            }
            assert_eq!(building.len(), 5, "{policy:?} seed {seed}: all five build");
            let rescheduled: Vec<u64> = records
                .iter()
                .filter_map(|(_, record)| match record {
                    Record::JobRescheduled { job, .. } => Some(*job),
                    _ => None,
                })
                .collect();
            assert!(
                rescheduled.iter().all(|job| !building.contains_key(job)),
                "{policy:?} seed {seed}: a build that survived the crash was rescheduled"
            );
            for (job, agent) in &building {
                let completed_there = records.iter().any(|(_, record)| {
                    matches!(record, Record::JobCompleted { job: j, agent: a }
                        if j == job && a == agent)
                });
                assert!(
                    completed_there,
                    "{policy:?} seed {seed}: job {job} on {agent}"
                );
            }
        }
    }
}

#[test]
fn pods_pending_at_a_crash_never_register_and_are_refused_for_their_dead_key() {
    let text = scenario_text("server-crash-pending");
    for policy in [Policy::Upstream, Policy::Safe] {
        for seed in 1..=3 {
            let records = records_of(&text, policy, seed);
            let crash_ms = records
                .iter()
                .find(|(_, record)| matches!(record, Record::ServerStopped))
                .map(|(t_ms, _)| *t_ms)
                .expect("the crash happens");
            let mut created_before: BTreeSet<String> = BTreeSet::new();
            let mut registered_before: BTreeSet<String> = BTreeSet::new();
            for (_, record) in records.iter().filter(|(t_ms, _)| *t_ms < crash_ms) {
                match record {
                    Record::PodCreated { pod, .. } => {
                        created_before.insert(pod.clone());
                    }
                    Record::AgentRegistered { agent, .. } => {
                        registered_before.insert(agent.clone());
                    }
                    _ => {}
                }
            }
            let pending: BTreeSet<&String> =
                created_before.difference(&registered_before).collect();
            assert!(
                !pending.is_empty(),
                "{policy:?} seed {seed}: pods pending at the crash"
            );
            let mut refused: BTreeSet<&String> = BTreeSet::new();
            for (_, record) in &records {
                match record {
                    Record::AgentRegistered { agent, .. } => assert!(
                        !pending.contains(agent),
                        "{policy:?} seed {seed}: pending pod {agent} registered after the crash"
                    ),
                    Record::AgentRegistrationRefused { agent, reason, .. }
                        if pending.contains(agent) =>
                    {
                        assert!(
                            reason.contains("auto-register key"),
                            "{policy:?} seed {seed}: refusal of {agent} says {reason:?}"
                        );
                        refused.insert(agent);
                    }
                    _ => {}
                }
            }
            assert!(
                !refused.is_empty(),
                "{policy:?} seed {seed}: no pending pod tried"
            );
        }
    }
}

#[test]
fn a_restarted_agent_container_is_refused_registration() {
    let text = scenario_text("reuse-container-restart");
    for policy in [Policy::Pr355, Policy::Safe] {
        for seed in 1..=3 {
            let records = records_of(&text, policy, seed);
            let (restart_ms, pod) = records
                .iter()
                .find_map(|(t_ms, record)| match record {
                    Record::ContainerRestarted { pod, .. } => Some((*t_ms, pod.clone())),
                    _ => None,
                })
                .expect("the idle agent's container restarts");
            let after = records.iter().filter(|(t_ms, _)| *t_ms >= restart_ms);
            let (mut refusals, mut deleted) = (0, false);
            for (_, record) in after {
                match record {
                    Record::AgentRegistered { agent, .. } => {
                        assert_ne!(agent, &pod, "{policy:?} seed {seed}: it registered again");
                    }
                    Record::AgentRegistrationRefused { agent, .. } if *agent == pod => {
                        refusals += 1;
                    }
                    Record::PodDeleted {
                        pod: deleted_pod, ..
                    } if *deleted_pod == pod => {
                        deleted = true;
                    }
                    _ => {}
                }
            }
            // The new agent boots first (`[server] agent_boot`): `safe` may delete the restarted
            // pod before it ever tries; otherwise it tries and is refused.
            assert!(
                refusals > 0 || (policy == Policy::Safe && deleted),
                "{policy:?} seed {seed}: the new agent tried and failed, or its pod went first"
            );
        }
    }
}
