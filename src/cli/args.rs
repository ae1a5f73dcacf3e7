//! Flags. Every flag is long-form; `--help` text comes from these doc comments.

use crate::allocator::Policy;
use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// elasticsim: deterministic simulation and chaos testing for Kubernetes elastic agents and
/// leader-elected modules.
#[derive(Debug, Parser)]
#[command(name = "elasticsim", version, about, long_about = None)]
pub struct Cli {
    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands, one per variant; each variant's doc comment is its `--help` line.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a scenario (one seed, or many in parallel) and write its report.
    Sim(SimArgs),
    /// Run the same seeds under several policies and print them side by side.
    Compare(CompareArgs),
    /// Minimise a failing seed's jobs and faults into a `repro.toml` that fails on its own.
    Shrink(ShrinkArgs),
    /// Validate scenario files only.
    Check {
        /// Scenario files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Every scenario and regression entry over many seeds, compared with the baselines.
    Nightly(NightlyArgs),
    /// Redraw the plots of a run report folder from its CSVs.
    Plot {
        /// The report folder (with `timeline.csv`, `jobs.csv`, `faults.csv`).
        dir: PathBuf,
    },
    /// Watch a real cluster's elastic-agent pods and write a recorded trace (read-only).
    Record(RecordArgs),
    /// Run a scenario paced against the wall clock and serve its Kubernetes API on loopback.
    Serve(ServeArgs),
    /// Review a candidate policy against a base on identical seeds: where it first decides
    /// differently, what breaks, what changes (`review.md`, `review.json`, `index.html`).
    Review(ReviewArgs),
    /// Join the shard folders of one `--shard` run into the files the unsharded run writes.
    ///
    /// Works for `sim --seeds`, `compare`, `nightly` and `review` shards. Fails (exit 2, writing
    /// nothing) if a shard or a seed is missing or repeated, naming them and the folders.
    Merge(MergeArgs),
    /// List the names `--ablate` takes: rules of `safe`, fixes of `fixed`, one line each.
    Ablations,
    /// Sweep seeds of the generic exploration scenarios per target (a defective policy or
    /// variant, or one ablation) until a violation or the budget; shrink what it finds.
    Hunt(HuntArgs),
}

/// `elasticsim hunt`.
#[derive(Debug, Clone, clap::Args)]
pub struct HuntArgs {
    /// Generic scenarios (default `scenarios/explore/elastic.toml` and `leader.toml`).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Targets: pr355, agentk-v1, agentk-v2, agentk-head, safe-ablations (one target per
    /// rule of safe), fixed-ablations (one per fix of fixed), or one ablation as
    /// `safe-NAME`/`fixed-NAME`; and the designs this project proposes, `safe` and `fixed`,
    /// searched for their next defect.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = concat!(
            "pr355,agentk-v1,agentk-v2,agentk-head,",
            "safe-ablations,fixed-ablations,safe,fixed"
        )
    )]
    pub targets: Vec<String>,
    /// Exit 1 when any target is killed: a gate for designs that should survive (`safe`,
    /// `fixed`), whose finds are shrunk and reported like any other.
    #[arg(long)]
    pub fail_on_find: bool,
    /// Wall-clock budget per target and mode (`60s`, `5m`).
    #[arg(long, default_value = "60s")]
    pub budget: String,
    /// Only the coverage-guided search (default: uniform, then guided).
    #[arg(long, conflicts_with = "uniform")]
    pub guided: bool,
    /// Only the uniform search over seeds.
    #[arg(long)]
    pub uniform: bool,
    /// The master seed every seed and swarm draw of the hunt derives from.
    #[arg(long, default_value_t = 1)]
    pub master_seed: u64,
    /// Wall-clock budget for shrinking each find (`8s`).
    #[arg(long, default_value = "8s")]
    pub shrink_time: String,
    /// Worker threads (default: all cores). Results do not depend on it.
    #[arg(long)]
    pub threads: Option<usize>,
    /// Output folder for `hunt.md`, `hunt.json` and `<target>/repro.toml`.
    #[arg(long, default_value = "reports/hunt")]
    pub out: PathBuf,
}

/// `elasticsim merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// Shard folders (each with `shard.json`), or folders whose subfolders are shard folders.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Output folder for the merged tables, plots, `index.html` and `junit.xml`.
    #[arg(long, default_value = "reports/merged")]
    pub out: PathBuf,
}

