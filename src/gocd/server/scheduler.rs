//! The server's job scheduling: jobs enter the database, the build-assignment loop queues
//! create-agent messages for new and starving jobs, hung jobs are rescheduled and users cancel
//! jobs.

use super::{Server, ServerOut};
use crate::allocator::{CreateAgentRequest, JobIdentifier};
use crate::gocd::database::{AgentRecord, Job, JobPlan, JobState};
use crate::trace::{AgentRuntime, Record};
use std::collections::BTreeSet;

/// A create-agent message waiting for a free plugin thread.
pub(super) struct Queued {
    pub(super) request: u64,
    pub(super) job: u64,
    pub(super) queued_ms: u64,
    pub(super) body: CreateAgentRequest,
}

impl Server {
    /// A pipeline triggers a job (a new logical job, or a reschedule of `logical`).
    pub(super) fn schedule_job(
        &mut self,
        now_ms: u64,
        logical: Option<u64>,
        profile: String,
        environment: Option<String>,
        runtime_ms: u64,
        out: &mut ServerOut,
    ) {
        debug_assert!(
            self.profiles.contains_key(&profile),
            "job scheduled with unknown profile {profile:?}"
        );
        let id = self.db.next_job_id();
        let logical = logical.unwrap_or_else(|| self.db.next_logical());
        debug_assert!(self.db.jobs.get(&id).is_none(), "job id {id} reused");
        let plan = JobPlan {
            profiles: self.profiles_now(&profile),
            profile,
            environment,
        };
        let job = Job::scheduled(id, logical, plan, runtime_ms, now_ms);
        self.add_scheduled(job, out);
    }

    /// A job instance enters the queue: its `JobScheduled` record, with the config identity
    /// frozen in its plan.
    fn add_scheduled(&mut self, job: Job, out: &mut ServerOut) {
        debug_assert!(job.agent.is_none(), "a scheduled job has no agent");
        out.records.push(Record::JobScheduled {
            job: job.id,
            logical: job.logical,
            profile: job.profile.clone(),
            environment: job.environment.clone(),
            config: job.config.clone(),
        });
        self.db.jobs.insert(job);
    }

    pub(super) fn job_identifier(job: &Job) -> JobIdentifier {
        JobIdentifier {
            pipeline_name: format!("pipeline-{}", job.logical),
            pipeline_label: job.logical.to_string(),
            pipeline_counter: 1,
            stage_name: "build".to_owned(),
            stage_counter: "1".to_owned(),
            job_name: format!("job-{}", job.profile),
            job_id: job.id,
        }
    }

    /// `BuildAssignmentService.onTimer` → `createAgentsFor(old, new)`.
    pub(super) fn assignment_tick(&mut self, now_ms: u64, out: &mut ServerOut) {
        let plan: Vec<&Job> = self.db.jobs.plan().collect();
        let new_plan: Vec<u64> = plan.iter().map(|j| j.id).collect();
        let memory = self.memory.as_mut().expect("checked by caller");
        debug_assert!(
            memory.last_try_ms.values().all(|&t| t <= now_ms),
            "a create-agent try dated after the tick"
        );
        let old: BTreeSet<u64> = memory.job_plans.iter().copied().collect();
        // An expired key is refused like an unknown one: forgetting it changes no answer, and
        // keys of requests that made no pod would otherwise pile up for the whole run.
        memory.keys.forget_expired(now_ms);
        let starvation = self.settings.job_starvation_timeout_ms;
        for job in plan {
            let starving = memory
                .last_try_ms
                .get(&job.id)
                .is_some_and(|t| now_ms - t >= starvation);
            if old.contains(&job.id) && !starving {
                continue;
            }
            debug_assert_eq!(
                job.state,
                JobState::Scheduled,
                "the plan holds scheduled jobs"
            );
            memory.last_try_ms.insert(job.id, now_ms);
            memory.next_request += 1;
            let request = memory.next_request;
            let key = format!("key-{:08x}-{request}", memory.process_id & 0xffff_ffff);
            memory
                .keys
                .issue(key.clone(), now_ms + self.settings.auto_register_key_ttl_ms);
            let body = CreateAgentRequest {
                auto_register_key: key,
                elastic_agent_profile_properties: job.profiles.elastic.clone(),
                cluster_profile_properties: job.profiles.cluster.clone(),
                environment: job.environment.clone(),
                job_identifier: Self::job_identifier(job),
            };
            memory.queue.push_back(Queued {
                request,
                job: job.id,
                queued_ms: now_ms,
                body,
            });
            out.records.push(Record::CreateAgentQueued {
                job: job.id,
                request,
            });
        }
        memory.job_plans = new_plan;
        self.dispatch_creates(now_ms, out);
    }

