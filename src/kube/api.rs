//! The API server's store and request handling.

use super::kubelet::KubeletTimers;
use super::listings::{Listings, naive_list};
use super::{KubeEffects, KubeSettings};
use crate::component::{Component, Random};
use crate::engine::SimTime;
use crate::ids::SortedNameMap;
use crate::resources::{
    KubeError, KubeReply, KubeRequest, KubeResult, Lease, LeaseSpec, Pod, PodList, PodPhase,
    PodTemplate, StringMap,
};
use crate::trace::{Actor, Record};
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// A request to the API server: the call and the client that makes it.
#[derive(Clone, Debug)]
pub struct ApiRequest {
    /// Who calls (the trace names the writer of a pod or a Lease).
    pub actor: Actor,
    /// The call.
    pub request: KubeRequest,
}

/// What one request produced: the reply and what the write set going in the cluster.
#[derive(Debug, Default)]
pub struct ApiOutput {
    /// The reply to the request; `None` only before the request is handled.
    pub reply: Option<KubeResult>,
    /// The write's effects: the kubelets' reaction (a created pod scheduled and its start-up
    /// timer, a deleted pod's grace timer, agents killed) and the trace records.
    pub effects: KubeEffects,
}

/// The API server as one component, borrowed from the [`KubeApi`] whose store it keeps:
/// `kube.api_server().handle(…)`. It answers each request at once (latency, errors,
/// partitions and outages are the caller's) and has no timers of its own, so
/// `next_deadline` is always `None`: the timers a write sets (a created pod's start-up, a
/// deleted pod's grace period) belong to the kubelets, whose `next_deadline` counts them.
pub struct ApiServer<'a> {
    cluster: &'a mut KubeApi,
}

impl Component for ApiServer<'_> {
    type Input = ApiRequest;
    type Output = ApiOutput;

    fn handle(
        &mut self,
        now_ms: u64,
        input: ApiRequest,
        random: &mut dyn Random,
        out: &mut ApiOutput,
    ) {
        let now = SimTime::from_ms(now_ms);
        let fx = &mut out.effects;
        let before = self.cluster.resource_version;
        let reply = self
            .cluster
            .serve(now, input.actor, input.request, random, fx);
        self.cluster.check_store_after(before);
        out.reply = Some(reply);
    }

    /// Always `None`: the API server has no timers.
    fn next_deadline(&self) -> Option<u64> {
        None
    }
}

/// A Kubernetes node: a name and a number of pod slots.
#[derive(Debug)]
pub(super) struct Node {
    pub(super) name: String,
    pub(super) alive: bool,
    pub(super) used: u32,
}

/// Per-pod kubelet state that the API does not show.
#[derive(Debug)]
pub(super) struct PodState {
    /// Shared with the clients that were handed a copy; written through `Arc::make_mut`.
    pub(super) pod: Arc<Pod>,
    pub(super) container_running: bool,
    pub(super) backoff_ms: u64,
    /// The pod was scheduled and its start-up delay has passed at least once.
    pub(super) started: bool,
    /// `PodUnschedulable` was already recorded for this pod.
    pub(super) reported_unschedulable: bool,
}

/// The simulated API server and kubelets.
pub struct KubeApi {
    pub(super) settings: KubeSettings,
    /// Found by hash, listed in name order (`ids::SortedNameMap`).
    pub(super) pods: SortedNameMap<PodState>,
    pub(super) uid_to_name: BTreeMap<u64, String>,
    pub(super) nodes: Vec<Node>,
    /// Pods waiting for a free slot, oldest first.
    pub(super) unscheduled: VecDeque<String>,
    /// The kubelet timers asked for and not fired, for `Kubelets::next_deadline`.
    pub(super) kubelet_timers: KubeletTimers,
    /// Every selector's listing, kept in step with `pods` by [`KubeApi::publish`].
    listings: Listings,
    pub(super) leases: BTreeMap<String, Lease>,
    pub(super) resource_version: u64,
    next_uid: u64,
}

