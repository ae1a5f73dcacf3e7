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
//!   returns, and v0.24.3's release has no timeout (H8).
//!
//! Go's blocking channel operations are modelled explicitly: while the runner waits for the
//! modules of a lost term to return, its messages queue in `inbox`; while a wrapper waits for
//! the runner's reply or for its module to return, its configuration pipe keeps only the
//! latest configuration. Go's random choice among ready channels becomes arrival order.

use super::Context;
use super::Observation;
use super::replica::{Core, ModuleConfig, Runner};
use std::collections::{BTreeSet, VecDeque};

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
                    core.modules[index].stop(cx);
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
                    for index in self.funcs.clone() {
                        self.start_func(core, index, cx);
                    }
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
            for &index in &self.funcs {
                core.modules[index].stop(cx);
            }
            let active = self
                .funcs
                .iter()
                .copied()
                .filter(|&index| !core.modules[index].is_idle())
                .collect::<BTreeSet<_>>();
            if !active.is_empty() {
                // The actor blocks in h.wait() until every module returned.
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
        core.modules[index].stop(cx);
        self.send(core, Message::Stop(index), cx);
    }

    fn wrapper_on_reply(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        let Some(Blocked::RunnerReply(after)) = self.wrappers[index].blocked else {
            panic!("wrapper {index} got a Stop reply it did not wait for");
        };
        if core.modules[index].is_idle() {
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

    fn on_module_returned(&mut self, core: &mut Core, index: usize, cx: &mut Context) {
        if let Some(waiting_for) = self.waiting_for.as_mut() {
            waiting_for.remove(&index);
            if waiting_for.is_empty() {
                self.waiting_for = None;
                self.after_stopped(core, cx);
                self.drain(core, cx);
            }
        }
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
}
