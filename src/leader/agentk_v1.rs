//! The `agentk-v1` runner: the GitLab agent's August 2022 `leaderRunner` actor and its
//! `leaderModuleWrapper`s (gitlab-agent commit `4438242a`) on client-go v0.24.3,
//! defects included:
//!
//! * the election runs only while some wrapper is registered, i.e. while some leader module's
//!   last configuration was runnable; the last unregistration cancels the elector, which
//!   releases the Lease;
//! * when a module's `Run` returns because leadership was lost, the wrapper takes it for a
//!   module that returned on its own and unregisters; with no new configuration pending it
//!   never registers again, so the election stops for good (#398);
//! * OnStartedLeading carries no term: a late callback that reaches the runner while its next
//!   elector is still acquiring starts the modules without the lease (H4);
//! * modules are stopped only on OnStoppedLeading, which client-go calls after `release()`
//!   returns, and v0.24.3's release has no timeout (H8);
//! * on OnStartedLeading the runner ranges over `map[int32]funcHolder` and calls `start()` on
//!   the loop variable; the goroutine reads the variable's `f` after the loop moved on (Go
//!   1.17 loop semantics), so with two or more registered functions every goroutine runs the
//!   last-iterated function: that module runs several times at once, the others never (H2,
//!   fixed in v15.5.1 by `9eaf1658`). Go's random map order is a draw from the replica's
//!   stream ([`go_map_order`]);
//! * the runner's `h.cancel()` only cancels the module's ctx; only the wrapper's `stop()`
//!   closes the module's config channel. The shipped modules (`ModuleBehaviour::Shipped`,
//!   `for config := range cfg`) ignore ctx, so after a lost term the runner blocks in
//!   `h.wait()` (`leader_runner.go`, `OnStoppedLeading` in `RunningLeader`) until a
//!   non-runnable configuration makes the wrapper close the channel: the old leader's module
//!   keeps acting beside the new leader's, and this replica runs no elector meanwhile;
//! * on graceful shutdown the wrappers' configuration channels close, each wrapper stops its
//!   module and unregisters, and the last unregistration cancels the elector, which releases
//!   the Lease while the modules may still be stopping.
//!
//! Go's blocking channel operations are modelled explicitly: while the runner waits for the
//! modules of a lost term to return, its messages queue in `inbox`; while a wrapper waits for
//! the runner's reply or for its module to return, its configuration pipe keeps only the
//! latest configuration. Go's random choice among ready channels becomes arrival order.

use super::module::{ModuleProcess, ModuleTimer};
use super::runner::{Core, ModuleConfig, Runner};
use super::{Context, Observation, TimerToken};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    NotRunning,
    RunningNotLeader,
    RunningLeader,
    Stopping,
}

/// The runner's mailbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Message {
    /// `RunWhenLeader(f)` from wrapper `index`.
    Add(usize),
    /// The stop function `RunWhenLeader` returned, called by wrapper `index`.
    Stop(usize),
    /// OnStartedLeading; the term is only for the trace, the runner does not see it.
    Started(u64),
    /// OnStoppedLeading.
    Stopped,
}

/// Why a wrapper stopped its module, which decides what it does afterwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AfterStop {
    /// A non-runnable configuration arrived.
    ConfigRejected,
    /// `errFromModule`: the module's `Run` returned without the wrapper asking.
    ModuleReturned,
    /// The wrapper's configuration channel was closed (graceful shutdown).
    ConfigClosed,
}

/// What a wrapper goroutine is blocked on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Blocked {
    /// `stopRun()`: waiting for the runner to handle `Stop`.
    RunnerReply(AfterStop),
    /// The returned wait function: waiting for the module's `Run` to return.
    ModuleReturn(AfterStop),
}

