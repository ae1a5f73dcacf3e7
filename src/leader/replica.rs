//! [`Replica`]: one agentk process (elector, runner, module wrappers, modules) behind a single
//! entry point, [`Replica::handle`].

use super::agentk_v1::AgentkV1Runner;
use super::agentk_v2::AgentkV2Runner;
use super::elector::{
    Elector, ElectorEvent, ElectorSettings, PollTicker, ReleaseRead, TakeoverDuration,
};
use super::fixed::FixedRunner;
use super::module::{ModuleProcess, ModuleTimer};
use super::runner::{Core, Runner};
use super::{Context, Input, LeaderSettings, Observation, Output, Random, SettingsError};
use super::{TimerToken, Variant};
use crate::ablation::Ablation;
use crate::component::{ArmedTimers, Component};
use std::collections::BTreeMap;

/// One replica process. See the module docs of `crate::leader` for the call contract.
pub struct Replica {
    core: Core,
    runner: Box<dyn Runner>,
    next_id: u64,
    now_local_ms: u64,
    started: bool,
    /// The latest configuration seen; one that arrives before `Start` waits here.
    config: Option<(u64, BTreeMap<String, bool>)>,
    /// A graceful shutdown began: configurations are no longer delivered.
    shutting_down: bool,
    /// The timers asked for that have not fired yet (stale ones included: they still fire,
    /// and are ignored then).
    armed: ArmedTimers<TimerToken>,
}

impl Replica {
    /// A replica that has not started yet.
    pub fn new(settings: LeaderSettings) -> Result<Replica, SettingsError> {
        settings.validate()?;
        let elector = Elector::new(elector_settings(&settings));
        let modules = settings
            .modules
            .iter()
            .map(|module| {
                ModuleProcess::new(
                    module.name.clone(),
                    settings.retry_period_ms,
                    settings.module_stop_latency_ms_min,
                    settings.module_stop_latency_ms_max,
                    settings.module_behaviour,
                    module.work_ctx,
                )
            })
            .collect::<Vec<_>>();
        let runner: Box<dyn Runner> = match settings.variant {
            Variant::AgentkV1 => Box::new(AgentkV1Runner::new(modules.len())),
            Variant::AgentkV2 | Variant::AgentkHead | Variant::AgentkHeadNoRelease => {
                Box::new(AgentkV2Runner::new(modules.len()))
            }
            Variant::Fixed => Box::new(FixedRunner::new(modules.len(), settings.ablations.clone())),
        };
        let core = Core::new(settings, elector, modules);
        Ok(Replica {
            core,
            runner,
            next_id: 0,
            now_local_ms: 0,
            started: false,
            config: None,
            shutting_down: false,
            armed: ArmedTimers::default(),
        })
    }

    /// The configuration the replica was built with.
    pub fn settings(&self) -> &LeaderSettings {
        &self.core.settings
    }

    /// The term the runner believes it leads in (what `LeadingStarted` reported).
    pub fn believed_term(&self) -> Option<u64> {
        self.runner.believed_term()
    }

    /// The term the elector is renewing, if any.
    #[cfg(test)]
    pub(crate) fn lease_term(&self) -> Option<u64> {
        self.core.elector.leading_term()
    }

    /// True while an elector `Run` is active.
    pub fn election_running(&self) -> bool {
        self.core.elector.is_running()
    }

    /// True while any leader module's `Run` is active (running or stopping).
    pub fn modules_active(&self) -> bool {
        !self.core.all_modules_idle() || !self.runner.extra_instances_idle()
    }

    /// True once a graceful shutdown finished: every module returned and the elector's `Run`
    /// returned (after its release). The process exits.
    pub fn has_exited(&self) -> bool {
        self.shutting_down && !self.election_running() && !self.modules_active()
    }

    /// `callback_delay` fault: the next OnStartedLeading reaches the runner `delay_ms` late.
    pub(crate) fn delay_next_started_leading(&mut self, delay_ms: u64) {
        self.core.delay_next_started_leading(delay_ms);
    }

    /// Disarm a `callback_delay` that no OnStartedLeading consumed yet (faults end); a late
    /// callback already on its way still arrives late.
    pub(crate) fn disarm_callback_delay(&mut self) {
        self.core.disarm_callback_delay();
    }

    /// Hand one input to its owner. False when the input is a late duplicate that changes
    /// nothing (an older configuration), so no elector callback can be due.
    fn dispatch(&mut self, input: Input, cx: &mut Context) -> bool {
        match input {
            Input::Start => self.on_start(cx),
            Input::Shutdown => {
                if self.started && !self.shutting_down {
                    self.shutting_down = true;
                    self.runner.on_shutdown(&mut self.core, cx);
                }
            }
            Input::Config { .. } if self.shutting_down => {}
            Input::Config { version, flags } => return self.on_config(version, flags, cx),
            Input::Timer(token) => handle_timer(&mut self.core, self.runner.as_mut(), token, cx),
            Input::Kube(call, result) => {
                self.core
                    .elector
                    .handle_kube(call, result, cx, &mut self.core.events);
            }
        }
        true
    }

