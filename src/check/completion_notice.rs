//! When the plugin can first know that an agent finished its job, for `idle-timeout`.
//!
//! A job's end reaches the plugin as a job-completion, which waits behind the server's one
//! job-status listener: each message goes after the plugin's previous job-completion call
//! has finished, so after a restart, with API calls of seconds, a completion can be ten
//! seconds late (explore/elastic-slow seeds 1067, 5052, 5140). The plugin can also see the
//! agent idle at its next server-ping, which carries the server's agents. So the plugin can
//! know of the end at the first of the completion's delivery (the allocator's `complete-*`
//! decision for the job, recorded when it handles the job-completion) and the next
//! server-ping, never later than a PING after the end. The idle deadline starts a PING after
//! the end and moves back by the part of that PING the plugin did not need.

use crate::trace::Record;
use std::collections::BTreeMap;

/// A job's end the plugin may not have heard of yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Unheard {
    job: u64,
    /// The end + PING: the plugin knows by then at the latest.
    by_ms: u64,
}

/// The job ends the plugin has not heard of yet, by pod.
#[derive(Debug, Default)]
pub(crate) struct CompletionNotice {
    unheard: BTreeMap<String, Unheard>,
}

impl CompletionNotice {
    /// `job` ended on `pod`; the plugin knows by `by_ms` at the latest.
    pub(crate) fn ended(&mut self, pod: &str, job: u64, by_ms: u64) {
        self.unheard.insert(pod.to_owned(), Unheard { job, by_ms });
    }

    /// The pod's idle period ended or its deadline was set anew: nothing left to learn.
    pub(crate) fn forget(&mut self, pod: &str) {
        self.unheard.remove(pod);
    }

    /// Follow one record at `t_ms`: the pods whose end the plugin hears of now, each with
    /// how much earlier than `by_ms` that is.
    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) -> Vec<(String, u64)> {
        match record {
            // The server lost the listener's queue; the restart rules take over.
            Record::ServerStopped => {
                self.unheard.clear();
                Vec::new()
            }
            Record::ServerPing => std::mem::take(&mut self.unheard)
                .into_iter()
                .map(|(pod, unheard)| (pod, unheard.by_ms.saturating_sub(t_ms)))
                .collect(),
            Record::Decision {
                job: Some(job),
                pod: Some(pod),
                code,
                ..
            } if is_completion(code) => {
                // A completion of another job says nothing about this idle period.
                if (self.unheard.get(pod)).is_none_or(|unheard| unheard.job != *job) {
                    return Vec::new();
                }
                let unheard = self.unheard.remove(pod).expect("looked at above");
                vec![(pod.clone(), unheard.by_ms.saturating_sub(t_ms))]
            }
            _ => Vec::new(),
        }
    }
}

/// The decision codes an allocator records when it handles a job-completion.
const COMPLETION_CODES: [&str; 4] = [
    "complete-delete",
    "complete-idle",
    "complete-stale",
    "complete-unknown",
];

fn is_completion(code: &str) -> bool {
    COMPLETION_CODES.contains(&code)
}
