//! A test driver for the `upstream` and `pr355` policies: an in-memory Kubernetes API that
//! answers each issued call at once (or on demand, with a chosen result) and a server whose
//! agent states the test sets. Both write one shared log, so tests can assert call order.

use super::{
    AgentMetadata, AgentState, Allocator, BuildState, CallId, ClusterProfile, ConfigState,
    CreateAgentRequest, Decision, JobCompletionRequest, JobIdentifier, Outbox, PluginRequest,
    Policy, RequestId, ServerApi, ServerPingRequest, ShouldAssignWorkRequest, new_allocator,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, Pod, PodPhase, StringMap};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// The server side of the processor API, with a log of every call.
#[derive(Default)]
pub(super) struct FakeServer {
    pub(super) agents: BTreeMap<String, AgentMetadata>,
    pub(super) log: Vec<String>,
}

impl ServerApi for FakeServer {
    fn list_agents(&mut self) -> Vec<AgentMetadata> {
        self.agents.values().cloned().collect()
    }

    fn disable_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            self.log.push(format!("disable-agent {id}"));
            if let Some(agent) = self.agents.get_mut(id) {
                agent.config_state = ConfigState::Disabled;
            }
        }
    }

    fn delete_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            self.log.push(format!("delete-agent {id}"));
            self.agents.remove(id);
        }
    }
}

/// One allocator, one fake cluster, one fake server.
pub(super) struct Driver {
    pub(super) allocator: Box<dyn Allocator>,
    pub(super) server: FakeServer,
    pub(super) pods: BTreeMap<String, Pod>,
    /// Issued calls not answered yet, in issue order.
    pub(super) pending: VecDeque<(CallId, KubeRequest)>,
    pub(super) finished: Vec<RequestId>,
    pub(super) decisions: Vec<Decision>,
    pub(super) now_ms: u64,
    /// Answer every call as soon as it is issued.
    pub(super) auto_answer: bool,
    pub(super) cluster_properties: StringMap,
    pub(super) elastic_properties: StringMap,
    requests_sent_count: u64,
    pods_made_count: u64,
}

impl Driver {
    pub(super) fn new(policy: Policy, process_id: u64, profile: &ClusterProfile) -> Driver {
        let elastic = StringMap::from([("Image".to_owned(), "gocd/gocd-agent:v25".to_owned())]);
        Driver {
            allocator: new_allocator(policy, process_id),
            server: FakeServer::default(),
            pods: BTreeMap::new(),
            pending: VecDeque::new(),
            finished: Vec::new(),
            decisions: Vec::new(),
            now_ms: 1_000,
            auto_answer: true,
            cluster_properties: profile.to_properties(),
            elastic_properties: elastic,
            requests_sent_count: 0,
            pods_made_count: 0,
        }
    }

    /// A server restart: a new allocator; pods and registered agents survive.
    pub(super) fn restart(&mut self, policy: Policy, process_id: u64) {
        assert!(
            self.pending.is_empty(),
            "restart only between calls in tests"
        );
        self.allocator = new_allocator(policy, process_id);
    }

    fn drain(&mut self, out: Outbox) {
        self.pending.extend(out.calls);
        for id in out.finished {
            assert!(
                !self.finished.contains(&id),
                "request {id:?} finished twice"
            );
            self.finished.push(id);
        }
        self.decisions.extend(out.decisions);
    }

    pub(super) fn send(&mut self, request: PluginRequest) -> RequestId {
        self.requests_sent_count += 1;
        let id = RequestId(self.requests_sent_count);
        let mut out = Outbox::default();
        self.allocator
            .handle_request(self.now_ms, id, request, &mut self.server, &mut out);
        self.drain(out);
        if self.auto_answer {
            self.answer_all();
        }
        id
    }

    /// Answer the oldest outstanding call with `result`.
    pub(super) fn answer_next_with(&mut self, result: KubeResult) {
        let (call, _) = self.pending.pop_front().expect("a call is outstanding");
        let mut out = Outbox::default();
        self.allocator
            .handle_kube(self.now_ms, call, result, &mut self.server, &mut out);
        self.drain(out);
    }

    /// Answer the oldest outstanding call from the fake cluster.
    pub(super) fn answer_next(&mut self) {
        let request = self
            .pending
            .front()
            .expect("a call is outstanding")
            .1
            .clone();
        let result = self.execute(&request);
        self.answer_next_with(result);
    }

    pub(super) fn answer_all(&mut self) {
        let mut answered_count = 0;
        while !self.pending.is_empty() {
            answered_count += 1;
            assert!(answered_count < 1_000, "an allocator keeps issuing calls");
            self.answer_next();
        }
    }

