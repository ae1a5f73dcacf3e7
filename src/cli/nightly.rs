//! `elasticsim nightly`: the nightly regression run (see `crate::nightly`).

use super::Failure;
use super::args::NightlyArgs;
use super::sweep::{parse_shard, shard_folder};
use crate::explore::shard::Assembled;
use crate::nightly::{NightlyError, NightlyOptions, NightlyOutcome};
use crate::wall::Stopwatch;
use std::path::Path;

fn failure(error: NightlyError) -> Failure {
    match error {
        NightlyError::Input(message) => Failure::Input(message),
        NightlyError::Internal(message) => Failure::Internal(message),
    }
}

pub(super) fn run(args: &NightlyArgs) -> Result<(), Failure> {
    let shard = parse_shard(args.shard.as_deref())?;
    let options = NightlyOptions {
        scenarios_dir: args.scenarios.clone(),
        baselines_dir: args.baselines.clone(),
        out_dir: shard_folder(args.out.clone(), shard),
        seeds: args.seeds,
        update_baseline: args.update_baseline,
        check_baseline: args.check_baseline,
        threads: args.threads,
        progress: true,
        shard,
    };
    crate::interrupt::install();
    let stopwatch = Stopwatch::start();
    let outcome = crate::nightly::run(&options).map_err(failure)?;
    let timing = format!("nightly took {:.1}s", stopwatch.seconds());
    let reported = report(&outcome, &timing, &options.out_dir);
    match &outcome.interrupted {
        Some(line) => Err(Failure::Interrupted(line.clone())),
        None => reported,
    }
}

/// Print every case's verdict and problems; the exit status follows the outcome.
fn report(outcome: &NightlyOutcome, timing: &str, out: &Path) -> Result<(), Failure> {
    for warning in &outcome.warnings {
        eprintln!("warning: {warning}");
    }
    for group in &outcome.groups {
        let verdict = if group.failed() { "FAIL" } else { "PASS" };
        println!(
            "{verdict} {} / {}: {} of {} seeds passed",
            group.suite, group.case, group.passed, group.seeds
        );
        for line in group.problems() {
            println!("  {line}");
        }
    }
    for path in &outcome.baselines_written {
        println!("baseline written: {}", path.display());
    }
    println!("{timing}; report: {}", out.join("index.html").display());
    if outcome.failed() {
        Err(Failure::Violated)
    } else {
        Ok(())
    }
}

/// `merge` of nightly shards.
pub(super) fn merge(assembled: &Assembled, out: &Path) -> Result<(), Failure> {
    let outcome = crate::nightly::merge(assembled, out).map_err(failure)?;
    let timing = format!("nightly merged from {} shards", assembled.count);
    report(&outcome, &timing, out)
}
