//! agentk's tests for the leader-runner fixes, ported to the model's runners.
//!
//! Origins (repository `pluralsh/kubernetes-agent`, the GitHub mirror of gitlab-agent):
//! - `cmd/agentk/agentkapp/leader_runner_test.go`, `TestLR_MultipleRunLeaderThenLeader`, added
//!   by commit `9eaf1658` (v15.5.1, "Fix leader runner running same module more than once"):
//!   two functions registered before the first election win both start.
//! - `cmd/agentk/agentkapp/leader_election_test.go`,
//!   `TestLeaderElection_LeaderNotLeaderLeader_OneModule_Shutdown`, added by commit `278235e8`
//!   (MR !1021, closes #398): lead -> not lead -> lead again with one module; the module runs
//!   again and reads the same configuration.
//!
//! - `cmd/agentk/agentkapp/leader_runner_test.go`, `TestLR_RunLeaderStop`,
//!   `TestLR_RunNoLeaderStop`, `TestLR_RunNoLeaderRunStop` and `TestLR_RunLeaderRunStopStop`,
//!   at `4438242a` (which passes them): run on `agentk-v1` itself.
//! - `cmd/agentk/agentkapp/leader_module_wrapper_test.go`, `TestLMW_Run_EarlyReturnNoError`,
//!   `…EarlyReturnNoErrorSameConfig`, `…EarlyReturnNoErrorMoreConfig`,
//!   `TestLMW_Run_NotRunnableConfig`, `…RunnableThenNotRunnableConfig` and
//!   `…RunnableThenNotRunnableThenRunnableConfig`, at `4438242a` (which passes them): run on
//!   `agentk-v1` itself.
//! - `leader_module_wrapper_test.go`, `TestLMW_Run_StartWithConfig` and
//!   `TestLMW_Run_ReceiveNewConfigs`, and `leader_election_test.go`,
//!   `TestLeaderElection_Leader_OneModule_Shutdown`, `…NotLeader_OneModule_Shutdown` and
//!   `…NotLeader_OneModule_NewConfig_Shutdown`, at `3d59282c` and at the fork's HEAD
//!   `0a4bdc9d` (which pass them): run on `agentk-v2` and `agentk-head`; and
//!   `TestLeaderElection_NotLeader_NoModule_Shutdown`, `…Leader_NoModule_Shutdown` and
//!   `…LeaderNotLeaderLeader_NoModule_Shutdown`, the same at `278235e8`, `3d59282c` and HEAD:
//!   run on `agentk-v2` and `agentk-head`.
//!
//! `agentk-v1` is the runner at commit `4438242a` (before both fixes), so it must show the
//! defects the fixes closed (H2 and #398); `fixed`, `agentk-v2` and `agentk-head` must pass
//! the fixed code's expectations.

use super::driver::{Driver, Server, flags, settings};
use elasticsim::leader::Variant;

const AGENTK_TIMINGS: [u64; 3] = [15_000, 10_000, 2_000];

fn two_modules_runnable_before_the_first_win(variant: Variant, seed: u64) -> [usize; 2] {
    let modules = ["gitops", "starboard"];
    let settings = settings(variant, AGENTK_TIMINGS, &modules);
    let mut driver = Driver::start(settings, flags(&modules, &[]), seed);
    let mut server = Server::default();
    driver.serve(&mut server, 5_000);
    [driver.starts_of("gitops"), driver.starts_of("starboard")]
}

#[test]
fn two_modules_registered_before_the_first_win_each_start_once_in_fixed_only() {
    let mut last_iterated = std::collections::BTreeSet::new();
    for seed in 1..=20 {
        assert_eq!(
            two_modules_runnable_before_the_first_win(Variant::Fixed, seed),
            [1, 1],
            "fixed, seed {seed}: each module starts exactly once"
        );
        // 4438242a: every goroutine runs the last-iterated function (H2).
        let starts = two_modules_runnable_before_the_first_win(Variant::AgentkV1, seed);
        assert!(
            starts == [2, 0] || starts == [0, 2],
            "agentk-v1, seed {seed}: one module twice, the other never, got {starts:?}"
        );
        last_iterated.insert(starts);
    }
    assert_eq!(
        last_iterated.len(),
        2,
        "Go's map order (a seeded draw) picks either module as the last one"
    );
}

