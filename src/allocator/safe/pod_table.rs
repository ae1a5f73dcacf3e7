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
//! The unsettled pods are kept in two disjoint sets: *idle* ones (healthy as above, their
//! agent assignable) and the *others*. A healthy pod with an assignable agent is never reaped
//! (nothing is wrong with it), so the reaper and the other walks that only look for trouble
//! (a delete in flight, a pod not Running) go over the others alone.
//!
//! Reuse looks up the idle pods made for the job's config hash and environment, filed by
//! config beside them.
//!
//! The records themselves are found by hash ([`NameMap`]): a create-agent looks up every
//! pod its list changed, and a server-ping every agent, so an ordered map's walk down its
//! tree (reading a key's text at each level) cost a cache miss per level in a large cluster.
//! The names are kept in order beside them for the walks over every pod.
//!
//! The naive reference is the filter over every record by class ([`PodTable::naive`]);
//! debug builds compare the two at every walk, and `safe::tests::pod_table` drives both with
//! random changes.

use super::view::{PodRecord, agent_is_assignable, agent_may_be_building};
use super::walk_index::{WalkIndex, is_idle, without_pod_naive};
use crate::allocator::{AgentList, AgentMetadata};
use crate::ids::SortedNameMap;
use crate::resources::{Pod, PodPhase};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// The view's pod records by name, the server's agents as last listed, and the unsettled
/// pods by class.
#[derive(Debug, Default)]
pub(crate) struct PodTable {
    /// The records, found by hash (a decision looks pods up by name many times per call)
    /// and listed in name order (for the walks over every pod).
    records: SortedNameMap<PodRecord>,
    /// The agent listing the index was computed with (the decision's `Agents`).
    agents: AgentList,
    index: ClassIndex,
    /// What four walks look for (`walk_index.rs`).
    walks: WalkIndex,
}

/// The config hash and environment a pod was made for.
type ConfigKey = (Option<String>, Option<String>);

/// The unsettled pods: the idle ones with the config each was made for (and again by config,
/// what reuse matches on), and the others.
#[derive(Debug, Default)]
struct ClassIndex {
    /// [`Class::Idle`] pods and their config.
    idle: BTreeMap<String, ConfigKey>,
    /// The same pods by config.
    idle_by_config: BTreeMap<ConfigKey, BTreeSet<String>>,
    /// [`Class::Other`] pods.
    other: BTreeSet<String>,
}

impl ClassIndex {
    /// File the pod under its class (and, when idle, under its config).
    fn file(&mut self, name: &str, class: Class, record: &PodRecord) {
        if class == Class::Other {
            if !self.other.contains(name) {
                self.other.insert(name.to_owned());
            }
        } else {
            self.other.remove(name);
        }
        let filed = self.idle.get(name);
        let unchanged = match (filed, class == Class::Idle) {
            (Some((hash, environment)), true) => {
                hash.as_deref() == record.config_hash()
                    && environment.as_deref() == record.environment()
            }
            (None, false) => true,
            _ => false,
        };
        if unchanged {
            return;
        }
        self.unfile_idle(name);
        if class == Class::Idle {
            let key = config_key(record);
            let bucket = self.idle_by_config.entry(key.clone()).or_default();
            bucket.insert(name.to_owned());
            self.idle.insert(name.to_owned(), key);
        }
        debug_assert!(
            !(self.idle.contains_key(name) && self.other.contains(name)),
            "pod {name} is filed both idle and other"
        );
    }

    /// The pod is gone.
    fn forget(&mut self, name: &str) {
        self.other.remove(name);
        self.unfile_idle(name);
    }

    fn unfile_idle(&mut self, name: &str) {
        let Some(key) = self.idle.remove(name) else {
            return;
        };
        let bucket = self
            .idle_by_config
            .get_mut(&key)
            .expect("an idle pod is in its config's bucket");
        bucket.remove(name);
        if bucket.is_empty() {
            self.idle_by_config.remove(&key);
        }
    }
}