    /// Live for the hung-job check: registered and not LostContact.
    fn is_live(record: &AgentRecord) -> bool {
        record.runtime != AgentRuntime::LostContact
    }

    /// `ScheduleService.rescheduleHungJobs`: assigned jobs whose agent is gone or lost; the
    /// check does nothing while no agent is live.
    pub(super) fn reschedule_hung_jobs(&mut self, now_ms: u64, out: &mut ServerOut) {
        if !self
            .db
            .agents
            .iter()
            .any(|(_, record)| Self::is_live(record))
        {
            return;
        }
        let agents = &self.db.agents;
        let hung: Vec<u64> = (self.db.jobs.assigned())
            .filter(|&(job, number)| {
                let agent = agents.get_by_number(number).map(|(_, record)| record);
                let named = || self.db.jobs[&job].agent.as_deref();
                debug_assert!(
                    agent.map(std::ptr::from_ref)
                        == named()
                            .and_then(|name| agents.get(name))
                            .map(std::ptr::from_ref),
                    "job {job}: its agent's number and name find other agents"
                );
                !agent.is_some_and(Self::is_live)
            })
            .map(|(job, _)| job)
            .collect();
        for job in hung {
            self.reschedule(now_ms, job, "hung: its agent is gone or lost contact", out);
        }
    }

    /// Reschedule `job` as a new instance of the same logical job.
    pub(super) fn reschedule(&mut self, now_ms: u64, job: u64, reason: &str, out: &mut ServerOut) {
        // The old instance is history (the trace has it): the database keeps live jobs only,
        // so its size follows the cluster's load, not the simulated time.
        let old = self.db.jobs.remove(&job).expect("rescheduling a known job");
        assert_eq!(
            old.state,
            JobState::Assigned,
            "only assigned jobs are rescheduled"
        );
        if let Some(memory) = self.memory.as_mut() {
            memory.last_try_ms.remove(&job);
        }
        // `ScheduleService.rescheduleJob` copies the old instance's plan, frozen profiles
        // included: an edit since the first scheduling does not reach the new instance.
        let (logical, plan, runtime_ms) = (old.logical, old.plan(), old.runtime_ms);
        if let Some(agent) = old.agent {
            self.db.agents.update(agent.as_str(), |record| {
                if record.job == Some(job) {
                    record.job = None;
                }
            });
        }
        let new_job = self.db.next_job_id();
        assert!(new_job > job, "a rescheduled job gets a newer id");
        out.records.push(Record::JobRescheduled {
            job,
            new_job,
            reason: reason.to_owned(),
        });
        let new = Job::scheduled(new_job, logical, plan, runtime_ms, now_ms);
        self.add_scheduled(new, out);
    }

    /// A user cancels jobs (`job_cancel` fault). A scheduled job just leaves the queue. A
    /// building one completes (Cancelled): the server sends job-completion at once, while the
    /// agent keeps reporting Building (build state Cancelled) until it has killed the build,
    /// which it learns from its next ping reply.
    pub(super) fn cancel_jobs(&mut self, now_ms: u64, jobs: &[u64], out: &mut ServerOut) {
        if self.memory.is_none() {
            // Down, or between a crash and its restart: there is no job to cancel.
            return;
        }
        for &job_id in jobs {
            let Some(job) = self.db.jobs.remove(&job_id) else {
                continue;
            };
            debug_assert_eq!(job.id, job_id, "the job table is keyed by job id");
            out.records.push(Record::JobCancelled { job: job_id });
            let memory = self.memory.as_mut().expect("checked above");
            memory.job_plans.retain(|j| *j != job_id);
            memory.last_try_ms.remove(&job_id);
            let Some(agent_id) = job.agent.clone() else {
                continue;
            };
            self.db.agents.update(agent_id.as_str(), |agent| {
                if agent.job == Some(job_id) {
                    agent.job = None;
                    agent.cancelling = Some(job_id);
                }
            });
            self.post_job_completion(now_ms, &agent_id, job, out);
        }
    }
}