/// Lead, lose the lease to an API outage longer than RD, then find the Lease free again.
fn lead_not_lead_lead(variant: Variant) -> Driver {
    let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 11);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: leads first");
    server.failing_until_ms = 20_000;
    driver.serve(&mut server, 60_000);
    driver
}

#[test]
fn after_lead_not_lead_lead_the_module_runs_again_with_the_same_config_in_fixed_only() {
    let fixed = lead_not_lead_lead(Variant::Fixed);
    assert_eq!(fixed.starts_of("gitops"), 2, "fixed: the module runs again");
    assert_eq!(
        fixed.configs_of("gitops"),
        [1, 1],
        "fixed: with the same config"
    );
    assert!(
        fixed.replica().believed_term().is_some(),
        "fixed leads again"
    );
    // 4438242a (#398): the wrapper takes the module's return for its own exit, unregisters,
    // and the election stops for good.
    let v1 = lead_not_lead_lead(Variant::AgentkV1);
    assert_eq!(
        v1.starts_of("gitops"),
        1,
        "agentk-v1: the module never runs again"
    );
    assert!(
        !v1.replica().election_running(),
        "agentk-v1: the election stopped"
    );
    // The commit that added the test (278235e8, with 3d59282c) and the fork HEAD pass it.
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let driver = lead_not_lead_lead(variant);
        assert_eq!(driver.starts_of("gitops"), 2, "{variant:?}: runs again");
        assert_eq!(
            driver.configs_of("gitops"),
            [1, 1],
            "{variant:?}: same config"
        );
        assert!(driver.replica().believed_term().is_some(), "{variant:?}");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_runner_test.go`,
/// `TestLR_RunLeaderStop`, commit `4438242a` (which passes it): the elector leads, the
/// registered function starts, and its stop function cancels it, after which the runner
/// cancels the elector (the last function went), whose Run returns.
///
/// The original mocks the elector (Run: OnStartedLeading, wait for ctx, OnStoppedLeading)
/// and calls `RunWhenLeader`/`stop` directly. Here the model's real elector and wrapper run
/// it: a runnable configuration registers the function, a non-runnable one stops it. The
/// original's assertions hold there: one start, the function returns, Run returns (after
/// client-go's release, which the mock has not). The function obeys its ctx, as the test's
/// `<-ctx.Done()` does.
#[test]
fn test_lr_run_leader_stop_on_agentk_v1() {
    let settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 5);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "the function started once");
    assert!(driver.replica().election_running());
    let flags = flags(&[], &["gitops"]);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 6_000);
    assert!(!driver.replica().modules_active(), "the function returned");
    assert!(
        !driver.replica().election_running(),
        "the elector's Run returned"
    );
    assert_eq!(driver.starts_of("gitops"), 1, "and never started again");
    let holder = server.holder();
    assert_eq!(holder, Some(""), "ReleaseOnCancel released the Lease");
}

/// Lead with one ctx-obeying module, then lose the Lease to an API outage longer than RD: the
/// runner cancels the module's ctx and the module returns nil without the wrapper asking.
fn lead_then_lose_the_term(variant: Variant) -> (Driver, Server) {
    let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 7);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: leads first");
    server.failing_until_ms = 20_000;
    driver.serve(&mut server, 40_000);
    (driver, server)
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_EarlyReturnNoError`, commit `4438242a` (which passes it): the module reads
/// nothing and returns nil on its own; the wrapper calls the stop function `RunWhenLeader`
/// returned (the test's `stopCalled`) and does not register again, and its `Run` returns nil
/// once the configuration channel closes.
///
/// The original mocks the runner. Here agentk-v1's real runner and elector run it: the only
/// return the wrapper did not ask for is the module obeying the ctx the runner cancels after
/// a lost term (the mock module returns nil at once, i.e. it obeys any ctx). The original's
/// assertions hold there: the stop function ran (the wrapper unregistered, and as the last
/// function its unregistration cancelled the elector), the module never starts again, and
/// closing the channel (shutdown) ends the wrapper without error.
#[test]
fn test_lmw_run_early_return_no_error_on_agentk_v1() {
    let (mut driver, mut server) = lead_then_lose_the_term(Variant::AgentkV1);
    assert!(!driver.replica().modules_active(), "the module returned");
    assert!(
        !driver.replica().election_running(),
        "the stop function ran: nothing is registered, so no elector runs"
    );
    assert_eq!(driver.starts_of("gitops"), 1, "not registered again");
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 60_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
    assert_eq!(driver.starts_of("gitops"), 1);
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_EarlyReturnNoErrorMoreConfig`, commit `4438242a` (which passes it): the
/// module reads c1 and returns nil on its own; the wrapper unregisters; a later runnable c2
/// makes it call `RunWhenLeader` again, and the new `Run` reads c2.
///
/// Run on agentk-v1's real runner and elector, the early return being the ctx-obeying
/// module's return after a lost term (as in `test_lmw_run_early_return_no_error_on_agentk_v1`).
/// The original's assertions hold there: a second registration, a second start, which reads
/// c2 (the configurations read are [1, 2]).
#[test]
fn test_lmw_run_early_return_no_error_more_config_on_agentk_v1() {
    let (mut driver, mut server) = lead_then_lose_the_term(Variant::AgentkV1);
    assert!(!driver.replica().election_running(), "unregistered (#398)");
    let flags = flags(&["gitops"], &[]);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 60_000);
    assert!(driver.replica().election_running(), "registered again");
    assert_eq!(driver.starts_of("gitops"), 2, "the module ran again");
    assert_eq!(driver.configs_of("gitops"), [1, 2], "and read c2");
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 80_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
}

/// Lead with one module on configuration 1, then hand it `more` configurations (runnable) one
/// after another, each after the module read the previous one.
fn lead_and_receive(variant: Variant, more: &[u64]) -> (Driver, Server) {
    let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 3);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    for (step, version) in more.iter().enumerate() {
        let flags = flags(&["gitops"], &[]);
        driver.input(elasticsim::leader::Input::Config {
            version: *version,
            flags,
        });
        driver.serve(&mut server, 3_000 + 1_000 * (step as u64 + 1));
    }
    (driver, server)
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_module_wrapper_test.go`,
/// `TestLMW_Run_StartWithConfig`, at commit `3d59282c` (`cmd/agentk/agentkapp/`) and at the
/// fork's HEAD `0a4bdc9d` (`modules/kas/cmd/agentk/agentkapp/`), which pass it: the wrapper
/// registers, the start function runs the module, which reads c1; the configuration channel
/// closes, the wrapper's `Run` returns nil and it no longer runs a module.
///
/// The original mocks the runner (its `RunWhenLeader` calls the start function at once, as a
/// won election does). Here agentk-v2's and agentk-head's real runner and elector run it, on
/// a free Lease; the closing channel is the stager's shutdown. The original's assertions hold
/// there: one start, the module reads c1 (configurations read: [1]), and after the close no
/// module is active and the process exits.
#[test]
fn test_lmw_run_start_with_config_on_agentk_v2_and_head() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let (mut driver, mut server) = lead_and_receive(variant, &[]);
        assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: started");
        assert_eq!(driver.configs_of("gitops"), [1], "{variant:?}: read c1");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 30_000);
        assert!(
            !driver.replica().modules_active(),
            "{variant:?}: !isRunning"
        );
        assert!(driver.replica().has_exited(), "{variant:?}: Run returned");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_module_wrapper_test.go`,
/// `TestLMW_Run_ReceiveNewConfigs`, at commit `3d59282c` and at HEAD `0a4bdc9d` (which pass
/// it): the running module reads c1, then c2 and c3 sent to the wrapper one after another,
/// from the same `Run` (one start); closing the channel ends it.
///
/// Run on agentk-v2's and agentk-head's real runner and elector as above; the original's
/// assertions hold there: configurations read [1, 2, 3], one start, no module after the close.
#[test]
fn test_lmw_run_receive_new_configs_on_agentk_v2_and_head() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let (mut driver, mut server) = lead_and_receive(variant, &[2, 3]);
        assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: one Run");
        assert_eq!(
            driver.configs_of("gitops"),
            [1, 2, 3],
            "{variant:?}: read c1, c2, c3 in order"
        );
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 30_000);
        assert!(
            !driver.replica().modules_active(),
            "{variant:?}: !isRunning"
        );
        assert!(driver.replica().has_exited(), "{variant:?}: Run returned");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_NotLeader_OneModule_Shutdown`, at commit `3d59282c`
/// (`cmd/agentk/agentkapp/`) and at HEAD `0a4bdc9d` (`modules/kas/cmd/agentk/agentkapp/`),
/// which pass it: the elector never leads; a wrapper gets a configuration and registers, the
/// module is never started; closing the configuration channel and then cancelling the
/// runner's ctx ends both without hanging.
///
/// The original's mock elector only waits for its ctx. Here the real elector runs, facing a
/// Lease another candidate holds and that stays within its duration for the whole test (5 s of
/// a 15 s lease), so it never leads either, and the original's assertions hold: no module
/// start, and the shutdown (the stager closes the channel, then cancels the runner) ends the
/// process, with no write of ours to the Lease.
#[test]
fn test_leader_election_not_leader_one_module_shutdown_on_agentk_v2_and_head() {
    use elasticsim::resources::KubeReply;
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
        let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 9);
        let mut server = Server::default();
        let Ok(KubeReply::Lease(held)) = super::driver::lease("other", 15, 0, 1) else {
            unreachable!("lease() builds a Lease")
        };
        server.lease = Some(held);
        driver.serve(&mut server, 2_000);
        assert!(driver.replica().election_running(), "{variant:?}: elects");
        assert_eq!(driver.starts_of("gitops"), 0, "{variant:?}: not started");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 5_000);
        assert!(driver.replica().has_exited(), "{variant:?}: shut down");
        assert_eq!(driver.starts_of("gitops"), 0, "{variant:?}: never started");
        let holder = server.holder();
        assert_eq!(holder, Some("other"), "{variant:?}: no write of ours");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_NotLeader_OneModule_NewConfig_Shutdown`, at commit `3d59282c` and at
/// HEAD `0a4bdc9d` (which pass it): two runnable configurations reach the wrapper while the
/// replica does not lead; when it starts leading, the module's first read is the second one;
/// closing the channel then ends it.
///
/// The original's mock elector starts leading when the test says so. Here the real elector
/// runs: another candidate's Lease, never renewed, keeps it from leading until the Lease has
/// not changed for LD (15 s), by which time both configurations arrived (at 0 s and 0.2 s).
/// The original's assertions hold there: one start, and the configurations read are [2].
#[test]
fn test_leader_election_not_leader_one_module_new_config_shutdown_on_agentk_v2_and_head() {
    use elasticsim::resources::KubeReply;
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
        let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 13);
        let mut server = Server::default();
        let Ok(KubeReply::Lease(held)) = super::driver::lease("other", 15, 0, 1) else {
            unreachable!("lease() builds a Lease")
        };
        server.lease = Some(held);
        driver.serve(&mut server, 200);
        let flags = flags(&["gitops"], &[]);
        driver.input(elasticsim::leader::Input::Config { version: 2, flags });
        driver.serve(&mut server, 10_000);
        assert_eq!(
            driver.starts_of("gitops"),
            0,
            "{variant:?}: not leading yet"
        );
        driver.serve(&mut server, 40_000);
        assert!(
            driver.replica().believed_term().is_some(),
            "{variant:?}: leads"
        );
        assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: one start");
        assert_eq!(driver.configs_of("gitops"), [2], "{variant:?}: reads c2");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 60_000);
        assert!(driver.replica().has_exited(), "{variant:?}: shut down");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_EarlyReturnNoErrorSameConfig`, commit `4438242a` (which passes it): the module
