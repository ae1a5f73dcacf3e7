use super::{
    agent_deleted, bounds, created, deleted, of, registered, reuse_bounds, run, running, scheduled,
};
use crate::check::InvariantId;
use crate::trace::{Actor, Record};

#[test]
fn the_allocator_creating_a_pod_with_two_not_running_violates_a_limit_of_two() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (1_000, created("pod-b", 2, "H")),
        (2_000, created("pod-c", 3, "H")),
    ];
    let violations = run(&bounds(), &records, 3_000);
    let over = of(&violations, InvariantId::PendingLimit);
    assert_eq!(over.len(), 1);
    assert_eq!(over[0].at_ms, 2_000);
    assert_eq!(over[0].objects, vec!["pod:pod-c".to_owned()]);
    assert!(
        over[0].message.contains("2 pods were not Running"),
        "{}",
        over[0].message
    );
}

#[test]
fn a_failed_pod_counts_as_not_running() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (500, running("pod-a")),
        (
            600,
            Record::PodPhase {
                pod: "pod-a".to_owned(),
                phase: "Failed".to_owned(),
            },
        ),
        (1_000, created("pod-b", 2, "H")),
        (2_000, created("pod-c", 3, "H")),
    ];
    let violations = run(&bounds(), &records, 3_000);
    assert_eq!(of(&violations, InvariantId::PendingLimit).len(), 1);
}

#[test]
fn a_pod_that_reached_running_frees_a_pending_slot() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (1_000, created("pod-b", 2, "H")),
        (1_500, running("pod-a")),
        (2_000, created("pod-c", 3, "H")),
        (2_500, deleted("pod-b", Actor::External)),
        (3_000, created("pod-d", 4, "H")),
    ];
    let violations = run(&bounds(), &records, 4_000);
    assert!(of(&violations, InvariantId::PendingLimit).is_empty());
}

fn queued(job: u64, request: u64) -> Record {
    Record::CreateAgentQueued { job, request }
}

fn done(request: u64) -> Record {
    Record::PluginRequestDone { request }
}

fn limit_edited(pending_pods_count: u32) -> Record {
    Record::ClusterProfileEdited {
        cluster: "cluster-profile".to_owned(),
        pending_pods_count,
        enable_agent_reuse: false,
        auto_register_timeout_ms: 30_000,
        idle_timeout_ms: 50_000,
        max_pods: None,
    }
}

/// Job `job`'s create-agent (request `job`) queued at `t_ms` and its pod created 100 ms later.
fn create_for(t_ms: u64, job: u64, pod: &str) -> Vec<(u64, Record)> {
    vec![
        (t_ms, queued(job, job)),
        (t_ms + 100, created(pod, job, "H")),
        (t_ms + 200, done(job)),
    ]
}

#[test]
fn a_raised_pending_limit_lets_the_allocator_create_above_the_old_one() {
    let mut records = create_for(0, 1, "pod-a");
    records.extend(create_for(1_000, 2, "pod-b"));
    records.push((1_500, limit_edited(3)));
    records.extend(create_for(2_000, 3, "pod-c"));
    let violations = run(&bounds(), &records, 3_000);
    assert!(
        of(&violations, InvariantId::PendingLimit).is_empty(),
        "{violations:?}"
    );
    // Without the edit the third pod breaks the scenario's limit of two.
    records.retain(|(_, record)| !matches!(record, Record::ClusterProfileEdited { .. }));
    let violations = run(&bounds(), &records, 3_000);
    assert_eq!(of(&violations, InvariantId::PendingLimit).len(), 1);
}

#[test]
fn a_lowered_pending_limit_binds_only_creates_queued_after_it() {
    // Limit 2. Job 2's request is queued under it; the limit drops to 1 before its pod is
    // created, with pod-a still pending: pod-a is no violation and neither is job 2's create.
    // Job 3 (queued after the edit) creates while two pods are pending, and job 4 while one
    // is: both break the new limit (job 4's would have been within the old one).
    let mut records = create_for(0, 1, "pod-a");
    records.push((1_000, queued(2, 2)));
    records.push((1_050, limit_edited(1)));
    records.push((1_100, created("pod-b", 2, "H")));
    records.push((1_200, done(2)));
    records.extend(create_for(2_000, 3, "pod-c"));
    records.push((2_500, running("pod-a")));
    records.push((2_600, running("pod-b")));
    records.extend(create_for(3_000, 4, "pod-d"));
    let violations = run(&bounds(), &records, 4_000);
    let over = of(&violations, InvariantId::PendingLimit);
    let pods: Vec<&str> = over.iter().map(|v| v.objects[0].as_str()).collect();
    assert_eq!(pods, ["pod:pod-c", "pod:pod-d"], "{over:?}");
    assert!(
        over[1].message.contains("(pending_pods_count 1)"),
        "{}",
        over[1].message
    );
}

