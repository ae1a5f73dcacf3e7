//! The GoCD server's elastic-agent behaviour (as GoCD's server does it; the
//! timings are `[server]` in `docs/scenario-format.md`).
//!
//! This file holds the server's state, its life cycle (start, crash) and its timers; its
//! roles live next to it: [`scheduler`] (job scheduling, the create-agent queue, hung jobs),
//! [`plugin_host`] (every call into the allocator, the create-agent and server-ping threads)
//! and [`agent_endpoints`] (register, ping, get-work, completion, agent liveness).

mod agent_endpoints;
mod plugin_host;
mod scheduler;

use super::database::Database;
use super::protocol::ServerReply;
use super::settings::ServerSettings;
use crate::allocator::CallId;
use crate::allocator::{self, Allocator, ClusterProfile};
use crate::ids::NameKey;
use crate::resources::{KubeRequest, StringMap};
use crate::trace::{AgentRuntime, Record};
use plugin_host::Pending;
use scheduler::Queued;
use std::collections::{BTreeMap, VecDeque};

/// Delay of the first assignment tick and the first server-ping after a start.
const FIRST_TICK_MS: u64 = 10_000;
/// Agent liveness is refreshed every 5 s.
const AGENT_REFRESH_MS: u64 = 5_000;

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
