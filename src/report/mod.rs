//! Run reports: metrics, CSV tables, `summary.json`, `summary.md` and the terminal summary
//! (`OUTPUTS.md` is the contract).

pub mod atomic;