/// `elasticsim nightly`.
#[derive(Debug, Clone, clap::Args)]
pub struct NightlyArgs {
    /// Seeds per (scenario, policy) for a quick run: replaces the default of `nightly.toml`
    /// and caps the per-scenario counts (default from `nightly.toml`, else 200).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Rewrite the baselines (`reports/baselines/`): runs the scenarios `nightly.toml` lists
    /// under `baselines` for `baseline_seeds` seeds each and writes their means.
    #[arg(long, conflicts_with = "check_baseline")]
    pub update_baseline: bool,
    /// Re-run exactly what `--update-baseline` runs and fail (exit 1) unless every metric
    /// equals its committed baseline: runs are deterministic, so a moved metric is a change
    /// of the model or of a policy, whose commit must re-make the baselines.
    #[arg(long)]
    pub check_baseline: bool,
    /// Output folder.
    #[arg(long, default_value = "reports/nightly")]
    pub out: PathBuf,
    /// Folder of scenarios (with `nightly.toml` and `regressions/`).
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// Folder of baseline files (`<scenario>.json`).
    #[arg(long, default_value = "reports/baselines")]
    pub baselines: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Run only shard K of N, K from 0 to N-1 (0-based, like a Kubernetes Indexed Job's
    /// completion index). Runs are listed regression entries first, then scenario files by
    /// path, policies, seeds ascending; run i goes to shard i mod N, whatever the thread
    /// count. `auto/N` takes K from JOB_COMPLETION_INDEX. Outputs and `shard.json` go to
    /// `<out>/shard-K-of-N/`; `merge` joins the shards and compares the baselines
    /// (`--update-baseline` needs an unsharded run).
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}

/// `elasticsim record`.
#[derive(Debug, Clone, clap::Args)]
pub struct RecordArgs {
    /// Namespace to watch.
    #[arg(long)]
    pub namespace: String,
    /// The trace file to write (JSON Lines, flushed per line).
    #[arg(long)]
    pub out: PathBuf,
    /// Kubeconfig (default: KUBECONFIG, ~/.kube/config or in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Stop after this long (e.g. `1h`, `90s`); default: until Ctrl-C.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_duration: Option<String>,
}

/// `elasticsim serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// Port on 127.0.0.1 (0 picks a free one; the kubeconfig names it).
    #[arg(long, default_value_t = 6443)]
    pub port: u16,
    /// Simulated seconds per wall second.
    #[arg(long, default_value_t = 60.0)]
    pub speed: f64,
    /// Stop after this much wall time (e.g. `10m`); default: until Ctrl-C.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_duration: Option<String>,
    /// Run this seed instead of the scenario's.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Allocator policy: upstream, pr355 or safe (overrides `[plugin] policy`).
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Output folder for kubeconfig, trace.jsonl and export.jsonl
    /// (default `reports/<scenario>/serve/`).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// `elasticsim sim`.
#[derive(Debug, Clone, clap::Args)]
pub struct SimArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// Run this seed instead of the scenario's.
    #[arg(long, conflicts_with = "seeds")]
    pub seed: Option<u64>,
    /// Run many seeds in parallel: `N` (seeds 1 to N) or `A..B` (seeds A to B-1).
    #[arg(long)]
    pub seeds: Option<String>,
    /// Allocator policy: upstream, pr355 or safe (overrides `[plugin] policy`).
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Leader-runner variant (overrides `[leader] variant`).
    #[arg(long, value_enum)]
    pub variant: Option<crate::mutants::Variant>,
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
    /// Run only shard K of N, K from 0 to N-1 (0-based, like a Kubernetes Indexed Job's
    /// completion index). The i-th seed of `--seeds` (from 0) goes to shard i mod N,
    /// whatever the thread count. `auto/N` takes K from JOB_COMPLETION_INDEX. Outputs and
    /// `shard.json` go to `<out>/shard-K-of-N/`; `merge` joins the shards.
    #[arg(long, value_name = "K/N", requires = "seeds")]
    pub shard: Option<String>,
    /// Print only the verdict line.
    #[arg(long)]
    pub quiet: bool,
    /// Switch off named rules of `safe` or fixes of `fixed`, comma-separated (a mutant with
    /// a known defect; `elasticsim ablations` lists the names). Recorded in the summary and
    /// folded into the fingerprint.
    #[arg(long, value_name = "NAME[,NAME…]")]
    pub ablate: Option<String>,
    /// Replace each seed's swarm choice (kinds on, weights, interval factor) with this one,
    /// as a guided hunt prints it: `interval=0.80,pod_delete=2.50,server_crash=0.00`.
    #[arg(long, value_name = "DRAW")]
    pub swarm_draw: Option<String>,
}

