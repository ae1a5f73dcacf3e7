//! Each leader monitor trips on a hand-built sequence and stays quiet on a close one that
//! keeps the invariant.

use super::{LeaderBounds, leader_monitors};
use crate::check::InvariantId;
use crate::check::{Kind, Violation};
use crate::component::Random;
use crate::leader::Variant;
use crate::trace::{Actor, Record};

/// LD 15 s, RD 10 s, RP 2 s, 40 ms each way, modules stop within 2 s; a variant that
/// promises `election-iff-demand` (agentk-v1), so every monitor runs.
pub(super) fn bounds() -> LeaderBounds {
    LeaderBounds {
        lease_duration_ms: 15_000,
        renew_deadline_ms: 10_000,
        retry_period_ms: 2_000,
        api_latency_max_ms: 40,
        module_stop_latency_max_ms: 2_000,
        replicas: 3,
        variant: Variant::AgentkV1,
    }
}

/// Feed `records` to the monitor `id`, then finish at `end_ms`.
fn run(id: InvariantId, records: &[(u64, Record)], end_ms: u64) -> Vec<Violation> {
    run_with(bounds(), id, records, end_ms)
}

/// [`run`] under other bounds.
fn run_with(
    bounds: LeaderBounds,
    id: InvariantId,
    records: &[(u64, Record)],
    end_ms: u64,
) -> Vec<Violation> {
    let mut monitor = leader_monitors(bounds)
        .into_iter()
        .find(|monitor| monitor.id() == id)
        .expect("every leader invariant has a monitor");
    let mut out = Vec::new();
    for (t_ms, record) in records {
        super::feed(std::slice::from_mut(&mut monitor), *t_ms, record, &mut out);
    }
    monitor.finish(end_ms, &mut out);
    for violation in &out {
        assert_eq!(violation.id, id, "a monitor reports only its own invariant");
    }
    out
}

fn write(
    by: Actor,
    verb: &str,
    holder: &str,
    transitions: u32,
    rv: (Option<u64>, Option<u64>, u64),
) -> Record {
    let (rv_current, rv_sent, rv_new) = rv;
    Record::LeaseWritten {
        by,
        verb: verb.to_string(),
        holder: holder.to_string(),
        transitions,
        rv_current,
        rv_sent,
        rv_new,
    }
}

fn held(replica: u32, term: u64) -> Record {
    Record::LeaseHeld { replica, term }
}

fn leading(replica: u32, term: u64) -> Record {
    Record::LeadingStarted { replica, term }
}

fn started(replica: u32, term: u64) -> Record {
    Record::ModuleStarted {
        replica,
        module: "gitops".to_string(),
        term,
    }
}

fn stopped(replica: u32) -> Record {
    Record::ModuleStopped {
        replica,
        module: "gitops".to_string(),
    }
}

fn config(replica: u32, version: u64, runnable: bool) -> Record {
    let runnable_modules = if runnable {
        vec!["gitops".to_string()]
    } else {
        Vec::new()
    };
    Record::ConfigReceived {
        replica,
        version,
        runnable_modules,
    }
}

fn module_config(replica: u32, version: u64) -> Record {
    Record::ModuleConfig {
        replica,
        module: "gitops".to_string(),
        version,
    }
}

fn fault(index: u32, fault: &str, started: bool) -> Record {
    if started {
        Record::FaultStarted {
            index,
            fault: fault.to_string(),
            target: "all".to_string(),
        }
    } else {
        Record::FaultEnded {
            index,
            fault: fault.to_string(),
        }
    }
}

/// Replica `replica` with a runnable config wins term 1 at `t_ms` and starts its module.
fn leader_at(replica: u32, t_ms: u64) -> Vec<(u64, Record)> {
    vec![
        (t_ms, config(replica, 1, true)),
        (t_ms, Record::ElectionStarted { replica }),
        (t_ms, held(replica, 1)),
        (t_ms, leading(replica, 1)),
        (t_ms, started(replica, 1)),
        (t_ms, module_config(replica, 1)),
    ]
}

