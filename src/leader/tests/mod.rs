//! Tests of the pure machines against a scripted fake Lease API (the list).

mod elector;
pub(crate) mod harness;
mod runner;
mod shipped;
