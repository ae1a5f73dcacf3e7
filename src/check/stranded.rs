//! Jobs the GoCD server itself cannot recover: `all-jobs-complete` labels them expected.
//!
//! The server reschedules a job whose agent is gone or lost contact only in its hung-job
//! check (`ScheduleService.rescheduleHungJobs`, every 30 s), and that check does nothing
//! while no agent is live (registered, not deleted, not LostContact). A job whose agent dies
//! when no other agent is live therefore stays assigned until some agent registers, which in
//! a run's quiet end may be never: no plugin can change that (it hears nothing of the job).

use crate::ids::NameMap;
use crate::trace::{AgentRuntime, Record};
use std::collections::BTreeMap;

/// The server's hung-job check period (`cruise.reschedule.hung.builds.interval`, default).
const HUNG_JOB_CHECK_MS: u64 = 30_000;

/// Follows which agents the server counts as live and, for each job whose agent stopped
/// being live while it ran it, when that happened.
#[derive(Debug, Default)]
pub(crate) struct Stranded {
    live: NameMap<()>,
    /// The job each agent was last given (an agent runs one job at a time).
    job_on_agent: NameMap<u64>,
    /// Jobs whose agent stopped being live while running them → when.
    agent_lost_ms: BTreeMap<u64, u64>,
    /// The last time any agent was live.
    any_live_until_ms: u64,
}

impl Stranded {
    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) {
        debug_assert!(
            self.any_live_until_ms <= t_ms,
            "records arrive in time order"
        );
        // Live up to this record: a later stop is seen at its own record's time.
        if !self.live.is_empty() {
            self.any_live_until_ms = t_ms;
        }
        match record {
            Record::AgentState { agent, state } if *state == AgentRuntime::LostContact => {
                self.stopped(t_ms, agent);
            }
            Record::AgentRegistered { agent, .. } | Record::AgentState { agent, .. }
                if !self.live.contains_key(agent) =>
            {
                self.live.insert(agent, ());
            }
            Record::AgentDeleted { agent } => self.stopped(t_ms, agent),
            Record::JobAssigned { job, agent, .. } => {
                self.job_on_agent.insert(agent, *job);
            }
            Record::JobCompleted { job, agent } => {
                self.job_on_agent.remove(agent);
                self.agent_lost_ms.remove(job);
            }
            Record::JobRescheduled { job, .. } | Record::JobCancelled { job } => {
                self.agent_lost_ms.remove(job);
            }
            _ => {}
        }
    }

    fn stopped(&mut self, t_ms: u64, agent: &str) {
        self.live.remove(agent);
        if let Some(job) = self.job_on_agent.remove(agent) {
            self.agent_lost_ms.entry(job).or_insert(t_ms);
        }
    }

    /// Why the server could not reschedule `job`, still assigned at the end, if it could not:
    /// its agent stopped being live and no agent was live for a hung-job check period since.
    pub(crate) fn why(&self, job: u64) -> Option<String> {
        let lost_ms = *self.agent_lost_ms.get(&job)?;
        let no_check_since = self.any_live_until_ms < lost_ms.saturating_add(HUNG_JOB_CHECK_MS);
        (self.live.is_empty() && no_check_since).then(|| {
            format!(
                "its agent stopped being live at t={} and no agent was live for a hung-job \
                 check since: the server reschedules hung jobs only while some agent is live",
                super::jobs::seconds(lost_ms)
            )
        })
    }
}
