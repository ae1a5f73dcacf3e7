//! `elasticsim shrink FILE --seed N`: minimise a failing seed into a `repro.toml` that fails
//! the same invariant on its own. Exits 0 when a repro was written (it fails by design).

use super::Failure;
use super::args::ShrinkArgs;
use super::sim::{load, report_dir};
use crate::explore::{Size, shrink};
use crate::report::atomic;
use crate::scenario::format_duration_ms;
use crate::wall::Stopwatch;
use crate::world::RunSettings;

pub(super) fn run(args: &ShrinkArgs) -> Result<(), Failure> {
    let budget_ms = crate::scenario::parse_duration_ms(&args.time).map_err(|e| {
        Failure::Input(format!(
            "--time {:?}: expected a duration such as 60s or 5m, found {}",
            args.time,
            e.describe()
        ))
    })?;
    let mut scenario = load(&args.file)?;
    super::sim::apply_ablate(&mut scenario, args.ablate.as_deref())?;
    let mut settings = RunSettings::from_scenario(&scenario);
    settings.seed = args.seed;
    if let Some(policy) = args.policy {
        settings.policy = policy;
    }
    if let Some(variant) = &args.variant {
        if scenario.leader.is_none() {
            return Err(Failure::Input(format!(
                "--variant {}: {} has no [leader] section",
                variant.name(),
                args.file.display()
            )));
        }
        settings.variant = Some(*variant);
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| report_dir(&scenario, &settings).join("repro.toml"));
    let stopwatch = Stopwatch::start();
    let budget_s = budget_ms as f64 / 1000.0;
    let out_of_time = || stopwatch.seconds() >= budget_s;
    let outcome = shrink(&scenario, &settings, args.invariant, &out_of_time)?;
    let wall_s = stopwatch.seconds();
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Failure::Internal(format!("cannot create {}: {e}", parent.display())))?;
    }
    let text = crate::scenario::to_toml(&outcome.repro);
    atomic::write_file(&out, text.as_bytes())
        .map_err(|e| Failure::Internal(format!("writing {}: {e}", out.display())))?;
    println!(
        "shrunk {} seed {} (policy {}) keeping {} failing, in {} runs and {wall_s:.1}s{}",
        scenario.name,
        settings.seed,
        settings.policy.name(),
        outcome.invariant,
        outcome.runs,
        if outcome.stopped_early {
            " (time budget ran out)"
        } else {
            ""
        }
    );
    if outcome.fallback {
        println!("  the explicit run lost the failure: shrank the scenario's own entries only");
    }
    println!("{}", size_line(&outcome.original, &outcome.shrunk));
    println!("repro: {}", out.display());
    println!("reproduce: cargo xtask sim {}", out.display());
    Ok(())
}

/// `jobs 47 → 3, faults 12 → 1, simulated 50m → 9m`.
pub(super) fn size_line(original: &Size, shrunk: &Size) -> String {
    format!(
        "  jobs {} → {}, faults {} → {}, simulated {} → {}",
        original.jobs,
        shrunk.jobs,
        original.faults,
        shrunk.faults,
        format_duration_ms(original.simulated_ms),
        format_duration_ms(shrunk.simulated_ms)
    )
}
