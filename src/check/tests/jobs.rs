use super::{
    agent_deleted, assigned, bounds, clean_life, completed, decision, of, registered, run,
    scheduled,
};
use crate::check::InvariantId;
use crate::check::Kind;
use crate::trace::Record;

#[test]
fn a_job_unassigned_past_max_wait_violates_at_its_deadline_naming_the_allocators_answers() {
    let mut records = vec![(1_000, scheduled(7, 7, "H"))];
    for t_ms in [2_000, 3_000, 4_000] {
        let text = "found 1 eligible idle pod pod-a";
        records.push((t_ms, decision(7, "skip-reuse", text)));
    }
    records.push((70_000, Record::Sample));
    let violations = run(&bounds(), &records, 70_000);
    let waits = of(&violations, InvariantId::JobWaitBound);
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].at_ms, 61_000);
    assert_eq!(waits[0].kind, Kind::Always);
    assert_eq!(
        waits[0].objects,
        vec!["job:7".to_owned(), "pod:pod-a".to_owned()]
    );
    let message = &waits[0].message;
    assert!(message.contains("job 7"), "{message}");
    assert!(message.contains("60.000s"), "{message}");
    assert!(
        message.contains("skip-reuse (found 1 eligible idle pod pod-a) ×3"),
        "{message}"
    );
}

#[test]
fn a_job_assigned_exactly_at_its_deadline_does_not_violate() {
    let records = vec![
        (1_000, scheduled(7, 7, "H")),
        (61_000, assigned(7, "pod-a", "H")),
        (90_000, completed(7, "pod-a")),
    ];
    let violations = run(&bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::JobWaitBound).is_empty());
}

#[test]
fn a_job_still_waiting_at_the_end_is_reported_once_at_its_deadline() {
    let records = vec![(0, scheduled(7, 7, "H")), (50_000, Record::Sample)];
    let violations = run(&bounds(), &records, 200_000);
    let waits = of(&violations, InvariantId::JobWaitBound);
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].at_ms, 60_000);
    assert!(
        waits[0].message.contains("no decision"),
        "{}",
        waits[0].message
    );
}

#[test]
fn a_rescheduled_job_whose_new_instance_is_assigned_in_time_does_not_violate_the_wait_bound() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (
            30_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (30_000, scheduled(2, 1, "H")),
        (80_000, assigned(2, "pod-a", "H")),
    ];
    let violations = run(&bounds(), &records, 85_000);
    assert!(of(&violations, InvariantId::JobWaitBound).is_empty());
}

#[test]
fn a_logical_job_that_never_completes_names_its_last_instance_and_state() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (5_000, assigned(1, "pod-a", "H")),
        (
            9_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (9_000, scheduled(2, 1, "H")),
        (10_000, assigned(2, "pod-b", "H")),
    ];
    let violations = run(&bounds(), &records, 50_000);
    let incomplete = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(incomplete.len(), 1);
    assert_eq!(incomplete[0].at_ms, 50_000);
    assert_eq!(incomplete[0].kind, Kind::Eventually);
    assert_eq!(
        incomplete[0].objects,
        vec!["logical:1".to_owned(), "job:2".to_owned()]
    );
    assert!(
        incomplete[0]
            .message
            .contains("assigned but never completed")
    );
}

#[test]
fn a_logical_job_completed_by_its_reschedule_is_complete() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (5_000, assigned(1, "pod-a", "H")),
        (
            9_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (9_000, scheduled(2, 1, "H")),
        (10_000, assigned(2, "pod-b", "H")),
        (20_000, completed(2, "pod-b")),
    ];
    let violations = run(&bounds(), &records, 50_000);
    assert!(of(&violations, InvariantId::AllJobsComplete).is_empty());
}

#[test]
fn a_logical_job_completed_twice_is_reported_at_the_second_completion() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (5_000, assigned(1, "pod-a", "H")),
        (
            9_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (9_000, scheduled(2, 1, "H")),
        (10_000, assigned(2, "pod-b", "H")),
        (20_000, completed(2, "pod-b")),
        (25_000, completed(1, "pod-a")),
    ];
    let violations = run(&bounds(), &records, 50_000);
    let doubles = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(doubles.len(), 1);
    assert_eq!(doubles[0].at_ms, 25_000);
    assert!(
        doubles[0].message.contains("completed 2 times"),
        "{}",
        doubles[0].message
    );
}

