//! Interned names: profiles, environments and agents repeat across thousands of jobs, so
//! rows keep a small index into one table instead of their own copy of the text.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Each distinct name stored once, named by its position in first-seen order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Names {
    names: Vec<Arc<str>>,
    index_of: BTreeMap<Arc<str>, u32>,
}

impl Names {
    /// The index of `name`, adding it on first sight.
    pub(crate) fn intern(&mut self, name: &str) -> u32 {
        if let Some(index) = self.index_of.get(name) {
            return *index;
        }
        let index = u32::try_from(self.names.len()).expect("fewer than 2^32 distinct names");
        let shared: Arc<str> = Arc::from(name);
        self.names.push(Arc::clone(&shared));
        self.index_of.insert(shared, index);
        index
    }

    /// The shared name at `index`, for rows that keep the name itself.
    pub(crate) fn shared(&self, index: u32) -> Arc<str> {
        Arc::clone(&self.names[index as usize])
    }

    /// The name at `index`, which [`Names::intern`] returned.
    pub(crate) fn name(&self, index: u32) -> &str {
        &self.names[index as usize]
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
}
