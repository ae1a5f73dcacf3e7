//! The view's pods by name, with an index of the pods a decision has to look at.
//!
//! At every create-agent `safe` looks for pods to reap, to mark idle, to wait for, to reuse
//! or to count against the pending limit. None of those can be a *settled* pod: Running, its
//! container never restarted, not retired, no delete in flight, and its agent building (or
//! Missing, which may be building) at the server. Such a pod is not terminated, restarted or
//! being deleted (so not reaped, not waited for, not counted as pending), and its agent is
//! not assignable (so not idle, not reserved for a job it can serve, not a reuse candidate).
//! In a busy cluster nearly every pod is settled, so walking every pod made each
//! create-agent cost O(pods). [`PodTable`] keeps the names of the pods that are *not*
//! settled in step with every change to a record ([`PodTable::update`], `insert`, `remove`)
//! and to the server's agents ([`PodTable::set_agents`], which looks only at the agents
//! whose listing changed), so those walks cost O(pods not settled), in the same name order
//! as a walk over every pod.
//!
//! The naive reference is the filter over every record ([`PodTable::unsettled_naive`]);
//! debug builds compare the two at every walk, and `pod_table_tests.rs` drives both with
//! random changes.

use super::view::{PodRecord, agent_may_be_building};
use crate::allocator::{AgentList, AgentMetadata};
use crate::resources::PodPhase;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The view's pod records by name, the server's agents as last listed, and the names of the
/// pods not settled.
#[derive(Debug, Default)]
pub(crate) struct PodTable {
    records: BTreeMap<String, PodRecord>,
    /// The agent listing the index was computed with (the decision's `Agents`).
    agents: AgentList,
    /// Names of the records for which [`is_settled`] is false.
    unsettled: BTreeSet<String>,
}

/// The pod is healthy, Running, not being undone, and its agent may be building: no
/// decision of `safe` picks, reaps, marks or counts it (the module comment says why).
pub(crate) fn is_settled(record: &PodRecord, agent: Option<&AgentMetadata>) -> bool {
    record.pod.phase == PodPhase::Running
        && record.pod.restart_count == 0
        && !record.retired
        && !record.delete_in_flight
        && agent.is_some_and(agent_may_be_building)
}

impl PodTable {
    /// The record of this pod.
    pub(crate) fn get(&self, name: &str) -> Option<&PodRecord> {
        self.records.get(name)
    }

    /// True when the view has this pod.
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.records.contains_key(name)
    }

    /// How many pods the view has.
    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// True when the view has no pod.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Every pod, in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &PodRecord)> {
        self.records.iter()
    }

    /// Every record by name (for comparing two views).
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn records(&self) -> &BTreeMap<String, PodRecord> {
        &self.records
    }

    /// The pods that are not settled, in name order: every pod a decision made with
    /// `agents` can pick, reap, mark or count. `agents` is the listing last given to
    /// [`PodTable::set_agents`].
    pub(crate) fn unsettled<'a>(
        &'a self,
        agents: &AgentList,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        debug_assert!(
            self.agents.is_same(agents),
            "the index was computed with another agent listing"
        );
        #[cfg(debug_assertions)]
        assert!(
            self.unsettled == self.unsettled_naive(),
            "the unsettled index differs from a walk over every pod"
        );
        self.unsettled
            .iter()
            .map(|name| (name, &self.records[name]))
    }

    /// The naive reference: the names of the records that are not settled.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn unsettled_naive(&self) -> BTreeSet<String> {
        self.records
            .iter()
            .filter(|(name, record)| !is_settled(record, self.agent(name)))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// How many pods are not Running (an unsettled pod is Running, whatever its agent).
    pub(crate) fn not_running_count(&self) -> usize {
        #[cfg(debug_assertions)]
        assert!(self.unsettled == self.unsettled_naive());
        let not_running = |name: &String| self.records[name].pod.phase != PodPhase::Running;
        self.unsettled
            .iter()
            .filter(|name| not_running(name))
            .count()
    }

    /// Take in the server's agents as listed now; only the agents that changed since the
    /// last listing are looked at again.
    pub(crate) fn set_agents(&mut self, agents: AgentList) {
        let changed: Vec<String> = agents
            .changed_names(&self.agents)
            .into_iter()
            .filter(|name| self.records.contains_key(*name))
            .map(str::to_owned)
            .collect();
        self.agents = agents;
        for name in changed {
            let settled = is_settled(&self.records[&name], self.agent(&name));
            self.index(&name, settled);
        }
    }

    /// Change one record; the index follows. `None` when the view has no such pod.
    pub(crate) fn update<R>(
        &mut self,
        name: &str,
        change: impl FnOnce(&mut PodRecord) -> R,
    ) -> Option<R> {
        let record = self.records.get_mut(name)?;
        let result = change(record);
        let settled = is_settled(record, self.agents.get(name).map(Arc::as_ref));
        self.index(name, settled);
        Some(result)
    }

    /// Add or replace a record.
    pub(crate) fn insert(&mut self, name: String, record: PodRecord) {
        let settled = is_settled(&record, self.agent(&name));
        self.index(&name, settled);
        self.records.insert(name, record);
    }

    /// Drop a record.
    pub(crate) fn remove(&mut self, name: &str) {
        self.records.remove(name);
        self.unsettled.remove(name);
    }

    /// Replace every record at once (the naive merge); the index is rebuilt.
    #[cfg(test)]
    pub(crate) fn replace_all(&mut self, records: BTreeMap<String, PodRecord>) {
        self.records = records;
        self.unsettled = self.unsettled_naive();
    }

    fn agent(&self, name: &str) -> Option<&AgentMetadata> {
        self.agents.get(name).map(Arc::as_ref)
    }

    fn index(&mut self, name: &str, settled: bool) {
        if settled {
            self.unsettled.remove(name);
        } else if !self.unsettled.contains(name) {
            self.unsettled.insert(name.to_owned());
        }
    }
}
