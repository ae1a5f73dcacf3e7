//! Values by name, found by hash: the monitors' and the allocator's lookups by pod or agent
//! name, at a cost that does not grow with the number of names.
//!
//! An ordered map by `String` walks down its tree and reads a key's text at every
//! comparison; once thousands of pods no longer fit the caches, each of those reads is a
//! cache miss, and a monitor paid several per record. [`NameMap`] keeps each entry in a slot
//! with its name as a [`NameKey`] (whose head words tell short names apart without reading
//! the text) and finds the slot through a [`NameIndex`]: one probe, one slot, usually.
//!
//! Nothing a run decides may depend on where a hash lands, so the map has no iteration in
//! slot order: [`NameMap::sorted`] gives the entries in name order, for the end of a run.
//! The reference is an ordered map by `String`; the test below drives both with random
//! inserts, removals and lookups.

use super::{NameIndex, NameKey, Probe};

/// Values by name.
#[derive(Clone, Debug)]
pub(crate) struct NameMap<V> {
    index: NameIndex,
    slots: Vec<Option<(NameKey, V)>>,
    /// Slots emptied by a removal, reused by the next insert (last freed, first reused).
    free: Vec<u32>,
}

impl<V> Default for NameMap<V> {
    fn default() -> Self {
        NameMap {
            index: NameIndex::default(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<V> NameMap<V> {
    fn slot_of(&self, name: &str) -> Option<u32> {
        let probe = Probe::new(name);
        (self.index).find(name, |slot| slot_is(&self.slots, slot, &probe))
    }

    /// The value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&V> {
        let slot = self.slot_of(name)?;
        self.slots[slot as usize].as_ref().map(|(_, value)| value)
    }

    /// The value of `name`, to change.
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        let slot = self.slot_of(name)?;
        self.slots[slot as usize].as_mut().map(|(_, value)| value)
    }

    /// True when `name` has a value.
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.slot_of(name).is_some()
    }

    /// Give `name` this value; the value it had, if any.
    pub(crate) fn insert(&mut self, name: &str, value: V) -> Option<V> {
        if let Some(old) = self.get_mut(name) {
            return Some(std::mem::replace(old, value));
        }
        let entry = Some((NameKey::from(name), value));
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = entry;
                slot
            }
            None => {
                self.slots.push(entry);
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 names")
            }
        };
        self.index.insert(name, slot);
        None
    }

    /// Forget `name`; the value it had, if any.
    pub(crate) fn remove(&mut self, name: &str) -> Option<V> {
        let probe = Probe::new(name);
        let slots = &self.slots;
        let slot = (self.index).remove(name, |slot| slot_is(slots, slot, &probe))?;
        self.free.push(slot);
        self.slots[slot as usize].take().map(|(_, value)| value)
    }

    /// How many names have a value.
    pub(crate) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    /// True when no name has a value.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every value, to change, in no order a run may depend on: for changes that each value
    /// takes alone.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.slots.iter_mut().flatten().map(|(_, value)| value)
    }

    /// Every name with its value, in name order.
    pub(crate) fn sorted(&self) -> Vec<(&str, &V)> {
        let mut entries: Vec<(&str, &V)> = (self.slots.iter().flatten())
            .map(|(key, value)| (key.as_str(), value))
            .collect();
        entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
        entries
    }
}

/// A table slot's name: what a [`NameIndex`] probe compares.
pub(crate) trait Named {
    fn name_key(&self) -> &NameKey;
}

impl<V> Named for (NameKey, V) {
    fn name_key(&self) -> &NameKey {
        &self.0
    }
}

/// True when `slot` holds the name `probe` looks for: the test a [`NameIndex`] probe asks of
/// a table of named slots (`NameMap`, the GoCD server's agent table).
pub(crate) fn slot_is<S: Named>(slots: &[Option<S>], slot: u32, probe: &Probe<'_>) -> bool {
    slots[slot as usize]
        .as_ref()
        .is_some_and(|named| named.name_key().is(probe))
}

#[cfg(test)]
mod tests {
    use super::NameMap;
    use crate::ids::TestStream as Stream;
    use std::collections::BTreeMap;

    /// The map against an ordered map by `String`, on random inserts (new names and
    /// replacements), removals (of present and absent names) and lookups, over small and
    /// large name spaces and names longer than a key's head, through several growths.
    #[test]
    fn the_map_answers_as_an_ordered_map_on_random_changes() {
        for (seed, names) in [(1u64, 30u64), (2, 900), (3, 6_000)] {
            let mut random = Stream(0x2545_f491_4f6c_dd1d ^ seed);
            let mut map = NameMap::default();
            let mut naive: BTreeMap<String, u64> = BTreeMap::new();
            let (mut replaced, mut removed) = (0, 0);
            for step in 0..40_000u64 {
                let number = random.below(names);
                let name = match number % 4 {
                    0 => format!("k8s-ea-0a1b2c3d-e5f6a7b8-long-{number:05}"),
                    _ => format!("k8s-ea-0a1b2c3d-{number:04}"),
                };
                match random.below(4) {
                    0 | 1 => {
                        let old = map.insert(&name, step);
                        assert_eq!(old, naive.insert(name.clone(), step), "{name}");
                        replaced += usize::from(old.is_some());
                    }
                    2 => {
                        let gone = map.remove(&name);
                        assert_eq!(gone, naive.remove(&name), "{name}");
                        removed += usize::from(gone.is_some());
                    }
                    _ => {
                        if let Some(value) = map.get_mut(&name) {
                            *value += 1;
                        }
                        if let Some(value) = naive.get_mut(&name) {
                            *value += 1;
                        }
                    }
                }
                assert_eq!(map.get(&name), naive.get(&name), "{name}");
                assert_eq!(map.contains_key(&name), naive.contains_key(&name));
                assert_eq!(map.len(), naive.len());
            }
            let sorted: Vec<(&str, &u64)> = naive.iter().map(|(k, v)| (k.as_str(), v)).collect();
            assert_eq!(map.sorted(), sorted, "seed {seed}");
            assert!(
                replaced > 1_000 && removed > 1_000,
                "seed {seed}: the history mixed"
            );
        }
    }
}
