//! Claims: what the docs, the defect tables and the pins say of the shipped scenarios and
//! policies, checked: verdicts per policy and variant, pinned fingerprints, regressions, and
//! the docs' own lists against the code.
//!
//! One of the four test binaries, one per axis (`docs/architecture.md`, "Tests"): `commands`,
//! `fidelity`, `conformance` and `claims` (this one).

#[path = "../common/mod.rs"]
mod common;

/// The elastic-agent rows of the defect tables: the faulty policy fails, `safe` passes.
mod defects;
/// A run is a pure function of scenario and seed; the golden run and the pins hold.
mod determinism;
/// Every scenario key, invariant id, decision code, command and flag is documented.
mod docs;
/// The leader rows of the defect table, `fixed` under the swarm, the failover bound.
mod leader;
/// The leader hazards real in agentk-v1's code, and `fixed` keeping every invariant.
mod leader_hazards;
/// Every entry of `scenarios/regressions/regressions.toml` keeps its verdict.
mod regressions;
/// `bounded-requests`: a request storm stops the run, healthy policies never come near it.
mod request_storm;
/// `safe` keeps every invariant on every scenario; `upstream` fails only as documented.
mod safe_everywhere;
