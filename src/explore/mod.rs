//! Exploring many seeds: sweeps, policy comparisons, shrinking and regressions.
//!
//! Map:
//!
//! | file | owns |
//! |---|---|
//! | `seeds.rs` | [`SeedRange`]: `--seeds N` and `--seeds A..B` |
//! | `sweep.rs` | [`sweep`]: one simulation per rayon task; [`SeedRow`] per seed |
//! | `tables.rs` | [`SweepSummary`], `sweep.csv`, `sweep.md`, the terminal table |
//! | `compare.rs` | [`PolicyRow`]: one policy's aggregate; `compare.csv`, `compare.md` |
//! | `pages.rs` | the `index.html` of a sweep and of a comparison |
//! | `coverage.rs` | the guided hunt's coverage: decision transitions and abstract states |
//! | `hunt.rs` | hunting a target: seeds or guided swarm draws until a violation |
//! | `materialise.rs` | a run as an explicit scenario (swarm off, every arrival and fault) |
//! | `ddmin.rs` | delta debugging and bisection |
//! | `shrink.rs` | [`shrink`]: the smallest scenario that still fails the same invariant |
//! | `regressions.rs` | `scenarios/regressions/regressions.toml`: entries and their replay |
//! | `shard.rs` | [`Shard`] (`--shard K/N`), `shard.json`, and the coverage check of `merge` |
//! | `exact.rs` | serde helpers that bring floats and ids back bit for bit from `shard.json` |

mod compare;
pub(crate) mod coverage;
mod ddmin;
pub(crate) mod exact;
pub mod hunt;
mod materialise;
mod pages;
pub mod regressions;
mod seeds;
pub(crate) mod shard;
mod shrink;
mod sweep;
mod tables;

pub use compare::PolicyRow;
#[cfg(test)]
use compare::{compare_rows, write_compare_csv};
pub(crate) use compare::{compare_table, write_compare_files};
pub use materialise::{Size, materialise, pin};
pub(crate) use pages::{write_compare_page, write_sweep_page};
pub use seeds::SeedRange;
pub use shard::{Cell, CommandKind, Shard};
pub use shrink::shrink;
pub use sweep::{Finished, Reproduce, SeedRow, SweepPlan, ViolatedId, first_violated, sweep};
pub use tables::{
    FAILING_LISTED_MAX, InvariantCount, LEADER_SWEEP_METRICS, SWEEP_METRICS, SweepSummary,
    sweep_markdown, sweep_table, write_sweep_csv, write_sweep_files,
};

#[cfg(test)]
mod tests;
