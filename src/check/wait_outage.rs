//! The outage side of the `job-wait-bound` budgets (`docs/invariants.md`, "Job-wait
//! budgets"), used by `WaitBudget`:
//!
//! - **unreachable**: the server down, or the agents cut from it (an `agents`|`gocd`
//!   partition), while the job has a pod of its own (made for it, not serving another job): no
//!   agent can register or fetch work, so
//!   the pod the allocator made for the job cannot serve it. Only that time, no recovery; a
//!   job with no pod of its own is not covered (it waits for a create-agent, which the load
//!   and API-cut budgets judge), so an allocator that makes no pod (a limit counting wrongly,
//!   rule 9's `limits` ablated) gains nothing from an outage. A job forfeits it once a create-agent
//!   of its own, answered with the API reachable, left it with no live pod of its own but pods
//!   whose auto-register key died with an older server process (created before the server
//!   stopped, never registered): such a pod can never serve it, and waiting for it is the
//!   allocator's choice (rule 7 of `safe`, `restart-adoption`, and `upstream`'s wait for ART
//!   look like an outage by the clock), and once the allocator gives a pod made for it to
//!   another job (the outage is then not what keeps it waiting);
//! - **API cut**: a create-agent of the job that overlapped a cut between the plugin and the
//!   Kubernetes API (a `gocd`|`kube-api` partition or an `api_outage`) and ended with no pod of
//!   the job's own covers one resend period from its end, as a full pending limit does; but
//!   none of it counts once a create-agent of the job, before or after, found the API reachable
//!   and room under the limit and left the job with no pod (the allocator let a chance go:
//!   one that took it would not have waited so long, cut or no cut).

use crate::trace::Record;
use std::collections::{BTreeMap, BTreeSet};

/// The node groups of a partition's trace target.
const AGENTS: &str = "agents";
const GOCD: &str = "gocd";
const KUBE_API: &str = "kube-api";
/// The trace kinds of the faults that cut.
const API_OUTAGE: &str = "api_outage";
const PARTITION: &str = "partition";

/// Follows the outages and what each job forfeited.
#[derive(Debug, Default)]
pub(crate) struct Outages {
    /// Since when the server has been down, if it is.
    down_since_ms: Option<u64>,
    /// `agents`|`gocd` partitions in force (fault index → since).
    agent_cuts: BTreeMap<u32, u64>,
    /// Ended unreachable intervals.
    unreachable: Vec<(u64, u64)>,
    /// Plugin→API cuts in force (fault index).
    api_cuts: BTreeSet<u32>,
    /// Create-agents being handled: request → whether an API cut overlapped it.
    requests: BTreeMap<u64, bool>,
    /// Pods whose auto-register key died with a server process.
    dead_keyed: BTreeSet<String>,
    /// Jobs that forfeited the unreachable budget.
    forfeited: BTreeSet<u64>,
    /// Jobs that forfeited the API-cut budget.
    let_go: BTreeSet<u64>,
    /// Live pods made for a job (its label) and not assigned another job: pod → job.
    own: BTreeMap<String, u64>,
    /// Waiting jobs with a live pod of their own: since when.
    holding_since_ms: BTreeMap<u64, u64>,
    /// Waiting jobs' ended spans with a live pod of their own.
    held: BTreeMap<u64, Vec<(u64, u64)>>,
}

/// How a create-agent ended, for the budgets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RequestEnd {
    /// It overlapped an API cut.
    Cut,
    /// The API was reachable throughout.
    Reachable,
}

