//! The shipped design's election loop, shared by `agentk-v2`, `agentk-head` and `fixed`:
//! agentk has always run the election since `2f07ea9d` ("Always run leader election",
//! `pluralsh/kubernetes-agent` `cmd/agentk/agentkapp/leader_runner.go`, kept through HEAD
//! `0a4bdc9d` `modules/kas/cmd/agentk/agentkapp/leader_runner.go`): one `LeaderElector` for
//! the whole process life, first run once the agent's first configuration names the lease
//! (`l.name(ctx)` waits for the agent id), then run again 1 ms after each `Run` returns
//! (`wait.UntilWithContext(ctx, elector.Run, time.Millisecond)`) until the runner's ctx is
//! cancelled.

use super::runner::Core;
use super::{Context, TimerToken};

#[derive(Clone, Debug, Default)]
pub(crate) struct ElectionLoop {
    /// The first `elector.Run` has been started.
    started: bool,
    /// `wait.UntilWithContext`'s 1 ms pause before the next `elector.Run`.
    rerun: Option<TimerToken>,
    /// The runner's ctx was cancelled: no further `elector.Run`.
    cancelled: bool,
}

impl ElectionLoop {
    /// The agent's configuration arrived: the first `Run` starts unless it already did (or
    /// the ctx is already done). True when it started now.
    pub(crate) fn start_once(&mut self, core: &mut Core, cx: &mut Context) -> bool {
        if self.started || self.cancelled {
            return false;
        }
        debug_assert!(self.rerun.is_none(), "no rerun is due before the first Run");
        self.started = true;
        core.start_election(cx);
        true
    }

    /// A `Run` returned: the next one starts 1 ms later unless the ctx is done.
    pub(crate) fn run_again_soon(&mut self, cx: &mut Context) {
        debug_assert!(
            self.started && self.rerun.is_none(),
            "a Run returned, so one ran, and none is due yet"
        );
        if !self.cancelled {
            self.rerun = Some(cx.timer(cx.now_local_ms + 1));
        }
    }

    /// The loop's pause ended: `elector.Run` again. False when `token` is not the loop's.
    pub(crate) fn handle_timer(
        &mut self,
        core: &mut Core,
        token: TimerToken,
        cx: &mut Context,
    ) -> bool {
        if self.rerun != Some(token) {
            return false;
        }
        self.rerun = None;
        debug_assert!(!self.cancelled, "a cancelled loop has no rerun due");
        core.start_election(cx);
        true
    }

    /// Cancel the runner's ctx: the running `Run` is cancelled and none follows it.
    pub(crate) fn cancel(&mut self, core: &mut Core, cx: &mut Context) {
        self.cancelled = true;
        self.rerun = None;
        core.cancel_election(cx);
    }

    /// True once the runner's ctx was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.cancelled
    }
}
