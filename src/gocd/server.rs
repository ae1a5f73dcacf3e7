//! The GoCD server's elastic-agent behaviour (as GoCD's server does it; the
//! timings are `[server]` in `docs/scenario-format.md`).

use super::agent_table::metadata;
use super::database::{AgentRecord, Database, Job, JobState};
use super::protocol::{AgentRequest, ServerReply};
use super::registry::Registry;
use super::settings::ServerSettings;
use crate::allocator::{
    self, Allocator, CallId, ClusterProfile, CreateAgentRequest, JobCompletionRequest,
    JobIdentifier, Outbox, PluginRequest, RequestId, ServerPingRequest, ShouldAssignWorkRequest,
};
use crate::ids::NameKey;
use crate::resources::{KubeRequest, KubeResult, StringMap};
use crate::trace::{AgentRuntime, Record};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Delay of the first assignment tick and the first server-ping after a start.
const FIRST_TICK_MS: u64 = 10_000;
/// Agent liveness is refreshed every 5 s.
const AGENT_REFRESH_MS: u64 = 5_000;
/// Create-agent messages live `job_starvation_timeout` minus this in the queue.
const CREATE_AGENT_TTL_MARGIN_MS: u64 = 10_000;
/// Server-ping messages live the heartbeat interval minus this in the queue
/// (`ElasticAgentPluginService.heartbeat` posts with `elasticPluginHeartBeatInterval - 10000`).
const SERVER_PING_TTL_MARGIN_MS: u64 = 10_000;

/// A server timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerTimer {
    /// The build-assignment loop, every `assignment_interval`.
    Assignment,
    /// The plugin's server-ping, every `server_ping_interval`.
    Ping,
    /// The hung-job check, every `hung_job_check_interval`.
    HungCheck,
    /// Agent liveness refresh (an agent silent past `agent_connection_timeout` becomes
    /// LostContact), every 5 s.
    AgentRefresh,
}

/// What the server wants done after one step.
#[derive(Debug, Default)]
pub struct ServerOut {
    /// Trace records of the step.
    pub records: Vec<Record>,
    /// Calls the plugin made to the Kubernetes API, by call id, for the world to deliver.
    pub kube_calls: Vec<(CallId, KubeRequest)>,
    /// `(delay_ms, timer)` in the current process epoch.
    pub timers: Vec<(u64, ServerTimer)>,
    /// Replies to get-work requests the server held ([`ServerReply::Held`]), by hold id.
    pub released: Vec<(u64, ServerReply)>,
}

enum Pending {
    CreateAgent,
    JobCompletion,
    Ping,
    /// A get-work held while the plugin lists pods for should-assign-work; `hold` is the id
    /// the agent's request was held under.
    GetWork {
        agent: NameKey,
        uuid: u64,
        hold: u64,
    },
}

struct Queued {
    request: u64,
    job: u64,
    queued_ms: u64,
    body: CreateAgentRequest,
}

/// In-process state: lost when the server process dies.
struct Memory {
    allocator: Box<dyn Allocator>,
    /// Scheduled jobs as of the last assignment tick, oldest first.
    job_plans: Vec<u64>,
    /// Last create-agent per job (`jobCreationTimeMap`).
    last_try_ms: BTreeMap<u64, u64>,
    /// Ephemeral auto-register keys and their expiry.
    keys: BTreeMap<String, u64>,
    queue: VecDeque<Queued>,
    threads_busy: u32,
    pending: BTreeMap<u64, Pending>,
    ping_running: bool,
    /// Server-ping messages posted while the single ping thread was busy: when each was
    /// posted.
    ping_queue: VecDeque<u64>,
    /// Held get-work requests whose listing is in, to be started again.
    resume: Vec<(NameKey, u64, u64)>,
    next_request: u64,
    process_id: u64,
}

/// The GoCD server.
pub struct Server {
    /// The run's `[server]` settings and plugin.
    pub settings: ServerSettings,
    /// What survives a crash: jobs and registered agents.
    pub db: Database,
    memory: Option<Memory>,
    /// Elastic profile properties by profile name.
    profiles: BTreeMap<String, StringMap>,
    cluster_properties: StringMap,
    dispatching: bool,
}

