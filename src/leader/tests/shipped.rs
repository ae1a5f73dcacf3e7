//! The shipped module behaviour (`for config := range cfg`, ctx ignored) under each runner,
//! and the agentk v2/HEAD runner's own defects.

use super::harness::{OutageMode, World, settings};
use crate::leader::{LeaderSettings, ModuleBehaviour, Observation, Variant};

const LATENCY_MS: u64 = 10;

fn shipped(variant: Variant) -> LeaderSettings {
    LeaderSettings {
        module_behaviour: ModuleBehaviour::Shipped,
        ..settings("a", variant)
    }
}

fn acted_between(world: &World, from_ms: u64, until_ms: u64) -> bool {
    world
        .observations
        .iter()
        .any(|(at_ms, replica, observation)| {
            *replica == 0
                && (from_ms..until_ms).contains(at_ms)
                && matches!(observation, Observation::ModuleAction { .. })
        })
}

fn stopped_times(world: &World) -> Vec<u64> {
    world.times_of(
        0,
        &Observation::ModuleStopped {
            module: "gitops".to_string(),
        },
    )
}

/// One replica leads with the shipped module; the API fails every call from 20 s to 50 s.
fn shipped_outage(variant: Variant) -> World {
    let mut world = World::new(LATENCY_MS, 11);
    world.add_replica(shipped(variant), 0, true);
    world.outage(20_000, 50_000, OutageMode::Error, &[]);
    world.run_until(200_000);
    world
}

#[test]
fn agentk_v1_with_shipped_modules_waits_for_a_module_that_ignores_its_ctx() {
    let mut world = shipped_outage(Variant::AgentkV1);
    let lost_ms = world.times_of(0, &Observation::LeadingStopped { term: 1 })[0];
    assert!(lost_ms < 50_000, "the term ends in the outage");
    assert!(
        stopped_times(&world).is_empty(),
        "ctx cancelled, Run goes on"
    );
    assert!(
        acted_between(&world, 150_000, 200_000),
        "the old leader keeps applying"
    );
    assert!(
        !world.replica(0).election_running(),
        "the runner is blocked in h.wait(): no new elector"
    );

    // A non-runnable configuration makes the wrapper close the channel: the module returns,
    // the runner starts an elector for the still-registered function, then handles the
    // unregistration and cancels it.
    world.configure(0, 2, false);
    world.run_until(210_000);
    assert_eq!(stopped_times(&world).len(), 1);
    assert!(!world.module_running(0));
    assert!(!world.replica(0).election_running());
}

/// starboard_vulnerability at `4438242a`: its worker runs on `Run`'s ctx, so after the cancel
/// it stops (recorded stopped, no more work) while `Run` reads on and the runner still waits.
#[test]
fn agentk_v1_with_a_worker_on_runs_ctx_stops_acting_but_still_holds_the_runner() {
    let mut settings = shipped(Variant::AgentkV1);
    settings.modules[0].work_ctx = crate::leader::WorkCtx::Run;
    let mut world = World::new(LATENCY_MS, 11);
    world.add_replica(settings, 0, true);
    world.outage(20_000, 50_000, OutageMode::Error, &[]);
    world.run_until(200_000);
    let lost_ms = world.times_of(0, &Observation::LeadingStopped { term: 1 })[0];
    let stopped = stopped_times(&world);
    assert_eq!(stopped.len(), 1, "its workers stop once");
    assert!(
        stopped[0] >= lost_ms && stopped[0] <= lost_ms + 1_000,
        "within the stop latency of the cancel"
    );
    assert!(
        !acted_between(&world, stopped[0] + 1, 200_000),
        "no work after"
    );
    assert!(!world.module_running(0), "recorded stopped");
    assert!(
        world.replica(0).modules_active(),
        "Run still reads its channel"
    );
    assert!(
        !world.replica(0).election_running(),
        "the runner still waits in h.wait(): no new elector"
    );
    let blocked = (world.observations.iter())
        .filter(|(_, r, o)| *r == 0 && matches!(o, Observation::RunnerBlocked { .. }))
        .count();
    assert_eq!(
        blocked, 2,
        "the wait is recorded, and again once the workers stopped"
    );

    // The channel closes: Run returns at once, without a second stop record.
    world.configure(0, 2, false);
    world.run_until(210_000);
    assert_eq!(stopped_times(&world).len(), 1);
    assert!(!world.replica(0).modules_active());
}

#[test]
fn agentk_v1_with_ctx_obeying_modules_stops_them_within_the_stop_latency() {
    let mut world = World::new(LATENCY_MS, 11);
    world.add_replica(settings("a", Variant::AgentkV1), 0, true);
    world.outage(20_000, 50_000, OutageMode::Error, &[]);
    world.run_until(200_000);
    let lost_ms = world.times_of(0, &Observation::LeadingStopped { term: 1 })[0];
    let stopped = stopped_times(&world);
    assert_eq!(stopped.len(), 1);
    assert!(
        stopped[0] - lost_ms <= 1_000,
        "returns 1 s after its ctx ended"
    );
}

#[test]
fn agentk_v2_and_head_stop_shipped_modules_by_closing_their_channel_and_rejoin() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let world = shipped_outage(variant);
        let lost_ms = world.times_of(0, &Observation::LeadingStopped { term: 1 })[0];
        let stopped = stopped_times(&world);
        assert!(
            stopped.first().is_some_and(|at| at - lost_ms <= 1_000),
            "{variant:?}: cancel and close: the module returns"
        );
        let held_after_outage = world.observations.iter().any(|(at_ms, _, observation)| {
            *at_ms >= 50_000 && matches!(observation, Observation::LeaseHeld { .. })
        });
        assert!(held_after_outage, "{variant:?}: the elector runs again");
        assert!(
            world.module_running(0),
            "{variant:?}: and restarts the module"
        );
    }
}

#[test]
fn agentk_v2_runs_the_election_without_demand_and_its_idle_module_does_no_work() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let mut world = World::new(LATENCY_MS, 3);
        world.add_replica(shipped(variant), 0, false);
        world.run_until(30_000);
        assert!(world.replica(0).election_running(), "{variant:?}");
        assert!(world.replica(0).believed_term().is_some(), "{variant:?}");
        assert!(
            world.module_running(0),
            "{variant:?}: registered, so started"
        );
        assert!(!acted_between(&world, 0, 30_000), "{variant:?}: no work");
    }
}

#[test]
fn agentk_v2_restarts_a_module_with_the_configuration_captured_at_registration() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let mut world = World::new(LATENCY_MS, 11);
        world.add_replica(shipped(variant), 0, true);
        world.run_until(5_000);
        world.configure(0, 2, true);
        world.outage(20_000, 50_000, OutageMode::Error, &[]);
        world.run_until(200_000);
        let configs = world
            .observations
            .iter()
            .filter_map(|(_, replica, observation)| match observation {
                Observation::ModuleConfig { version, .. } if *replica == 0 => Some(*version),
                _ => None,
            })
            .collect::<Vec<_>>();
        assert_eq!(
            configs,
            [1, 2, 1],
            "{variant:?}: H6, the restart hands the module version 1 again"
        );
    }
}
