//! Pod monitors: `pending-limit`, `one-pod-per-job`, `no-orphan-pods`.

use super::deadlines::{ApiCut, Deadlines, ServerOutage};
use super::frozen::{ClusterSettings, FrozenSettings};
use super::jobs::seconds;
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::trace::{Actor, Record};
use std::collections::{BTreeMap, BTreeSet};

/// `pending-limit`: when the allocator creates a pod, the pods not Running before it number
/// fewer than `pending_pods_count`. "Not Running" is created and not yet `PodRunning`, or in
/// phase Failed/Succeeded.
///
/// A create-agent request carries the limit frozen in its job's plan when the job was
/// scheduled (`frozen.rs`): a `cluster_profile_edited` record binds jobs scheduled after it.
/// A pod created for a job is judged against the larger of the limit in force and the limit
/// its job's plan carries: lowering the limit makes no violation of pods
/// already pending or of a create the plugin decided under the old limit, only of creates
/// above the new one.
#[derive(Debug)]
pub(crate) struct PendingLimit {
    /// The settings in force and those each job's plan froze.
    frozen: FrozenSettings,
    not_running: NotRunning,
    /// Create-agent requests queued and not yet done or expired: request → (job, limit).
    requests: BTreeMap<u64, (u64, u32)>,
}

impl PendingLimit {
    /// A monitor for a cluster profile whose settings start as `settings`.
    pub(crate) fn new(settings: ClusterSettings) -> Self {
        PendingLimit {
            frozen: FrozenSettings::new(settings),
            not_running: NotRunning::default(),
            requests: BTreeMap::new(),
        }
    }

    /// The limit a create for `job` answers to: the larger of the limit in force and the one
    /// the job's plan froze, which every request for the job carries (a plugin may create a
    /// job's pod while answering another job's request, as `safe`'s turns do). A pod with no
    /// label, or of a job not seen scheduled, answers to the outstanding requests' limits.
    fn limit_for(&self, job: Option<u64>) -> u32 {
        let now = self.frozen.now().pending_pods_count;
        if let Some(planned) = job.and_then(|job| self.frozen.planned(job)) {
            return now.max(planned.pending_pods_count);
        }
        (self.requests.values())
            .filter(|(for_job, _)| job.is_none_or(|job| job == *for_job))
            .map(|(_, limit)| *limit)
            .fold(now, u32::max)
    }

    /// Judge a create against the pods not Running before it (`not_running` has not seen the
    /// create yet).
    fn created(&self, t_ms: u64, pod: &str, job: Option<u64>, by: Actor) -> Option<Violation> {
        let count = self.not_running.len();
        let limit = usize::try_from(self.limit_for(job)).unwrap_or(usize::MAX);
        if by != Actor::Allocator || count < limit {
            return None;
        }
        let message = format!(
            "the allocator created pod {pod} while {count} pods were not Running \
             (pending_pods_count {limit})"
        );
        let objects = vec![format!("pod:{pod}")];
        Some(Violation::new(
            self.id(),
            Kind::Always,
            t_ms,
            objects,
            message,
        ))
    }
}

impl Monitor for PendingLimit {
    fn id(&self) -> InvariantId {
        InvariantId::PendingLimit
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.frozen.observe(record);
        if let Record::PodCreated {
            pod, job_label, by, ..
        } = record
        {
            out.extend(self.created(t_ms, pod, *job_label, *by));
        }
        self.not_running.observe(record);
        match record {
            Record::CreateAgentQueued { job, request } => {
                let limit = self.frozen.of_job(*job).pending_pods_count;
                self.requests.insert(*request, (*job, limit));
            }
            Record::CreateAgentExpired { request, .. } | Record::PluginRequestDone { request } => {
                self.requests.remove(request);
            }
            // The process's queue and threads are gone; request ids start again.
            Record::ServerStopped => self.requests.clear(),
            _ => {}
        }
    }
}

/// The pods not Running, as `pending-limit` counts them: created and not yet `PodRunning`,
/// or in phase Failed/Succeeded; a deleted pod no longer counts. The job-wait load budget
/// counts the same set.
#[derive(Debug, Default)]
pub(crate) struct NotRunning {
    pods: BTreeSet<String>,
}

impl NotRunning {
    /// Follow one record.
    pub(crate) fn observe(&mut self, record: &Record) {
        match record {
            Record::PodCreated { pod, .. } => {
                let new = self.pods.insert(pod.clone());
                debug_assert!(new, "pod {pod} is created once while it exists");
            }
            Record::PodRunning { pod } | Record::PodDeleted { pod, .. } => {
                self.pods.remove(pod);
            }
            Record::PodPhase { pod, phase } if phase == "Failed" || phase == "Succeeded" => {
                self.pods.insert(pod.clone());
            }
            _ => {}
        }
    }

    /// How many pods are not Running.
    pub(crate) fn len(&self) -> usize {
        self.pods.len()
    }
}

/// `one-pod-per-job` (only without reuse): never two live (created, not deleted) pods with
/// the same `job_label`. Reported once per job.
#[derive(Debug, Default)]
pub(crate) struct OnePodPerJob {
    live_by_job: BTreeMap<u64, BTreeSet<String>>,
    job_of_pod: BTreeMap<String, u64>,
    reported: BTreeSet<u64>,
}

