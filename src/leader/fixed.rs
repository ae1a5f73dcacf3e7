//! The `fixed` runner: the design agentk ships today (`pluralsh/kubernetes-agent` HEAD
//! `0a4bdc9d`, `modules/kas/cmd/agentk/agentkapp/leader_runner.go` and
//! `leader_module_wrapper.go`, on client-go v0.34.2) with the hazards that design shows
//! closed. As at HEAD, the election always runs ([`ElectionLoop`]: one elector for the process
//! life, re-run 1 ms after each term), every module with a configuration runs while the
//! replica leads, and the module decides from its configuration whether to work. The fixes
//! (the elector's are in `replica.rs` `elector_settings`; the list with the hazard each
//! closes and its upstream commit or issue is in `docs/fidelity.md`, "Variants"):
//!
//! * OnStartedLeading carries its term and is ignored unless that term is still being renewed
//!   (H4; HEAD's callback carries nothing);
//! * after a lost or cancelled term the modules stop *before* the elector releases the Lease
//!   (H8; HEAD stops them in OnStoppedLeading, after `release()`);
//! * runner and wrapper state live in one actor, so no send between them can block (H5; HEAD's
//!   runner makes blocking sends to wrappers that may be blocked sending to it);
//! * a (re)started module gets the latest configuration (H6; HEAD's start function sends the
//!   configuration captured at registration);
//! * graceful shutdown stops the modules, then cancels the election, which releases only once
//!   they returned (as HEAD's stager does).
//!
//! Re-entry after a lost term (#398) is the loop itself; `Ablation::ReEnter` switches the
//! loop's re-run off.

use super::Observation;
use super::election_loop::ElectionLoop;
use super::runner::{Core, ModuleConfig, Runner};
use super::{Context, TimerToken};
use crate::ablation::Ablation;

/// The fixes `--ablate` can switch off, one mutant each (the hazard it lets back in). The
/// first three and `stop-before-release` are switched here; `bounded-release`,
/// `bounded-acquire`, `release-holder-check` and `rd-acquire-bound` in the elector settings
/// `replica.rs` gives the `fixed` variant.
pub(crate) const FIXED_ABLATIONS: [crate::ablation::Declared; 8] = [
    (
        Ablation::TermCheck,
        "H4: a late OnStartedLeading starts modules whatever its term",
    ),
    (
        Ablation::ReEnter,
        "#398: after a lost term the elector's Run is not run again",
    ),
    (
        Ablation::LatestConfig,
        "H6: a restarted module gets no configuration it already had",
    ),
    (
        Ablation::BoundedRelease,
        "k/k#124588: the release write has no timeout",
    ),
    (
        Ablation::BoundedAcquire,
        "a candidate's Get/Update has no timeout (a lost answer hangs it)",
    ),
    (
        Ablation::StopBeforeRelease,
        "H8: the elector releases before the modules of the lost term stopped",
    ),
    (
        Ablation::ReleaseHolderCheck,
        "H3: the release judges the cached record after refreshing only its version",
    ),
    (
        Ablation::RdAcquireBound,
        "issue #49: acquire requests give up after RP: none succeeds on round trips over RP",
    ),
];

pub(crate) struct FixedRunner {
    /// The election always runs, from the first configuration until shutdown.
    election: ElectionLoop,
    /// The term whose OnStartedLeading the runner accepted, until that term is lost.
    leading_term: Option<u64>,
    /// The latest configuration of each module; a module with one is registered (it runs
    /// while the replica leads, whatever the configuration asks).
    configs: Vec<Option<ModuleConfig>>,
    /// The newest configuration version each module received.
    delivered: Vec<Option<u64>>,
    /// The elector waits for every module to stop before it releases.
    acknowledgement_pending: bool,
    /// Graceful shutdown: the module stage stops, then the election is cancelled.
    shutting_down: bool,
    /// Fixes switched off (`FIXED_ABLATIONS`); empty in every ordinary run.
    ablations: crate::ablation::Ablations,
}

impl FixedRunner {
    /// The runner with the named fixes switched off (none: the plain `fixed`).
    pub(crate) fn new(module_count: usize, ablations: crate::ablation::Ablations) -> FixedRunner {
        FixedRunner {
            election: ElectionLoop::default(),
            leading_term: None,
            configs: vec![None; module_count],
            delivered: vec![None; module_count],
            acknowledgement_pending: false,
            shutting_down: false,
            ablations,
        }
    }

    /// Make module `index` run exactly when the runner leads and the module is registered.
    fn reconcile_module(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let wanted =
            self.configs[index].is_some() && !self.acknowledgement_pending && !self.shutting_down;
        let running = core.modules[index].is_running();
        let idle = core.modules[index].is_idle();
        match self.leading_term {
            Some(term) if wanted && idle => {
                core.modules[index].start(term, cx);
                self.deliver_latest(core, index, true, cx);
            }
            Some(_) if wanted && running => self.deliver_latest(core, index, false, cx),
            // Cancel its ctx *and* close its channel (`278235e8`'s `stop`): the shipped
            // modules return too.
            _ if running && !wanted => core.modules[index].stop(cx),
            None if running => core.modules[index].stop(cx),
            // A stopping module is reconciled again when its Run returns.
            _ => {}
        }
    }

