//! Policy `safe`: agent reuse that keeps every invariant (`docs/policies.md`, nine rules).
//!
//! Map of the code:
//! * `view` — the pods as this process sees them, claims, and the predicates decisions use;
//! * `create` — create-agent: fresh list, reuse by claim, or a new pod within the limits;
//! * `ping` — server-ping: adoption after a restart, idle timeout, reaping of pods that can
//!   never serve, and the delete sequence (disable at the server first, then delete);
//! * `assign` — should-assign-work and job-completion.
//!
//! create-agent and server-ping run one at a time (the plugin's per-cluster lock): each
//! holds the lock from its list call until it finishes, so decisions never interleave with
//! another decision's writes. job-completion and should-assign-work do not take the lock.

mod assign;
mod create;
mod declared;
mod merge;
mod ping;
mod pod_table;
mod turns;
mod view;
mod walk_index;

#[cfg(test)]
mod tests;

use super::{
    Allocator, CallId, ClusterProfile, ConfigHashMemo, CreateAgentRequest, Outbox, PluginRequest,
    Policy, RequestId, ServerApi, ShouldAssignWorkRequest, pod_spec,
};
use crate::ablation::Ablation;
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, StringMap};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use view::View;

pub(super) use declared::SAFE;

/// How long a claim on an idle pod reserves it for one job. Longer than the server's
/// create-agent resend period (about 125 s), so a resend finds its own claim still holding.
pub(crate) const CLAIM_DURATION_MS: u64 = 150_000;

/// An idle pod this close to its idle timeout is not claimed: an agent asks for work at
/// least every 10 s, so a claim made earlier is taken before the ping that would reap it.
pub(crate) const EXPIRY_MARGIN_MS: u64 = 20_000;

/// The nine rules `--ablate` can switch off, one mutant each (the defect it lets back in).
pub(crate) const SAFE_ABLATIONS: [crate::ablation::Declared; 9] = [
    (
        Ablation::Reservations,
        "rule 1: a claimed idle pod stays a candidate for every other job",
    ),
    (
        Ablation::FreshState,
        "rule 2: create-agent decides on the view of the last server-ping list",
    ),
    (
        Ablation::IdleTimeout,
        "rule 3: idle time is measured from pod creation, as pr355 does",
    ),
    (
        Ablation::CanonicalHash,
        "rule 4: pr355's per-process config hash (no environment)",
    ),
    (
        Ablation::PureAssign,
        "rule 5: a false should-assign-work forgets the pod, as pr355 does",
    ),
    (
        Ablation::Assignable,
        "rule 6: reuse ignores the environment and the agent's state at the server",
    ),
    (
        Ablation::RestartAdoption,
        "rule 7: unregistered pods of an older process wait out ART",
    ),
    (
        Ablation::ContainerRestart,
        "rule 8: a restarted container leaves its pod idle and reusable",
    ),
    (
        Ablation::Limits,
        "rule 9: pending_pods_count counts every pod, as pr355 does, and a job the limit \
         turned away keeps no turn",
    ),
];

/// What an unanswered Kubernetes call was for.
#[derive(Clone, Debug)]
enum Pending {
    /// The fresh list a create-agent decides on.
    CreateList(RequestId),
    /// The compare-and-swap claim of an idle pod for a create-agent.
    Claim { request: RequestId, pod: String },
    /// The GET that re-validates an idle pod whose claim met a conflict.
    Revalidate { request: RequestId, pod: String },
    /// The new pod of a create-agent.
    Create { request: RequestId, pod: String },
    /// The list a server-ping cleans up from.
    PingList(RequestId),
    /// job-completion with reuse: mark the pod idle.
    CompletionAnnotate { request: RequestId, pod: String },
    /// job-completion without reuse (or for a pod that cannot be reused): delete it.
    CompletionDelete { request: RequestId, pod: String },
    /// A delete no request waits for.
    Delete { pod: String },
    /// An annotation write no request waits for.
    Annotate { pod: String },
}

/// A create-agent between its calls.
#[derive(Clone, Debug)]
struct CreateTask {
    request: CreateAgentRequest,
    settings: ClusterProfile,
    config_hash: String,
    /// Idle pods still to try to claim, best first.
    candidates: VecDeque<String>,
    /// Pods whose claim met a conflict once (re-validated once, then given up).
    conflicted: BTreeSet<String>,
    /// A pod made for this job that is being deleted; the decision waits for its delete.
    awaiting_delete: Option<String>,
    /// While the pod of an older job's turn is made (rule 9): the create of the request's
    /// own job, resumed once that pod exists, if room remains.
    then_own: Option<Box<CreateTask>>,
}

