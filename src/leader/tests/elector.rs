//! The client-go algorithm (`docs/policies.md`), checked through whole replicas of both
//! variants: they share it.

use super::harness::{OutageMode, World, settings};
use crate::leader::{Observation, Variant};
use crate::resources::{KubeReply, KubeRequest, LeaseSpec};

const LATENCY_MS: u64 = 10;
const LEASE_DURATION_MS: u64 = 15_000;
const RENEW_DEADLINE_MS: u64 = 10_000;
const RETRY_PERIOD_MS: u64 = 2_000;
/// The longest jittered gap between acquire attempts: RP·2.2.
const RETRY_GAP_MS_MAX: u64 = 4_400;

fn foreign_record(holder: &str, renew_time_ms: u64) -> LeaseSpec {
    LeaseSpec {
        holder_identity: holder.to_string(),
        lease_duration_seconds: 15,
        acquire_time_ms: 0,
        renew_time_ms,
        lease_transitions: 3,
    }
}

#[test]
fn a_candidate_takes_over_only_after_a_full_lease_duration_of_unchanged_observations() {
    for variant in Variant::ALL {
        let mut world = World::new(LATENCY_MS, 1);
        world.external_write(0, foreign_record("ghost", 0));
        world.run_until(1);
        let candidate = world.add_replica(settings("a", variant), 0, true);
        world.run_until(60_000);

        let first_get = world.calls_of(candidate)[0];
        let (observed_ms, _) = first_get
            .answer
            .clone()
            .expect("the first Get was answered");
        let takeovers = world.writes_of(candidate, "a");
        assert!(
            !takeovers.is_empty(),
            "{variant:?}: the unrenewed lease is eventually taken"
        );
        assert!(
            takeovers[0] >= observed_ms + LEASE_DURATION_MS,
            "{variant:?}: took over at {} although the record was first seen at {observed_ms}",
            takeovers[0]
        );
        assert!(
            takeovers[0] <= observed_ms + LEASE_DURATION_MS + RETRY_GAP_MS_MAX + 4 * LATENCY_MS
        );
        let transitions = world
            .lease
            .as_ref()
            .expect("the lease exists")
            .spec
            .lease_transitions;
        assert!(
            transitions >= 4,
            "{variant:?}: a new holder bumps leaseTransitions"
        );
    }
}

#[test]
fn a_candidate_never_takes_over_a_lease_whose_record_keeps_changing() {
    for variant in Variant::ALL {
        let mut world = World::new(LATENCY_MS, 2);
        // The holder renews every 2 s on its own clock, which is a day ahead: the renewTime
        // values look far in the future, and nothing but their change matters.
        for renewal in 0..40u64 {
            let at_ms = renewal * RETRY_PERIOD_MS;
            world.external_write(at_ms, foreign_record("holder", 86_400_000 + at_ms));
        }
        world.run_until(1);
        let candidate = world.add_replica(settings("a", variant), 0, true);
        world.run_until(80_000);
        assert!(
            world.writes_of(candidate, "a").is_empty(),
            "{variant:?}: a live lease is not stolen"
        );

        world.run_until(200_000);
        let takeover = world.writes_of(candidate, "a")[0];
        let last_renewal_ms = 39 * RETRY_PERIOD_MS;
        assert!(
            takeover >= last_renewal_ms + LEASE_DURATION_MS,
            "{variant:?}: waits LD after the last change"
        );
    }
}

#[test]
fn a_stale_update_gets_a_conflict_and_retries_after_a_jittered_retry_period() {
    for variant in Variant::ALL {
        let mut world = World::new(LATENCY_MS, 3);
        world.external_write(0, foreign_record("", 0));
        world.run_until(5);
        let candidate = world.add_replica(settings("a", variant), 0, true);
        // Between the candidate's Get (served at 15) and its Update (arriving at 35), a third
        // party writes: the Update carries a stale resourceVersion.
        world.external_write(30, foreign_record("", 30));
        world.run_until(30_000);

        let calls = world.calls_of(candidate);
        assert!(matches!(calls[0].request, KubeRequest::GetLease { .. }));
        assert!(matches!(calls[1].request, KubeRequest::UpdateLease { .. }));
        let (conflict_ms, result) = calls[1].answer.clone().expect("the Update was answered");
        assert_eq!(
            result,
            Err(crate::resources::KubeError::Conflict),
            "{variant:?}"
        );
        let retry_gap_ms = calls[2].sent_ms - conflict_ms;
        assert!(
            (RETRY_PERIOD_MS..RETRY_GAP_MS_MAX).contains(&retry_gap_ms),
            "{variant:?}: retried {retry_gap_ms} ms after the conflict"
        );
        assert!(matches!(calls[2].request, KubeRequest::GetLease { .. }));
        let (_, retried) = calls[3]
            .answer
            .clone()
            .expect("the retried Update was answered");
        assert!(
            matches!(retried, Ok(KubeReply::Lease(_))),
            "{variant:?}: the retry wins"
        );
    }
}

