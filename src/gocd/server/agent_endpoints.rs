//! The server's agent endpoints: registration, ping, get-work (should-assign-work asked job
//! by job), completion reports, and the liveness refresh that marks silent agents
//! LostContact.

use super::{Server, ServerOut};
use crate::allocator::{AllocatorInput, ShouldAssignWorkRequest};
use crate::gocd::agent_table::metadata;
use crate::gocd::database::{AgentRecord, JobProfiles, JobState};
use crate::gocd::protocol::{AgentId, AgentRequest, Registration, ServerReply};
use crate::ids::NameKey;
use crate::trace::{AgentRuntime, Record};
use std::sync::Arc;

impl Server {
    /// An agent's HTTP request arrives. The caller only delivers it while the server is up.
    pub(super) fn handle_agent(
        &mut self,
        now_ms: u64,
        request: AgentRequest,
        out: &mut ServerOut,
    ) -> ServerReply {
        assert!(self.memory.is_some(), "agent request to a stopped server");
        match request {
            AgentRequest::Register {
                agent,
                uuid,
                registration,
            } => self.register(now_ms, agent, uuid, *registration, out),
            AgentRequest::Ping {
                agent,
                uuid,
                building,
            } => self.ping(now_ms, agent, uuid, building, out),
            AgentRequest::GetWork { agent, uuid } => {
                let Some((id, _)) = self.db.agents.get_by_number(agent) else {
                    return ServerReply::NotRegistered;
                };
                let id = id.clone();
                let reply = self.get_work(now_ms, &id, uuid, None, out);
                let held = self.memory.as_ref().expect("checked").next_request;
                reply.unwrap_or(ServerReply::Held(held))
            }
            AgentRequest::ReportCompleted { agent, uuid, job } => {
                self.completed(now_ms, agent, uuid, job, out)
            }
        }
    }

    /// `AgentRegistrationController`: the key is validated and revoked (single use,
    /// expiring, in-memory), then a duplicate elastic agent id is refused.
    fn register(
        &mut self,
        now_ms: u64,
        number: AgentId,
        uuid: u64,
        registration: Registration,
        out: &mut ServerOut,
    ) -> ServerReply {
        let Registration {
            elastic_agent_id,
            key,
            environment,
        } = registration;
        let memory = self.memory.as_mut().expect("checked by caller");
        let key_valid = memory
            .keys
            .revoke(&key)
            .is_some_and(|expiry| now_ms <= expiry);
        let refusal = if !key_valid {
            Some("auto-register key is unknown, used or expired")
        } else if self.db.agents.contains_key(&*elastic_agent_id) {
            Some("an agent with this elastic agent id is already registered")
        } else {
            None
        };
        if let Some(reason) = refusal {
            out.records.push(Record::AgentRegistrationRefused {
                agent: elastic_agent_id.to_string(),
                uuid,
                reason: reason.to_owned(),
            });
            return ServerReply::Refused(reason.to_owned());
        }
        let record = AgentRecord {
            uuid,
            environment,
            enabled: true,
            runtime: AgentRuntime::Idle,
            last_heard_ms: now_ms,
            job: None,
            cancelling: None,
        };
        let agent = elastic_agent_id.to_string();
        let key = NameKey::new(elastic_agent_id);
        debug_assert!(
            self.db.agents.get_by_number(number).is_none(),
            "agent {agent}: its number {number:?} is registered already"
        );
        self.db.agents.insert(key, number, record);
        out.records.push(Record::AgentRegistered { agent, uuid });
        ServerReply::Registered
    }

    fn ping(
        &mut self,
        now_ms: u64,
        number: AgentId,
        uuid: u64,
        building: Option<u64>,
        out: &mut ServerOut,
    ) -> ServerReply {
        let heard = self.db.agents.update_registered(number, uuid, |id, agent| {
            debug_assert!(
                agent.last_heard_ms <= now_ms,
                "agent {id:?} heard in the future"
            );
            agent.last_heard_ms = now_ms;
            // The ping reply carries the cancel instruction (`AgentInstruction`) for a build
            // the agent still runs; a ping without it means the kill is over.
            let cancel = agent.cancelling.filter(|job| building == Some(*job));
            if cancel.is_none() {
                agent.cancelling = None;
            }
            let runtime = if building.is_some() || agent.job.is_some() {
                AgentRuntime::Building
            } else {
                AgentRuntime::Idle
            };
            if agent.runtime != runtime {
                agent.runtime = runtime;
                out.records.push(agent_state(id, runtime));
            }
            cancel
        });
        let Some(cancel) = heard else {
            return ServerReply::NotRegistered;
        };
        match cancel {
            Some(_) => ServerReply::Cancel {
                kill_ms: self.settings.cancel_kill_ms,
            },
            None => ServerReply::Pong,
        }
    }

