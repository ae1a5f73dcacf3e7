//! The `agentk-v2` and `agentk-head` runners: the GitLab agent's June 2023 rewrite of the
//! `leaderRunner` actor and its `leaderModuleWrapper`s (`pluralsh/kubernetes-agent`,
//! `cmd/agentk/agentkapp/leader_runner.go` and `leader_module_wrapper.go` at `278235e8`,
//! MR !1021, with `3d59282c`, MR !1024), and the fork's HEAD (`0a4bdc9d`,
//! `modules/kas/cmd/agentk/agentkapp/`, which adds `f3e3bce8` and `ac5d3305`), defects
//! included:
//!
//! * the election always runs (`2f07ea9d`): one `LeaderElector` for the whole process life,
//!   re-entered 1 ms after each term (`leaseLeaderElector.Run`,
//!   `wait.UntilWithContext(ctx, elector.Run, time.Millisecond)`), so its observed record
//!   persists between terms; it starts once the agent's first configuration names the lease
//!   (`l.name(ctx)` waits for the agent id);
//! * a wrapper registers with any configuration (`3d59282c` removed
//!   `IsRunnableConfiguration`): the module itself decides whether a configuration asks for
//!   work (gitops' `for config := range cfg` with no manifest project runs no worker);
//! * `RunWhenLeader`'s start function sends the configuration captured at registration
//!   (`func() { requestStartCh <- initialCfg }`); configurations forwarded to a running module
//!   do not update it, so after a lost and regained term the module restarts on a stale
//!   configuration until the next change (H6);
//! * `OnStoppedLeading` in `runningAndLeader` calls every module's stop function (cancel its
//!   ctx *and* close its channel, `leaderModuleWrapper.stop`) and waits for each; client-go
//!   calls it after `release()`, so the modules of a lost term stop only after the release
//!   (H8); on shutdown the stager stops the module stage first, then cancels the runner's ctx,
//!   so a graceful stop releases only after the modules returned;
//! * `OnStartedLeading` runs in client-go's goroutine and carries no term: a late one that
//!   reaches the runner in `runningButNotLeader` starts the modules without the lease (H4);
//! * the runner's sends to a wrapper (`requestStartCh`, `requestStopCh`) and the wrapper's to
//!   the runner (`addModule`, `removeModule`) are unbuffered and blocking: when the runner
//!   sends to a wrapper that is itself blocked sending to the runner, or still waiting for its
//!   module to return from a shutdown stop, both wait for ever (H5; the trace records
//!   `RunnerBlocked`, leader-config-race seed 1 under agentk-head).
//!
//! Not reachable in this model, so v2 and HEAD differ here only by their client-go version:
//! the send on a closed channel `f3e3bce8` (#434) fixed needs a module that has not read its
//! pending configuration when it is stopped (modules here read it at once); the shutdown
//! hang `ac5d3305` (#437) fixed needs a ctx cancelled before the lease name is known (the
//! election starts only once it is). Go's random
//! map order over `r.modules` only orders starts made in the same instant: they go in
//! registration order.

use super::election_loop::ElectionLoop;
use super::runner::{Core, ModuleConfig, Runner};
use super::{Context, Observation, TimerToken};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Status {
    NotRunning,
    RunningNotLeader,
    RunningLeader,
}

/// The runner's mailbox (its unbuffered channels).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Message {
    /// `RunWhenLeader` from wrapper `index` with the configuration its start function sends.
    Add(usize, ModuleConfig),
    /// The unregister function of registration `id`.
    Remove(u64),
    /// OnStartedLeading; the term is only for the trace, the runner does not see it.
    Started(u64),
    /// OnStoppedLeading.
    Stopped,
}

/// The runner's channel a message travels on (0 `addModule`, 1 `removeModule`,
/// 2 `onStartedLeading`, 3 `onStoppedLeading`).
fn channel_of(message: Message) -> u8 {
    match message {
        Message::Add(..) => 0,
        Message::Remove(_) => 1,
        Message::Started(_) => 2,
        Message::Stopped => 3,
    }
}

#[derive(Clone, Debug, Default)]
struct Wrapper {
    /// `cancelRunWhenLeaderFunc`: the registration id.
    registration: Option<u64>,
    /// Messages sent to the runner that it has not received yet (the wrapper is blocked).
    sends_pending: usize,
    /// `w.stop()` is waiting for the module to return (`runWait`); `true` when the runner
    /// asked (`requestStopCh`) and waits for `close(stopped)`.
    stopping: Option<bool>,
    /// The configuration channel while the wrapper is blocked (it conflates).
    queued: Option<ModuleConfig>,
    /// Its configuration channel is closed (shutdown): it unregisters, stops and returns.
    closed: bool,
}

