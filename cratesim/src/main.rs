//! `elasticsim-crates`: unmodified Rust lease-election crates from crates.io, run on
//! elasticsim's simulated Kubernetes API under the leader scenarios' faults, judged by the
//! same leader monitors, fingerprinted like every run. `cargo xtask sim FILE` runs it when
//! FILE's `[leader]` names a `lease_crate` (docs/crates.md).
//!
//! ```text
//! elasticsim-crates sim FILE [--seed N | --seeds N | --seeds A..B] [--out DIR] [--trace]
//! ```
//!
//! Exit codes as elasticsim's: 0 every seed passes, 1 a violation, 2 bad input, 3 a harness
//! error.

#![deny(unsafe_code)]

mod api;
mod cli;
mod crates;
mod determinism;
mod faults;
mod lease_store;
mod replica;
mod run;
mod sim;

fn main() -> std::process::ExitCode {
    cli::main()
}