#[derive(Clone, Debug, Default)]
struct Wrapper {
    /// `stopRun != nil`.
    registered: bool,
    /// `config` with `nilableCfg` set: handed to the module when it reads its channel.
    pending_version: Option<u64>,
    blocked: Option<Blocked>,
    /// The configuration pipe while the wrapper is blocked (it conflates).
    queued: Option<ModuleConfig>,
    /// Its configuration channel is closed: it returns once its module stopped.
    closed: bool,
}

pub(crate) struct AgentkV1Runner {
    status: Status,
    /// Registered functions, by module index (each wrapper registers at most once).
    funcs: BTreeSet<usize>,
    /// The term of the OnStartedLeading the runner acted on (for the trace only).
    believed_term: Option<u64>,
    /// OnStoppedLeading in RunningLeader waits for these modules to return.
    waiting_for: Option<BTreeSet<usize>>,
    inbox: VecDeque<Message>,
    draining: bool,
    wrappers: Vec<Wrapper>,
    /// H2: the goroutine of function `index` runs another module's `Run` (a second instance
    /// of that module, reading that module's config channel), keyed by `index`, with the
    /// index of the module it runs.
    duplicates: BTreeMap<usize, (usize, ModuleProcess)>,
}

impl AgentkV1Runner {
    pub(crate) fn new(module_count: usize) -> AgentkV1Runner {
        AgentkV1Runner {
            status: Status::NotRunning,
            funcs: BTreeSet::new(),
            believed_term: None,
            waiting_for: None,
            inbox: VecDeque::new(),
            draining: false,
            wrappers: vec![Wrapper::default(); module_count],
            duplicates: BTreeMap::new(),
        }
    }

    /// True when function `index`'s goroutine has returned (its own module and any H2
    /// duplicate it runs instead).
    fn func_idle(&self, core: &Core, index: usize) -> bool {
        core.modules[index].is_idle() && !self.duplicates.contains_key(&index)
    }

    /// `h.cancel()` of function `index`: cancels the ctx of its goroutine's `Run`.
    fn cancel_func(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        core.modules[index].cancel(cx);
        if let Some((_, duplicate)) = self.duplicates.get_mut(&index) {
            duplicate.cancel(cx);
        }
    }

    /// `close(w.cfg2module)` of wrapper `index`: its module returns, and so does every H2
    /// duplicate reading the same channel.
    fn close_channel(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        core.modules[index].stop(cx);
        for (runs, duplicate) in self.duplicates.values_mut() {
            if *runs == index {
                duplicate.stop(cx);
            }
        }
    }

    /// A module's workers stopped (it is recorded stopped) while the actor still waits in
    /// `h.wait()` for its `Run`: the trace records again which modules it waits for.
    fn still_waiting(&self, core: &Core, cx: &mut Context) {
        if let Some(waiting) = &self.waiting_for {
            cx.observe(Observation::RunnerBlocked {
                waits_in: HOLDER_WAIT.to_owned(),
                modules: (waiting.iter())
                    .map(|&index| core.settings.modules[index].name.clone())
                    .collect(),
            });
        }
    }

    /// Send to the runner's unbuffered channels: handled now unless the runner is busy.
    fn send(&mut self, core: &mut Core, message: Message, cx: &mut Context) {
        self.inbox.push_back(message);
        self.drain(core, cx);
    }

    fn drain(&mut self, core: &mut Core, cx: &mut Context) {
        if self.draining {
            return;
        }
        self.draining = true;
        while self.waiting_for.is_none() {
            let Some(message) = self.inbox.pop_front() else {
                break;
            };
            self.process(core, message, cx);
        }
        self.draining = false;
    }

