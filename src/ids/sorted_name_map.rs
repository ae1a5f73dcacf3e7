//! Values by name, found by hash and listed in name order: the API server's pod store.
//!
//! The store answers a lookup by name on every request about a pod (get, annotate, delete,
//! the kubelet's timers) and lists its pods in name order only on rare occasions (a node
//! lost, a fault picking pods, the trace exporter). As an ordered map by `String` each lookup
//! read a key's text at every level of the tree, a cache miss each in a cluster of thousands
//! of pods. [`SortedNameMap`] finds values through a [`NameMap`] and keeps the names in an
//! ordered set beside it, touched only when a name comes or goes.
//!
//! The reference is an ordered map by `String`; the test below drives both with random
//! inserts, removals, lookups and ordered walks. The `safe` allocator's pod table keeps its
//! records in one too.

use super::NameMap;
use std::collections::BTreeSet;

/// Values by name, iterated in name order.
#[derive(Debug)]
pub(crate) struct SortedNameMap<V> {
    values: NameMap<V>,
    names: BTreeSet<String>,
}

impl<V> Default for SortedNameMap<V> {
    fn default() -> Self {
        SortedNameMap {
            values: NameMap::default(),
            names: BTreeSet::new(),
        }
    }
}

impl<V> SortedNameMap<V> {
    /// The value of `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&V> {
        self.values.get(name)
    }

    /// The value of `name`, to change.
    pub(crate) fn get_mut(&mut self, name: &str) -> Option<&mut V> {
        self.values.get_mut(name)
    }

    /// True when `name` has a value.
    pub(crate) fn contains_key(&self, name: &str) -> bool {
        self.values.contains_key(name)
    }

    /// Give `name` this value; the value it had, if any.
    pub(crate) fn insert(&mut self, name: String, value: V) -> Option<V> {
        let old = self.values.insert(&name, value);
        if old.is_none() {
            self.names.insert(name);
        }
        old
    }

    /// Forget `name`; the value it had, if any.
    pub(crate) fn remove(&mut self, name: &str) -> Option<V> {
        let gone = self.values.remove(name)?;
        self.names.remove(name);
        Some(gone)
    }

    /// How many names have a value.
    pub(crate) fn len(&self) -> usize {
        self.values.len()
    }

    /// Every name with its value, in name order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        (self.names.iter()).map(|name| {
            let value = self.values.get(name).expect("a listed name has a value");
            (name, value)
        })
    }

    /// Every value, in name order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, value)| value)
    }
}

#[cfg(test)]
mod tests {
    use super::SortedNameMap;
    use crate::ids::TestStream as Stream;
    use std::collections::BTreeMap;

    /// The map against an ordered map by `String`, on random inserts (new names and
    /// replacements), removals (of present and absent names), changes through `get_mut` and
    /// walks in name order, over small and large name spaces.
    #[test]
    fn the_map_answers_and_lists_as_an_ordered_map_on_random_changes() {
        for (seed, names) in [(1u64, 20u64), (2, 500), (3, 4_000)] {
            let mut random = Stream(0x9e37_79b9_7f4a_7c15 ^ seed);
            let mut map = SortedNameMap::default();
            let mut naive: BTreeMap<String, u64> = BTreeMap::new();
            let (mut replaced, mut removed, mut walks) = (0, 0, 0);
            for step in 0..30_000u64 {
                let number = random.below(names);
                let name = match number % 3 {
                    0 => format!("k8s-ea-0a1b2c3d-e5f6a7b8-long-{number:05}"),
                    _ => format!("k8s-ea-{number:04}"),
                };
                match random.below(9) {
                    0..=3 => {
                        let old = map.insert(name.clone(), step);
                        assert_eq!(old, naive.insert(name.clone(), step), "{name}");
                        replaced += usize::from(old.is_some());
                    }
                    4..=6 => {
                        let gone = map.remove(&name);
                        assert_eq!(gone, naive.remove(&name), "{name}");
                        removed += usize::from(gone.is_some());
                    }
                    7 => {
                        if let Some(value) = map.get_mut(&name) {
                            *value += 1;
                        }
                        if let Some(value) = naive.get_mut(&name) {
                            *value += 1;
                        }
                    }
                    _ => {
                        let listed: Vec<(&String, &u64)> = map.iter().collect();
                        let expected: Vec<(&String, &u64)> = naive.iter().collect();
                        assert_eq!(listed, expected, "seed {seed} step {step}");
                        assert!(map.values().eq(naive.values()));
                        walks += 1;
                    }
                }
                assert_eq!(map.get(&name), naive.get(&name), "{name}");
                assert_eq!(map.contains_key(&name), naive.contains_key(&name));
                assert_eq!(map.len(), naive.len());
            }
            assert!(
                replaced > 500 && removed > 500 && walks > 1_000,
                "seed {seed}: the history mixed ({replaced}, {removed}, {walks})"
            );
        }
    }
}