impl KubeApi {
    /// An API server for the cluster of `settings`: its nodes, all alive and empty, no pods.
    pub fn new(settings: KubeSettings) -> KubeApi {
        let nodes = (0..settings.nodes)
            .map(|i| Node {
                name: format!("node-{i}"),
                alive: true,
                used: 0,
            })
            .collect();
        KubeApi {
            settings,
            pods: SortedNameMap::default(),
            uid_to_name: BTreeMap::new(),
            nodes,
            unscheduled: VecDeque::new(),
            kubelet_timers: KubeletTimers::default(),
            listings: Listings::default(),
            leases: BTreeMap::new(),
            resource_version: 0,
            next_uid: 1,
        }
    }

    pub(super) fn bump(&mut self) -> u64 {
        self.resource_version += 1;
        self.resource_version
    }

    /// Bring the listings in step with the store's copy of pod `name`: called after every
    /// write to a pod (create, update, removal).
    pub(super) fn publish(&mut self, name: &str) {
        let pod = self.pods.get(name).map(|state| &state.pod);
        self.listings.publish(name, pod);
    }

    /// Every pod, by name.
    pub(crate) fn pods(&self) -> impl Iterator<Item = &Pod> {
        self.pods.values().map(|state| state.pod.as_ref())
    }

    /// One pod by name.
    pub(crate) fn pod(&self, name: &str) -> Option<&Pod> {
        self.pods.get(name).map(|state| state.pod.as_ref())
    }

    /// True while the pod's agent container is running.
    pub(crate) fn container_running(&self, name: &str) -> bool {
        self.pods
            .get(name)
            .is_some_and(|state| state.container_running)
    }

    /// The current Lease, if any.
    pub fn lease(&self, name: &str) -> Option<&Lease> {
        self.leases.get(name)
    }

    /// Every Lease, by name.
    pub fn leases(&self) -> impl Iterator<Item = &Lease> {
        self.leases.values()
    }

