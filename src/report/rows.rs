//! The rows the collector keeps: one per job instance, pod, sample and fault. They are plain
//! data; the CSV tables and metrics are computed from them when the run ends.

use crate::trace::Actor;
use std::sync::Arc;

/// Where a job instance ended up (or is, if the run ended first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum JobOutcome {
    /// Scheduled, not yet assigned to an agent.
    Waiting,
    /// Assigned to an agent and not yet finished.
    Building,
    /// The agent reported the job completed.
    Completed,
    /// The server rescheduled the instance (a new instance takes its place).
    Rescheduled,
    /// The job was cancelled.
    Cancelled,
}

impl JobOutcome {
    /// The word used in `jobs.csv`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobOutcome::Waiting => "waiting",
            JobOutcome::Building => "building",
            JobOutcome::Completed => "completed",
            JobOutcome::Rescheduled => "rescheduled",
            JobOutcome::Cancelled => "cancelled",
        }
    }
}

/// One job instance (`jobs.csv`).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct JobRow {
    /// The job instance's id (a reschedule gets a new one).
    pub job_id: u64,
    /// The id every instance of the same job shares.
    pub logical_job: u64,
    /// The elastic profile the job asked for.
    pub profile: String,
    /// The job's environment, if it has one.
    pub environment: Option<String>,
    /// Simulated time the instance was scheduled, in milliseconds.
    pub scheduled_at_ms: u64,
    /// When the server assigned it to an agent, if it did.
    pub assigned_at_ms: Option<u64>,
    /// When it completed, if it did.
    pub completed_at_ms: Option<u64>,
    /// The agent it was assigned to, if any.
    pub agent_id: Option<String>,
    /// True when the agent had completed a job before this one was assigned to it.
    pub pod_reused: bool,
    /// Where the instance ended up.
    pub outcome: JobOutcome,
}

impl JobRow {
    /// Time from scheduling to assignment; `None` while unassigned.
    pub(crate) fn wait_ms(&self) -> Option<u64> {
        self.assigned_at_ms
            .map(|assigned_at_ms| assigned_at_ms.saturating_sub(self.scheduled_at_ms))
    }

    /// The wait so far of an instance still waiting when the run ended at `end_ms`: a lower
    /// bound of its wait. `None` for every other instance (a cancelled one waits no more).
    pub(crate) fn censored_wait_ms(&self, end_ms: u64) -> Option<u64> {
        (self.outcome == JobOutcome::Waiting).then(|| end_ms.saturating_sub(self.scheduled_at_ms))
    }
}

/// A pod's lifecycle as Kubernetes sees it, for the timeline gauges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PodPhase {
    Pending,
    Running,
    /// Succeeded or Failed but not yet removed from the API server.
    Finished,
    Deleted,
}

/// What the pod's agent is doing, for the timeline gauges and the busy/idle clocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AgentActivity {
    /// Not registered (or deregistered) and not building.
    Absent,
    Idle,
    Building,
}

/// One pod (`pods.csv`), with the clocks that measure its agent's busy and idle time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PodRow {
    /// Shared with the collector's name table (the pod's agent has the same name).
    pub pod: Arc<str>,
    /// The hash of the settings the pod was created with (its config-hash annotation).
    pub config_hash: Arc<str>,
    /// Simulated time the allocator created the pod, in milliseconds.
    pub created_at_ms: u64,
    /// When the pod reached phase Running, if it did.
    pub running_at_ms: Option<u64>,
    /// When its agent registered with the server, if it did.
    pub registered_at_ms: Option<u64>,
    /// When the pod was deleted, if it was.
    pub deleted_at_ms: Option<u64>,
    /// Who deleted it (the allocator, a fault, a node loss), if it was deleted.
    pub deleted_by: Option<Actor>,
    /// Job instances assigned to this pod's agent.
    pub jobs_run: u64,
    pub(super) phase: PodPhase,
    pub(super) registered: bool,
    pub(super) current_job: Option<u64>,
    /// Start of the current busy or idle segment.
    pub(super) segment_since_ms: u64,
    pub(super) busy_closed_ms: u64,
    pub(super) idle_closed_ms: u64,
}

impl PodRow {
    pub(super) fn created(pod: Arc<str>, config_hash: Arc<str>, t_ms: u64) -> PodRow {
        PodRow {
            pod,
            config_hash,
            created_at_ms: t_ms,
            running_at_ms: None,
            registered_at_ms: None,
            deleted_at_ms: None,
            deleted_by: None,
            jobs_run: 0,
            phase: PodPhase::Pending,
            registered: false,
            current_job: None,
            segment_since_ms: t_ms,
            busy_closed_ms: 0,
            idle_closed_ms: 0,
        }
    }