impl CreateTask {
    fn needs(&self) -> view::JobNeeds<'_> {
        view::JobNeeds {
            job_id: self.request.job_identifier.job_id,
            config_hash: &self.config_hash,
            environment: self.request.environment.as_deref(),
            idle_timeout_ms: self.settings.idle_timeout_ms,
        }
    }
}

pub(crate) struct Safe {
    process_id: u64,
    /// The first `now_ms` this process was called with: pods created before it hold
    /// auto-register keys that died with the previous server.
    start_ms: Option<u64>,
    pod_counter: u64,
    call_counter: u64,
    view: View,
    calls: BTreeMap<CallId, Pending>,
    /// create-agent and server-ping requests waiting for the lock, in arrival order.
    lock_queue: VecDeque<(RequestId, PluginRequest)>,
    lock_holder: Option<RequestId>,
    creates: BTreeMap<RequestId, CreateTask>,
    pings: BTreeMap<RequestId, ClusterProfile>,
    /// The cluster profile as the latest server-ping carried it (the settings in force now;
    /// a create-agent carries its job's frozen ones): a create-agent's list reaps idle pods
    /// past this idle timeout, as a ping would (`refresh_before_create` in `ping.rs`).
    ping_settings: Option<ClusterProfile>,
    /// job-completion requests with a call in flight.
    completions: BTreeMap<RequestId, String>,
    config_hashes: ConfigHashMemo,
    /// The jobs the pending limit turned away, who go first when room frees (rule 9).
    turns: turns::Turns<CreateTask>,
    /// Pods given a job whose write removing their idle-since failed: retried at every
    /// request until the pod no longer carries it (`assign.rs`), or a restarted process
    /// would read that idle start while the job runs, or after it.
    unremoved_idle_since: BTreeSet<String>,
    /// Each job (by its name, [`job_key`]) should-assign-work gave a pod, with the pod and
    /// the job instance: a create-agent for another instance of the same job means the server
    /// rescheduled it (hung: its agent lost contact), so the assignment is over
    /// (`release_rescheduled` in `assign.rs`).
    assigned_jobs: BTreeMap<String, (String, u64)>,
    /// Rules switched off (`SAFE_ABLATIONS`); empty in every ordinary run.
    ablations: crate::ablation::Ablations,
}

impl Safe {
    pub(crate) fn new(process_id: u64) -> Self {
        Safe {
            process_id,
            start_ms: None,
            pod_counter: 0,
            call_counter: 0,
            view: View::default(),
            calls: BTreeMap::new(),
            lock_queue: VecDeque::new(),
            lock_holder: None,
            creates: BTreeMap::new(),
            pings: BTreeMap::new(),
            ping_settings: None,
            completions: BTreeMap::new(),
            config_hashes: ConfigHashMemo::default(),
            turns: turns::Turns::default(),
            unremoved_idle_since: BTreeSet::new(),
            assigned_jobs: BTreeMap::new(),
            ablations: crate::ablation::Ablations::none(),
        }
    }

    /// `safe` with the named rules switched off (a mutant; see `SAFE_ABLATIONS`).
    pub(crate) fn with_ablations(process_id: u64, ablations: crate::ablation::Ablations) -> Self {
        Safe {
            ablations,
            ..Safe::new(process_id)
        }
    }

    /// True when rule `ablation` of `SAFE_ABLATIONS` is switched off.
    fn ablated(&self, ablation: Ablation) -> bool {
        self.ablations.has(ablation)
    }

    /// The job's config hash: canonical (rule 4), or pr355's per-process one when ablated.
    fn config_hash(
        &mut self,
        elastic: &StringMap,
        cluster: &StringMap,
        environment: Option<&str>,
    ) -> String {
        if self.ablated(Ablation::CanonicalHash) {
            return super::hash::pr355_config_hash(elastic, cluster, self.process_id);
        }
        self.config_hashes.hash(elastic, cluster, environment)
    }

    /// Remember the process start (rule 7) on the first call.
    fn note_time(&mut self, now_ms: u64) {
        self.start_ms.get_or_insert(now_ms);
    }

    fn start_ms(&self) -> u64 {
        self.start_ms
            .expect("every entry point records the start time before deciding")
    }

