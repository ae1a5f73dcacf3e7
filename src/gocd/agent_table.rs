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
//! ordered map walked a tree: the server looks an agent up at every ping and, at every
//! hung-job check, for every assigned job), and in id order through an ordered map of slots,
//! for the walks that go over every agent.
//!
//! The naive reference is the metadata built from every record ([`AgentTable::list`]); debug
//! builds compare the two at every listing, and the tests below drive both with random
//! changes (the index itself has its own equivalence test against an ordered map).

use super::database::AgentRecord;
use crate::allocator::{AgentList, AgentMetadata, AgentState, BuildState, ConfigState};
use crate::ids::{NameIndex, NameKey, Probe};
use crate::trace::AgentRuntime;
use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Registered agents by elastic agent id, and their metadata as a listing.
#[derive(Debug, Default)]
pub struct AgentTable {
    /// Each registered agent's id and record; `None` for a free slot.
    slots: Vec<Option<(NameKey, AgentRecord)>>,
    /// Free slots, reused last-freed first.
    free: Vec<u32>,
    /// Slots by id, for lookups.
    by_name: NameIndex,
    /// Slots in id order, for walks.
    in_order: BTreeMap<NameKey, u32>,
    listing: AgentList,
}

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

/// True when `slot` holds the agent `probe` names.
fn slot_is(slots: &[Option<(NameKey, AgentRecord)>], slot: u32, probe: &Probe<'_>) -> bool {
    slots[slot as usize]
        .as_ref()
        .is_some_and(|(key, _)| key.is(probe))
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

    fn entry(&self, slot: u32) -> (&NameKey, &AgentRecord) {
        let (key, record) = self.slots[slot as usize]
            .as_ref()
            .expect("an indexed slot is full");
        (key, record)
    }

    /// The record of agent `id`.
    pub fn get(&self, id: &(impl Borrow<str> + ?Sized)) -> Option<&AgentRecord> {
        let slot = self.slot_of(id.borrow())?;
        Some(self.entry(slot).1)
    }

    /// True when agent `id` is registered.
    pub fn contains_key(&self, id: &(impl Borrow<str> + ?Sized)) -> bool {
        self.slot_of(id.borrow()).is_some()
    }

    /// Every agent, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (&NameKey, &AgentRecord)> {
        self.in_order.values().map(|&slot| self.entry(slot))
    }

    /// Change the record of agent `id`; the listing follows. `None` when it is not registered.
    pub fn update<R>(
        &mut self,
        id: &(impl Borrow<str> + ?Sized),
        change: impl FnOnce(&mut AgentRecord) -> R,
    ) -> Option<R> {
        self.update_if(id.borrow(), |_| true, change)
    }

    /// Change the record of agent `id` if it is the registration `uuid` (a request from an
    /// older incarnation of the agent finds none); the listing follows.
    pub fn update_registered<R>(
        &mut self,
        id: &NameKey,
        uuid: u64,
        change: impl FnOnce(&mut AgentRecord) -> R,
    ) -> Option<R> {
        self.update_if(id.as_str(), |agent| agent.uuid == uuid, change)
    }

    fn update_if<R>(
        &mut self,
        id: &str,
        wanted: impl FnOnce(&AgentRecord) -> bool,
        change: impl FnOnce(&mut AgentRecord) -> R,
    ) -> Option<R> {
        let slot = self.slot_of(id)?;
        let (key, record) = self.slots[slot as usize]
            .as_mut()
            .expect("an indexed slot is full");
        if !wanted(record) {
            return None;
        }
        let before = listed_fields(record);
        let result = change(record);
        if listed_fields(record) != before {
            relist(&mut self.listing, key, record);
        }
        Some(result)
    }

    /// Change every record, in id order; the listing follows.
    pub fn update_all(&mut self, mut change: impl FnMut(&NameKey, &mut AgentRecord)) {
        for &slot in self.in_order.values() {
            let (key, record) = self.slots[slot as usize]
                .as_mut()
                .expect("an indexed slot is full");
            let before = listed_fields(record);
            change(key, record);
            if listed_fields(record) != before {
                relist(&mut self.listing, key, record);
            }
        }
    }

    /// Register an agent (replacing any record under the same id).
    pub fn insert(&mut self, key: NameKey, record: AgentRecord) {
        self.listing.put(Arc::new(metadata(&key, &record)));
        if let Some(slot) = self.slot_of(key.as_str()) {
            self.slots[slot as usize] = Some((key, record));
            return;
        }
        let slot = match self.free.pop() {
            Some(slot) => slot,
            None => {
                self.slots.push(None);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 agents")
            }
        };
        self.by_name.insert(key.as_str(), slot);
        self.in_order.insert(key.clone(), slot);
        self.slots[slot as usize] = Some((key, record));
    }

    /// Forget agent `id`; true when it was registered.
    pub fn remove(&mut self, id: &str) -> bool {
        self.listing.remove(id);
        let (slots, probe) = (&self.slots, Probe::new(id));
        let Some(slot) = self.by_name.remove(id, |slot| slot_is(slots, slot, &probe)) else {
            return false;
        };
        self.in_order.remove(id);
        self.slots[slot as usize] = None;
        self.free.push(slot);
        true
    }

    /// The agents' metadata as a shared listing (a clone costs O(1)).
    pub fn listing(&self) -> AgentList {
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

    fn step(random: &mut Stream, table: &mut AgentTable) {
        let id = format!("k8s-ea-0000-{:03}", random.below(40));
        let runtimes = [
            AgentRuntime::Idle,
            AgentRuntime::Building,
            AgentRuntime::Missing,
            AgentRuntime::LostContact,
        ];
        let runtime = runtimes[random.below(4) as usize];
        match random.below(8) {
            // The server registers an id only while it is free.
            0 if !table.contains_key(id.as_str()) => {
                table.insert(NameKey::from(id.as_str()), record(random.below(9)));
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
                table.update(id.as_str(), |agent| agent.last_heard_ms += 1);
            }
            6 => table.update_all(|_, agent| {
                if agent.runtime != AgentRuntime::Building {
                    agent.runtime = runtime;
                }
            }),
            _ => table.update_all(|_, agent| agent.job = Some(3)),
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