fn config_key(record: &PodRecord) -> ConfigKey {
    (
        record.config_hash().map(str::to_owned),
        record.environment().map(str::to_owned),
    )
}

/// Which walks a pod takes part in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// Healthy and building at the server: no walk.
    Settled,
    /// Healthy and idle at the server: the walks for idle pods, reservations and reuse.
    Idle,
    /// Anything else: every walk, the reaper's included.
    Other,
}

/// The walks the pod takes part in, from its record and its agent at the server: it is
/// settled when Running, never restarted, not being undone and its agent may be building;
/// no decision of `safe` picks, reaps, marks or counts it (the module comment says why).
pub(crate) fn class(record: &PodRecord, agent: Option<&AgentMetadata>) -> Class {
    let healthy = record.pod.phase == PodPhase::Running
        && record.pod.restart_count == 0
        && !record.retired
        && !record.delete_in_flight;
    match agent {
        Some(agent) if healthy && agent_may_be_building(agent) => Class::Settled,
        Some(agent) if healthy && agent_is_assignable(agent) => Class::Idle,
        _ => Class::Other,
    }
}

impl PodTable {
    /// The record of this pod.
    pub(crate) fn get(&self, name: &str) -> Option<&PodRecord> {
        self.records.get(name)
    }

    /// The record of a pod the view has (a name from one of its walks).
    fn record(&self, name: &str) -> &PodRecord {
        self.records
            .get(name)
            .expect("a walk names pods the view has")
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
        self.records.len() == 0
    }

