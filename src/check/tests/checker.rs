use super::{
    assigned, bounds, clean_life, completed, created, decision, deleted, of, reuse_bounds, run,
    scheduled,
};
use crate::check::InvariantId;
use crate::check::{
    CONTEXT_LINES_MAX, Checker, Kind, Monitor, RING_RECORDS_MAX, Violation, format_line,
};
use crate::trace::{Actor, Record};

/// A stand-in for a leader-election monitor: flags every `ServerPing`, always with the same
/// object, under a leader id (`lease-cas`).
struct PingFlagger;

impl Monitor for PingFlagger {
    fn id(&self) -> InvariantId {
        InvariantId::LeaseCas
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        if matches!(record, Record::ServerPing) {
            let objects = vec!["replica:1".to_owned()];
            out.push(Violation::new(
                self.id(),
                Kind::Always,
                t_ms,
                objects,
                "ping".to_owned(),
            ));
        }
    }
}

fn broken_everywhere() -> Vec<(u64, Record)> {
    vec![
        (0, created("pod-a", 1, "H")),
        (1_000, created("pod-b", 1, "H")),
        (2_000, created("pod-c", 3, "H")),
        (3_000, scheduled(4, 4, "H")),
        (3_000, completed(4, "pod-a")),
    ]
}

#[test]
fn disabled_ids_produce_nothing() {
    let disabled = Checker::ids().to_vec();
    let mut checker = Checker::new(&bounds(), &disabled, Vec::new());
    assert!(checker.active_ids().is_empty());
    for (t_ms, record) in broken_everywhere() {
        checker.observe(t_ms, &record);
    }
    assert!(checker.finish(200_000).is_empty());
    let violations = run(&bounds(), &broken_everywhere(), 200_000);
    assert!(
        violations.len() >= 4,
        "the same records do break invariants: {violations:?}"
    );
}

#[test]
fn disabling_one_id_keeps_the_others() {
    let disabled = vec![InvariantId::PendingLimit];
    let mut checker = Checker::new(&bounds(), &disabled, Vec::new());
    for (t_ms, record) in broken_everywhere() {
        checker.observe(t_ms, &record);
    }
    let violations = checker.finish(200_000);
    assert!(of(&violations, InvariantId::PendingLimit).is_empty());
    assert_eq!(of(&violations, InvariantId::OnePodPerJob).len(), 1);
}

#[test]
fn each_id_and_object_is_reported_once_even_if_a_monitor_repeats_itself() {
    let extra: Vec<Box<dyn Monitor>> = vec![Box::new(PingFlagger)];
    let mut checker = Checker::new(&bounds(), &[], extra);
    for t_ms in [1_000, 2_000, 3_000] {
        checker.observe(t_ms, &Record::ServerPing);
    }
    let violations = checker.finish(10_000);
    let pings = of(&violations, InvariantId::LeaseCas);
    assert_eq!(pings.len(), 1, "extra monitors run and are deduplicated");
    assert_eq!(pings[0].at_ms, 1_000);
}

#[test]
fn extra_monitors_can_be_disabled_too() {
    let extra: Vec<Box<dyn Monitor>> = vec![Box::new(PingFlagger)];
    let mut checker = Checker::new(&bounds(), &[InvariantId::LeaseCas], extra);
    checker.observe(1_000, &Record::ServerPing);
    assert!(checker.finish(2_000).is_empty());
}

#[test]
fn context_lines_are_the_last_records_touching_the_objects_up_to_the_violation() {
    let mut records = vec![(0, scheduled(7, 7, "H"))];
    for index in 0..12u64 {
        records.push((
            1_000 + index,
            decision(7, "skip-limit", &format!("try {index}")),
        ));
        records.push((1_000 + index, scheduled(100 + index, 100 + index, "H")));
    }
    records.push((90_000, Record::Sample));
    let mut checker = Checker::new(&bounds(), &[], Vec::new());
    for (t_ms, record) in &records {
        checker.observe(*t_ms, record);
    }
    let wait = checker
        .violations()
        .iter()
        .find(|v| v.id == InvariantId::JobWaitBound && v.objects[0] == "job:7");
    let context = &wait.expect("job 7 waited past its bound").context;
    assert_eq!(context.len(), CONTEXT_LINES_MAX);
    assert!(
        context.iter().all(|line| line.contains("job=7")),
        "{context:?}"
    );
    assert_eq!(
        context[7],
        "t=1.011s decision code=skip-limit job=7 pod=pod-a text=\"try 11\""
    );
    assert!(context[0].contains("try 4"), "oldest first: {context:?}");
}

