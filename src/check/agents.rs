//! Agent monitors: `no-cross-config-reuse`, `one-job-per-agent`, `no-work-to-disabled`,
//! `no-kill-while-building`.

use super::assignments::SharedAssignments;
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::ids::Names;
use crate::trace::{Actor, Record};
use std::collections::{BTreeMap, BTreeSet};

/// `no-cross-config-reuse`: every `JobAssigned.config` equals the config its agent's pod was
/// created with. Reported once per agent.
#[derive(Debug, Default)]
pub(crate) struct NoCrossConfigReuse {
    /// Config hashes, so each pod keeps a small index.
    configs: Names,
    pod_config: BTreeMap<String, u32>,
    reported: BTreeSet<String>,
}

impl Monitor for NoCrossConfigReuse {
    fn id(&self) -> InvariantId {
        InvariantId::NoCrossConfigReuse
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        match record {
            Record::PodCreated { pod, config, .. } => {
                let config = self.configs.intern(config);
                self.pod_config.insert(pod.clone(), config);
            }
            Record::JobAssigned { job, agent, config } => {
                let Some(pod_config) = self.pod_config.get(agent) else {
                    return;
                };
                let pod_config = self.configs.name(*pod_config);
                if pod_config != config && self.reported.insert(agent.clone()) {
                    let message = format!(
                        "job {job} with config {config} was assigned to agent {agent}, whose pod \
                         was created for config {pod_config}"
                    );
                    let objects = vec![format!("agent:{agent}"), format!("job:{job}")];
                    out.push(Violation::new(
                        self.id(),
                        Kind::Always,
                        t_ms,
                        objects,
                        message,
                    ));
                }
            }
            _ => {}
        }
    }
}

/// `one-job-per-agent`: an agent never builds two jobs at once and a job instance is never on
/// two agents. Reported once per agent and once per job.
#[derive(Debug, Default)]
pub(crate) struct OneJobPerAgent {
    assignments: SharedAssignments,
    reported_agents: BTreeSet<String>,
    reported_jobs: BTreeSet<u64>,
}

impl OneJobPerAgent {
    /// The monitor, reading the assignments from `assignments`' store.
    pub(crate) fn sharing(assignments: &SharedAssignments) -> OneJobPerAgent {
        OneJobPerAgent {
            assignments: SharedAssignments::sharing(assignments),
            ..OneJobPerAgent::default()
        }
    }
}

impl Monitor for OneJobPerAgent {
    fn id(&self) -> InvariantId {
        InvariantId::OneJobPerAgent
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        if let Record::JobAssigned { job, agent, .. } = record {
            let building = self.assignments.before().job_of(agent);
            if let Some(building) = building
                && building != *job
                && self.reported_agents.insert(agent.clone())
            {
                let message =
                    format!("agent {agent} was assigned job {job} while building job {building}");
                let objects = vec![
                    format!("agent:{agent}"),
                    format!("job:{building}"),
                    format!("job:{job}"),
                ];
                out.push(Violation::new(
                    self.id(),
                    Kind::Always,
                    t_ms,
                    objects,
                    message,
                ));
            }
            let other = (self.assignments.before().agent_of(*job))
                .filter(|other| other != agent)
                .map(str::to_owned);
            if let Some(other) = other
                && self.reported_jobs.insert(*job)
            {
                let message =
                    format!("job {job} was assigned to agent {agent} while on agent {other}");
                let objects = vec![
                    format!("job:{job}"),
                    format!("agent:{other}"),
                    format!("agent:{agent}"),
                ];
                out.push(Violation::new(
                    self.id(),
                    Kind::Always,
                    t_ms,
                    objects,
                    message,
                ));
            }
        }
        self.assignments.after(record);
    }
}

/// `no-work-to-disabled`: an agent disabled by `AgentConfig{enabled: false}` (until enabled
/// again or deleted) is never assigned a job. Reported once per agent.
#[derive(Debug, Default)]
pub(crate) struct NoWorkToDisabled {
    disabled: BTreeSet<String>,
    reported: BTreeSet<String>,
}

impl Monitor for NoWorkToDisabled {
    fn id(&self) -> InvariantId {
        InvariantId::NoWorkToDisabled
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        match record {
            Record::AgentConfig {
                agent,
                enabled: false,
            } => {
                self.disabled.insert(agent.clone());
            }
            Record::AgentConfig {
                agent,
                enabled: true,
            }
            | Record::AgentDeleted { agent } => {
                self.disabled.remove(agent);
            }
            Record::JobAssigned { job, agent, .. }
                if self.disabled.contains(agent) && self.reported.insert(agent.clone()) =>
            {
                let message = format!("job {job} was assigned to disabled agent {agent}");
                let objects = vec![format!("agent:{agent}"), format!("job:{job}")];
                out.push(Violation::new(
                    self.id(),
                    Kind::Always,
                    t_ms,
                    objects,
                    message,
                ));
            }
            _ => {}
        }
    }
}

/// `no-kill-while-building`: the allocator never deletes a pod whose agent is building a job
/// (the completion is recorded before the delete, so a delete after it is fine). A build
/// whose agent container died, whose pod failed, or whose node was lost is already dead:
/// the server reschedules it, and deleting the pod (rules 7 and 8 of `safe`) kills nothing.
#[derive(Debug, Default)]
pub(crate) struct NoKillWhileBuilding {
    assignments: SharedAssignments,
    /// Pods whose container died (or whose phase turned Failed or Succeeded, or whose node
    /// was lost) since their last assignment.
    dead_builds: BTreeSet<String>,
    /// The node of every scheduled pod.
    node_of_pod: BTreeMap<String, String>,
}

impl NoKillWhileBuilding {
    /// The monitor, reading the assignments from `assignments`' store.
    pub(crate) fn sharing(assignments: &SharedAssignments) -> NoKillWhileBuilding {
        NoKillWhileBuilding {
            assignments: SharedAssignments::sharing(assignments),
            ..NoKillWhileBuilding::default()
        }
    }
}

impl Monitor for NoKillWhileBuilding {
    fn id(&self) -> InvariantId {
        InvariantId::NoKillWhileBuilding
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        if let Record::PodDeleted {
            pod,
            by: Actor::Allocator,
        } = record
            && let Some(job) = self.assignments.before().job_of(pod)
            && !self.dead_builds.contains(pod)
        {
            let message =
                format!("the allocator deleted pod {pod} while its agent was building job {job}");
            let objects = vec![format!("pod:{pod}"), format!("job:{job}")];
            out.push(Violation::new(
                self.id(),
                Kind::Always,
                t_ms,
                objects,
                message,
            ));
        }
        match record {
            Record::ContainerDied { pod } | Record::PodPhase { pod, .. } => {
                self.dead_builds.insert(pod.clone());
            }
            Record::PodScheduled { pod, node } => {
                self.node_of_pod.insert(pod.clone(), node.clone());
            }
            Record::NodeLost { node } => {
                let lost = self.node_of_pod.iter().filter(|(_, on)| *on == node);
                self.dead_builds
                    .extend(lost.map(|(pod, _)| pod.clone()).collect::<Vec<_>>());
            }
            Record::JobAssigned { agent, .. } => {
                self.dead_builds.remove(agent);
            }
            Record::PodDeleted { pod, .. } => {
                self.dead_builds.remove(pod);
                self.node_of_pod.remove(pod);
            }
            _ => {}
        }
        self.assignments.after(record);
    }
}