    fn process(&mut self, core: &mut Core, message: Message, cx: &mut Context) {
        match message {
            Message::Add(index) => {
                assert!(self.funcs.insert(index), "wrapper {index} registered twice");
                match self.status {
                    Status::NotRunning => {
                        core.start_election(cx);
                        self.status = Status::RunningNotLeader;
                    }
                    Status::RunningLeader => self.start_func(core, index, cx),
                    // Started on OnStartedLeading, or after the elector restarts.
                    Status::RunningNotLeader | Status::Stopping => {}
                }
            }
            Message::Stop(index) => {
                if self.funcs.remove(&index) {
                    self.cancel_func(core, index, cx);
                    if self.funcs.is_empty() {
                        core.cancel_election(cx);
                        // The runner leaves RunningLeader here, not on OnStoppedLeading, which
                        // it then ignores: its belief in leading ends now.
                        if let Some(term) = self.believed_term.take() {
                            cx.observe(Observation::LeadingStopped { term });
                        }
                        self.status = Status::Stopping;
                    }
                }
                self.wrapper_on_reply(core, index, cx);
            }
            Message::Started(term) => {
                // No term in the callback: any OnStartedLeading counts (H4).
                if self.status == Status::RunningNotLeader {
                    self.status = Status::RunningLeader;
                    self.believed_term = Some(term);
                    cx.observe(Observation::LeadingStarted { term });
                    self.start_all_funcs(core, cx);
                }
            }
            Message::Stopped => self.on_stopped(core, cx),
        }
    }

    fn on_stopped(&mut self, core: &mut Core, cx: &mut Context) {
        assert_ne!(
            self.status,
            Status::NotRunning,
            "OnStoppedLeading without an elector"
        );
        if self.status == Status::RunningLeader {
            let term = self
                .believed_term
                .take()
                .expect("RunningLeader has a believed term");
            cx.observe(Observation::LeadingStopped { term });
            for index in self.funcs.clone() {
                self.cancel_func(core, index, cx);
            }
            let active = self
                .funcs
                .iter()
                .copied()
                .filter(|&index| !self.func_idle(core, index))
                .collect::<BTreeSet<_>>();
            if !active.is_empty() {
                // The actor blocks in h.wait() until every module returned.
                cx.observe(Observation::RunnerBlocked {
                    waits_in: HOLDER_WAIT.to_owned(),
                    modules: (active.iter())
                        .map(|&index| core.settings.modules[index].name.clone())
                        .collect(),
                });
                self.waiting_for = Some(active);
                return;
            }
        }
        self.after_stopped(core, cx);
    }

    /// The rest of OnStoppedLeading: client-go's Run covers one term, start another.
    fn after_stopped(&mut self, core: &mut Core, cx: &mut Context) {
        if self.funcs.is_empty() {
            self.status = Status::NotRunning;
        } else {
            core.start_election(cx);
            self.status = Status::RunningNotLeader;
        }
    }

    /// OnStartedLeading in RunningNotLeader: `for idx, holder := range r.funcs {
    /// holder.start() }`. Every goroutine reads the shared loop variable late and runs the
    /// last-iterated function (H2).
    fn start_all_funcs(&mut self, core: &mut Core, cx: &mut Context) {
        let order = go_map_order(&self.funcs, cx);
        let Some(&last) = order.last() else {
            return;
        };
        for index in order {
            if index == last {
                self.start_func(core, index, cx);
            } else {
                self.start_duplicate(core, index, last, cx);
            }
        }
    }

    /// Function `index`'s goroutine runs module `runs`: a second `Run` of that module, with
    /// its own ctx (holder `index`'s cancel) and no configuration (the real instance of
    /// `runs` takes the pending one from the shared channel).
    fn start_duplicate(&mut self, core: &mut Core, index: usize, runs: usize, cx: &mut Context) {
        let term = self
            .believed_term
            .expect("functions start only in RunningLeader");
        let settings = &core.settings;
        let mut duplicate = ModuleProcess::new(
            settings.modules[runs].name.clone(),
            settings.retry_period_ms,
            settings.module_stop_latency_ms_min,
            settings.module_stop_latency_ms_max,
            settings.module_behaviour,
            settings.modules[runs].work_ctx,
        );
        duplicate.start(term, cx);
        self.duplicates.insert(index, (runs, duplicate));
    }

