//! Tests of the pure machines against a scripted fake Lease API (the list).

mod elector_tests;
pub(crate) mod harness;
mod runner_tests;
mod shipped_tests;
