//! What the GoCD server keeps in its database: jobs and registered agents. It survives a
//! server crash; everything else (plugin state, keys, scheduling memory) does not.

use super::agent_table::AgentTable;
use super::job_table::JobTable;
use crate::resources::StringMap;
use crate::trace::AgentRuntime;
use std::sync::Arc;

/// A live job instance's state (`JobState.java`, with Assigned..Completing folded into
/// Assigned). Completed and rescheduled instances leave the database: the trace keeps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum JobState {
    /// Waiting for an agent.
    Scheduled,
    /// Assigned to an agent (building, or completing).
    Assigned,
}

/// The profiles GoCD freezes into a job's plan when it schedules the job: gocd/gocd
/// `JobInstanceSqlMapDao.save` stores `JobAgentMetadata(elasticProfile, clusterProfile)` and
/// `JobInstanceSqlMapDao.loadPlan` puts it in the `JobPlan`, so create-agent (every resend),
/// should-assign-work and job-completion all send the plan's copy, and
/// `ScheduleService.rescheduleJob` copies the old plan. A later profile edit binds only jobs
/// scheduled after it. Jobs scheduled under the same profiles share one copy.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct JobProfiles {
    /// The elastic agent profile's properties at scheduling.
    pub elastic: StringMap,
    /// The cluster profile's properties at scheduling (reuse flag and limits included).
    pub cluster: StringMap,
}

/// One job instance.
#[derive(Clone, Debug)]
pub struct Job {
    /// The instance's id; a rescheduled job gets a new one.
    pub id: u64,
    /// The id every instance of the same job shares.
    pub logical: u64,
    /// The elastic profile the job asks for.
    pub profile: String,
    /// The profiles frozen into the job's plan when it was scheduled ([`JobProfiles`]).
    pub profiles: Arc<JobProfiles>,
    /// The harness's identity of the frozen elastic profile and the environment
    /// (`trace::config_identity`): what `JobScheduled` and `JobAssigned` carry.
    pub config: String,
    /// The environment the job runs in, if any; only an agent of that environment may take it.
    pub environment: Option<String>,
    /// How long the build runs once assigned, in simulated milliseconds.
    pub runtime_ms: u64,
    /// Scheduled or assigned.
    pub state: JobState,
    /// The elastic agent id of the agent it is assigned to, if any.
    pub agent: Option<String>,
    /// Simulated time the instance was scheduled, in milliseconds.
    pub scheduled_ms: u64,
}

/// What a job is scheduled with: its profile's name, the profiles frozen for it and its
/// environment.
#[derive(Clone, Debug)]
pub(crate) struct JobPlan {
    /// The elastic profile's name.
    pub profile: String,
    /// The profiles frozen at the first scheduling.
    pub profiles: Arc<JobProfiles>,
    /// The environment the job runs in, if any.
    pub environment: Option<String>,
}

impl Job {
    /// A new instance `id` of logical job `logical`, scheduled at `now_ms` with `plan`,
    /// waiting for an agent.
    pub(crate) fn scheduled(
        id: u64,
        logical: u64,
        plan: JobPlan,
        runtime_ms: u64,
        now_ms: u64,
    ) -> Job {
        debug_assert!(id > 0 && logical > 0, "job ids start at 1");
        let config =
            crate::trace::config_identity(&plan.profiles.elastic, plan.environment.as_deref());
        Job {
            id,
            logical,
            profile: plan.profile,
            profiles: plan.profiles,
            config,
            environment: plan.environment,
            runtime_ms,
            state: JobState::Scheduled,
            agent: None,
            scheduled_ms: now_ms,
        }
    }

    /// The job's plan, as a reschedule copies it (`ScheduleService.rescheduleJob`).
    pub(crate) fn plan(&self) -> JobPlan {
        JobPlan {
            profile: self.profile.clone(),
            profiles: Arc::clone(&self.profiles),
            environment: self.environment.clone(),
        }
    }
}

/// One registered agent (keyed by elastic agent id = pod name; the key's name is shared with
/// every listing of the agent).
#[derive(Clone, Debug)]
pub(crate) struct AgentRecord {
    /// The uuid of the go-agent process that registered.
    pub uuid: u64,
    /// Simulated time of the agent's last request, in milliseconds.
    pub last_heard_ms: u64,
    /// The job assigned to the agent, if any.
    pub job: Option<u64>,
    /// A cancelled job whose build the agent has not finished killing yet: the server
    /// reports the agent Building (build state Cancelled) until it pings without it.
    pub cancelling: Option<u64>,
    /// False once the plugin disabled the agent (it gets no more work).
    pub enabled: bool,
    /// The runtime state the server shows: idle, building, missing or lost contact.
    pub runtime: AgentRuntime,
    /// The environment the agent registered with, if any.
    pub environment: Option<String>,
}

/// The server's database.
#[derive(Debug, Default)]
pub struct Database {
    /// Live jobs: scheduled or assigned (`job_table.rs`).
    pub(super) jobs: JobTable,
    /// Registered agents by elastic agent id, with their listing (`agent_table.rs`).
    pub(super) agents: AgentTable,
    next_job_id: u64,
    next_logical: u64,
}

impl Database {
    /// A new job instance id.
    pub(crate) fn next_job_id(&mut self) -> u64 {
        self.next_job_id += 1;
        debug_assert!(
            self.jobs.values().all(|job| job.id < self.next_job_id),
            "job ids only grow"
        );
        self.next_job_id
    }

    /// A new logical job id.
    pub(crate) fn next_logical(&mut self) -> u64 {
        self.next_logical += 1;
        debug_assert!(
            self.jobs
                .values()
                .all(|job| job.logical < self.next_logical),
            "logical job ids only grow"
        );
        self.next_logical
    }
}
