//! A map keyed by job id for the collector and monitors, which remember every job of a run.
//! Job ids are assigned in increasing order without gaps, so the ids are kept as runs of
//! consecutive ids (one run for a whole day) beside a `Vec` of values: an entry costs the
//! size of its value.

/// Values by id, ids ascending.
#[derive(Clone, Debug)]
pub(crate) struct IdMap<V> {
    /// Runs of consecutive ids: the first id of each and the position of its value in
    /// `values`; a run ends where the next one starts. Ascending in both.
    runs: Vec<(u64, usize)>,
    values: Vec<V>,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            runs: Vec::new(),
            values: Vec::new(),
        }
    }
}

impl<V> IdMap<V> {
    fn run_end(&self, run: usize) -> usize {
        self.runs
            .get(run + 1)
            .map_or(self.values.len(), |(_, start)| *start)
    }

    /// The position of `id`'s value, or the position where it belongs and the index of the
    /// run it would follow.
    fn position(&self, id: u64) -> Result<usize, (usize, usize)> {
        let run = self.runs.partition_point(|(first, _)| *first <= id);
        if run == 0 {
            return Err((0, 0));
        }
        let (first, start) = self.runs[run - 1];
        let end = self.run_end(run - 1);
        let at = start + usize::try_from(id - first).unwrap_or(usize::MAX);
        if at < end { Ok(at) } else { Err((end, run)) }
    }

    /// Sets the value of `id`, returning the one it replaced. An id in a gap (below the
    /// largest id) is inserted in its place, moving the values after it.
    pub(crate) fn insert(&mut self, id: u64, value: V) -> Option<V> {
        match self.position(id) {
            Ok(at) => Some(std::mem::replace(&mut self.values[at], value)),
            Err((at, run)) => {
                let extends = run > 0 && at == self.run_end(run - 1) && {
                    let (first, start) = self.runs[run - 1];
                    first + (at - start) as u64 == id
                };
                self.values.insert(at, value);
                for later in &mut self.runs[run..] {
                    later.1 += 1;
                }
                if !extends {
                    self.runs.insert(run, (id, at));
                }
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
        (0..self.runs.len()).flat_map(move |run| {
            let (first, start) = self.runs[run];
            let end = self.run_end(run);
            (start..end).map(move |at| (first + (at - start) as u64, &self.values[at]))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::IdMap;

    fn entries(map: &IdMap<char>) -> Vec<(u64, char)> {
        map.iter().map(|(id, value)| (id, *value)).collect()
    }

    #[test]
    fn ids_inserted_out_of_order_are_found_and_listed_ascending() {
        let mut map = IdMap::default();
        assert_eq!(map.insert(5, 'e'), None);
        assert_eq!(map.insert(2, 'b'), None);
        assert_eq!(map.insert(9, 'i'), None);
        assert_eq!(map.insert(2, 'B'), Some('b'));
        assert_eq!(map.get(2), Some(&'B'));
        assert_eq!(map.get(3), None);
        assert_eq!(map.get(10), None);
        assert_eq!(map.get(1), None);
        *map.get_mut(9).expect("9 was inserted") = 'I';
        assert_eq!(entries(&map), [(2, 'B'), (5, 'e'), (9, 'I')]);
    }

    #[test]
    fn consecutive_ids_share_one_run_and_gaps_fill_in_place() {
        let mut map = IdMap::default();
        for (id, value) in [(1, 'a'), (2, 'b'), (3, 'c'), (7, 'g'), (8, 'h')] {
            map.insert(id, value);
        }
        assert_eq!(map.runs.len(), 2);
        // 4 extends the first run; 6 starts a run just before 7; 0 goes first.
        map.insert(4, 'd');
        map.insert(6, 'f');
        map.insert(0, '0');
        assert_eq!(
            entries(&map),
            [
                (0, '0'),
                (1, 'a'),
                (2, 'b'),
                (3, 'c'),
                (4, 'd'),
                (6, 'f'),
                (7, 'g'),
                (8, 'h')
            ]
        );
        for (id, value) in entries(&map) {
            assert_eq!(map.get(id), Some(&value));
        }
        assert_eq!(map.get(5), None);
        assert_eq!(map.get(9), None);
    }

    /// The naive reference, an ordered map by id, on random inserts (mostly the next id, as
    /// a run assigns them, sometimes one in a gap or far ahead), replacements and lookups.
    #[test]
    fn the_map_answers_as_an_ordered_map_on_random_inserts_and_lookups() {
        let mut random = crate::ids::TestStream(0x9e37_79b9_7f4a_7c15);
        let mut map = IdMap::default();
        let mut naive = std::collections::BTreeMap::new();
        let mut next = 0u64;
        for step in 0..20_000u64 {
            let id = match random.below(8) {
                0 => random.below(next + 1),
                1 => next + random.below(50),
                _ => next,
            };
            next = next.max(id + 1);
            assert_eq!(map.insert(id, step), naive.insert(id, step), "id {id}");
            let probe = random.below(next + 2);
            assert_eq!(map.get(probe), naive.get(&probe), "id {probe}");
            if let (Some(a), Some(b)) = (map.get_mut(probe), naive.get_mut(&probe)) {
                *a += 1;
                *b += 1;
            }
        }
        let listed: Vec<(u64, u64)> = map.iter().map(|(id, value)| (id, *value)).collect();
        assert_eq!(listed, naive.into_iter().collect::<Vec<_>>());
        assert!(map.runs.len() > 100, "gaps made runs: {}", map.runs.len());
    }
}