#[test]
fn a_job_completed_without_being_assigned_is_lost() {
    let records = vec![(0, scheduled(1, 1, "H")), (5_000, completed(1, "pod-a"))];
    let violations = run(&bounds(), &records, 50_000);
    let lost = of(&violations, InvariantId::NoLostJob);
    assert_eq!(lost.len(), 1);
    assert_eq!(lost[0].at_ms, 5_000);
    assert_eq!(
        lost[0].objects,
        vec!["job:1".to_owned(), "agent:pod-a".to_owned()]
    );
}

#[test]
fn a_cancelled_job_assigned_afterwards_is_lost() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (1_000, Record::JobCancelled { job: 1 }),
        (2_000, assigned(1, "pod-a", "H")),
        (3_000, assigned(9, "pod-b", "H")),
    ];
    let violations = run(&bounds(), &records, 50_000);
    let lost = of(&violations, InvariantId::NoLostJob);
    assert_eq!(lost.len(), 2);
    assert!(
        lost[0].message.contains("already cancelled"),
        "{}",
        lost[0].message
    );
    assert!(
        lost[1].message.contains("never scheduled"),
        "{}",
        lost[1].message
    );
    assert_eq!(lost[1].objects[0], "job:9");
}

#[test]
fn jobs_assigned_then_completed_or_rescheduled_are_not_lost() {
    let mut records = clean_life(0, 1, "pod-a");
    records.push((20_000, scheduled(2, 2, "H")));
    records.push((
        21_000,
        Record::JobRescheduled {
            job: 2,
            new_job: 3,
            reason: "x".to_owned(),
        },
    ));
    let violations = run(&bounds(), &records, 50_000);
    assert!(of(&violations, InvariantId::NoLostJob).is_empty());
}

#[test]
fn a_logical_job_completed_three_times_names_the_count_and_its_first_two_completions() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (5_000, assigned(1, "pod-a", "H")),
        (
            9_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (9_000, scheduled(2, 1, "H")),
        (10_000, assigned(2, "pod-b", "H")),
        (20_000, completed(2, "pod-b")),
        (25_000, completed(1, "pod-a")),
        (30_000, completed(2, "pod-b")),
    ];
    let violations = run(&bounds(), &records, 50_000);
    let doubles = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(doubles.len(), 1);
    assert_eq!(doubles[0].at_ms, 25_000);
    assert_eq!(
        doubles[0].objects,
        vec!["logical:1".to_owned(), "job:2".to_owned()]
    );
    assert_eq!(
        doubles[0].message,
        "logical job 1 completed 3 times (at t=20.000s and t=25.000s)"
    );
}

#[test]
fn a_late_record_for_an_earlier_instance_leaves_the_last_instances_state() {
    let records = vec![
        (0, scheduled(1, 1, "H")),
        (5_000, assigned(1, "pod-a", "H")),
        (
            9_000,
            Record::JobRescheduled {
                job: 1,
                new_job: 2,
                reason: "hung".to_owned(),
            },
        ),
        (9_000, scheduled(2, 1, "H")),
        (12_000, Record::JobCancelled { job: 1 }),
    ];
    let violations = run(&bounds(), &records, 50_000);
    let incomplete = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(incomplete.len(), 1);
    assert_eq!(
        incomplete[0].message,
        "logical job 1 never completed: its last instance, job 2, is still scheduled at the \
         end of the run"
    );
}

/// Job 1 runs on pod-a from 4 s; pod-a's agent is deleted at 20 s (its pod vanished).
fn agent_lost_while_building() -> Vec<(u64, Record)> {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(5);
    records.push((20_000, agent_deleted("pod-a")));
    records
}

#[test]
fn a_job_stranded_with_no_live_agent_for_the_server_to_reschedule_on_is_expected() {
    let records = agent_lost_while_building();
    let violations = run(&bounds(), &records, 100_000);
    let stranded = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(stranded.len(), 1, "{violations:?}");
    assert!(stranded[0].expected);
    assert!(
        stranded[0]
            .message
            .contains("only while some agent is live")
    );
}

#[test]
fn a_job_left_assigned_while_another_agent_was_live_is_a_failure() {
    let mut records = agent_lost_while_building();
    // pod-b's agent is live for a minute after pod-a's was lost: the hung-job check ran.
    records.push((21_000, registered("pod-b")));
    records.push((90_000, agent_deleted("pod-b")));
    let violations = run(&bounds(), &records, 100_000);
    let hung = of(&violations, InvariantId::AllJobsComplete);
    assert_eq!(hung.len(), 1, "{violations:?}");
    assert!(!hung[0].expected);
    // An agent live only briefly (less than a check period) gave the server no check.
    let mut records = agent_lost_while_building();
    records.push((21_000, registered("pod-b")));
    records.push((30_000, agent_deleted("pod-b")));
    let violations = run(&bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::AllJobsComplete)[0].expected);
}
