//! Scenarios: the TOML contract of `SCENARIO-FORMAT.md`, parsed and validated with file,
//! line, column and key in every error.

pub mod model;

pub use model::*;