#[test]
fn leader_monitors_cover_every_row_of_the_leader_table() {
    let ids = leader_monitors(bounds())
        .iter()
        .map(|monitor| monitor.id())
        .collect::<Vec<_>>();
    assert_eq!(
        ids,
        [
            InvariantId::LeaseCas,
            InvariantId::SingleLeaderActing,
            InvariantId::LeaderGrounded,
            InvariantId::LeaderOnly,
            InvariantId::NoDuplicateModule,
            InvariantId::ConfigFresh,
            InvariantId::ElectionIffDemand,
            InvariantId::FailoverBound,
            InvariantId::RejoinAfterOutage,
            InvariantId::RunnerProgress,
        ]
    );
}

/// An accepted Lease update by `replica`: (rv current, rv sent) and the new rv after it.
fn update(replica: u32, holder: &str, transitions: u32, rv: (u64, u64)) -> Record {
    let (current, sent) = rv;
    let by = Actor::Replica(replica);
    write(
        by,
        "update-lease",
        holder,
        transitions,
        (Some(current), Some(sent), current + 1),
    )
}

#[test]
fn lease_cas_trips_on_a_stale_write_and_a_wrong_transition_count_only() {
    let create = (
        0,
        write(Actor::Replica(0), "create-lease", "a", 0, (None, None, 1)),
    );
    let renew = (2_000, update(0, "a", 0, (1, 1)));
    let release = (4_000, update(0, "", 0, (2, 2)));
    let history = [create.clone(), renew, release];
    let after = |step: Record| {
        let mut records = history.to_vec();
        records.push((6_000, step));
        run(InvariantId::LeaseCas, &records, 10_000)
    };
    assert!(
        after(update(1, "b", 1, (3, 3))).is_empty(),
        "a new holder counts one transition"
    );

    let stale = after(update(1, "b", 1, (3, 2)));
    assert_eq!(stale.len(), 1);
    assert_eq!(stale[0].objects, vec!["replica:1".to_string()]);
    assert_eq!(
        after(update(1, "b", 0, (3, 3))).len(),
        1,
        "the transition was not counted"
    );
    assert_eq!(
        after(update(0, "a", 0, (3, 3))).len(),
        1,
        "re-acquiring after a release counts"
    );

    let recreate = (
        1_000,
        write(
            Actor::Replica(1),
            "create-lease",
            "b",
            0,
            (Some(1), None, 2),
        ),
    );
    assert_eq!(
        run(InvariantId::LeaseCas, &[create, recreate], 10_000).len(),
        1
    );
}

/// H3: replica 0's late release, with the fresh resourceVersion, wipes replica 1's Lease.
#[test]
fn lease_cas_trips_on_a_release_of_a_lease_held_by_another_and_names_h3() {
    let records = [
        (
            0,
            write(Actor::Replica(0), "create-lease", "a", 0, (None, None, 1)),
        ),
        (20_000, update(1, "b", 1, (1, 1))),
        (22_000, update(0, "", 1, (2, 2))),
    ];
    let found = run(InvariantId::LeaseCas, &records, 30_000);
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains("released a Lease held by \"b\""));
    assert_eq!(super::hazard_of(&found[0]), Some(super::Hazard::H3));
    assert!(
        run(InvariantId::LeaseCas, &records[..2], 30_000).is_empty(),
        "a takeover alone is a valid write"
    );
}

