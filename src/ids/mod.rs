//! Compact tables for the ids and names a run repeats thousands of times: job-id maps, interned
//! names, name keys and maps by name (one also listed in name order, for the API server's pod
//! store). Plain data structures with no dependency of their own,
//! below the listings (`resources`), the allocator, the GoCD server, the monitors (`check`) and
//! the report.

mod id_map;
mod name_index;
mod name_key;
mod name_map;
mod names;
mod sorted_name_map;

pub(crate) use id_map::IdMap;
pub(crate) use name_index::NameIndex;
pub(crate) use name_key::{NameHead, NameKey, Probe};
pub(crate) use name_map::{NameMap, Named, slot_is};
pub(crate) use names::Names;
pub(crate) use sorted_name_map::SortedNameMap;

/// A small seeded generator (xorshift) for the tests here, so that `ids` needs nothing from
/// the engine.
#[cfg(test)]
pub(crate) struct TestStream(pub(crate) u64);

#[cfg(test)]
impl TestStream {
    /// A draw in `0..bound`.
    pub(crate) fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}