pub(crate) struct AgentkV2Runner {
    status: Status,
    /// `r.modules`: registration id to wrapper index.
    modules: BTreeMap<u64, usize>,
    /// The start configuration of each registration (the closure's `initialCfg`).
    initial: BTreeMap<u64, ModuleConfig>,
    next_registration: u64,
    believed_term: Option<u64>,
    /// OnStoppedLeading waits for these wrappers to close their `stopped` channel.
    waiting_for: Option<BTreeSet<usize>>,
    inbox: VecDeque<Message>,
    draining: bool,
    wrappers: Vec<Wrapper>,
    /// The election always runs; its ctx is cancelled at shutdown, after the module stage
    /// stopped.
    election: ElectionLoop,
    /// H5: the runner made a blocking send to a wrapper that is itself blocked sending to
    /// the runner; both wait for ever.
    deadlocked: bool,
    shutting_down: bool,
}

impl AgentkV2Runner {
    pub(crate) fn new(module_count: usize) -> AgentkV2Runner {
        AgentkV2Runner {
            status: Status::NotRunning,
            modules: BTreeMap::new(),
            initial: BTreeMap::new(),
            next_registration: 0,
            believed_term: None,
            waiting_for: None,
            inbox: VecDeque::new(),
            draining: false,
            wrappers: vec![Wrapper::default(); module_count],
            election: ElectionLoop::default(),
            deadlocked: false,
            shutting_down: false,
        }
    }

    /// A wrapper's blocking send to the runner.
    fn send(&mut self, core: &mut Core, from: Option<usize>, message: Message, cx: &mut Context) {
        if let Some(index) = from {
            self.wrappers[index].sends_pending += 1;
        }
        self.inbox.push_back(message);
        self.drain(core, cx);
    }

    fn drain(&mut self, core: &mut Core, cx: &mut Context) {
        if self.draining || self.deadlocked {
            return;
        }
        self.draining = true;
        while self.waiting_for.is_none() {
            let Some(message) = self.next_message(cx) else {
                break;
            };
            self.process(core, message, cx);
        }
        self.draining = false;
    }

    /// The message the runner's `select` receives next. Each kind is its own unbuffered
    /// channel (`addModule`, `removeModule`, `onStartedLeading`, `onStoppedLeading`), whose
    /// blocked senders are served in order; when senders wait on several channels (the runner
    /// was blocked in a stop's `wait(ctx)`), Go chooses one of the ready channels uniformly at
    /// random (the Go spec, "Select statements"). So an OnStartedLeading whose term ended
    /// while the runner waited can be received after that term's OnStoppedLeading (H4).
    fn next_message(&mut self, cx: &mut Context) -> Option<Message> {
        let mut ready: Vec<usize> = Vec::new();
        for (position, message) in self.inbox.iter().enumerate() {
            let channel = channel_of(*message);
            if !ready
                .iter()
                .any(|&first| channel_of(self.inbox[first]) == channel)
            {
                ready.push(position);
            }
        }
        let chosen = match ready.len() {
            0 => return None,
            1 => ready[0],
            n => ready[((cx.unit() * n as f64) as usize).min(n - 1)],
        };
        self.inbox.remove(chosen)
    }

    fn process(&mut self, core: &mut Core, message: Message, cx: &mut Context) {
        match message {
            Message::Add(index, config) => {
                let id = self.next_registration;
                self.next_registration += 1;
                let known = self.modules.insert(id, index);
                debug_assert!(known.is_none(), "registration ids are used once");
                self.initial.insert(id, config);
                self.wrappers[index].registration = Some(id);
                self.received(core, index, cx);
                match self.status {
                    Status::RunningLeader => self.start(core, id, cx),
                    Status::RunningNotLeader | Status::NotRunning => {}
                }
            }
            Message::Remove(id) => {
                let index = self.modules.remove(&id);
                self.initial.remove(&id);
                if let Some(index) = index {
                    self.received(core, index, cx);
                }
            }
            Message::Started(term) => match self.status {
                Status::RunningNotLeader => {
                    self.status = Status::RunningLeader;
                    self.believed_term = Some(term);
                    cx.observe(Observation::LeadingStarted { term });
                    for id in self.modules.keys().copied().collect::<Vec<_>>() {
                        self.start(core, id, cx);
                    }
                }
                // "callback from the second election executes before the callback from the
                // first one"; after shutdown nobody receives it.
                Status::RunningLeader | Status::NotRunning => {}
            },
            Message::Stopped => self.on_stopped(core, cx),
        }
    }

