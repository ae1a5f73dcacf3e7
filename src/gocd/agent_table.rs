//! The server's registered agents, with their listing kept in step.
//!
//! The plugin asks for the agents at every create-agent and server-ping. Building that answer
//! afresh cost O(agents) each time, and comparing it with the previous answer as much again.
//! [`AgentTable`] keeps the records and, beside them, the v5 metadata of every agent as a
//! shared [`AgentList`]: every change to a record goes through the table, which relists the
//! agent when its metadata changed, so `agent_listing` hands over a clone in O(1) and a
//! client diffs it against its previous one by the chunks written since.
//!
//! The records live in slots found by name through a [`NameIndex`] (one probe, where an
//! ordered map walked a tree: get-work, assignments and the plugin's calls look agents up by
//! name), by [`AgentId`] through a vector of slots (an agent's own requests, every agent
//! pinging every 5 s, and the hung-job check), and in id order through an ordered map of
//! slots, for the walks that go over every agent. Debug builds check every lookup by number
//! against the slot's own number.
//!
//! The liveness refresh (every 5 s) looks for the agents gone silent. Walking every record in
//! id order for that read two cold cache lines per agent; the table keeps each slot's
//! last-heard time beside the records instead (`heard`), so the refresh reads one dense vector
//! and touches only the records it changes ([`AgentTable::update_silent`]).
//!
//! The naive reference is the metadata built from every record ([`AgentTable::list`]); debug
//! builds compare the two at every listing, and the silent agents with the walk at every
//! refresh; the tests below drive both with random changes (the index itself has its own
//! equivalence test against an ordered map).

use super::database::AgentRecord;
use super::protocol::AgentId;
use crate::allocator::{AgentList, AgentMetadata, AgentState, BuildState, ConfigState};
use crate::ids::{NameIndex, NameKey, Named, Probe, slot_is};
use crate::trace::AgentRuntime;
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Registered agents by elastic agent id, and their metadata as a listing.
#[derive(Debug, Default)]
pub struct AgentTable {
    /// Each registered agent's record and id; `None` for a free slot.
    slots: Vec<Option<Entry>>,
    /// Free slots, reused last-freed first.
    free: Vec<u32>,
    /// Slots by id, for lookups.
    by_name: NameIndex,
    /// Each slot's agent number (meaningless for a free slot).
    numbers: Vec<AgentId>,
    /// Slots by agent number, `NO_SLOT` for an agent not registered.
    by_number: Vec<u32>,
    /// Slots in id order, for walks.
    in_order: BTreeMap<NameKey, u32>,
    /// Each slot's `last_heard_ms` while its agent can go silent; `u64::MAX` for an agent
    /// already LostContact and for a free slot (`heard_key`).
    heard: Vec<u64>,
    listing: AgentList,
}

/// A registered agent's slot: its record and its id.
#[derive(Debug)]
struct Entry {
    record: AgentRecord,
    key: NameKey,
}

impl Named for Entry {
    fn name_key(&self) -> &NameKey {
        &self.key
    }
}

/// What `heard` holds for a record: an agent already LostContact cannot go silent again.
fn heard_key(record: &AgentRecord) -> u64 {
    if record.runtime == AgentRuntime::LostContact {
        u64::MAX
    } else {
        record.last_heard_ms
    }
}

/// No slot: the agent number is not registered.
const NO_SLOT: u32 = u32::MAX;

/// The v5 agent metadata of the registered agent `id`.
pub(super) fn metadata(id: &NameKey, agent: &AgentRecord) -> AgentMetadata {
    let (agent_state, build_state) = match agent.runtime {
        AgentRuntime::Idle => (AgentState::Idle, BuildState::Idle),
        AgentRuntime::Building if agent.cancelling.is_some() => {
            (AgentState::Building, BuildState::Cancelled)
        }
        AgentRuntime::Building => (AgentState::Building, BuildState::Building),
        AgentRuntime::Missing => (AgentState::Missing, BuildState::Unknown),
        AgentRuntime::LostContact => (AgentState::LostContact, BuildState::Unknown),
    };
    let config_state = if agent.enabled {
        ConfigState::Enabled
    } else {
        ConfigState::Disabled
    };
    AgentMetadata {
        agent_id: Arc::clone(id.shared()),
        agent_state,
        build_state,
        config_state,
    }
}

/// The fields of a record its metadata is made of.
fn listed_fields(agent: &AgentRecord) -> (AgentRuntime, bool, bool) {
    (agent.runtime, agent.cancelling.is_some(), agent.enabled)
}

/// List the agent's metadata again if it differs from the listed copy (a field can change
/// without changing the metadata: `cancelling` shows only while the agent builds).
fn relist(listing: &mut AgentList, key: &NameKey, record: &AgentRecord) {
    let fresh = metadata(key, record);
    if listing
        .get(key.as_str())
        .is_none_or(|listed| **listed != fresh)
    {
        listing.put(Arc::new(fresh));
    }
}