/// returns nil on its own while the wrapper still holds a configuration it has not handed
/// over; the wrapper calls the stop function, registers again (`RunWhenLeader` twice), and the
/// second `Run` reads that configuration.
///
/// Run on agentk-v1's real runner and elector. The early return is the ctx-obeying module's
/// return after a lost term, with a stop latency of 1 s; the configuration not handed over is
/// version 2, which reaches the wrapper while the module is returning (the model's modules
/// read their pending configuration as they start, so the original's unread c1 becomes a
/// configuration that arrived too late for the first `Run`). The original's assertions hold
/// there: a second registration and start, whose read is that configuration ([1, 2]), and
/// unlike `test_lmw_run_early_return_no_error_on_agentk_v1` the election goes on (#398
/// masked).
#[test]
fn test_lmw_run_early_return_no_error_same_config_on_agentk_v1() {
    use elasticsim::leader::Observation;
    let mut settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &["gitops"]);
    settings.module_stop_latency_ms_min = 1_000;
    settings.module_stop_latency_ms_max = 1_000;
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 7);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "leads first");
    server.failing_until_ms = 20_000;
    let stopped = |d: &Driver| {
        (d.observations.iter()).any(|(_, o)| matches!(o, Observation::LeadingStopped { .. }))
    };
    let mut until_ms = 3_000;
    while !stopped(&driver) {
        until_ms += 10;
        assert!(until_ms < 40_000, "the term ends");
        driver.serve(&mut server, until_ms);
    }
    assert!(driver.replica().modules_active(), "the module is returning");
    let flags = flags(&["gitops"], &[]);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 60_000);
    assert_eq!(
        driver.starts_of("gitops"),
        2,
        "registered and started again"
    );
    assert_eq!(
        driver.configs_of("gitops"),
        [1, 2],
        "reading the unsent config"
    );
    assert!(driver.replica().election_running(), "the election goes on");
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 80_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_runner_test.go`,
/// `TestLR_RunNoLeaderStop`, commit `4438242a` (which passes it): the elector never leads; a
/// function is registered and its stop function called; the function is never called.
///
/// The original's mock elector only waits for its ctx. Here agentk-v1's real elector runs,
/// facing another candidate's Lease that stays within its duration (15 s) for the whole test,
/// and the wrapper registers the function on a runnable configuration and stops it on a
/// non-runnable one. The original's assertions hold there: no start; and, as the runner does
/// after its last function went, the elector is cancelled, with no write of ours.
#[test]
fn test_lr_run_no_leader_stop_on_agentk_v1() {
    use elasticsim::resources::KubeReply;
    let settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 17);
    let mut server = Server::default();
    let Ok(KubeReply::Lease(held)) = super::driver::lease("other", 15, 0, 1) else {
        unreachable!("lease() builds a Lease")
    };
    server.lease = Some(held);
    driver.serve(&mut server, 2_000);
    assert!(driver.replica().election_running(), "registered: elects");
    let flags = flags(&[], &["gitops"]);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 5_000);
    assert!(!driver.replica().election_running(), "stopped: no elector");
    assert_eq!(
        driver.starts_of("gitops"),
        0,
        "the function was never called"
    );
    let holder = server.holder();
    assert_eq!(holder, Some("other"), "no write of ours");
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_runner_test.go`,
/// `TestLR_RunLeaderRunStopStop`, commit `4438242a` (which passes it): while leading, a first
/// function starts; a second one registered during the term starts too; both stop functions
/// are called and both functions return.
///
/// Run on agentk-v1's real runner, elector and wrappers: `gitops` is runnable from the start,
/// `starboard` becomes runnable once the replica leads (the second `RunWhenLeader` of the
/// term, which H2 does not touch: H2 is in the loop over the functions at OnStartedLeading),
/// and a configuration with both off calls both stop functions. The functions obey their ctx,
/// as the test's `<-ctx.Done()` does. The original's assertions hold there: each starts once,
/// and both have returned at the end.
#[test]
fn test_lr_run_leader_run_stop_stop_on_agentk_v1() {
    let modules = ["gitops", "starboard"];
    let settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &modules);
    let mut driver = Driver::start(settings, flags(&["gitops"], &["starboard"]), 19);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "the first function started");
    let both_on = flags(&modules, &[]);
    driver.input(elasticsim::leader::Input::Config {
        version: 2,
        flags: both_on,
    });
    driver.serve(&mut server, 4_000);
    assert_eq!(driver.starts_of("starboard"), 1, "the second one started");
    let both_off = flags(&[], &modules);
    driver.input(elasticsim::leader::Input::Config {
        version: 3,
        flags: both_off,
    });
    driver.serve(&mut server, 8_000);
    assert!(!driver.replica().modules_active(), "both returned");
    assert_eq!(driver.starts_of("gitops"), 1);
    assert_eq!(driver.starts_of("starboard"), 1);
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_runner_test.go`,
/// `TestLR_RunNoLeaderRunStop`, commit `4438242a` (which passes it): the elector never leads;
/// two functions are registered, then both stop functions are called; neither function is
/// ever called.
///
/// Run on agentk-v1's real elector, facing another candidate's Lease within its duration for
/// the whole test (as in `test_lr_run_no_leader_stop_on_agentk_v1`); the wrappers of two
/// modules register on a configuration with both runnable and stop on one with both off. The
/// original's assertions hold there: no start of either (H2 needs a win), and the last
/// unregistration cancels the elector.
#[test]
fn test_lr_run_no_leader_run_stop_on_agentk_v1() {
    use elasticsim::resources::KubeReply;
    let modules = ["gitops", "starboard"];
    let settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &modules);
    let mut driver = Driver::start(settings, flags(&modules, &[]), 23);
    let mut server = Server::default();
    let Ok(KubeReply::Lease(held)) = super::driver::lease("other", 15, 0, 1) else {
        unreachable!("lease() builds a Lease")
    };
    server.lease = Some(held);
    driver.serve(&mut server, 2_000);
    assert!(driver.replica().election_running(), "registered: elects");
    let flags = flags(&[], &modules);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 5_000);
    assert!(
        !driver.replica().election_running(),
        "both stopped: no elector"
    );
    assert_eq!(
        driver.starts_of("gitops") + driver.starts_of("starboard"),
        0
    );
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_Leader_OneModule_Shutdown`, at commit `3d59282c` and at HEAD
/// `0a4bdc9d` (which pass it): the elector leads, the wrapper's module is started once; the
/// configuration channel closes and the runner's ctx is cancelled, and everything returns.
///
/// The original's mock elector leads at once; here the real elector leads on a free Lease, so
/// the original's assertions hold: one start, then after the shutdown no module is active and
/// the process exits; client-go's release (which the mock has not) leaves the holder empty.
#[test]
fn test_leader_election_leader_one_module_shutdown_on_agentk_v2_and_head() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &["gitops"]);
        let mut driver = Driver::start(settings, flags(&["gitops"], &[]), 29);
        let mut server = Server::default();
        driver.serve(&mut server, 3_000);
        assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: started once");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 20_000);
        assert!(!driver.replica().modules_active(), "{variant:?}: returned");
        assert!(driver.replica().has_exited(), "{variant:?}: shut down");
        assert_eq!(driver.starts_of("gitops"), 1, "{variant:?}: once");
        let holder = server.holder();
        assert_eq!(holder, Some(""), "{variant:?}: released");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_NotRunnableConfig`, commit `4438242a` (which passes it): the module says its
/// only configuration is not runnable, so the wrapper never calls `RunWhenLeader`; the
/// channel closes and the wrapper's `Run` returns nil.
///
/// The original mocks the runner and the module's `IsRunnableConfiguration`. Here agentk-v1's
/// real runner and elector run it, the configuration's flag saying "not runnable". The
/// original's assertions hold there (nothing registered is the mock's unexpected
/// `RunWhenLeader` never called): no registration, so no elector runs and nothing is written to
/// the Lease, no module starts, and the close (shutdown) ends the process.
#[test]
fn test_lmw_run_not_runnable_config_on_agentk_v1() {
    let settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &["gitops"]);
    let mut driver = Driver::start(settings, flags(&[], &["gitops"]), 17);
    let mut server = Server::default();
    driver.serve(&mut server, 5_000);
    assert!(
        !driver.replica().election_running(),
        "RunWhenLeader was not called: no elector"
    );
    assert!(driver.calls.is_empty(), "no call to the API server");
    assert_eq!(driver.starts_of("gitops"), 0, "the module never runs");
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 6_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
    assert!(server.lease.is_none(), "the Lease was never written");
}

/// Settings for agentk-v1 whose module behaves like the wrapper tests' mock module: it reads
/// its configuration channel until it is closed and ignores its ctx (the shipped
/// `for config := range cfg` loop).
fn agentk_v1_ranging_module() -> elasticsim::leader::LeaderSettings {
    let mut settings = settings(Variant::AgentkV1, AGENTK_TIMINGS, &["gitops"]);
    settings.module_behaviour = elasticsim::leader::ModuleBehaviour::Shipped;
    settings
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_RunnableThenNotRunnableConfig`, commit `4438242a` (which passes it): c1 is
/// runnable, the wrapper registers and the module reads c1; c2 is not runnable, so the wrapper
/// calls the stop function (`stopCalled`) and closes the module's channel, whose `Run` returns
/// nil; the configuration channel closes and the wrapper's `Run` returns nil.
///
/// The original's mock runner starts the function at once. Here agentk-v1's real runner and
/// elector run it on a free Lease (the first win starts the module), and the module ignores its
/// ctx and returns only when its channel closes, as the mock's module does. The original's
/// assertions hold there: one start, the module read [1] and returned (the channel was closed:
/// it ignores its ctx), the stop function ran (the last unregistration cancelled the elector,
/// which released the Lease), and the shutdown ends the process.
#[test]
fn test_lmw_run_runnable_then_not_runnable_config_on_agentk_v1() {
    let mut driver = Driver::start(agentk_v1_ranging_module(), flags(&["gitops"], &[]), 19);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    assert_eq!(driver.starts_of("gitops"), 1, "registered and started");
    assert_eq!(driver.configs_of("gitops"), [1], "the module read c1");
    let flags = flags(&[], &["gitops"]);
    driver.input(elasticsim::leader::Input::Config { version: 2, flags });
    driver.serve(&mut server, 6_000);
    assert!(
        !driver.replica().modules_active(),
        "its channel closed: the module returned"
    );
    assert!(
        !driver.replica().election_running(),
        "the stop function ran: nothing registered, no elector"
    );
    let holder = server.holder();
    assert_eq!(holder, Some(""), "the cancelled elector released the Lease");
    assert_eq!(driver.configs_of("gitops"), [1], "c2 is not handed over");
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 8_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
    assert_eq!(driver.starts_of("gitops"), 1);
}

