//! The request machinery the master branch and PR #355 share: the per-cluster pod maps, the
//! per-cluster lock that serialises create-agent, job-completion's terminate, and the
//! continuations that resume a request when its Kubernetes call is answered.
//!
//! The policies differ only in their [`Rules`]: what create-agent decides, what
//! should-assign-work answers and what job-completion does. Each request runs like one of the
//! plugin's server threads: at most one Kubernetes call outstanding, resumed by `handle_kube`.

use super::DecisionCode;
use super::declaration::{DeclaredCode, RequestKind, code};
use super::instances::{ClusterKey, KnownPod, PluginAgentState, PodMap};
use super::plugin_ping::PingTask;
use super::pod_spec;
use super::refresh::RefreshBase;
use super::{
    Allocator, CallId, ClusterProfile, CreateAgentRequest, JobCompletionRequest, Outbox,
    PluginRequest, Policy, RequestId, ServerApi, ShouldAssignWorkRequest,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, PodTemplate, StringMap};
use std::collections::{BTreeMap, VecDeque};

/// What job-completion does after the policy has looked at the request.
pub(super) enum CompletionAction {
    /// The master branch: disable the agent, delete the pod, delete the agent.
    Terminate,
    /// Nothing more to do (PR #355 with reuse on keeps the pod).
    Done,
}

/// The decisions that make a policy.
pub(super) trait Rules {
    const POLICY: Policy;
    /// Whether create-agent lists pods (inside the lock) before deciding.
    const REFRESH_BEFORE_CREATE: bool;

    /// Decide whether to create a pod (and record why); called inside the cluster lock.
    fn decide_create(&self, context: &CreateContext<'_>, out: &mut Outbox) -> bool;

    /// The pod to create.
    fn pod_template(
        &self,
        name: &str,
        request: &CreateAgentRequest,
        profile: &ClusterProfile,
        process_id: u64,
    ) -> PodTemplate;

    /// The plugin-side agent state a freshly created pod is registered with.
    fn created_agent_state(&self) -> PluginAgentState;

    /// should-assign-work on this cluster's map (which it may change).
    fn should_assign_work(
        &self,
        pods: &mut PodMap,
        request: &ShouldAssignWorkRequest,
        process_id: u64,
        out: &mut Outbox,
    ) -> bool;

    /// job-completion's policy part, before any terminate.
    fn job_completion(
        &self,
        pods: &mut PodMap,
        request: &JobCompletionRequest,
        out: &mut Outbox,
    ) -> CompletionAction;
}

/// What create-agent decides on.
pub(super) struct CreateContext<'a> {
    pub(super) pods: &'a PodMap,
    pub(super) request: &'a CreateAgentRequest,
    pub(super) profile: &'a ClusterProfile,
    /// The name the pod will get if one is created.
    pub(super) next_pod_name: &'a str,
    pub(super) process_id: u64,
}

/// One cluster profile's map and create-agent lock.
#[derive(Default)]
pub(super) struct Cluster {
    pub(super) pods: PodMap,
    /// What the next refresh compares its listing with; every insert or removal outside a
    /// refresh touches it (`refresh.rs`).
    pub(super) refreshed: RefreshBase,
    /// The create-agent request holding `synchronized (instances)`.
    lock_holder: Option<RequestId>,
    /// Create-agent requests waiting for the lock, in arrival order.
    lock_queue: VecDeque<RequestId>,
}

/// What an outstanding Kubernetes call resumes.
pub(super) enum Waiter {
    Task(RequestId),
    /// `getAgentInstancesFor`'s listing of a cluster profile this process has not seen; the
    /// requests in `Plugin::first_use` wait for it.
    FirstUseRefresh(ClusterKey),
}

enum CreateStage {
    Queued,
    Refreshing,
    Creating { name: String },
}

struct CreateTask {
    request: CreateAgentRequest,
    key: ClusterKey,
    profile: ClusterProfile,
    stage: CreateStage,
}

enum CompletionStage {
    Start,
    Deleting,
}

struct CompletionTask {
    request: JobCompletionRequest,
    key: ClusterKey,
    stage: CompletionStage,
}

enum Task {
    Create(CreateTask),
    Completion(CompletionTask),
    Ping(PingTask),
    /// A get-work the server holds until should-assign-work can be answered.
    Assign,
}

