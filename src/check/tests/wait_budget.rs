//! The job-wait budgets: for each, a record sequence on both sides of its edge. Bounds as in
//! `bounds()`: wait 60 s, pending limit 2, resend 20 s.

use super::{assigned, bounds, created, of, registered, run, running, scheduled};
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

/// Job 1 scheduled at 0 s, its own pod-a created at `pod_ms` if any, `start`..`end` at
/// 10–30 s, the job assigned at `assigned_ms`.
fn outage(start: Record, end: Record, pod_ms: Option<u64>, assigned_ms: u64) -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(1, 1, "H"))];
    records.extend(pod_ms.map(|t_ms| (t_ms, created("pod-a", 1, "H"))));
    records.extend([
        (10_000, start),
        (30_000, end),
        (assigned_ms, assigned(1, "pod-a", "H")),
    ]);
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records
}

#[test]
fn the_server_down_or_the_agents_cut_from_it_while_the_job_has_a_pod_moves_its_deadline() {
    let server = || (Record::ServerStopped, Record::ServerStarted);
    let agents = || {
        (
            fault_started(0, "partition", "agents|gocd"),
            fault_ended(0, "partition"),
        )
    };
    for (start, end) in [server(), agents()] {
        let within = wait_violation(&outage(start.clone(), end.clone(), Some(1_000), 79_000));
        assert!(within.expected, "{}", within.message);
        assert_eq!(within.at_ms, 60_000, "reported at the first deadline");
        assert!(
            within.message.contains("unreachable budget 20.000s"),
            "{}",
            within.message
        );
        // No recovery allowance: past 60 + 20 s the job fails, at the moved deadline.
        let beyond = wait_violation(&outage(start.clone(), end.clone(), Some(1_000), 81_000));
        assert!(!beyond.expected, "{}", beyond.message);
        assert_eq!(beyond.at_ms, 80_000);
        // Its pod made 5 s into the outage: 25–30 s only.
        let late = wait_violation(&outage(start.clone(), end.clone(), Some(25_000), 64_000));
        assert!(
            late.message.contains("unreachable budget 5.000s"),
            "{}",
            late.message
        );
        assert!(late.expected, "{}", late.message);
        // No pod of its own: the outage kept nothing of the allocator's from serving it.
        let no_pod = wait_violation(&outage(start, end, None, 79_000));
        assert!(!no_pod.expected, "{}", no_pod.message);
        assert_eq!(no_pod.at_ms, 60_000);
    }
    // Agents cut from the API can still register and fetch work: nothing is covered.
    let other = outage(
        fault_started(0, "partition", "agents|kube-api"),
        fault_ended(0, "partition"),
        Some(1_000),
        79_000,
    );
    let other = wait_violation(&other);
    assert!(!other.expected, "{}", other.message);
    assert_eq!(other.at_ms, 60_000);
}

/// Job 1's pod-a created at 1 s (its agent registered at 5 s if `registered_first`), the
/// server down 10–30 s, and a create-agent for the job at 35 s; `replaced` deletes pod-a and
/// creates pod-b in it. The job assigned at 79 s, within 60 + 20 s.
fn restart(registered_first: bool, replaced: bool) -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(1, 1, "H")), (1_000, created("pod-a", 1, "H"))];
    if registered_first {
        records.push((5_000, registered("pod-a")));
    }
    records.extend([
        (10_000, Record::ServerStopped),
        (30_000, Record::ServerStarted),
        (35_000, Record::CreateAgentStarted { job: 1, request: 1 }),
    ]);
    if replaced {
        let deleted = Record::PodDeleted {
            pod: "pod-a".to_owned(),
            by: Actor::Allocator,
        };
        records.extend([(35_050, deleted), (35_060, created("pod-b", 1, "H"))]);
    }
    records.extend([
        (35_100, Record::PluginRequestDone { request: 1 }),
        (79_000, assigned(1, "pod-b", "H")),
    ]);
    records
}