    pub(super) fn activity(&self) -> AgentActivity {
        if self.phase == PodPhase::Deleted {
            AgentActivity::Absent
        } else if self.current_job.is_some() {
            AgentActivity::Building
        } else if self.registered {
            AgentActivity::Idle
        } else {
            AgentActivity::Absent
        }
    }

    /// Book the time since the segment started to busy or idle, and start a new segment at
    /// `t_ms`. Called before every change that may alter [`PodRow::activity`].
    pub(super) fn close_segment(&mut self, t_ms: u64) {
        let elapsed_ms = t_ms.saturating_sub(self.segment_since_ms);
        match self.activity() {
            AgentActivity::Building => self.busy_closed_ms += elapsed_ms,
            AgentActivity::Idle => self.idle_closed_ms += elapsed_ms,
            AgentActivity::Absent => {}
        }
        self.segment_since_ms = self.segment_since_ms.max(t_ms);
    }

    fn open_segment_ms(&self, activity: AgentActivity, end_ms: u64) -> u64 {
        if self.activity() == activity {
            end_ms.saturating_sub(self.segment_since_ms)
        } else {
            0
        }
    }

    /// Time the agent spent building, counting an open job up to `end_ms`.
    pub(crate) fn busy_ms(&self, end_ms: u64) -> u64 {
        self.busy_closed_ms + self.open_segment_ms(AgentActivity::Building, end_ms)
    }

    /// Time the agent was registered and not building, up to deletion or `end_ms`.
    pub(crate) fn idle_ms(&self, end_ms: u64) -> u64 {
        self.idle_closed_ms + self.open_segment_ms(AgentActivity::Idle, end_ms)
    }

    /// Time from creation until Running, deletion or `end_ms`, whichever came first.
    pub(crate) fn pending_ms(&self, end_ms: u64) -> u64 {
        let pending_until_ms = self.running_at_ms.or(self.deleted_at_ms).unwrap_or(end_ms);
        pending_until_ms.saturating_sub(self.created_at_ms)
    }
}

/// One `Record::Sample` (`timeline.csv`): the gauges at that instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TimelineRow {
    /// Simulated time of the sample, in milliseconds.
    pub t_ms: u64,
    /// Job instances scheduled and not yet assigned.
    pub jobs_waiting: u64,
    /// Job instances assigned and not yet finished.
    pub jobs_building: u64,
    /// Pods created and not yet running.
    pub pods_pending: u64,
    /// Pods running.
    pub pods_running: u64,
    /// Registered agents with no job.
    pub agents_idle: u64,
    /// Agents building a job.
    pub agents_building: u64,
    /// Assignments so far, and how many of them went to an agent that had completed a job.
    pub jobs_assigned: u64,
    /// How many of `jobs_assigned` went to an agent that had completed a job.
    pub jobs_assigned_reused: u64,
    /// Replicas whose runner believed it led at that instant, ascending.
    pub leaders: Vec<u32>,
}

impl TimelineRow {
    /// Reuse ratio so far: 0 before the first assignment.
    pub(crate) fn reuse_ratio(&self) -> f64 {
        ratio(self.jobs_assigned_reused, self.jobs_assigned)
    }
}

/// One fault (`faults.csv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FaultRow {
    /// The fault's position in the scenario's fault list.
    pub index: u32,
    /// Simulated time the fault started, in milliseconds.
    pub at_ms: u64,
    /// `None` while the fault has not ended (and is not instantaneous).
    pub until_ms: Option<u64>,
    /// The fault's kind, as in the scenario (e.g. `node_loss`).
    pub kind: String,
    /// What the fault acts on (a node group, a node, a replica).
    pub target: String,
    /// The leader replicas the fault acts on (`leader.rs`, `fault_replicas`); `None` for a
    /// fault aimed at no particular replica (an API outage, a Lease delete, an elastic fault).
    pub replicas: Option<Vec<u32>>,
}

/// `numerator / denominator`, or 0 when there is nothing to divide (so no NaN reaches JSON).
pub(crate) fn ratio(numerator: u64, denominator: u64) -> f64 {
    if denominator == 0 {
        0.0
    } else {
        numerator as f64 / denominator as f64
    }
}