/// The plugin of the master branch or of PR #355, depending on `R`.
pub(super) struct Plugin<R: Rules> {
    rules: R,
    pub(super) process_id: u64,
    pods_created_count: u64,
    calls_issued_count: u64,
    pub(super) clusters: BTreeMap<ClusterKey, Cluster>,
    waiters: BTreeMap<CallId, Waiter>,
    tasks: BTreeMap<RequestId, Task>,
    /// Requests waiting for the first listing of a cluster profile, in arrival order.
    first_use: BTreeMap<ClusterKey, Vec<RequestId>>,
}

impl<R: Rules> Plugin<R> {
    pub(super) fn with_rules(rules: R, process_id: u64) -> Self {
        Plugin {
            rules,
            process_id,
            pods_created_count: 0,
            calls_issued_count: 0,
            clusters: BTreeMap::new(),
            waiters: BTreeMap::new(),
            tasks: BTreeMap::new(),
            first_use: BTreeMap::new(),
        }
    }

    /// Issue a Kubernetes call with a fresh id.
    pub(super) fn issue(&mut self, waiter: Waiter, request: KubeRequest, out: &mut Outbox) {
        self.calls_issued_count += 1;
        let call = CallId(self.calls_issued_count);
        let previous = self.waiters.insert(call, waiter);
        assert!(
            previous.is_none(),
            "call ids come from a counter, so they are fresh"
        );
        out.calls.push((call, request));
    }

    /// A request is over: its server thread is free again.
    pub(super) fn finish(&mut self, id: RequestId, out: &mut Outbox) {
        assert!(
            !self.tasks.contains_key(&id),
            "a finished request {id:?} keeps no task"
        );
        assert!(!out.finished.contains(&id), "request {id:?} finishes once");
        out.finished.push(id);
    }

    /// Park a ping that waits for a call.
    pub(super) fn park_ping(&mut self, id: RequestId, task: PingTask) {
        let previous = self.tasks.insert(id, Task::Ping(task));
        assert!(previous.is_none(), "request {id:?} has one task");
    }

    fn start_task(&mut self, id: RequestId, task: Task) {
        let previous = self.tasks.insert(id, task);
        assert!(
            previous.is_none(),
            "the server never reuses a request id ({id:?})"
        );
    }