#[test]
fn single_leader_acting_trips_on_overlapping_modules_and_labels_budget_breaches() {
    let mut handover = leader_at(0, 0);
    handover.push((20_000, stopped(0)));
    handover.extend(leader_at(1, 20_000));
    assert!(run(InvariantId::SingleLeaderActing, &handover, 30_000).is_empty());

    let mut overlap = leader_at(0, 0);
    overlap.extend(leader_at(1, 20_000));
    let found = run(InvariantId::SingleLeaderActing, &overlap, 30_000);
    assert_eq!(found.len(), 1, "one report per overlap");
    assert!(!found[0].expected, "no fault: a real failure");

    let mut edited = leader_at(0, 0);
    edited.push((
        5_000,
        write(Actor::External, "delete-lease", "", 0, (Some(9), None, 10)),
    ));
    edited.extend(leader_at(1, 6_000));
    let found = run(InvariantId::SingleLeaderActing, &edited, 30_000);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].expected,
        "a third-party Lease edit is outside the fault budget"
    );
}

/// A graceful stop whose modules take 12 s to stop: LD − RP − RD − δ − stop < 0, so an
/// involuntary loss would be outside the fault budget; but replica 0 released the Lease
/// itself while its module still ran, and an overlap that begins after its own release is a
/// real failure. The same overlap without the release (a crash-like loss) stays excused.
#[test]
fn an_overlap_after_the_old_leaders_own_release_is_never_excused() {
    let slow_stop = LeaderBounds {
        module_stop_latency_max_ms: 12_000,
        ..bounds()
    };
    let create = write(Actor::Replica(0), "create-lease", "a", 0, (None, None, 1));
    let mut released = vec![(0, create.clone())];
    released.extend(leader_at(0, 0));
    released.push((60_000, update(0, "", 0, (1, 1))));
    released.push((60_500, update(1, "b", 1, (2, 2))));
    released.extend(leader_at(1, 61_000));
    released.push((66_000, stopped(0)));
    let found = run_with(
        slow_stop,
        InvariantId::SingleLeaderActing,
        &released,
        90_000,
    );
    assert_eq!(found.len(), 1, "one report per overlap");
    assert!(!found[0].expected, "a voluntary release has no budget");
    assert!(found[0].message.contains("released the Lease itself"));

    let mut lost = vec![(0, create)];
    lost.extend(leader_at(0, 0));
    lost.push((60_500, update(1, "b", 1, (1, 1))));
    lost.extend(leader_at(1, 61_000));
    let found = run_with(slow_stop, InvariantId::SingleLeaderActing, &lost, 90_000);
    assert_eq!(found.len(), 1);
    assert!(
        found[0].expected,
        "an involuntary loss with no margin is outside the budget"
    );

    let mut renewed = vec![(0, lost[0].1.clone())];
    renewed.extend(leader_at(0, 0));
    renewed.push((60_000, update(0, "", 0, (1, 1))));
    renewed.push((62_000, held(0, 2)));
    renewed.extend(leader_at(1, 63_000));
    let found = run_with(slow_stop, InvariantId::SingleLeaderActing, &renewed, 90_000);
    assert!(
        found.iter().all(|violation| violation.expected),
        "a hold after the release ends what the release excluded"
    );
}

#[test]
fn a_module_started_twice_still_runs_after_one_of_its_runs_returns() {
    // H2: the same module runs twice on replica 0; one run returns, the other keeps acting
    // while replica 1 takes over.
    let mut twice = leader_at(0, 0);
    twice.push((10, started(0, 1)));
    twice.push((20_000, stopped(0)));
    twice.extend(leader_at(1, 20_000));
    let found = run(InvariantId::SingleLeaderActing, &twice, 30_000);
    assert_eq!(found.len(), 1, "the second run still acts: {found:?}");
    let mut both_stopped = leader_at(0, 0);
    both_stopped.push((10, started(0, 1)));
    both_stopped.push((20_000, stopped(0)));
    both_stopped.push((20_000, stopped(0)));
    both_stopped.extend(leader_at(1, 20_000));
    assert!(run(InvariantId::SingleLeaderActing, &both_stopped, 30_000).is_empty());
}

