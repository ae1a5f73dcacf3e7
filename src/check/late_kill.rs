//! The late-kill budget of `all-jobs-complete`: a job whose build was killed late in the run,
//! each of whose instances was rescheduled and assigned as soon as the server and Kubernetes
//! allow, may still be building when the settle phase ends. Its last instance is reported as
//! expected when a build of its profile's longest time, started at its assignment, would run
//! past the end. The scenario gives the longest build time of each profile; no record does.
//!
//! How soon is soon enough, from the kill to the reschedule:
//! - a node loss leaves the pod listed and the agent silent: the server reschedules the job
//!   only after LOST (the agent connection timeout) and its next hung-job check, which no
//!   plugin can shorten (Kubernetes itself evicts the pod only minutes later);
//! - a container death, a failed pod or a pod deleted by someone else leaves nothing that can
//!   build: the plugin deletes the agent at its next server-ping at the latest, and the next
//!   hung-job check reschedules the job. Waiting for LOST there is the allocator's doing
//!   (explore/elastic seeds 20298, 40880), so such a job is not excused.
//!
//! Every instance of the job must also have been assigned within `max_job_wait` of being
//! scheduled: the budget never covers time an allocator left a job waiting.

use crate::trace::{Actor, Record};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The agents' own ping period and the server's refresh of their states (5 s each): the
/// slack between a kill and the agent turning LostContact, past LOST.
const AGENT_SILENCE_SLACK_MS: u64 = 10_000;

/// What the late-kill budget judges by, from the scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LateKillBounds {
    /// The longest build time of each profile's jobs (scenario job sources and burst faults);
    /// a profile missing here (replayed jobs) gets no budget.
    pub(crate) build_max_ms: Arc<BTreeMap<String, u64>>,
    /// LOST: a silent agent turns LostContact after this.
    pub(crate) agent_connection_timeout_ms: u64,
    /// The server's hung-job check period.
    pub(crate) hung_job_check_ms: u64,
    /// PING plus the ping's call time: when a plugin deletes the agent of a dead pod at the
    /// latest.
    pub(crate) ping_ms: u64,
    /// `max_job_wait`: every instance is assigned within this of being scheduled.
    pub(crate) max_job_wait_ms: u64,
}

/// How a build was killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kill {
    /// The pod's node was lost: the agent goes silent; only LOST ends its job.
    NodeLost,
    /// The container died, the pod failed or someone else deleted it: nothing can build.
    PodDead,
}

/// One job instance, as far as the budget needs it.
#[derive(Debug)]
struct Instance {
    profile: String,
    scheduled_ms: u64,
    assigned: Option<(u64, String)>,
    /// It replaces an instance the server rescheduled.
    replaces: bool,
    /// Every earlier instance of the job was killed and replaced in time, and assigned in
    /// time; false once one was not.
    in_time: bool,
}

/// Follows instances, kills and reschedules for `all-jobs-complete`.
#[derive(Debug)]
pub(crate) struct LateKill {
    bounds: LateKillBounds,
    instances: BTreeMap<u64, Instance>,
    /// Instances rescheduled but not yet scheduled (the server records the reschedule
    /// first), with whether the job was in time so far.
    replacing: BTreeMap<u64, bool>,
    /// The first kill of each pod since its last assignment, with its time.
    killed: BTreeMap<String, (u64, Kill)>,
    node_of_pod: BTreeMap<String, String>,
}

