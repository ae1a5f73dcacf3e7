//! The allocator test kit: one driver for every policy, usable from unit tests, from the
//! conformance suite (`tests/conformance/`) and from any integration test. It is not part of
//! the library's normal build: unit tests compile it (`cfg(test)`), and the integration tests
//! get it through the `testkit` feature, which the crate's dev-dependency on itself turns on.
//!
//! A [`Driver`] owns one allocator, a [`Cluster`] (the simulator's own API server and
//! kubelets, [`crate::kube::KubeApi`]: resource versions, compare-and-swap annotation writes,
//! graceful deletion that leaves a running pod listed, Terminating, for [`GRACE_MS`]) and a
//! [`FakeServer`] (the GoCD server's agent registry behind [`ServerApi`]). Kubernetes calls
//! the allocator issues wait in [`Driver::queue`] until the test answers them — one at a time
//! ([`Driver::answer_next`], [`Driver::answer_next_with`]) or all ([`Driver::settle`]) — or
//! are answered at once when [`Driver::auto_answer`] is on. The test owns the clock
//! ([`Driver::now_ms`], [`Driver::wait`]): kubelet timers fire as it passes them, and a pod
//! starts when the test starts it ([`Driver::register`], [`Driver::set_phase`]). Every
//! processor call and every Kubernetes write lands in one log ([`FakeServer::log`]), so a
//! test can assert the order of "disable, delete pod, delete agent".
//!
//! ```
//! use elasticsim::testkit::Driver;
//! use elasticsim::allocator::{ClusterProfile, Policy};
//!
//! let mut d = Driver::new(Policy::Upstream, 2, ClusterProfile::default());
//! d.auto_answer = true;
//! d.create_agent(1);
//! assert_eq!(d.codes_for(1), ["create"]);
//! assert_eq!(d.pods_for_job(1).len(), 1);
//! ```

use crate::allocator::{
    AgentMetadata, AgentState, Allocator, BuildState, CallId, ClusterProfile, ConfigState,
    CreateAgentRequest, Decision, JobCompletionRequest, JobIdentifier, Outbox, PluginRequest,
    Policy, RequestId, ServerApi, ServerPingRequest, ShouldAssignWorkRequest, new_allocator,
    pod_spec,
};
use crate::resources::{KubeRequest, KubeResult, Pod, PodPhase, StringMap};
use std::collections::{BTreeMap, VecDeque};

mod cluster;
pub use cluster::{Cluster, GRACE_MS, RESTART_BACKOFF_MS};

/// The server's agent registry behind the processor API, with what the plugin asked of it.
#[derive(Default, Debug)]
pub struct FakeServer {
    /// Registered agents, by elastic agent id (= pod name).
    pub agents: BTreeMap<String, AgentMetadata>,
    /// Every write, in order: the processor's `disable-agent <id>` and `delete-agent <id>`,
    /// and the Kubernetes API's `create-pod <name>`, `delete-pod <name>`, `annotate-pod <name>`.
    pub log: Vec<String>,
    /// How many times the plugin listed agents.
    pub list_agents_count: u32,
    /// Agents actually disabled (known to the registry), in order.
    pub disabled: Vec<String>,
    /// Agents actually deleted (known to the registry), in order.
    pub deleted: Vec<String>,
}

impl FakeServer {
    /// The processor writes in the log (`disable-agent …`, `delete-agent …`).
    pub fn processor_writes(&self) -> Vec<&str> {
        let processor = |line: &&String| line.contains("-agent ");
        self.log
            .iter()
            .filter(processor)
            .map(String::as_str)
            .collect()
    }
}

impl ServerApi for FakeServer {
    fn list_agents(&mut self) -> Vec<AgentMetadata> {
        self.list_agents_count += 1;
        self.agents.values().cloned().collect()
    }

    fn disable_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            self.log.push(format!("disable-agent {id}"));
            if let Some(agent) = self.agents.get_mut(id) {
                agent.config_state = ConfigState::Disabled;
                self.disabled.push(id.clone());
            }
        }
    }

    fn delete_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            self.log.push(format!("delete-agent {id}"));
            if self.agents.remove(id).is_some() {
                self.deleted.push(id.clone());
            }
        }
    }
}

/// One allocator with its fake cluster and fake server.
pub struct Driver<A: Allocator = Box<dyn Allocator>> {
    /// The cluster.
    pub kube: Cluster,
    /// The GoCD server's agent registry.
    pub server: FakeServer,
    /// Issued calls not answered yet, in issue order.
    pub queue: VecDeque<(CallId, KubeRequest)>,
    /// Requests that finished, in order.
    pub finished: Vec<RequestId>,
    /// Every decision, in order.
    pub decisions: Vec<Decision>,
    /// The cluster profile every request names (tests may change it between requests).
    pub settings: ClusterProfile,
    /// The elastic profile every request names.
    pub elastic_properties: StringMap,
    /// The simulated time of the next call.
    pub now_ms: u64,
    /// Answer every call as soon as it is issued (off by default).
    pub auto_answer: bool,
    sent: Vec<RequestId>,
    request_counter: u64,
    /// The allocator under test.
    pub allocator: A,
}