    /// The API server, as a [`Component`].
    pub fn api_server(&mut self) -> ApiServer<'_> {
        ApiServer { cluster: self }
    }

    /// Answer one API call from `actor`.
    fn serve(
        &mut self,
        now: SimTime,
        actor: Actor,
        request: KubeRequest,
        kubelet_random: &mut dyn Random,
        fx: &mut KubeEffects,
    ) -> KubeResult {
        match request {
            KubeRequest::ListPods { selector } => Ok(KubeReply::Pods(self.list_pods(&selector))),
            KubeRequest::GetPod { name } => self
                .pods
                .get(&name)
                .map(|s| KubeReply::Pod(s.pod.clone()))
                .ok_or(KubeError::NotFound),
            KubeRequest::CreatePod { template } => {
                self.create_pod(now, actor, template, kubelet_random, fx)
            }
            KubeRequest::DeletePod { name } => {
                if self.delete_pod(now, &name, actor, kubelet_random, fx) {
                    Ok(KubeReply::Deleted)
                } else {
                    Err(KubeError::NotFound)
                }
            }
            KubeRequest::AnnotatePod {
                name,
                set,
                remove,
                resource_version,
            } => self.annotate(&name, set, &remove, resource_version),
            KubeRequest::GetLease { name } => self
                .leases
                .get(&name)
                .cloned()
                .map(KubeReply::Lease)
                .ok_or(KubeError::NotFound),
            KubeRequest::CreateLease { name, spec } => self.create_lease(actor, name, spec, fx),
            KubeRequest::UpdateLease {
                name,
                spec,
                resource_version,
            } => self.update_lease(actor, name, spec, resource_version, fx),
            KubeRequest::DeleteLease { name } => self.delete_lease(actor, &name, fx),
        }
    }

    /// The pods `selector` picks, from the kept listing (checked against the store in debug
    /// builds).
    fn list_pods(&mut self, selector: &StringMap) -> PodList {
        let list = self
            .listings
            .list(selector, self.pods.values().map(|s| &s.pod));
        debug_assert_eq!(
            list,
            naive_list(selector, self.pods.values().map(|s| &s.pod)),
            "a kept listing differs from the store"
        );
        list
    }

    /// Create a Pending pod from `template` (a name in use is a conflict) and try to
    /// schedule the pending pods.
    fn create_pod(
        &mut self,
        now: SimTime,
        actor: Actor,
        template: PodTemplate,
        kubelet_random: &mut dyn Random,
        fx: &mut KubeEffects,
    ) -> KubeResult {
        if self.pods.contains_key(&template.name) {
            return Err(KubeError::Conflict);
        }
        let uid = self.next_uid;
        self.next_uid += 1;
        let rv = self.bump();
        let pod = Pod {
            name: template.name.clone(),
            uid,
            labels: Arc::new(template.labels),
            annotations: template.annotations,
            image: template.image,
            env: Arc::new(template.env),
            phase: PodPhase::Pending,
            node: None,
            created_ms: now.as_ms(),
            resource_version: rv,
            restart_count: 0,
            deletion_ms: None,
            ready: false,
        };
        self.uid_to_name.insert(uid, pod.name.clone());
        let pod = Arc::new(pod);
        let reply = Arc::clone(&pod);
        let state = PodState {
            pod,
            container_running: false,
            backoff_ms: 0,
            started: false,
            reported_unschedulable: false,
        };
        self.pods.insert(template.name.clone(), state);
        self.publish(&template.name);
        let description = (self.settings.describe_pod)(&reply);
        fx.records.push(Record::PodCreated {
            pod: template.name.clone(),
            job_label: description.job_label,
            config: description.config,
            by: actor,
        });
        self.unscheduled.push_back(template.name);
        self.schedule_pending(now, kubelet_random, fx);
        Ok(KubeReply::Pod(reply))
    }

    fn annotate(
        &mut self,
        name: &str,
        set: StringMap,
        remove: &[String],
        resource_version: Option<u64>,
    ) -> KubeResult {
        let current = self
            .pods
            .get(name)
            .ok_or(KubeError::NotFound)?
            .pod
            .resource_version;
        if resource_version.is_some_and(|rv| rv != current) {
            return Err(KubeError::Conflict);
        }
        let rv = self.bump();
        let state = self.pods.get_mut(name).expect("checked above");
        Arc::make_mut(&mut state.pod).annotations.extend(set);
        for key in remove {
            Arc::make_mut(&mut state.pod).annotations.remove(key);
        }
        Arc::make_mut(&mut state.pod).resource_version = rv;
        let reply = state.pod.clone();
        self.publish(name);
        Ok(KubeReply::Pod(reply))
    }

    fn create_lease(
        &mut self,
        actor: Actor,
        name: String,
        spec: LeaseSpec,
        fx: &mut KubeEffects,
    ) -> KubeResult {
        if self.leases.contains_key(&name) {
            return Err(KubeError::Conflict);
        }
        let rv = self.bump();
        fx.records
            .push(lease_record(actor, "create", &spec, None, None, rv));
        let lease = Lease {
            name: name.clone(),
            spec,
            resource_version: rv,
        };
        self.leases.insert(name, lease.clone());
        Ok(KubeReply::Lease(lease))
    }

    fn update_lease(
        &mut self,
        actor: Actor,
        name: String,
        spec: LeaseSpec,
        resource_version: u64,
        fx: &mut KubeEffects,
    ) -> KubeResult {
        let current = self
            .leases
            .get(&name)
            .ok_or(KubeError::NotFound)?
            .resource_version;
        if current != resource_version {
            return Err(KubeError::Conflict);
        }
        let rv = self.bump();
        fx.records.push(lease_record(
            actor,
            "update",
            &spec,
            Some(current),
            Some(resource_version),
            rv,
        ));
        let lease = Lease {
            name: name.clone(),
            spec,
            resource_version: rv,
        };
        self.leases.insert(name, lease.clone());
        Ok(KubeReply::Lease(lease))
    }

    fn delete_lease(&mut self, actor: Actor, name: &str, fx: &mut KubeEffects) -> KubeResult {
        let old = self.leases.remove(name).ok_or(KubeError::NotFound)?;
        let rv = self.bump();
        let spec = LeaseSpec {
            lease_transitions: old.spec.lease_transitions,
            ..LeaseSpec::default()
        };
        fx.records.push(lease_record(
            actor,
            "delete",
            &spec,
            Some(old.resource_version),
            None,
            rv,
        ));
        Ok(KubeReply::Deleted)
    }
}

fn lease_record(
    actor: Actor,
    verb: &str,
    spec: &LeaseSpec,
    rv_current: Option<u64>,
    rv_sent: Option<u64>,
    rv_new: u64,
) -> Record {
    Record::LeaseWritten {
        by: actor,
        verb: verb.to_owned(),
        holder: spec.holder_identity.clone(),
        transitions: spec.lease_transitions,
        rv_current,
        rv_sent,
        rv_new,
    }
}
