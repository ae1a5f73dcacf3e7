//! Compact tables for the ids and names a run repeats thousands of times: job-id maps, interned
//! names and name keys. Plain data structures below both the monitors (`check`) and the report.

mod id_map;
mod name_index;
mod name_key;
mod names;

pub(crate) use id_map::IdMap;
pub(crate) use name_index::NameIndex;
pub(crate) use name_key::{NameKey, Probe};
pub(crate) use names::Names;
