//! The collector: folds trace records into the rows of `jobs.csv`, `pods.csv`,
//! `timeline.csv` and `faults.csv`, and the counters the metrics need.
//!
//! `observe` sees every record of a run (millions), so it does map lookups and counter updates
//! only: no formatting, and nothing kept per record except one row per job instance, pod,
//! sample and fault. Records about jobs or pods the collector never saw created (no
//! `JobScheduled` / `PodCreated`) are ignored here: the `no-lost-job` and `no-orphan-pods`
//! monitors own such inconsistencies.

use super::job_table::JobTable;
use super::lanes::{LaneSpan, LaneTracker};
use super::leader::LeaderTracker;
use super::pod_table::PodTable;
use super::rows::{AgentActivity, FaultRow, JobOutcome, JobRow, PodPhase, PodRow, TimelineRow};
use crate::ids::Names;
use crate::trace::Record;
use std::collections::{BTreeMap, BTreeSet};

/// Faults that act at one instant: without a `FaultEnded` they end when they start.
const INSTANTANEOUS_FAULTS: [&str; 6] = [
    "pod_delete",
    "container_restart",
    "profile_edit",
    "cluster_profile_edit",
    "node_loss",
    "lease_delete",
];

/// Live counts of jobs, pods and agents by state, sampled into the timeline.
#[derive(Clone, Debug, Default)]
struct Gauges {
    jobs_waiting: u64,
    jobs_building: u64,
    pods_pending: u64,
    pods_running: u64,
    agents_idle: u64,
    agents_building: u64,
}

impl Gauges {
    fn job(&mut self, outcome: JobOutcome) -> Option<&mut u64> {
        match outcome {
            JobOutcome::Waiting => Some(&mut self.jobs_waiting),
            JobOutcome::Building => Some(&mut self.jobs_building),
            _ => None,
        }
    }

    fn pod(&mut self, phase: PodPhase) -> Option<&mut u64> {
        match phase {
            PodPhase::Pending => Some(&mut self.pods_pending),
            PodPhase::Running => Some(&mut self.pods_running),
            _ => None,
        }
    }

    fn agent(&mut self, activity: AgentActivity) -> Option<&mut u64> {
        match activity {
            AgentActivity::Idle => Some(&mut self.agents_idle),
            AgentActivity::Building => Some(&mut self.agents_building),
            AgentActivity::Absent => None,
        }
    }
}

/// Moves one unit of a gauge from `before` to `after`.
fn shift<S: Copy + PartialEq>(
    gauges: &mut Gauges,
    pick: fn(&mut Gauges, S) -> Option<&mut u64>,
    before: S,
    after: S,
) {
    if before == after {
        return;
    }
    if let Some(count) = pick(gauges, before) {
        *count = count
            .checked_sub(1)
            .expect("a gauge counts every row in its state");
    }
    if let Some(count) = pick(gauges, after) {
        *count += 1;
    }
}

/// Apply `change` to a pod, booking its busy/idle clock first and moving the gauges. A free
/// function so callers can hold a job row while updating pods.
fn update_pod(
    pods: &mut PodTable,
    gauges: &mut Gauges,
    t_ms: u64,
    pod: &str,
    change: impl FnOnce(&mut PodRow),
) {
    let Some(row) = pods.get_mut(pod) else {
        return;
    };
    let (phase_before, activity_before) = (row.phase, row.activity());
    row.close_segment(t_ms);
    change(row);
    shift(gauges, Gauges::pod, phase_before, row.phase);
    shift(gauges, Gauges::agent, activity_before, row.activity());
}

/// Builds report rows and metric inputs from trace records only.
#[derive(Clone, Debug, Default)]
pub struct Collector {
    jobs: JobTable,
    /// Profiles, environments, agent ids (pod names) and config hashes the rows refer to.
    names: Names,
    /// Keyed by the pod name shared with `names`.
    pods: PodTable,
    timeline: Vec<TimelineRow>,
    faults: Vec<FaultRow>,
    /// Position in `faults` of the latest start of each fault index, to match its end.
    open_faults: BTreeMap<u32, usize>,
    /// Jobs each agent completed, by its [`Names`] index, to tell a reused agent from a
    /// fresh one.
    agent_jobs_completed: Vec<u64>,
    gauges: Gauges,
    jobs_assigned: u64,
    jobs_assigned_reused: u64,
    leader: LeaderTracker,
    lanes: LaneTracker,
    last_t_ms: u64,
    ended_at_ms: Option<u64>,
}

impl Collector {
    /// An empty collector, before the run's first record.
    pub(crate) fn new() -> Collector {
        Collector::default()
    }