impl Driver {
    /// A driver for `policy`, whose process has id `process_id`.
    pub fn new(policy: Policy, process_id: u64, settings: ClusterProfile) -> Driver {
        Driver::with_allocator(new_allocator(policy, process_id), settings)
    }

    /// A server restart: a new process with an empty allocator of the same policy; calls in
    /// flight are lost, pods and registered agents survive.
    #[cfg(test)]
    pub(crate) fn restart(&mut self, process_id: u64) {
        let policy = self.allocator.policy();
        self.restart_with(new_allocator(policy, process_id));
    }
}

impl<A: Allocator> Driver<A> {
    /// A driver around a given allocator (a concrete type, so tests can look inside).
    pub(crate) fn with_allocator(allocator: A, settings: ClusterProfile) -> Driver<A> {
        let elastic = StringMap::from([(
            pod_spec::PROFILE_IMAGE.to_owned(),
            "gocd/gocd-agent:v25.1.0".to_owned(),
        )]);
        Driver {
            kube: Cluster::default(),
            server: FakeServer::default(),
            queue: VecDeque::new(),
            finished: Vec::new(),
            decisions: Vec::new(),
            settings,
            elastic_properties: elastic,
            now_ms: 0,
            auto_answer: false,
            sent: Vec::new(),
            request_counter: 0,
            allocator,
        }
    }

    /// A server restart with a new allocator: calls in flight are lost.
    #[cfg(test)]
    pub(crate) fn restart_with(&mut self, allocator: A) {
        self.allocator = allocator;
        self.queue.clear();
    }

    fn absorb(&mut self, out: Outbox) {
        self.queue.extend(out.calls);
        for id in out.finished {
            assert!(self.sent.contains(&id), "request {id:?} finished unsent");
            assert!(
                !self.finished.contains(&id),
                "request {id:?} finished twice"
            );
            self.finished.push(id);
        }
        self.decisions.extend(out.decisions);
        if self.auto_answer {
            self.settle();
        }
    }

    /// Send a create-agent, job-completion or server-ping request.
    pub fn send(&mut self, request: PluginRequest) -> RequestId {
        self.request_counter += 1;
        let id = RequestId(self.request_counter);
        self.sent.push(id);
        let mut out = Outbox::default();
        self.allocator
            .handle_request(self.now_ms, id, request, &mut self.server, &mut out);
        self.absorb(out);
        id
    }

    /// The cluster profile properties requests carry.
    pub fn cluster_properties(&self) -> StringMap {
        self.settings.to_properties()
    }

    /// A job identifier with this job id.
    pub fn job(job_id: u64) -> JobIdentifier {
        JobIdentifier {
            pipeline_name: "build".to_owned(),
            pipeline_label: "1".to_owned(),
            pipeline_counter: 1,
            stage_name: "test".to_owned(),
            stage_counter: "1".to_owned(),
            job_name: format!("job-{job_id}"),
            job_id,
        }
    }

    /// create-agent for `job_id`, no environment.
    pub fn create_agent(&mut self, job_id: u64) -> RequestId {
        self.create_agent_in(job_id, None)
    }

    /// create-agent for `job_id` in a GoCD environment.
    pub fn create_agent_in(&mut self, job_id: u64, environment: Option<&str>) -> RequestId {
        let request = CreateAgentRequest {
            auto_register_key: format!("key-{job_id}"),
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties(),
            environment: environment.map(str::to_owned),
            job_identifier: Self::job(job_id),
        };
        self.send(PluginRequest::CreateAgent(request))
    }

    /// job-completion for `job_id` on `agent_id`; the agent's state is left as it is.
    pub(crate) fn job_completion(&mut self, agent_id: &str, job_id: u64) -> RequestId {
        let request = JobCompletionRequest {
            elastic_agent_id: agent_id.to_owned(),
            job_identifier: Self::job(job_id),
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties(),
        };
        self.send(PluginRequest::JobCompletion(request))
    }

    /// The job completes at the server (the agent goes Idle) and the plugin is told.
    pub fn complete(&mut self, pod: &str, job_id: u64) -> RequestId {
        self.set_agent(pod, AgentState::Idle);
        self.job_completion(pod, job_id)
    }

    /// server-ping naming the driver's cluster profile.
    pub fn ping(&mut self) -> RequestId {
        self.ping_clusters(vec![self.cluster_properties()])
    }