#[test]
fn leader_grounded_trips_when_modules_outlive_the_last_renewal() {
    let mut renewing = leader_at(0, 0);
    renewing.push((10_000, held(0, 1)));
    renewing.push((
        20_000,
        Record::ModuleAction {
            replica: 0,
            module: "gitops".to_string(),
        },
    ));
    assert!(run(InvariantId::LeaderGrounded, &renewing, 20_000).is_empty());

    let mut stale = leader_at(0, 0);
    stale.push((
        20_000,
        Record::ModuleAction {
            replica: 0,
            module: "gitops".to_string(),
        },
    ));
    let found = run(InvariantId::LeaderGrounded, &stale, 20_000);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].at_ms, 20_000);
}

#[test]
fn leader_only_trips_on_a_stale_callback_and_on_lingering_modules() {
    let current = leader_at(0, 0);
    assert!(run(InvariantId::LeaderOnly, &current, 10_000).is_empty());

    // H4: the callback of term 1 arrives after the elector's run ended.
    let stale = vec![
        (0, config(0, 1, true)),
        (0, Record::ElectionStarted { replica: 0 }),
        (0, held(0, 1)),
        (12_000, Record::ElectionStopped { replica: 0 }),
        (12_000, Record::ElectionStarted { replica: 0 }),
        (30_000, leading(0, 1)),
        (30_000, started(0, 1)),
    ];
    let found = run(InvariantId::LeaderOnly, &stale, 40_000);
    assert_eq!(
        found.len(),
        1,
        "the stale LeadingStarted is the broken step"
    );
    assert_eq!(found[0].at_ms, 30_000);

    let mut prompt_stop = leader_at(0, 0);
    prompt_stop.push((
        12_000,
        Record::LeadingStopped {
            replica: 0,
            term: 1,
        },
    ));
    prompt_stop.push((13_500, stopped(0)));
    assert!(run(InvariantId::LeaderOnly, &prompt_stop, 20_000).is_empty());

    let mut lingering = leader_at(0, 0);
    lingering.push((
        12_000,
        Record::LeadingStopped {
            replica: 0,
            term: 1,
        },
    ));
    lingering.push((
        14_001,
        Record::ModuleAction {
            replica: 0,
            module: "gitops".to_string(),
        },
    ));
    assert_eq!(run(InvariantId::LeaderOnly, &lingering, 20_000).len(), 1);
}

#[test]
fn no_duplicate_module_trips_on_a_second_start_without_a_stop() {
    let mut restarted = leader_at(0, 0);
    restarted.push((5_000, stopped(0)));
    restarted.push((6_000, started(0, 1)));
    assert!(run(InvariantId::NoDuplicateModule, &restarted, 10_000).is_empty());

    let mut doubled = leader_at(0, 0);
    doubled.push((6_000, started(0, 1)));
    let found = run(InvariantId::NoDuplicateModule, &doubled, 10_000);
    assert_eq!(found.len(), 1);
    assert!(found[0].objects.contains(&"module:gitops".to_string()));
}

#[test]
fn config_fresh_trips_on_an_older_config_only() {
    let mut fresh = leader_at(0, 0);
    fresh.push((5_000, module_config(0, 3)));
    fresh.push((9_000, module_config(0, 3)));
    assert!(
        run(InvariantId::ConfigFresh, &fresh, 10_000).is_empty(),
        "the same version again is fine"
    );

    let mut stale = leader_at(0, 0);
    stale.push((5_000, module_config(0, 3)));
    stale.push((9_000, module_config(0, 2)));
    assert_eq!(run(InvariantId::ConfigFresh, &stale, 10_000).len(), 1);
}