/// `elasticsim compare`.
#[derive(Debug, Clone, clap::Args)]
pub struct CompareArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// Policies to compare, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = Policy::ALL)]
    pub policies: Vec<Policy>,
    /// Leader-runner variants to compare instead of policies, comma-separated (a scenario
    /// with a `[leader]` section; the table shows failovers and leader figures).
    #[arg(long, value_delimiter = ',', value_enum, conflicts_with = "policies")]
    pub variants: Option<Vec<crate::mutants::Variant>>,
    /// Seeds: `N` (seeds 1 to N) or `A..B` (seeds A to B-1).
    #[arg(long, default_value = "100")]
    pub seeds: String,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Folder for `compare.csv` and `compare.md` (default `reports/<scenario>/compare/`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only shard K of N, K from 0 to N-1 (0-based, like a Kubernetes Indexed Job's
    /// completion index). Cells (policy or variant, seed) are listed policy by policy in
    /// `--policies` (or `--variants`) order, seeds ascending; cell i goes to shard i mod N,
    /// whatever the thread count. `auto/N` takes K from JOB_COMPLETION_INDEX. Outputs and
    /// `shard.json` go to `<out>/shard-K-of-N/`; `merge` joins the shards.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
    /// Switch off named rules of `safe` or fixes of `fixed`, comma-separated (a mutant with
    /// a known defect; `elasticsim ablations` lists the names). Recorded in the summary and
    /// folded into the fingerprint.
    #[arg(long, value_name = "NAME[,NAME…]")]
    pub ablate: Option<String>,
}

/// `elasticsim shrink`.
#[derive(Debug, Clone, clap::Args)]
pub struct ShrinkArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// The failing seed.
    #[arg(long)]
    pub seed: u64,
    /// Allocator policy: upstream, pr355 or safe (overrides `[plugin] policy`).
    #[arg(long, value_enum)]
    pub policy: Option<Policy>,
    /// Leader-runner variant (overrides `[leader] variant`).
    #[arg(long, value_enum)]
    pub variant: Option<crate::mutants::Variant>,
    /// The invariant id to keep failing (default: the run's earliest violation).
    #[arg(long, value_enum)]
    pub invariant: Option<crate::check::InvariantId>,
    /// Wall-clock budget for shrinking, as a duration (`60s`, `5m`).
    #[arg(long, default_value = "60s")]
    pub time: String,
    /// Where to write the repro (default `reports/<scenario>/<policy>/seed-<N>/repro.toml`).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Switch off named rules of `safe` or fixes of `fixed`, comma-separated (a mutant with
    /// a known defect; `elasticsim ablations` lists the names). Recorded in the summary and
    /// folded into the fingerprint.
    #[arg(long, value_name = "NAME[,NAME…]")]
    pub ablate: Option<String>,
}

/// `elasticsim review`.
#[derive(Debug, Clone, clap::Args)]
pub struct ReviewArgs {
    /// Scenario files (default: every elastic-agent scenario of scenarios/nightly.toml, each
    /// with at most as many seeds as the nightly runs it).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The policy reviewed against (the as-is behaviour).
    #[arg(long, value_enum, default_value_t = Policy::Upstream)]
    pub base: Policy,
    /// The policy under review.
    #[arg(long, value_enum)]
    pub candidate: Policy,
    /// Seeds: `N` (seeds 1..=N) or `A..B` (A to B-1); both policies run every seed.
    #[arg(long, default_value = "50")]
    pub seeds: String,
    /// Force `enable_agent_reuse` off, on, or run each scenario both ways.
    #[arg(long, default_value = "both", value_parser = ["on", "off", "both"])]
    pub reuse: String,
    /// Switch off named rules of `safe` or fixes of `fixed` in the candidate's runs only
    /// (`elasticsim ablations` lists them); the base runs as is.
    #[arg(long, value_name = "NAME[,NAME…]")]
    pub ablate: Option<String>,
    /// Folder for `review.md`, `review.json`, `index.html`, charts and repros.
    #[arg(long, default_value = "reports/review")]
    pub out: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Run only shard K of N (0-based). Cells (scenario, reuse, seed) are listed scenario by
    /// scenario, reuse off before on, seeds ascending; cell i goes to shard i mod N. Outputs
    /// and `shard.json` go to `<out>/shard-K-of-N/`; `merge` joins the shards.
    #[arg(long, value_name = "K/N")]
    pub shard: Option<String>,
}