    /// server-ping naming these cluster profiles.
    pub fn ping_clusters(&mut self, all: Vec<StringMap>) -> RequestId {
        self.send(PluginRequest::ServerPing(ServerPingRequest {
            all_cluster_profile_properties: all,
        }))
    }

    /// should-assign-work for `pod` and `job_id`, no environment. On `true` the server marks
    /// the agent Building, as the real server does when it assigns.
    pub fn should_assign(&mut self, pod: &str, job_id: u64) -> bool {
        self.should_assign_in(pod, job_id, None)
    }

    /// should-assign-work in a GoCD environment. As the server does, the driver first asks
    /// [`Allocator::ready_to_assign`]; if the allocator lists pods first, the get-work is held
    /// and the driver answers waiting calls, in order, until the listing is in.
    pub fn should_assign_in(&mut self, pod: &str, job_id: u64, environment: Option<&str>) -> bool {
        self.request_counter += 1;
        let id = RequestId(self.request_counter);
        self.sent.push(id);
        let mut out = Outbox::default();
        let properties = self.cluster_properties();
        let ready = self
            .allocator
            .ready_to_assign(self.now_ms, id, &properties, &mut out);
        self.absorb(out);
        while !ready && !self.is_finished(id) {
            assert!(self.answer_next(), "a held get-work waits for a call");
        }
        let agent = self
            .server
            .agents
            .get(pod)
            .cloned()
            .unwrap_or(AgentMetadata {
                agent_id: pod.into(),
                agent_state: AgentState::Idle,
                build_state: BuildState::Idle,
                config_state: ConfigState::Enabled,
            });
        let request = ShouldAssignWorkRequest {
            agent,
            environment: environment.map(str::to_owned),
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties(),
            job_identifier: Self::job(job_id),
        };
        let mut out = Outbox::default();
        let answer =
            self.allocator
                .should_assign_work(self.now_ms, &request, &mut self.server, &mut out);
        self.absorb(out);
        if answer {
            self.set_agent(pod, AgentState::Building);
        }
        answer
    }

    /// Answer the oldest waiting call with what the cluster does; false if none waits.
    pub fn answer_next(&mut self) -> bool {
        let Some((call, request)) = self.queue.pop_front() else {
            return false;
        };
        let result = self.kube.apply(self.now_ms, &request);
        if result.is_ok() {
            self.log_write(&request);
        }
        self.deliver(call, result);
        true
    }

    /// Answer the waiting call at `index` (0: the oldest) with what the cluster does: calls
    /// applied out of the order they were made.
    #[cfg(test)]
    pub(crate) fn answer_at(&mut self, index: usize) {
        let (call, request) = self
            .queue
            .remove(index)
            .expect("a call waits at that index");
        let result = self.kube.apply(self.now_ms, &request);
        if result.is_ok() {
            self.log_write(&request);
        }
        self.deliver(call, result);
    }

    /// Answer the oldest waiting call with `result`, without touching the cluster.
    pub fn answer_next_with(&mut self, result: KubeResult) -> KubeRequest {
        let (call, request) = self.queue.pop_front().expect("a call is waiting");
        self.deliver(call, result);
        request
    }

    fn log_write(&mut self, request: &KubeRequest) {
        let line = match request {
            KubeRequest::CreatePod { template } => format!("create-pod {}", template.name),
            KubeRequest::DeletePod { name } => format!("delete-pod {name}"),
            KubeRequest::AnnotatePod { name, .. } => format!("annotate-pod {name}"),
            _ => return,
        };
        self.server.log.push(line);
    }

    fn deliver(&mut self, call: CallId, result: KubeResult) {
        let mut out = Outbox::default();
        self.allocator
            .handle_kube(self.now_ms, call, result, &mut self.server, &mut out);
        self.absorb(out);
    }

    /// Answer every call, including the calls answers lead to.
    pub fn settle(&mut self) {
        let mut answered_count = 0;
        while self.answer_next() {
            answered_count += 1;
            assert!(answered_count < 10_000, "the allocator keeps issuing calls");
        }
    }

