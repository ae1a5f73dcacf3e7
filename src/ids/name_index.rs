//! Names to slots by hash: a lookup that costs the same for ten names or ten thousand.
//!
//! The GoCD server finds an agent by its elastic agent id at every ping, get-work and
//! completion, and at every hung-job check for each assigned job. An ordered map costs a walk
//! down the tree per lookup, a cache miss per level once thousands of agents no longer fit the
//! caches. [`NameIndex`] answers in one probe, usually: an open-addressing table (linear
//! probing, at most half full, deletion by shifting back, no tombstones) of each name's hash
//! and the slot its owner keeps it in. The index holds no names: the owner checks a hit
//! against its own copy (`is_it`), so two names with one hash never mix up.
//!
//! The hash is fixed (no random seed): only lookups go through the table, never iteration,
//! so nothing a run decides depends on where a name lands. The reference is an ordered map
//! of the same names; the tests below drive both with random inserts, removals and lookups.

/// No entry at this place.
const EMPTY: u32 = u32::MAX;
/// Places in a new table; a power of two.
const FIRST_CAPACITY: usize = 16;

/// Slots by name hash.
#[derive(Clone, Debug, Default)]
pub(crate) struct NameIndex {
    /// `(hash, slot)` per place, `slot == EMPTY` when free; the length is a power of two (or
    /// zero before the first insert).
    places: Vec<(u64, u32)>,
    len: usize,
}

/// A fixed 64-bit hash of `name`, eight bytes at a time, finished so the low bits (the
/// place) depend on every byte.
fn hash(name: &str) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |h: u64, word: u64| (h.rotate_left(5) ^ word).wrapping_mul(K);
    let words = name.as_bytes().chunks_exact(8);
    let rest = words.remainder();
    let mut h = words.fold(name.len() as u64, |h, word| {
        mix(h, u64::from_le_bytes(word.try_into().expect("eight bytes")))
    });
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = mix(h, u64::from_le_bytes(word));
    }
    h ^= h >> 32;
    h.wrapping_mul(K) ^ (h >> 29)
}

impl NameIndex {
    fn mask(&self) -> usize {
        self.places.len() - 1
    }

    fn home(&self, hash: u64) -> usize {
        // Truncation intended: the low bits pick the place.
        (hash as usize) & self.mask()
    }

    /// The place holding `name`, if it is indexed.
    fn place_of(&self, name: &str, is_it: impl Fn(u32) -> bool) -> Option<usize> {
        if self.places.is_empty() {
            return None;
        }
        let wanted = hash(name);
        let mut at = self.home(wanted);
        loop {
            let (h, slot) = self.places[at];
            if slot == EMPTY {
                return None;
            }
            if h == wanted && is_it(slot) {
                return Some(at);
            }
            at = (at + 1) & self.mask();
        }
    }

    /// The slot of `name`; `is_it(slot)` says whether the owner keeps `name` in `slot`.
    pub(crate) fn find(&self, name: &str, is_it: impl Fn(u32) -> bool) -> Option<u32> {
        self.place_of(name, is_it).map(|at| self.places[at].1)
    }

    /// Index `name` at `slot`; `name` must not be indexed already.
    pub(crate) fn insert(&mut self, name: &str, slot: u32) {
        assert!(slot != EMPTY, "slot {slot} is reserved");
        if (self.len + 1) * 2 > self.places.len() {
            self.grow();
        }
        self.put(hash(name), slot);
        self.len += 1;
    }

    fn put(&mut self, hash: u64, slot: u32) {
        let mut at = self.home(hash);
        while self.places[at].1 != EMPTY {
            at = (at + 1) & self.mask();
        }
        self.places[at] = (hash, slot);
    }

    fn grow(&mut self) {
        let capacity = (self.places.len() * 2).max(FIRST_CAPACITY);
        let old = std::mem::replace(&mut self.places, vec![(0, EMPTY); capacity]);
        for (hash, slot) in old.into_iter().filter(|&(_, slot)| slot != EMPTY) {
            self.put(hash, slot);
        }
    }

    /// Forget `name` and return its slot, if it was indexed.
    pub(crate) fn remove(&mut self, name: &str, is_it: impl Fn(u32) -> bool) -> Option<u32> {
        let mut hole = self.place_of(name, is_it)?;
        let slot = self.places[hole].1;
        self.places[hole].1 = EMPTY;
        self.len -= 1;
        // Shift back the entries of the run after the hole that may move into it (their home
        // is not strictly between the hole and them), so every lookup still finds its name
        // before the first free place.
        let mut at = (hole + 1) & self.mask();
        while self.places[at].1 != EMPTY {
            let home = self.home(self.places[at].0);
            let distance_home = at.wrapping_sub(home) & self.mask();
            let distance_hole = at.wrapping_sub(hole) & self.mask();
            if distance_home >= distance_hole {
                self.places[hole] = self.places[at];
                self.places[at].1 = EMPTY;
                hole = at;
            }
            at = (at + 1) & self.mask();
        }
        Some(slot)
    }

    /// How many names are indexed.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::NameIndex;
    use std::collections::BTreeMap;

    use crate::ids::TestStream as Stream;

    /// The index against an ordered map of the same names, on random inserts, removals and
    /// lookups over a small name space (so names come back after removal, runs of probes
    /// form and holes are shifted into), through several growths.
    #[test]
    fn the_index_answers_as_an_ordered_map_on_random_inserts_removals_and_lookups() {
        for (seed, names) in [(1u64, 40u64), (2, 700), (3, 5_000)] {
            let mut random = Stream(0x2545_f491_4f6c_dd1d ^ seed);
            let mut index = NameIndex::default();
            let mut naive: BTreeMap<String, u32> = BTreeMap::new();
            // The owner's copy of each slot's name.
            let mut slots: Vec<String> = Vec::new();
            let (mut hits, mut removed) = (0, 0);
            for _ in 0..60_000 {
                let name = format!("k8s-ea-0a1b2c3d-{:04}", random.below(names));
                let found = index.find(&name, |slot| slots[slot as usize] == name);
                assert_eq!(found, naive.get(&name).copied(), "{name}");
                hits += usize::from(found.is_some());
                match (random.below(3), found) {
                    (0, None) => {
                        let slot = u32::try_from(slots.len()).expect("small");
                        slots.push(name.clone());
                        index.insert(&name, slot);
                        naive.insert(name, slot);
                    }
                    (1, _) => {
                        let gone = index.remove(&name, |slot| slots[slot as usize] == name);
                        assert_eq!(gone, naive.remove(&name), "{name}");
                        removed += usize::from(gone.is_some());
                    }
                    _ => {}
                }
                assert_eq!(index.len(), naive.len());
            }
            assert!(
                hits > 1_000 && removed > 1_000,
                "seed {seed}: the history mixed"
            );
        }
    }

    /// Names that share a hash are told apart by the owner's copy.
    #[test]
    fn a_hit_is_checked_against_the_owners_name() {
        let mut index = NameIndex::default();
        index.insert("a", 0);
        let names = ["b"];
        // Slot 0 holds "b" as far as the owner knows: "a" hashes there but is not it.
        assert_eq!(index.find("a", |slot| names[slot as usize] == "a"), None);
        assert_eq!(index.find("a", |_| true), Some(0));
    }
}
