//! `elasticsim nightly`: the nightly regression run (see `crate::nightly`).

use super::Failure;
use super::args::NightlyArgs;
use crate::live::wall::Stopwatch;
use crate::nightly::{NightlyError, NightlyOptions};

pub(super) fn run(args: &NightlyArgs) -> Result<(), Failure> {
    let options = NightlyOptions {
        scenarios_dir: args.scenarios.clone(),
        baselines_dir: args.baselines.clone(),
        out_dir: args.out.clone(),
        seeds: args.seeds,
        update_baseline: args.update_baseline,
        threads: args.threads,
        progress: true,
    };
    let stopwatch = Stopwatch::start();
    let outcome = crate::nightly::run(&options).map_err(|error| match error {
        NightlyError::Input(message) => Failure::Input(message),
        NightlyError::Internal(message) => Failure::Internal(message),
    })?;
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
    println!(
        "nightly took {:.1}s; report: {}",
        stopwatch.seconds(),
        options.out_dir.join("index.html").display()
    );
    if outcome.failed() {
        Err(Failure::Violated)
    } else {
        Ok(())
    }
}