    /// The next outstanding call's verb, if any.
    pub(super) fn next_verb(&self) -> Option<&'static str> {
        self.pending.front().map(|(_, request)| request.verb())
    }

    fn execute(&mut self, request: &KubeRequest) -> KubeResult {
        match request {
            KubeRequest::ListPods { selector } => {
                let matches =
                    |pod: &&Pod| selector.iter().all(|(k, v)| pod.labels.get(k) == Some(v));
                Ok(KubeReply::Pods(
                    self.pods
                        .values()
                        .filter(matches)
                        .cloned()
                        .map(Arc::new)
                        .collect(),
                ))
            }
            KubeRequest::GetPod { name } => self
                .pods
                .get(name)
                .cloned()
                .map(Arc::new)
                .map(KubeReply::Pod)
                .ok_or(KubeError::NotFound),
            KubeRequest::CreatePod { template } => {
                self.pods_made_count += 1;
                self.server
                    .log
                    .push(format!("create-pod {}", template.name));
                let pod = Pod {
                    name: template.name.clone(),
                    uid: self.pods_made_count,
                    labels: template.labels.clone(),
                    annotations: template.annotations.clone(),
                    image: template.image.clone(),
                    env: template.env.clone(),
                    phase: PodPhase::Pending,
                    node: None,
                    created_ms: self.now_ms,
                    resource_version: 1,
                    restart_count: 0,
                    deletion_ms: None,
                    ready: false,
                };
                self.pods.insert(pod.name.clone(), pod.clone());
                Ok(KubeReply::Pod(Arc::new(pod)))
            }
            KubeRequest::DeletePod { name } => {
                self.server.log.push(format!("delete-pod {name}"));
                self.pods
                    .remove(name)
                    .map(|_| KubeReply::Deleted)
                    .ok_or(KubeError::NotFound)
            }
            other => panic!("the pod allocators never issue {other:?}"),
        }
    }

    pub(super) fn job(job_id: u64) -> JobIdentifier {
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

    pub(super) fn create_agent(&mut self, job_id: u64) -> RequestId {
        let request = CreateAgentRequest {
            auto_register_key: format!("key-{job_id}"),
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties.clone(),
            environment: None,
            job_identifier: Self::job(job_id),
        };
        self.send(PluginRequest::CreateAgent(request))
    }

    pub(super) fn job_completion(&mut self, agent_id: &str, job_id: u64) -> RequestId {
        let request = JobCompletionRequest {
            elastic_agent_id: agent_id.to_owned(),
            job_identifier: Self::job(job_id),
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties.clone(),
        };
        self.send(PluginRequest::JobCompletion(request))
    }

    pub(super) fn ping(&mut self) -> RequestId {
        let all = vec![self.cluster_properties.clone()];
        self.send(PluginRequest::ServerPing(ServerPingRequest {
            all_cluster_profile_properties: all,
        }))
    }

    pub(super) fn should_assign(&mut self, agent_id: &str, job_id: u64) -> bool {
        let agent = self
            .server
            .agents
            .get(agent_id)
            .cloned()
            .unwrap_or(AgentMetadata {
                agent_id: agent_id.to_owned(),
                agent_state: AgentState::Idle,
                build_state: BuildState::Idle,
                config_state: ConfigState::Enabled,
            });
        let request = ShouldAssignWorkRequest {
            agent,
            environment: None,
            elastic_agent_profile_properties: self.elastic_properties.clone(),
            cluster_profile_properties: self.cluster_properties.clone(),
            job_identifier: Self::job(job_id),
        };
        let mut out = Outbox::default();
        let answer =
            self.allocator
                .should_assign_work(self.now_ms, &request, &mut self.server, &mut out);
        self.drain(out);
        if self.auto_answer {
            self.answer_all();
        }
        answer
    }

    /// The agent of pod `name` registers (or changes state) at the server.
    pub(super) fn set_agent(&mut self, name: &str, agent_state: AgentState, config: ConfigState) {
        let build_state = if agent_state == AgentState::Building {
            BuildState::Building
        } else {
            BuildState::Idle
        };
        let agent = AgentMetadata {
            agent_id: name.to_owned(),
            agent_state,
            build_state,
            config_state: config,
        };
        self.server.agents.insert(name.to_owned(), agent);
    }

    pub(super) fn set_phase(&mut self, name: &str, phase: PodPhase) {
        self.pods
            .get_mut(name)
            .expect("the test names an existing pod")
            .phase = phase;
    }

    /// Names of the pods labelled with `job_id`, in name order.
    pub(super) fn pods_for_job(&self, job_id: u64) -> Vec<String> {
        let label = job_id.to_string();
        let labelled = |pod: &&Pod| pod.label(super::pod_spec::keys::JOB_ID) == Some(&label);
        self.pods
            .values()
            .filter(labelled)
            .map(|pod| pod.name.clone())
            .collect()
    }

    /// The only pod of `job_id`.
    pub(super) fn pod_of(&self, job_id: u64) -> String {
        let pods = self.pods_for_job(job_id);
        assert_eq!(pods.len(), 1, "job {job_id} has exactly one pod: {pods:?}");
        pods[0].clone()
    }

    /// Decision codes about `job_id`, in order.
    pub(super) fn codes_for(&self, job_id: u64) -> Vec<&'static str> {
        let about = |d: &&Decision| d.job_id == Some(job_id);
        self.decisions
            .iter()
            .filter(about)
            .map(|d| d.code)
            .collect()
    }

    pub(super) fn has_decision(&self, code: &str, pod: &str) -> bool {
        self.decisions
            .iter()
            .any(|d| d.code == code && d.pod.as_deref() == Some(pod))
    }
}