#[test]
fn a_released_lease_is_taken_within_one_jittered_retry_period() {
    // A replica releases when its last module stops being runnable only in the designs
    // that run the election on demand; v2 and later release on shutdown only.
    let on_demand = Variant::ALL.into_iter();
    for variant in on_demand.filter(|variant| variant.promises_election_iff_demand()) {
        let mut world = World::new(LATENCY_MS, 4);
        let leader = world.add_replica(settings("a", variant), 0, true);
        world.run_until(1_000);
        let follower = world.add_replica(settings("b", variant), 0, true);
        world.run_until(30_000);
        assert!(
            world.writes_of(follower, "b").is_empty(),
            "{variant:?}: a keeps the lease"
        );

        // The last leader module becomes non-runnable: a stops competing and releases.
        world.configure(leader, 2, false);
        world.run_until(60_000);
        let released_ms = world.writes_of(leader, "")[0];
        let taken_ms = world.writes_of(follower, "b")[0];
        assert!(taken_ms > released_ms);
        assert!(
            taken_ms - released_ms <= RETRY_GAP_MS_MAX + 3 * LATENCY_MS,
            "{variant:?}: taken {} ms after the release",
            taken_ms - released_ms
        );
    }
}

/// The real time at which b takes over after a, holding the lease, crashes at 20 s.
fn takeover_after_crash_ms(variant: Variant, offset_a_ms: u64, offset_b_ms: u64) -> u64 {
    let mut world = World::new(LATENCY_MS, 5);
    let holder = world.add_replica(settings("a", variant), offset_a_ms, true);
    world.run_until(500);
    let follower = world.add_replica(settings("b", variant), offset_b_ms, true);
    world.run_until(20_000);
    let renew_time_ms = world
        .lease
        .as_ref()
        .expect("a holds the lease")
        .spec
        .renew_time_ms;
    assert!(
        renew_time_ms >= offset_a_ms,
        "a's renewTime is written on a's own clock"
    );
    world.crash(holder);
    world.run_until(80_000);
    let last_write_ms = *world.writes_of(holder, "a").last().expect("a wrote");
    let takeover_ms = world.writes_of(follower, "b")[0];
    assert!(
        takeover_ms >= last_write_ms + LEASE_DURATION_MS,
        "{variant:?}: b waited LD"
    );
    takeover_ms
}

#[test]
fn the_takeover_rule_ignores_the_holders_clock_offset() {
    let year_ms = 365 * 86_400_000;
    for variant in Variant::ALL {
        let aligned_ms = takeover_after_crash_ms(variant, 0, 0);
        // renewTime a year in the future of b's clock, then a year in its past.
        assert_eq!(
            takeover_after_crash_ms(variant, year_ms, 0),
            aligned_ms,
            "{variant:?}"
        );
        assert_eq!(
            takeover_after_crash_ms(variant, 0, year_ms),
            aligned_ms,
            "{variant:?}"
        );
    }
}

#[test]
fn renewal_gives_up_after_the_renew_deadline_and_stops_leading() {
    for variant in Variant::ALL {
        let mut world = World::new(LATENCY_MS, 6);
        let leader = world.add_replica(settings("a", variant), 0, true);
        world.outage(20_000, 60_000, OutageMode::Error, &[]);
        world.run_until(45_000);

        let held = world
            .observations
            .iter()
            .filter(|(_, _, observation)| matches!(observation, Observation::LeaseHeld { term: 1 }))
            .map(|(at_ms, _, _)| *at_ms)
            .collect::<Vec<_>>();
        let last_held_ms = *held.last().expect("a renewed before the outage");
        assert!(
            last_held_ms < 20_000,
            "{variant:?}: no renewal succeeds during the outage"
        );
        let stopped = world.times_of(leader, &Observation::LeadingStopped { term: 1 });
        assert_eq!(
            stopped.len(),
            1,
            "{variant:?}: the runner learns of the loss once"
        );
        let gave_up_after_ms = stopped[0] - last_held_ms;
        let cycle_ms = RETRY_PERIOD_MS + RENEW_DEADLINE_MS;
        assert!(
            (cycle_ms..=cycle_ms + 2 * LATENCY_MS).contains(&gave_up_after_ms),
            "{variant:?}: gave up {gave_up_after_ms} ms after the last renewal"
        );
        // OnStoppedLeading: the elector's Run returned.
        assert!(
            !world
                .times_of(leader, &Observation::ElectionStopped)
                .is_empty(),
            "{variant:?}"
        );
    }
}
