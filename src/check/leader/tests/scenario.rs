//! The harness's acceptance rows for leader election (`docs/policies.md`, the `agentk-v1`
//! defect table), end to end: the real replicas run against the leader tests' fake Lease
//! API, their journal becomes trace records exactly as a world would write them, and every
//! leader monitor judges it.
//! `agentk-v1` must trip the named invariant; `fixed` must trip none.

use crate::check::InvariantId;
use crate::check::Violation;
use crate::check::leader::{LeaderBounds, leader_monitors};
use crate::leader::tests::harness::{Journal, OutageMode, World, settings};
use crate::leader::{Observation, Variant};
use crate::trace::{Actor, Record};

const LATENCY_MS: u64 = 10;

fn bounds(variant: Variant, replicas: u32) -> LeaderBounds {
    LeaderBounds {
        lease_duration_ms: 15_000,
        renew_deadline_ms: 10_000,
        retry_period_ms: 2_000,
        api_latency_max_ms: LATENCY_MS,
        module_stop_latency_max_ms: 1_000,
        replicas,
        variant,
    }
}

/// The record a world writes for one observation of `replica`.
fn record_of(replica: u32, observation: Observation) -> Record {
    crate::world::observation_record(replica, observation)
}

/// The trace record of one journal entry.
fn journal_record(entry: Journal) -> Record {
    match entry {
        Journal::Observed {
            replica,
            observation,
        } => record_of(replica as u32, observation),
        Journal::Written {
            by,
            verb,
            spec,
            rv_current,
            rv_sent,
            rv_new,
        } => Record::LeaseWritten {
            by: by.map_or(Actor::External, |replica| Actor::Replica(replica as u32)),
            verb: verb.to_string(),
            holder: spec.holder_identity,
            transitions: spec.lease_transitions,
            rv_current,
            rv_sent,
            rv_new,
        },
        Journal::Crashed { replica } => Record::ReplicaStopped {
            replica: replica as u32,
        },
    }
}

/// The world's records, with `faults` (start, end, name) and a sample every second, until
/// `end_ms`; returns every violation of every leader monitor.
fn judge(
    world: &World,
    faults: &[(u64, u64, &str)],
    bounds: LeaderBounds,
    end_ms: u64,
) -> Vec<Violation> {
    let mut records: Vec<(u64, Record)> = world
        .journal
        .iter()
        .map(|(t_ms, entry)| (*t_ms, journal_record(entry.clone())))
        .collect();
    for (index, (from_ms, until_ms, fault)) in faults.iter().enumerate() {
        let index = index as u32;
        let target = "replica-0".to_string();
        records.push((
            *from_ms,
            Record::FaultStarted {
                index,
                fault: fault.to_string(),
                target,
            },
        ));
        records.push((
            *until_ms,
            Record::FaultEnded {
                index,
                fault: fault.to_string(),
            },
        ));
    }
    records.extend((0..end_ms / 1_000).map(|second| (second * 1_000, Record::Sample)));
    // A stable sort keeps the journal's order among records of the same instant.
    records.sort_by_key(|(t_ms, _)| *t_ms);

    let mut monitors = leader_monitors(bounds);
    let mut out = Vec::new();
    for (t_ms, record) in &records {
        super::super::feed(&mut monitors, *t_ms, record, &mut out);
    }
    for monitor in &mut monitors {
        monitor.finish(end_ms, &mut out);
    }
    out
}

fn ids(violations: &[Violation]) -> Vec<InvariantId> {
    violations.iter().map(|violation| violation.id).collect()
}

/// `api_outage` longer than RD on the only replica, which leads.
fn outage_on_the_leader(variant: Variant) -> Vec<Violation> {
    let mut world = World::new(LATENCY_MS, 21);
    world.add_replica(settings("a", variant), 0, true);
    world.outage(20_000, 50_000, OutageMode::Error, &[]);
    world.run_until(200_000);
    judge(
        &world,
        &[(20_000, 50_000, "api_outage")],
        bounds(variant, 1),
        200_000,
    )
}

