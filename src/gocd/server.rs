//! The GoCD server's elastic-agent behaviour (as GoCD's server does it; the
//! timings are `[server]` in `docs/scenario-format.md`).
//!
//! The server is a [`Component`]: everything that happens to it is a [`ServerInput`] handed
//! to [`Component::handle`], and what it wants done comes back in a [`ServerOut`], timers as
//! absolute due times. This file holds the server's state, its one entry point, its life
//! cycle (start, crash) and its timers; its
//! roles live next to it: [`scheduler`] (job scheduling, the create-agent queue, hung jobs),
//! [`plugin_host`] (every call into the allocator, the create-agent and server-ping threads)
//! and [`agent_endpoints`] (register, ping, get-work, completion, agent liveness).

mod agent_endpoints;
mod job_status;
mod plugin_host;
mod register_keys;
mod scheduler;

use super::database::{Database, JobProfiles, JobState};
use super::protocol::{AgentRequest, ServerReply};
use super::settings::ServerSettings;
use crate::allocator::CallId;
use crate::allocator::{self, Allocator, ClusterProfile};
use crate::component::{ArmedTimers, Component, Random};
use crate::ids::NameKey;
use crate::resources::{KubeRequest, KubeResult, StringMap};
use crate::trace::{AgentRuntime, Record};
use agent_endpoints::agent_state;
use job_status::JobStatusQueue;
use plugin_host::Pending;
use register_keys::RegisterKeys;
use scheduler::Queued;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Delay of the first assignment tick and the first server-ping after a start.
const FIRST_TICK_MS: u64 = 10_000;
/// Agent liveness is refreshed every 5 s.
const AGENT_REFRESH_MS: u64 = 5_000;

/// A server timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
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
    /// The oldest job-completion message waiting for the job-status listener is due
    /// (`job_status.rs`); not periodic.
    JobCompletion,
}

/// What the server wants done after one step.
#[derive(Debug, Default)]
pub struct ServerOut {
    /// Trace records of the step.
    pub records: Vec<Record>,
    /// Calls the plugin made to the Kubernetes API, by call id, for the world to deliver.
    pub kube_calls: Vec<(CallId, KubeRequest)>,
    /// `(at_ms, timer)`: timers of the current process epoch, due at the absolute time
    /// `at_ms` on the simulated clock.
    pub timers: Vec<(u64, ServerTimer)>,
    /// Replies to get-work requests the server held ([`ServerReply::Held`]), by hold id.
    pub released: Vec<(u64, ServerReply)>,
    /// The reply to the agent request of this step ([`ServerInput::Agent`]); `None` for every
    /// other input.
    pub reply: Option<ServerReply>,
}

/// Everything that happens to the server, handed to [`Component::handle`].
#[derive(Debug)]
pub enum ServerInput {
    /// The process starts (first boot or restart) as process `process_id` (pod names embed
    /// it): agents loaded from the database are Missing until they ping; scheduling memory,
    /// keys and the plugin start empty.
    Start {
        /// The new process's id, drawn by the world.
        process_id: u64,
    },
    /// The process dies: everything in memory is gone; the database stays.
    Crash,
    /// A timer of the current process fired.
    Timer(ServerTimer),
    /// The answer to one of the allocator's Kubernetes calls.
    Kube {
        /// The call, as the plugin numbered it.
        call: CallId,
        /// What the API server answered.
        result: KubeResult,
    },
    /// An agent's HTTP request arrives (only while the server is up); the reply comes back in
    /// [`ServerOut::reply`].
    Agent(AgentRequest),
    /// A pipeline triggers a job (a new logical job, or a reschedule of `logical`).
    ScheduleJob {
        /// The logical job this one reschedules, if any.
        logical: Option<u64>,
        /// The job's elastic profile.
        profile: String,
        /// The job's environment, if any.
        environment: Option<String>,
        /// How long the build runs once assigned.
        runtime_ms: u64,
    },
    /// A user cancels jobs (`job_cancel` fault); ignored while the server is down.
    CancelJobs(Vec<u64>),
    /// An elastic profile is edited (`profile_edit` fault): scenario keys and their values.
    EditProfile {
        /// The profile's name.
        profile: String,
        /// The keys set, as the scenario names them (`image`, `cpu`, `memory`, …).
        set: BTreeMap<String, String>,
    },
    /// The cluster profile is replaced (`cluster_profile_edit` fault): every later request
    /// carries the new properties.
    SetClusterProfile(ClusterProfile),
}

/// In-process state: lost when the server process dies.
struct Memory {
    allocator: Box<dyn Allocator>,
    /// Scheduled jobs as of the last assignment tick, oldest first.
    job_plans: Vec<u64>,
    /// Last create-agent per job (`jobCreationTimeMap`).
    last_try_ms: BTreeMap<u64, u64>,
    /// Ephemeral auto-register keys and their expiry.
    keys: RegisterKeys,
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
    /// Job-completion messages on their way to the plugin (`job_status.rs`).
    job_status: JobStatusQueue,
}

