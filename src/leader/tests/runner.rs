//! The runner variants: agentk-v1 shows each of its defects, fixed shows none.

use super::harness::{OutageMode, World, settings};
use crate::leader::{Observation, Variant};
use crate::resources::KubeRequest;

const LATENCY_MS: u64 = 10;

fn module_started(term: u64) -> Observation {
    Observation::ModuleStarted {
        module: "gitops".to_string(),
        term,
    }
}

fn module_stopped() -> Observation {
    Observation::ModuleStopped {
        module: "gitops".to_string(),
    }
}

/// One replica leads; the API fails every call from 20 s to 50 s (longer than RD).
fn outage_longer_than_renew_deadline(variant: Variant) -> World {
    let mut world = World::new(LATENCY_MS, 11);
    world.add_replica(settings("a", variant), 0, true);
    world.outage(20_000, 50_000, OutageMode::Error, &[]);
    world.run_until(200_000);
    world
}

#[test]
fn agentk_v1_stops_electing_for_good_after_a_lost_term_whose_module_returned() {
    let world = outage_longer_than_renew_deadline(Variant::AgentkV1);
    let replica = world.replica(0);

    assert_eq!(
        world
            .times_of(0, &Observation::LeadingStopped { term: 1 })
            .len(),
        1
    );
    assert!(
        !world.times_of(0, &module_stopped()).is_empty(),
        "the module's Run returned"
    );
    let held_after_outage = world.observations.iter().any(|(at_ms, _, observation)| {
        *at_ms >= 50_000 && matches!(observation, Observation::LeaseHeld { .. })
    });
    assert!(
        !held_after_outage,
        "#398: the replica never holds the lease again"
    );
    assert!(
        !replica.election_running(),
        "#398: the election stopped for good"
    );
    assert!(
        !world.module_running(0),
        "the module never runs again though its config is runnable"
    );
}

#[test]
fn fixed_re_enters_the_election_after_a_lost_term() {
    let world = outage_longer_than_renew_deadline(Variant::Fixed);
    let replica = world.replica(0);

    assert_eq!(
        world
            .times_of(0, &Observation::LeadingStopped { term: 1 })
            .len(),
        1
    );
    let held_after_outage = world.observations.iter().any(|(at_ms, _, observation)| {
        *at_ms >= 50_000 && matches!(observation, Observation::LeaseHeld { .. })
    });
    assert!(
        held_after_outage,
        "the replica re-acquires once the API answers"
    );
    assert!(replica.election_running());
    assert!(replica.believed_term().is_some_and(|term| term >= 2));
    let restarted = world.times_of(0, &module_started(replica.believed_term().expect("leads")));
    assert!(
        restarted.iter().all(|&at_ms| at_ms >= 50_000),
        "restarted after the outage"
    );
    assert!(world.module_running(0), "the module runs again");
    // The restarted module gets the latest configuration again.
    let configs = world.times_of(
        0,
        &Observation::ModuleConfig {
            module: "gitops".to_string(),
            version: 1,
        },
    );
    assert_eq!(configs.len(), 2);
}

/// Replica a's first OnStartedLeading is delayed by 30 s; an API outage on a alone ends its
/// term before the callback arrives, and b takes over. Returns the world at 40 s.
fn late_callback_of_an_old_term(variant: Variant) -> World {
    let mut world = World::new(LATENCY_MS, 12);
    world.add_replica(settings("a", variant), 0, true);
    world.replica_mut(0).delay_next_started_leading(30_000);
    world.outage(1_000, 25_000, OutageMode::Error, &[0]);
    world.run_until(500);
    world.add_replica(settings("b", variant), 0, true);
    world.run_until(40_000);
    assert!(
        !world.writes_of(1, "b").is_empty(),
        "{variant:?}: b took over the unrenewed lease"
    );
    assert!(world.module_running(1), "{variant:?}: b runs the module");
    assert_eq!(
        world.replica(0).lease_term(),
        None,
        "{variant:?}: a does not hold the lease"
    );
    world
}

#[test]
fn a_late_started_leading_of_an_old_term_starts_modules_in_agentk_v1() {
    let world = late_callback_of_an_old_term(Variant::AgentkV1);
    assert_eq!(
        world.replica(0).believed_term(),
        Some(1),
        "H4: the stale callback was taken"
    );
    let started = world.times_of(0, &module_started(1));
    assert_eq!(started.len(), 1);
    assert!(
        started[0] >= 30_000,
        "the module started when the late callback arrived"
    );
    assert!(
        world.module_running(0) && world.module_running(1),
        "two replicas act at once"
    );
}

#[test]
fn a_late_started_leading_of_an_old_term_is_ignored_by_fixed() {
    let world = late_callback_of_an_old_term(Variant::Fixed);
    assert_eq!(world.replica(0).believed_term(), None);
    assert!(
        world
            .times_of(0, &Observation::LeadingStarted { term: 1 })
            .is_empty()
    );
    assert!(!world.module_running(0), "only the lease holder acts");
}

