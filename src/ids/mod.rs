//! Compact tables for the ids and names a run repeats thousands of times: job-id maps and
//! interned names. Plain data structures below both the monitors (`check`) and the report.

mod id_map;
mod names;

pub(crate) use id_map::IdMap;
pub(crate) use names::Names;
