//! The `job-wait-bound` fault budgets (`docs/invariants.md`, "Job-wait budgets"): time in a
//! job's wait that no allocator answering the server's create-agent requests could use. A
//! job's deadline moves out by the part of its wait covered by
//!
//! - the **stranded-pod budget**: from the loss of the node its own unregistered pod was on to
//!   the pod's removal (the pod looks like a slow starter until the node controller evicts
//!   it), plus the resend period to the create-agent that can replace it;
//! - the **load budget**: one resend period for each of the job's create-agents that ended
//!   with the pending limit its plan froze full and the job without a pod of its own (the job
//!   waits for its next resend; the user's configured throughput, not a decision);
//! - the **unreachable** and **API-cut** budgets (`wait_outage.rs`): the server down or the
//!   agents cut from it while the job has a pod of its own (that pod cannot serve it), unless
//!   the job forfeited it by being left with pods that can never register; one resend for each
//!   create-agent of the job that a cut between the plugin and the API overlapped.
//!
//! The covered time is the union of these intervals, so no second of the wait counts twice.

use super::frozen::{ClusterSettings, FrozenSettings};
use super::pods::NotRunning;
use super::wait_outage::{Outages, RequestEnd};
use crate::trace::Record;
use std::collections::{BTreeMap, BTreeSet};

/// The scenario's numbers the budgets are made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WaitBounds {
    /// `[server] job_starvation_timeout`: the server resends a waiting job's create-agent
    /// this long after the last one.
    pub resend_ms: u64,
}

/// One budget's name and what it is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Budget {
    StrandedPod,
    Load,
    Unreachable,
    ApiCut,
}

impl Budget {
    const ALL: [Budget; 4] = [
        Budget::StrandedPod,
        Budget::Load,
        Budget::Unreachable,
        Budget::ApiCut,
    ];
}

impl Budget {
    fn reason(self) -> &'static str {
        match self {
            Budget::StrandedPod => "its pod on a lost node until evicted, + one resend",
            Budget::Load => "create-agents that found the pending limit full, one resend each",
            Budget::Unreachable => "the server down or the agents cut from it",
            Budget::ApiCut => {
                "create-agents a cut from the Kubernetes API overlapped, one resend each"
            }
        }
    }

    fn name(self) -> &'static str {
        match self {
            Budget::StrandedPod => "stranded-pod",
            Budget::Load => "load",
            Budget::Unreachable => "unreachable",
            Budget::ApiCut => "api-cut",
        }
    }
}

/// Time intervals `[from, to)` tagged with their budget.
type Intervals = Vec<(u64, u64, Budget)>;

/// Follows what the budgets are made of, for every job still waiting.
#[derive(Debug)]
pub(crate) struct WaitBudget {
    bounds: WaitBounds,
    frozen: FrozenSettings,
    not_running: NotRunning,
    /// Live pods by name: the job they were created for.
    job_of_pod: BTreeMap<String, u64>,
    node_of_pod: BTreeMap<String, String>,
    registered: BTreeSet<String>,
    /// Own pods on a lost node before their agent registered: since when.
    stranded_since_ms: BTreeMap<String, u64>,
    /// Create-agent requests being handled: request → its job and the most pods not Running
    /// at any moment since it started (the count the allocator's list may have seen).
    requests: BTreeMap<u64, (u64, usize)>,
    /// Each waiting job's own intervals (stranded pod, load, API cut).
    of_job: BTreeMap<u64, Intervals>,
    /// Jobs the allocator claimed an idle pod for since their last create-agent ended.
    claimed: BTreeSet<u64>,
    outages: Outages,
}

/// The decision code an allocator records when it claims an idle pod for a job
/// (`allocator::DecisionCode::Claim`; `check` does not depend on `allocator`).
const CLAIM: &str = "claim";

impl WaitBudget {
    pub(crate) fn new(bounds: WaitBounds, settings: ClusterSettings) -> Self {
        WaitBudget {
            bounds,
            frozen: FrozenSettings::new(settings),
            not_running: NotRunning::default(),
            job_of_pod: BTreeMap::new(),
            node_of_pod: BTreeMap::new(),
            registered: BTreeSet::new(),
            stranded_since_ms: BTreeMap::new(),
            requests: BTreeMap::new(),
            of_job: BTreeMap::new(),
            claimed: BTreeSet::new(),
            outages: Outages::default(),
        }
    }

