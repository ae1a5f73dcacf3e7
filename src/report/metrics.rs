//! Run metrics (`docs/cli.md`, "Metrics"): the names are the contract of `summary.json`,
//! baselines and sweeps.
//!
//! Rules:
//! - Jobs are counted as logical jobs (a job and its reschedules are one job): `jobs_total`
//!   logical jobs scheduled, `jobs_completed` logical jobs with a completed instance;
//!   `job_instances` counts every instance.
//! - Waits are over job instances that were assigned, plus those still waiting at the end of
//!   the run, counted with their wait so far (right-censored: the true wait is at least that;
//!   `waits_censored` counts them). With any censored wait, the wait percentiles are lower
//!   bounds and reports print them with `≥`. Percentiles use the nearest-rank rule:
//!   the p-th percentile of n sorted values is the value at 1-based rank ⌈p·n/100⌉, always one
//!   of the observed values; 0 when there are no values.
//! - `reuse_ratio` = assignments to an agent that had completed a job before ÷ assignments.
//! - Pod-seconds: busy from `JobAssigned` to that job's completion, reschedule or cancellation
//!   (or the pod's deletion); idle while registered and not busy, until deletion or the end
//!   of the run; pending from creation until Running, deletion or the end of the run.
//! - Leader metrics follow the rules in `leader.rs`.
//! - Every ratio is 0 when its denominator is 0, so no metric is ever NaN.

