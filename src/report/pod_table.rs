//! The report's pod rows, found by name.

use super::rows::PodRow;
use crate::ids::NameIndex;

/// Pod rows in creation order, found by name: the large rows sit in a `Vec` and an index by
/// name hash holds only their position, so a row is found in one probe however many pods the
/// run made (a pod's row changes at each of its state changes). Name order is made once, for
/// the report.
#[derive(Clone, Debug, Default)]
pub(super) struct PodTable {
    rows: Vec<PodRow>,
    position_of: NameIndex,
}

impl PodTable {
    fn position(&self, pod: &str) -> Option<usize> {
        let rows = &self.rows;
        let at = (self.position_of).find(pod, |at| *rows[at as usize].pod == *pod)?;
        Some(at as usize)
    }

    pub(super) fn get_mut(&mut self, pod: &str) -> Option<&mut PodRow> {
        let at = self.position(pod)?;
        Some(&mut self.rows[at])
    }

    /// Adds `row`, or replaces the row of the same name and returns it.
    pub(super) fn insert(&mut self, row: PodRow) -> Option<PodRow> {
        if let Some(at) = self.position(&row.pod) {
            return Some(std::mem::replace(&mut self.rows[at], row));
        }
        let at = u32::try_from(self.rows.len()).expect("fewer than 2^32 pods");
        self.position_of.insert(&row.pod, at);
        self.rows.push(row);
        None
    }

    /// Rows in name order.
    pub(super) fn iter(&self) -> impl Iterator<Item = &PodRow> {
        let mut sorted: Vec<&PodRow> = self.rows.iter().collect();
        sorted.sort_unstable_by(|a, b| a.pod.cmp(&b.pod));
        sorted.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::PodTable;
    use crate::ids::TestStream;
    use crate::report::rows::PodRow;
    use std::collections::BTreeMap;
    use std::sync::Arc;

    /// Against the reference it replaced (an ordered map from name to row), on random names
    /// sharing long prefixes: the same row found or missed, the same row replaced, the same
    /// rows in the same (name) order.
    #[test]
    fn the_table_finds_replaces_and_orders_rows_as_an_ordered_map() {
        let mut random = TestStream(0x2545_f491_4f6c_dd1d);
        let (mut table, mut naive) = (PodTable::default(), BTreeMap::<String, PodRow>::new());
        let (mut found, mut replaced) = (0, 0);
        for step in 0..4_000u64 {
            let prefix = ["k8s-ea-", "k8s-ea-0a1b2c3d-e4f5-", ""][random.below(3) as usize];
            let name = format!("{prefix}{}", random.below(900));
            if random.below(3) == 0 {
                let row = PodRow::created(Arc::from(name.as_str()), Arc::from("h"), step);
                let old = table.insert(row.clone());
                assert_eq!(old, naive.insert(name, row));
                replaced += usize::from(old.is_some());
            } else {
                let got = table.get_mut(&name).map(|row| row.created_at_ms);
                assert_eq!(got, naive.get(&name).map(|row| row.created_at_ms));
                found += usize::from(got.is_some());
            }
        }
        let rows: Vec<&PodRow> = table.iter().collect();
        assert_eq!(rows, naive.values().collect::<Vec<_>>());
        assert!(found > 500 && replaced > 100, "{found} {replaced}");
    }
}