    /// `h.start()`: `go f(freshCtx)`; the module then reads its pending configuration.
    fn start_func(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let term = self
            .believed_term
            .expect("functions start only in RunningLeader");
        core.modules[index].start(term, cx);
        if let Some(version) = self.wrappers[index].pending_version.take() {
            core.modules[index].receive_config(version, cx);
        }
    }

    /// A configuration reaches wrapper `index`'s select loop.
    fn wrapper_config(
        &mut self,
        core: &mut Core,
        index: usize,
        config: ModuleConfig,
        cx: &mut Context,
    ) {
        let wrapper = &mut self.wrappers[index];
        if wrapper.closed {
            return;
        }
        if wrapper.blocked.is_some() {
            wrapper.queued = Some(config);
            return;
        }
        if !config.runnable {
            wrapper.pending_version = None;
            if wrapper.registered {
                self.wrapper_stop(core, index, AfterStop::ConfigRejected, cx);
            }
            return;
        }
        wrapper.pending_version = Some(config.version);
        if !wrapper.registered {
            wrapper.registered = true;
            self.send(core, Message::Add(index), cx);
        } else if core.modules[index].is_running() {
            wrapper.pending_version = None;
            core.modules[index].receive_config(config.version, cx);
        }
    }

    /// `stop()`: close the module's config channel, unregister, then wait for the module.
    fn wrapper_stop(&mut self, core: &mut Core, index: usize, after: AfterStop, cx: &mut Context) {
        let wrapper = &mut self.wrappers[index];
        assert!(
            wrapper.blocked.is_none(),
            "a blocked wrapper cannot stop its module"
        );
        wrapper.registered = false;
        wrapper.blocked = Some(Blocked::RunnerReply(after));
        self.close_channel(core, index, cx);
        self.send(core, Message::Stop(index), cx);
    }

    fn wrapper_on_reply(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let Some(Blocked::RunnerReply(after)) = self.wrappers[index].blocked else {
            panic!("wrapper {index} got a Stop reply it did not wait for");
        };
        if self.func_idle(core, index) {
            self.wrappers[index].blocked = None;
            self.wrapper_continue(core, index, after, cx);
        } else {
            self.wrappers[index].blocked = Some(Blocked::ModuleReturn(after));
        }
    }

    /// The wrapper is back in its select loop after a stop.
    fn wrapper_continue(
        &mut self,
        core: &mut Core,
        index: usize,
        after: AfterStop,
        cx: &mut Context,
    ) {
        let wrapper = &mut self.wrappers[index];
        if wrapper.closed {
            // The select loop sees the closed channel and returns; its deferred stop runs
            // if the wrapper registered again meanwhile.
            wrapper.queued = None;
            if wrapper.registered {
                self.wrapper_stop(core, index, AfterStop::ConfigClosed, cx);
            }
            return;
        }
        // `if config != nil: run()`. A config already handed over is gone, so after a
        // leadership loss the wrapper stays unregistered (#398).
        if after == AfterStop::ModuleReturned && wrapper.pending_version.is_some() {
            wrapper.registered = true;
            self.send(core, Message::Add(index), cx);
        }
        if let Some(config) = self.wrappers[index].queued.take() {
            self.wrapper_config(core, index, config, cx);
        }
    }
}

impl AgentkV1Runner {
    /// Function `index`'s goroutine returned: an OnStoppedLeading waiting in `h.wait()` for
    /// it may go on.
    fn release_waiter(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        if let Some(waiting_for) = self.waiting_for.as_mut() {
            waiting_for.remove(&index);
            if waiting_for.is_empty() {
                self.waiting_for = None;
                self.after_stopped(core, cx);
                self.drain(core, cx);
            }
        }
    }
}

/// Where agentk-v1's runner blocks after a lost term, for the trace.
const HOLDER_WAIT: &str = concat!(
    "agentk 4438242a leader_runner.go Run, case <-r.onStoppedLeading: ",
    "holder.wait() until the module returns"
);

