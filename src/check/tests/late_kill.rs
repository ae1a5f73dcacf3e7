//! The late-kill budget of `all-jobs-complete`: both sides of each of its edges. Bounds as in
//! `bounds()`: small jobs build up to 10 min, LOST 300 s, hung-job check 30 s, PING 10 s,
//! `max_job_wait` 60 s.

use super::{assigned, bounds, of, run, scheduled};
use crate::check::{InvariantId, Violation};
use crate::trace::Record;

const MINUTE_MS: u64 = 60_000;

fn rescheduled(job: u64, new_job: u64) -> Record {
    Record::JobRescheduled {
        job,
        new_job,
        reason: "hung: its agent is gone or lost contact".to_owned(),
    }
}

fn container_died(pod: &str) -> Record {
    Record::ContainerDied {
        pod: pod.to_owned(),
    }
}

fn on_node(pod: &str, node: &str) -> Record {
    Record::PodScheduled {
        pod: pod.to_owned(),
        node: node.to_owned(),
    }
}

/// Job 1 assigned on pod a at 1 min, killed by `kill` at `kill_ms`, rescheduled as job 2 at
/// `resched_ms`, job 2 assigned on pod b `wait_ms` later; the run ends at `end_ms`.
fn late_kill(
    kill: Record,
    kill_ms: u64,
    resched_ms: u64,
    wait_ms: u64,
    end_ms: u64,
) -> Vec<Violation> {
    let records = vec![
        (0, scheduled(1, 1, "c")),
        (0, on_node("a", "node-1")),
        (MINUTE_MS, assigned(1, "a", "c")),
        (kill_ms, kill),
        (resched_ms, rescheduled(1, 2)),
        (resched_ms, scheduled(2, 1, "c")),
        (resched_ms + wait_ms, assigned(2, "b", "c")),
    ];
    let violations = run(&bounds(), &records, end_ms);
    of(&violations, InvariantId::AllJobsComplete)
        .into_iter()
        .cloned()
        .collect()
}

fn is_expected(violations: &[Violation]) -> bool {
    assert_eq!(violations.len(), 1, "{violations:?}");
    violations[0].expected
}

#[test]
fn a_build_that_may_outlast_the_run_after_a_late_kill_replaced_in_time_is_expected() {
    // Died at 20 min; the agent deleted and the job rescheduled 40 s later (PING 10 s +
    // check 30 s); assigned 30 s after; up to 10 min of build from 21m10s passes 30 min.
    let violations = late_kill(
        container_died("a"),
        20 * MINUTE_MS,
        20 * MINUTE_MS + 40_000,
        30_000,
        30 * MINUTE_MS,
    );
    assert!(is_expected(&violations));
    assert!(violations[0].message.contains("late-kill budget"));
}

#[test]
fn a_build_that_should_have_ended_in_the_run_is_not_excused() {
    // The same, with the run ending 10 min after the last assignment: the build had time.
    let violations = late_kill(
        container_died("a"),
        20 * MINUTE_MS,
        20 * MINUTE_MS + 40_000,
        30_000,
        31 * MINUTE_MS + 10_000,
    );
    assert!(!is_expected(&violations));
}

#[test]
fn a_dead_pod_the_server_rescheduled_only_after_lost_is_not_excused() {
    // The container died but the job was rescheduled 41 s later: the plugin kept the dead
    // agent past its next ping, which no server rule asks for.
    let violations = late_kill(
        container_died("a"),
        20 * MINUTE_MS,
        20 * MINUTE_MS + 41_000,
        30_000,
        30 * MINUTE_MS,
    );
    assert!(!is_expected(&violations));
}

#[test]
fn a_node_loss_is_replaced_in_time_after_lost_and_a_check() {
    let lost = || Record::NodeLost {
        node: "node-1".to_owned(),
    };
    let within = 300_000 + 10_000 + 30_000;
    let kill_ms = 20 * MINUTE_MS;
    let violations = late_kill(lost(), kill_ms, kill_ms + within, 30_000, 35 * MINUTE_MS);
    assert!(is_expected(&violations));
    let violations = late_kill(
        lost(),
        kill_ms,
        kill_ms + within + 1,
        30_000,
        35 * MINUTE_MS,
    );
    assert!(!is_expected(&violations));
}

#[test]
fn a_replacement_assigned_past_max_job_wait_is_not_excused() {
    let kill_ms = 20 * MINUTE_MS;
    let violations = late_kill(
        container_died("a"),
        kill_ms,
        kill_ms + 40_000,
        60_000,
        30 * MINUTE_MS,
    );
    assert!(is_expected(&violations));
    let violations = late_kill(
        container_died("a"),
        kill_ms,
        kill_ms + 40_000,
        60_001,
        30 * MINUTE_MS,
    );
    assert!(!is_expected(&violations));
}

#[test]
fn a_job_rescheduled_with_no_kill_is_not_excused() {
    // The agent was cut from the server (no kill record): its build may have run on.
    let violations = late_kill(
        Record::ContainerRestarted {
            pod: "other".to_owned(),
            restart_count: 1,
        },
        20 * MINUTE_MS,
        20 * MINUTE_MS + 40_000,
        30_000,
        30 * MINUTE_MS,
    );
    assert!(!is_expected(&violations));
}