impl Outages {
    /// Follow one record at `t_ms`; `unregistered` are the live pods with no agent registered.
    pub(crate) fn observe<'a>(
        &mut self,
        t_ms: u64,
        record: &Record,
        unregistered: impl Iterator<Item = &'a String>,
    ) {
        match record {
            Record::ServerStopped => {
                self.down_since_ms.get_or_insert(t_ms);
                self.requests.clear();
                self.dead_keyed.extend(unregistered.cloned());
            }
            Record::ServerStarted => {
                if let Some(since_ms) = self.down_since_ms.take() {
                    self.unreachable.push((since_ms, t_ms));
                }
            }
            Record::PodCreated { pod, job_label, .. } => {
                if self.down_since_ms.is_some() {
                    self.dead_keyed.insert(pod.clone());
                }
                if let Some(job) = job_label {
                    self.own.insert(pod.clone(), *job);
                    self.holding_since_ms.entry(*job).or_insert(t_ms);
                }
            }
            Record::PodDeleted { pod, .. } | Record::PodGone { pod } => {
                self.dead_keyed.remove(pod);
                self.disown(t_ms, pod);
            }
            Record::JobAssigned { job, agent, .. } if self.own.get(agent) != Some(job) => {
                self.given_away(t_ms, agent);
            }
            Record::CreateAgentStarted { request, .. } => {
                self.requests.insert(*request, !self.api_cuts.is_empty());
            }
            Record::CreateAgentExpired { request, .. } => {
                self.requests.remove(request);
            }
            Record::FaultStarted {
                index,
                fault,
                target,
            } => self.fault_started(t_ms, *index, fault, target),
            Record::FaultEnded { index, .. } => {
                self.api_cuts.remove(index);
                if let Some(since_ms) = self.agent_cuts.remove(index) {
                    self.unreachable.push((since_ms, t_ms));
                }
            }
            _ => {}
        }
    }

    fn fault_started(&mut self, t_ms: u64, index: u32, fault: &str, target: &str) {
        match cut_of(fault, target) {
            Some(Cut::Agents) => {
                self.agent_cuts.insert(index, t_ms);
            }
            Some(Cut::Api) => {
                self.api_cuts.insert(index);
                self.requests.values_mut().for_each(|cut| *cut = true);
            }
            None => {}
        }
    }

    /// A create-agent ended: how, if it was one being followed.
    pub(crate) fn request_done(&mut self, request: u64) -> Option<RequestEnd> {
        let cut = self.requests.remove(&request)?;
        Some(if cut {
            RequestEnd::Cut
        } else {
            RequestEnd::Reachable
        })
    }

    /// A create-agent of `job`, answered with the API reachable, left it `own_pods` (its live
    /// pods): if there are some and none can ever register, the job forfeits the unreachable
    /// budget.
    pub(crate) fn judge_answer<'a>(
        &mut self,
        job: u64,
        own_pods: impl Iterator<Item = &'a String>,
    ) {
        let mut any = false;
        for pod in own_pods {
            if !self.dead_keyed.contains(pod) {
                return;
            }
            any = true;
        }
        if any {
            // Replacing the pod was the allocator's move: the chance counts as let go for the
            // API-cut budget too (else `restart-adoption` ablated passed explore/elastic seed
            // 142 on the cut create-agents of a job whose orphan it kept).
            self.forfeited.insert(job);
            self.let_go.insert(job);
        }
    }

    /// Whether `pod`'s auto-register key died with an older server process (it was created
    /// before the server stopped, or while it was down, and never registered).
    pub(crate) fn is_dead_keyed(&self, pod: &str) -> bool {
        self.dead_keyed.contains(pod)
    }

    /// A create-agent of `job` found the API reachable and room, and left it no pod.
    pub(crate) fn let_go(&mut self, job: u64) {
        self.let_go.insert(job);
    }

    /// Whether the cut create-agents of `job` count (it let no chance go).
    pub(crate) fn cut_counts(&self, job: u64) -> bool {
        !self.let_go.contains(&job)
    }

    /// `pod`, made for a job, is given another job at `t_ms`: its own job, if it still waits,
    /// forfeits the unreachable budget. The allocator chose to serve another job with the pod,
    /// so the outage that held the pod back is not what keeps its own job waiting (`pr355`,
    /// explore/elastic seed 24: a pod slowed by an agents|gocd cut, then given an older job).
    fn given_away(&mut self, t_ms: u64, pod: &str) {
        if let Some(&job) = self.own.get(pod)
            && self.holding_since_ms.contains_key(&job)
        {
            self.forfeited.insert(job);
        }
        self.disown(t_ms, pod);
    }

    /// `pod` is gone or serves another job than its own from `t_ms`: if its job has no
    /// other pod of its own, it holds none from then.
    fn disown(&mut self, t_ms: u64, pod: &str) {
        let Some(job) = self.own.remove(pod) else {
            return;
        };
        if self.own.values().any(|of| *of == job) {
            return;
        }
        if let Some(since_ms) = self.holding_since_ms.remove(&job) {
            self.held.entry(job).or_default().push((since_ms, t_ms));
        }
    }

    /// The job no longer waits.
    pub(crate) fn forget(&mut self, job: u64) {
        self.forfeited.remove(&job);
        self.let_go.remove(&job);
        self.held.remove(&job);
        self.holding_since_ms.remove(&job);
    }

    /// The unreachable intervals that count for `job`, as far as `now_ms`: the parts of the
    /// outages in which it held a pod of its own.
    pub(crate) fn unreachable(&self, job: u64, now_ms: u64) -> Vec<(u64, u64)> {
        if self.forfeited.contains(&job) {
            return Vec::new();
        }
        let up_to_now = |since_ms: u64| (since_ms, now_ms.max(since_ms));
        let open = self
            .down_since_ms
            .into_iter()
            .chain(self.agent_cuts.values().copied());
        let mut outages = self.unreachable.clone();
        outages.extend(open.map(up_to_now));
        debug_assert!(
            outages.iter().all(|(from_ms, to_ms)| from_ms <= to_ms),
            "an outage ends after it starts"
        );
        let mut held = self.held.get(&job).cloned().unwrap_or_default();
        held.extend(self.holding_since_ms.get(&job).copied().map(up_to_now));
        let mut both = Vec::new();
        for (outage_from, outage_to) in &outages {
            for (held_from, held_to) in &held {
                let (from_ms, to_ms) = (*outage_from.max(held_from), *outage_to.min(held_to));
                if to_ms > from_ms {
                    both.push((from_ms, to_ms));
                }
            }
        }
        both
    }
}

/// The cuts the budgets know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// The agents from the server.
    Agents,
    /// The plugin from the Kubernetes API.
    Api,
}

/// Which cut a fault is, from its trace kind and target (node groups joined by `|`).
pub(crate) fn cut_of(fault: &str, target: &str) -> Option<Cut> {
    let mut sides: Vec<&str> = target.split('|').collect();
    sides.sort_unstable();
    match (fault, sides.as_slice()) {
        (API_OUTAGE, _) | (PARTITION, [GOCD, KUBE_API]) => Some(Cut::Api),
        (PARTITION, [AGENTS, GOCD]) => Some(Cut::Agents),
        _ => None,
    }
}