/// The GoCD server.
pub struct Server {
    /// The run's `[server]` settings and plugin.
    settings: ServerSettings,
    /// What survives a crash: jobs and registered agents.
    db: Database,
    memory: Option<Memory>,
    /// Elastic profile properties by profile name, as they are now.
    profiles: BTreeMap<String, StringMap>,
    /// The cluster profile's properties as they are now.
    cluster_properties: StringMap,
    /// The profiles a job scheduled now freezes into its plan, by elastic profile name:
    /// jobs scheduled between two edits share one copy. An edit empties it.
    frozen: BTreeMap<String, Arc<JobProfiles>>,
    /// Re-entrancy guard of `dispatch_creates` (`plugin_host.rs`): true while it hands
    /// queued create-agent messages to free plugin threads. It guards the create-agent queue
    /// and the thread count against a second dispatch loop starting inside the first one,
    /// i.e. from inside an allocator call the loop made (the real server's dispatch runs on
    /// its own thread, never nested in a plugin call): the inner loop would pop messages the
    /// outer one has not reached yet and start them out of queue order. When it is set,
    /// `dispatch_creates` returns at once without touching the queue; the outer loop goes on
    /// and takes whatever is queued. Today no path re-enters (the allocator reaches the
    /// server only through `Registry`, which never dispatches), so the guard never trips; a
    /// crash clears it with the rest of the process.
    dispatching: bool,
    /// The timers asked for that have not fired yet, for `next_deadline`. Each timer kind is
    /// armed at most once at a time (every firing re-arms its own kind), so this holds at
    /// most five entries; a crash clears it (the world drops the timers of a dead process,
    /// so they never fire).
    armed: ArmedTimers<ServerTimer>,
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
            frozen: BTreeMap::new(),
            dispatching: false,
            armed: ArmedTimers::default(),
        }
    }

    /// True while the server process runs (started and not crashed).
    pub(crate) fn is_up(&self) -> bool {
        self.memory.is_some()
    }

    /// Elastic profile properties of `profile`.
    pub(crate) fn profile(&self, profile: &str) -> &StringMap {
        self.profiles
            .get(profile)
            .expect("scenario validation rejects unknown profiles")
    }

    /// [`ServerInput::Start`].
    fn start(&mut self, now_ms: u64, process_id: u64, out: &mut ServerOut) {
        assert!(self.memory.is_none(), "start of a running server");
        self.memory = Some(Memory {
            allocator: allocator::new_allocator_ablated(
                self.settings.policy,
                process_id,
                &self.settings.ablations,
            ),
            job_plans: Vec::new(),
            last_try_ms: BTreeMap::new(),
            keys: RegisterKeys::default(),
            queue: VecDeque::new(),
            threads_busy: 0,
            pending: BTreeMap::new(),
            ping_running: false,
            ping_queue: VecDeque::new(),
            resume: Vec::new(),
            next_request: 0,
            process_id,
            job_status: JobStatusQueue::default(),
        });
        out.records.push(Record::ServerStarted);
        self.db.agents.update_all(|id, agent| {
            agent.last_heard_ms = now_ms;
            if agent.runtime != AgentRuntime::Missing {
                agent.runtime = AgentRuntime::Missing;
                out.records.push(agent_state(id, AgentRuntime::Missing));
            }
        });
        out.timers
            .push((now_ms + FIRST_TICK_MS, ServerTimer::Assignment));
        out.timers.push((now_ms + FIRST_TICK_MS, ServerTimer::Ping));
        out.timers.push((
            now_ms + self.settings.hung_job_check_interval_ms,
            ServerTimer::HungCheck,
        ));
        out.timers
            .push((now_ms + AGENT_REFRESH_MS, ServerTimer::AgentRefresh));
    }

    /// [`ServerInput::Crash`].
    fn crash(&mut self, out: &mut ServerOut) {
        let memory = self.memory.take().expect("crash of a stopped server");
        // Held get-work requests lose their connection.
        for pending in memory.pending.into_values() {
            if let Pending::GetWork { hold, .. } = pending {
                out.released.push((hold, ServerReply::Failed));
            }
        }
        self.dispatching = false;
        self.armed.clear();
        out.records.push(Record::ServerStopped);
    }

    /// The cluster profile later requests carry (a `cluster_profile_edit` starts from it).
    pub(crate) fn cluster_profile(&self) -> &ClusterProfile {
        &self.settings.cluster_profile
    }

    /// The runtime state the server shows for agent `elastic_agent_id`, if it is registered
    /// (a fault picks idle or building agents' pods by it).
    pub(crate) fn agent_runtime(&self, elastic_agent_id: &str) -> Option<AgentRuntime> {
        self.db
            .agents
            .get(elastic_agent_id)
            .map(|agent| agent.runtime)
    }

    /// The ids of the live jobs in `state`, in id order (a fault picks jobs to cancel by it).
    pub(crate) fn jobs_in(&self, state: JobState) -> Vec<u64> {
        let jobs: Vec<u64> = self
            .db
            .jobs
            .values()
            .filter(|job| job.state == state)
            .map(|job| job.id)
            .collect();
        debug_assert!(jobs.is_sorted(), "the job table lists jobs in id order");
        jobs
    }

    /// Harness identity of a config: the elastic profile's properties as they are now and the
    /// environment.
    pub(crate) fn config_identity(&self, profile: &str, environment: Option<&str>) -> String {
        crate::trace::config_identity(self.profile(profile), environment)
    }

    /// The profiles a job of `profile` scheduled now freezes into its plan.
    fn profiles_now(&mut self, profile: &str) -> Arc<JobProfiles> {
        if let Some(frozen) = self.frozen.get(profile) {
            return Arc::clone(frozen);
        }
        let frozen = Arc::new(JobProfiles {
            elastic: self.profile(profile).clone(),
            cluster: self.cluster_properties.clone(),
        });
        self.frozen.insert(profile.to_owned(), Arc::clone(&frozen));
        frozen
    }

    /// [`ServerInput::EditProfile`].
    fn edit_profile(&mut self, profile: &str, set: &BTreeMap<String, String>) {
        let properties = self
            .profiles
            .get_mut(profile)
            .expect("validated profile name");
        for (key, value) in set {
            properties.insert(profile_key(key).to_owned(), value.clone());
        }
        // Jobs scheduled from now on freeze the new properties; those already scheduled keep
        // theirs.
        self.frozen.remove(profile);
    }

    /// [`ServerInput::SetClusterProfile`].
    fn set_cluster_profile(&mut self, profile: ClusterProfile) {
        self.cluster_properties = profile.to_properties();
        self.settings.cluster_profile = profile;
        self.frozen.clear();
    }

    /// [`ServerInput::Timer`]: the timer no longer counts towards `next_deadline`; its work
    /// runs and it is armed again one period later.
    fn handle_timer(&mut self, now_ms: u64, timer: ServerTimer, out: &mut ServerOut) {
        assert!(self.memory.is_some(), "timer of a stopped server");
        let was_armed = self
            .armed
            .fired(|at_ms, armed| at_ms == now_ms && armed == timer);
        debug_assert!(
            was_armed.is_some(),
            "{timer:?} fired at {now_ms} but was not due then"
        );
        let period_ms = match timer {
            ServerTimer::Assignment => {
                self.assignment_tick(now_ms, out);
                self.settings.assignment_interval_ms
            }
            ServerTimer::Ping => {
                self.server_ping(now_ms, out);
                self.settings.server_ping_interval_ms
            }
            ServerTimer::HungCheck => {
                self.reschedule_hung_jobs(now_ms, out);
                self.settings.hung_job_check_interval_ms
            }
            ServerTimer::AgentRefresh => {
                self.refresh_agents(now_ms, out);
                AGENT_REFRESH_MS
            }
            ServerTimer::JobCompletion => {
                self.job_completion_timer(now_ms, out);
                return;
            }
        };
        out.timers.push((now_ms + period_ms, timer));
    }
}

