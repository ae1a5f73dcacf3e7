//! Measuring every figure of the bench, in order, printing each row as it is done.

use crate::hold::{self, HoldSettings};
use crate::model;
use crate::output::table_row;
use crate::stats::{Figure, Target};
use crate::turmoil_burst::{self, PlannedJob, TurmoilSettings};
use elasticsim::world::{RunSettings, World};
use std::path::PathBuf;
use std::time::Instant;

/// How much to repeat; `--quick` repeats less.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub quick: bool,
    pub repetitions: usize,
    pub day_repetitions: usize,
    /// Runs of the ten-times-larger day (each tens of seconds).
    pub day_x10_repetitions: usize,
    pub turmoil_repetitions: usize,
    pub sweep_repetitions: usize,
    pub sweep_seeds: u64,
    /// Simulated span of the turmoil comparison.
    pub turmoil_span_ms: u64,
    /// Wall time of one sample of a short model run (repeated back to back).
    pub model_sample_s: f64,
}

impl Plan {
    pub fn new(quick: bool) -> Plan {
        Plan {
            quick,
            repetitions: if quick { 3 } else { 7 },
            day_repetitions: if quick { 1 } else { 3 },
            day_x10_repetitions: if quick { 1 } else { 3 },
            turmoil_repetitions: if quick { 1 } else { 3 },
            sweep_repetitions: if quick { 1 } else { 3 },
            sweep_seeds: 200,
            turmoil_span_ms: 6 * 60_000,
            model_sample_s: if quick { 0.2 } else { 0.5 },
        }
    }
}

/// The bench in progress: the figures so far.
pub struct Bench {
    pub plan: Plan,
    pub scenarios: PathBuf,
    pub scratch: PathBuf,
    pub figures: Vec<Figure>,
    pub sweep_fingerprints_identical: Option<bool>,
}

fn seconds<T>(run: impl FnOnce() -> T) -> (f64, T) {
    let started = Instant::now();
    let value = run();
    (started.elapsed().as_secs_f64(), value)
}

impl Bench {
    pub(crate) fn push(&mut self, figure: Figure) {
        println!("{}", table_row(&figure));
        self.figures.push(figure);
    }

    /// The bare loop, the engine loop and their ratio, interleaved repetition by repetition so
    /// that machine noise hits both alike.
    pub fn hold_loops(&mut self) -> anyhow::Result<()> {
        let settings = HoldSettings::STANDARD;
        let (mut bare, mut engine, mut ratio) = (Vec::new(), Vec::new(), Vec::new());
        for repetition in 0..self.plan.repetitions {
            let seed = repetition as u64 + 1;
            let (bare_s, bare_result) =
                seconds(|| hold::bare_loop(&settings, hold::bare_seed(seed)));
            let (engine_s, engine_result) = seconds(|| hold::engine_loop(&settings, seed));
            anyhow::ensure!(
                bare_result == engine_result,
                "the bare and engine loops diverged: {bare_result:?} vs {engine_result:?}"
            );
            bare.push(bare_result.events as f64 / bare_s);
            engine.push(engine_result.events as f64 / engine_s);
            ratio.push(engine_s / bare_s);
        }
        let note = format!(
            "hold model: {} clients x {} in flight x {} requests = {} events, latency {}-{} ms",
            settings.clients,
            settings.window,
            settings.rounds,
            settings.events_expected(),
            settings.latency_min_ms,
            settings.latency_max_ms
        );
        self.push(
            Figure::measured("bare_loop_events_per_s", "events/s", &bare, None).with_note(note),
        );
        self.push(Figure::measured(
            "engine_events_per_s",
            "events/s",
            &engine,
            None,
        ));
        self.push(Figure::measured(
            "engine_vs_bare",
            "x",
            &ratio,
            Some(Target::AtMost(3.0)),
        ));
        Ok(())
    }

