//! `no-assign-while-cancelling`: a pod whose cancelled build is still being killed is not
//! handed another job.
//!
//! When a user cancels a job, GoCD sends job-completion at once, while the agent keeps
//! reporting Building (build state Cancelled) until it has killed the build. A pod is handed
//! a job when the server assigns it one, or when the allocator counts it as the job's agent:
//! it answers should-assign-work yes (`assign-yes`), reserves the pod for the job (`claim`), or
//! creates no pod for the job because this one is reusable (`skip-reuse`).

use super::assignments::SharedAssignments;
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::trace::{AgentRuntime, Record};
use std::collections::{BTreeMap, BTreeSet};

/// Decision codes by which an allocator hands a pod to a job.
const HANDING_CODES: [&str; 3] = ["assign-yes", "claim", "skip-reuse"];

/// `no-assign-while-cancelling` (safety, always). Reported once per pod.
#[derive(Debug, Default)]
pub(crate) struct NoAssignWhileCancelling {
    assignments: SharedAssignments,
    /// Pods killing a cancelled build, with the cancelled job, until the server sees the
    /// agent Idle again (or the agent, its container or its pod is gone).
    cancelling: BTreeMap<String, u64>,
    reported: BTreeSet<String>,
}

impl NoAssignWhileCancelling {
    fn check(&mut self, t_ms: u64, pod: &str, job: u64, how: &str, out: &mut Vec<Violation>) {
        let Some(&cancelled) = self.cancelling.get(pod) else {
            return;
        };
        if cancelled == job || !self.reported.insert(pod.to_owned()) {
            return;
        }
        debug_assert_ne!(
            cancelled, job,
            "a pod's own cancelled job is not a second job"
        );
        let message = format!(
            "pod {pod} was handed job {job} ({how}) while its cancelled job {cancelled} was \
             still being killed"
        );
        let objects = vec![
            format!("pod:{pod}"),
            format!("job:{cancelled}"),
            format!("job:{job}"),
        ];
        out.push(Violation::new(
            InvariantId::NoAssignWhileCancelling,
            Kind::Always,
            t_ms,
            objects,
            message,
        ));
    }
}

impl NoAssignWhileCancelling {
    /// The monitor, reading the assignments from `assignments`' store.
    pub(crate) fn sharing(assignments: &SharedAssignments) -> NoAssignWhileCancelling {
        NoAssignWhileCancelling {
            assignments: SharedAssignments::sharing(assignments),
            ..NoAssignWhileCancelling::default()
        }
    }
}

impl Monitor for NoAssignWhileCancelling {
    fn id(&self) -> InvariantId {
        InvariantId::NoAssignWhileCancelling
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        match record {
            Record::JobCancelled { job } => {
                let agent = self.assignments.before().agent_of(*job).map(str::to_owned);
                if let Some(agent) = agent {
                    self.cancelling.insert(agent, *job);
                }
            }
            Record::AgentState {
                agent,
                state: AgentRuntime::Idle,
            }
            | Record::AgentDeleted { agent }
            | Record::ContainerDied { pod: agent }
            | Record::PodDeleted { pod: agent, .. } => {
                self.cancelling.remove(agent);
            }
            Record::JobAssigned { job, agent, .. } => {
                self.check(t_ms, agent, *job, "assigned by the server", out);
            }
            Record::Decision {
                job: Some(job),
                pod: Some(pod),
                code,
                ..
            } if HANDING_CODES.contains(&code.as_str()) => {
                let how = format!("allocator decision {code}");
                self.check(t_ms, pod, *job, &how, out);
            }
            _ => {}
        }
        self.assignments.after(record);
    }
}