    /// The process started: a configuration that arrived before applies now.
    fn on_start(&mut self, cx: &mut Context) {
        assert!(!self.started, "a replica process starts once");
        self.started = true;
        if let Some((version, flags)) = self.config.take() {
            apply_config(&mut self.core, self.runner.as_mut(), version, &flags, cx);
            self.config = Some((version, flags));
        }
    }

    /// A configuration from the watcher; false when it is a late duplicate.
    fn on_config(&mut self, version: u64, flags: BTreeMap<String, bool>, cx: &mut Context) -> bool {
        debug_assert!(
            !self.shutting_down,
            "no configuration reaches a stopping replica"
        );
        // The watcher's stream is ordered: an older configuration is a late duplicate.
        if self
            .config
            .as_ref()
            .is_some_and(|(latest, _)| *latest >= version)
        {
            return false;
        }
        if self.started {
            apply_config(&mut self.core, self.runner.as_mut(), version, &flags, cx);
        }
        self.config = Some((version, flags));
        true
    }

    /// Timer `token` fired: it no longer counts towards `next_deadline`.
    fn disarm(&mut self, now_local_ms: u64, token: TimerToken) {
        let at = self.armed.fired(|_, armed| armed == token);
        debug_assert!(
            at.is_some_and(|at| at <= now_local_ms),
            "a timer fired that the replica never asked for, or before it was due"
        );
    }

    /// True while a `callback_delay` is armed or its late OnStartedLeading is on its way.
    pub(crate) fn callback_delay_pending(&self) -> bool {
        self.core.callback_delay_pending()
    }
}

impl Component for Replica {
    type Input = Input;
    type Output = Output;

    /// The single entry point: one input at the replica's local time.
    fn handle(
        &mut self,
        now_local_ms: u64,
        input: Input,
        random: &mut dyn Random,
        out: &mut Output,
    ) {
        let asked_before = out.timers.len();
        if let Input::Timer(token) = input {
            self.disarm(now_local_ms, token);
        }
        assert!(
            now_local_ms >= self.now_local_ms,
            "the replica's local clock went backwards"
        );
        self.now_local_ms = now_local_ms;
        let mut next_id = self.next_id;
        let mut cx = Context {
            now_local_ms,
            random,
            out,
            next_id: &mut next_id,
        };
        if self.dispatch(input, &mut cx) {
            deliver_elector_events(&mut self.core, self.runner.as_mut(), &mut cx);
        }
        self.next_id = next_id;
        for timer in &out.timers[asked_before..] {
            self.armed.arm(timer.at_local_ms, timer.token);
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        self.armed.next_deadline()
    }
}

/// Route a timer to its owner: the elector, a delayed callback or a module; a timer nobody
/// owns any more is stale and ignored.
fn handle_timer(core: &mut Core, runner: &mut dyn Runner, token: TimerToken, cx: &mut Context) {
    if core.elector.handle_timer(token, cx, &mut core.events) {
        return;
    }
    if runner.handle_timer(core, token, cx) {
        return;
    }
    if let Some(term) = core.delayed_started_leading(token) {
        runner.on_started_leading(core, term, cx);
        return;
    }
    for index in 0..core.modules.len() {
        match core.modules[index].handle_timer(token, cx) {
            ModuleTimer::NotMine => continue,
            ModuleTimer::Acted => return,
            ModuleTimer::WorkStopped => {
                runner.on_module_work_stopped(core, index, cx);
                return;
            }
            ModuleTimer::Returned => {
                runner.on_module_returned(core, index, cx);
                return;
            }
        }
    }
}

fn apply_config(
    core: &mut Core,
    runner: &mut dyn Runner,
    version: u64,
    flags: &BTreeMap<String, bool>,
    cx: &mut Context,
) {
    let configs = (0..core.modules.len())
        .map(|index| core.module_config(index, version, flags))
        .collect::<Vec<_>>();
    debug_assert_eq!(
        configs.len(),
        core.settings.modules.len(),
        "one configuration per module"
    );
    let runnable_modules = configs
        .iter()
        .zip(&core.settings.modules)
        .filter(|(config, _)| config.runnable)
        .map(|(_, module)| module.name.clone())
        .collect();
    cx.observe(Observation::ConfigReceived {
        version,
        runnable_modules,
    });
    runner.on_config(core, &configs, cx);
}

/// Hand every pending elector callback to the runner, oldest first (handling one may queue
/// more).
fn deliver_elector_events(core: &mut Core, runner: &mut dyn Runner, cx: &mut Context) {
    while !core.events.is_empty() {
        match core.events.remove(0) {
            ElectorEvent::StartedLeading { term } => {
                if !core.hold_started_leading(term, cx) {
                    runner.on_started_leading(core, term, cx);
                }
            }
            ElectorEvent::LeaseHeld { term } => cx.observe(Observation::LeaseHeld { term }),
            ElectorEvent::LeadershipLost { term } => runner.on_leadership_lost(core, term, cx),
            ElectorEvent::RunReturned { led_term } => {
                cx.observe(Observation::ElectionStopped);
                runner.on_run_returned(core, led_term, cx);
            }
        }
    }
}

/// The client-go version each variant runs, as elector settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientGo {
    /// v0.24.3 (agentk-v1's `go.mod` at `4438242a`).
    V0_24,
    /// v0.26.5 (agentk-v2's `go.mod` at `278235e8` and `3d59282c`).
    V0_26,
    /// v0.34.2 (the fork HEAD's `modules/kas/go.mod`).
    V0_34,
    /// v0.34.2, as the fork's HEAD, plus the elector fixes of `fixed`.
    Fixed,
}