#[test]
fn an_outage_longer_than_the_renew_deadline_trips_rejoin_after_outage_in_agentk_v1_only() {
    let found = outage_on_the_leader(Variant::AgentkV1);
    assert!(
        ids(&found).contains(&InvariantId::RejoinAfterOutage),
        "#398 must trip: {found:#?}"
    );
    let found = outage_on_the_leader(Variant::Fixed);
    assert!(found.is_empty(), "fixed keeps every invariant: {found:#?}");
}

/// a's first OnStartedLeading arrives 30 s late, after an outage on a ended its term and b
/// took over.
fn late_callback(variant: Variant) -> Vec<Violation> {
    let mut world = World::new(LATENCY_MS, 22);
    world.add_replica(settings("a", variant), 0, true);
    world.replica_mut(0).delay_next_started_leading(30_000);
    world.outage(1_000, 25_000, OutageMode::Error, &[0]);
    world.run_until(500);
    world.add_replica(settings("b", variant), 0, true);
    world.run_until(120_000);
    let faults = [(0, 30_040, "callback_delay"), (1_000, 25_000, "partition")];
    judge(&world, &faults, bounds(variant, 2), 120_000)
}

#[test]
fn a_stale_started_leading_trips_leader_only_in_agentk_v1_only() {
    let found = late_callback(Variant::AgentkV1);
    assert!(
        ids(&found).contains(&InvariantId::LeaderOnly),
        "H4 must trip: {found:#?}"
    );
    let found = late_callback(Variant::Fixed);
    assert!(found.is_empty(), "fixed keeps every invariant: {found:#?}");
}

/// a's API calls hang from 20 s to 80 s while b takes over.
fn blackholed_leader(variant: Variant) -> Vec<Violation> {
    let mut world = World::new(LATENCY_MS, 23);
    world.add_replica(settings("a", variant), 0, true);
    world.run_until(1_000);
    world.add_replica(settings("b", variant), 0, true);
    world.outage(20_000, 80_000, OutageMode::Hang, &[0]);
    world.run_until(150_000);
    judge(
        &world,
        &[(20_000, 80_000, "api_outage")],
        bounds(variant, 2),
        150_000,
    )
}

#[test]
fn a_blackholed_leader_trips_single_leader_acting_in_agentk_v1_only() {
    let found = blackholed_leader(Variant::AgentkV1);
    assert!(
        ids(&found).contains(&InvariantId::RejoinAfterOutage),
        "the hung release ends in #398 too"
    );
    let overlap = found
        .iter()
        .find(|violation| violation.id == InvariantId::SingleLeaderActing);
    let overlap = overlap.unwrap_or_else(|| panic!("H8 must trip: {found:#?}"));
    assert!(!overlap.expected, "an API hang is inside the fault budget");
    let found = blackholed_leader(Variant::Fixed);
    assert!(found.is_empty(), "fixed keeps every invariant: {found:#?}");
}

#[test]
fn a_leader_crash_and_a_demand_change_keep_every_invariant_in_both_variants() {
    for variant in Variant::ALL {
        let mut world = World::new(LATENCY_MS, 24);
        for (index, identity) in ["a", "b", "c"].into_iter().enumerate() {
            world.add_replica(settings(identity, variant), 0, true);
            world.run_until(300 * (index as u64 + 1));
        }
        world.run_until(20_000);
        world.crash(0);
        world.run_until(80_000);
        for replica in [1, 2] {
            world.configure(replica, 2, false);
        }
        world.run_until(120_000);
        for replica in [1, 2] {
            world.configure(replica, 3, true);
        }
        world.run_until(200_000);
        let found = judge(&world, &[], bounds(variant, 3), 200_000);
        assert!(found.is_empty(), "{variant:?}: {found:#?}");
    }
}