    /// The runner received a message wrapper `index` was blocked sending.
    fn received(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let wrapper = &mut self.wrappers[index];
        assert!(
            wrapper.sends_pending > 0,
            "a message is received after it was sent"
        );
        wrapper.sends_pending -= 1;
        if wrapper.sends_pending == 0 && wrapper.stopping.is_none() {
            self.wrapper_resume(core, index, cx);
        }
    }

    /// The start function: `requestStartCh <- initialCfg`; the wrapper starts its module with a
    /// fresh ctx and channel and hands it the configuration captured at registration.
    fn start(&mut self, core: &mut Core, id: u64, cx: &mut Context) {
        debug_assert_eq!(
            self.status,
            Status::RunningLeader,
            "modules start while leading"
        );
        let index = self.modules[&id];
        let config = self.initial[&id];
        if self.blocks_on(core, index, cx) {
            return;
        }
        let term = self
            .believed_term
            .expect("modules start only in runningAndLeader");
        let module = &mut core.modules[index];
        // A registered module's earlier run was stopped by the runner, which waited for it.
        module.start(term, cx);
        module.receive_config_of(config.version, config.runnable, cx);
    }

    fn on_stopped(&mut self, core: &mut Core, cx: &mut Context) {
        if self.election.is_cancelled() {
            // `case <-done`: the runner consumes the last OnStoppedLeading and returns (its
            // belief in leading ends with it; no module is registered any more).
            if let Some(term) = self.believed_term.take() {
                cx.observe(Observation::LeadingStopped { term });
            }
            self.status = Status::NotRunning;
            return;
        }
        if self.status == Status::RunningLeader {
            let term = self
                .believed_term
                .take()
                .expect("runningAndLeader has a believed term");
            cx.observe(Observation::LeadingStopped { term });
            let mut waiting = BTreeSet::new();
            for index in self.modules.values().copied().collect::<Vec<_>>() {
                if self.blocks_on(core, index, cx) {
                    return;
                }
                if self.wrapper_stop(core, index, true, cx) {
                    waiting.insert(index);
                }
            }
            debug_assert!(
                self.waiting_for.is_none(),
                "one OnStoppedLeading waits at a time"
            );
            if !waiting.is_empty() {
                self.waiting_for = Some(waiting);
            }
        }
        self.status = Status::RunningNotLeader;
        // The elector's goroutine was blocked in this send; its Run returns now and
        // `wait.UntilWithContext` runs it again 1 ms later.
        self.election.run_again_soon(cx);
    }

    /// True when the runner's send to wrapper `index` (`requestStartCh` or `requestStopCh`)
    /// can never be received: the wrapper is blocked sending to the runner (a registration
    /// or unregistration still in the runner's mailbox, or a module still returning from
    /// its shutdown stop). Both block for ever (H5); the runner handles nothing more.
    fn blocks_on(&mut self, core: &Core, index: usize, cx: &mut Context) -> bool {
        let wrapper = &self.wrappers[index];
        if !self.deadlocked && (wrapper.sends_pending > 0 || wrapper.stopping.is_some()) {
            self.deadlocked = true;
            cx.observe(Observation::RunnerBlocked {
                waits_in: RUNNER_WRAPPER_DEADLOCK.to_owned(),
                modules: vec![core.settings.modules[index].name.clone()],
            });
        }
        self.deadlocked
    }

    /// `w.stop()`: cancel the module's ctx and close its channel, then wait for it. True when
    /// the wrapper is now waiting for its module (the runner asked: `requested`).
    fn wrapper_stop(
        &mut self,
        core: &mut Core,
        index: usize,
        requested: bool,
        cx: &mut Context,
    ) -> bool {
        core.modules[index].stop(cx);
        if core.modules[index].is_idle() {
            return false;
        }
        let wrapper = &mut self.wrappers[index];
        wrapper.stopping = Some(requested || wrapper.stopping == Some(true));
        true
    }