    /// The next waiting call's verb, if any.
    pub fn next_verb(&self) -> Option<&'static str> {
        self.queue.front().map(|(_, request)| request.verb())
    }

    /// The pod's container starts (Running, ready) and its agent registers, Idle and Enabled.
    pub fn register(&mut self, pod: &str) {
        self.put_agent(pod, AgentState::Idle, ConfigState::Enabled);
    }

    /// Register (or overwrite) the agent of pod `name` with these states. An agent registers
    /// from its running container: a pod of that name not started yet starts first.
    pub fn put_agent(&mut self, name: &str, agent_state: AgentState, config: ConfigState) {
        self.kube.catch_up(self.now_ms);
        self.kube.start(name);
        let agent = AgentMetadata {
            agent_id: name.into(),
            agent_state,
            build_state: build_state_of(agent_state),
            config_state: config,
        };
        self.server.agents.insert(name.to_owned(), agent);
    }

    /// Change a registered agent's runtime state (no-op for an unknown agent).
    pub fn set_agent(&mut self, pod: &str, state: AgentState) {
        if let Some(agent) = self.server.agents.get_mut(pod) {
            agent.agent_state = state;
            agent.build_state = build_state_of(state);
        }
    }

    /// The kubelet moves the pod to `phase`: `Running` starts its container (image pulled),
    /// `Failed` fails it for good. The other phases are not the kubelet's to set on request.
    pub fn set_phase(&mut self, name: &str, phase: PodPhase) {
        self.kube.catch_up(self.now_ms);
        match phase {
            PodPhase::Running => self.kube.start(name),
            PodPhase::Failed => self.kube.fail(self.now_ms, name),
            PodPhase::Pending | PodPhase::Succeeded | PodPhase::Unknown => {
                panic!("the test cluster cannot put {name} in {phase:?}")
            }
        }
    }

    /// Let `ms` of simulated time pass: kubelet timers due by then fire (a deleted pod's
    /// grace period, a container's restart back-off).
    #[cfg(test)]
    pub(crate) fn wait(&mut self, ms: u64) {
        self.now_ms += ms;
        self.kube.catch_up(self.now_ms);
    }

    /// The pod's container dies and, after the kubelet's back-off ([`RESTART_BACKOFF_MS`],
    /// waited here), restarts: `restartCount` 1 more, a new resourceVersion.
    #[cfg(test)]
    pub(crate) fn restart_container(&mut self, name: &str) {
        self.kube.kill_container(self.now_ms, name);
        self.wait(RESTART_BACKOFF_MS);
    }

    /// `kubectl delete pod` now: a running pod turns Terminating for [`GRACE_MS`].
    #[cfg(test)]
    pub(crate) fn delete_externally(&mut self, name: &str) {
        self.kube.delete_externally(self.now_ms, name);
    }

    /// Pods listed by the cluster, by name (Terminating pods included).
    #[cfg(test)]
    pub(crate) fn pod_names(&self) -> Vec<String> {
        self.kube.pods().map(|pod| pod.name.clone()).collect()
    }

    /// Names of the pods labelled with `job_id`, in name order (Terminating pods included).
    pub fn pods_for_job(&self, job_id: u64) -> Vec<String> {
        let label = job_id.to_string();
        let labelled = |pod: &&Pod| pod.label(pod_spec::keys::JOB_ID) == Some(&label);
        let pods = self.kube.pods().filter(labelled);
        pods.map(|pod| pod.name.clone()).collect()
    }

    /// The only pod of `job_id`.
    pub fn pod_of(&self, job_id: u64) -> String {
        let pods = self.pods_for_job(job_id);
        assert_eq!(pods.len(), 1, "job {job_id} has exactly one pod: {pods:?}");
        pods[0].clone()
    }

    /// Decision codes about `job_id`, in order.
    pub fn codes_for(&self, job_id: u64) -> Vec<&'static str> {
        let about = |d: &&Decision| d.job_id == Some(job_id);
        self.decisions
            .iter()
            .filter(about)
            .map(|d| d.code.as_str())
            .collect()
    }

    /// True if a decision with `code` names `pod`.
    pub fn has_decision(&self, code: &str, pod: &str) -> bool {
        let matches = |d: &Decision| d.code.as_str() == code && d.pod.as_deref() == Some(pod);
        self.decisions.iter().any(matches)
    }

    /// Decisions with this code.
    pub fn decided(&self, code: &str) -> Vec<&Decision> {
        let matches = |d: &&Decision| d.code.as_str() == code;
        self.decisions.iter().filter(matches).collect()
    }

    /// True once request `id` has finished.
    pub fn is_finished(&self, id: RequestId) -> bool {
        self.finished.contains(&id)
    }

    /// Create one pod for `job_id`, register it, run the job on it and complete it (with reuse
    /// on, the pod ends idle). Returns the pod name.
    #[cfg(test)]
    pub(crate) fn idle_pod_after_job(&mut self, job_id: u64, environment: Option<&str>) -> String {
        self.create_agent_in(job_id, environment);
        self.settle();
        let pod = self.decided("create").last().and_then(|d| d.pod.clone());
        let pod = pod.expect("an empty cluster gets a pod for the first job");
        self.register(&pod);
        let taken = self.should_assign_in(&pod, job_id, environment);
        assert!(taken, "a new pod takes its own job");
        self.complete(&pod, job_id);
        self.settle();
        pod
    }
}

fn build_state_of(state: AgentState) -> BuildState {
    match state {
        AgentState::Building => BuildState::Building,
        AgentState::Idle => BuildState::Idle,
        _ => BuildState::Unknown,
    }
}
