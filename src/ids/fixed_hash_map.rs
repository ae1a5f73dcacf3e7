//! A hash map for lookups only: the one place the simulator may use `std`'s `HashMap`.
//!
//! A run may look values up by hash but never iterate a hash map: `std`'s default hasher is
//! seeded at random, and even with a fixed one the order depends on the insert history and
//! the table's capacity, which no decision should. [`FixedHashMap`] wraps `HashMap` with a
//! fixed hasher and exposes no iteration at all (no `iter`, `keys`, `values`, `IntoIterator`,
//! and a `Debug` that prints the length only), so the rule "never iterate one" is a compile
//! error, not a review comment. `cargo xtask tidy` bans `HashMap` and `HashSet` everywhere
//! else in the simulator, and `clippy.toml` bans the types; this file is the one exception.

// The one wrapper the bans above leave: it exposes lookups only.
#![allow(clippy::disallowed_types)]

use std::borrow::Borrow;
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hash, Hasher};

/// A fixed 64-bit hash, eight bytes at a time: the same value on every run and machine of
/// the same endianness (nothing depends on the value beyond where an entry lands).
#[derive(Clone, Copy, Default)]
pub(crate) struct FixedHasher {
    state: u64,
}

const K: u64 = 0x9e37_79b9_7f4a_7c15;

impl FixedHasher {
    fn mix(&mut self, word: u64) {
        self.state = (self.state.rotate_left(5) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FixedHasher {
    fn write(&mut self, bytes: &[u8]) {
        let words = bytes.chunks_exact(8);
        let rest = words.remainder();
        for word in words {
            self.mix(u64::from_le_bytes(word.try_into().expect("eight bytes")));
        }
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u8(&mut self, value: u8) {
        self.mix(u64::from(value));
    }

    fn write_u32(&mut self, value: u32) {
        self.mix(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.mix(value);
    }

    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }

    /// Finished so that the low and the high bits (which `HashMap` uses for the bucket and
    /// the tag) depend on every word.
    fn finish(&self) -> u64 {
        let h = self.state ^ (self.state >> 32);
        h.wrapping_mul(K) ^ (h >> 29)
    }
}

/// Values by key, found by a fixed hash; no iteration.
#[derive(Clone)]
pub(crate) struct FixedHashMap<K, V> {
    map: HashMap<K, V, BuildHasherDefault<FixedHasher>>,
}

impl<K, V> Default for FixedHashMap<K, V> {
    fn default() -> Self {
        FixedHashMap {
            map: HashMap::default(),
        }
    }
}

/// The length only: printing the entries would iterate the map.
impl<K, V> fmt::Debug for FixedHashMap<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FixedHashMap")
            .field("len", &self.map.len())
            .finish_non_exhaustive()
    }
}

impl<K: Hash + Eq, V> FixedHashMap<K, V> {
    /// The value of `key`.
    pub(crate) fn get<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.get(key)
    }

    /// Give `key` this value; the value it had, if any.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.map.insert(key, value)
    }

    /// Forget `key`; the value it had, if any.
    pub(crate) fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.map.remove(key)
    }

    /// How many keys have a value.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}

#[cfg(test)]
mod tests {
    use super::{FixedHashMap, FixedHasher};
    use crate::ids::TestStream;
    use std::collections::BTreeMap;
    use std::hash::{BuildHasher, BuildHasherDefault};
    use std::sync::Arc;

    /// The map against an ordered map, on random inserts, removals and lookups of names that
    /// share long prefixes, over small and large name spaces (several growths).
    #[test]
    fn the_map_answers_as_an_ordered_map_on_random_changes() {
        for (seed, names) in [(1u64, 40u64), (2, 700), (3, 5_000)] {
            let mut random = TestStream(0x2545_f491_4f6c_dd1d ^ seed);
            let mut map: FixedHashMap<Arc<str>, u64> = FixedHashMap::default();
            let mut naive: BTreeMap<String, u64> = BTreeMap::new();
            let (mut hits, mut removed) = (0, 0);
            for step in 0..60_000u64 {
                let name = format!("k8s-ea-0a1b2c3d-{:04}", random.below(names));
                assert_eq!(map.get(name.as_str()), naive.get(&name), "{name}");
                hits += usize::from(naive.contains_key(&name));
                match random.below(3) {
                    0 => {
                        let old = map.insert(Arc::from(name.as_str()), step);
                        assert_eq!(old, naive.insert(name, step));
                    }
                    1 => {
                        let gone = map.remove(name.as_str());
                        assert_eq!(gone, naive.remove(&name), "{name}");
                        removed += usize::from(gone.is_some());
                    }
                    _ => {}
                }
                assert_eq!(map.len(), naive.len());
            }
            assert!(hits > 1_000 && removed > 1_000, "seed {seed}");
        }
    }

    /// Texts that differ in one byte (at either end, inside or past the first word) hash
    /// apart: every byte reaches the hash.
    #[test]
    fn the_hash_is_fixed_and_depends_on_every_byte() {
        let build = BuildHasherDefault::<FixedHasher>::default();
        let hash = |text: &str| build.hash_one(text);
        let base = "k8s-ea-0a1b2c3d-e4f5a6b7-0001";
        let mut seen = std::collections::BTreeSet::new();
        for at in 0..base.len() {
            let mut bytes = base.as_bytes().to_vec();
            bytes[at] ^= 1;
            let text = String::from_utf8(bytes).expect("ascii");
            assert!(seen.insert(hash(&text)), "byte {at}");
        }
        assert!(!seen.contains(&hash(base)));
    }

    #[test]
    fn debug_shows_the_length_and_no_entry() {
        let mut map: FixedHashMap<&str, u32> = FixedHashMap::default();
        map.insert("secret-pod", 1);
        let printed = format!("{map:?}");
        assert!(printed.contains("len: 1"), "{printed}");
        assert!(!printed.contains("secret-pod"), "{printed}");
    }
}