    /// Events per second of whole runs, every monitor on, fingerprint computed, no trace.
    pub fn models(&mut self) -> anyhow::Result<()> {
        for (file, target) in [
            ("burst.toml", Some(Target::AtLeast(1_000_000.0))),
            ("chaos.toml", None),
            // Issue 18: a leader swarm must not cost more per event than the elastic side.
            ("leader-chaos.toml", Some(Target::AtLeast(2_000_000.0))),
        ] {
            let stem = file.trim_end_matches(".toml").replace('-', "_");
            let name = format!("model_events_per_s_{stem}");
            let path = self.scenarios.join(file);
            let Some(scenario) = model::load_if_present(&path)? else {
                let why = format!("{} does not exist yet", path.display());
                self.push(Figure::missing(&name, "events/s", target, &why));
                continue;
            };
            let mut rates = Vec::new();
            let mut events = 0;
            for _ in 0..self.plan.repetitions {
                let (rate, _) =
                    model::time_runs(&scenario, scenario.seed, self.plan.model_sample_s)?;
                rates.push(rate);
            }
            if let Ok(outcome) = model::run_once(&scenario, scenario.seed) {
                events = outcome.info.events;
            }
            let note = format!("seed {}, {events} events per run", scenario.seed);
            self.push(Figure::measured(&name, "events/s", &rates, target).with_note(note));
        }
        Ok(())
    }

    /// The day and the day cut to 6 h, each in child processes: wall time, compression and
    /// peak resident memory.
    pub fn day(&mut self) -> anyhow::Result<()> {
        let day_path = self.scenarios.join("day.toml");
        let (mut walls, mut compressions, mut rss_day) = (Vec::new(), Vec::new(), Vec::new());
        let (mut rss_six, mut cpus) = (Vec::new(), Vec::new());
        let mut events = 0;
        for _ in 0..self.plan.day_repetitions {
            let day = model::spawn_child(&day_path, 24, &self.scratch)?;
            walls.push(day.wall_s);
            cpus.push(day.cpu_s);
            compressions.push(day.sim_ms as f64 / 1000.0 / day.wall_s);
            rss_day.push(day.peak_rss_mb);
            events = day.events;
            let six = model::spawn_child(&day_path, 6, &self.scratch)?;
            rss_six.push(six.peak_rss_mb);
        }
        let ratio: Vec<f64> = rss_day
            .iter()
            .zip(&rss_six)
            .map(|(day, six)| day / six)
            .collect();
        let note = format!("24 h + 1 h settle, {events} events, run in a child process");
        self.push(
            Figure::measured("day_wall_s", "s", &walls, Some(Target::AtMost(1.0))).with_note(note),
        );
        self.push(
            Figure::measured("day_cpu_s", "s", &cpus, None)
                .with_note("CPU time of the day child: wall minus this is the machine's load"),
        );
        // 25 simulated hours in under 2 s is a compression of at least 45 000.
        self.push(Figure::measured(
            "day_compression",
            "x",
            &compressions,
            Some(Target::AtLeast(45_000.0)),
        ));
        let below = Some(Target::Below(200.0));
        self.push(Figure::measured("peak_rss_mb_day", "MB", &rss_day, below));
        self.push(Figure::measured("peak_rss_mb_6h", "MB", &rss_six, below));
        self.push(
            Figure::measured("peak_rss_day_vs_6h", "x", &ratio, Some(Target::AtMost(1.2)))
                .with_note("memory flat in simulated duration: the day within 20 % of 6 h"),
        );
        Ok(())
    }

    /// `scenarios/scale/day-x10.toml` (the day with ten times the nodes, arrivals and bursts)
    /// in child processes: wall time, its ratio to the day's wall time (a cost per event
    /// independent of the cluster's size gives about 10), events per second and peak resident
    /// memory.
    ///
    /// Each ×10 run is paired with a day run just before it, and the ratio is the median of
    /// the pairs' ratios: on a shared machine the load drifts over the minutes between the
    /// day figures and these, and a ratio of runs seconds apart sees one load, not two.
    pub fn day_x10(&mut self) -> anyhow::Result<()> {
        let path = self.scenarios.join("scale").join("day-x10.toml");
        let day_path = self.scenarios.join("day.toml");
        let (mut walls, mut rss, mut rates) = (Vec::new(), Vec::new(), Vec::new());
        let (mut ratios, mut cpu_ratios) = (Vec::new(), Vec::new());
        let mut events = 0;
        for _ in 0..self.plan.day_x10_repetitions {
            let day = model::spawn_child(&day_path, 24, &self.scratch)?;
            let run = model::spawn_child(&path, 24, &self.scratch)?;
            walls.push(run.wall_s);
            rss.push(run.peak_rss_mb);
            rates.push(run.events as f64 / run.wall_s);
            ratios.push(run.wall_s / day.wall_s);
            cpu_ratios.push(run.cpu_s / day.cpu_s);
            events = run.events;
        }
        let note = format!("{events} events, run in a child process");
        self.push(Figure::measured("day_x10_wall_s", "s", &walls, None).with_note(note));
        self.push(
            Figure::measured("day_x10_vs_x1", "x", &ratios, Some(Target::AtMost(12.0)))
                .with_note("x10 wall over the wall of a day run just before it; linear is 10"),
        );
        self.push(
            Figure::measured("day_x10_vs_x1_cpu", "x", &cpu_ratios, None)
                .with_note("the same pairs' ratio of CPU times (the machine's load left out)"),
        );
        self.push(Figure::measured(
            "peak_rss_mb_day_x10",
            "MB",
            &rss,
            Some(Target::Below(200.0)),
        ));
        self.push(Figure::measured(
            "model_events_per_s_day_x10",
            "events/s",
            &rates,
            None,
        ));
        Ok(())
    }

