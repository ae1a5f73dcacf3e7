//! One leader module's `Run`: it starts, does one unit of periodic work every retry period
//! (so that two replicas acting at once are visible in the trace), and returns U[min, max]
//! after it is told to stop (ctx cancelled or its config channel closed).

use super::{Context, Observation, TimerToken};

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Running { action: TimerToken },
    Stopping { returned: TimerToken },
}

/// What a timer meant to a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModuleTimer {
    /// Not this module's (or a stale) timer.
    NotMine,
    /// The module did one unit of work.
    Acted,
    /// `Run` returned: the module is idle again.
    Returned,
}

#[derive(Clone, Debug)]
pub(crate) struct ModuleProcess {
    name: String,
    state: State,
    action_period_ms: u64,
    stop_latency_ms_min: u64,
    stop_latency_ms_max: u64,
}

impl ModuleProcess {
    pub(crate) fn new(
        name: String,
        action_period_ms: u64,
        stop_latency_ms_min: u64,
        stop_latency_ms_max: u64,
    ) -> ModuleProcess {
        assert!(action_period_ms > 0, "a module acts at a positive period");
        ModuleProcess {
            name,
            state: State::Idle,
            action_period_ms,
            stop_latency_ms_min,
            stop_latency_ms_max,
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    pub(crate) fn is_running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// `go module.Run(ctx, cfg)` under the runner's believed `term`.
    pub(crate) fn start(&mut self, term: u64, cx: &mut Context) {
        assert!(
            self.is_idle(),
            "module {} started while its Run is still active",
            self.name
        );
        cx.observe(Observation::ModuleStarted {
            module: self.name.clone(),
            term,
        });
        let action = cx.timer(cx.now_local_ms + self.action_period_ms);
        self.state = State::Running { action };
    }

    /// The module receives configuration `version`.
    pub(crate) fn receive_config(&mut self, version: u64, cx: &mut Context) {
        assert!(
            self.is_running(),
            "only a running module reads its config channel"
        );
        cx.observe(Observation::ModuleConfig {
            module: self.name.clone(),
            version,
        });
    }

    /// Cancel its ctx; `Run` returns after the stop latency. Nothing if not running.
    pub(crate) fn stop(&mut self, cx: &mut Context) {
        if !self.is_running() {
            return;
        }
        let latency_ms = cx.uniform_ms(self.stop_latency_ms_min, self.stop_latency_ms_max);
        let returned = cx.timer(cx.now_local_ms + latency_ms);
        self.state = State::Stopping { returned };
    }

    pub(crate) fn handle_timer(&mut self, token: TimerToken, cx: &mut Context) -> ModuleTimer {
        match self.state {
            State::Running { action } if action == token => {
                cx.observe(Observation::ModuleAction {
                    module: self.name.clone(),
                });
                let action = cx.timer(cx.now_local_ms + self.action_period_ms);
                self.state = State::Running { action };
                ModuleTimer::Acted
            }
            State::Stopping { returned } if returned == token => {
                cx.observe(Observation::ModuleStopped {
                    module: self.name.clone(),
                });
                self.state = State::Idle;
                ModuleTimer::Returned
            }
            _ => ModuleTimer::NotMine,
        }
    }
}
