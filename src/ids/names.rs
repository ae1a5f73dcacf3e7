//! Interned names: profiles, environments and agents repeat across thousands of jobs, so
//! rows keep a small index into one table instead of their own copy of the text.
//!
//! A name's index is found by hash ([`NameIndex`]), not by a walk down an ordered map: the
//! report interns an agent's name at every job it runs, and at ten times the day's cluster
//! the thousands of agent names no longer fit the caches, so each level of a tree walk read
//! a name from memory. A name is kept once, as a [`NameKey`] whose head words tell most
//! names apart without reading the text. Indices are given in first-seen order, which no
//! hash changes.

use super::{NameIndex, NameKey, Probe};
use std::sync::Arc;

/// Each distinct name stored once, named by its position in first-seen order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    names: Vec<NameKey>,
    /// Each name's position in `names`, by hash.
    index_of: NameIndex,
}

impl Names {
    /// The index of `name`, adding it on first sight.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        let probe = Probe::new(name);
        let names = &self.names;
        if let Some(index) = (self.index_of).find(name, |at| names[at as usize].is(&probe)) {
            return index;
        }
        let index = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        self.names.push(NameKey::from(name));
        self.index_of.insert(name, index);
        index
    }

    /// The shared name at `index`, for rows that keep the name itself.
    pub(crate) fn shared(&self, index: u32) -> Arc<str> {
        Arc::clone(self.names[index as usize].shared())
    }

    /// The name at `index`, which [`Names::intern`] returned.
    pub(crate) fn name(&self, index: u32) -> &str {
        self.names[index as usize].as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::Names;

    #[test]
    fn a_repeated_name_gets_the_index_of_its_first_sight() {
        let mut names = Names::default();
        let small = names.intern("small");
        let large = names.intern("large");
        assert_eq!(names.intern("small"), small);
        assert_ne!(small, large);
        assert_eq!(names.name(large), "large");
        assert_eq!(&*names.shared(small), "small");
        assert_eq!(names.intern("medium"), 2);
    }

    /// Against the naive reference (a name's index is its position in the list of distinct
    /// names in first-seen order), on random names that share long prefixes.
    #[test]
    fn interning_random_names_matches_their_first_seen_positions() {
        let mut random = crate::ids::TestStream(0x5851_f42d_4c95_7f2d);
        let mut names = Names::default();
        let mut seen: Vec<String> = Vec::new();
        for _ in 0..5_000 {
            let prefix = ["k8s-ea-", "k8s-ea-0a1b2c3d-e4f5-", ""][random.below(3) as usize];
            let name = format!("{prefix}{}", random.below(700));
            let expected = match seen.iter().position(|known| *known == name) {
                Some(position) => position,
                None => {
                    seen.push(name.clone());
                    seen.len() - 1
                }
            };
            let index = names.intern(&name);
            assert_eq!(index as usize, expected, "{name}");
            assert_eq!(names.name(index), name);
        }
        assert!(seen.len() > 1_500, "{}", seen.len());
    }
}
