//! The server's live jobs, with the scheduled ones kept in plan order and the assigned ones
//! with their agent's number.
//!
//! Every assignment tick (`BuildAssignmentService.onTimer`) the server lines up the jobs still
//! waiting for an agent, oldest first; every hung-job check looks up the agent of every
//! assigned job. Filtering every live job for those, and finding each agent by its name, cost
//! O(live jobs) reads of cold jobs and names per tick. [`JobTable`] keeps the scheduled jobs in
//! plan order and the assigned ones with their agent's [`AgentId`] beside the jobs themselves,
//! in step with the only three changes a job sees (scheduled, assigned, gone).
//!
//! The naive references are the filters over every job ([`JobTable::plan_naive`],
//! [`JobTable::assigned_naive`]); debug builds compare them at every walk, and the tests below
//! drive both with random changes.

use super::database::{Job, JobState};
use super::protocol::AgentId;
use std::collections::{BTreeMap, BTreeSet};
use std::ops::Index;

/// Live jobs by id, and the scheduled ones in plan order.
#[derive(Debug, Default)]
pub struct JobTable {
    jobs: BTreeMap<u64, Job>,
    /// The scheduled jobs as `(scheduled_ms, id)`: the order the assignment tick plans in.
    plan: BTreeSet<(u64, u64)>,
    /// The assigned jobs, and the number of the agent each is assigned to.
    assigned: BTreeMap<u64, AgentId>,
}

impl JobTable {
    /// The job `id`, if it is live.
    pub(crate) fn get(&self, id: &u64) -> Option<&Job> {
        self.jobs.get(id)
    }

    /// Every live job, in id order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &Job> {
        self.jobs.values()
    }

    /// A new live job, waiting for an agent (replacing any job under the same id).
    pub(crate) fn insert(&mut self, job: Job) {
        assert_eq!(job.state, JobState::Scheduled, "a job enters scheduled");
        self.remove(&job.id);
        self.plan.insert((job.scheduled_ms, job.id));
        self.jobs.insert(job.id, job);
    }

    /// The job leaves the database (completed, rescheduled, cancelled).
    pub(crate) fn remove(&mut self, id: &u64) -> Option<Job> {
        let job = self.jobs.remove(id)?;
        self.plan.remove(&(job.scheduled_ms, job.id));
        self.assigned.remove(id);
        Some(job)
    }

    /// Scheduled job `id` is assigned to agent `agent`, numbered `number`.
    pub(crate) fn assign(&mut self, id: u64, agent: &str, number: AgentId) -> &Job {
        let job = self.jobs.get_mut(&id).expect("an assigned job is live");
        debug_assert!(
            job.state == JobState::Scheduled && job.agent.is_none(),
            "job {id} is assigned once, from Scheduled"
        );
        job.state = JobState::Assigned;
        job.agent = Some(agent.to_owned());
        self.plan.remove(&(job.scheduled_ms, id));
        self.assigned.insert(id, number);
        job
    }

    /// The assigned jobs in id order, each with its agent's number.
    pub(crate) fn assigned(&self) -> impl Iterator<Item = (u64, AgentId)> {
        #[cfg(debug_assertions)]
        assert!(
            self.assigned.keys().copied().eq(self.assigned_naive()),
            "the assigned index differs from the assigned jobs"
        );
        self.assigned.iter().map(|(&id, &number)| (id, number))
    }

    /// The naive reference: the ids of the assigned jobs, filtered from every job.
    #[cfg(any(test, debug_assertions))]
    fn assigned_naive(&self) -> Vec<u64> {
        let assigned = self.jobs.values().filter(|j| j.state == JobState::Assigned);
        assigned.map(|job| job.id).collect()
    }

    /// The scheduled jobs, oldest first (by scheduled time, then id).
    pub(crate) fn plan(&self) -> impl Iterator<Item = &Job> {
        #[cfg(debug_assertions)]
        assert!(
            self.plan.iter().map(|&(_, id)| id).eq(self.plan_naive()),
            "the plan index differs from the scheduled jobs"
        );
        self.plan.iter().map(|(_, id)| &self.jobs[id])
    }

    /// The naive reference: the ids of the scheduled jobs, filtered from every job and sorted.
    #[cfg(any(test, debug_assertions))]
    fn plan_naive(&self) -> Vec<u64> {
        let mut plan: Vec<&Job> = self
            .jobs
            .values()
            .filter(|job| job.state == JobState::Scheduled)
            .collect();
        plan.sort_by_key(|job| (job.scheduled_ms, job.id));
        plan.into_iter().map(|job| job.id).collect()
    }
}

impl Index<&u64> for JobTable {
    type Output = Job;

    fn index(&self, id: &u64) -> &Job {
        &self.jobs[id]
    }
}

#[cfg(test)]
mod tests {
    use super::JobTable;
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use crate::gocd::database::{Job, JobPlan, JobState};
    use crate::gocd::protocol::AgentId;
    use std::sync::Arc;

    /// Random schedules (several at the same time, so ids break ties), assignments and
    /// removals of scheduled and assigned jobs: the plan is always the naive filter and sort,
    /// and the assigned jobs the naive filter, each with the number it was assigned with.
    #[test]
    fn the_plan_is_the_scheduled_jobs_oldest_first_through_random_changes() {
        let mut random = Stream::new(11, StreamId::Workload);
        let mut table = JobTable::default();
        let (mut next_id, mut now_ms, mut planned) = (0, 0, 0);
        let plan = JobPlan {
            profile: "p".into(),
            profiles: Arc::default(),
            environment: None,
        };
        for _ in 0..20_000 {
            let live: Vec<u64> = table.values().map(|job| job.id).collect();
            let pick = |random: &mut Stream| live[random.below(live.len() as u64) as usize];
            match random.below(5) {
                0 | 1 => {
                    next_id += 1;
                    now_ms += random.below(3);
                    let job = Job::scheduled(next_id, next_id, plan.clone(), 1, now_ms);
                    table.insert(job);
                }
                2 if !live.is_empty() => {
                    let id = pick(&mut random);
                    if table[&id].state == JobState::Scheduled {
                        let job = table.assign(id, "agent", AgentId(id as u32));
                        assert_eq!(
                            (job.state, job.agent.as_deref()),
                            (JobState::Assigned, Some("agent"))
                        );
                    }
                }
                3 if !live.is_empty() => {
                    let id = pick(&mut random);
                    assert_eq!(table.remove(&id).map(|job| job.id), Some(id));
                    assert!(table.get(&id).is_none());
                }
                _ => {}
            }
            let plan: Vec<u64> = table.plan().map(|job| job.id).collect();
            assert_eq!(plan, table.plan_naive());
            let assigned: Vec<(u64, AgentId)> = table.assigned().collect();
            let naive = table.assigned_naive();
            assert_eq!(
                assigned.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
                naive
            );
            assert!(
                assigned
                    .iter()
                    .all(|(id, number)| *number == AgentId(*id as u32))
            );
            planned += plan.len();
        }
        assert!(
            planned > 100_000,
            "the plans were long enough to order ({planned})"
        );
    }
}