    /// The burst workload on turmoil against elasticsim on the same scenario cut to the same
    /// simulated span.
    pub fn turmoil(&mut self) -> anyhow::Result<()> {
        let span_ms = self.plan.turmoil_span_ms;
        let burst = model::load(&self.scenarios.join("burst.toml"))?;
        let cut = model::cut(&burst, span_ms, 0);
        let settings = RunSettings::from_scenario(&cut);
        let jobs: Vec<PlannedJob> = World::new(cut.clone(), settings)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .planned_arrivals()
            .into_iter()
            .map(|(at_ms, _, runtime_ms)| PlannedJob { at_ms, runtime_ms })
            .collect();
        let (mut turmoil_walls, mut model_walls, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        let mut completed = 0;
        for repetition in 0..self.plan.turmoil_repetitions {
            let turmoil_settings = TurmoilSettings::burst(cut.seed + repetition as u64, span_ms);
            let (turmoil_s, counts) = seconds(|| turmoil_burst::run(&turmoil_settings, &jobs));
            let counts = counts?;
            anyhow::ensure!(
                counts.send_failures == 0,
                "turmoil dropped sends: {counts:?}"
            );
            completed = counts.jobs_completed;
            let (_, model_s) = model::time_runs(&cut, cut.seed, self.plan.model_sample_s)?;
            turmoil_walls.push(turmoil_s);
            model_walls.push(model_s);
            ratios.push(turmoil_s / model_s);
        }
        let note = format!(
            "burst.toml, first {} simulated minutes: {} jobs planned, {completed} completed on \
             turmoil (1 ms tick, gocd + kube-api + 4 agent hosts, UDP)",
            span_ms / 60_000,
            jobs.len()
        );
        self.push(Figure::measured("turmoil_wall_s", "s", &turmoil_walls, None).with_note(note));
        self.push(Figure::measured(
            "elasticsim_same_span_wall_s",
            "s",
            &model_walls,
            None,
        ));
        self.push(Figure::measured(
            "turmoil_ratio",
            "x",
            &ratios,
            Some(Target::AtLeast(100.0)),
        ));
        Ok(())
    }

    /// A sweep of `burst.toml` seeds in pools of one and two threads, with the per-seed
    /// fingerprints compared.
    pub fn sweeps(&mut self) -> anyhow::Result<()> {
        let burst = model::load(&self.scenarios.join("burst.toml"))?;
        let seeds = 1..=self.plan.sweep_seeds;
        let (mut one, mut two) = (Vec::new(), Vec::new());
        let mut identical = true;
        for _ in 0..self.plan.sweep_repetitions {
            let (rate_one, fingerprints_one) = model::sweep(&burst, seeds.clone(), 1)?;
            let (rate_two, fingerprints_two) = model::sweep(&burst, seeds.clone(), 2)?;
            identical &= fingerprints_one == fingerprints_two;
            one.push(rate_one);
            two.push(rate_two);
        }
        self.sweep_fingerprints_identical = Some(identical);
        let note = format!(
            "{} seeds of burst.toml; per-seed fingerprints identical in 1 and 2 threads: \
             {identical}",
            self.plan.sweep_seeds
        );
        self.push(Figure::measured("seeds_per_s_1_thread", "seeds/s", &one, None).with_note(note));
        self.push(Figure::measured(
            "seeds_per_s_2_threads",
            "seeds/s",
            &two,
            None,
        ));
        let speedup: Vec<f64> = two.iter().zip(&one).map(|(two, one)| two / one).collect();
        self.push(Figure::measured(
            "sweep_speedup_2_threads",
            "x",
            &speedup,
            None,
        ));
        Ok(())
    }
}