    /// The job no longer waits: forget its own intervals.
    pub(crate) fn forget(&mut self, job: u64) {
        self.of_job.remove(&job);
        self.claimed.remove(&job);
        self.outages.forget(job);
    }

    /// Follow one record at `t_ms`.
    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) {
        self.frozen.observe(record);
        let before = self.not_running.len();
        self.not_running.observe(record);
        let registered = &self.registered;
        let unregistered = (self.job_of_pod.keys()).filter(|pod| !registered.contains(*pod));
        self.outages.observe(t_ms, record, unregistered);
        self.follow_pods(t_ms, record);
        let not_running = self.not_running.len();
        // Only a rise can raise a request's peak.
        if not_running > before {
            for (_, peak) in self.requests.values_mut() {
                *peak = (*peak).max(not_running);
            }
        }
        match record {
            Record::CreateAgentStarted { job, request } => {
                self.requests.insert(*request, (*job, not_running));
            }
            Record::CreateAgentExpired { request, .. } => {
                self.requests.remove(request);
            }
            Record::PluginRequestDone { request } => {
                let end = self.outages.request_done(*request);
                if let Some((job, peak)) = self.requests.remove(request) {
                    self.request_done(t_ms, job, peak, end);
                }
            }
            Record::ServerStopped => self.requests.clear(),
            Record::Decision {
                job: Some(job),
                code,
                ..
            } if code == CLAIM => {
                self.claimed.insert(*job);
            }
            _ => {}
        }
    }

    /// A create-agent of `job` ended at `t_ms`; `peak` is the most pods not Running while it
    /// ran. The limit counts as full if it was full at any moment of the request: the
    /// allocator decides on a list taken during the request, which may be seconds old at its
    /// end (a pod that went Running between the list and the end does not make the answer
    /// wrong: `explore/elastic-slow.toml` seeds 1027, 3160; `explore/elastic.toml` 40766).
    fn request_done(&mut self, t_ms: u64, job: u64, peak: usize, end: Option<RequestEnd>) {
        let limit = self.frozen.of_job(job).pending_pods_count;
        debug_assert!(
            peak >= self.not_running.len(),
            "the peak covers the request's end"
        );
        let full = peak >= usize::try_from(limit).unwrap_or(usize::MAX);
        let own_pod = self.job_of_pod.values().any(|of| *of == job);
        debug_assert!(limit > 0 || full, "a zero limit is always full");
        let to_ms = t_ms.saturating_add(self.bounds.resend_ms);
        let load = full && !own_pod;
        // A claim took the chance the room gave: an idle pod serves the job, no pod is owed.
        let claimed = self.claimed.remove(&job);
        if load {
            self.add(job, (t_ms, to_ms, Budget::Load));
        }
        match end {
            // A pod whose auto-register key died with a server process can never serve the
            // job, and in the cut no allocator could replace it (`explore/elastic-slow.toml`
            // seed 5027: a pod created while the server was down).
            Some(RequestEnd::Cut) if !self.has_live_keyed_pod(job) => {
                self.add(job, (t_ms, to_ms, Budget::ApiCut));
            }
            Some(RequestEnd::Cut) | None => {}
            Some(RequestEnd::Reachable) => {
                if !own_pod && !load && !claimed {
                    self.outages.let_go(job);
                }
                let own = (self.job_of_pod.iter()).filter(|(_, of)| **of == job);
                self.outages.judge_answer(job, own.map(|(pod, _)| pod));
            }
        }
    }

    /// Whether `job` has a live pod of its own whose agent can still register.
    fn has_live_keyed_pod(&self, job: u64) -> bool {
        (self.job_of_pod.iter()).any(|(pod, of)| *of == job && !self.outages.is_dead_keyed(pod))
    }

    fn add(&mut self, job: u64, interval: (u64, u64, Budget)) {
        debug_assert!(interval.0 <= interval.1, "an interval ends after it starts");
        self.of_job.entry(job).or_default().push(interval);
    }

    fn follow_pods(&mut self, t_ms: u64, record: &Record) {
        match record {
            Record::PodCreated {
                pod,
                job_label: Some(job),
                ..
            } => {
                self.job_of_pod.insert(pod.clone(), *job);
            }
            Record::PodScheduled { pod, node } => {
                self.node_of_pod.insert(pod.clone(), node.clone());
            }
            Record::AgentRegistered { agent, .. } => {
                self.registered.insert(agent.clone());
            }
            Record::NodeLost { node } => self.node_lost(t_ms, node),
            Record::PodDeleted { pod, .. } | Record::PodGone { pod } => self.pod_gone(t_ms, pod),
            _ => {}
        }
    }

    fn node_lost(&mut self, t_ms: u64, node: &str) {
        for (pod, on) in &self.node_of_pod {
            if on == node && !self.registered.contains(pod) && self.job_of_pod.contains_key(pod) {
                self.stranded_since_ms.entry(pod.clone()).or_insert(t_ms);
            }
        }
    }

    fn pod_gone(&mut self, t_ms: u64, pod: &str) {
        let job = self.job_of_pod.remove(pod);
        self.node_of_pod.remove(pod);
        self.registered.remove(pod);
        let since_ms = self.stranded_since_ms.remove(pod);
        if let (Some(job), Some(since_ms)) = (job, since_ms) {
            debug_assert!(since_ms <= t_ms, "a pod is lost before it goes");
            let to_ms = t_ms.saturating_add(self.bounds.resend_ms);
            self.add(job, (since_ms, to_ms, Budget::StrandedPod));
        }
    }

    /// The intervals that excuse `job`'s wait, as far as `now_ms` (a pod still stranded
    /// counts up to now).
    fn intervals(&self, job: u64, now_ms: u64) -> Intervals {
        let cut_counts = self.outages.cut_counts(job);
        let mut all: Intervals = (self.of_job.get(&job).into_iter().flatten())
            .filter(|interval| cut_counts || interval.2 != Budget::ApiCut)
            .copied()
            .collect();
        for (pod, since_ms) in &self.stranded_since_ms {
            if self.job_of_pod.get(pod) == Some(&job) {
                all.push((*since_ms, now_ms, Budget::StrandedPod));
            }
        }
        let unreachable = self.outages.unreachable(job, now_ms).into_iter();
        all.extend(unreachable.map(|(from_ms, to_ms)| (from_ms, to_ms, Budget::Unreachable)));
        all
    }

    /// How much of `[from_ms, to_ms)` the budgets cover for `job`, seen at `now_ms`: the
    /// union's length, and each budget's own share (for the label).
    pub(crate) fn covered(&self, job: u64, from_ms: u64, to_ms: u64, now_ms: u64) -> Covered {
        debug_assert!(from_ms <= to_ms, "a window ends after it starts");
        let intervals = self.intervals(job, now_ms);
        let mut by_budget = BTreeMap::new();
        for budget in Budget::ALL {
            let own: Vec<(u64, u64)> = (intervals.iter())
                .filter(|interval| interval.2 == budget)
                .map(|interval| (interval.0, interval.1))
                .collect();
            let ms = union_within(own, from_ms, to_ms);
            if ms > 0 {
                by_budget.insert(budget, ms);
            }
        }
        let all = intervals.iter().map(|interval| (interval.0, interval.1));
        let total_ms = union_within(all.collect(), from_ms, to_ms);
        debug_assert!(by_budget.values().all(|ms| *ms <= total_ms));
        Covered {
            total_ms,
            by_budget,
        }
    }
}