impl Server {
    /// A server that is down (no process yet) with the elastic profiles `profiles`, by name.
    pub fn new(settings: ServerSettings, profiles: BTreeMap<String, StringMap>) -> Server {
        let cluster_properties = settings.cluster_profile.to_properties();
        Server {
            settings,
            db: Database::default(),
            memory: None,
            profiles,
            cluster_properties,
            dispatching: false,
        }
    }

    /// True while the server process runs (started and not crashed).
    pub fn is_up(&self) -> bool {
        self.memory.is_some()
    }

    /// Elastic profile properties of `profile`.
    pub fn profile(&self, profile: &str) -> &StringMap {
        self.profiles
            .get(profile)
            .expect("scenario validation rejects unknown profiles")
    }

    /// The process starts (first boot or restart): agents loaded from the database are
    /// Missing until they ping; scheduling memory, keys and the plugin start empty.
    pub fn start(&mut self, now_ms: u64, process_id: u64, out: &mut ServerOut) {
        assert!(self.memory.is_none(), "start of a running server");
        self.memory = Some(Memory {
            allocator: allocator::new_allocator_ablated(
                self.settings.policy,
                process_id,
                &self.settings.ablations,
            ),
            job_plans: Vec::new(),
            last_try_ms: BTreeMap::new(),
            keys: BTreeMap::new(),
            queue: VecDeque::new(),
            threads_busy: 0,
            pending: BTreeMap::new(),
            ping_running: false,
            ping_queue: VecDeque::new(),
            resume: Vec::new(),
            next_request: 0,
            process_id,
        });
        out.records.push(Record::ServerStarted);
        self.db.agents.update_all(|id, agent| {
            agent.last_heard_ms = now_ms;
            if agent.runtime != AgentRuntime::Missing {
                agent.runtime = AgentRuntime::Missing;
                out.records.push(Record::AgentState {
                    agent: id.as_str().to_owned(),
                    state: AgentRuntime::Missing,
                });
            }
        });
        out.timers.push((FIRST_TICK_MS, ServerTimer::Assignment));
        out.timers.push((FIRST_TICK_MS, ServerTimer::Ping));
        out.timers.push((
            self.settings.hung_job_check_interval_ms,
            ServerTimer::HungCheck,
        ));
        out.timers
            .push((AGENT_REFRESH_MS, ServerTimer::AgentRefresh));
    }

    /// The process dies: everything in memory is gone; the database stays.
    pub fn crash(&mut self, out: &mut ServerOut) {
        let memory = self.memory.take().expect("crash of a stopped server");
        // Held get-work requests lose their connection.
        for pending in memory.pending.into_values() {
            if let Pending::GetWork { hold, .. } = pending {
                out.released.push((hold, ServerReply::Failed));
            }
        }
        self.dispatching = false;
        out.records.push(Record::ServerStopped);
    }

    /// The process id of the running server (pod names embed it).
    pub fn process_id(&self) -> Option<u64> {
        self.memory.as_ref().map(|m| m.process_id)
    }

    /// Harness identity of a job's config: its elastic profile properties and environment
    /// (the cluster profile is fixed within a run).
    pub fn config_identity(&self, profile: &str, environment: Option<&str>) -> String {
        crate::trace::config_identity(self.profile(profile), environment)
    }

    /// Edit an elastic profile; returns its new identity.
    pub fn edit_profile(&mut self, profile: &str, set: &BTreeMap<String, String>) {
        let properties = self
            .profiles
            .get_mut(profile)
            .expect("validated profile name");
        for (key, value) in set {
            properties.insert(profile_key(key).to_owned(), value.clone());
        }
    }

    /// Replace the cluster profile: every later request carries the new properties.
    pub fn set_cluster_profile(&mut self, profile: ClusterProfile) {
        self.cluster_properties = profile.to_properties();
        self.settings.cluster_profile = profile;
    }

    /// A pipeline triggers a job (a new logical job, or a reschedule of `logical`).
    pub fn schedule_job(
        &mut self,
        now_ms: u64,
        logical: Option<u64>,
        profile: &str,
        environment: Option<String>,
        runtime_ms: u64,
        out: &mut ServerOut,
    ) -> u64 {
        let id = self.db.next_job_id();
        let logical = logical.unwrap_or_else(|| self.db.next_logical());
        let config = self.config_identity(profile, environment.as_deref());
        out.records.push(Record::JobScheduled {
            job: id,
            logical,
            profile: profile.to_owned(),
            environment: environment.clone(),
            config,
        });
        let job = Job {
            id,
            logical,
            profile: profile.to_owned(),
            environment,
            runtime_ms,
            state: JobState::Scheduled,
            agent: None,
            scheduled_ms: now_ms,
        };
        self.db.jobs.insert(id, job);
        id
    }

