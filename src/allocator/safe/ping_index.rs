//! The names two of server-ping's cleanups look for, kept as the pods and agents change.
//!
//! At every server-ping `safe` deletes the agents whose pod is gone (rule 10) and writes
//! the idle-since times it could not write before. Both walked every agent or every pod to
//! find the few that qualify, so a ping cost O(agents + pods) however quiet the cluster.
//! [`PingIndex`] holds the names that qualify, in name order (the order of the walks), and
//! the pod table tells it of every change: a record added, changed or dropped, and the
//! agents whose listing changed. The naive references are the walks themselves; debug builds
//! compare at every question, and `pod_table_tests.rs` drives both with random changes.

use super::view::PodRecord;
use std::collections::BTreeSet;

/// Agents without a pod, and pods with an idle-since not written on them.
#[derive(Debug, Default)]
pub(super) struct PingIndex {
    /// Listed agents whose name no pod record has.
    without_pod: BTreeSet<String>,
    /// Records whose idle-since the pod does not carry yet
    /// ([`PodRecord::unwritten_idle_since_ms`]).
    unwritten: BTreeSet<String>,
}

/// Add or drop `name` so that `set` holds it exactly when `wanted`.
fn keep(set: &mut BTreeSet<String>, name: &str, wanted: bool) {
    if wanted {
        if !set.contains(name) {
            set.insert(name.to_owned());
        }
    } else {
        set.remove(name);
    }
}

impl PingIndex {
    /// The record of `name` was added or changed.
    pub(super) fn record_changed(&mut self, name: &str, record: &PodRecord) {
        self.without_pod.remove(name);
        let unwritten = record.unwritten_idle_since_ms().is_some();
        keep(&mut self.unwritten, name, unwritten);
    }

    /// The record of `name` was dropped; `listed` says whether the server lists its agent.
    pub(super) fn record_dropped(&mut self, name: &str, listed: bool) {
        self.unwritten.remove(name);
        keep(&mut self.without_pod, name, listed);
    }

    /// The agent `name`'s listing changed: `listed` says whether the server lists it now,
    /// `has_pod` whether a record has its name.
    pub(super) fn agent_changed(&mut self, name: &str, listed: bool, has_pod: bool) {
        keep(&mut self.without_pod, name, listed && !has_pod);
    }

    /// Listed agents without a pod, in name order.
    pub(super) fn without_pod(&self) -> impl Iterator<Item = &String> {
        self.without_pod.iter()
    }

    /// Pods with an unwritten idle-since, in name order.
    pub(super) fn unwritten(&self) -> impl Iterator<Item = &String> {
        self.unwritten.iter()
    }
}

/// The naive reference of [`PingIndex::without_pod`]: every listed agent whose name has no
/// record, in name order.
#[cfg(any(test, debug_assertions))]
pub(super) fn without_pod_naive(
    agents: &crate::allocator::AgentList,
    has_pod: impl Fn(&str) -> bool,
) -> Vec<String> {
    (agents.iter())
        .map(|agent| agent.agent_id.to_string())
        .filter(|name| !has_pod(name))
        .collect()
}
