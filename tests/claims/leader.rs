//! Leader-election scenarios end to end (issue 5): every leader row of the defect table trips
//! its invariant in `agentk-v1` and passes in `fixed` on the same seeds; `fixed` survives the
//! swarm; failover after a leader crash stays within LD + 2·2.2·RP + 2·(max API latency),
//! measured from the records; runs are deterministic; the binary reports #398.

use elasticsim::check::{InvariantId, Violation};
use elasticsim::run::{RunOutcome, run_scenario};
use elasticsim::scenario::Scenario;
use elasticsim::trace::{Actor, Record};
use elasticsim::world::{RunSettings, Sink, World};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const AGENTK_V1: &str = "agentk-v1";
const FIXED: &str = "fixed";
/// The seeds every defect row is checked on.
const ROW_SEEDS: std::ops::RangeInclusive<u64> = 1..=5;

fn scenario_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(format!("{name}.toml"))
}

fn load(name: &str) -> Scenario {
    let path = scenario_path(name);
    elasticsim::scenario::load(&path)
        .unwrap_or_else(|error| panic!("{} must load: {error}", path.display()))
        .scenario
}

fn settings(scenario: &Scenario, variant: &str, seed: u64) -> RunSettings {
    let mut settings = RunSettings::from_scenario(scenario);
    settings.seed = seed;
    let variant = elasticsim::leader::Variant::from_name(variant).expect("a variant name");
    settings.variant = Some(variant);
    settings
}

fn run(scenario: &Scenario, variant: &str, seed: u64) -> RunOutcome {
    run_scenario(
        scenario,
        settings(scenario, variant, seed),
        None,
        String::new(),
    )
    .unwrap_or_else(|error| panic!("{} {variant} seed {seed} ran: {error}", scenario.name))
}

