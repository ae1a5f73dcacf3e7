//! A map keyed by job id for monitors that must remember every job of a run. Job ids are
//! assigned in increasing order, so inserts append and lookups are a binary search; ids and
//! values live in two `Vec`s so a small value (a stage, an index) costs its own size, not
//! a padded pair.

/// Values by id, ids ascending.
#[derive(Clone, Debug)]
pub(crate) struct IdMap<V> {
    ids: Vec<u64>,
    values: Vec<V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            ids: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<V> IdMap<V> {
    fn position(&self, id: u64) -> Result<usize, usize> {
        match self.ids.last() {
            Some(last) if *last < id => Err(self.ids.len()),
            _ => self.ids.binary_search(&id),
        }
    }

    /// Sets the value of `id`, returning the one it replaced. An id below the largest one
    /// is inserted in its place (a copy of the tail: ids are expected in increasing order).
    pub(crate) fn insert(&mut self, id: u64, value: V) -> Option<V> {
        match self.position(id) {
            Ok(at) => Some(std::mem::replace(&mut self.values[at], value)),
            Err(at) => {
                self.ids.insert(at, id);
                self.values.insert(at, value);
                None
            }
        }
    }

    pub(crate) fn get(&self, id: u64) -> Option<&V> {
        let at = self.position(id).ok()?;
        Some(&self.values[at])
    }

    pub(crate) fn get_mut(&mut self, id: u64) -> Option<&mut V> {
        let at = self.position(id).ok()?;
        Some(&mut self.values[at])
    }

    /// Entries in id order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, &V)> {
        self.ids.iter().copied().zip(&self.values)
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;

    #[test]
    fn ids_inserted_out_of_order_are_found_and_listed_ascending() {
        let mut map = IdMap::default();
        assert_eq!(map.insert(5, 'e'), None);
        assert_eq!(map.insert(2, 'b'), None);
        assert_eq!(map.insert(9, 'i'), None);
        assert_eq!(map.insert(2, 'B'), Some('b'));
        assert_eq!(map.get(2), Some(&'B'));
        assert_eq!(map.get(3), None);
        *map.get_mut(9).expect("9 was inserted") = 'I';
        let entries: Vec<(u64, char)> = map.iter().map(|(id, value)| (id, *value)).collect();
        assert_eq!(entries, [(2, 'B'), (5, 'e'), (9, 'I')]);
    }
}