/// How much of a job's wait the budgets cover.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Covered {
    pub(crate) total_ms: u64,
    by_budget: BTreeMap<Budget, u64>,
}

impl Covered {
    /// "stranded-pod budget 200.000s (…); load budget 120.000s (…)".
    pub(crate) fn label(&self) -> String {
        let parts: Vec<String> = (self.by_budget.iter())
            .map(|(budget, ms)| {
                format!(
                    "{} budget {} ({})",
                    budget.name(),
                    super::jobs::seconds(*ms),
                    budget.reason()
                )
            })
            .collect();
        parts.join("; ")
    }
}

/// The length of the union of `intervals` clipped to `[from_ms, to_ms)`.
fn union_within(mut intervals: Vec<(u64, u64)>, from_ms: u64, to_ms: u64) -> u64 {
    intervals.sort_unstable();
    let mut total_ms = 0;
    let mut reached_ms = from_ms;
    for (start_ms, end_ms) in intervals {
        let start_ms = start_ms.max(reached_ms);
        let end_ms = end_ms.min(to_ms);
        if end_ms > start_ms {
            total_ms += end_ms - start_ms;
            reached_ms = end_ms;
        }
    }
    debug_assert!(total_ms <= to_ms.saturating_sub(from_ms));
    total_ms
}
