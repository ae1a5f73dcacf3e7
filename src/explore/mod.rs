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
//! | `materialise.rs` | a run as an explicit scenario (swarm off, every arrival and fault) |
//! | `ddmin.rs` | delta debugging and bisection |
//! | `shrink.rs` | [`shrink`]: the smallest scenario that still fails the same invariant |
//! | `regressions.rs` | `scenarios/regressions/regressions.toml`: entries and their replay |

mod compare;
mod ddmin;
mod materialise;
pub mod regressions;
mod seeds;
mod shrink;
mod sweep;
mod tables;

pub use compare::{
    PolicyRow, compare_cells, compare_markdown, compare_rows, compare_table, write_compare_csv,
};
pub use ddmin::{bisect_down, ddmin};
pub use materialise::{Size, materialise, pin};
pub use seeds::SeedRange;
pub use shrink::{ShrinkOutcome, shrink};
pub use sweep::{Finished, Reproduce, SeedRow, SweepPlan, ViolatedId, first_violated, sweep};
pub use tables::{
    FAILING_LISTED_MAX, InvariantCount, SWEEP_METRICS, SweepSummary, sweep_markdown, sweep_table,
    write_sweep_csv,
};

#[cfg(test)]
mod tests;
