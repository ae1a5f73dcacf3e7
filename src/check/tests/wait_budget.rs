//! The job-wait budgets: for each, a record sequence on both sides of its edge. Bounds as in
//! `bounds()`: wait 60 s, pending limit 2, resend 20 s.

use super::{assigned, bounds, created, of, registered, run, scheduled};
use crate::check::InvariantId;
use crate::check::Violation;
use crate::trace::{Actor, Record};

/// The one `job-wait-bound` violation of a run of `records` ended at 200 s.
fn wait_violation(records: &[(u64, Record)]) -> Violation {
    let violations = run(&bounds(), records, 200_000);
    let waits = of(&violations, InvariantId::JobWaitBound);
    assert_eq!(waits.len(), 1, "{violations:#?}");
    waits[0].clone()
}

#[test]
fn a_server_outage_or_a_cut_moves_no_deadline() {
    // No outage budget: one covering the outage and a recovery hid rule 7 (`restart-adoption`)
    // ablated and upstream's wait for an older process's pods (docs/invariants.md).
    for (start, end) in [
        (Record::ServerStopped, Record::ServerStarted),
        (
            fault_started(0, "partition", "agents|gocd"),
            fault_ended(0, "partition"),
        ),
    ] {
        let records = vec![
            (0, scheduled(1, 1, "H")),
            (10_000, start),
            (30_000, end),
            (70_000, assigned(1, "pod-b", "H")),
        ];
        let violation = wait_violation(&records);
        assert!(!violation.expected, "{}", violation.message);
        assert_eq!(violation.at_ms, 60_000);
    }
}

/// Job 1's pod on node n1, the node lost at 10 s and the pod evicted at 40 s (covered:
/// 10–60 s with one resend); `registered_first` registers its agent before the loss.
fn stranded(registered_first: bool, assigned_ms: u64) -> Vec<(u64, Record)> {
    let mut records = vec![
        (0, scheduled(1, 1, "H")),
        (1_000, created("pod-a", 1, "H")),
        (1_500, pod_scheduled("pod-a", "n1")),
    ];
    if registered_first {
        records.push((5_000, registered("pod-a")));
    }
    records.extend([
        (
            10_000,
            Record::NodeLost {
                node: "n1".to_owned(),
            },
        ),
        (
            40_000,
            Record::PodDeleted {
                pod: "pod-a".to_owned(),
                by: Actor::NodeLoss,
            },
        ),
        (assigned_ms, assigned(1, "pod-b", "H")),
    ]);
    records
}

#[test]
fn a_jobs_own_pod_stranded_on_a_lost_node_moves_its_deadline_to_eviction_and_one_resend() {
    let within = wait_violation(&stranded(false, 109_000));
    assert!(within.expected, "{}", within.message);
    assert!(
        within.message.contains("stranded-pod budget 50.000s"),
        "{}",
        within.message
    );
    let beyond = wait_violation(&stranded(false, 111_000));
    assert!(!beyond.expected, "{}", beyond.message);
    assert_eq!(beyond.at_ms, 110_000);
    // A pod whose agent had registered is no slow starter: the server knew the agent.
    let known = wait_violation(&stranded(true, 109_000));
    assert!(!known.expected, "{}", known.message);
    assert_eq!(known.at_ms, 60_000);
}

/// Job 1's one create-agent (at 1 s, done at 1.1 s) with `pending` pods of other jobs not
/// Running (limit 2); the job assigned at `assigned_ms`.
fn load(pending: u64, assigned_ms: u64) -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(1, 1, "H"))];
    for other in 0..pending {
        records.push((500, created(&format!("pod-{other}"), 10 + other, "H")));
    }
    records.extend([
        (1_000, Record::CreateAgentStarted { job: 1, request: 1 }),
        (1_100, Record::PluginRequestDone { request: 1 }),
        (assigned_ms, assigned(1, "pod-b", "H")),
    ]);
    records
}

#[test]
fn a_create_agent_that_found_the_pending_limit_full_moves_the_deadline_one_resend() {
    let within = wait_violation(&load(2, 79_000));
    assert!(within.expected, "{}", within.message);
    assert!(
        within.message.contains("load budget 20.000s"),
        "{}",
        within.message
    );
    let beyond = wait_violation(&load(2, 81_000));
    assert!(!beyond.expected, "{}", beyond.message);
    assert_eq!(beyond.at_ms, 80_000);
    // One pod short of the limit: the allocator had room, nothing is covered.
    let room = wait_violation(&load(1, 79_000));
    assert!(!room.expected, "{}", room.message);
    assert_eq!(room.at_ms, 60_000);
}

#[test]
fn overlapping_budgets_count_each_second_once() {
    // Load 0.4–20.4 s (a full limit, no pod of its own), then its pod stranded 10–60 s.
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (100, created("pod-0", 10, "H")),
        (200, created("pod-1", 11, "H")),
        (300, Record::CreateAgentStarted { job: 1, request: 1 }),
        (400, Record::PluginRequestDone { request: 1 }),
        (1_000, created("pod-a", 1, "H")),
        (1_500, pod_scheduled("pod-a", "n1")),
        (
            10_000,
            Record::NodeLost {
                node: "n1".to_owned(),
            },
        ),
        (
            40_000,
            Record::PodDeleted {
                pod: "pod-a".to_owned(),
                by: Actor::NodeLoss,
            },
        ),
        (125_000, assigned(1, "pod-b", "H")),
    ];
    let beyond = wait_violation(&records);
    assert!(!beyond.expected, "{}", beyond.message);
    assert_eq!(beyond.at_ms, 119_600, "60 s + the 59.6 s union, not 70 s");
}

fn fault_started(index: u32, fault: &str, target: &str) -> Record {
    Record::FaultStarted {
        index,
        fault: fault.to_owned(),
        target: target.to_owned(),
    }
}

fn fault_ended(index: u32, fault: &str) -> Record {
    Record::FaultEnded {
        index,
        fault: fault.to_owned(),
    }
}

fn pod_scheduled(pod: &str, node: &str) -> Record {
    Record::PodScheduled {
        pod: pod.to_owned(),
        node: node.to_owned(),
    }
}