    /// Fold in one record emitted at `t_ms` (records arrive in time order).
    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) {
        self.last_t_ms = self.last_t_ms.max(t_ms);
        match record {
            Record::JobScheduled {
                job,
                logical,
                profile,
                environment,
                ..
            } => {
                self.job_scheduled(t_ms, *job, *logical, profile, environment.as_deref());
            }
            Record::JobAssigned { job, agent, .. } => self.job_assigned(t_ms, *job, agent),
            Record::JobCompleted { job, agent } => self.job_completed(t_ms, *job, agent),
            Record::JobRescheduled { job, .. } => {
                self.job_finished(t_ms, *job, JobOutcome::Rescheduled);
            }
            Record::JobCancelled { job } => self.job_finished(t_ms, *job, JobOutcome::Cancelled),
            Record::PodCreated { pod, config, .. } => self.pod_created(t_ms, pod, config),
            Record::PodRunning { pod } => self.update_pod(t_ms, pod, |row| {
                if row.phase == PodPhase::Pending {
                    row.phase = PodPhase::Running;
                    row.running_at_ms = Some(t_ms);
                }
            }),
            Record::PodPhase { pod, .. } => self.update_pod(t_ms, pod, |row| {
                if row.phase != PodPhase::Deleted {
                    row.phase = PodPhase::Finished;
                }
            }),
            Record::PodDeleted { pod, by } => self.update_pod(t_ms, pod, |row| {
                if row.phase != PodPhase::Deleted {
                    row.phase = PodPhase::Deleted;
                    row.deleted_at_ms = Some(t_ms);
                    row.deleted_by = Some(*by);
                }
            }),
            Record::AgentRegistered { agent, .. } => self.update_pod(t_ms, agent, |row| {
                row.registered = true;
                row.registered_at_ms.get_or_insert(t_ms);
            }),
            Record::AgentDeleted { agent } => {
                self.update_pod(t_ms, agent, |row| row.registered = false);
            }
            Record::FaultStarted {
                index,
                fault,
                target,
            } => {
                self.fault_started(t_ms, *index, fault, target);
            }
            Record::FaultEnded { index, .. } => self.fault_ended(t_ms, *index),
            Record::Sample => self.sample(t_ms),
            Record::RunEnded => self.ended_at_ms = Some(t_ms),
            _ => {
                self.lanes.observe(t_ms, record);
                self.leader.observe(t_ms, record);
            }
        }
    }

    fn job_completed(&mut self, t_ms: u64, job: u64, agent: &str) {
        let agent = self.names.intern(agent) as usize;
        if self.agent_jobs_completed.len() <= agent {
            self.agent_jobs_completed.resize(agent + 1, 0);
        }
        self.agent_jobs_completed[agent] += 1;
        self.job_finished(t_ms, job, JobOutcome::Completed);
    }

    fn fault_ended(&mut self, t_ms: u64, index: u32) {
        if let Some(position) = self.open_faults.remove(&index) {
            self.faults[position].until_ms = Some(t_ms);
        }
    }

    fn job_scheduled(
        &mut self,
        t_ms: u64,
        job: u64,
        logical: u64,
        profile: &str,
        environment: Option<&str>,
    ) {
        let profile = self.names.intern(profile);
        let environment = environment.map(|environment| self.names.intern(environment));
        match self.jobs.schedule(t_ms, job, logical, profile, environment) {
            // A job id is scheduled once; if a model ever repeats one, the gauges follow the
            // row that replaced it so they stay equal to the row counts.
            Some(old) => shift(&mut self.gauges, Gauges::job, old, JobOutcome::Waiting),
            None => self.gauges.jobs_waiting += 1,
        }
    }

    fn job_assigned(&mut self, t_ms: u64, job: u64, agent: &str) {
        let agent_index = self.names.intern(agent);
        let reused = self
            .agent_jobs_completed
            .get(agent_index as usize)
            .is_some_and(|completed| *completed > 0);
        self.jobs_assigned += 1;
        self.jobs_assigned_reused += u64::from(reused);
        if let Some(row) = self.jobs.get_mut(job) {
            row.assigned(t_ms, agent_index, reused);
            if row.outcome == JobOutcome::Waiting {
                row.outcome = JobOutcome::Building;
                shift(
                    &mut self.gauges,
                    Gauges::job,
                    JobOutcome::Waiting,
                    JobOutcome::Building,
                );
            }
        }
        self.update_pod(t_ms, agent, |row| {
            row.jobs_run += 1;
            row.current_job = Some(job);
        });
    }

    /// The job left Waiting/Building for good; its agent, if any, is free again.
    fn job_finished(&mut self, t_ms: u64, job: u64, outcome: JobOutcome) {
        let Some(row) = self.jobs.get_mut(job) else {
            return;
        };
        let before = row.outcome;
        if matches!(before, JobOutcome::Waiting | JobOutcome::Building) {
            row.outcome = outcome;
            if outcome == JobOutcome::Completed {
                row.completed(t_ms);
            }
            shift(&mut self.gauges, Gauges::job, before, outcome);
        }
        let Some(agent) = row.agent() else {
            return;
        };
        let agent = self.names.name(agent);
        update_pod(&mut self.pods, &mut self.gauges, t_ms, agent, |pod| {
            if pod.current_job == Some(job) {
                pod.current_job = None;
            }
        });
    }

    fn pod_created(&mut self, t_ms: u64, pod: &str, config: &str) {
        let name = self.names.intern(pod);
        let name = self.names.shared(name);
        let config = self.names.intern(config);
        let row = PodRow::created(name, self.names.shared(config), t_ms);
        if let Some(old) = self.pods.insert(row) {
            // Pod names are unique per run; a repeat replaces the row, and the gauges with it.
            shift(&mut self.gauges, Gauges::pod, old.phase, PodPhase::Deleted);
            shift(
                &mut self.gauges,
                Gauges::agent,
                old.activity(),
                AgentActivity::Absent,
            );
        }
        self.gauges.pods_pending += 1;
    }

    fn update_pod(&mut self, t_ms: u64, pod: &str, change: impl FnOnce(&mut PodRow)) {
        update_pod(&mut self.pods, &mut self.gauges, t_ms, pod, change);
    }

    fn fault_started(&mut self, t_ms: u64, index: u32, fault: &str, target: &str) {
        let instantaneous = INSTANTANEOUS_FAULTS.contains(&fault);
        self.faults.push(FaultRow {
            index,
            at_ms: t_ms,
            until_ms: instantaneous.then_some(t_ms),
            kind: fault.to_owned(),
            target: target.to_owned(),
            replicas: self.leader.fault_replicas(fault, target),
        });
        self.open_faults.insert(index, self.faults.len() - 1);
    }

    fn sample(&mut self, t_ms: u64) {
        let gauges = &self.gauges;
        self.timeline.push(TimelineRow {
            t_ms,
            jobs_waiting: gauges.jobs_waiting,
            jobs_building: gauges.jobs_building,
            pods_pending: gauges.pods_pending,
            pods_running: gauges.pods_running,
            agents_idle: gauges.agents_idle,
            agents_building: gauges.agents_building,
            jobs_assigned: self.jobs_assigned,
            jobs_assigned_reused: self.jobs_assigned_reused,
            leaders: self.leader.leaders(),
        });
    }

    /// End of the run: the `RunEnded` time, or the last record's time if there was none.
    /// Open intervals (busy, idle, pending, no leader) are counted up to here.
    pub(crate) fn end_ms(&self) -> u64 {
        self.ended_at_ms.unwrap_or(self.last_t_ms)
    }

    /// Job instances in job id order (rows are built from the compact table on each call).
    pub(crate) fn jobs(&self) -> impl Iterator<Item = JobRow> + '_ {
        self.jobs.rows(&self.names)
    }

    /// Pods in name order.
    pub(crate) fn pods(&self) -> impl Iterator<Item = &PodRow> {
        self.pods.iter()
    }

    /// Samples in time order.
    pub(crate) fn timeline(&self) -> &[TimelineRow] {
        &self.timeline
    }

    /// Faults in start order.
    pub(crate) fn faults(&self) -> &[FaultRow] {
        &self.faults
    }

    /// Every leader-election replica seen, ascending (one `leading_<i>` column each).
    pub(crate) fn replicas_seen(&self) -> &BTreeSet<u32> {
        self.leader.replicas_seen()
    }

    /// True when the run had any leader-election record.
    pub(crate) fn has_leader_records(&self) -> bool {
        self.leader.has_records()
    }

    /// Job assignments, and those that went to an agent that had completed a job before.
    pub(crate) fn assignments(&self) -> (u64, u64) {
        (self.jobs_assigned, self.jobs_assigned_reused)
    }

    /// Leader lanes (`leader.csv`): per replica, when it led, acted, was down or paused.
    pub(crate) fn leader_lanes(&self) -> &[LaneSpan] {
        self.lanes.spans()
    }

    /// Every failover's duration (`leader.rs` rules), ascending: the pooled distribution of
    /// a sweep or comparison is built from these.
    pub fn failover_durations_ms(&self) -> Vec<u64> {
        let mut durations = self.leader.failover_durations_ms.clone();
        durations.sort_unstable();
        durations
    }

    pub(super) fn leader_tracker(&self) -> &LeaderTracker {
        &self.leader
    }
}
