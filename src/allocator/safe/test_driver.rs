//! Test driver for `safe`: a fake Kubernetes API that answers calls when the test says so,
//! and a fake GoCD server whose agents the test sets.

use super::*;
use crate::resources::{Pod, PodPhase, StringMap};
use std::sync::Arc;

/// Pods as a tiny API server keeps them.
#[derive(Default)]
pub(super) struct FakeKube {
    pub(super) pods: BTreeMap<String, Pod>,
    uid_counter: u64,
    resource_version_counter: u64,
}

impl FakeKube {
    fn bump(&mut self) -> u64 {
        self.resource_version_counter += 1;
        self.resource_version_counter
    }

    /// Answer one call as the API server would, at `now_ms`.
    pub(super) fn apply(&mut self, now_ms: u64, request: &KubeRequest) -> KubeResult {
        match request {
            KubeRequest::ListPods { selector } => {
                let matches = |pod: &&Pod| selector.iter().all(|(k, v)| pod.label(k) == Some(v));
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
                if self.pods.contains_key(&template.name) {
                    return Err(KubeError::Conflict);
                }
                self.uid_counter += 1;
                let pod = Pod {
                    name: template.name.clone(),
                    uid: self.uid_counter,
                    labels: template.labels.clone(),
                    annotations: template.annotations.clone(),
                    image: template.image.clone(),
                    env: template.env.clone(),
                    phase: PodPhase::Pending,
                    node: None,
                    created_ms: now_ms,
                    resource_version: self.bump(),
                    restart_count: 0,
                    deletion_ms: None,
                    ready: false,
                };
                self.pods.insert(pod.name.clone(), pod.clone());
                Ok(KubeReply::Pod(Arc::new(pod)))
            }
            KubeRequest::DeletePod { name } => self
                .pods
                .remove(name)
                .map(|_| KubeReply::Deleted)
                .ok_or(KubeError::NotFound),
            KubeRequest::AnnotatePod {
                name,
                set,
                remove,
                resource_version,
            } => {
                let version = self.bump();
                let pod = self.pods.get_mut(name).ok_or(KubeError::NotFound)?;
                if resource_version.is_some_and(|expected| expected != pod.resource_version) {
                    return Err(KubeError::Conflict);
                }
                pod.annotations.extend(set.clone());
                for key in remove {
                    pod.annotations.remove(key);
                }
                pod.resource_version = version;
                Ok(KubeReply::Pod(Arc::new(pod.clone())))
            }
            other => panic!("safe never issues {}", other.verb()),
        }
    }

    /// Change a pod's status (a kubelet update): bumps the resourceVersion.
    pub(super) fn update(&mut self, name: &str, change: impl FnOnce(&mut Pod)) {
        let version = self.bump();
        let pod = self
            .pods
            .get_mut(name)
            .expect("tests update pods that exist");
        change(pod);
        pod.resource_version = version;
    }
}

/// The server's agent registry, with what the plugin asked of it.
#[derive(Default)]
pub(super) struct FakeServer {
    pub(super) agents: BTreeMap<String, AgentMetadata>,
    pub(super) disabled: Vec<String>,
    pub(super) deleted: Vec<String>,
}

impl ServerApi for FakeServer {
    fn list_agents(&mut self) -> Vec<AgentMetadata> {
        self.agents.values().cloned().collect()
    }

    fn disable_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            if let Some(agent) = self.agents.get_mut(id) {
                agent.config_state = ConfigState::Disabled;
                self.disabled.push(id.clone());
            }
        }
    }

    fn delete_agents(&mut self, agent_ids: &[String]) {
        for id in agent_ids {
            if self.agents.remove(id).is_some() {
                self.deleted.push(id.clone());
            }
        }
    }
}

/// One allocator with its fake world; Kubernetes calls wait in `queue` until answered.
pub(super) struct Driver {
    pub(super) allocator: Safe,
    pub(super) kube: FakeKube,
    pub(super) server: FakeServer,
    pub(super) queue: VecDeque<(CallId, KubeRequest)>,
    pub(super) finished: Vec<RequestId>,
    pub(super) decisions: Vec<Decision>,
    pub(super) settings: ClusterProfile,
    pub(super) now_ms: u64,
    sent: Vec<RequestId>,
    request_counter: u64,
}

impl Driver {
    pub(super) fn new(settings: ClusterProfile) -> Driver {
        Driver {
            allocator: Safe::new(1),
            kube: FakeKube::default(),
            server: FakeServer::default(),
            queue: VecDeque::new(),
            finished: Vec::new(),
            decisions: Vec::new(),
            settings,
            now_ms: 0,
            sent: Vec::new(),
            request_counter: 0,
        }
    }

    /// Reuse on, idle timeout 5 minutes, auto-register timeout 10 minutes.
    pub(super) fn with_reuse() -> Driver {
        Driver::new(ClusterProfile {
            enable_agent_reuse: true,
            ..ClusterProfile::default()
        })
    }

    /// The server crashed: a new process with an empty allocator; old calls are lost.
    pub(super) fn restart_server(&mut self, process_id: u64) {
        self.allocator = Safe::new(process_id);
        self.queue.clear();
    }

    fn absorb(&mut self, out: Outbox) {
        self.queue.extend(out.calls);
        for id in out.finished {
            assert!(
                self.sent.contains(&id),
                "request {id:?} finished but was never sent"
            );
            assert!(
                !self.finished.contains(&id),
                "request {id:?} finished twice"
            );
            self.finished.push(id);
        }
        self.decisions.extend(out.decisions);
    }