impl AgentTable {
    /// The slot of agent `id`.
    fn slot_of(&self, id: &str) -> Option<u32> {
        let probe = Probe::new(id);
        let found = self
            .by_name
            .find(id, |slot| slot_is(&self.slots, slot, &probe));
        debug_assert_eq!(found, self.in_order.get(id).copied(), "agent {id}");
        found
    }

    /// The slot of the agent numbered `agent`.
    fn slot_of_number(&self, agent: AgentId) -> Option<u32> {
        let slot = self
            .by_number
            .get(agent.0 as usize)
            .copied()
            .filter(|&slot| slot != NO_SLOT);
        debug_assert!(
            slot.is_none_or(|slot| self.numbers[slot as usize] == agent),
            "{agent:?}"
        );
        slot
    }

    /// The number of registered agent `id`.
    pub(crate) fn number_of(&self, id: &str) -> Option<AgentId> {
        Some(self.numbers[self.slot_of(id)? as usize])
    }

    /// The id and record of the agent numbered `agent`.
    pub(crate) fn get_by_number(&self, agent: AgentId) -> Option<(&NameKey, &AgentRecord)> {
        Some(self.entry(self.slot_of_number(agent)?))
    }

    fn entry(&self, slot: u32) -> (&NameKey, &AgentRecord) {
        let entry = self.slots[slot as usize]
            .as_ref()
            .expect("an indexed slot is full");
        (&entry.key, &entry.record)
    }

    /// The record of agent `id`.
    pub(crate) fn get(&self, id: &(impl Borrow<str> + ?Sized)) -> Option<&AgentRecord> {
        let slot = self.slot_of(id.borrow())?;
        Some(self.entry(slot).1)
    }

    /// True when agent `id` is registered.
    pub(crate) fn contains_key(&self, id: &(impl Borrow<str> + ?Sized)) -> bool {
        self.slot_of(id.borrow()).is_some()
    }