fn describe(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| format!("{} at {} ms: {}", v.id, v.at_ms, v.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every record of one run, in order.
#[derive(Default)]
struct Records(Vec<(u64, Record)>);

impl Sink for Records {
    fn record(&mut self, t_ms: u64, _node: &str, record: &Record) {
        self.0.push((t_ms, record.clone()));
    }
}

fn records(scenario: &Scenario, variant: &str, seed: u64) -> Vec<(u64, Record)> {
    let mut sink = Records::default();
    World::new(scenario.clone(), settings(scenario, variant, seed))
        .expect("the scenario builds a world")
        .run(&mut sink)
        .expect("the run ends within its bounds");
    sink.0
}

/// `agentk-v1` trips `id` (inside the fault budget) on every row seed; `fixed` passes every
/// invariant on the same seeds.
fn assert_defect_row(name: &str, id: InvariantId) {
    let scenario = load(name);
    for seed in ROW_SEEDS {
        let buggy = run(&scenario, AGENTK_V1, seed);
        assert!(
            buggy.info.violations.iter().any(|v| v.id == id),
            "{name} seed {seed}: agentk-v1 must trip {id}, found:\n{}",
            describe(&buggy.info.violations)
        );
        let fixed = run(&scenario, FIXED, seed);
        assert!(
            fixed.passed(),
            "{name} seed {seed}: fixed must keep every invariant:\n{}",
            describe(&fixed.info.violations)
        );
    }
}

#[test]
fn an_api_outage_longer_than_the_renew_deadline_stops_agentk_v1_electing_for_good() {
    assert_defect_row("leader-outage", InvariantId::RejoinAfterOutage);
}

/// HEAD's runner, blocked in a slow module's stop (`wait(ctx)`) across a whole new term, takes
/// that term's OnStartedLeading after the term ended and starts its module without the Lease
/// (H4): `agentk-head` trips `leader-only`, named H4, on every row seed; `fixed`, whose
/// elector releases only after the modules stopped, keeps every invariant.
#[test]
fn a_runner_blocked_across_a_term_makes_agentk_head_start_modules_outside_it() {
    let scenario = load("leader-stale-start");
    for seed in ROW_SEEDS {
        let head = run(&scenario, "agentk-head", seed);
        assert!(
            head.info
                .violations
                .iter()
                .any(|v| v.id == InvariantId::LeaderOnly && v.message.contains("[H4]")),
            "leader-stale-start seed {seed}: agentk-head must trip leader-only by H4, found:\n{}",
            describe(&head.info.violations)
        );
        let fixed = run(&scenario, FIXED, seed);
        assert!(
            fixed.passed(),
            "leader-stale-start seed {seed}: fixed must keep every invariant:\n{}",
            describe(&fixed.info.violations)
        );
    }
}

#[test]
fn a_blackholed_leader_keeps_acting_in_agentk_v1_while_a_follower_takes_over() {
    assert_defect_row("leader-blackhole", InvariantId::SingleLeaderActing);
    let scenario = load("leader-blackhole");
    for seed in ROW_SEEDS {
        let buggy = run(&scenario, AGENTK_V1, seed);
        let overlap = buggy
            .info
            .violations
            .iter()
            .find(|v| v.id == InvariantId::SingleLeaderActing)
            .expect("the row check found it");
        assert!(
            !overlap.expected,
            "a blackhole is inside the fault budget: the overlap is a failure"
        );
    }
}

#[test]
fn the_fixed_runner_keeps_every_invariant_on_every_leader_scenario() {
    let names = [
        "leader-failover",
        "leader-outage",
        "leader-blackhole",
        "leader-stale-start",
        "leader-config-race",
        "leader-demand",
        "leader-drift",
        "leader-rolling-update",
        "leader-slow-api",
    ];
    for name in names {
        let scenario = load(name);
        for seed in ROW_SEEDS {
            let outcome = run(&scenario, FIXED, seed);
            assert!(
                outcome.passed(),
                "{name} seed {seed}:\n{}",
                describe(&outcome.info.violations)
            );
        }
    }
}

/// Round trips of 1.8–2.6 s: `fixed`'s acquire requests, bounded by the renew deadline as
/// client-go bounds each renew request, still succeed, and every crash is followed by a
/// takeover within the bound. Bounded by RP (2 s), as before issue #49, every seed failed.
#[test]
fn a_slow_api_server_does_not_stall_the_fixed_runners_failovers() {
    let scenario = load("leader-slow-api");
    for seed in 1..=10 {
        let outcome = run(&scenario, FIXED, seed);
        assert!(
            outcome.passed(),
            "leader-slow-api seed {seed}:\n{}",
            describe(&outcome.info.violations)
        );
        let crashes = outcome.collector.failover_durations_ms().len();
        assert_eq!(
            crashes, 2,
            "seed {seed}: both crashes are followed by a failover"
        );
    }
}

#[test]
fn the_fixed_runner_survives_the_leader_swarm_on_fifty_seeds() {
    let scenario = load("leader-chaos");
    let mut drawn_kinds = BTreeSet::new();
    for seed in 1..=50 {
        let outcome = run(&scenario, FIXED, seed);
        assert!(
            outcome.passed(),
            "leader-chaos seed {seed}:\n{}\nswarm: {:?}",
            describe(&outcome.info.violations),
            outcome.info.drawn
        );
        for line in outcome.info.drawn.iter().skip(1) {
            let kind = line.split(' ').next().expect("a drawn line names its kind");
            drawn_kinds.insert(kind.to_owned());
        }
    }
    // The swarm must actually have exercised every leader fault kind across the seeds.
    for kind in &scenario.swarm.kinds {
        assert!(
            drawn_kinds.contains(kind.name()),
            "no seed drew {}: {drawn_kinds:?}",
            kind.name()
        );
    }
}

/// One failover after a `replica_crash` of the replica that ran the modules, from the records.
#[derive(Clone, Debug)]
struct Failover {
    crash_ms: u64,
    /// The crashed leader's last accepted Lease write naming it.
    last_renewal_ms: u64,
    /// The first module start on any replica after the crash.
    modules_running_ms: u64,
    /// No other fault and no configuration change touched the failover (drifts aside).
    clean: bool,
    /// The slowest clock rate in force during the failover (1 without drift).
    slowest_rate: f64,
}

impl Failover {
    fn duration_ms(&self) -> u64 {
        self.modules_running_ms - self.last_renewal_ms
    }
}

/// The clock rate a `clock_drift` target names (`replica-1 rate=0.93`).
fn drift_rate(target: &str) -> Option<f64> {
    target
        .split(' ')
        .find_map(|part| part.strip_prefix("rate="))
        .and_then(|rate| rate.parse().ok())
}

/// What the failover measurement follows through the records.
#[derive(Default)]
struct FailoverScan {
    running: BTreeMap<u32, BTreeSet<String>>,
    last_renewal_ms: BTreeMap<u32, u64>,
    /// Faults in force: index to (name, drift rate).
    faults: BTreeMap<u32, (String, Option<f64>)>,
    config_version: u64,
    /// A leader crashed at this instant (its `FaultStarted` follows its `ReplicaStopped`).
    crashed_leader: Option<(u64, u32)>,
    open: Option<(u32, Failover)>,
    done: Vec<Failover>,
}

impl FailoverScan {
    fn slowest_rate_in_force(&self) -> f64 {
        self.faults
            .values()
            .filter_map(|(_, rate)| *rate)
            .fold(1.0, f64::min)
    }

    /// A fault or configuration change other than the crash being measured.
    fn disturb(&mut self) {
        if let Some((_, failover)) = self.open.as_mut() {
            failover.clean = false;
        }
    }

    fn fault_started(&mut self, t_ms: u64, index: u32, fault: &str, target: &str) {
        let rate = (fault == "clock_drift")
            .then(|| drift_rate(target))
            .flatten();
        self.faults.insert(index, (fault.to_owned(), rate));
        let slowest = self.slowest_rate_in_force();
        if let Some((_, failover)) = self.open.as_mut() {
            failover.slowest_rate = failover.slowest_rate.min(slowest);
        }
        match self.crashed_leader.take() {
            Some((crash_ms, replica)) if crash_ms == t_ms && fault == "replica_crash" => {
                let others_quiet = self
                    .faults
                    .iter()
                    .all(|(i, (name, _))| *i == index || name == "clock_drift");
                let failover = Failover {
                    crash_ms,
                    last_renewal_ms: self.last_renewal_ms[&replica],
                    modules_running_ms: 0,
                    clean: others_quiet && self.open.is_none(),
                    slowest_rate: slowest,
                };
                self.open = Some((index, failover));
            }
            _ if fault != "clock_drift" => self.disturb(),
            _ => {}
        }
    }

    fn observe(&mut self, t_ms: u64, record: &Record) {
        match record {
            Record::LeaseWritten {
                by: Actor::Replica(replica),
                holder,
                ..
            } if !holder.is_empty() => {
                self.last_renewal_ms.insert(*replica, t_ms);
            }
            Record::ModuleStarted {
                replica, module, ..
            } => {
                self.running
                    .entry(*replica)
                    .or_default()
                    .insert(module.clone());
                if let Some((_, mut failover)) = self.open.take() {
                    failover.modules_running_ms = t_ms;
                    self.done.push(failover);
                }
            }
            Record::ModuleStopped { replica, module } => {
                self.running.entry(*replica).or_default().remove(module);
            }
            Record::ReplicaStopped { replica } => {
                let acting = self.running.remove(replica).is_some_and(|m| !m.is_empty());
                if acting {
                    self.crashed_leader = Some((t_ms, *replica));
                }
            }
            Record::FaultStarted {
                index,
                fault,
                target,
            } => self.fault_started(t_ms, *index, fault, target),
            Record::FaultEnded { index, .. } => {
                // The crash being measured ends when its replica restarts: not a disturbance.
                self.faults.remove(index);
            }
            Record::ConfigReceived { version, .. } if *version > self.config_version => {
                self.config_version = *version;
                self.disturb();
            }
            _ => {}
        }
    }
}

fn crash_failovers(records: &[(u64, Record)]) -> Vec<Failover> {
    let mut scan = FailoverScan::default();
    for (t_ms, record) in records {
        scan.observe(*t_ms, record);
    }
    scan.done
}

/// LD + 2·2.2·RP + 2·(max API latency), the LD and RP parts timed on the slowest clock.
fn failover_bound_ms(scenario: &Scenario, slowest_rate: f64) -> u64 {
    let leader = scenario.leader.as_ref().expect("a leader scenario");
    let waiting_ms = leader.lease_duration_ms as f64 + 4.4 * leader.retry_period_ms as f64;
    (waiting_ms / slowest_rate.min(1.0)).ceil() as u64 + 2 * scenario.cluster.api_latency.max_ms
}

fn assert_failovers_within_bound(scenario: &Scenario, seed: u64, failovers: &[Failover]) {
    for failover in failovers.iter().filter(|f| f.clean) {
        assert!(failover.last_renewal_ms <= failover.crash_ms);
        assert!(failover.crash_ms < failover.modules_running_ms);
        let bound_ms = failover_bound_ms(scenario, failover.slowest_rate);
        assert!(
            failover.duration_ms() <= bound_ms,
            "{} seed {seed}: failover took {} ms > {bound_ms} ms: {failover:?}",
            scenario.name,
            failover.duration_ms()
        );
    }
}

#[test]
fn failover_after_a_leader_crash_stays_within_the_bound_on_every_seed() {
    let scenario = load("leader-failover");
    for seed in 1..=30 {
        let failovers = crash_failovers(&records(&scenario, FIXED, seed));
        assert_eq!(
            failovers.iter().filter(|f| f.clean).count(),
            2,
            "seed {seed}: both leader crashes are measured: {failovers:?}"
        );
        assert_failovers_within_bound(&scenario, seed, &failovers);
        // A crash without a release: the followers wait out the lease.
        let lease_duration_ms = scenario.leader.as_ref().expect("leader").lease_duration_ms;
        assert!(
            failovers
                .iter()
                .all(|f| f.duration_ms() >= lease_duration_ms)
        );
    }
    let chaos = load("leader-chaos");
    let mut measured = 0;
    for seed in 1..=50 {
        let failovers = crash_failovers(&records(&chaos, FIXED, seed));
        measured += failovers.iter().filter(|f| f.clean).count();
        assert_failovers_within_bound(&chaos, seed, &failovers);
    }
    assert!(
        measured >= 10,
        "the swarm crashed enough leaders: {measured}"
    );
}

#[test]
fn a_leader_scenario_run_twice_with_one_seed_has_one_fingerprint() {
    for name in ["leader-chaos", "leader-failover"] {
        let scenario = load(name);
        for variant in [AGENTK_V1, FIXED] {
            let first = run(&scenario, variant, 7).info.fingerprint;
            let again = run(&scenario, variant, 7).info.fingerprint;
            let other = run(&scenario, variant, 8).info.fingerprint;
            assert_eq!(first, again, "{name} {variant}: same seed, same run");
            assert_ne!(first, other, "{name} {variant}: another seed, another run");
        }
    }
}

/// The election runs exactly while demanded: with no runnable module nobody competes, no
/// module runs, and the last leader released the Lease.
fn assert_election_follows_demand(variant: &str, seed: u64) {
    let scenario = load("leader-demand");
    let records = records(&scenario, variant, seed);
    let mut demand: BTreeMap<u32, bool> = BTreeMap::new();
    let mut electing: BTreeSet<u32> = BTreeSet::new();
    let mut released_ms = None;
    for (t_ms, record) in &records {
        match record {
            Record::ConfigReceived {
                replica,
                runnable_modules,
                ..
            } => {
                demand.insert(*replica, !runnable_modules.is_empty());
            }
            Record::ElectionStarted { replica } => {
                assert!(
                    demand[replica],
                    "{variant}: replica {replica} elects without demand"
                );
                electing.insert(*replica);
            }
            Record::ElectionStopped { replica } => {
                electing.remove(replica);
            }
            Record::LeaseWritten { holder, .. } if holder.is_empty() => released_ms = Some(*t_ms),
            Record::ModuleStarted { replica, .. } => {
                assert!(demand[replica], "{variant}: a module starts without demand");
            }
            _ => {}
        }
        // Two minutes in, the last module became non-runnable; at three minutes one returns.
        if (125_000..180_000).contains(t_ms) {
            assert!(
                electing.is_empty(),
                "{variant} seed {seed}: {electing:?} still elect"
            );
            assert!(
                released_ms.is_some_and(|ms| (120_000..125_000).contains(&ms)),
                "{variant} seed {seed}: the leader released the Lease when demand ended"
            );
        }
    }
    // Demand returned at 3 m: a replica runs a module within 2.2·RP (+ round trips).
    let restarted_ms = records
        .iter()
        .find(|(t_ms, r)| *t_ms >= 180_000 && matches!(r, Record::ModuleStarted { .. }))
        .map(|(t_ms, _)| *t_ms)
        .expect("a module runs again once demanded");
    assert!(
        restarted_ms <= 180_000 + 500 + 4_400 + 200,
        "{variant}: {restarted_ms}"
    );
}

#[test]
fn replicas_elect_only_while_a_module_is_runnable_and_release_when_none_is() {
    // Only agentk-v1's design runs the election only while demanded; `fixed`, built on
    // HEAD's, always runs it (`2f07ea9d`).
    for seed in ROW_SEEDS {
        assert_election_follows_demand(AGENTK_V1, seed);
    }
}

#[test]
fn clock_drift_beyond_the_budget_is_labelled_expected_and_within_it_is_harmless() {
    let scenario = load("leader-drift");
    // The budget is exceeded from 2 m 30 s on (the leader's clock at half speed).
    let beyond_ms = 150_000;
    for seed in ROW_SEEDS {
        let outcome = run(&scenario, FIXED, seed);
        assert!(
            outcome.passed(),
            "seed {seed}:\n{}",
            describe(&outcome.info.violations)
        );
        let expected = &outcome.info.expected_violations;
        assert!(
            expected
                .iter()
                .any(|v| v.id == InvariantId::SingleLeaderActing
                    && v.at_ms >= beyond_ms
                    && v.message.contains("and 0.5")),
            "seed {seed}: the overlap beyond the budget is reported as expected: {}",
            describe(expected)
        );
        assert!(
            expected.iter().all(|v| v.at_ms >= beyond_ms),
            "seed {seed}: nothing happens within the budget: {}",
            describe(expected)
        );
    }
}

#[test]
fn the_binary_fails_leader_outage_in_agentk_v1_with_a_report_that_explains_it() {
    let binary = env!("CARGO_BIN_EXE_elasticsim");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("leader-outage-report");
    let sim = |variant: &str| {
        let dir = out.join(variant);
        let output = Command::new(binary)
            .arg("sim")
            .arg(scenario_path("leader-outage"))
            .args(["--variant", variant, "--out"])
            .arg(&dir)
            .output()
            .expect("the binary runs");
        (output, dir)
    };
    let (output, dir) = sim(AGENTK_V1);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "a violation exits 1:\n{stdout}"
    );
    assert!(stdout.contains("single-leader-acting"), "{stdout}");
    let summary = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md written");
    // The report names the defect, says what went wrong and quotes the sequence that led
    // there: the term ended, the shipped module ignored its cancelled ctx and kept acting
    // (the runner blocked in h.wait(), no elector), and another replica led beside it.
    for needle in [
        "single-leader-acting",
        "run leader modules at the same time",
        "still runs {\"gitops\"}",
        "rejoin-after-outage",
        "LeadingStopped",
        "ElectionStopped",
        "ModuleAction",
        "--variant agentk-v1",
    ] {
        assert!(
            summary.contains(needle),
            "summary.md lacks {needle:?}:\n{summary}"
        );
    }
    let (output, _) = sim(FIXED);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

/// Issue #41: under `agentk-v1` with the shipped modules, `leader-outage` seed 1 fails a safety
/// invariant, and the violation's story quotes the runner blocked in `holder.wait()`
/// (`4438242a` `leader_runner.go`) after the lost term, the reason the old leader's module
/// keeps acting and no elector runs.
#[test]
fn leader_outage_seed_1_in_agentk_v1_fails_leader_only_and_quotes_the_blocked_runner() {
    let binary = env!("CARGO_BIN_EXE_elasticsim");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("leader-outage-blocked-runner");
    let output = Command::new(binary)
        .arg("sim")
        .arg(scenario_path("leader-outage"))
        .args(["--variant", AGENTK_V1, "--seed", "1", "--out"])
        .arg(&dir)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(1), "a violation exits 1");
    let summary = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md written");
    let section = summary
        .split("\n### ")
        .find(|section| section.starts_with("`leader-only` (always)"))
        .unwrap_or_else(|| panic!("the safety invariant leader-only fails:\n{summary}"));
    for needle in [
        "RunnerBlocked { replica: 0",
        "leader_runner.go",
        "holder.wait()",
        "modules: [\"gitops\"]",
        "still runs {\"gitops\"}",
    ] {
        assert!(
            section.contains(needle),
            "the leader-only story lacks {needle:?}:\n{section}"
        );
    }
}

/// H5 in agentk-v2 and HEAD (`278235e8` `leader_runner.go` / `leader_module_wrapper.go`): the
/// runner's blocking send to a wrapper that is itself blocked sending to the runner stops both
/// for ever; leader-config-race seed 1 reaches it under agentk-head (explore/leader seed 16
/// did under agentk-v2 until its seeds drew their API latency level, issue #49), and the
/// `runner-progress` story quotes where.
#[test]
fn leader_config_race_seed_1_in_agentk_head_deadlocks_runner_and_wrapper_and_quotes_it() {
    let binary = env!("CARGO_BIN_EXE_elasticsim");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("config-race-h5");
    let output = Command::new(binary)
        .arg("sim")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/leader-config-race.toml"))
        .args(["--variant", "agentk-head", "--seed", "1", "--out"])
        .arg(&dir)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(1), "a violation exits 1");
    let summary = std::fs::read_to_string(dir.join("summary.md")).expect("summary.md written");
    let section = summary
        .split("\n### ")
        .find(|section| section.starts_with("`runner-progress` (eventually)"))
        .unwrap_or_else(|| panic!("runner-progress fails:\n{summary}"));
    for needle in [
        "module gitops on replica 2 did not start",
        "RunnerBlocked { replica: 2",
        "278235e8 leader_runner.go",
        "both wait for ever",
        "modules: [\"gitops\"]",
    ] {
        assert!(
            section.contains(needle),
            "the runner-progress story lacks {needle:?}:\n{section}"
        );
    }
}
