//! Flags. Every flag is long-form; `--help` text comes from these doc comments.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// elasticsim: deterministic simulation and chaos testing for Kubernetes elastic agents and
/// leader-elected modules.
#[derive(Debug, Parser)]
#[command(name = "elasticsim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario (one seed, or many in parallel) and write its report.
    Sim(SimArgs),
    /// Validate scenario files only.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

/// `elasticsim sim`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// Run this seed instead of the scenario's.
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// Run many seeds in parallel: `N` (seeds 1..=N) or `A..B` (A to B-1).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Allocator policy: upstream, pr355 or safe (overrides `[plugin] policy`).
    #[arg(long, value_parser = ["upstream", "pr355", "safe"])]
    pub policy: Option<String>,
    /// Leader-runner variant: agentk-v1 or fixed (overrides `[leader] variant`).
    #[arg(long, value_parser = ["agentk-v1", "fixed"])]
    pub variant: Option<String>,
    /// Report folder (default `reports/<scenario>/<policy>/seed-<seed>/`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write `trace.jsonl`.
    #[arg(long)]
    pub trace: bool,
    /// Also write the run's pod observations to FILE in the recorded trace format (replay
    /// mode's `[[jobs]] kind = "trace"` reads it).
    #[arg(long, value_name = "FILE")]
    pub export_trace: Option<PathBuf>,
    /// Worker threads for `--seeds` (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print only the verdict line.
    #[arg(long)]
    pub quiet: bool,
}