    /// Whether should-assign-work can be answered for a job of plan `profiles`: asked of the
    /// plugin unless `ready` already holds a plan with the same cluster profile (then kept).
    fn ready_for(
        &mut self,
        now_ms: u64,
        agent: (&NameKey, u64),
        (ready, profiles): (&mut Option<Arc<JobProfiles>>, Arc<JobProfiles>),
        hold: Option<u64>,
        out: &mut ServerOut,
    ) -> bool {
        let asked = ready.as_ref().is_some_and(|known| {
            Arc::ptr_eq(known, &profiles) || known.cluster == profiles.cluster
        });
        if asked {
            return true;
        }
        if !self.ready_to_assign(now_ms, agent, &profiles.cluster, hold, out) {
            return false;
        }
        *ready = Some(profiles);
        true
    }

    /// `BuildAssignmentService.assignWorkToAgent`. `None` when the get-work is held (the
    /// plugin lists pods before its first should-assign-work for the cluster profile); `hold`
    /// is the id it was first held under, if it was.
    pub(super) fn get_work(
        &mut self,
        now_ms: u64,
        id: &NameKey,
        uuid: u64,
        hold: Option<u64>,
        out: &mut ServerOut,
    ) -> Option<ServerReply> {
        let Some(agent) = self.db.agents.get(id).filter(|a| a.uuid == uuid) else {
            return Some(ServerReply::NotRegistered);
        };
        if !agent.enabled {
            return Some(ServerReply::Denied);
        }
        if let Some(job) = agent.job {
            self.abandon(now_ms, job, out);
        }
        let environment = self
            .db
            .agents
            .get(id)
            .expect("checked above")
            .environment
            .clone();
        let candidates: Vec<u64> = self.memory.as_ref().expect("checked").job_plans.clone();
        // The plan whose cluster profile the plugin was last found ready for: a job of
        // another cluster profile (frozen before an edit) asks again.
        let mut ready: Option<Arc<JobProfiles>> = None;
        // One request, rewritten per job: the agent's metadata and the cluster profile stay
        // the same while the loop goes on (a plugin that disables or deletes this agent ends
        // it), and the profile's properties are copied only when the profile changes.
        let mut request: Option<(ShouldAssignWorkRequest, Arc<JobProfiles>)> = None;
        for job_id in candidates {
            let Some(job) = self.db.jobs.get(&job_id) else {
                continue;
            };
            if job.state != JobState::Scheduled || job.environment != environment {
                continue;
            }
            let profiles = Arc::clone(&job.profiles);
            if !self.ready_for(now_ms, (id, uuid), (&mut ready, profiles), hold, out) {
                return None;
            }
            let request = self.rewrite_request(&mut request, id, job_id);
            let input = AllocatorInput::ShouldAssignWork(request);
            let answer = self
                .call_plugin(now_ms, input, out)
                .expect("should-assign-work is answered");
            out.records.push(Record::ShouldAssignWork {
                agent: id.as_str().to_owned(),
                job: job_id,
                answer,
            });
            // The plugin may have disabled or deleted this agent while answering.
            let still_assignable = self
                .db
                .agents
                .get(id)
                .is_some_and(|a| a.uuid == uuid && a.enabled);
            if !still_assignable {
                return Some(ServerReply::NoWork);
            }
            if answer {
                return Some(self.assign(job_id, id, out));
            }
        }
        self.dispatch_creates(now_ms, out);
        Some(ServerReply::NoWork)
    }

    /// The agent asks for new work while its job is still assigned to it: that job was
    /// abandoned (the agent restarted) and is rescheduled.
    fn abandon(&mut self, now_ms: u64, job: u64, out: &mut ServerOut) {
        if self
            .db
            .jobs
            .get(&job)
            .is_some_and(|j| j.state == JobState::Assigned)
        {
            self.reschedule(now_ms, job, "abandoned: its agent asked for new work", out);
        }
    }