#[test]
fn election_iff_demand_trips_when_the_election_does_not_follow_the_config() {
    let following = vec![
        (0, config(0, 1, true)),
        (0, Record::ElectionStarted { replica: 0 }),
        (60_000, config(0, 2, false)),
        (61_000, Record::ElectionStopped { replica: 0 }),
    ];
    assert!(run(InvariantId::ElectionIffDemand, &following, 100_000).is_empty());

    // #398: the demand stays but the election stopped for good.
    let abandoned = vec![
        (0, config(0, 1, true)),
        (0, Record::ElectionStarted { replica: 0 }),
        (31_000, Record::ElectionStopped { replica: 0 }),
    ];
    let found = run(InvariantId::ElectionIffDemand, &abandoned, 100_000);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0].at_ms, 100_000,
        "judged when time has passed the grace"
    );

    let unreleased = vec![
        (0, config(0, 1, true)),
        (0, Record::ElectionStarted { replica: 0 }),
        (
            0,
            write(Actor::Replica(0), "create-lease", "a", 0, (None, None, 1)),
        ),
        (60_000, config(0, 2, false)),
        (61_000, Record::ElectionStopped { replica: 0 }),
    ];
    assert_eq!(
        run(InvariantId::ElectionIffDemand, &unreleased, 61_000).len(),
        1
    );
    let mut released = unreleased.clone();
    released.insert(
        4,
        (
            60_900,
            write(
                Actor::Replica(0),
                "update-lease",
                "",
                0,
                (Some(1), Some(1), 2),
            ),
        ),
    );
    assert!(run(InvariantId::ElectionIffDemand, &released, 61_000).is_empty());
}

#[test]
fn failover_bound_trips_when_nobody_takes_over_after_a_crash() {
    let mut crashed = leader_at(0, 0);
    crashed.push((0, config(1, 1, true)));
    crashed.push((0, Record::ElectionStarted { replica: 1 }));
    crashed.push((1_000, held(0, 1)));
    crashed.push((5_000, Record::ReplicaStopped { replica: 0 }));
    // LD + 2·2.2·RP + five round trips of 2 × 40 ms.
    let bound_ms = 15_000 + 2 * 4_400 + 5 * 80;

    let mut taken_over = crashed.clone();
    taken_over.push((20_000, held(1, 1)));
    taken_over.push((20_000, leading(1, 1)));
    taken_over.push((20_000, started(1, 1)));
    taken_over.push((1_000 + bound_ms + 1, Record::Sample));
    assert!(run(InvariantId::FailoverBound, &taken_over, 60_000).is_empty());

    crashed.push((1_000 + bound_ms, Record::Sample));
    assert!(
        run(InvariantId::FailoverBound, &crashed, 1_000 + bound_ms).is_empty(),
        "the bound is inclusive"
    );
    let found = run(InvariantId::FailoverBound, &crashed, 1_000 + bound_ms + 1);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].kind, Kind::Eventually);
}

/// A new leader lost right after it took over (leader-chaos seed 241 under `fixed`: replica 1
/// acquires 17.4 s after the old leader's last renewal and crashes 0.1 s later, before it
/// renews with its modules running): the failover happened in time, and the next one is
/// judged from the new leader's renewal, not the old one's.
#[test]
fn failover_bound_counts_from_the_renewal_of_a_new_leader_lost_at_once() {
    let mut records = leader_at(0, 0);
    records.push((0, config(1, 1, true)));
    records.push((0, Record::ElectionStarted { replica: 1 }));
    records.push((0, config(2, 1, true)));
    records.push((0, Record::ElectionStarted { replica: 2 }));
    records.push((1_000, held(0, 1)));
    records.push((2_000, Record::ReplicaStopped { replica: 0 }));
    // The fresh term's LeaseHeld precedes its modules' start, as the trace records it.
    records.push((19_000, held(1, 1)));
    records.push((19_000, leading(1, 1)));
    records.push((19_000, started(1, 1)));
    records.push((19_100, Record::ReplicaStopped { replica: 1 }));
    // LD + 2·2.2·RP + five round trips of 2 × 40 ms.
    let bound_ms = 15_000 + 2 * 4_400 + 5 * 80;
    records.push((1_000 + bound_ms + 1, Record::Sample));
    assert!(
        run(InvariantId::FailoverBound, &records, 19_000 + bound_ms).is_empty(),
        "judged from replica 1's renewal at 19 s"
    );
    records.push((19_000 + bound_ms + 1, Record::Sample));
    assert_eq!(
        run(InvariantId::FailoverBound, &records, 19_000 + bound_ms + 1).len(),
        1,
        "and still bounded from there"
    );
}