impl LateKill {
    pub(crate) fn new(bounds: LateKillBounds) -> LateKill {
        LateKill {
            bounds,
            instances: BTreeMap::new(),
            replacing: BTreeMap::new(),
            killed: BTreeMap::new(),
            node_of_pod: BTreeMap::new(),
        }
    }

    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) {
        match record {
            Record::JobScheduled { job, profile, .. } => {
                let replacing = self.replacing.remove(job);
                let instance = Instance {
                    profile: profile.clone(),
                    scheduled_ms: t_ms,
                    assigned: None,
                    replaces: replacing.is_some(),
                    in_time: replacing.unwrap_or(true),
                };
                self.instances.insert(*job, instance);
            }
            Record::JobCompleted { job, .. } | Record::JobCancelled { job } => {
                self.instances.remove(job);
            }
            Record::JobAssigned { job, agent, .. } => self.assigned(t_ms, *job, agent),
            Record::JobRescheduled { job, new_job, .. } => self.rescheduled(t_ms, *job, *new_job),
            Record::PodScheduled { pod, node } => {
                self.node_of_pod.insert(pod.clone(), node.clone());
            }
            Record::ContainerDied { pod } | Record::PodPhase { pod, .. } => {
                self.kill(t_ms, pod, Kill::PodDead);
            }
            Record::PodDeleted { pod, by } => self.deleted(t_ms, pod, *by),
            Record::NodeLost { node } => {
                let lost: Vec<String> = (self.node_of_pod.iter())
                    .filter(|(_, on)| *on == node)
                    .map(|(pod, _)| pod.clone())
                    .collect();
                for pod in lost {
                    self.kill(t_ms, &pod, Kill::NodeLost);
                }
            }
            _ => {}
        }
    }

    fn assigned(&mut self, t_ms: u64, job: u64, agent: &str) {
        self.killed.remove(agent);
        let max_job_wait_ms = self.bounds.max_job_wait_ms;
        if let Some(instance) = self.instances.get_mut(&job) {
            instance.in_time &= t_ms.saturating_sub(instance.scheduled_ms) <= max_job_wait_ms;
            instance.assigned = Some((t_ms, agent.to_owned()));
        }
    }

    fn deleted(&mut self, t_ms: u64, pod: &str, by: Actor) {
        match by {
            Actor::External => self.kill(t_ms, pod, Kill::PodDead),
            // An eviction after a node loss: the kill was the loss. The allocator's deletes
            // are judged by `no-kill-while-building`; replicas delete no pods.
            Actor::NodeLoss | Actor::Allocator | Actor::Replica(_) => {}
        }
        self.node_of_pod.remove(pod);
    }

    fn kill(&mut self, t_ms: u64, pod: &str, kill: Kill) {
        self.killed.entry(pod.to_owned()).or_insert((t_ms, kill));
    }

    /// `job` was replaced by `new_job` at `t_ms`: in time if its build was killed and the
    /// server could not have replaced it sooner.
    fn rescheduled(&mut self, t_ms: u64, job: u64, new_job: u64) {
        let Some(old) = self.instances.remove(&job) else {
            return;
        };
        let kill = (old.assigned.as_ref()).and_then(|(_, pod)| self.killed.get(pod).copied());
        let in_time = old.in_time
            && kill.is_some_and(|(killed_ms, kill)| {
                t_ms.saturating_sub(killed_ms) <= self.replace_within_ms(kill)
            });
        self.replacing.insert(new_job, in_time);
    }

    /// The longest a kill of this kind may take to become a reschedule.
    fn replace_within_ms(&self, kill: Kill) -> u64 {
        let bounds = &self.bounds;
        let noticed_ms = match kill {
            Kill::NodeLost => bounds
                .agent_connection_timeout_ms
                .saturating_add(AGENT_SILENCE_SLACK_MS),
            Kill::PodDead => bounds.ping_ms,
        };
        noticed_ms.saturating_add(bounds.hung_job_check_ms)
    }

    /// Why `job`, assigned at `end_ms`, may still be building then, if the budget covers it:
    /// it replaces killed instances, all in time, and its profile's longest build, started at
    /// its assignment, ends after `end_ms`.
    pub(crate) fn why(&self, job: u64, end_ms: u64) -> Option<String> {
        let instance = self.instances.get(&job)?;
        let (assigned_ms, _) = instance.assigned.as_ref()?;
        let build_max_ms = *self.bounds.build_max_ms.get(&instance.profile)?;
        let past_end = assigned_ms.saturating_add(build_max_ms) > end_ms;
        (instance.replaces && instance.in_time && past_end).then(|| {
            format!(
                "its build was killed late (the late-kill budget): every instance was \
                 replaced and assigned in time, and this one, assigned at t={}, may build for \
                 up to {} (profile {}), past the end",
                super::jobs::seconds(*assigned_ms),
                super::jobs::seconds(build_max_ms),
                instance.profile
            )
        })
    }
}
