//! The cluster of the test kit: the simulator's own API server and kubelets ([`KubeApi`]),
//! not a second fake. Deletion is what the simulator does (and Kubernetes does): a pod whose
//! container runs gets a deletion timestamp and stays listed, Terminating, for the grace
//! period; a pod with no running container leaves at once.
//!
//! The test owns the clock. Kubelet timers (a deleted pod's grace period, a container's
//! restart back-off) fire when the driver's time passes them, before the next call is served
//! ([`Cluster::catch_up`]). Start-ups are the one exception: a created pod stays Pending, on
//! its node, until the test starts its container ([`Cluster::start`]) — as if its image pull
//! ended then — so a test decides when an agent can register.

use crate::component::Component;
use crate::engine::{Stream, StreamId};
use crate::kube::{
    ApiOutput, ApiRequest, KubeApi, KubeEffects, KubeSettings, KubeTimer, KubeletInput,
    PodDescription,
};
use crate::resources::{KubeReply, KubeRequest, KubeResult, Pod, PodPhase, PodTemplate, StringMap};
use crate::trace::Actor;
use std::collections::BTreeMap;

use crate::allocator::pod_spec;

/// `terminationGracePeriodSeconds` of the test cluster: the Kubernetes default, 30 s (the
/// plugin's pod specs leave it unset).
pub const GRACE_MS: u64 = 30_000;

/// The kubelet's first restart back-off (10 s in Kubernetes).
pub const RESTART_BACKOFF_MS: u64 = 10_000;

/// The API server and kubelets of a test, with the calls the allocator made.
pub struct Cluster {
    api: KubeApi,
    /// The verb of every call the allocator made, in order (`list-pods`, `create-pod`, …).
    pub served: Vec<&'static str>,
    /// Kubelet timers asked for and not fired, by (due ms, order asked).
    timers: BTreeMap<(u64, u64), KubeTimer>,
    /// Start-up timers held for the test, by pod uid: (due ms, timer).
    start_ups: BTreeMap<u64, (u64, KubeTimer)>,
    asked_count: u64,
    random: Stream,
}

impl Default for Cluster {
    fn default() -> Cluster {
        Cluster {
            api: KubeApi::new(settings()),
            served: Vec::new(),
            timers: BTreeMap::new(),
            start_ups: BTreeMap::new(),
            asked_count: 0,
            random: Stream::new(0, StreamId::Kubelet),
        }
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.api.pods().map(|pod| pod.name.as_str()).collect();
        f.debug_struct("Cluster")
            .field("pods", &names)
            .field("served", &self.served)
            .finish()
    }
}

/// Room for every pod a test creates; start-ups held for the test (zero delay, see the
/// module's text); grace and back-off as Kubernetes' defaults.
fn settings() -> KubeSettings {
    KubeSettings {
        nodes: 32,
        pods_per_node: 16,
        pod_startup_ms: (0, 0),
        pod_startup_sample_ms: Vec::new(),
        container_restart_backoff_ms: RESTART_BACKOFF_MS,
        describe_pod,
        termination_grace_ms: GRACE_MS,
        node_eviction_ms: 300_000,
    }
}

fn describe_pod(pod: &Pod) -> PodDescription {
    let job = pod.label(pod_spec::keys::JOB_ID);
    PodDescription {
        job_label: job.and_then(|id| id.parse().ok()),
        config: String::new(),
    }
}

impl Cluster {
    /// Answer one call of the allocator at `now_ms`, after the kubelet timers due by then.
    pub(crate) fn apply(&mut self, now_ms: u64, request: &KubeRequest) -> KubeResult {
        self.served.push(request.verb());
        self.call(now_ms, Actor::Allocator, request.clone())
    }

    fn call(&mut self, now_ms: u64, actor: Actor, request: KubeRequest) -> KubeResult {
        self.catch_up(now_ms);
        let mut out = ApiOutput::default();
        let input = ApiRequest { actor, request };
        self.api
            .api_server()
            .handle(now_ms, input, &mut self.random, &mut out);
        self.take(out.effects);
        out.reply.expect("the API server answers every call")
    }

    fn take(&mut self, mut fx: KubeEffects) {
        for (at, timer) in fx.timers.drain(..) {
            if let KubeTimer::PodStarted { uid } = timer {
                self.start_ups.insert(uid, (at.as_ms(), timer));
                continue;
            }
            self.timers.insert((at.as_ms(), self.asked_count), timer);
            self.asked_count += 1;
        }
    }

    fn kubelet(&mut self, now_ms: u64, input: KubeletInput) {
        let mut fx = KubeEffects::default();
        self.api
            .kubelets()
            .handle(now_ms, input, &mut self.random, &mut fx);
        self.take(fx);
    }

