//! Whole-model runs: events per second of a scenario with every monitor on and the fingerprint
//! computed, seed sweeps in rayon pools, and the day runs measured in child processes.

use anyhow::{Context, anyhow};
use elasticsim::run::{RunOutcome, run_scenario};
use elasticsim::scenario::Scenario;
use elasticsim::world::RunSettings;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Load a scenario file; `Ok(None)` if the file does not exist (yet).
pub fn load_if_present(path: &Path) -> anyhow::Result<Option<Scenario>> {
    if !path.exists() {
        return Ok(None);
    }
    let loaded = elasticsim::scenario::load(path).map_err(|error| anyhow!("{error}"))?;
    Ok(Some(loaded.scenario))
}

/// Load a scenario file that must exist.
pub fn load(path: &Path) -> anyhow::Result<Scenario> {
    load_if_present(path)?.ok_or_else(|| anyhow!("{} does not exist", path.display()))
}

/// The scenario cut to its first `duration_ms` of workload, followed by `settle_ms`.
pub fn cut(scenario: &Scenario, duration_ms: u64, settle_ms: u64) -> Scenario {
    let mut cut = scenario.clone();
    cut.duration_ms = duration_ms.min(scenario.duration_ms);
    cut.settle_ms = settle_ms;
    cut
}

/// One run of `scenario` under `seed` with its own policy: monitors on, fingerprint computed,
/// no trace file.
pub fn run_once(scenario: &Scenario, seed: u64) -> anyhow::Result<RunOutcome> {
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = seed;
    run_scenario(scenario, settings, None, String::new())
        .map_err(|error| anyhow!("{} seed {seed}: {error}", scenario.name))
}

/// One timed sample: runs of the scenario back to back until at least `sample_s` of wall time
/// has passed (a short scenario is too quick to time alone). Returns (events per second,
/// wall seconds per run).
pub fn time_runs(scenario: &Scenario, seed: u64, sample_s: f64) -> anyhow::Result<(f64, f64)> {
    let started = Instant::now();
    let mut events = 0u64;
    let mut runs = 0u32;
    loop {
        let outcome = run_once(scenario, seed)?;
        events += outcome.info.events;
        runs += 1;
        let elapsed_s = started.elapsed().as_secs_f64();
        if elapsed_s >= sample_s {
            return Ok((events as f64 / elapsed_s, elapsed_s / f64::from(runs)));
        }
    }
}

/// A seed sweep in a rayon pool of `threads` threads: (seeds per second, fingerprints by seed).
pub fn sweep(
    scenario: &Scenario,
    seeds: std::ops::RangeInclusive<u64>,
    threads: usize,
) -> anyhow::Result<(f64, Vec<String>)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .context("building the rayon pool")?;
    let count = seeds.clone().count();
    let started = Instant::now();
    let fingerprints: anyhow::Result<Vec<String>> = pool.install(|| {
        seeds
            .into_par_iter()
            .map(|seed| run_once(scenario, seed).map(|outcome| outcome.info.fingerprint))
            .collect()
    });
    let elapsed_s = started.elapsed().as_secs_f64();
    Ok((count as f64 / elapsed_s, fingerprints?))
}

/// What a child process reports about its one run of the day scenario.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ChildReport {
    pub hours: u64,
    pub peak_rss_mb: f64,
    pub wall_s: f64,
    /// CPU time of the child (user + system), to tell a slow run from a busy machine.
    pub cpu_s: f64,
    pub sim_ms: u64,
    pub events: u64,
}

/// The child's side (`--child-rss FILE --hours H`): run `day` cut to `hours` of workload plus
/// its own settle, then write the peak resident set size (`VmHWM`) and the run's figures.
pub fn child_rss(day_path: &Path, hours: u64, out: &Path) -> anyhow::Result<()> {
    let day = load(day_path)?;
    let scenario = cut(&day, hours * 3_600_000, day.settle_ms);
    let started = Instant::now();
    let outcome = run_once(&scenario, scenario.seed)?;
    let wall_s = started.elapsed().as_secs_f64();
    let status = std::fs::read_to_string("/proc/self/status")
        .context("reading /proc/self/status (peak RSS needs Linux)")?;
    let stat = std::fs::read_to_string("/proc/self/stat").context("reading /proc/self/stat")?;
    let report = ChildReport {
        hours,
        peak_rss_mb: vm_hwm_kb(&status)? as f64 / 1024.0,
        wall_s,
        cpu_s: cpu_s(&stat)?,
        sim_ms: outcome.info.sim_ms,
        events: outcome.info.events,
    };
    std::fs::write(out, serde_json::to_vec(&report)?)
        .with_context(|| format!("writing {}", out.display()))
}

