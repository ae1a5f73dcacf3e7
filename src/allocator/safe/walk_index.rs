//! The names four of `safe`'s walks look for, kept as the pods and agents change.
//!
//! At every server-ping `safe` deletes the agents whose pod is gone (`reap-missing`) and
//! writes the idle-since times it could not write before (rule 3); at every list it starts
//! the idle clock of idle pods that have none (rule 3); at every create-agent it looks for a
//! pod reserved for the job (rule 1). Each walked every agent or every pod not settled to
//! find the few that qualify, so the cost grew with the cluster however quiet it was.
//! [`WalkIndex`] holds
//! the names that qualify, in name order (the order of the walks), and the pod table tells
//! it of every change: a record added, changed or dropped, and the agents whose listing
//! changed. The naive references are the walks themselves; debug builds compare at every
//! question, and `safe::tests::pod_table` drives both with random changes.

use super::view::{PodRecord, agent_is_assignable};
use crate::allocator::AgentMetadata;
use std::collections::{BTreeMap, BTreeSet};

/// Agents without a pod; pods with an idle-since not written on them; idle pods without an
/// idle-since; pods by the job their claim names.
#[derive(Debug, Default)]
pub(super) struct WalkIndex {
    /// Listed agents whose name no pod record has.
    without_pod: BTreeSet<String>,
    /// Records whose idle-since the pod does not carry yet
    /// ([`PodRecord::unwritten_idle_since_ms`]).
    unwritten: BTreeSet<String>,
    /// Idle pods ([`is_idle`]) with no idle-since at all.
    unmarked: BTreeSet<String>,
    /// The job each claimed pod's claim names ([`PodRecord::claim`], live or not)...
    claimed: BTreeMap<String, u64>,
    /// ...and the same pods by job.
    by_job: BTreeMap<u64, BTreeSet<String>>,
}

/// The pod is free and its agent idle and enabled at the server: nothing runs on it and
/// nothing is about to (rule 3's idle; its container's health is not asked).
pub(crate) fn is_idle(record: &PodRecord, agent: Option<&AgentMetadata>) -> bool {
    !record.retired && record.running_job.is_none() && agent.is_some_and(agent_is_assignable)
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

impl WalkIndex {
    /// A record of `name` was added (or replaced one); `agent` is its agent as listed now.
    pub(super) fn record_added(
        &mut self,
        name: &str,
        record: &PodRecord,
        agent: Option<&AgentMetadata>,
    ) {
        self.without_pod.remove(name);
        self.record_changed(name, record, agent);
    }

    /// The record of `name` changed, or its agent (`agent`, as listed now). A name with a
    /// record is never among the agents without a pod, so only [`WalkIndex::record_added`]
    /// takes it out of them.
    pub(super) fn record_changed(
        &mut self,
        name: &str,
        record: &PodRecord,
        agent: Option<&AgentMetadata>,
    ) {
        let unwritten = record.unwritten_idle_since_ms().is_some();
        keep(&mut self.unwritten, name, unwritten);
        let unmarked = record.idle_since_ms().is_none() && is_idle(record, agent);
        keep(&mut self.unmarked, name, unmarked);
        self.file_claim(name, record.claim().map(|claim| claim.job_id));
    }

    /// The record of `name` was dropped; `listed` says whether the server lists its agent.
    pub(super) fn record_dropped(&mut self, name: &str, listed: bool) {
        self.unwritten.remove(name);
        self.unmarked.remove(name);
        self.file_claim(name, None);
        keep(&mut self.without_pod, name, listed);
    }

    /// The agent `name` has no record and its listing changed: `listed` says whether the
    /// server lists it now.
    pub(super) fn agent_changed(&mut self, name: &str, listed: bool) {
        keep(&mut self.without_pod, name, listed);
    }

    fn file_claim(&mut self, name: &str, job: Option<u64>) {
        let filed = self.claimed.get(name).copied();
        if filed == job {
            return;
        }
        if let Some(old) = filed {
            self.claimed.remove(name);
            let bucket = self.by_job.get_mut(&old).expect("a claimed pod is filed");
            bucket.remove(name);
            if bucket.is_empty() {
                self.by_job.remove(&old);
            }
        }
        if let Some(job) = job {
            self.claimed.insert(name.to_owned(), job);
            self.by_job.entry(job).or_default().insert(name.to_owned());
        }
    }

    /// Listed agents without a pod, in name order.
    pub(super) fn without_pod(&self) -> impl Iterator<Item = &String> + Clone {
        self.without_pod.iter()
    }

    /// Pods with an unwritten idle-since, in name order.
    pub(super) fn unwritten(&self) -> impl Iterator<Item = &String> + Clone {
        self.unwritten.iter()
    }

    /// Idle pods without an idle-since, in name order.
    pub(super) fn unmarked(&self) -> impl Iterator<Item = &String> + Clone {
        self.unmarked.iter()
    }

    /// Pods whose claim names `job`, in name order.
    pub(super) fn claiming(&self, job: u64) -> impl Iterator<Item = &String> + Clone {
        self.by_job.get(&job).into_iter().flatten()
    }
}

/// The naive reference of [`WalkIndex::without_pod`]: every listed agent whose name has no
/// record, in name order.
pub(super) fn without_pod_naive(
    agents: &crate::allocator::AgentList,
    has_pod: impl Fn(&str) -> bool,
) -> Vec<String> {
    (agents.iter())
        .map(|agent| agent.agent_id.to_string())
        .filter(|name| !has_pod(name))
        .collect()
}
