//! The `fixed` runner: agentk's promise (leader modules run only on the leader, the election
//! runs only while some module's configuration is runnable) on client-go v0.31 semantics plus
//! documented fixes (the elector's are in `replica.rs` `elector_settings`; the list with the
//! hazard each closes is in `docs/fidelity.md`). The runner's fixes:
//!
//! * each registered module starts exactly once per term (H2);
//! * graceful shutdown stops the modules before the release (`on_shutdown`);
//! * OnStartedLeading carries its term and is ignored unless that term is still being renewed
//!   (H4);
//! * after a lost or cancelled term the modules stop *before* the elector releases the Lease,
//!   and the release itself is bounded by RD (H8, k/k#124588);
//! * the runner re-enters the election after any loss while some module is runnable (#398);
//! * runner and module state live in one actor, so no message between them can block (H5);
//! * a (re)started module always gets the latest configuration (H6).

use super::Context;
use super::Observation;
use super::replica::{Core, ModuleConfig, Runner};
use crate::ablation::Ablation;

/// The fixes `--ablate` can switch off, one mutant each (the hazard it lets back in). The
/// first three are switched here; the last two in the elector settings `replica.rs` gives
/// the `fixed` variant.
pub const FIXED_ABLATIONS: [crate::ablation::Declared; 5] = [
    (
        Ablation::TermCheck,
        "H4: a late OnStartedLeading starts modules whatever its term",
    ),
    (
        Ablation::ReEnter,
        "#398: after a lost term the runner does not rejoin the election",
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
];

pub(crate) struct FixedRunner {
    /// The term whose OnStartedLeading the runner accepted, until that term is lost.
    leading_term: Option<u64>,
    /// The latest configuration of each module.
    configs: Vec<Option<ModuleConfig>>,
    /// The newest configuration version each module received.
    delivered: Vec<Option<u64>>,
    /// The elector waits for every module to stop before it releases.
    acknowledgement_pending: bool,
    /// Fixes switched off (`FIXED_ABLATIONS`); empty in every ordinary run.
    ablations: crate::ablation::Ablations,
}

impl FixedRunner {
    pub(crate) fn new(module_count: usize) -> FixedRunner {
        FixedRunner {
            leading_term: None,
            configs: vec![None; module_count],
            delivered: vec![None; module_count],
            acknowledgement_pending: false,
            ablations: crate::ablation::Ablations::none(),
        }
    }

    /// The runner with the named fixes switched off (a mutant).
    pub(crate) fn with_ablations(
        module_count: usize,
        ablations: crate::ablation::Ablations,
    ) -> FixedRunner {
        FixedRunner {
            ablations,
            ..FixedRunner::new(module_count)
        }
    }

    fn runnable(&self, index: usize) -> bool {
        self.configs[index].is_some_and(|config| config.runnable)
    }

    /// Make module `index` run exactly when the runner leads and its config is runnable.
    fn reconcile_module(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let wanted = self.runnable(index) && !self.acknowledgement_pending;
        let running = core.modules[index].is_running();
        let idle = core.modules[index].is_idle();
        match self.leading_term {
            Some(term) if wanted && idle => {
                core.modules[index].start(term, cx);
                self.deliver_latest(core, index, true, cx);
            }
            Some(_) if wanted && running => self.deliver_latest(core, index, false, cx),
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
        let config = self.configs[index].expect("a running module had a runnable config");
        let newer = self.delivered[index].is_none_or(|delivered| config.version > delivered);
        let fresh_start = fresh_start && !self.ablations.has(Ablation::LatestConfig);
        if fresh_start || newer {
            assert!(
                self.delivered[index].is_none_or(|delivered| config.version >= delivered),
                "the latest configuration is never older than one already delivered"
            );
            core.modules[index].receive_config(config.version, cx);
            self.delivered[index] = Some(config.version);
        }
    }

    /// Compete exactly while some module is runnable.
    fn reconcile_election(&mut self, core: &mut Core, cx: &mut Context) {
        let demand = (0..self.configs.len()).any(|index| self.runnable(index));
        match (demand, core.elector.is_running()) {
            (true, false) => core.start_election(cx),
            (false, true) => core.cancel_election(cx),
            _ => {}
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
        for (index, config) in configs.iter().enumerate() {
            self.configs[index] = Some(*config);
            self.reconcile_module(core, index, cx);
        }
        self.reconcile_election(core, cx);
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
        for index in 0..core.modules.len() {
            self.reconcile_module(core, index, cx);
        }
    }

    fn on_leadership_lost(&mut self, core: &mut Core, term: u64, cx: &mut Context) {
        if let Some(leading) = self.leading_term.take() {
            assert!(
                leading == term || self.ablations.has(Ablation::TermCheck),
                "the runner leads only in the elector's current term"
            );
            cx.observe(Observation::LeadingStopped { term: leading });
        }
        self.acknowledgement_pending = true;
        for index in 0..core.modules.len() {
            self.reconcile_module(core, index, cx);
        }
        self.maybe_acknowledge(core, cx);
    }

    fn on_run_returned(&mut self, core: &mut Core, _led_term: Option<u64>, cx: &mut Context) {
        // Without the term check a stale callback may leave a belief no loss ended: it ends
        // when the Run returns (the modules stop then, not when the lease was lost).
        if let Some(term) = self
            .leading_term
            .take_if(|_| self.ablations.has(Ablation::TermCheck))
        {
            cx.observe(Observation::LeadingStopped { term });
            for index in 0..core.modules.len() {
                self.reconcile_module(core, index, cx);
            }
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
            self.reconcile_election(core, cx);
        }
    }

    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        self.maybe_acknowledge(core, cx);
        self.reconcile_module(core, index, cx);
    }

    fn believed_term(&self) -> Option<u64> {
        self.leading_term
    }

    /// Every configuration channel closes: no module is runnable any more, so the modules
    /// stop and the election is cancelled; the elector releases only once they returned.
    fn on_shutdown(&mut self, core: &mut Core, cx: &mut Context) {
        for index in 0..self.configs.len() {
            if let Some(config) = self.configs[index].as_mut() {
                config.runnable = false;
            }
            self.reconcile_module(core, index, cx);
        }
        self.reconcile_election(core, cx);
    }
}