/// The parent's side: run this executable as a child for `hours` and read its report.
pub fn spawn_child(day_path: &Path, hours: u64, scratch: &Path) -> anyhow::Result<ChildReport> {
    let executable = std::env::current_exe().context("locating the bench executable")?;
    let stem = day_path
        .file_stem()
        .map_or("day".into(), |stem| stem.to_string_lossy());
    let out: PathBuf = scratch.join(format!("child-rss-{stem}-{hours}h.json"));
    let status = std::process::Command::new(executable)
        .arg("--child-rss")
        .arg(&out)
        .arg("--hours")
        .arg(hours.to_string())
        .arg("--day")
        .arg(day_path)
        .status()
        .context("starting the child run")?;
    anyhow::ensure!(status.success(), "the {hours} h child run failed: {status}");
    let bytes = std::fs::read(&out).with_context(|| format!("reading {}", out.display()))?;
    // The report was only a hand-over; losing it changes nothing, so a failed removal is moot.
    let _ = std::fs::remove_file(&out);
    Ok(serde_json::from_slice(&bytes)?)
}

/// `VmHWM` (peak resident set) in kB from the text of `/proc/self/status`.
pub fn vm_hwm_kb(status: &str) -> anyhow::Result<u64> {
    let line = status
        .lines()
        .find(|line| line.starts_with("VmHWM:"))
        .ok_or_else(|| anyhow!("no VmHWM line in /proc/self/status"))?;
    let value = line["VmHWM:".len()..].trim().trim_end_matches("kB").trim();
    value
        .parse()
        .with_context(|| format!("parsing VmHWM from {line:?}"))
}

/// Clock ticks per second of `/proc/<pid>/stat` times (`USER_HZ`, 100 on Linux).
const TICKS_PER_S: f64 = 100.0;

/// User plus system CPU seconds from the text of `/proc/self/stat` (fields 14 and 15; the
/// command name in parentheses may hold spaces, so fields are counted after its `)`).
pub fn cpu_s(stat: &str) -> anyhow::Result<f64> {
    let after_name = stat
        .rfind(')')
        .map(|index| &stat[index + 1..])
        .ok_or_else(|| anyhow!("no command name in /proc/self/stat"))?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // After the name, field 3 (state) is index 0, so utime (14) is index 11, stime index 12.
    let ticks = |index: usize| -> anyhow::Result<f64> {
        let field = fields
            .get(index)
            .ok_or_else(|| anyhow!("/proc/self/stat is too short"))?;
        Ok(field.parse::<u64>().context("a CPU time field")? as f64)
    };
    Ok((ticks(11)? + ticks(12)?) / TICKS_PER_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_resident_set_is_read_in_kilobytes() {
        let status = "Name:\tbench\nVmPeak:\t  999 kB\nVmHWM:\t   12345 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(vm_hwm_kb(status).expect("a VmHWM line"), 12_345);
        assert!(vm_hwm_kb("Name:\tbench\n").is_err());
    }

    #[test]
    fn cpu_time_is_user_plus_system_ticks_after_the_command_name() {
        let stat = "4242 (bench (x) y) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 1 0";
        assert_eq!(cpu_s(stat).expect("a full stat line"), 3.0);
        assert!(cpu_s("4242 (bench) R 1 2").is_err());
    }

    #[test]
    fn a_cut_scenario_keeps_only_the_first_part_of_its_workload() {
        let burst = load(&crate::scenarios_folder().join("burst.toml")).expect("burst.toml");
        let short = cut(&burst, 90_000, 0);
        assert_eq!((short.duration_ms, short.settle_ms), (90_000, 0));
        let outcome = run_once(&short, 7).expect("the cut run");
        assert_eq!(outcome.info.sim_ms, 90_000);
        let full = run_once(&burst, 7).expect("the full run");
        assert!(outcome.info.events < full.info.events);
    }

    #[test]
    fn a_sweep_gives_the_same_fingerprints_in_one_and_two_threads() {
        let burst = load(&crate::scenarios_folder().join("burst.toml")).expect("burst.toml");
        let short = cut(&burst, 120_000, 60_000);
        let (_, one) = sweep(&short, 1..=4, 1).expect("one thread");
        let (_, two) = sweep(&short, 1..=4, 2).expect("two threads");
        assert_eq!(one, two);
        assert_eq!(one.len(), 4);
        assert_ne!(one[0], one[1], "different seeds, different runs");
    }
}