/// a leads; from 20 s its API calls hang until 80 s, and b takes over meanwhile. Returns the
/// world at 100 s and the real times (sent, answered) of a's release write.
fn blackholed_leader(variant: Variant) -> (World, u64, Option<u64>) {
    let mut world = World::new(LATENCY_MS, 13);
    world.add_replica(settings("a", variant), 0, true);
    world.run_until(1_000);
    world.add_replica(settings("b", variant), 0, true);
    world.outage(20_000, 80_000, OutageMode::Hang, &[0]);
    world.run_until(100_000);
    let release = world
        .calls_of(0)
        .into_iter()
        .find(|record| match &record.request {
            KubeRequest::UpdateLease { spec, .. } => spec.holder_identity.is_empty(),
            _ => false,
        })
        .expect("a tried to release the lease");
    let answered_ms = release.answer.as_ref().map(|(at_ms, _)| *at_ms);
    let sent_ms = release.sent_ms;
    (world, sent_ms, answered_ms)
}

#[test]
fn agentk_v1_stops_modules_only_after_the_release_returns() {
    let (world, release_sent_ms, release_answered_ms) = blackholed_leader(Variant::AgentkV1);
    let release_answered_ms = release_answered_ms.expect("the hang ended");
    assert!(
        release_answered_ms >= 80_000,
        "v0.24.3's release has no timeout"
    );
    let stopped = world.times_of(0, &module_stopped());
    assert_eq!(stopped.len(), 1);
    assert!(
        stopped[0] >= release_answered_ms,
        "H8: modules stop after the release returns"
    );
    let b_started = world.times_of(1, &module_started(1))[0];
    assert!(
        b_started < release_sent_ms.max(stopped[0]),
        "b acted while a still acted"
    );
    assert!(
        b_started < stopped[0],
        "H8: the old leader acts on after the new one took over"
    );
}

/// a leads; from 20 s its API calls hang until 80 s. Returns the world at 100 s and the real
/// times (sent, answered) of a's first call after its modules stopped: fixed's release begins
/// with a Get that refreshes the version and re-checks the holder.
fn blackholed_fixed_leader() -> (World, u64, Option<u64>) {
    let mut world = World::new(LATENCY_MS, 13);
    world.add_replica(settings("a", Variant::Fixed), 0, true);
    world.run_until(1_000);
    world.add_replica(settings("b", Variant::Fixed), 0, true);
    world.outage(20_000, 80_000, OutageMode::Hang, &[0]);
    world.run_until(100_000);
    let stopped_ms = world.times_of(0, &module_stopped())[0];
    let release = world
        .calls_of(0)
        .into_iter()
        .find(|record| record.sent_ms >= stopped_ms)
        .expect("a tried to release the lease");
    let answered_ms = release.answer.as_ref().map(|(at_ms, _)| *at_ms);
    let sent_ms = release.sent_ms;
    (world, sent_ms, answered_ms)
}

#[test]
fn fixed_stops_modules_before_the_release_is_sent() {
    let (world, release_sent_ms, release_answered_ms) = blackholed_fixed_leader();
    let stopped = world.times_of(0, &module_stopped());
    assert_eq!(stopped.len(), 1);
    assert!(
        stopped[0] <= release_sent_ms,
        "modules stopped before the release was sent"
    );
    let release_answered_ms = release_answered_ms.expect("the release timed out");
    assert!(
        release_answered_ms <= release_sent_ms + 10_000,
        "the release is bounded by RD"
    );
    let b_started = world.times_of(1, &module_started(1))[0];
    assert!(
        stopped[0] < b_started,
        "no overlap: a stopped before b started"
    );
}

#[test]
fn settings_that_client_go_would_refuse_are_refused() {
    use crate::leader::{Replica, SettingsError};
    let mut short_deadline = settings("a", Variant::Fixed);
    short_deadline.renew_deadline_ms = 2_400;
    assert_eq!(
        short_deadline.validate(),
        Err(SettingsError::RenewDeadlineTooShort)
    );
    let mut long_deadline = settings("a", Variant::Fixed);
    long_deadline.renew_deadline_ms = 15_000;
    assert!(Replica::new(long_deadline).is_err(), "LD must exceed RD");
    let mut anonymous = settings("", Variant::AgentkV1);
    anonymous.identity.clear();
    assert_eq!(anonymous.validate(), Err(SettingsError::EmptyIdentity));
    assert_eq!(settings("a", Variant::AgentkV1).validate(), Ok(()));
}

#[test]
fn the_lease_is_held_before_the_runner_hears_it_leads_and_demand_is_reported() {
    for variant in Variant::ALL {
        let world = outage_longer_than_renew_deadline(variant);
        let first_two = world
            .observations
            .iter()
            .filter(|(_, _, seen)| {
                matches!(
                    seen,
                    Observation::LeaseHeld { .. } | Observation::LeadingStarted { .. }
                )
            })
            .take(2)
            .map(|(_, _, seen)| seen.clone())
            .collect::<Vec<_>>();
        assert_eq!(
            first_two,
            vec![
                Observation::LeaseHeld { term: 1 },
                Observation::LeadingStarted { term: 1 }
            ]
        );
        let demand = Observation::ConfigReceived {
            version: 1,
            runnable_modules: vec!["gitops".to_string()],
        };
        assert_eq!(world.times_of(0, &demand), vec![0], "{variant:?}");
    }
}