/// Origin: `pluralsh/kubernetes-agent`, `cmd/agentk/agentkapp/leader_module_wrapper_test.go`,
/// `TestLMW_Run_RunnableThenNotRunnableThenRunnableConfig`, commit `4438242a` (which passes
/// it): as above, then a runnable c3 makes the wrapper call `RunWhenLeader` again (twice in
/// all) and the second `Run` reads c3; the close ends it.
///
/// Run like `test_lmw_run_runnable_then_not_runnable_config_on_agentk_v1`; the second
/// registration starts a new elector, which finds the Lease the first one released and leads
/// at once (the mock starts the function at once). The original's assertions hold there: two
/// registrations and starts, the reads are [1, 3], and the shutdown ends the process.
#[test]
fn test_lmw_run_runnable_then_not_runnable_then_runnable_config_on_agentk_v1() {
    let mut driver = Driver::start(agentk_v1_ranging_module(), flags(&["gitops"], &[]), 23);
    let mut server = Server::default();
    driver.serve(&mut server, 3_000);
    let off = flags(&[], &["gitops"]);
    driver.input(elasticsim::leader::Input::Config {
        version: 2,
        flags: off,
    });
    driver.serve(&mut server, 6_000);
    assert!(!driver.replica().modules_active(), "c2 stopped the module");
    let on = flags(&["gitops"], &[]);
    driver.input(elasticsim::leader::Input::Config {
        version: 3,
        flags: on,
    });
    driver.serve(&mut server, 9_000);
    assert!(driver.replica().election_running(), "registered again");
    assert_eq!(driver.starts_of("gitops"), 2, "RunWhenLeader twice");
    assert_eq!(
        driver.configs_of("gitops"),
        [1, 3],
        "the second Run read c3"
    );
    driver.input(elasticsim::leader::Input::Shutdown);
    driver.serve(&mut server, 12_000);
    assert!(driver.replica().has_exited(), "Run returned nil");
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_NotLeader_NoModule_Shutdown`, at `278235e8` and `3d59282c`
/// (`cmd/agentk/agentkapp/`) and at HEAD `0a4bdc9d` (`modules/kas/cmd/agentk/agentkapp/`),
/// which pass it: a runner with no module whose elector never leads; cancelling the runner's
/// ctx ends it (the elector's OnStoppedLeading is consumed, `Run` returns).
///
/// The original's mock elector only waits for its ctx. Here the real elector runs, facing a
/// Lease another candidate holds and keeps valid for the whole test, so it never leads either;
/// the original's assertions hold: the runner's `Run` returns (the process exits) and, never
/// having led, it writes nothing to the Lease.
#[test]
fn test_leader_election_not_leader_no_module_shutdown_on_agentk_v2_and_head() {
    use elasticsim::resources::KubeReply;
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &[]);
        let mut driver = Driver::start(settings, flags(&[], &[]), 29);
        let mut server = Server::default();
        let Ok(KubeReply::Lease(held)) = super::driver::lease("other", 15, 0, 1) else {
            unreachable!("lease() builds a Lease")
        };
        server.lease = Some(held);
        driver.serve(&mut server, 2_000);
        assert!(driver.replica().election_running(), "{variant:?}: elects");
        assert_eq!(driver.replica().believed_term(), None, "{variant:?}");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 5_000);
        assert!(driver.replica().has_exited(), "{variant:?}: Run returned");
        let holder = server.holder();
        assert_eq!(holder, Some("other"), "{variant:?}: no write of ours");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_Leader_NoModule_Shutdown`, at `278235e8`, `3d59282c` and HEAD
/// `0a4bdc9d` (which pass it): a runner with no module leads (OnStartedLeading reaches it);
/// cancelling its ctx then ends it.
///
/// The original's mock elector calls OnStartedLeading at once. Here the real elector acquires
/// the free Lease; the original's assertions hold: the runner leads with nothing to start, and
/// the shutdown ends its `Run` (after client-go's release, which the mock has not).
#[test]
fn test_leader_election_leader_no_module_shutdown_on_agentk_v2_and_head() {
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &[]);
        let mut driver = Driver::start(settings, flags(&[], &[]), 31);
        let mut server = Server::default();
        driver.serve(&mut server, 2_000);
        assert_eq!(
            driver.replica().believed_term(),
            Some(1),
            "{variant:?}: leads"
        );
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 5_000);
        assert!(driver.replica().has_exited(), "{variant:?}: Run returned");
        assert_eq!(driver.replica().believed_term(), None, "{variant:?}");
    }
}

