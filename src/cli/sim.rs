//! `elasticsim sim`: one run with its report folder.

use super::Failure;
use super::args::SimArgs;
use crate::run::{RunOutcome, run_scenario};
use crate::scenario::Scenario;
use crate::wall::Stopwatch;
use crate::world::RunSettings;
use std::path::{Path, PathBuf};

/// Load and validate a scenario, printing warnings; errors are bad input (exit 2).
pub(super) fn load(file: &Path) -> Result<Scenario, Failure> {
    let loaded = crate::scenario::load(file).map_err(|e| Failure::Input(e.to_string()))?;
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    Ok(loaded.scenario)
}

/// `--ablate NAME[,NAME…]` written into the scenario (so a shrunk repro carries it); an
/// unknown name is bad input listing the valid ones.
pub(super) fn apply_ablate(scenario: &mut Scenario, ablate: Option<&str>) -> Result<(), Failure> {
    if let Some(text) = ablate {
        scenario.ablations = crate::mutants::parse(text)
            .map_err(|message| Failure::Input(format!("--ablate: {message}")))?;
    }
    Ok(())
}

/// `--swarm-draw DRAW`: the scenario's swarm must be on and know every kind named.
pub(super) fn apply_swarm_draw(scenario: &mut Scenario, text: Option<&str>) -> Result<(), Failure> {
    let Some(text) = text else {
        return Ok(());
    };
    let draw = crate::scenario::SwarmDraw::parse(text)
        .map_err(|message| Failure::Input(format!("--swarm-draw: {message}")))?;
    if !scenario.swarm.enabled {
        return Err(Failure::Input(format!(
            "--swarm-draw: scenario {} has no [swarm] enabled = true",
            scenario.name
        )));
    }
    if let Some(kind) = draw
        .weights
        .keys()
        .find(|k| !scenario.swarm.kinds.contains(&k.0))
    {
        let names: Vec<&str> = scenario.swarm.kinds.iter().map(|k| k.name()).collect();
        return Err(Failure::Input(format!(
            "--swarm-draw: {:?} is not in [swarm] kinds ({})",
            kind.0.name(),
            names.join(", ")
        )));
    }
    scenario.swarm.draw = Some(draw);
    Ok(())
}

/// Run settings from the scenario and the flags.
pub(super) fn settings(scenario: &Scenario, args: &SimArgs) -> Result<RunSettings, Failure> {
    if let Some(lease_crate) = scenario.leader.as_ref().and_then(|l| l.lease_crate) {
        return Err(Failure::Input(format!(
            "{}: [leader] lease_crate = {:?} runs that crate's own code, which this binary \
             does not hold: `cargo xtask sim {}` runs it with elasticsim-crates \
             (docs/crates.md)",
            args.file.display(),
            lease_crate.name(),
            args.file.display()
        )));
    }
    let mut settings = RunSettings::from_scenario(scenario);
    if let Some(seed) = args.seed {
        settings.seed = seed;
    }
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
    Ok(settings)
}

/// The command that reproduces a run.
pub(super) fn reproduce(file: &Path, settings: &RunSettings, scenario: &Scenario) -> String {
    let mut command = format!(
        "cargo xtask sim {} --seed {} --policy {}",
        file.display(),
        settings.seed,
        settings.policy.name()
    );
    if let (Some(variant), Some(_)) = (settings.variant, &scenario.leader) {
        command.push_str(&format!(" --variant {}", variant.name()));
    }
    if !scenario.ablations.is_empty() {
        command.push_str(&format!(" --ablate {}", scenario.ablations.label()));
    }
    if let Some(draw) = &scenario.swarm.draw {
        command.push_str(&format!(" --swarm-draw {draw}"));
    }
    command
}

/// The default report folder of a run.
pub(super) fn report_dir(scenario: &Scenario, settings: &RunSettings) -> PathBuf {
    let mut dir = PathBuf::from("reports")
        .join(&scenario.name)
        .join(settings.policy.name());
    if let (Some(variant), Some(_)) = (settings.variant, &scenario.leader) {
        dir = dir.join(variant.name());
    }
    if !scenario.ablations.is_empty() {
        dir = dir.join(format!(
            "ablate-{}",
            scenario.ablations.label().replace(',', "+")
        ));
    }
    dir.join(format!("seed-{}", settings.seed))
}

/// One seed, timed, with its report written.
pub(super) fn run_one(
    file: &Path,
    scenario: &Scenario,
    settings: RunSettings,
    out: Option<&Path>,
    trace: bool,
) -> Result<RunOutcome, Failure> {
    let dir = out.map_or_else(|| report_dir(scenario, &settings), Path::to_path_buf);
    std::fs::create_dir_all(&dir)
        .map_err(|e| Failure::Internal(format!("cannot create {}: {e}", dir.display())))?;
    let trace_path = trace.then(|| dir.join("trace.jsonl"));
    let command = reproduce(file, &settings, scenario);
    let stopwatch = Stopwatch::start();
    let mut outcome = run_scenario(scenario, settings, trace_path.as_deref(), command)?;
    outcome.info.wall_s = stopwatch.seconds();
    crate::report::write_run(&dir, &outcome.info, &outcome.collector)
        .map_err(|e| Failure::Internal(format!("writing the report in {}: {e}", dir.display())))?;
    Ok(outcome)
}

/// Load the scenario and apply `--ablate` and `--swarm-draw`.
pub(super) fn load_with(args: &SimArgs) -> Result<Scenario, Failure> {
    let mut scenario = load(&args.file)?;
    apply_ablate(&mut scenario, args.ablate.as_deref())?;
    apply_swarm_draw(&mut scenario, args.swarm_draw.as_deref())?;
    Ok(scenario)
}

pub(super) fn run(args: &SimArgs) -> Result<(), Failure> {
    let scenario = load_with(args)?;
    let settings = settings(&scenario, args)?;
    let outcome = run_one(
        &args.file,
        &scenario,
        settings.clone(),
        args.out.as_deref(),
        args.trace,
    )?;
    if let Some(path) = &args.export_trace {
        export(&scenario, settings.clone(), path, &outcome.info.fingerprint)?;
    }
    let metrics = outcome.collector.metrics(&outcome.info);
    if args.quiet {
        let verdict = outcome.info.verdict.to_uppercase();
        super::say(&format!("{verdict} {}\n", outcome.info.fingerprint));
    } else {
        super::say(&crate::report::terminal::summary(&outcome.info, &metrics));
        let dir = args
            .out
            .clone()
            .unwrap_or_else(|| report_dir(&scenario, &settings));
        super::say(&format!("report: {}\n", dir.display()));
    }
    if outcome.passed() {
        Ok(())
    } else {
        Err(Failure::Violated)
    }
}

/// `--export-trace FILE`: the same run again (runs are deterministic), exported.
fn export(
    scenario: &Scenario,
    settings: RunSettings,
    path: &Path,
    fingerprint: &str,
) -> Result<(), Failure> {
    crate::export::export_run_checked(scenario, settings, path, fingerprint)
        .map(|_| ())
        .map_err(|error| match error {
            crate::export::ExportError::World(crate::world::WorldError::Input(message)) => {
                Failure::Input(message)
            }
            other => Failure::Internal(other.to_string()),
        })
}