    /// Issue one Kubernetes call and remember what it is for.
    fn issue(&mut self, request: KubeRequest, pending: Pending, out: &mut Outbox) {
        if matches!(request, KubeRequest::ListPods { .. }) {
            self.view.list_issued();
        }
        self.call_counter += 1;
        let call = CallId(self.call_counter);
        self.calls.insert(call, pending);
        out.calls.push((call, request));
    }

    /// True when the pod name carries this process's id (pods of older processes do not).
    fn is_own_pod_name(&self, name: &str) -> bool {
        let prefix = pod_spec::pod_name(self.process_id, 0);
        let prefix = prefix.trim_end_matches('0');
        name.starts_with(prefix)
    }

    /// Start queued create-agent and server-ping requests while the lock is free.
    fn pump(&mut self, out: &mut Outbox) {
        while self.lock_holder.is_none() {
            let Some((id, request)) = self.lock_queue.pop_front() else {
                break;
            };
            self.lock_holder = Some(id);
            match request {
                PluginRequest::CreateAgent(request) => self.start_create(id, request, out),
                PluginRequest::ServerPing(request) => self.start_ping(id, request, out),
                PluginRequest::JobCompletion(_) => {
                    panic!("job-completion requests never enter the lock queue")
                }
            }
        }
    }

    /// The lock holder is done: free its server thread and the lock.
    fn finish_locked(&mut self, id: RequestId, out: &mut Outbox) {
        assert_eq!(
            self.lock_holder,
            Some(id),
            "only the lock holder can finish a locked request"
        );
        self.lock_holder = None;
        self.creates.remove(&id);
        self.pings.remove(&id);
        out.finished.push(id);
    }
}

impl Allocator for Safe {
    fn policy(&self) -> Policy {
        Policy::Safe
    }

    fn handle_request(
        &mut self,
        now_ms: u64,
        id: RequestId,
        request: PluginRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        self.note_time(now_ms);
        self.retry_lost_writes(out);
        match request {
            PluginRequest::JobCompletion(request) => {
                self.start_completion(now_ms, id, request, server, out);
            }
            locked => self.lock_queue.push_back((id, locked)),
        }
        self.pump(out);
    }

    fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        self.note_time(now_ms);
        let pending = self
            .calls
            .remove(&call)
            .expect("every call is answered exactly once");
        let cut = matches!(result, Err(KubeError::Timeout | KubeError::ServerError));
        if cut && !self.view.listed {
            self.view.started_in_cut = true;
        }
        match pending {
            Pending::CreateList(id) => self.on_create_list(now_ms, id, result, server, out),
            Pending::Claim { request, pod } => {
                self.on_claim(now_ms, request, &pod, result, out);
            }
            Pending::Revalidate { request, pod } => {
                self.on_revalidate(now_ms, request, &pod, result, server, out);
            }
            Pending::Create { request, pod } => self.on_create(now_ms, request, &pod, result, out),
            Pending::PingList(id) => self.on_ping_list(now_ms, id, result, server, out),
            Pending::CompletionAnnotate { request, pod } => {
                self.on_completion_annotate(request, &pod, result, server, out);
            }
            Pending::CompletionDelete { request, pod } => {
                self.on_delete(now_ms, Some(request), &pod, result, server, out);
            }
            Pending::Delete { pod } => self.on_delete(now_ms, None, &pod, result, server, out),
            Pending::Annotate { pod } => self.on_annotate(&pod, result, out),
        }
        self.pump(out);
    }

    fn should_assign_work(
        &mut self,
        now_ms: u64,
        request: &ShouldAssignWorkRequest,
        // Answered from the view alone: no callback, so the server's get-work never waits.
        _server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) -> bool {
        self.note_time(now_ms);
        self.assign_work(now_ms, request, out)
    }
}

/// A job's name without its instance id: a rescheduled job keeps it (`JobIdentifier` in
/// GoCD's `BuildAssignmentService` names pipeline, counters, stage and job).
fn job_key(job: &super::JobIdentifier) -> String {
    format!(
        "{}/{}/{}/{}/{}",
        job.pipeline_name, job.pipeline_counter, job.stage_name, job.stage_counter, job.job_name
    )
}

/// A reply whose shape does not match its request is a bug in whoever answers calls.
fn unexpected_reply(reply: &KubeReply, what: &str) -> ! {
    panic!("the Kubernetes API answered {what} with {reply:?}")
}

/// A short name for an error, for decision texts.
fn error_name(error: KubeError) -> &'static str {
    match error {
        KubeError::NotFound => "not found",
        KubeError::Conflict => "conflict",
        KubeError::ServerError => "server error",
        KubeError::Timeout => "timeout",
    }
}