/// The elector each variant runs: client-go v0.24.3 for agentk-v1, with a new
/// `LeaderElector` per run (`leader_runner.go` `startElector`); v0.26.5 for agentk-v2 and
/// v0.34.2 for agentk-head, one `LeaderElector` for the process life; v0.34.2 for fixed too
/// (record's LD, release bounded by RD, observations kept) plus a release that re-reads the
/// holder, release only after the modules stopped and acquire requests bounded by RD.
fn elector_settings(settings: &LeaderSettings) -> ElectorSettings {
    let client_go = match settings.variant {
        Variant::AgentkV1 => ClientGo::V0_24,
        Variant::AgentkV2 => ClientGo::V0_26,
        Variant::AgentkHead | Variant::AgentkHeadNoRelease => ClientGo::V0_34,
        Variant::Fixed => ClientGo::Fixed,
    };
    let fixed = client_go == ClientGo::Fixed;
    // k/k#114872 (v0.27): takeover reads the record's leaseDurationSeconds.
    let record_duration = matches!(client_go, ClientGo::V0_34 | ClientGo::Fixed);
    // v0.31: `release()` runs under a RenewDeadline timeout instead of `context.TODO()`.
    let bounded_release = match client_go {
        ClientGo::V0_24 | ClientGo::V0_26 => false,
        ClientGo::V0_34 => true,
        ClientGo::Fixed => !settings.ablations.has(Ablation::BoundedRelease),
    };
    ElectorSettings {
        identity: settings.identity.clone(),
        lease_name: settings.lease_name.clone(),
        lease_duration_ms: settings.lease_duration_ms,
        renew_deadline_ms: settings.renew_deadline_ms,
        retry_period_ms: settings.retry_period_ms,
        takeover_duration: if record_duration {
            TakeoverDuration::Record
        } else {
            TakeoverDuration::Configured
        },
        release_timeout_ms: bounded_release.then_some(settings.renew_deadline_ms),
        // A candidate whose Get or Update vanished (a partition drops it) must try again.
        // The bound is the renew deadline, the one client-go already gives each renew
        // request (`renew`'s `PollUntilContextTimeout(RP, RD)`): a round trip the leader
        // accepts, a candidate accepts too, so a slow API server (round trips of seconds)
        // never makes every acquire give up while HEAD's unbounded ones succeed.
        // Until issue #49 it was RP (`rd-acquire-bound` brings that back).
        acquire_timeout_ms: (fixed && !settings.ablations.has(Ablation::BoundedAcquire)).then_some(
            if settings.ablations.has(Ablation::RdAcquireBound) {
                settings.retry_period_ms
            } else {
                settings.renew_deadline_ms
            },
        ),
        release_read: match client_go {
            ClientGo::V0_24 | ClientGo::V0_26 => ReleaseRead::Nothing,
            ClientGo::V0_34 => ReleaseRead::RefreshVersion,
            ClientGo::Fixed if settings.ablations.has(Ablation::ReleaseHolderCheck) => {
                ReleaseRead::RefreshVersion
            }
            ClientGo::Fixed => ReleaseRead::RefreshAndCheckHolder,
        },
        release_after_acknowledgement: fixed,
        // agentk sets `ReleaseOnCancel: true` in every commit modelled (`leader_runner.go`
        // `leaseLeaderElector.Run`, line 280 at `8daa08cc`); the alternative fix turns it off.
        release_on_cancel: settings.variant != Variant::AgentkHeadNoRelease,
        forget_observations_between_runs: client_go == ClientGo::V0_24,
        // apimachinery's `wait` rewrite (v0.27) keeps a tick that fell during an attempt.
        poll_ticker: match client_go {
            ClientGo::V0_24 | ClientGo::V0_26 => PollTicker::StartsAfterImmediate,
            ClientGo::V0_34 | ClientGo::Fixed => PollTicker::StartsWithCycle,
        },
    }
}