use super::RunInfo;
use super::collector::Collector;
use super::rows::{JobOutcome, ratio};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Every metric of one run. Serialised as the `metrics` object of `summary.json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Logical jobs scheduled (a rescheduled job counts once).
    pub jobs_total: u64,
    /// Logical jobs with a completed instance.
    pub jobs_completed: u64,
    /// Job instances scheduled, reschedules included.
    pub job_instances: u64,
    /// Assignments to an agent that had already run a job ÷ assignments.
    pub reuse_ratio: f64,
    /// Agent pods the allocator created.
    pub pods_created: u64,
    /// Pods created ÷ logical jobs.
    pub pods_per_job: f64,
    /// Median wait, scheduling to assignment, in seconds; a job instance still waiting at the
    /// end counts with its wait so far (see `waits_censored`).
    pub wait_s_p50: f64,
    /// 95th percentile (nearest rank) of the waits, in seconds.
    pub wait_s_p95: f64,
    /// 99th percentile (nearest rank) of the waits, in seconds.
    pub wait_s_p99: f64,
    /// Longest wait, in seconds.
    pub wait_s_max: f64,
    /// Job instances never assigned and still waiting when the run ended: their waits are
    /// censored at the end, so every wait percentile above is a lower bound when this is
    /// not 0.
    pub waits_censored: u64,
    /// Simulated seconds, summed over pods, their agents spent building.
    pub pod_seconds_busy: f64,
    /// Simulated seconds, summed over pods, their agents sat registered and idle.
    pub pod_seconds_idle: f64,
    /// Simulated seconds, summed over pods, from creation to running.
    pub pod_seconds_pending: f64,
    /// Busy ÷ (busy + idle) pod-seconds.
    pub agent_utilisation: f64,
    /// Leadership changes to a different replica than the previous leader.
    pub failovers: u64,
    /// Longest failover, previous leader stopped to new leader started, in seconds.
    pub failover_s_max: f64,
    /// 95th percentile (nearest rank) of the failover durations, in seconds.
    pub failover_s_p95: f64,
    /// Terms a runner started (`LeadingStarted`), the first and re-elections included.
    pub leader_changes: u64,
    /// Simulated seconds no replica believed it led.
    pub no_leader_s: f64,
    /// Simulated seconds two or more replicas ran modules at once.
    pub two_acting_s: f64,
    /// Engine events popped in the run.
    pub events: u64,
    /// Simulated length of the run, in seconds.
    pub sim_s: f64,
    /// Wall-clock seconds the run took (measured by the caller; zero when not measured).
    pub wall_s: f64,
    /// Engine events per wall-clock second (zero without a wall time).
    pub events_per_s: f64,
    /// Simulated seconds per wall-clock second (zero without a wall time).
    pub compression: f64,
}

impl Metrics {
    /// The metrics as a flat name → value map (for baselines and sweeps), in name order.
    pub(crate) fn to_map(&self) -> BTreeMap<String, f64> {
        self.entries()
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value))
            .collect()
    }

    /// The entries a leader run reports: leadership and run figures, no elastic-agent ones.
    pub(crate) fn leader_entries(&self) -> Vec<(&'static str, f64)> {
        self.entries()
            .into_iter()
            .filter(|(name, _)| LEADER_METRICS.contains(name) || RUN_METRICS.contains(name))
            .collect()
    }

    /// Every metric as (name, value), in declaration order (the order people read them in).
    /// The names are the serde field names; a test keeps the two in step.
    pub(crate) fn entries(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("jobs_total", self.jobs_total as f64),
            ("jobs_completed", self.jobs_completed as f64),
            ("job_instances", self.job_instances as f64),
            ("reuse_ratio", self.reuse_ratio),
            ("pods_created", self.pods_created as f64),
            ("pods_per_job", self.pods_per_job),
            ("wait_s_p50", self.wait_s_p50),
            ("wait_s_p95", self.wait_s_p95),
            ("wait_s_p99", self.wait_s_p99),
            ("wait_s_max", self.wait_s_max),
            ("waits_censored", self.waits_censored as f64),
            ("pod_seconds_busy", self.pod_seconds_busy),
            ("pod_seconds_idle", self.pod_seconds_idle),
            ("pod_seconds_pending", self.pod_seconds_pending),
            ("agent_utilisation", self.agent_utilisation),
            ("failovers", self.failovers as f64),
            ("failover_s_max", self.failover_s_max),
            ("failover_s_p95", self.failover_s_p95),
            ("leader_changes", self.leader_changes as f64),
            ("no_leader_s", self.no_leader_s),
            ("two_acting_s", self.two_acting_s),
            ("events", self.events as f64),
            ("sim_s", self.sim_s),
            ("wall_s", self.wall_s),
            ("events_per_s", self.events_per_s),
            ("compression", self.compression),
        ]
    }
}

/// The nearest-rank percentile of ascending `sorted` values (`percent` in 1..=100); `None`
/// for no values.
pub(crate) fn percentile_nearest_rank(sorted: &[u64], percent: u64) -> Option<u64> {
    assert!(
        (1..=100).contains(&percent),
        "percentile {percent} is outside 1..=100"
    );
    debug_assert!(sorted.is_sorted(), "percentiles need ascending values");
    if sorted.is_empty() {
        return None;
    }
    let count = sorted.len() as u64;
    let rank = (percent * count).div_ceil(100).max(1);
    let position = usize::try_from(rank - 1).expect("rank ≤ len, which fits in usize");
    Some(sorted[position])
}

/// Milliseconds to seconds.
pub(crate) fn seconds(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

fn percentile_s(sorted_ms: &[u64], percent: u64) -> f64 {
    percentile_nearest_rank(sorted_ms, percent).map_or(0.0, seconds)
}

impl Collector {
    /// Compute every metric; `run` supplies what records cannot: event count, simulated and
    /// wall time.
    pub fn metrics(&self, run: &RunInfo) -> Metrics {
        let mut metrics = Metrics::default();
        self.job_metrics(&mut metrics);
        self.pod_metrics(&mut metrics);
        self.leader_metrics(&mut metrics);
        metrics.events = run.events;
        metrics.sim_s = seconds(run.sim_ms);
        metrics.wall_s = run.wall_s;
        if run.wall_s > 0.0 {
            metrics.events_per_s = run.events as f64 / run.wall_s;
            metrics.compression = metrics.sim_s / run.wall_s;
        }
        metrics
    }

    fn job_metrics(&self, metrics: &mut Metrics) {
        let mut logical_jobs = BTreeSet::new();
        let mut logical_completed = BTreeSet::new();
        let mut waits_ms = Vec::new();
        let end_ms = self.end_ms();
        for row in self.jobs() {
            logical_jobs.insert(row.logical_job);
            if row.outcome == JobOutcome::Completed {
                logical_completed.insert(row.logical_job);
            }
            if let Some(censored_ms) = row.censored_wait_ms(end_ms) {
                waits_ms.push(censored_ms);
                metrics.waits_censored += 1;
            }
            waits_ms.extend(row.wait_ms());
            metrics.job_instances += 1;
        }
        waits_ms.sort_unstable();
        metrics.jobs_total = logical_jobs.len() as u64;
        metrics.jobs_completed = logical_completed.len() as u64;
        let (assigned, reused) = self.assignments();
        metrics.reuse_ratio = ratio(reused, assigned);
        metrics.wait_s_p50 = percentile_s(&waits_ms, 50);
        metrics.wait_s_p95 = percentile_s(&waits_ms, 95);
        metrics.wait_s_p99 = percentile_s(&waits_ms, 99);
        metrics.wait_s_max = percentile_s(&waits_ms, 100);
    }

    fn pod_metrics(&self, metrics: &mut Metrics) {
        let end_ms = self.end_ms();
        let (mut busy_ms, mut idle_ms, mut pending_ms) = (0, 0, 0);
        for row in self.pods() {
            metrics.pods_created += 1;
            busy_ms += row.busy_ms(end_ms);
            idle_ms += row.idle_ms(end_ms);
            pending_ms += row.pending_ms(end_ms);
        }
        metrics.pods_per_job = ratio(metrics.pods_created, metrics.jobs_total);
        metrics.pod_seconds_busy = seconds(busy_ms);
        metrics.pod_seconds_idle = seconds(idle_ms);
        metrics.pod_seconds_pending = seconds(pending_ms);
        metrics.agent_utilisation = ratio(busy_ms, busy_ms + idle_ms);
    }

    fn leader_metrics(&self, metrics: &mut Metrics) {
        let end_ms = self.end_ms();
        let leader = self.leader_tracker();
        let mut failover_ms = leader.failover_durations_ms.clone();
        failover_ms.sort_unstable();
        metrics.failovers = leader.failovers();
        metrics.failover_s_max = percentile_s(&failover_ms, 100);
        metrics.failover_s_p95 = percentile_s(&failover_ms, 95);
        metrics.leader_changes = leader.leader_changes;
        metrics.no_leader_s = seconds(leader.no_leader_ms(end_ms));
        metrics.two_acting_s = seconds(leader.two_acting_ms(end_ms));
    }
}

/// The leader metrics, in report order.
pub(crate) const LEADER_METRICS: [&str; 6] = [
    "failovers",
    "failover_s_p95",
    "failover_s_max",
    "leader_changes",
    "no_leader_s",
    "two_acting_s",
];

/// Figures every run reports.
const RUN_METRICS: [&str; 5] = ["events", "sim_s", "wall_s", "events_per_s", "compression"];
