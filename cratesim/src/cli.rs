//! The command line: read the scenario, turn it into a [`Plan`], run the seeds one after the
//! other (each on a thread of its own), print one line per seed and a summary.

use crate::crates::LeaseCrate;
use crate::faults::crate_faults;
use crate::replica::Timings;
use crate::run::{NOT_JUDGED, Outcome, Plan, run_seed};
use crate::sim::NetworkSettings;
use elasticsim::check::{Checker, InvariantId};
use elasticsim::leader::Variant;
use elasticsim::scenario::Scenario;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::time::Duration;

const USAGE: &str = "usage: elasticsim-crates sim FILE [--seed N | --seeds N | --seeds A..B] \
                     [--out DIR] [--trace]";

/// What the command line asks for.
#[derive(Debug, PartialEq)]
struct Args {
    file: PathBuf,
    seeds: Option<(u64, u64)>,
    seed: Option<u64>,
    out: Option<PathBuf>,
    trace: bool,
}

/// Run the command line; the exit code as elasticsim's.
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args) {
        Ok(args) => args,
        Err(message) => {
            eprintln!("elasticsim-crates: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let loaded = match elasticsim::scenario::load(&args.file) {
        Ok(loaded) => loaded,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    let plan = match plan(&loaded.scenario) {
        Ok(plan) => plan,
        Err(message) => {
            eprintln!("{}: {message}", args.file.display());
            return ExitCode::from(2);
        }
    };
    run_all(&args, &loaded.scenario, &plan)
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let [command, file, rest @ ..] = args else {
        return Err("expected `sim FILE`".to_owned());
    };
    if command != "sim" {
        return Err(format!("unknown command {command:?}: only `sim`"));
    }
    let mut parsed = Args {
        file: PathBuf::from(file),
        seeds: None,
        seed: None,
        out: None,
        trace: false,
    };
    let mut rest = rest.iter();
    while let Some(flag) = rest.next() {
        let mut value = || rest.next().ok_or(format!("{flag} takes a value"));
        match flag.as_str() {
            "--seed" => parsed.seed = Some(number(value()?)?),
            "--seeds" => parsed.seeds = Some(seed_range(value()?)?),
            "--out" => parsed.out = Some(PathBuf::from(value()?)),
            "--trace" => parsed.trace = true,
            other => return Err(format!("unknown flag {other:?}")),
        }
    }
    if parsed.seed.is_some() && parsed.seeds.is_some() {
        return Err("--seed conflicts with --seeds".to_owned());
    }
    Ok(parsed)
}

fn number(text: &str) -> Result<u64, String> {
    text.parse()
        .map_err(|_| format!("expected a whole number, found {text:?}"))
}

/// `N` is seeds 1 to N; `A..B` is seeds A to B-1 (elasticsim's `--seeds`).
fn seed_range(text: &str) -> Result<(u64, u64), String> {
    let (first, end) = match text.split_once("..") {
        Some((a, b)) => (number(a)?, number(b)?),
        None => (1, number(text)? + 1),
    };
    if end <= first {
        return Err(format!("--seeds {text}: an empty range"));
    }
    Ok((first, end))
}

/// The run's plan from the scenario, or why a crate run cannot take it.
fn plan(scenario: &Scenario) -> Result<Plan, String> {
    let leader = scenario
        .leader
        .as_ref()
        .ok_or("no [leader] section: a crate run needs [leader] lease_crate")?;
    let lease_crate = leader
        .lease_crate
        .ok_or("[leader] has no lease_crate: run this scenario with elasticsim (its models)")?;
    let whole = |ms: u64, key: &str| {
        if ms.is_multiple_of(1000) {
            Ok(Duration::from_millis(ms))
        } else {
            Err(format!(
                "[leader] {key} must be whole seconds for {} (its API takes seconds)",
                lease_crate.name()
            ))
        }
    };
    let timings = Timings {
        lease_duration: whole(leader.lease_duration_ms, "lease_duration")?,
        renew_deadline: whole(leader.renew_deadline_ms, "renew_deadline")?,
        retry_period: Duration::from_millis(leader.retry_period_ms),
    };
    let network = NetworkSettings {
        latency_ms: (
            scenario.cluster.api_latency.min_ms,
            scenario.cluster.api_latency.max_ms,
        ),
        error_rate: scenario.cluster.api_error_rate,
        request_timeout_ms: scenario.kube.request_timeout_ms,
    };
    let leader_bounds = elasticsim::run::leader_bounds(scenario, leader, Variant::Fixed);
    let mut disabled: Vec<InvariantId> = Checker::ids().to_vec();
    disabled.extend(NOT_JUDGED.iter().map(|&(id, _)| id));
    disabled.extend(scenario.invariants.disable.iter().copied());
    Ok(Plan {
        lease_crate,
        replicas: leader.replicas,
        timings,
        network,
        faults: crate_faults(scenario)?,
        duration_ms: scenario.duration_ms,
        settle_ms: scenario.settle_ms,
        bounds: elasticsim::run::bounds_of(scenario, false),
        leader_bounds,
        disabled,
    })
}

fn run_all(args: &Args, scenario: &Scenario, plan: &Plan) -> ExitCode {
    let (first, end) = match (args.seeds, args.seed) {
        (Some(range), _) => range,
        (None, Some(seed)) => (seed, seed + 1),
        (None, None) => (scenario.seed, scenario.seed + 1),
    };
    let started = wall_now();
    let mut outcomes = Vec::new();
    for seed in first..end {
        let trace = trace_path(args, seed);
        if let Some(Err(error)) = trace
            .as_ref()
            .and_then(|path| path.parent())
            .map(std::fs::create_dir_all)
        {
            eprintln!("elasticsim-crates: cannot create the trace folder: {error}");
            return ExitCode::from(3);
        }
        match run_seed(plan, seed, trace) {
            Ok(outcome) => {
                print_seed(&outcome, end - first == 1);
                outcomes.push(outcome);
            }
            Err(message) => {
                eprintln!("elasticsim-crates: {message}");
                return ExitCode::from(3);
            }
        }
    }
    let seconds = wall_now().duration_since(started).as_secs_f64();
    print_summary(plan.lease_crate, &outcomes, seconds);
    if outcomes.iter().all(Outcome::passed) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn trace_path(args: &Args, seed: u64) -> Option<PathBuf> {
    if !args.trace {
        return None;
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("reports/crates"));
    Some(out.join(format!("seed-{seed}")).join("trace.jsonl"))
}

fn print_seed(outcome: &Outcome, alone: bool) {
    let verdict = if outcome.passed() { "PASS" } else { "FAIL" };
    let ids = InvariantId::join(&outcome.violated_ids(), ",");
    println!(
        "seed {}: {verdict} {} {ids}",
        outcome.seed, outcome.fingerprint
    );
    if alone {
        for violation in outcome.violations.iter() {
            let expected = if violation.expected {
                " (expected)"
            } else {
                ""
            };
            println!(
                "  {} ms {}{expected}: {}",
                violation.at_ms, violation.id, violation.message
            );
            for line in &violation.context {
                println!("    {line}");
            }
        }
    }
}

fn print_summary(lease_crate: LeaseCrate, outcomes: &[Outcome], seconds: f64) {
    let passed = outcomes.iter().filter(|outcome| outcome.passed()).count();
    let mut counts: BTreeMap<InvariantId, usize> = BTreeMap::new();
    for outcome in outcomes {
        for id in outcome.violated_ids() {
            *counts.entry(id).or_insert(0) += 1;
        }
    }
    let violated: Vec<String> = counts
        .iter()
        .map(|(id, count)| format!("{id} {count}"))
        .collect();
    let records: u64 = outcomes.iter().map(|outcome| outcome.records).sum();
    println!(
        "{} {}: {passed} of {} seeds pass{}{}",
        lease_crate.name(),
        lease_crate.version(),
        outcomes.len(),
        if violated.is_empty() {
            ""
        } else {
            "; violated: "
        },
        violated.join(", ")
    );
    eprintln!(
        "{records} records in {seconds:.2} s of wall time ({:.0} records per second)",
        records as f64 / seconds.max(1e-9)
    );
}

/// The real clock, read on the command line's thread only (never a run's, where
/// `clock_gettime` is the system's), to time the sweep; it never enters a fingerprint.
#[allow(clippy::disallowed_methods)]
fn wall_now() -> std::time::Instant {
    // determinism-ok: the command line's thread, off every run.
    std::time::Instant::now()
}