/// Origin: `pluralsh/kubernetes-agent`, `leader_election_test.go`,
/// `TestLeaderElection_LeaderNotLeaderLeader_NoModule_Shutdown`, at `278235e8`, `3d59282c`
/// and HEAD `0a4bdc9d` (which pass it): a runner with no module leads, stops leading, leads
/// again; cancelling its ctx then ends it.
///
/// The original's mock elector calls the three callbacks from one `Run`. Here the real elector
/// leads, loses the term to an API outage longer than RD, and `wait.UntilWithContext` runs it
/// again, which leads once the API answers: the same callback sequence from two `Run`s. The
/// original's assertions hold: the runner reaches its second OnStartedLeading, and the
/// shutdown ends it.
#[test]
fn test_leader_election_leader_not_leader_leader_no_module_shutdown_on_agentk_v2_and_head() {
    use elasticsim::leader::Observation;
    for variant in [Variant::AgentkV2, Variant::AgentkHead] {
        let settings = settings(variant, AGENTK_TIMINGS, &[]);
        let mut driver = Driver::start(settings, flags(&[], &[]), 37);
        let mut server = Server::default();
        driver.serve(&mut server, 3_000);
        server.failing_until_ms = 20_000;
        driver.serve(&mut server, 60_000);
        let led = |d: &Driver| {
            (d.observations.iter())
                .filter(|(_, o)| matches!(o, Observation::LeadingStarted { .. }))
                .count()
        };
        assert_eq!(led(&driver), 2, "{variant:?}: leads, not, leads again");
        assert!(driver.replica().believed_term().is_some(), "{variant:?}");
        driver.input(elasticsim::leader::Input::Shutdown);
        driver.serve(&mut server, 65_000);
        assert!(driver.replica().has_exited(), "{variant:?}: Run returned");
    }
}