    /// Fire every kubelet timer due by `now_ms` (start-ups excepted), in due order.
    pub(crate) fn catch_up(&mut self, now_ms: u64) {
        while let Some(entry) = self.timers.first_entry() {
            let (due_ms, _) = *entry.key();
            if due_ms > now_ms {
                break;
            }
            let timer = entry.remove();
            self.kubelet(due_ms, KubeletInput::Timer(timer));
        }
    }

    /// The pod's container starts (its image pull is over): the pod goes Running and ready.
    /// No-op for a pod not scheduled yet, already started, or gone.
    pub(crate) fn start(&mut self, name: &str) {
        let Some(uid) = self.pod(name).map(|pod| pod.uid) else {
            return;
        };
        if let Some((due_ms, timer)) = self.start_ups.remove(&uid) {
            self.kubelet(due_ms, KubeletInput::Timer(timer));
        }
    }

    /// `kubectl delete pod` at `now_ms`: graceful if the container runs.
    #[cfg(test)]
    pub(crate) fn delete_externally(&mut self, now_ms: u64, name: &str) {
        self.catch_up(now_ms);
        let pod = name.to_owned();
        self.kubelet(now_ms, KubeletInput::DeletePod { pod });
    }

    /// The pod fails for good (phase Failed, container stopped, no restart).
    pub(crate) fn fail(&mut self, now_ms: u64, name: &str) {
        self.catch_up(now_ms);
        let pod = name.to_owned();
        self.kubelet(now_ms, KubeletInput::FailPod { pod });
    }

    /// The pod's container dies at `now_ms`; the kubelet restarts it after its back-off.
    #[cfg(test)]
    pub(crate) fn kill_container(&mut self, now_ms: u64, name: &str) {
        self.catch_up(now_ms);
        let pod = name.to_owned();
        self.kubelet(now_ms, KubeletInput::KillContainer { pod });
    }

    /// `kubectl annotate` at `now_ms`: a write that bumps the pod's resourceVersion and
    /// changes nothing the plugin reads.
    #[cfg(test)]
    pub(crate) fn annotate_externally(&mut self, now_ms: u64, name: &str) {
        let request = KubeRequest::AnnotatePod {
            name: name.to_owned(),
            set: StringMap::from([("example.com/touched".to_owned(), now_ms.to_string())]),
            remove: Vec::new(),
            resource_version: None,
        };
        let reply = self.call(now_ms, Actor::External, request);
        assert!(reply.is_ok(), "tests annotate pods that exist");
    }

    /// Create a pod the plugin would recognise (the `kind` label and the job-id label) at
    /// `created_ms`, as if by another process or before a restart, and bring it to `phase`
    /// (`Pending`: not started; `Running`: started; `Failed`: failed).
    pub fn put_agent_pod(&mut self, name: &str, job_id: u64, created_ms: u64, phase: PodPhase) {
        let labels = StringMap::from([
            (
                pod_spec::keys::KIND.to_owned(),
                pod_spec::keys::KIND_VALUE.to_owned(),
            ),
            (pod_spec::keys::JOB_ID.to_owned(), job_id.to_string()),
        ]);
        let template = PodTemplate {
            name: name.to_owned(),
            labels,
            annotations: StringMap::new(),
            image: "gocd/gocd-agent:v25.1.0".to_owned(),
            env: StringMap::new(),
        };
        let create = KubeRequest::CreatePod { template };
        let reply = self.call(created_ms, Actor::External, create);
        assert!(matches!(reply, Ok(KubeReply::Pod(_))), "{name} is new");
        match phase {
            PodPhase::Pending => {}
            PodPhase::Running => self.start(name),
            PodPhase::Failed => self.fail(created_ms, name),
            PodPhase::Succeeded | PodPhase::Unknown => {
                panic!("the test cluster cannot put {name} in {phase:?}")
            }
        }
    }

    /// One pod by name (Terminating pods included).
    pub fn pod(&self, name: &str) -> Option<&Pod> {
        self.api.pod(name)
    }

    /// Every pod listed, by name (Terminating pods included).
    pub(crate) fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.api.pods()
    }

    /// Pods listed (Terminating pods included).
    pub fn pod_count(&self) -> usize {
        self.api.pods().count()
    }

    /// Pods listed and not Terminating.
    #[cfg(test)]
    pub(crate) fn live_count(&self) -> usize {
        self.api.pods().filter(|pod| !pod.is_terminating()).count()
    }

    /// True while the pod is listed (Terminating included).
    #[cfg(test)]
    pub(crate) fn listed(&self, name: &str) -> bool {
        self.api.pod(name).is_some()
    }

    /// True once a delete of the pod was accepted: it is gone or Terminating.
    pub fn deleted(&self, name: &str) -> bool {
        self.api.pod(name).is_none_or(Pod::is_terminating)
    }

    /// True while the pod is listed with a deletion timestamp.
    pub fn terminating(&self, name: &str) -> bool {
        self.api.pod(name).is_some_and(Pod::is_terminating)
    }
}