    /// The cluster `properties` name, created empty if new. An existing one is found
    /// without building its key ([`ClusterKey::matches`]; a server has a few at most).
    fn cluster_for<'a>(
        clusters: &'a mut BTreeMap<ClusterKey, Cluster>,
        properties: &StringMap,
    ) -> &'a mut Cluster {
        if !clusters.keys().any(|key| key.matches(properties)) {
            let key = ClusterKey::from_properties(properties);
            return clusters.entry(key).or_default();
        }
        clusters
            .iter_mut()
            .find(|(key, _)| key.matches(properties))
            .map(|(_, cluster)| cluster)
            .expect("a key matched just now")
    }

    /// The lister every policy uses.
    pub(super) fn list_pods_request() -> KubeRequest {
        KubeRequest::ListPods {
            selector: pod_spec::agent_selector(),
        }
    }

    /// Replace a cluster's map with a listing; an error keeps the stale map.
    pub(super) fn apply_refresh(&mut self, key: &ClusterKey, result: KubeResult, out: &mut Outbox) {
        let cluster = self.clusters.entry(key.clone()).or_default();
        match result {
            Ok(KubeReply::Pods(pods)) => cluster.refreshed.refresh(&mut cluster.pods, pods),
            Ok(other) => panic!("a list-pods call answers with pods, not {other:?}"),
            Err(error) => out.decide(
                None,
                None,
                DecisionCode::RefreshFailed,
                format!("listing pods failed ({error:?}); keeping the stale pod map"),
            ),
        }
    }

    /// `getAgentInstancesFor`: true when this process knows the cluster profile; otherwise
    /// `id` waits for its first listing (issued by the first request that names it), as the
    /// plugin's thread blocks in `refreshInstancesForCluster`.
    fn agent_instances_for(&mut self, key: &ClusterKey, id: RequestId, out: &mut Outbox) -> bool {
        debug_assert!(
            !self.tasks.contains_key(&id),
            "request {id:?} asks for its cluster's pods before it has a task"
        );
        if self.clusters.contains_key(key) {
            return true;
        }
        let waiting = self.first_use.entry(key.clone()).or_default();
        debug_assert!(
            !waiting.contains(&id),
            "request {id:?} waits for a listing once"
        );
        waiting.push(id);
        if waiting.len() == 1 {
            let text = "first use of this cluster profile in this process: listing pods first";
            out.decide(None, None, DecisionCode::FirstUseRefresh, text.to_owned());
            self.issue(
                Waiter::FirstUseRefresh(key.clone()),
                Self::list_pods_request(),
                out,
            );
        }
        false
    }

    /// The first listing of a cluster profile is in: its map exists (empty if the listing
    /// failed, as `refreshInstancesForCluster` puts it anyway) and its waiters resume.
    fn first_use_listed(
        &mut self,
        key: &ClusterKey,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        self.apply_refresh(key, result, out);
        debug_assert!(
            self.clusters.contains_key(key),
            "the first listing makes the map"
        );
        for id in self.first_use.remove(key).unwrap_or_default() {
            match self.tasks.remove(&id) {
                Some(Task::Create(task)) => self.enter_create_lock(id, task, out),
                Some(Task::Completion(task)) => self.complete(id, task, server, out),
                Some(Task::Assign) => self.finish(id, out),
                Some(Task::Ping(_)) | None => panic!("only waiting requests wait for a listing"),
            }
        }
    }

    fn handle_create(&mut self, id: RequestId, request: CreateAgentRequest, out: &mut Outbox) {
        let key = ClusterKey::from_properties(&request.cluster_profile_properties);
        let profile = ClusterProfile::from_properties(&request.cluster_profile_properties);
        let task = CreateTask {
            request,
            key: key.clone(),
            profile,
            stage: CreateStage::Queued,
        };
        if self.agent_instances_for(&key, id, out) {
            self.enter_create_lock(id, task, out);
        } else {
            self.start_task(id, Task::Create(task));
        }
    }

    /// `synchronized (instances)`: queue for the cluster lock.
    fn enter_create_lock(&mut self, id: RequestId, task: CreateTask, out: &mut Outbox) {
        let key = task.key.clone();
        let cluster = self.clusters.entry(key.clone()).or_default();
        debug_assert!(
            !cluster.lock_queue.contains(&id) && cluster.lock_holder != Some(id),
            "request {id:?} queues for the cluster lock once"
        );
        cluster.lock_queue.push_back(id);
        let waiting_count = cluster.lock_queue.len() - 1;
        if cluster.lock_holder.is_some() {
            let job_id = task.request.job_identifier.job_id;
            let text = format!(
                "waiting for the cluster lock: one create-agent in progress, {waiting_count} \
                 queued before this one"
            );
            out.decide(Some(job_id), None, DecisionCode::Queued, text);
        }
        self.start_task(id, Task::Create(task));
        self.start_next_create(&key, out);
    }

    /// Hand the lock to queued create-agent requests until one has to wait for a call.
    fn start_next_create(&mut self, key: &ClusterKey, out: &mut Outbox) {
        loop {
            let cluster = self
                .clusters
                .get_mut(key)
                .expect("a queued request made its cluster");
            if cluster.lock_holder.is_some() {
                return;
            }
            let Some(id) = cluster.lock_queue.pop_front() else {
                return;
            };
            cluster.lock_holder = Some(id);
            let Some(Task::Create(mut task)) = self.tasks.remove(&id) else {
                panic!("the lock queue holds only create-agent requests");
            };
            if R::REFRESH_BEFORE_CREATE {
                task.stage = CreateStage::Refreshing;
                self.tasks.insert(id, Task::Create(task));
                self.issue(Waiter::Task(id), Self::list_pods_request(), out);
            } else {
                self.decide_and_create(id, task, out);
            }
        }
    }

    /// Decide inside the lock; either issue the create or release the lock.
    fn decide_and_create(&mut self, id: RequestId, mut task: CreateTask, out: &mut Outbox) {
        debug_assert_eq!(
            self.clusters[&task.key].lock_holder,
            Some(id),
            "a create-agent decides inside its cluster's lock"
        );
        let name = pod_spec::pod_name(self.process_id, self.pods_created_count + 1);
        let context = CreateContext {
            pods: &self.clusters[&task.key].pods,
            request: &task.request,
            profile: &task.profile,
            next_pod_name: &name,
            process_id: self.process_id,
        };
        if !self.rules.decide_create(&context, out) {
            self.release_lock(id, &task.key, out);
            return;
        }
        self.pods_created_count += 1;
        let template =
            self.rules
                .pod_template(&name, &task.request, &task.profile, self.process_id);
        task.stage = CreateStage::Creating { name };
        self.tasks.insert(id, Task::Create(task));
        self.issue(Waiter::Task(id), KubeRequest::CreatePod { template }, out);
    }

    fn release_lock(&mut self, id: RequestId, key: &ClusterKey, out: &mut Outbox) {
        let cluster = self
            .clusters
            .get_mut(key)
            .expect("a lock holder's cluster exists");
        assert_eq!(
            cluster.lock_holder,
            Some(id),
            "only the holder releases the lock"
        );
        cluster.lock_holder = None;
        self.finish(id, out);
    }

    fn create_on_kube(
        &mut self,
        id: RequestId,
        mut task: CreateTask,
        result: KubeResult,
        out: &mut Outbox,
    ) {
        let key = task.key.clone();
        match std::mem::replace(&mut task.stage, CreateStage::Queued) {
            CreateStage::Queued => panic!("a queued create-agent has no call outstanding"),
            CreateStage::Refreshing => {
                self.apply_refresh(&key, result, out);
                self.decide_and_create(id, task, out);
            }
            CreateStage::Creating { name } => {
                let job_id = task.request.job_identifier.job_id;
                match result {
                    Ok(KubeReply::Pod(pod)) => {
                        debug_assert_eq!(
                            pod.name, name,
                            "the API creates the pod it was asked for"
                        );
                        let mut known = KnownPod::from_pod(&pod);
                        known.agent_state = self.rules.created_agent_state();
                        let cluster = self.clusters.get_mut(&key).expect("the holder's cluster");
                        cluster.refreshed.touch(&known.name);
                        cluster.pods.insert(known.name.clone(), known);
                    }
                    Ok(other) => panic!("a create-pod call answers with a pod, not {other:?}"),
                    Err(error) => {
                        let text = format!(
                            "creating pod {name} failed ({error:?}); no retry \
                                            until the server resends create-agent"
                        );
                        out.decide(Some(job_id), Some(&name), DecisionCode::CreateFailed, text);
                    }
                }
                self.release_lock(id, &key, out);
            }
        }
        self.start_next_create(&key, out);
    }

    fn handle_completion(
        &mut self,
        id: RequestId,
        request: JobCompletionRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let key = ClusterKey::from_properties(&request.cluster_profile_properties);
        let task = CompletionTask {
            request,
            key: key.clone(),
            stage: CompletionStage::Start,
        };
        if self.agent_instances_for(&key, id, out) {
            self.complete(id, task, server, out);
        } else {
            self.start_task(id, Task::Completion(task));
        }
    }

    /// The executor proper: the policy's part, then (master) disable, delete pod, delete agent.
    fn complete(
        &mut self,
        id: RequestId,
        mut task: CompletionTask,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        debug_assert!(
            matches!(task.stage, CompletionStage::Start),
            "a job-completion runs its policy part once"
        );
        let cluster = self.clusters.entry(task.key.clone()).or_default();
        // The rule may write the completing agent's entry, and no other.
        cluster.refreshed.touch(&task.request.elastic_agent_id);
        let action = self
            .rules
            .job_completion(&mut cluster.pods, &task.request, out);
        let agent_id = task.request.elastic_agent_id.clone();
        let pod_known = cluster.pods.contains_key(&agent_id);
        let job_id = task.request.job_identifier.job_id;
        match action {
            CompletionAction::Done => self.finish(id, out),
            CompletionAction::Terminate => {
                server.disable_agents(std::slice::from_ref(&agent_id));
                if pod_known {
                    let text = format!("job {job_id} completed: agent disabled, deleting pod");
                    out.decide(
                        Some(job_id),
                        Some(&agent_id),
                        DecisionCode::CompleteDelete,
                        text,
                    );
                    task.stage = CompletionStage::Deleting;
                    self.start_task(id, Task::Completion(task));
                    let delete = KubeRequest::DeletePod { name: agent_id };
                    self.issue(Waiter::Task(id), delete, out);
                } else {
                    let text = format!(
                        "job {job_id} completed but pod {agent_id} is not in the plugin's map: \
                         agent disabled and deleted, pod left in place"
                    );
                    out.decide(
                        Some(job_id),
                        Some(&agent_id),
                        DecisionCode::CompleteUnknown,
                        text,
                    );
                    server.delete_agents(&[agent_id]);
                    self.finish(id, out);
                }
            }
        }
    }

    fn completion_on_kube(
        &mut self,
        id: RequestId,
        task: CompletionTask,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        match task.stage {
            CompletionStage::Start => panic!("a starting job-completion has no call outstanding"),
            CompletionStage::Deleting => {
                let agent_id = task.request.elastic_agent_id.clone();
                if Self::deleted(&result) {
                    let cluster = self
                        .clusters
                        .get_mut(&task.key)
                        .expect("a map was made first");
                    cluster.refreshed.touch(&agent_id);
                    cluster.pods.remove(&agent_id);
                    server.delete_agents(&[agent_id]);
                } else {
                    let job_id = task.request.job_identifier.job_id;
                    let text = format!(
                        "deleting pod {agent_id} failed ({result:?}); its agent stays disabled \
                         until a server ping reaps it"
                    );
                    out.decide(
                        Some(job_id),
                        Some(&agent_id),
                        DecisionCode::DeleteFailed,
                        text,
                    );
                }
                self.finish(id, out);
            }
        }
    }

    /// A pod delete succeeded, or the pod was already gone (the client treats 404 as done).
    pub(super) fn deleted(result: &KubeResult) -> bool {
        match result {
            Ok(KubeReply::Deleted) | Err(KubeError::NotFound) => true,
            Ok(other) => panic!("a delete-pod call answers with Deleted, not {other:?}"),
            Err(_) => false,
        }
    }
}

