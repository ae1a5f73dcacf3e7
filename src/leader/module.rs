//! One leader module's `Run`: it starts, does one unit of periodic work every retry period
//! (so that two replicas acting at once are visible in the trace), and returns U[min, max]
//! after it is told to stop.
//!
//! How it is told depends on [`ModuleBehaviour`]: a module that obeys the `LeaderModule`
//! contract returns once its ctx is cancelled or its config channel closed; the shipped
//! modules (`for config := range cfg`, gitops and starboard_vulnerability at `4438242a`)
//! return only when the channel closes, whatever their ctx. What a shipped module does
//! between the cancel and the close depends on the ctx its workers run on ([`WorkCtx`]):
//! gitops' act on; starboard_vulnerability's worker stops (after the stop latency) and the
//! module is recorded stopped, while its `Run` still reads its channel, so a runner waiting
//! for `Run` to return still waits.

use super::{Context, ModuleBehaviour, Observation, TimerToken, WorkCtx};

#[derive(Clone, Debug, PartialEq, Eq)]
enum State {
    Idle,
    Running {
        action: TimerToken,
    },
    /// Its ctx was cancelled and its workers, which run on that ctx, are stopping; `Run`
    /// reads on.
    WorkStopping {
        stopped: TimerToken,
    },
    /// Its workers stopped (recorded); `Run` reads on until its channel closes.
    Lingering,
    /// `Run` returns at `returned`; `reported`: its stop is already recorded.
    Stopping {
        returned: TimerToken,
        reported: bool,
    },
}

/// What a timer meant to a module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ModuleTimer {
    /// Not this module's (or a stale) timer.
    NotMine,
    /// The module did one unit of work.
    Acted,
    /// Its workers stopped on a cancelled ctx (recorded as stopped); `Run` reads on.
    WorkStopped,
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
    behaviour: ModuleBehaviour,
    work_ctx: WorkCtx,
    /// The last configuration it read asks it to do work (agentk v2's modules decide that
    /// themselves: gitops with no manifest project runs no worker); true until one says not.
    config_runnable: bool,
}

impl ModuleProcess {
    pub(crate) fn new(
        name: String,
        action_period_ms: u64,
        stop_latency_ms_min: u64,
        stop_latency_ms_max: u64,
        behaviour: ModuleBehaviour,
        work_ctx: WorkCtx,
    ) -> ModuleProcess {
        assert!(action_period_ms > 0, "a module acts at a positive period");
        ModuleProcess {
            name,
            state: State::Idle,
            action_period_ms,
            stop_latency_ms_min,
            stop_latency_ms_max,
            behaviour,
            work_ctx,
            config_runnable: true,
        }
    }

    pub(crate) fn is_idle(&self) -> bool {
        self.state == State::Idle
    }

    /// `Run` is active and reads its config channel (its workers may have stopped).
    pub(crate) fn is_running(&self) -> bool {
        matches!(
            self.state,
            State::Running { .. } | State::WorkStopping { .. } | State::Lingering
        )
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
        self.config_runnable = true;
        let action = cx.timer(cx.now_local_ms + self.action_period_ms);
        self.state = State::Running { action };
    }

    /// The module receives configuration `version`.
    pub(crate) fn receive_config(&mut self, version: u64, cx: &mut Context) {
        self.receive_config_of(version, true, cx);
    }

    /// The module receives configuration `version`; it works while `runnable` (a module that
    /// decides runnability itself, agentk v2 and later).
    pub(crate) fn receive_config_of(&mut self, version: u64, runnable: bool, cx: &mut Context) {
        assert!(
            self.is_running(),
            "only a running module reads its config channel"
        );
        self.config_runnable = runnable;
        cx.observe(Observation::ModuleConfig {
            module: self.name.clone(),
            version,
        });
    }

    /// Cancel its ctx: a module that obeys it returns after the stop latency; the shipped
    /// modules (`for config := range cfg`) read on, with their workers acting on
    /// (`WorkCtx::Background`) or stopping after the stop latency (`WorkCtx::Run`). Nothing
    /// if not running.
    pub(crate) fn cancel(&mut self, cx: &mut Context) {
        match (self.behaviour, self.work_ctx) {
            (ModuleBehaviour::ObeysCtx, _) => self.stop(cx),
            (ModuleBehaviour::Shipped, WorkCtx::Background) => {}
            (ModuleBehaviour::Shipped, WorkCtx::Run) => {
                if let State::Running { .. } = self.state {
                    let stopped = self.stop_timer(cx);
                    self.state = State::WorkStopping { stopped };
                }
            }
        }
    }

    /// Close its config channel (every module returns then), or cancel its ctx and close the
    /// channel together: `Run` returns after the stop latency (once its workers stopped, if
    /// they are stopping already; at once if they have). Nothing if not running.
    pub(crate) fn stop(&mut self, cx: &mut Context) {
        self.state = match self.state {
            State::Running { .. } => State::Stopping {
                returned: self.stop_timer(cx),
                reported: false,
            },
            State::WorkStopping { stopped } => State::Stopping {
                returned: stopped,
                reported: false,
            },
            State::Lingering => State::Stopping {
                returned: cx.timer(cx.now_local_ms),
                reported: true,
            },
            State::Idle | State::Stopping { .. } => return,
        };
    }

    fn stop_timer(&self, cx: &mut Context) -> TimerToken {
        let latency_ms = cx.uniform_ms(self.stop_latency_ms_min, self.stop_latency_ms_max);
        cx.timer(cx.now_local_ms + latency_ms)
    }

    pub(crate) fn handle_timer(&mut self, token: TimerToken, cx: &mut Context) -> ModuleTimer {
        match self.state {
            State::Running { action } if action == token => {
                if self.config_runnable {
                    cx.observe(Observation::ModuleAction {
                        module: self.name.clone(),
                    });
                }
                let action = cx.timer(cx.now_local_ms + self.action_period_ms);
                self.state = State::Running { action };
                ModuleTimer::Acted
            }
            State::WorkStopping { stopped } if stopped == token => {
                cx.observe(Observation::ModuleStopped {
                    module: self.name.clone(),
                });
                self.state = State::Lingering;
                ModuleTimer::WorkStopped
            }
            State::Stopping { returned, reported } if returned == token => {
                if !reported {
                    cx.observe(Observation::ModuleStopped {
                        module: self.name.clone(),
                    });
                }
                self.state = State::Idle;
                ModuleTimer::Returned
            }
            _ => ModuleTimer::NotMine,
        }
    }
}