    /// A configuration reaches wrapper `index`'s select loop (case #3).
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
        if wrapper.sends_pending > 0 || wrapper.stopping.is_some() {
            wrapper.queued = Some(config);
            return;
        }
        if core.modules[index].is_running() {
            // `config = c; nilableCfg = w.cfg2module`: the module reads it.
            core.modules[index].receive_config_of(config.version, config.runnable, cx);
            return;
        }
        if let Some(id) = wrapper.registration.take() {
            self.send(core, Some(index), Message::Remove(id), cx);
        }
        self.send(core, Some(index), Message::Add(index, config), cx);
    }

    /// The wrapper is back in its select loop.
    fn wrapper_resume(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let wrapper = &mut self.wrappers[index];
        if wrapper.closed {
            wrapper.queued = None;
            if let Some(id) = wrapper.registration.take() {
                self.send(core, Some(index), Message::Remove(id), cx);
                return;
            }
            if self.wrapper_stop(core, index, false, cx) {
                return;
            }
            self.maybe_cancel(core, cx);
            return;
        }
        if let Some(config) = self.wrappers[index].queued.take() {
            self.wrapper_config(core, index, config, cx);
        }
    }

    /// The stager cancels the runner's ctx once every wrapper of the module stage returned.
    fn maybe_cancel(&mut self, core: &mut Core, cx: &mut Context) {
        if !self.shutting_down || self.election.is_cancelled() {
            return;
        }
        let returned = self.wrappers.iter().all(|wrapper| {
            wrapper.registration.is_none()
                && wrapper.sends_pending == 0
                && wrapper.stopping.is_none()
        });
        if !returned || !core.all_modules_idle() {
            return;
        }
        assert!(
            self.modules.is_empty(),
            "{} modules still want to run",
            self.modules.len()
        );
        // Until's ctx is done: no further elector.Run.
        self.election.cancel(core, cx);
    }
}

impl Runner for AgentkV2Runner {
    fn on_config(&mut self, core: &mut Core, configs: &[ModuleConfig], cx: &mut Context) {
        assert_eq!(configs.len(), self.wrappers.len(), "one config per module");
        // `name(ctx)` returns once the agent id is known: the elector starts.
        if self.election.start_once(core, cx) {
            self.status = Status::RunningNotLeader;
        }
        for (index, config) in configs.iter().enumerate() {
            self.wrapper_config(core, index, *config, cx);
        }
    }

    fn on_started_leading(&mut self, core: &mut Core, term: u64, cx: &mut Context) {
        self.send(core, None, Message::Started(term), cx);
    }

    fn on_leadership_lost(&mut self, _core: &mut Core, term: u64, _cx: &mut Context) {
        panic!("client-go releases without acknowledgement (term {term})");
    }

    fn on_run_returned(&mut self, core: &mut Core, _led_term: Option<u64>, cx: &mut Context) {
        self.send(core, None, Message::Stopped, cx);
    }

    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let Some(requested) = self.wrappers[index].stopping.take() else {
            return;
        };
        if requested {
            // `close(stopped)`: the runner's wait for this module returns.
            if let Some(waiting_for) = self.waiting_for.as_mut() {
                waiting_for.remove(&index);
                if waiting_for.is_empty() {
                    self.waiting_for = None;
                }
            }
        }
        if self.wrappers[index].sends_pending == 0 {
            self.wrapper_resume(core, index, cx);
        }
        self.drain(core, cx);
        self.maybe_cancel(core, cx);
    }

    fn believed_term(&self) -> Option<u64> {
        self.believed_term
    }

    fn handle_timer(&mut self, core: &mut Core, token: TimerToken, cx: &mut Context) -> bool {
        self.election.handle_timer(core, token, cx)
    }

    fn on_shutdown(&mut self, core: &mut Core, cx: &mut Context) {
        self.shutting_down = true;
        for index in 0..self.wrappers.len() {
            let wrapper = &mut self.wrappers[index];
            wrapper.closed = true;
            wrapper.queued = None;
            if wrapper.sends_pending == 0 && wrapper.stopping.is_none() {
                self.wrapper_resume(core, index, cx);
            }
        }
        self.maybe_cancel(core, cx);
    }
}

/// Where agentk-v2's runner blocks for ever (H5), for the trace.
const RUNNER_WRAPPER_DEADLOCK: &str = concat!(
    "agentk 278235e8 leader_runner.go: the runner's blocking send to the wrapper's ",
    "requestStartCh/requestStopCh while the wrapper (leader_module_wrapper.go) blocks on ",
    "its own send to the runner: both wait for ever"
);
