//! The job-status listener: how a completed job's job-completion reaches the plugin.
//!
//! In GoCD the call that completes a job only posts a `JobStatusMessage` on the
//! `JobStatusTopic`; `JobStatusListener.onMessage`, on the listener's own thread, loads the
//! stage and the job's plan and then calls `ElasticAgentPluginService.jobCompleted`
//! (gocd/gocd `server/…/messaging/JobStatusListener.java`). The agent does not wait for it:
//! its get-work loop asks again at once after a job. So a just-finished agent can poll for
//! work before the plugin has disabled it. The model: messages wait `job_completion_delay`
//! (the thread hop and the database reads before the plugin call), then one listener thread
//! delivers them in order, each after the previous plugin call has finished. A crash loses
//! the queue, as it loses every in-memory message.

use super::{Server, ServerOut, ServerTimer};
use crate::gocd::database::Job;

/// A job-completion message waiting for the listener.
pub(super) struct Completion {
    /// When the listener can take it at the earliest.
    due_ms: u64,
    /// The elastic agent id the job ran on.
    agent: String,
    job: Job,
}

/// The listener's queue and its one thread.
#[derive(Default)]
pub(super) struct JobStatusQueue {
    waiting: std::collections::VecDeque<Completion>,
    /// True while the listener's plugin call has not finished.
    busy: bool,
    /// The due time of the armed `JobCompletion` timer, if one is armed.
    timer_ms: Option<u64>,
}

impl JobStatusQueue {
    /// The listener's plugin call finished.
    pub(super) fn finished(&mut self) {
        self.busy = false;
    }
}

impl Server {
    /// Job `job`, which ran on agent `agent`, completed: its job-completion goes to the
    /// plugin now (delay 0) or through the listener's queue.
    pub(super) fn post_job_completion(
        &mut self,
        now_ms: u64,
        agent: &str,
        job: Job,
        out: &mut ServerOut,
    ) {
        let delay_ms = self.settings.job_completion_delay_ms;
        if delay_ms == 0 {
            self.send_job_completion(now_ms, agent, &job, out);
            return;
        }
        let memory = self
            .memory
            .as_mut()
            .expect("completions come from a running server");
        let due_ms = now_ms + delay_ms;
        debug_assert!(
            memory
                .job_status
                .waiting
                .back()
                .is_none_or(|last| last.due_ms <= due_ms),
            "the queue is in due order"
        );
        let agent = agent.to_owned();
        memory
            .job_status
            .waiting
            .push_back(Completion { due_ms, agent, job });
        self.deliver_job_completions(now_ms, out);
    }

    /// The listener takes every due message it can: one at a time, each once the previous
    /// plugin call has finished. A message not yet due gets the timer.
    pub(super) fn deliver_job_completions(&mut self, now_ms: u64, out: &mut ServerOut) {
        loop {
            let Some(memory) = self.memory.as_mut() else {
                return;
            };
            let queue = &mut memory.job_status;
            if queue.busy {
                return;
            }
            let Some(next) = queue.waiting.front() else {
                return;
            };
            if next.due_ms > now_ms {
                if queue.timer_ms.is_none() {
                    queue.timer_ms = Some(next.due_ms);
                    out.timers.push((next.due_ms, ServerTimer::JobCompletion));
                }
                return;
            }
            let completion = queue.waiting.pop_front().expect("looked at above");
            debug_assert!(completion.due_ms <= now_ms, "a completion delivered early");
            queue.busy = true;
            self.send_job_completion(now_ms, &completion.agent, &completion.job, out);
        }
    }

    /// The `JobCompletion` timer fired.
    pub(super) fn job_completion_timer(&mut self, now_ms: u64, out: &mut ServerOut) {
        let memory = self.memory.as_mut().expect("checked by caller");
        let armed = memory.job_status.timer_ms.take();
        debug_assert!(
            armed.is_none_or(|at_ms| at_ms <= now_ms),
            "the job-completion timer fired before it was due"
        );
        self.deliver_job_completions(now_ms, out);
    }
}