#[test]
fn a_job_left_with_only_a_pod_whose_key_died_forfeits_the_unreachable_budget() {
    // The allocator kept the pod an older server process's key can no longer register.
    let kept = wait_violation(&restart(false, false));
    assert!(!kept.expected, "{}", kept.message);
    assert_eq!(kept.at_ms, 60_000, "nothing covered");
    // It replaced the pod at the first create-agent after the restart.
    let replaced = wait_violation(&restart(false, true));
    assert!(replaced.expected, "{}", replaced.message);
    // A pod whose agent registered before the crash is known to the server: no forfeit.
    let known = wait_violation(&restart(true, false));
    assert!(known.expected, "{}", known.message);
}

/// Job 1's own pod-a created at 1 s, the server down 10–30 s, job 1 assigned at 79 s (within
/// 60 + 20 s); if `given_away`, pod-a is given job 2 (scheduled at 0.5 s) at 31 s, and job 1's
/// 79 s is on pod-b, made at 40 s.
fn given_away(given_away: bool) -> Vec<(u64, Record)> {
    let mut records = vec![
        (0, scheduled(1, 1, "H")),
        (1_000, created("pod-a", 1, "H")),
        (10_000, Record::ServerStopped),
        (30_000, Record::ServerStarted),
    ];
    if given_away {
        records.insert(1, (500, scheduled(2, 2, "H")));
        records.push((31_000, assigned(2, "pod-a", "H")));
        records.push((40_000, created("pod-b", 1, "H")));
        records.push((79_000, assigned(1, "pod-b", "H")));
    } else {
        records.push((79_000, assigned(1, "pod-a", "H")));
    }
    records
}

#[test]
fn a_job_whose_own_pod_is_given_another_job_forfeits_the_unreachable_budget() {
    // pod-a kept for job 1: the 20 s it was held back by the outage are covered.
    let kept = wait_violation(&given_away(false));
    assert!(kept.expected, "{}", kept.message);
    // pod-a served job 2 instead: job 1's wait is the allocator's choice, outage or none.
    let given = wait_violation(&given_away(true));
    assert!(given.message.contains("job 1"), "{}", given.message);
    assert!(!given.expected, "{}", given.message);
    assert_eq!(given.at_ms, 60_000, "nothing covered");
}

/// Job 1's one create-agent at 1–1.5 s; an API outage at `cut_from`..`cut_to`; `own_pod`
/// gives the job a pod of its own first. The job assigned at `assigned_ms`.
fn api_cut(cut_from: u64, cut_to: u64, own_pod: bool, assigned_ms: u64) -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(1, 1, "H"))];
    if own_pod {
        records.push((100, created("pod-a", 1, "H")));
    }
    records.extend([
        (cut_from, fault_started(0, "api_outage", "error")),
        (cut_to, fault_ended(0, "api_outage")),
        (1_000, Record::CreateAgentStarted { job: 1, request: 1 }),
        (1_500, Record::PluginRequestDone { request: 1 }),
        (assigned_ms, assigned(1, "pod-b", "H")),
    ]);
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records
}

#[test]
fn a_create_agent_a_cut_from_the_api_overlapped_moves_the_deadline_one_resend() {
    // The cut starts during the request: covered 1.5–21.5 s.
    let within = wait_violation(&api_cut(1_200, 3_000, false, 79_000));
    assert!(within.expected, "{}", within.message);
    assert!(
        within.message.contains("api-cut budget 20.000s"),
        "{}",
        within.message
    );
    let beyond = wait_violation(&api_cut(1_200, 3_000, false, 81_000));
    assert!(!beyond.expected, "{}", beyond.message);
    assert_eq!(beyond.at_ms, 80_000);
    // A cut over before the request started, or a job with a pod of its own: nothing.
    for records in [
        api_cut(200, 900, false, 79_000),
        api_cut(1_200, 3_000, true, 79_000),
    ] {
        let violation = wait_violation(&records);
        assert!(!violation.expected, "{}", violation.message);
        assert_eq!(violation.at_ms, 60_000);
    }
}