/// A follower takes a released Lease and is lost before its modules start (explore/leader
/// seeds 64, 96 and 129 under `fixed` with round trips of seconds: a graceful stop while the
/// answer to its taking write was still in flight, or a crash): the others wait a lease
/// duration from the taking write, judged by the crash bound, not the graceful one.
#[test]
fn failover_bound_counts_from_a_write_that_takes_a_released_lease() {
    let mut records = leader_at(2, 0);
    for replica in [0, 1] {
        records.push((0, config(replica, 1, true)));
        records.push((0, Record::ElectionStarted { replica }));
    }
    records.push((4_900, stopped(2)));
    records.push((5_000, update(2, "", 1, (2, 2))));
    records.push((5_100, Record::ReplicaStopped { replica: 2 }));
    records.push((9_000, update(1, "agentk-1", 2, (3, 3))));
    records.push((9_300, Record::ReplicaStopped { replica: 1 }));
    // LD + 2·2.2·RP + five round trips of 2 × 40 ms, from the taking write.
    let bound_ms = 15_000 + 2 * 4_400 + 5 * 80;
    records.push((20_000, Record::Sample));
    assert!(
        run(InvariantId::FailoverBound, &records, 9_000 + bound_ms).is_empty(),
        "past the graceful bound from the release, within the crash bound from the take"
    );
    records.push((9_000 + bound_ms + 1, Record::Sample));
    assert_eq!(
        run(InvariantId::FailoverBound, &records, 9_000 + bound_ms + 1).len(),
        1,
        "and still bounded from there"
    );
}

#[test]
fn rejoin_after_outage_trips_when_a_replica_that_lost_the_lease_stays_out() {
    let mut outage = leader_at(0, 0);
    outage.push((20_000, fault(0, "api_outage", true)));
    outage.push((
        30_000,
        Record::LeadingStopped {
            replica: 0,
            term: 1,
        },
    ));
    outage.push((30_000, Record::ElectionStopped { replica: 0 }));
    outage.push((31_000, stopped(0)));
    outage.push((50_000, fault(0, "api_outage", false)));
    let grace_ms = 2_000 + 10_000 + 4_400 + 2 * 80;

    let mut rejoined = outage.clone();
    rejoined.push((50_000, Record::ElectionStarted { replica: 0 }));
    assert!(run(InvariantId::RejoinAfterOutage, &rejoined, 100_000).is_empty());

    let found = run(InvariantId::RejoinAfterOutage, &outage, 100_000);
    assert_eq!(found.len(), 1);
    assert!(
        run(InvariantId::RejoinAfterOutage, &outage, 50_000 + grace_ms).is_empty(),
        "not before the grace"
    );
}

#[test]
fn runner_progress_trips_when_a_config_never_reaches_the_running_module() {
    let mut delivered = leader_at(0, 0);
    delivered.push((10_000, config(0, 2, true)));
    delivered.push((10_010, module_config(0, 2)));
    delivered.push((30_000, Record::Sample));
    assert!(run(InvariantId::RunnerProgress, &delivered, 30_000).is_empty());

    let mut stuck = leader_at(0, 0);
    stuck.push((10_000, config(0, 2, true)));
    stuck.push((30_000, Record::Sample));
    let found = run(InvariantId::RunnerProgress, &stuck, 30_000);
    assert_eq!(found.len(), 1);
    assert!(found[0].message.contains("receive config 2"));

    let mut never_started = leader_at(0, 0);
    never_started.push((5_000, stopped(0)));
    never_started.push((6_000, config(0, 2, true)));
    assert_eq!(
        run(InvariantId::RunnerProgress, &never_started, 30_000).len(),
        1
    );
}