    pub(super) fn send(&mut self, request: PluginRequest) -> RequestId {
        self.request_counter += 1;
        let id = RequestId(self.request_counter);
        self.sent.push(id);
        let mut out = Outbox::default();
        self.allocator
            .handle_request(self.now_ms, id, request, &mut self.server, &mut out);
        self.absorb(out);
        id
    }

    pub(super) fn cluster_properties(&self) -> StringMap {
        self.settings.to_properties()
    }

    pub(super) fn create_agent(&mut self, job_id: u64, environment: Option<&str>) -> RequestId {
        let request = CreateAgentRequest {
            auto_register_key: format!("key-{job_id}"),
            elastic_agent_profile_properties: profile(),
            cluster_profile_properties: self.cluster_properties(),
            environment: environment.map(str::to_owned),
            job_identifier: job(job_id),
        };
        self.send(PluginRequest::CreateAgent(request))
    }

    pub(super) fn ping(&mut self) -> RequestId {
        let all_cluster_profile_properties = vec![self.cluster_properties()];
        self.send(PluginRequest::ServerPing(ServerPingRequest {
            all_cluster_profile_properties,
        }))
    }

    /// The job completes at the server (the agent goes idle) and the plugin is told.
    pub(super) fn complete(&mut self, pod: &str, job_id: u64) -> RequestId {
        self.set_agent(pod, AgentState::Idle);
        let request = JobCompletionRequest {
            elastic_agent_id: pod.to_owned(),
            job_identifier: job(job_id),
            elastic_agent_profile_properties: profile(),
            cluster_profile_properties: self.cluster_properties(),
        };
        self.send(PluginRequest::JobCompletion(request))
    }

    /// The server asks whether `pod`'s agent should take the job; on true the agent builds.
    pub(super) fn should_assign(
        &mut self,
        pod: &str,
        job_id: u64,
        environment: Option<&str>,
    ) -> bool {
        let agent = self
            .server
            .agents
            .get(pod)
            .cloned()
            .unwrap_or(AgentMetadata {
                agent_id: pod.to_owned(),
                agent_state: AgentState::Idle,
                build_state: BuildState::Idle,
                config_state: ConfigState::Enabled,
            });
        let request = ShouldAssignWorkRequest {
            agent,
            environment: environment.map(str::to_owned),
            elastic_agent_profile_properties: profile(),
            cluster_profile_properties: self.cluster_properties(),
            job_identifier: job(job_id),
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

    /// Answer the oldest waiting call with what the fake API does; false if none waits.
    pub(super) fn answer_next(&mut self) -> bool {
        let Some((call, request)) = self.queue.pop_front() else {
            return false;
        };
        let result = self.kube.apply(self.now_ms, &request);
        self.deliver(call, result);
        true
    }

    fn deliver(&mut self, call: CallId, result: KubeResult) {
        let mut out = Outbox::default();
        self.allocator
            .handle_kube(self.now_ms, call, result, &mut self.server, &mut out);
        self.absorb(out);
    }

    /// Answer every call, including the calls answers lead to.
    pub(super) fn settle(&mut self) {
        let mut answered_count = 0;
        while self.answer_next() {
            answered_count += 1;
            assert!(answered_count < 10_000, "the allocator keeps issuing calls");
        }
    }

    /// The pod is Running and its agent registered, idle and enabled.
    pub(super) fn register(&mut self, pod: &str) {
        self.kube.update(pod, |pod| pod.phase = PodPhase::Running);
        let agent = AgentMetadata {
            agent_id: pod.to_owned(),
            agent_state: AgentState::Idle,
            build_state: BuildState::Idle,
            config_state: ConfigState::Enabled,
        };
        self.server.agents.insert(pod.to_owned(), agent);
    }

    pub(super) fn set_agent(&mut self, pod: &str, state: AgentState) {
        if let Some(agent) = self.server.agents.get_mut(pod) {
            agent.agent_state = state;
            agent.build_state = match state {
                AgentState::Building => BuildState::Building,
                AgentState::Idle => BuildState::Idle,
                _ => BuildState::Unknown,
            };
        }
    }

    /// Pods in the fake API, by name.
    pub(super) fn pod_names(&self) -> Vec<String> {
        self.kube.pods.keys().cloned().collect()
    }

    /// Decisions with this code.
    pub(super) fn decided(&self, code: &str) -> Vec<&Decision> {
        self.decisions
            .iter()
            .filter(|decision| decision.code == code)
            .collect()
    }

    /// Create one pod for `job_id`, register it, run the job on it and complete it, so the
    /// pod ends idle (with reuse on). Returns the pod name.
    pub(super) fn idle_pod_after_job(&mut self, job_id: u64, environment: Option<&str>) -> String {
        self.create_agent(job_id, environment);
        self.settle();
        let pod = self.decided("create").last().and_then(|d| d.pod.clone());
        let pod = pod.expect("an empty cluster gets a pod for the first job");
        self.register(&pod);
        assert!(
            self.should_assign(&pod, job_id, environment),
            "a new pod takes its own job"
        );
        self.complete(&pod, job_id);
        self.settle();
        pod
    }
}

/// The elastic profile every test job uses.
pub(super) fn profile() -> StringMap {
    StringMap::from([(
        pod_spec::PROFILE_IMAGE.to_owned(),
        "gocd/gocd-agent:v25.1.0".to_owned(),
    )])
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