    /// A timer of the current process fired.
    pub fn handle_timer(&mut self, now_ms: u64, timer: ServerTimer, out: &mut ServerOut) {
        assert!(self.memory.is_some(), "timer of a stopped server");
        match timer {
            ServerTimer::Assignment => {
                self.assignment_tick(now_ms, out);
                out.timers
                    .push((self.settings.assignment_interval_ms, timer));
            }
            ServerTimer::Ping => {
                self.server_ping(now_ms, out);
                out.timers
                    .push((self.settings.server_ping_interval_ms, timer));
            }
            ServerTimer::HungCheck => {
                self.reschedule_hung_jobs(now_ms, out);
                out.timers
                    .push((self.settings.hung_job_check_interval_ms, timer));
            }
            ServerTimer::AgentRefresh => {
                self.refresh_agents(now_ms, out);
                out.timers.push((AGENT_REFRESH_MS, timer));
            }
        }
    }

    fn job_identifier(job: &Job) -> JobIdentifier {
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
    fn assignment_tick(&mut self, now_ms: u64, out: &mut ServerOut) {
        let mut plan: Vec<&Job> = self
            .db
            .jobs
            .values()
            .filter(|j| j.state == JobState::Scheduled)
            .collect();
        plan.sort_by_key(|j| (j.scheduled_ms, j.id));
        let new_plan: Vec<u64> = plan.iter().map(|j| j.id).collect();
        let memory = self.memory.as_mut().expect("checked by caller");
        let old: BTreeSet<u64> = memory.job_plans.iter().copied().collect();
        // An expired key is refused like an unknown one: forgetting it changes no answer, and
        // keys of requests that made no pod would otherwise pile up for the whole run.
        memory.keys.retain(|_, expiry_ms| *expiry_ms >= now_ms);
        let starvation = self.settings.job_starvation_timeout_ms;
        for job in plan {
            let starving = memory
                .last_try_ms
                .get(&job.id)
                .is_some_and(|t| now_ms - t >= starvation);
            if old.contains(&job.id) && !starving {
                continue;
            }
            memory.last_try_ms.insert(job.id, now_ms);
            memory.next_request += 1;
            let request = memory.next_request;
            let key = format!("key-{:08x}-{request}", memory.process_id & 0xffff_ffff);
            memory
                .keys
                .insert(key.clone(), now_ms + self.settings.auto_register_key_ttl_ms);
            let body = CreateAgentRequest {
                auto_register_key: key,
                elastic_agent_profile_properties: self.profiles[&job.profile].clone(),
                cluster_profile_properties: self.cluster_properties.clone(),
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

    /// Hand queued create-agent messages to free plugin threads; drop expired ones.
    fn dispatch_creates(&mut self, now_ms: u64, out: &mut ServerOut) {
        if self.dispatching {
            return;
        }
        self.dispatching = true;
        let ttl = self
            .settings
            .job_starvation_timeout_ms
            .saturating_sub(CREATE_AGENT_TTL_MARGIN_MS);
        while let Some(memory) = self.memory.as_mut() {
            if memory.threads_busy >= self.settings.create_agent_threads {
                break;
            }
            let Some(queued) = memory.queue.pop_front() else {
                break;
            };
            if now_ms - queued.queued_ms > ttl {
                out.records.push(Record::CreateAgentExpired {
                    job: queued.job,
                    request: queued.request,
                });
                continue;
            }
            memory.threads_busy += 1;
            memory.pending.insert(queued.request, Pending::CreateAgent);
            out.records.push(Record::CreateAgentStarted {
                job: queued.job,
                request: queued.request,
            });
            let request = PluginRequest::CreateAgent(queued.body);
            self.call_plugin(out, |allocator, api, outbox| {
                allocator.handle_request(now_ms, RequestId(queued.request), request, api, outbox);
            });
        }
        self.dispatching = false;
    }

    /// Run `f` against the allocator with the registry as its `ServerApi`, then apply the
    /// outbox: calls go out, decisions become records, finished requests free their thread.
    fn call_plugin<T>(
        &mut self,
        out: &mut ServerOut,
        f: impl FnOnce(&mut dyn Allocator, &mut Registry<'_>, &mut Outbox) -> T,
    ) -> T {
        let Server { db, memory, .. } = self;
        let memory = memory.as_mut().expect("plugin called on a stopped server");
        let mut outbox = Outbox::default();
        let mut registry = Registry {
            agents: &mut db.agents,
            records: &mut out.records,
        };
        let result = f(memory.allocator.as_mut(), &mut registry, &mut outbox);
        out.kube_calls.extend(outbox.calls);
        for decision in outbox.decisions {
            out.records.push(Record::Decision {
                job: decision.job_id,
                pod: decision.pod,
                code: decision.code.as_str().to_owned(),
                text: decision.text,
            });
        }
        for RequestId(id) in outbox.finished {
            match memory.pending.remove(&id) {
                Some(Pending::CreateAgent) => {
                    assert!(memory.threads_busy > 0, "thread accounting");
                    memory.threads_busy -= 1;
                }
                Some(Pending::Ping) => memory.ping_running = false,
                Some(Pending::JobCompletion) => {}
                Some(Pending::GetWork { agent, uuid, hold }) => {
                    memory.resume.push((agent, uuid, hold));
                }
                None => panic!("allocator finished request {id} twice or never got it"),
            }
            out.records.push(Record::PluginRequestDone { request: id });
        }
        result
    }

    /// The answer to one of the allocator's Kubernetes calls.
    pub fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        out: &mut ServerOut,
    ) {
        self.call_plugin(out, |allocator, api, outbox| {
            allocator.handle_kube(now_ms, call, result, api, outbox);
        });
        self.resume_held(now_ms, out);
        self.start_queued_ping(now_ms, out);
        self.dispatch_creates(now_ms, out);
    }

    /// Start again the get-work requests whose listing is in; their replies are released.
    fn resume_held(&mut self, now_ms: u64, out: &mut ServerOut) {
        let Some(memory) = self.memory.as_mut() else {
            return;
        };
        for (agent, uuid, hold) in std::mem::take(&mut memory.resume) {
            if let Some(reply) = self.get_work(now_ms, &agent, uuid, Some(hold), out) {
                out.released.push((hold, reply));
            }
        }
    }

    /// The heartbeat posts a server-ping message; the single ping thread takes it now or
    /// when it is free, unless it expired in the queue first.
    fn server_ping(&mut self, now_ms: u64, out: &mut ServerOut) {
        let memory = self.memory.as_mut().expect("checked by caller");
        memory.ping_queue.push_back(now_ms);
        self.start_queued_ping(now_ms, out);
    }

    /// Hand the oldest live server-ping message to the ping thread if it is free.
    fn start_queued_ping(&mut self, now_ms: u64, out: &mut ServerOut) {
        let ttl = self
            .settings
            .server_ping_interval_ms
            .saturating_sub(SERVER_PING_TTL_MARGIN_MS);
        let Some(memory) = self.memory.as_mut() else {
            return;
        };
        if memory.ping_running {
            return;
        }
        let live = loop {
            match memory.ping_queue.pop_front() {
                Some(posted_ms) if now_ms - posted_ms > ttl => {}
                other => break other,
            }
        };
        if live.is_none() {
            return;
        }
        memory.ping_running = true;
        memory.next_request += 1;
        let id = memory.next_request;
        memory.pending.insert(id, Pending::Ping);
        out.records.push(Record::ServerPing);
        let request = PluginRequest::ServerPing(ServerPingRequest {
            all_cluster_profile_properties: vec![self.cluster_properties.clone()],
        });
        self.call_plugin(out, |allocator, api, outbox| {
            allocator.handle_request(now_ms, RequestId(id), request, api, outbox);
        });
        self.dispatch_creates(now_ms, out);
    }

    /// Live for the hung-job check: registered and not LostContact.
    fn is_live(record: &AgentRecord) -> bool {
        record.runtime != AgentRuntime::LostContact
    }

    /// `ScheduleService.rescheduleHungJobs`: assigned jobs whose agent is gone or lost; the
    /// check does nothing while no agent is live.
    fn reschedule_hung_jobs(&mut self, now_ms: u64, out: &mut ServerOut) {
        if !self
            .db
            .agents
            .iter()
            .any(|(_, record)| Self::is_live(record))
        {
            return;
        }
        let hung: Vec<u64> = self
            .db
            .jobs
            .values()
            .filter(|j| j.state == JobState::Assigned)
            .filter(|j| {
                let agent = j.agent.as_deref().and_then(|a| self.db.agents.get(a));
                !agent.is_some_and(Self::is_live)
            })
            .map(|j| j.id)
            .collect();
        for job in hung {
            self.reschedule(now_ms, job, "hung: its agent is gone or lost contact", out);
        }
    }

    /// Reschedule `job` as a new instance of the same logical job.
    fn reschedule(&mut self, now_ms: u64, job: u64, reason: &str, out: &mut ServerOut) {
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
        let (logical, profile, environment, runtime_ms) =
            (old.logical, old.profile, old.environment, old.runtime_ms);
        if let Some(agent) = old.agent {
            self.db.agents.update(agent.as_str(), |record| {
                if record.job == Some(job) {
                    record.job = None;
                }
            });
        }
        let new_job = self.db.next_job_id();
        out.records.push(Record::JobRescheduled {
            job,
            new_job,
            reason: reason.to_owned(),
        });
        let config = self.config_identity(&profile, environment.as_deref());
        out.records.push(Record::JobScheduled {
            job: new_job,
            logical,
            profile: profile.clone(),
            environment: environment.clone(),
            config,
        });
        let new = Job {
            id: new_job,
            logical,
            profile,
            environment,
            runtime_ms,
            state: JobState::Scheduled,
            agent: None,
            scheduled_ms: now_ms,
        };
        self.db.jobs.insert(new_job, new);
    }

    fn refresh_agents(&mut self, now_ms: u64, out: &mut ServerOut) {
        let timeout = self.settings.agent_connection_timeout_ms;
        self.db.agents.update_all(|id, agent| {
            if agent.runtime != AgentRuntime::LostContact && now_ms - agent.last_heard_ms > timeout
            {
                agent.runtime = AgentRuntime::LostContact;
                out.records.push(Record::AgentState {
                    agent: id.as_str().to_owned(),
                    state: AgentRuntime::LostContact,
                });
            }
        });
    }

    /// An agent's HTTP request arrives. The caller only delivers it while the server is up.
    pub fn handle_agent(
        &mut self,
        now_ms: u64,
        request: AgentRequest,
        out: &mut ServerOut,
    ) -> ServerReply {
        assert!(self.memory.is_some(), "agent request to a stopped server");
        match request {
            AgentRequest::Register {
                elastic_agent_id,
                uuid,
                key,
                environment,
            } => self.register(
                now_ms,
                elastic_agent_id.to_string(),
                uuid,
                &key,
                environment,
                out,
            ),
            AgentRequest::Ping {
                elastic_agent_id,
                uuid,
                building,
            } => self.ping(now_ms, &NameKey::new(elastic_agent_id), uuid, building, out),
            AgentRequest::GetWork {
                elastic_agent_id,
                uuid,
            } => {
                let id = NameKey::new(elastic_agent_id);
                let reply = self.get_work(now_ms, &id, uuid, None, out);
                let held = self.memory.as_ref().expect("checked").next_request;
                reply.unwrap_or(ServerReply::Held(held))
            }
            AgentRequest::ReportCompleted {
                elastic_agent_id,
                uuid,
                job,
            } => self.completed(now_ms, &NameKey::new(elastic_agent_id), uuid, job, out),
        }
    }

    /// `AgentRegistrationController`: the key is validated and revoked (single use,
    /// expiring, in-memory), then a duplicate elastic agent id is refused.
    fn register(
        &mut self,
        now_ms: u64,
        agent: String,
        uuid: u64,
        key: &str,
        environment: Option<String>,
        out: &mut ServerOut,
    ) -> ServerReply {
        let memory = self.memory.as_mut().expect("checked by caller");
        let key_valid = memory
            .keys
            .remove(key)
            .is_some_and(|expiry| now_ms <= expiry);
        let refusal = if !key_valid {
            Some("auto-register key is unknown, used or expired")
        } else if self.db.agents.contains_key(agent.as_str()) {
            Some("an agent with this elastic agent id is already registered")
        } else {
            None
        };
        if let Some(reason) = refusal {
            out.records.push(Record::AgentRegistrationRefused {
                agent,
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
        self.db.agents.insert(NameKey::from(agent.as_str()), record);
        out.records.push(Record::AgentRegistered { agent, uuid });
        ServerReply::Registered
    }

    fn ping(
        &mut self,
        now_ms: u64,
        id: &NameKey,
        uuid: u64,
        building: Option<u64>,
        out: &mut ServerOut,
    ) -> ServerReply {
        let heard = self.db.agents.update_registered(id, uuid, |agent| {
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
                out.records.push(Record::AgentState {
                    agent: id.as_str().to_owned(),
                    state: runtime,
                });
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

    /// `BuildAssignmentService.assignWorkToAgent`. `None` when the get-work is held (the
    /// plugin lists pods before its first should-assign-work for the cluster profile); `hold`
    /// is the id it was first held under, if it was.
    fn get_work(
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
        if let Some(job) = agent.job
            && self
                .db
                .jobs
                .get(&job)
                .is_some_and(|j| j.state == JobState::Assigned)
        {
            self.reschedule(now_ms, job, "abandoned: its agent asked for new work", out);
        }
        let environment = self
            .db
            .agents
            .get(id)
            .expect("checked above")
            .environment
            .clone();
        let candidates: Vec<u64> = self.memory.as_ref().expect("checked").job_plans.clone();
        let mut ready = false;
        // One request, rewritten per job: the agent's metadata and the cluster profile stay
        // the same while the loop goes on (a plugin that disables or deletes this agent ends
        // it), and the profile's properties are copied only when the profile changes.
        let mut request: Option<(ShouldAssignWorkRequest, String)> = None;
        for job_id in candidates {
            let Some(job) = self.db.jobs.get(&job_id) else {
                continue;
            };
            if job.state != JobState::Scheduled || job.environment != environment {
                continue;
            }
            if !ready {
                ready = self.ready_to_assign(now_ms, id, uuid, hold, out);
                if !ready {
                    return None;
                }
            }
            let job = &self.db.jobs[&job_id];
            let (request, profile) = request.get_or_insert_with(|| {
                let request = ShouldAssignWorkRequest {
                    agent: metadata(id, self.db.agents.get(id).expect("checked above")),
                    environment: None,
                    elastic_agent_profile_properties: self.profiles[&job.profile].clone(),
                    cluster_profile_properties: self.cluster_properties.clone(),
                    job_identifier: Self::job_identifier(job),
                };
                (request, job.profile.clone())
            });
            if *profile != job.profile {
                let properties = &self.profiles[&job.profile];
                request
                    .elastic_agent_profile_properties
                    .clone_from(properties);
                profile.clone_from(&job.profile);
            }
            request.environment.clone_from(&job.environment);
            request.job_identifier = Self::job_identifier(job);
            let answer = self.call_plugin(out, |allocator, api, outbox| {
                allocator.should_assign_work(now_ms, request, api, outbox)
            });
            out.records.push(Record::ShouldAssignWork {
                agent: id.as_str().to_owned(),
                job: job_id,
                answer,
            });
            // The plugin may have disabled or deleted this agent while answering.
            let Some(agent) = self
                .db
                .agents
                .get(id)
                .filter(|a| a.uuid == uuid && a.enabled)
            else {
                return Some(ServerReply::NoWork);
            };
            if answer {
                let _ = agent;
                return Some(self.assign(job_id, id, out));
            }
        }
        self.dispatch_creates(now_ms, out);
        Some(ServerReply::NoWork)
    }

    /// Ask the plugin whether should-assign-work can be answered now; if not, the get-work
    /// is held under a new request id until the plugin finishes it.
    fn ready_to_assign(
        &mut self,
        now_ms: u64,
        agent: &NameKey,
        uuid: u64,
        hold: Option<u64>,
        out: &mut ServerOut,
    ) -> bool {
        let memory = self.memory.as_mut().expect("checked by caller");
        let request = memory.next_request + 1;
        let properties = self.cluster_properties.clone();
        let ready = self.call_plugin(out, |allocator, _api, outbox| {
            allocator.ready_to_assign(now_ms, RequestId(request), &properties, outbox)
        });
        if !ready {
            let memory = self.memory.as_mut().expect("checked by caller");
            memory.next_request = request;
            let hold = hold.unwrap_or(request);
            let waiting = Pending::GetWork {
                agent: agent.clone(),
                uuid,
                hold,
            };
            memory.pending.insert(request, waiting);
        }
        ready
    }

    fn assign(&mut self, job_id: u64, agent_id: &NameKey, out: &mut ServerOut) -> ServerReply {
        let job = self.db.jobs.get_mut(&job_id).expect("candidate job exists");
        job.state = JobState::Assigned;
        job.agent = Some(agent_id.as_str().to_owned());
        let (profile, environment, runtime_ms) =
            (job.profile.clone(), job.environment.clone(), job.runtime_ms);
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
        let config = self.config_identity(&profile, environment.as_deref());
        out.records.push(Record::JobAssigned {
            job: job_id,
            agent: agent_id.as_str().to_owned(),
            config,
        });
        if was != AgentRuntime::Building {
            out.records.push(Record::AgentState {
                agent: agent_id.as_str().to_owned(),
                state: AgentRuntime::Building,
            });
        }
        ServerReply::Work {
            job: job_id,
            runtime_ms,
        }
    }

    fn completed(
        &mut self,
        now_ms: u64,
        id: &NameKey,
        uuid: u64,
        job_id: u64,
        out: &mut ServerOut,
    ) -> ServerReply {
        let heard = self.db.agents.update_registered(id, uuid, |agent| {
            agent.last_heard_ms = now_ms;
            if agent.job == Some(job_id) {
                agent.job = None;
            }
            if agent.cancelling == Some(job_id) {
                agent.cancelling = None;
            }
            if agent.runtime != AgentRuntime::Idle && agent.job.is_none() {
                agent.runtime = AgentRuntime::Idle;
                out.records.push(Record::AgentState {
                    agent: id.as_str().to_owned(),
                    state: AgentRuntime::Idle,
                });
            }
        });
        if heard.is_none() {
            return ServerReply::NotRegistered;
        }
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
        self.send_job_completion(now_ms, id.as_str(), &job, out);
        ServerReply::Ack
    }

    /// A user cancels jobs (`job_cancel` fault). A scheduled job just leaves the queue. A
    /// building one completes (Cancelled): the server sends job-completion at once, while the
    /// agent keeps reporting Building (build state Cancelled) until it has killed the build,
    /// which it learns from its next ping reply.
    pub fn cancel_jobs(&mut self, now_ms: u64, jobs: &[u64], out: &mut ServerOut) {
        if self.memory.is_none() {
            // Down, or between a crash and its restart: there is no job to cancel.
            return;
        }
        for &job_id in jobs {
            let Some(job) = self.db.jobs.remove(&job_id) else {
                continue;
            };
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
            self.send_job_completion(now_ms, &agent_id, &job, out);
        }
    }

    /// `ElasticAgentPluginService.jobCompleted`: job-completion for `job`, which ran on `id`.
    fn send_job_completion(&mut self, now_ms: u64, id: &str, job: &Job, out: &mut ServerOut) {
        let memory = self.memory.as_mut().expect("checked");
        memory.last_try_ms.remove(&job.id);
        memory.next_request += 1;
        let request_id = memory.next_request;
        memory.pending.insert(request_id, Pending::JobCompletion);
        let request = PluginRequest::JobCompletion(JobCompletionRequest {
            elastic_agent_id: id.to_owned(),
            job_identifier: Self::job_identifier(job),
            elastic_agent_profile_properties: self.profiles[&job.profile].clone(),
            cluster_profile_properties: self.cluster_properties.clone(),
        });
        self.call_plugin(out, |allocator, api, outbox| {
            allocator.handle_request(now_ms, RequestId(request_id), request, api, outbox);
        });
        self.dispatch_creates(now_ms, out);
    }
}

/// Scenario profile keys (`image`, `cpu`, `memory`) as elastic profile property names.
pub fn profile_key(key: &str) -> &str {
    match key {
        "image" => "Image",
        "cpu" => "MaxCPU",
        "memory" => "MaxMemory",
        other => other,
    }
}

#[cfg(test)]
mod tests;