impl Component for Server {
    type Input = ServerInput;
    type Output = ServerOut;

    /// The single entry point. The server draws nothing: `random` is unused (the world draws
    /// a new process's id and hands it in with [`ServerInput::Start`]).
    fn handle(
        &mut self,
        now_ms: u64,
        input: ServerInput,
        _random: &mut dyn Random,
        out: &mut ServerOut,
    ) {
        let asked_before = out.timers.len();
        match input {
            ServerInput::Start { process_id } => self.start(now_ms, process_id, out),
            ServerInput::Crash => self.crash(out),
            ServerInput::Timer(timer) => self.handle_timer(now_ms, timer, out),
            ServerInput::Kube { call, result } => self.handle_kube(now_ms, call, result, out),
            ServerInput::Agent(request) => {
                out.reply = Some(self.handle_agent(now_ms, request, out));
            }
            ServerInput::ScheduleJob {
                logical,
                profile,
                environment,
                runtime_ms,
            } => self.schedule_job(now_ms, logical, profile, environment, runtime_ms, out),
            ServerInput::CancelJobs(jobs) => self.cancel_jobs(now_ms, &jobs, out),
            ServerInput::EditProfile { profile, set } => self.edit_profile(&profile, &set),
            ServerInput::SetClusterProfile(profile) => self.set_cluster_profile(profile),
        }
        for &(at_ms, timer) in &out.timers[asked_before..] {
            debug_assert!(at_ms >= now_ms, "{timer:?} asked for in the past");
            self.armed.arm(at_ms, timer);
        }
    }

    fn next_deadline(&self) -> Option<u64> {
        self.armed.next_deadline()
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