/// L5 on a restart: a module started again after a lost term must get the latest
/// configuration again (H6's mutant, `fixed` with `latest-config` ablated, gives it none).
#[test]
fn runner_progress_trips_when_a_restarted_module_gets_no_configuration() {
    let lose_and_regain = |reconfigured: bool| {
        let mut records = leader_at(0, 0);
        records.push((5_000, stopped(0)));
        records.push((
            5_000,
            Record::LeadingStopped {
                replica: 0,
                term: 1,
            },
        ));
        records.push((8_000, held(0, 2)));
        records.push((8_000, leading(0, 2)));
        records.push((8_000, started(0, 2)));
        if reconfigured {
            records.push((8_000, module_config(0, 1)));
        }
        records.push((40_000, Record::Sample));
        records
    };
    assert!(run(InvariantId::RunnerProgress, &lose_and_regain(true), 40_000).is_empty());
    let found = run(InvariantId::RunnerProgress, &lose_and_regain(false), 40_000);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].message.contains("receive config 1"));
}

/// The reference for the records a view keeps for violations to quote: the last records per
/// replica, in a ring each.
#[derive(Default)]
struct NaiveRecent(std::collections::BTreeMap<u32, std::collections::VecDeque<(u64, Record)>>);

impl NaiveRecent {
    fn apply(&mut self, t_ms: u64, record: &Record) {
        if let Some(replica) = record.replica() {
            let ring = self.0.entry(replica).or_default();
            ring.push_back((t_ms, record.clone()));
            if ring.len() > super::view::CONTEXT_LINES_MAX {
                ring.pop_front();
            }
        }
    }

    fn context(&self, replicas: &[u32]) -> Vec<String> {
        let mut lines: Vec<String> = replicas
            .iter()
            .filter_map(|replica| self.0.get(replica))
            .flat_map(|ring| {
                ring.iter()
                    .map(|(t_ms, record)| format!("{t_ms} {record:?}"))
            })
            .collect();
        lines.sort_by_key(|line| line.split(' ').next().and_then(|t| t.parse::<u64>().ok()));
        lines
    }
}

/// A random record: most touch one of four replicas, some touch none.
fn random_record(random: &mut crate::engine::Stream) -> Record {
    let replica = random.below(4) as u32;
    match random.below(6) {
        0 => leading(replica, random.below(3)),
        1 => started(replica, 1),
        2 => stopped(replica),
        3 => config(replica, random.below(9), random.chance(0.5)),
        4 => Record::ReplicaStopped { replica },
        _ => fault(random.below(3) as u32, "partition", random.chance(0.5)),
    }
}

#[test]
fn a_view_quotes_the_last_records_of_each_replica_it_is_asked_about() {
    use super::view::LeaderView;
    use crate::engine::{Stream, StreamId};
    for seed in 1..=40 {
        let mut random = Stream::new(seed, StreamId::Faults);
        let mut view = LeaderView::default();
        let mut reference = NaiveRecent::default();
        let mut t_ms = 0;
        for _ in 0..random.below(300) {
            t_ms += random.below(3);
            let record = random_record(&mut random);
            view.apply(t_ms, &record);
            reference.apply(t_ms, &record);
            let quoted: Vec<u32> = (0..4).filter(|_| random.chance(0.4)).collect();
            assert_eq!(
                view.context(&quoted),
                reference.context(&quoted),
                "seed {seed}"
            );
        }
        assert_eq!(
            view.context(&[0, 1, 2, 3]),
            reference.context(&[0, 1, 2, 3])
        );
    }
}

fn module_action(replica: u32) -> Record {
    Record::ModuleAction {
        replica,
        module: "gitops".to_string(),
    }
}