impl<R: Rules> Allocator for Plugin<R> {
    fn policy(&self) -> Policy {
        R::POLICY
    }

    fn handle_request(
        &mut self,
        _now_ms: u64,
        id: RequestId,
        request: PluginRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        match request {
            PluginRequest::CreateAgent(request) => self.handle_create(id, request, out),
            PluginRequest::JobCompletion(request) => {
                self.handle_completion(id, request, server, out);
            }
            PluginRequest::ServerPing(request) => self.handle_ping(id, request, server, out),
        }
    }

    fn handle_kube(
        &mut self,
        now_ms: u64,
        call: CallId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        debug_assert!(
            call.0 <= self.calls_issued_count,
            "{call:?} is one this process issued"
        );
        let waiter = self.waiters.remove(&call);
        let waiter = waiter.unwrap_or_else(|| panic!("{call:?} was never issued or is answered"));
        let id = match waiter {
            Waiter::FirstUseRefresh(key) => {
                return self.first_use_listed(&key, result, server, out);
            }
            Waiter::Task(id) => id,
        };
        match self.tasks.remove(&id) {
            Some(Task::Create(task)) => self.create_on_kube(id, task, result, out),
            Some(Task::Completion(task)) => {
                self.completion_on_kube(id, task, result, server, out);
            }
            Some(Task::Ping(task)) => self.ping_on_kube(now_ms, id, task, result, server, out),
            Some(Task::Assign) => panic!("a held get-work waits for a listing, not a call"),
            None => panic!("{call:?} resumes request {id:?}, which is already finished"),
        }
    }

