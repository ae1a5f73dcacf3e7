//! The capacity fault budget and `no-assign-while-cancelling`.

use super::{
    assigned, bounds, created, decision, of, registered, reuse_bounds, run, running, scheduled,
};
use crate::check::InvariantId;
use crate::trace::{AgentRuntime, Record};

fn node_lost(node: &str) -> Record {
    Record::NodeLost {
        node: node.to_owned(),
    }
}

fn node_joined(node: &str) -> Record {
    Record::NodeJoined {
        node: node.to_owned(),
    }
}

/// Three jobs wait on a cluster of two nodes of two slots; one node is lost at t=1s.
fn shortage(rejoin_ms: Option<u64>) -> Vec<(u64, Record)> {
    let mut records: Vec<(u64, Record)> =
        (1..=3).map(|job| (0, scheduled(job, job, "H"))).collect();
    records.push((1_000, node_lost("node-0")));
    if let Some(rejoin_ms) = rejoin_ms {
        records.push((rejoin_ms, node_joined("node-2")));
    }
    records
}

#[test]
fn liveness_violations_after_a_shortage_longer_than_replace_after_are_expected() {
    // Two slots for three jobs from t=1s; replace_after is 120 s, max_job_wait 60 s.
    let violations = run(&bounds(), &shortage(None), 400_000);
    let waits = of(&violations, InvariantId::JobWaitBound);
    assert_eq!(waits.len(), 3, "{violations:?}");
    // Waits break at t=60s, inside the budget (the shortage is only 59 s old): failures.
    assert!(
        waits.iter().all(|v| v.at_ms == 60_000 && !v.expected),
        "{waits:?}"
    );
    let incomplete = of(&violations, InvariantId::AllJobsComplete);
    assert!(!incomplete.is_empty(), "{violations:?}");
    for violation in incomplete {
        assert!(violation.expected, "{violation:?}");
        assert!(
            violation
                .message
                .contains("outside the capacity fault budget"),
            "{violation:?}"
        );
    }
}

#[test]
fn a_shortage_ended_within_replace_after_excuses_nothing() {
    let violations = run(&bounds(), &shortage(Some(100_000)), 400_000);
    let incomplete = of(&violations, InvariantId::AllJobsComplete);
    assert!(!incomplete.is_empty(), "{violations:?}");
    assert!(incomplete.iter().all(|v| !v.expected), "{incomplete:?}");
}

#[test]
fn a_queue_longer_than_the_whole_cluster_without_a_node_loss_excuses_nothing() {
    // Nine jobs for four slots all run long, but no node is lost: that is load, not a fault.
    let records: Vec<(u64, Record)> = (1..=9).map(|job| (0, scheduled(job, job, "H"))).collect();
    let violations = run(&bounds(), &records, 400_000);
    let incomplete = of(&violations, InvariantId::AllJobsComplete);
    assert!(!incomplete.is_empty(), "{violations:?}");
    assert!(incomplete.iter().all(|v| !v.expected), "{incomplete:?}");
    let waits = of(&violations, InvariantId::JobWaitBound);
    assert!(
        !waits.is_empty() && waits.iter().all(|v| !v.expected),
        "{waits:?}"
    );
}

#[test]
fn safety_violations_are_never_excused_by_the_capacity_budget() {
    let mut records = shortage(None);
    // A third pod is created at t=200s while two are not Running (pending_pods_count 2).
    records.push((198_000, created("pod-a", 1, "H")));
    records.push((199_000, created("pod-b", 2, "H")));
    records.push((200_000, created("pod-c", 3, "H")));
    let violations = run(&bounds(), &records, 400_000);
    let limit = of(&violations, InvariantId::PendingLimit);
    assert_eq!(limit.len(), 1, "{violations:?}");
    assert!(!limit[0].expected, "{limit:?}");
}

fn agent_idle(agent: &str) -> Record {
    Record::AgentState {
        agent: agent.to_owned(),
        state: AgentRuntime::Idle,
    }
}

/// Job 1 builds on pod-a and is cancelled at t=10s; the agent is idle again at t=25s.
fn cancelled_build() -> Vec<(u64, Record)> {
    vec![
        (0, scheduled(1, 1, "H")),
        (1_000, created("pod-a", 1, "H")),
        (2_000, running("pod-a")),
        (3_000, registered("pod-a")),
        (4_000, assigned(1, "pod-a", "H")),
        (10_000, Record::JobCancelled { job: 1 }),
        (11_000, scheduled(2, 2, "H")),
    ]
}

#[test]
fn a_pod_handed_a_job_while_its_cancelled_build_is_killed_is_caught() {
    let mut records = cancelled_build();
    records.push((
        15_000,
        decision(2, "skip-reuse", "pod-a is idle and reusable"),
    ));
    let violations = run(&reuse_bounds(), &records, 30_000);
    let found = of(&violations, InvariantId::NoAssignWhileCancelling);
    assert_eq!(found.len(), 1, "{violations:?}");
    assert_eq!(found[0].at_ms, 15_000);
    assert!(found[0].objects.contains(&"pod:pod-a".to_owned()));
    assert!(found[0].objects.contains(&"job:2".to_owned()));
}

#[test]
fn handing_the_pod_a_job_once_its_agent_is_idle_again_is_fine() {
    let mut records = cancelled_build();
    records.push((25_000, agent_idle("pod-a")));
    records.push((26_000, decision(2, "claim", "claimed pod-a")));
    records.push((27_000, assigned(2, "pod-a", "H")));
    // The cancelled job's own decisions are not a new job.
    records.push((12_000, decision(1, "assign-yes", "late answer")));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let violations = run(&reuse_bounds(), &records, 30_000);
    assert!(
        of(&violations, InvariantId::NoAssignWhileCancelling).is_empty(),
        "{violations:?}"
    );
}