/// Go's map iteration order over the registered functions: a random starting point, then in
/// order (one bucket holds up to eight entries). One draw, and only for two or more.
fn go_map_order(funcs: &BTreeSet<usize>, cx: &mut Context) -> Vec<usize> {
    let funcs = funcs.iter().copied().collect::<Vec<_>>();
    if funcs.len() < 2 {
        return funcs;
    }
    let start = ((cx.unit() * funcs.len() as f64) as usize).min(funcs.len() - 1);
    funcs[start..]
        .iter()
        .chain(&funcs[..start])
        .copied()
        .collect()
}

impl Runner for AgentkV1Runner {
    fn on_config(&mut self, core: &mut Core, configs: &[ModuleConfig], cx: &mut Context) {
        assert_eq!(configs.len(), self.wrappers.len(), "one config per module");
        for (index, config) in configs.iter().enumerate() {
            self.wrapper_config(core, index, *config, cx);
        }
    }

    fn on_started_leading(&mut self, core: &mut Core, term: u64, cx: &mut Context) {
        self.send(core, Message::Started(term), cx);
    }

    fn on_leadership_lost(&mut self, _core: &mut Core, term: u64, _cx: &mut Context) {
        panic!("the v0.24.3 elector releases without acknowledgement (term {term})");
    }

    fn on_run_returned(&mut self, core: &mut Core, _led_term: Option<u64>, cx: &mut Context) {
        self.send(core, Message::Stopped, cx);
    }

    fn on_module_work_stopped(&mut self, core: &mut Core, _index: usize, cx: &mut Context) {
        self.still_waiting(core, cx);
    }

    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        if !self.func_idle(core, index) {
            return;
        }
        self.release_waiter(core, index, cx);
        match self.wrappers[index].blocked {
            Some(Blocked::ModuleReturn(after)) => {
                self.wrappers[index].blocked = None;
                self.wrapper_continue(core, index, after, cx);
            }
            // The reply will find the module idle.
            Some(Blocked::RunnerReply(_)) => {}
            // errFromModule: the module returned without the wrapper asking.
            None if self.wrappers[index].registered => {
                self.wrapper_stop(core, index, AfterStop::ModuleReturned, cx);
            }
            None => {}
        }
    }

    fn believed_term(&self) -> Option<u64> {
        self.believed_term
    }

    fn handle_timer(&mut self, core: &mut Core, token: TimerToken, cx: &mut Context) -> bool {
        let found = self
            .duplicates
            .iter_mut()
            .find_map(
                |(&index, (_, duplicate))| match duplicate.handle_timer(token, cx) {
                    ModuleTimer::NotMine => None,
                    outcome => Some((index, outcome)),
                },
            );
        let Some((index, outcome)) = found else {
            return false;
        };
        if outcome == ModuleTimer::WorkStopped {
            self.still_waiting(core, cx);
        }
        if outcome == ModuleTimer::Returned {
            // The duplicate's return goes to the other module's error channel; that wrapper
            // is not told (a simplification: its own instance returns at the same time).
            self.duplicates.remove(&index);
            if self.func_idle(core, index) {
                self.release_waiter(core, index, cx);
                if let Some(Blocked::ModuleReturn(after)) = self.wrappers[index].blocked {
                    self.wrappers[index].blocked = None;
                    self.wrapper_continue(core, index, after, cx);
                }
            }
        }
        true
    }

    fn extra_instances_idle(&self) -> bool {
        self.duplicates.is_empty()
    }

    fn on_shutdown(&mut self, core: &mut Core, cx: &mut Context) {
        for index in 0..self.wrappers.len() {
            let wrapper = &mut self.wrappers[index];
            wrapper.closed = true;
            wrapper.queued = None;
            if wrapper.blocked.is_none() && wrapper.registered {
                self.wrapper_stop(core, index, AfterStop::ConfigClosed, cx);
            }
        }
    }
}