    /// The should-assign-work request for `job_id` by agent `id`, rewritten in `slot` from the
    /// previous job's: the agent's metadata stays, the profiles frozen in the job's plan are
    /// copied only when they differ from the previous job's.
    fn rewrite_request<'r>(
        &self,
        slot: &'r mut Option<(ShouldAssignWorkRequest, Arc<JobProfiles>)>,
        id: &NameKey,
        job_id: u64,
    ) -> &'r mut ShouldAssignWorkRequest {
        let job = &self.db.jobs[&job_id];
        let (request, profiles) = slot.get_or_insert_with(|| {
            let request = ShouldAssignWorkRequest {
                agent: metadata(id, self.db.agents.get(id).expect("checked above")),
                environment: None,
                elastic_agent_profile_properties: job.profiles.elastic.clone(),
                cluster_profile_properties: job.profiles.cluster.clone(),
                job_identifier: Self::job_identifier(job),
            };
            (request, Arc::clone(&job.profiles))
        });
        if !Arc::ptr_eq(profiles, &job.profiles) {
            (request.elastic_agent_profile_properties).clone_from(&job.profiles.elastic);
            (request.cluster_profile_properties).clone_from(&job.profiles.cluster);
            *profiles = Arc::clone(&job.profiles);
        }
        request.environment.clone_from(&job.environment);
        request.job_identifier = Self::job_identifier(job);
        request
    }

    fn assign(&mut self, job_id: u64, agent_id: &NameKey, out: &mut ServerOut) -> ServerReply {
        let number = (self.db.agents.number_of(agent_id.as_str()))
            .expect("an agent given work is registered");
        debug_assert!(
            (self.db.agents.get(agent_id)).is_some_and(|a| a.enabled && a.job.is_none()),
            "job {job_id} assigned to {agent_id:?}, which is disabled or has a job"
        );
        let job = self.db.jobs.assign(job_id, agent_id.as_str(), number);
        let (config, runtime_ms) = (job.config.clone(), job.runtime_ms);
        let memory = self.memory.as_mut().expect("checked");
        memory.job_plans.retain(|j| *j != job_id);
        let was = self
            .db
            .agents
            .update(agent_id, |agent| {
                agent.job = Some(job_id);
                std::mem::replace(&mut agent.runtime, AgentRuntime::Building)
            })
            .expect("checked by caller");
        out.records.push(Record::JobAssigned {
            job: job_id,
            agent: agent_id.as_str().to_owned(),
            config,
        });
        if was != AgentRuntime::Building {
            out.records
                .push(agent_state(agent_id, AgentRuntime::Building));
        }
        ServerReply::Work {
            job: job_id,
            runtime_ms,
        }
    }

    fn completed(
        &mut self,
        now_ms: u64,
        number: AgentId,
        uuid: u64,
        job_id: u64,
        out: &mut ServerOut,
    ) -> ServerReply {
        let heard = self.db.agents.update_registered(number, uuid, |id, agent| {
            agent.last_heard_ms = now_ms;
            if agent.job == Some(job_id) {
                agent.job = None;
            }
            if agent.cancelling == Some(job_id) {
                agent.cancelling = None;
            }
            if agent.runtime != AgentRuntime::Idle && agent.job.is_none() {
                agent.runtime = AgentRuntime::Idle;
                out.records.push(agent_state(id, AgentRuntime::Idle));
            }
            id.clone()
        });
        let Some(id) = heard else {
            return ServerReply::NotRegistered;
        };
        let Some(job) = self.db.jobs.get(&job_id) else {
            return ServerReply::Ack;
        };
        if job.state != JobState::Assigned || job.agent.as_deref() != Some(id.as_str()) {
            return ServerReply::Ack;
        }
        // Completed jobs leave the database (see `reschedule`).
        let job = self.db.jobs.remove(&job_id).expect("looked up above");
        out.records.push(Record::JobCompleted {
            job: job_id,
            agent: id.as_str().to_owned(),
        });
        self.post_job_completion(now_ms, id.as_str(), job, out);
        ServerReply::Ack
    }

    pub(super) fn refresh_agents(&mut self, now_ms: u64, out: &mut ServerOut) {
        // Silent: not heard from for longer than the timeout (`now - last_heard > timeout`).
        let timeout = self.settings.agent_connection_timeout_ms;
        let Some(heard_before_ms) = now_ms.checked_sub(timeout) else {
            return;
        };
        self.db.agents.update_silent(heard_before_ms, |id, agent| {
            agent.runtime = AgentRuntime::LostContact;
            out.records.push(agent_state(id, AgentRuntime::LostContact));
        });
    }
}

/// The record of agent `id` entering `state`. Out of line and cold: inlined, the compiler
/// read the id's name at every ping to have it ready, and the name lies in the second cache
/// line of the agent's slot (`agent_table.rs`), which a ping otherwise never touches.
#[cold]
#[inline(never)]
pub(super) fn agent_state(id: &NameKey, state: AgentRuntime) -> Record {
    Record::AgentState {
        agent: id.as_str().to_owned(),
        state,
    }
}