#[test]
fn a_job_scheduled_before_a_lowered_limit_keeps_the_old_limit_in_its_later_requests() {
    // Limit 2. Job 2 is scheduled under it; the limit drops to 1; job 2's request is queued
    // only after the edit (a starvation resend, say) and its pod is created while pod-a is
    // pending. GoCD froze limit 2 in job 2's plan: no violation. Job 3, scheduled after the
    // edit, does the same and breaks the new limit.
    let mut records = create_for(0, 1, "pod-a");
    records.push((500, scheduled(2, 2, "H")));
    records.push((600, limit_edited(1)));
    records.push((1_000, queued(2, 2)));
    records.push((1_100, created("pod-b", 2, "H")));
    records.push((1_200, done(2)));
    records.push((1_300, scheduled(3, 3, "H")));
    records.extend(create_for(2_000, 3, "pod-c"));
    let violations = run(&bounds(), &records, 4_000);
    let over = of(&violations, InvariantId::PendingLimit);
    let pods: Vec<&str> = over.iter().map(|v| v.objects[0].as_str()).collect();
    assert_eq!(pods, ["pod:pod-c"], "{over:?}");
}

#[test]
fn two_live_pods_for_one_job_violate_without_reuse() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (1_000, created("pod-b", 1, "H")),
        (2_000, created("pod-c", 1, "H")),
    ];
    let violations = run(&bounds(), &records, 3_000);
    let doubles = of(&violations, InvariantId::OnePodPerJob);
    assert_eq!(doubles.len(), 1, "reported once per job");
    assert_eq!(doubles[0].at_ms, 1_000);
    let expected = ["job:1", "pod:pod-a", "pod:pod-b"]
        .map(str::to_owned)
        .to_vec();
    assert_eq!(doubles[0].objects, expected);
}

#[test]
fn a_replacement_pod_after_the_first_is_deleted_is_not_a_second_pod() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (500, deleted("pod-a", Actor::External)),
        (1_000, created("pod-b", 1, "H")),
    ];
    let violations = run(&bounds(), &records, 3_000);
    assert!(of(&violations, InvariantId::OnePodPerJob).is_empty());
}

#[test]
fn two_pods_for_one_job_are_allowed_with_reuse() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (1_000, created("pod-b", 1, "H")),
    ];
    let violations = run(&reuse_bounds(), &records, 3_000);
    assert!(of(&violations, InvariantId::OnePodPerJob).is_empty());
}

#[test]
fn a_pod_never_registered_violates_at_art_plus_ping_after_creation() {
    let records = vec![(5_000, created("pod-a", 1, "H")), (60_000, Record::Sample)];
    let violations = run(&bounds(), &records, 100_000);
    let orphans = of(&violations, InvariantId::NoOrphanPods);
    assert_eq!(
        orphans.len(),
        1,
        "the deadline and the end of run report the pod once"
    );
    assert_eq!(orphans[0].at_ms, 45_000);
    assert_eq!(orphans[0].objects, vec!["pod:pod-a".to_owned()]);
}

#[test]
fn a_pod_registered_just_in_time_and_deleted_is_no_orphan() {
    let records = vec![
        (5_000, created("pod-a", 1, "H")),
        (45_000, registered("pod-a")),
        (90_000, agent_deleted("pod-a")),
        (90_000, deleted("pod-a", Actor::Allocator)),
    ];
    let violations = run(&bounds(), &records, 100_000);
    assert!(of(&violations, InvariantId::NoOrphanPods).is_empty());
}

#[test]
fn a_pod_whose_agent_was_deleted_is_an_orphan_at_the_end() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (3_000, registered("pod-a")),
        (9_000, agent_deleted("pod-a")),
    ];
    let violations = run(&bounds(), &records, 100_000);
    let orphans = of(&violations, InvariantId::NoOrphanPods);
    assert_eq!(orphans.len(), 1);
    assert_eq!(orphans[0].at_ms, 100_000);
    assert!(orphans[0].message.contains("no registered agent"));
}

#[test]
fn a_server_outage_delays_the_registration_deadline_by_its_length() {
    let records = vec![
        (0, created("pod-a", 1, "H")),
        (10_000, Record::ServerStopped),
        (100_000, Record::ServerStarted),
        (120_000, registered("pod-a")),
        (130_000, agent_deleted("pod-a")),
        (130_000, deleted("pod-a", Actor::Allocator)),
    ];
    let violations = run(&bounds(), &records, 200_000);
    assert!(of(&violations, InvariantId::NoOrphanPods).is_empty());
    let late = [
        (0, created("pod-b", 1, "H")),
        (10_000, Record::ServerStopped),
    ];
    let mut records = late.to_vec();
    records.push((100_000, Record::ServerStarted));
    records.push((140_000, Record::Sample));
    let violations = run(&bounds(), &records, 200_000);
    let orphans = of(&violations, InvariantId::NoOrphanPods);
    assert_eq!(orphans.len(), 1);
    assert_eq!(orphans[0].at_ms, 130_000);
}