impl Monitor for OnePodPerJob {
    fn id(&self) -> InvariantId {
        InvariantId::OnePodPerJob
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        match record {
            Record::PodCreated {
                pod,
                job_label: Some(job),
                ..
            } => {
                debug_assert!(
                    !self.job_of_pod.contains_key(pod),
                    "pod {pod} is created once while it exists"
                );
                let live = self.live_by_job.entry(*job).or_default();
                if let Some(other) = live.first()
                    && self.reported.insert(*job)
                {
                    let message = format!(
                        "pod {pod} was created for job {job} while pod {other} for the same job \
                         still exists"
                    );
                    let objects = vec![
                        format!("job:{job}"),
                        format!("pod:{other}"),
                        format!("pod:{pod}"),
                    ];
                    out.push(Violation::new(
                        InvariantId::OnePodPerJob,
                        Kind::Always,
                        t_ms,
                        objects,
                        message,
                    ));
                }
                live.insert(pod.clone());
                self.job_of_pod.insert(pod.clone(), *job);
            }
            Record::PodDeleted { pod, .. } => {
                let Some(job) = self.job_of_pod.remove(pod) else {
                    return;
                };
                let live = self
                    .live_by_job
                    .get_mut(&job)
                    .expect("a labelled pod is indexed");
                let removed = live.remove(pod);
                debug_assert!(removed, "a labelled pod is live under its job");
                if live.is_empty() {
                    self.live_by_job.remove(&job);
                }
            }
            _ => {}
        }
    }
}

/// `no-orphan-pods`: every pod registers or is deleted within ART + PING of its creation
/// (reported at that deadline; a server outage delays the deadline by its length, a cut
/// between the plugin and the API by its length plus one PING), and at the end no pod exists
/// whose agent is not registered. Reported once per pod.
#[derive(Debug)]
pub(crate) struct NoOrphanPods {
    registration_deadline_ms: u64,
    /// Live pods, with whether their agent is currently registered.
    registered: BTreeMap<String, bool>,
    created_ms: BTreeMap<String, u64>,
    deadlines: Deadlines<String>,
    outage: ServerOutage,
    api_cut: ApiCut,
    reported: BTreeSet<String>,
}

impl NoOrphanPods {
    /// A monitor whose registration deadline is `registration_deadline_ms` (ART + PING) after a
    /// pod's creation; `server_ping_interval_ms` is what an API cut adds.
    pub(crate) fn new(registration_deadline_ms: u64, server_ping_interval_ms: u64) -> Self {
        NoOrphanPods {
            registration_deadline_ms,
            registered: BTreeMap::new(),
            created_ms: BTreeMap::new(),
            deadlines: Deadlines::default(),
            outage: ServerOutage::default(),
            api_cut: ApiCut::new(server_ping_interval_ms),
            reported: BTreeSet::new(),
        }
    }

    fn report(&mut self, at_ms: u64, pod: &str, message: String, out: &mut Vec<Violation>) {
        if self.reported.insert(pod.to_owned()) {
            let objects = vec![format!("pod:{pod}")];
            out.push(Violation::new(
                self.id(),
                Kind::Eventually,
                at_ms,
                objects,
                message,
            ));
        }
    }

    fn report_passed(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        while let Some((deadline_ms, pod)) = self.deadlines.pop_passed(t_ms) {
            debug_assert_eq!(
                self.registered.get(&pod),
                Some(&false),
                "a deadline waits on a live, unregistered pod"
            );
            let created_ms = self.created_ms.get(&pod).copied().unwrap_or(0);
            let message = format!(
                "pod {pod} created at t={} was neither registered nor deleted by t={} \
                 (ART + PING + call slack = {})",
                seconds(created_ms),
                seconds(deadline_ms),
                seconds(self.registration_deadline_ms)
            );
            self.report(deadline_ms, &pod, message, out);
        }
    }
}

impl Monitor for NoOrphanPods {
    fn id(&self) -> InvariantId {
        InvariantId::NoOrphanPods
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        if !self.outage.is_down() && !self.api_cut.is_cut() {
            self.report_passed(t_ms, out);
        }
        if let Some(down_ms) = self.outage.observe(t_ms, record) {
            self.deadlines.delay_all(down_ms, 0);
        }
        if let Some(delay_ms) = self.api_cut.observe(t_ms, record) {
            self.deadlines.delay_all(delay_ms, 0);
        }
        match record {
            Record::PodCreated { pod, .. } => {
                let previous = self.registered.insert(pod.clone(), false);
                debug_assert!(
                    previous.is_none(),
                    "pod {pod} is created once while it exists"
                );
                self.created_ms.insert(pod.clone(), t_ms);
                let deadline_ms = t_ms.saturating_add(self.registration_deadline_ms);
                self.deadlines.set(pod.clone(), deadline_ms);
            }
            Record::AgentRegistered { agent, .. } => {
                if let Some(registered) = self.registered.get_mut(agent) {
                    *registered = true;
                    self.deadlines.remove(agent);
                }
            }
            Record::AgentDeleted { agent } => {
                if let Some(registered) = self.registered.get_mut(agent) {
                    *registered = false;
                }
            }
            Record::PodDeleted { pod, .. } => {
                self.registered.remove(pod);
                self.created_ms.remove(pod);
                self.deadlines.remove(pod);
            }
            _ => {}
        }
        debug_assert_eq!(
            self.registered.len(),
            self.created_ms.len(),
            "every live pod has a creation time"
        );
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        if !self.outage.is_down() {
            self.report_passed(t_ms, out);
        }
        let orphans: Vec<String> = self
            .registered
            .iter()
            .filter(|(_, registered)| !**registered)
            .map(|(pod, _)| pod.clone())
            .collect();
        for pod in orphans {
            let message =
                format!("pod {pod} still exists at the end of the run with no registered agent");
            self.report(t_ms, &pod, message, out);
        }
    }
}