    /// Give a running module the latest configuration: always on a fresh start, otherwise
    /// only when it is newer than what it has.
    fn deliver_latest(
        &mut self,
        core: &mut Core,
        index: usize,
        fresh_start: bool,
        cx: &mut Context,
    ) {
        let config = self.configs[index].expect("a running module is registered");
        let newer = self.delivered[index].is_none_or(|delivered| config.version > delivered);
        let fresh_start = fresh_start && !self.ablations.has(Ablation::LatestConfig);
        if fresh_start || newer {
            assert!(
                self.delivered[index].is_none_or(|delivered| config.version >= delivered),
                "the latest configuration is never older than one already delivered"
            );
            core.modules[index].receive_config_of(config.version, config.runnable, cx);
            self.delivered[index] = Some(config.version);
        }
    }

    fn reconcile_all(&mut self, core: &mut Core, cx: &mut Context) {
        for index in 0..core.modules.len() {
            self.reconcile_module(core, index, cx);
        }
    }

    fn maybe_acknowledge(&mut self, core: &mut Core, cx: &mut Context) {
        if self.acknowledgement_pending && core.all_modules_idle() {
            self.acknowledgement_pending = false;
            core.acknowledge_modules_stopped(cx);
        }
    }
}

impl Runner for FixedRunner {
    fn on_config(&mut self, core: &mut Core, configs: &[ModuleConfig], cx: &mut Context) {
        assert_eq!(configs.len(), self.configs.len(), "one config per module");
        // `name(ctx)` returns once the agent id is known: the election starts.
        self.election.start_once(core, cx);
        for (index, config) in configs.iter().enumerate() {
            self.configs[index] = Some(*config);
            self.reconcile_module(core, index, cx);
        }
    }

    fn on_started_leading(&mut self, core: &mut Core, term: u64, cx: &mut Context) {
        // A callback of a term that already ended (or a duplicate) must not start anything.
        let stale =
            core.elector.leading_term() != Some(term) && !self.ablations.has(Ablation::TermCheck);
        if self.leading_term.is_some() || stale {
            return;
        }
        self.leading_term = Some(term);
        cx.observe(Observation::LeadingStarted { term });
        self.reconcile_all(core, cx);
    }

    fn on_leadership_lost(&mut self, core: &mut Core, term: u64, cx: &mut Context) {
        if self.ablations.has(Ablation::StopBeforeRelease) && !self.shutting_down {
            // HEAD's order (H8): the elector releases at once; the belief and the modules
            // end only when its Run returns, after `release()` (OnStoppedLeading).
            core.acknowledge_modules_stopped(cx);
            return;
        }
        if let Some(leading) = self.leading_term.take() {
            assert!(
                leading == term || self.ablations.has(Ablation::TermCheck),
                "the runner leads only in the elector's current term"
            );
            cx.observe(Observation::LeadingStopped { term: leading });
        }
        self.acknowledgement_pending = true;
        self.reconcile_all(core, cx);
        self.maybe_acknowledge(core, cx);
    }

    fn on_run_returned(&mut self, core: &mut Core, _led_term: Option<u64>, cx: &mut Context) {
        // Without the term check a stale callback may leave a belief no loss ended, and
        // without the stop before the release the belief outlives the loss: it ends when the
        // Run returns (the modules stop then, not when the lease was lost).
        let late_end = self.ablations.has(Ablation::TermCheck)
            || self.ablations.has(Ablation::StopBeforeRelease);
        if let Some(term) = self.leading_term.take_if(|_| late_end) {
            cx.observe(Observation::LeadingStopped { term });
            self.reconcile_all(core, cx);
        }
        assert!(
            self.leading_term.is_none(),
            "a Run returns only after its term was lost"
        );
        assert!(
            !self.acknowledgement_pending,
            "a Run returns only after the acknowledgement"
        );
        if !self.ablations.has(Ablation::ReEnter) {
            self.election.run_again_soon(cx);
        }
    }

    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        self.maybe_acknowledge(core, cx);
        self.reconcile_module(core, index, cx);
    }

    fn believed_term(&self) -> Option<u64> {
        self.leading_term
    }

    fn handle_timer(&mut self, core: &mut Core, token: TimerToken, cx: &mut Context) -> bool {
        self.election.handle_timer(core, token, cx)
    }

    /// Every configuration channel closes: the modules stop, then the election's ctx is
    /// cancelled; the elector releases only once they returned.
    fn on_shutdown(&mut self, core: &mut Core, cx: &mut Context) {
        self.shutting_down = true;
        self.reconcile_all(core, cx);
        self.election.cancel(core, cx);
    }
}