    /// Every agent, in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&NameKey, &AgentRecord)> {
        self.in_order.values().map(|&slot| self.entry(slot))
    }

    /// Change the record of agent `id`; the listing follows. `None` when it is not registered.
    pub(crate) fn update<R>(
        &mut self,
        id: &(impl Borrow<str> + ?Sized),
        change: impl FnOnce(&mut AgentRecord) -> R,
    ) -> Option<R> {
        self.update_if(id.borrow(), |_| true, change)
    }

    /// Change the record of the agent numbered `agent` if it is the registration `uuid` (a
    /// request from an older incarnation of the agent finds none); the listing follows.
    /// `change` also sees the agent's id.
    pub(crate) fn update_registered<R>(
        &mut self,
        agent: AgentId,
        uuid: u64,
        change: impl FnOnce(&NameKey, &mut AgentRecord) -> R,
    ) -> Option<R> {
        let slot = self.slot_of_number(agent)?;
        self.update_slot(slot, |agent| agent.uuid == uuid, change)
    }

    fn update_if<R>(
        &mut self,
        id: &str,
        wanted: impl FnOnce(&AgentRecord) -> bool,
        change: impl FnOnce(&mut AgentRecord) -> R,
    ) -> Option<R> {
        let slot = self.slot_of(id)?;
        self.update_slot(slot, wanted, |_, record| change(record))
    }

    fn update_slot<R>(
        &mut self,
        slot: u32,
        wanted: impl FnOnce(&AgentRecord) -> bool,
        change: impl FnOnce(&NameKey, &mut AgentRecord) -> R,
    ) -> Option<R> {
        let Entry { record, key } = self.slots[slot as usize]
            .as_mut()
            .expect("an indexed slot is full");
        if !wanted(record) {
            return None;
        }
        let before = listed_fields(record);
        let result = change(key, record);
        if listed_fields(record) != before {
            relist(&mut self.listing, key, record);
        }
        self.heard[slot as usize] = heard_key(record);
        Some(result)
    }

    /// Change every record, in id order; the listing follows.
    pub(crate) fn update_all(&mut self, mut change: impl FnMut(&NameKey, &mut AgentRecord)) {
        let in_order: Vec<u32> = self.in_order.values().copied().collect();
        for slot in in_order {
            self.update_slot(slot, |_| true, &mut change);
        }
    }

    /// Change every agent last heard from before `heard_before_ms` and not LostContact, in id
    /// order; the listing follows. Reads `heard`, not the records.
    pub(crate) fn update_silent(
        &mut self,
        heard_before_ms: u64,
        mut change: impl FnMut(&NameKey, &mut AgentRecord),
    ) {
        let mut silent: Vec<u32> = (self.heard.iter().enumerate())
            .filter(|&(_, &heard_ms)| heard_ms < heard_before_ms)
            .map(|(slot, _)| u32::try_from(slot).expect("fewer than 2^32 agents"))
            .collect();
        silent.sort_unstable_by(|&a, &b| self.entry(a).0.cmp(self.entry(b).0));
        #[cfg(debug_assertions)]
        assert!(
            silent.iter().map(|&slot| self.entry(slot).0).eq(self
                .iter()
                .filter(|(_, agent)| agent.runtime != AgentRuntime::LostContact
                    && agent.last_heard_ms < heard_before_ms)
                .map(|(key, _)| key)),
            "the silent agents differ from a walk over every record"
        );
        for slot in silent {
            self.update_slot(slot, |_| true, &mut change);
        }
    }

    /// Register agent `key`, numbered `agent` (replacing any record under the same id).
    pub(crate) fn insert(&mut self, key: NameKey, agent: AgentId, record: AgentRecord) {
        self.listing.put(Arc::new(metadata(&key, &record)));
        let slot = match self.slot_of(key.as_str()) {
            Some(slot) => slot,
            None => {
                let slot = self.free.pop().unwrap_or_else(|| {
                    self.slots.push(None);
                    self.numbers.push(agent);
                    self.heard.push(u64::MAX);
                    u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 agents")
                });
                self.by_name.insert(key.as_str(), slot);
                self.in_order.insert(key.clone(), slot);
                slot
            }
        };
        self.heard[slot as usize] = heard_key(&record);
        self.slots[slot as usize] = Some(Entry { record, key });
        self.number_slot(slot, agent);
        self.debug_check_slots();
    }

    /// Every slot is either held by an agent (in id order) or free, never both.
    fn debug_check_slots(&self) {
        let held = self.in_order.len() + self.free.len();
        debug_assert_eq!(
            held,
            self.slots.len(),
            "a slot is both held and free, or lost"
        );
    }

    /// `slot` holds the agent numbered `agent`.
    fn number_slot(&mut self, slot: u32, agent: AgentId) {
        let at = agent.0 as usize;
        if at >= self.by_number.len() {
            self.by_number.resize(at + 1, NO_SLOT);
        }
        let previous = std::mem::replace(&mut self.numbers[slot as usize], agent);
        if previous != agent && self.by_number.get(previous.0 as usize) == Some(&slot) {
            self.by_number[previous.0 as usize] = NO_SLOT;
        }
        self.by_number[at] = slot;
    }

    /// Forget agent `id`; true when it was registered.
    pub(crate) fn remove(&mut self, id: &str) -> bool {
        self.listing.remove(id);
        let (slots, probe) = (&self.slots, Probe::new(id));
        let Some(slot) = self.by_name.remove(id, |slot| slot_is(slots, slot, &probe)) else {
            return false;
        };
        self.in_order.remove(id);
        let number = self.numbers[slot as usize].0 as usize;
        debug_assert_eq!(
            self.by_number[number], slot,
            "the number index names another slot"
        );
        self.slots[slot as usize] = None;
        self.heard[slot as usize] = u64::MAX;
        self.by_number[number] = NO_SLOT;
        self.free.push(slot);
        self.debug_check_slots();
        true
    }

    /// The agents' metadata as a shared listing (a clone costs O(1)).
    pub(crate) fn listing(&self) -> AgentList {
        #[cfg(debug_assertions)]
        assert!(
            self.listing
                .iter()
                .map(|agent| &**agent)
                .eq(self.list().iter()),
            "the agent listing differs from the records"
        );
        self.listing.clone()
    }

    /// The naive reference: every agent's metadata built from its record, in id order.
    pub fn list(&self) -> Vec<AgentMetadata> {
        self.iter().map(|(id, agent)| metadata(id, agent)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::AgentTable;
    use crate::allocator::AgentMetadata;
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use crate::gocd::database::AgentRecord;
    use crate::gocd::protocol::AgentId;
    use crate::ids::NameKey;
    use crate::trace::AgentRuntime;

    fn record(uuid: u64) -> AgentRecord {
        AgentRecord {
            uuid,
            environment: None,
            enabled: true,
            runtime: AgentRuntime::Idle,
            last_heard_ms: 0,
            job: None,
            cancelling: None,
        }
    }

    /// Agent `n` of the forty the tests use: its id and its number.
    fn agent(n: u64) -> (String, AgentId) {
        let number = AgentId(u32::try_from(n).expect("small"));
        (format!("k8s-ea-0000-{n:03}"), number)
    }

    fn step(random: &mut Stream, table: &mut AgentTable) {
        let (id, number) = agent(random.below(40));
        let runtimes = [
            AgentRuntime::Idle,
            AgentRuntime::Building,
            AgentRuntime::Missing,
            AgentRuntime::LostContact,
        ];
        let runtime = runtimes[random.below(4) as usize];
        match random.below(10) {
            // The server registers an id only while it is free.
            0 if !table.contains_key(id.as_str()) => {
                let key = NameKey::from(id.as_str());
                table.insert(key, number, record(random.below(9)));
            }
            0 | 1 => {
                table.remove(&id);
            }
            2 => {
                table.update(id.as_str(), |agent| agent.runtime = runtime);
            }
            3 => {
                let cancelling = (random.below(2) == 0).then_some(7);
                table.update(id.as_str(), |agent| agent.cancelling = cancelling);
            }
            4 => {
                table.update(id.as_str(), |agent| agent.enabled = !agent.enabled);
            }
            5 => {
                // A change outside the metadata: the listing must keep the same copy.
                let heard_ms = random.below(50);
                table.update(id.as_str(), |agent| agent.last_heard_ms = heard_ms);
            }
            6 => table.update_all(|_, agent| {
                if agent.runtime != AgentRuntime::Building {
                    agent.runtime = runtime;
                }
            }),
            // An agent's own request: by number, and only for its registration's uuid.
            7 => {
                let uuid = random.below(9);
                let changed = table.update_registered(number, uuid, |key, agent| {
                    assert_eq!(key.as_str(), id, "the number's agent");
                    agent.runtime = runtime;
                });
                let registered = table.get(id.as_str()).map(|agent| agent.uuid);
                assert_eq!(changed.is_some(), registered == Some(uuid), "{id}");
            }
            8 => table.update_all(|_, agent| agent.job = Some(3)),
            // The liveness refresh: exactly the agents a walk finds silent, in id order.
            _ => {
                let heard_before_ms = random.below(60);
                let expected: Vec<String> = (table.iter())
                    .filter(|(_, agent)| {
                        agent.runtime != AgentRuntime::LostContact
                            && agent.last_heard_ms < heard_before_ms
                    })
                    .map(|(key, _)| key.as_str().to_owned())
                    .collect();
                let mut changed = Vec::new();
                table.update_silent(heard_before_ms, |key, agent| {
                    changed.push(key.as_str().to_owned());
                    agent.runtime = AgentRuntime::LostContact;
                });
                assert_eq!(changed, expected, "silent before {heard_before_ms}");
            }
        }
    }

    /// Every number finds what its agent's id finds: the lookup by number follows inserts,
    /// removals and slots reused by other agents.
    fn numbers_agree_with_names(table: &AgentTable) {
        for n in 0..40 {
            let (id, number) = agent(n);
            let by_number = table.get_by_number(number);
            let by_name = table.get(id.as_str());
            let same_record = match (by_number, by_name) {
                (Some((_, a)), Some(b)) => std::ptr::eq(a, b),
                (a, b) => a.is_none() && b.is_none(),
            };
            assert!(
                same_record,
                "{id}: the number and the name find other records"
            );
            assert!(by_number.is_none_or(|(key, _)| key.as_str() == id), "{id}");
        }
    }

    #[test]
    fn the_listing_follows_every_change_and_relists_only_changed_agents() {
        let mut unchanged_kept = 0;
        for seed in 1..=16 {
            let mut random = Stream::new(seed, StreamId::Workload);
            let mut table = AgentTable::default();
            for n in 0..2000 {
                let before = table.listing.clone();
                let naive_before = table.list();
                step(&mut random, &mut table);
                numbers_agree_with_names(&table);
                let listed: Vec<AgentMetadata> = table
                    .listing
                    .iter()
                    .map(|agent| (**agent).clone())
                    .collect();
                assert_eq!(
                    listed,
                    table.list(),
                    "seed {seed}, step {n}: listing differs"
                );
                // Exactly the agents whose metadata changed are named by the diff.
                let naive_after = table.list();
                let mut changed: Vec<&str> = table.listing.changed_names(&before);
                changed.sort_unstable();
                let mut expected: Vec<&str> = naive_before
                    .iter()
                    .chain(naive_after.iter())
                    .map(|agent| &*agent.agent_id)
                    .filter(|id| {
                        let old = naive_before.iter().find(|a| &*a.agent_id == *id);
                        let new = naive_after.iter().find(|a| &*a.agent_id == *id);
                        old != new
                    })
                    .collect();
                expected.sort_unstable();
                expected.dedup();
                assert_eq!(changed, expected, "seed {seed}, step {n}: diff differs");
                unchanged_kept += naive_after.len() - changed.len().min(naive_after.len());
            }
        }
        assert!(
            unchanged_kept > 10_000,
            "the histories kept agents unchanged"
        );
    }
}