    fn ready_to_assign(
        &mut self,
        _now_ms: u64,
        id: RequestId,
        cluster_profile_properties: &StringMap,
        out: &mut Outbox,
    ) -> bool {
        let key = ClusterKey::from_properties(cluster_profile_properties);
        if self.agent_instances_for(&key, id, out) {
            return true;
        }
        self.start_task(id, Task::Assign);
        false
    }

    fn should_assign_work(
        &mut self,
        _now_ms: u64,
        request: &ShouldAssignWorkRequest,
        _server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) -> bool {
        // A server that skipped `ready_to_assign` gets the answer of an empty map.
        let cluster = Self::cluster_for(&mut self.clusters, &request.cluster_profile_properties);
        // The rule may write (pr355: evict) the asking agent's entry, and no other.
        cluster.refreshed.touch(&request.agent.agent_id);
        self.rules
            .should_assign_work(&mut cluster.pods, request, self.process_id, out)
    }
}

/// The decisions the shared plugin code records for `upstream` and `pr355`.
pub(super) const CORE_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::Queued,
        RequestKind::Step,
        "another create-agent of the same cluster profile holds its lock: waiting",
    ),
    code(
        DecisionCode::CreateFailed,
        RequestKind::Step,
        "the API server refused the pod create",
    ),
    code(
        DecisionCode::CompleteDelete,
        RequestKind::JobCompletion,
        "the job finished: disable the agent, delete its pod and the agent",
    ),
    code(
        DecisionCode::CompleteUnknown,
        RequestKind::JobCompletion,
        "the job finished on a pod the plugin does not know: nothing done",
    ),
    code(
        DecisionCode::DeleteFailed,
        RequestKind::Step,
        "a pod delete failed",
    ),
];
