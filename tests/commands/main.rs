//! Commands: what a user types, run through the binary or its library entry points, with the
//! exit codes, messages and files `docs/cli.md` promises.
//!
//! One of the four test binaries, one per axis (`docs/architecture.md`, "Tests"): `commands`
//! (this one), `fidelity` (the models against the real systems' behaviour), `conformance`
//! (ports of the real projects' own tests) and `claims` (what the docs, tables and pins
//! claim of the shipped scenarios and policies).

#[path = "../common/mod.rs"]
mod common;

/// Exit codes, error messages and report files of `sim`.
mod cli;
/// Many-seed sweeps, `compare`, `shrink` and materialised runs.
mod explore;
/// Ablations, `hunt` and interrupted sweeps.
mod hunt;
/// `serve`, `record` and kubectl on loopback and on turmoil's network (the `live` feature).
mod live;
/// `nightly`: JUnit, baselines and its CI workflow files.
mod nightly;
/// The SVG and PNG plots and `plot DIR`.
mod plots;
/// `replay`: a trace replayed as a workload, and bad traces.
mod replay;
/// `review`: base against candidate, its files and shards, and the `index.html` pages.
mod review;
/// Sharded sweeps, comparisons and nightlies merged, and the deployment files.
mod scaleout;