#[test]
fn time_spent_paused_after_leading_stopped_does_not_count_against_the_stop_latency() {
    // Found by the explore swarm (seeds 51 and 94 of scenarios/explore/leader.toml): a
    // process paused while its modules stop resumes with them still running.
    let mut paused = leader_at(0, 0);
    paused.push((
        12_000,
        Record::LeadingStopped {
            replica: 0,
            term: 1,
        },
    ));
    paused.push((12_500, Record::ReplicaPaused { replica: 0 }));
    paused.push((20_000, Record::ReplicaResumed { replica: 0 }));
    paused.push((21_400, module_action(0)));
    assert!(
        run(InvariantId::LeaderOnly, &paused, 30_000).is_empty(),
        "2 s of stop latency + 7.5 s paused: the module may run until 21.5 s"
    );
    let mut lingering = paused.clone();
    lingering.push((21_600, module_action(0)));
    let found = run(InvariantId::LeaderOnly, &lingering, 30_000);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].at_ms, 21_600);
}

#[test]
fn a_paused_replica_gets_its_pause_back_before_it_must_stop_competing() {
    // Found by the explore swarm (seed 85): paused right after its config lost all demand.
    let stops = |paused: bool| {
        let mut records = vec![
            (0, config(0, 1, true)),
            (0, Record::ElectionStarted { replica: 0 }),
            (60_000, config(0, 2, false)),
        ];
        if paused {
            records.push((60_500, Record::ReplicaPaused { replica: 0 }));
            records.push((80_000, Record::ReplicaResumed { replica: 0 }));
        }
        // Another replica's record at 75 s: the monitor judges at every record.
        records.push((75_000, config(1, 1, false)));
        records.push((81_000, Record::ElectionStopped { replica: 0 }));
        records.sort_by_key(|(t_ms, _)| *t_ms);
        run(InvariantId::ElectionIffDemand, &records, 100_000)
    };
    assert!(stops(true).is_empty(), "grace 12.16 s + 19.5 s paused");
    assert_eq!(
        stops(false).len(),
        1,
        "21 s without a pause is past the grace"
    );
}

#[test]
fn a_release_sent_into_a_partition_is_not_a_missing_release() {
    // Found by the explore swarm (seed 161): the release call went out during a partition
    // that ended before the call's timeout; the Lease still named the replica.
    let unreleased = |partition_end_ms: u64| {
        let records = vec![
            (0, config(0, 1, true)),
            (0, Record::ElectionStarted { replica: 0 }),
            (
                0,
                write(Actor::Replica(0), "create-lease", "a", 0, (None, None, 1)),
            ),
            (50_000, fault(0, "partition", true)),
            (partition_end_ms, fault(0, "partition", false)),
            (60_000.max(partition_end_ms), config(0, 2, false)),
            (61_000, Record::ElectionStopped { replica: 0 }),
        ];
        run(InvariantId::ElectionIffDemand, &records, 61_000)
    };
    assert!(
        unreleased(60_500).is_empty(),
        "the partition ended 0.5 s before the stop: the release may have been lost in it"
    );
    assert_eq!(
        unreleased(50_800).len(),
        1,
        "10.2 s after the partition (RD + a round trip = 10.08 s) the API was reachable"
    );
}

#[test]
fn the_drift_budget_is_judged_on_pairs_of_clock_rates() {
    let drift = |index: u32, target: &str| Record::FaultStarted {
        index,
        fault: "clock_drift".to_owned(),
        target: target.to_owned(),
    };
    // 1.2 and 0.85 are each within LD/(RP+RD) = 1.25 of a true clock, but 1.41 apart.
    let mut view = super::view::LeaderView::default();
    view.apply(0, &drift(0, "replica-0 rate=1.2"));
    assert_eq!(view.outside_budget(1, &[0, 1], &bounds()), None);
    view.apply(0, &drift(1, "replica-1 rate=0.85"));
    let reason = view.outside_budget(1, &[0, 1], &bounds());
    assert!(
        reason
            .as_deref()
            .is_some_and(|r| r.contains("1.2 and 0.85")),
        "{reason:?}"
    );
}

mod scenario;