/// The records the context test uses, and enough besides to push its first ones out of the
/// ring, with a violation found before and one after that.
fn records_past_the_ring() -> Vec<(u64, Record)> {
    let mut records = vec![(0, scheduled(7, 7, "H"))];
    for index in 0..(RING_RECORDS_MAX as u64 + 50) {
        let t_ms = 1_000 + index;
        records.push((t_ms, decision(7, "skip-limit", &format!("try {index}"))));
        records.push((t_ms, scheduled(100 + index, 100 + index, "H")));
        if index % 1_000 == 0 {
            records.push((t_ms, Record::Sample));
        }
    }
    records.push((90_000, Record::Sample));
    records.extend(
        broken_everywhere()
            .into_iter()
            .map(|(t, r)| (t + 90_000, r)),
    );
    records
}

/// Records given to keep (`observe_owned`, which the runs use) and records lent
/// (`observe`) make the same violations with the same context lines.
#[test]
fn a_kept_record_gives_the_context_a_copy_gives() {
    let records = records_past_the_ring();
    let mut lent = Checker::new(&bounds(), &[], Vec::new());
    let mut kept = Checker::new(&bounds(), &[], Vec::new());
    for (t_ms, record) in &records {
        lent.observe(*t_ms, record);
        if matches!(record, Record::Sample) {
            kept.observe(*t_ms, record);
        } else {
            assert_eq!(kept.observe_owned(*t_ms, record.clone()), record);
        }
    }
    let lent = lent.finish(400_000);
    let kept = kept.finish(400_000);
    assert!(lent.len() >= 4, "the records break invariants: {lent:?}");
    let quoted = lent.iter().filter(|v| !v.context.is_empty()).count();
    assert!(quoted >= 2, "violations quote context: {lent:?}");
    let pairs: Vec<_> = lent.iter().zip(&kept).collect();
    assert_eq!(lent.len(), kept.len());
    for (a, b) in pairs {
        assert_eq!(
            (a.id, &a.objects, &a.context),
            (b.id, &b.objects, &b.context)
        );
    }
}

#[test]
fn pod_and_agent_objects_share_context() {
    let mut records = clean_life(0, 1, "pod-a");
    records.truncate(5);
    records.push((6_000, deleted("pod-a", Actor::Allocator)));
    let violations = run(&bounds(), &records, 10_000);
    let killed = of(&violations, InvariantId::NoKillWhileBuilding);
    let context = &killed[0].context;
    assert!(
        context
            .iter()
            .any(|line| line.contains("agent_registered agent=pod-a"))
    );
    assert!(
        context
            .iter()
            .any(|line| line.contains("pod_deleted by=allocator pod=pod-a"))
    );
    assert!(
        context.iter().any(|line| line.contains("job_scheduled")),
        "job:1 is named too"
    );
}

#[test]
fn finish_orders_violations_by_time_then_id_and_is_repeatable() {
    let mut checker = Checker::new(&bounds(), &[], Vec::new());
    for (t_ms, record) in broken_everywhere() {
        checker.observe(t_ms, &record);
    }
    let violations = checker.finish(200_000);
    let keys: Vec<(u64, InvariantId)> = violations.iter().map(|v| (v.at_ms, v.id)).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(checker.finish(300_000), violations);
    assert_eq!(checker.violations(), violations.as_slice());
}

#[test]
fn ids_list_every_elastic_agent_monitor_once() {
    let ids = Checker::ids();
    assert_eq!(ids.len(), 15);
    let unique: std::collections::BTreeSet<InvariantId> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len());
    let mut active = Checker::new(&bounds(), &[], Vec::new()).active_ids();
    active.extend(Checker::new(&reuse_bounds(), &[], Vec::new()).active_ids());
    let active: std::collections::BTreeSet<InvariantId> = active.into_iter().collect();
    assert_eq!(active, unique);
}

/// The enum is the one list: every monitor, elastic or leader, judges one of its ids, and
/// every id has its monitor.
#[test]
fn every_monitor_judges_an_invariant_id_and_every_id_has_one_monitor() {
    use crate::check::{LeaderBounds, leader_monitors};
    let leader = leader_monitors(LeaderBounds {
        lease_duration_ms: 15_000,
        renew_deadline_ms: 10_000,
        retry_period_ms: 2_000,
        api_latency_max_ms: 50,
        module_stop_latency_max_ms: 2_000,
        replicas: 3,
        variant: crate::leader::Variant::AgentkV1,
    });
    let mut parsed: Vec<InvariantId> = Checker::ids().to_vec();
    parsed.extend(leader.iter().map(|monitor| monitor.id()));
    let mut all = InvariantId::ALL.to_vec();
    all.sort();
    parsed.sort();
    assert_eq!(parsed, all, "each id judged by exactly one monitor");
}

#[test]
fn a_trace_line_shows_time_kind_and_fields() {
    let line = format_line(123_456, &assigned(3, "pod-a", "H"));
    assert_eq!(line, "t=123.456s job_assigned agent=pod-a config=H job=3");
}

#[test]
fn a_clean_run_has_no_violations() {
    let mut records = clean_life(0, 1, "pod-a");
    records.extend(clean_life(20_000, 2, "pod-b"));
    let violations = run(&bounds(), &records, 100_000);
    assert!(violations.is_empty(), "{violations:?}");
}