#[test]
fn a_pod_whose_key_died_is_no_pod_of_its_own_for_a_cut_create_agent() {
    // pod-a made while the server was down (50–150 ms) can never register: the cut request
    // still covers its resend (explore/elastic-slow seed 5027).
    let mut records = api_cut(1_200, 3_000, true, 79_000);
    records.extend([(50, Record::ServerStopped), (150, Record::ServerStarted)]);
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let dead = wait_violation(&records);
    assert!(dead.expected, "{}", dead.message);
    assert!(
        dead.message.contains("api-cut budget 20.000s"),
        "{}",
        dead.message
    );
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
fn a_limit_full_at_any_moment_of_the_create_agent_counts_as_full() {
    // Full when the request started; a pod went Running 50 ms before it ended. The
    // allocator's list, taken during the request, may have seen it full (seconds-band API
    // calls: explore/elastic-slow seeds 1027, 3160).
    let mut records = load(2, 79_000);
    records.push((1_050, running("pod-0")));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let raced = wait_violation(&records);
    assert!(raced.expected, "{}", raced.message);
    assert!(
        raced.message.contains("load budget 20.000s"),
        "{}",
        raced.message
    );
    // Running before the request started: the limit had room for its whole length.
    let mut records = load(2, 79_000);
    records.push((900, running("pod-0")));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let room = wait_violation(&records);
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

/// Job 1's create-agent at 1 s with `pending` pods of other jobs not Running (limit 2) and the
/// API reachable, and one at 21 s that an API outage overlaps (first if `cut_first`: 1 s and
/// 21 s swap); assigned at 99 s.
fn chance_and_cut(pending: u64, cut_first: bool) -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(1, 1, "H"))];
    for other in 0..pending {
        records.push((500, created(&format!("pod-{other}"), 10 + other, "H")));
    }
    let (chance_ms, cut_ms) = if cut_first {
        (21_000, 1_000)
    } else {
        (1_000, 21_000)
    };
    records.extend([
        (chance_ms, Record::CreateAgentStarted { job: 1, request: 1 }),
        (chance_ms + 100, Record::PluginRequestDone { request: 1 }),
        (cut_ms - 500, fault_started(0, "api_outage", "hang")),
        (cut_ms, Record::CreateAgentStarted { job: 1, request: 2 }),
        (cut_ms + 500, Record::PluginRequestDone { request: 2 }),
        (cut_ms + 9_000, fault_ended(0, "api_outage")),
        (99_000, assigned(1, "pod-b", "H")),
    ]);
    records.sort_by_key(|(t_ms, _)| *t_ms);
    records
}

#[test]
fn a_cut_create_agent_counts_only_if_no_create_agent_of_the_job_let_a_chance_go() {
    // The first found the limit full (load 1.1–21.1 s), the cut one covers 21.5–41.5 s.
    let excused = wait_violation(&chance_and_cut(2, false));
    assert!(excused.expected, "{}", excused.message);
    assert!(
        excused.message.contains("api-cut budget 20.000s"),
        "{}",
        excused.message
    );
    // One found room and made no pod, before the cut or after it: an allocator that took the
    // chance would not have waited so long, so the cut covers nothing.
    for cut_first in [false, true] {
        let let_go = wait_violation(&chance_and_cut(1, cut_first));
        assert!(!let_go.expected, "{}", let_go.message);
        assert_eq!(let_go.at_ms, 60_000);
    }
}

#[test]
fn a_create_agent_that_claimed_an_idle_pod_let_no_chance_go() {
    // The request after the cut found room and claimed an idle pod for the job instead of
    // making one (explore/elastic seed 1325 under `safe`): the cut's share still counts. The
    // job, assigned only at 99 s, fails at the moved deadline.
    let mut records = chance_and_cut(1, true);
    let claim = Record::Decision {
        job: Some(1),
        pod: Some("pod-idle".to_owned()),
        code: "claim".to_owned(),
        text: "claimed an idle pod".to_owned(),
    };
    records.push((21_050, claim));
    records.sort_by_key(|(t_ms, _)| *t_ms);
    let claimed = wait_violation(&records);
    // The deadline moves by the cut's 20 s (without the claim nothing counts: 60 s, above).
    assert_eq!(claimed.at_ms, 80_000, "{}", claimed.message);
    assert!(
        claimed.message.contains("api-cut budget 20.000s"),
        "{}",
        claimed.message
    );
}
