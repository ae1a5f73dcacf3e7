//! What the runner variants share: the [`Runner`] trait the replica drives them through, and
//! the [`Core`] (elector, module processes, callback plumbing) each call is handed. The
//! replica (`replica.rs`) builds a runner and routes to it; the runners (`agentk_v1.rs`,
//! `agentk_v2.rs`, `fixed.rs`) depend on this file only, not on the replica.

use super::elector::{Elector, ElectorEvent};
use super::module::ModuleProcess;
use super::{Context, LeaderSettings, Observation, TimerToken};
use std::collections::BTreeMap;

/// A configuration as one module wrapper sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct ModuleConfig {
    pub(super) version: u64,
    pub(super) runnable: bool,
}

/// What the runner variants share: the elector, the module processes and the callback
/// plumbing between them.
pub(super) struct Core {
    pub(super) settings: LeaderSettings,
    pub(super) elector: Elector,
    pub(super) modules: Vec<ModuleProcess>,
    /// Elector callbacks not yet delivered, oldest first.
    pub(super) events: Vec<ElectorEvent>,
    /// `callback_delay` fault: the next OnStartedLeading is this late.
    callback_delay_ms: Option<u64>,
    /// OnStartedLeading callbacks on their way (a goroutine not yet scheduled), by timer.
    delayed_started: BTreeMap<TimerToken, u64>,
}

impl Core {
    /// The core of a replica that has not started: no callback pending, none delayed.
    pub(super) fn new(
        settings: LeaderSettings,
        elector: Elector,
        modules: Vec<ModuleProcess>,
    ) -> Core {
        assert_eq!(
            modules.len(),
            settings.modules.len(),
            "one module process per configured module"
        );
        Core {
            settings,
            elector,
            modules,
            events: Vec::new(),
            callback_delay_ms: None,
            delayed_started: BTreeMap::new(),
        }
    }

    /// `callback_delay` fault: the next OnStartedLeading is `delay_ms` late.
    pub(super) fn delay_next_started_leading(&mut self, delay_ms: u64) {
        self.callback_delay_ms = Some(delay_ms);
    }

    /// The `callback_delay` no OnStartedLeading consumed yet is disarmed.
    pub(super) fn disarm_callback_delay(&mut self) {
        self.callback_delay_ms = None;
    }

    /// True while a `callback_delay` is armed or its late OnStartedLeading is on its way.
    pub(super) fn callback_delay_pending(&self) -> bool {
        self.callback_delay_ms.is_some() || !self.delayed_started.is_empty()
    }

    /// OnStartedLeading of `term` is due: true when an armed `callback_delay` holds it back
    /// (a timer then delivers it), false when it goes to the runner now.
    pub(super) fn hold_started_leading(&mut self, term: u64, cx: &mut Context) -> bool {
        let Some(delay_ms) = self.callback_delay_ms.take() else {
            return false;
        };
        let token = cx.timer(cx.now_local_ms + delay_ms);
        let previous = self.delayed_started.insert(token, term);
        debug_assert!(previous.is_none(), "a timer token is used once");
        true
    }

    /// The term of the late OnStartedLeading timer `token` delivers, if it is one.
    pub(super) fn delayed_started_leading(&mut self, token: TimerToken) -> Option<u64> {
        self.delayed_started.remove(&token)
    }

    /// `go elector.Run(ctx, …)`.
    pub(super) fn start_election(&mut self, cx: &mut Context) {
        cx.observe(Observation::ElectionStarted);
        self.elector.run(cx);
    }

    /// Cancel the elector's ctx.
    pub(super) fn cancel_election(&mut self, cx: &mut Context) {
        self.elector.cancel(cx, &mut self.events);
    }

    pub(super) fn acknowledge_modules_stopped(&mut self, cx: &mut Context) {
        self.elector
            .acknowledge_modules_stopped(cx, &mut self.events);
    }

    pub(super) fn all_modules_idle(&self) -> bool {
        self.modules.iter().all(ModuleProcess::is_idle)
    }

    pub(super) fn module_config(
        &self,
        index: usize,
        version: u64,
        flags: &BTreeMap<String, bool>,
    ) -> ModuleConfig {
        let flag = &self.settings.modules[index].runnable_when;
        ModuleConfig {
            version,
            runnable: flags.get(flag).copied().unwrap_or(false),
        }
    }
}

/// The runner and wrappers of one variant, driven by the replica.
pub(super) trait Runner {
    /// A new configuration, one entry per module in declaration order.
    fn on_config(&mut self, core: &mut Core, configs: &[ModuleConfig], cx: &mut Context);
    /// OnStartedLeading of `term` reached the runner (possibly late).
    fn on_started_leading(&mut self, core: &mut Core, term: u64, cx: &mut Context);
    /// Only with an acknowledging elector: `term` ended, stop modules, then acknowledge.
    fn on_leadership_lost(&mut self, core: &mut Core, term: u64, cx: &mut Context);
    /// OnStoppedLeading: the elector's Run returned.
    fn on_run_returned(&mut self, core: &mut Core, led_term: Option<u64>, cx: &mut Context);
    /// Module `index`'s `Run` returned.
    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context);
    /// Module `index`'s workers stopped while its `Run` reads on (a shipped module whose
    /// workers run on its cancelled ctx): the trace records it stopped, the runner waits on.
    fn on_module_work_stopped(&mut self, _core: &mut Core, _index: usize, _cx: &mut Context) {}
    /// The term the runner believes it leads in.
    fn believed_term(&self) -> Option<u64>;
    /// A timer of a module instance the runner owns itself (agentk-v1's H2 duplicates).
    fn handle_timer(&mut self, _core: &mut Core, _token: TimerToken, _cx: &mut Context) -> bool {
        false
    }
    /// True when no module instance the runner owns itself is active.
    fn extra_instances_idle(&self) -> bool {
        true
    }
    /// Graceful shutdown (SIGTERM): the module stage stops first (configuration channels
    /// closed), then the runner's ctx is cancelled.
    fn on_shutdown(&mut self, core: &mut Core, cx: &mut Context);
}