    /// Every pod, in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &PodRecord)> {
        self.records.iter()
    }

    /// Every record by name (for comparing two views).
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn records(&self) -> BTreeMap<String, PodRecord> {
        (self.iter())
            .map(|(name, record)| (name.clone(), record.clone()))
            .collect()
    }

    /// The pods that are not settled, in name order: every pod a decision made with
    /// `agents` can pick, reap, mark or count. `agents` is the listing last given to
    /// [`PodTable::set_agents`].
    pub(crate) fn unsettled<'a>(
        &'a self,
        agents: &AgentList,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.check(agents);
        let index = &self.index;
        let (mut idle, mut other) = (index.idle.keys().peekable(), index.other.iter().peekable());
        // The two sets are disjoint: merge them in name order.
        std::iter::from_fn(move || match (idle.peek(), other.peek()) {
            (Some(a), Some(b)) if a < b => idle.next(),
            (Some(_), Some(_)) | (None, _) => other.next(),
            (Some(_), None) => idle.next(),
        })
        .map(|name| (name, self.record(name)))
    }

    /// The unsettled pods that are not idle and healthy, in name order: every pod the reaper
    /// or a search for trouble (a delete in flight, a pod not Running) can find.
    pub(crate) fn troubled<'a>(
        &'a self,
        agents: &AgentList,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.check(agents);
        (self.index.other.iter()).map(|name| (name, self.record(name)))
    }

    /// The idle pods made for this config hash and environment, in name order: every pod
    /// reuse can pick for a job of that config (a candidate is healthy, its agent assignable,
    /// and made for the job's config and environment).
    pub(crate) fn idle_like<'a>(
        &'a self,
        agents: &AgentList,
        config_hash: &str,
        environment: Option<&str>,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.check(agents);
        let key = (Some(config_hash.to_owned()), environment.map(str::to_owned));
        let names = self.index.idle_by_config.get(&key).into_iter().flatten();
        #[cfg(debug_assertions)]
        {
            let naive = self.index.idle.iter().filter(|(_, filed)| **filed == key);
            assert!(
                names.clone().eq(naive.map(|(name, _)| name)),
                "the idle pods by config differ from a walk"
            );
        }
        names.map(|name| (name, self.record(name)))
    }

    /// Debug builds: the index was computed with `agents` and equals the naive walk.
    fn check(&self, agents: &AgentList) {
        debug_assert!(
            self.agents.is_same(agents),
            "the index was computed with another agent listing"
        );
        #[cfg(debug_assertions)]
        assert!(
            self.index.idle.keys().eq(&self.naive(Class::Idle))
                && self.index.other == self.naive(Class::Other),
            "the unsettled index differs from a walk over every pod"
        );
    }

    /// The naive reference: the names of the records that are not settled.
    #[cfg(test)]
    pub(crate) fn unsettled_naive(&self) -> BTreeSet<String> {
        let mut names = self.naive(Class::Idle);
        names.extend(self.naive(Class::Other));
        names
    }

    /// The naive reference: the names of the records of one class.
    #[cfg(any(test, debug_assertions))]
    pub(crate) fn naive(&self, wanted: Class) -> BTreeSet<String> {
        self.iter()
            .filter(|(name, record)| class(record, self.agent(name)) == wanted)
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// How many pods are not Running (an idle or settled pod is Running, whatever its agent).
    pub(crate) fn not_running_count(&self) -> usize {
        #[cfg(debug_assertions)]
        assert!(self.index.other == self.naive(Class::Other));
        let not_running = |name: &String| self.record(name).pod.phase != PodPhase::Running;
        (self.index.other.iter())
            .filter(|name| not_running(name))
            .count()
    }

    /// The agents `agents` lists that no pod record is named for, in name order (the
    /// agents of pods that are gone). `agents` is the listing last given to
    /// [`PodTable::set_agents`].
    pub(crate) fn agents_without_pods<'a>(
        &'a self,
        agents: &AgentList,
    ) -> impl Iterator<Item = &'a String> {
        self.check(agents);
        let naive = || without_pod_naive(agents, |name| self.contains_key(name));
        self.vouch(self.walks.without_pod(), naive, "the agents without pods")
    }

    /// The pods whose idle-since this process set but the pod does not carry
    /// ([`PodRecord::unwritten_idle_since_ms`]), with that time, in name order.
    pub(crate) fn unwritten_idle_since(&self) -> impl Iterator<Item = (&String, u64)> {
        let naive = || {
            (self.iter())
                .filter(|(_, record)| record.unwritten_idle_since_ms().is_some())
                .map(|(name, _)| name.clone())
                .collect()
        };
        let found = self.vouch(self.walks.unwritten(), naive, "the unwritten idle-since");
        found.map(|name| {
            let record = self.record(name);
            let time = record.unwritten_idle_since_ms();
            (name, time.expect("the index holds unwritten times only"))
        })
    }

    /// The idle pods ([`is_idle`]) with no idle-since, in name order (none is settled: a
    /// settled pod's agent may be building, so it is not idle).
    pub(crate) fn unmarked_idle<'a>(
        &'a self,
        agents: &AgentList,
    ) -> impl Iterator<Item = &'a String> {
        let naive = || {
            (self.iter())
                .filter(|(name, record)| {
                    record.idle_since_ms().is_none() && is_idle(record, self.agent(name))
                })
                .map(|(name, _)| name.clone())
                .collect()
        };
        self.check(agents);
        let what = "the idle pods without idle-since";
        self.vouch(self.walks.unmarked(), naive, what)
    }

    /// `found`, an index's answer, after checking in debug builds that it names what the
    /// walk it replaces (`naive`) does.
    fn vouch<'a, I: Iterator<Item = &'a String> + Clone>(
        &self,
        found: I,
        naive: impl FnOnce() -> Vec<String>,
        what: &str,
    ) -> I {
        if cfg!(debug_assertions) {
            assert!(found.clone().eq(&naive()), "{what} differ from a walk");
        }
        found
    }

    /// The pods not settled whose claim (live or not) names `job`, in name order: every pod
    /// a search for the job's reserved pod can find.
    pub(crate) fn claiming<'a>(
        &'a self,
        agents: &AgentList,
        job: u64,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.check(agents);
        let unsettled = |name: &&String| {
            self.index.idle.contains_key(name.as_str()) || self.index.other.contains(name.as_str())
        };
        let naive = || {
            (self.unsettled(agents))
                .filter(|(_, record)| record.claim().is_some_and(|claim| claim.job_id == job))
                .map(|(name, _)| name.clone())
                .collect()
        };
        let found = self.walks.claiming(job).filter(unsettled);
        (self.vouch(found, naive, "the pods claiming the job"))
            .map(|name| (name, self.record(name)))
    }

    /// Take in the server's agents as listed now; only the agents that changed since the
    /// last listing are looked at again. Returns their names.
    pub(crate) fn set_agents(&mut self, agents: AgentList) -> Vec<String> {
        let changed: Vec<String> = (agents.changed_names(&self.agents).into_iter())
            .map(str::to_owned)
            .collect();
        self.agents = agents;
        for name in &changed {
            let name = name.as_str();
            let agent = self.agents.get(name).map(Arc::as_ref);
            match self.records.get(name) {
                Some(record) => {
                    self.index.file(name, class(record, agent), record);
                    self.walks.record_changed(name, record, agent);
                }
                None => self.walks.agent_changed(name, agent.is_some()),
            }
        }
        changed
    }

    /// Change one record; the index follows. `None` when the view has no such pod.
    pub(crate) fn update<R>(
        &mut self,
        name: &str,
        change: impl FnOnce(&mut PodRecord) -> R,
    ) -> Option<R> {
        let record = self.records.get_mut(name)?;
        let result = change(record);
        let agent = self.agents.get(name).map(Arc::as_ref);
        self.index.file(name, class(record, agent), record);
        self.walks.record_changed(name, record, agent);
        Some(result)
    }

    /// Take in a copy of a pod: the record keeps the newer copy (`PodRecord::take_newer`),
    /// or a pod the view did not have gets a record.
    pub(crate) fn take_in(&mut self, pod: Arc<Pod>) {
        if self.records.contains_key(&pod.name) {
            let copy = Arc::clone(&pod);
            self.update(&copy.name, |record| record.take_newer(pod));
        } else {
            self.insert(pod.name.clone(), PodRecord::new(pod));
        }
    }

    /// Add or replace a record.
    pub(crate) fn insert(&mut self, name: String, record: PodRecord) {
        let agent = self.agents.get(&name).map(Arc::as_ref);
        self.index.file(&name, class(&record, agent), &record);
        self.walks.record_added(&name, &record, agent);
        self.records.insert(name, record);
        self.debug_check_index_size();
    }

    /// Drop a record.
    pub(crate) fn remove(&mut self, name: &str) {
        if self.records.remove(name).is_some() {
            (self.walks).record_dropped(name, self.agents.get(name).is_some());
        }
        self.index.forget(name);
        self.debug_check_index_size();
    }

    /// The class index files only pods that have a record, each in one class.
    fn debug_check_index_size(&self) {
        let filed = self.index.idle.len() + self.index.other.len();
        debug_assert!(
            filed <= self.records.len(),
            "the class index holds pods without records"
        );
        debug_assert_eq!(
            self.index.idle.len(),
            self.index
                .idle_by_config
                .values()
                .map(BTreeSet::len)
                .sum::<usize>(),
            "the idle pods and their buckets by config differ"
        );
    }

    /// Replace every record at once (the naive merge); the index is rebuilt.
    #[cfg(test)]
    pub(crate) fn replace_all(&mut self, records: BTreeMap<String, PodRecord>) {
        self.records = SortedNameMap::default();
        self.index = ClassIndex::default();
        self.walks = WalkIndex::default();
        for agent in self.agents.iter() {
            (self.walks).agent_changed(&agent.agent_id, true);
        }
        for (name, record) in records {
            self.insert(name, record);
        }
    }

    fn agent(&self, name: &str) -> Option<&AgentMetadata> {
        self.agents.get(name).map(Arc::as_ref)
    }
}
