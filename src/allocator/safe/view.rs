//! What `safe` knows about pods: the last copy Kubernetes returned, plus this process's own
//! facts (claims and assignments it made, pods it is deleting), and the predicates every
//! decision is built from.

use super::super::messages::{AgentList, AgentMetadata, AgentState, BuildState, ConfigState};
use super::super::pod_spec::keys as pod_keys;
use super::super::settings::ClusterProfile;
use super::merge::MergeBase;
use super::pod_table::PodTable;
use crate::resources::{Pod, PodPhase};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Annotation keys `safe` writes on its pods (besides the config hash).
pub(crate) mod annotation {
    /// The job id an idle or new pod is reserved for.
    pub(crate) const CLAIM_JOB_ID: &str = "elasticsim.io/claim-job-id";
    /// When that reservation lapses, in simulated milliseconds.
    pub(crate) const CLAIM_DEADLINE_MS: &str = "elasticsim.io/claim-deadline-ms";
    /// When the pod's agent last became idle, in simulated milliseconds.
    pub(crate) const IDLE_SINCE_MS: &str = "elasticsim.io/idle-since-ms";
    /// The job the pod's agent was last given (informational, for people reading pods).
    pub(crate) const ASSIGNED_JOB_ID: &str = "elasticsim.io/assigned-job-id";
}

/// A reservation of one pod for one job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Claim {
    pub(crate) job_id: u64,
    pub(crate) deadline_ms: u64,
}

impl Claim {
    /// The claim written on a pod, if its annotations hold a well-formed one.
    pub(crate) fn from_pod(pod: &Pod) -> Option<Claim> {
        let job_id = pod.annotation(annotation::CLAIM_JOB_ID)?.parse().ok()?;
        let deadline_ms = pod
            .annotation(annotation::CLAIM_DEADLINE_MS)?
            .parse()
            .ok()?;
        Some(Claim {
            job_id,
            deadline_ms,
        })
    }
}

/// One pod as this process sees it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PodRecord {
    /// The newest copy Kubernetes returned (highest resourceVersion), shared with the
    /// answer it came in. Replaced only through `take_newer`, which keeps the two parsed
    /// annotations below in step.
    pub(crate) pod: Arc<Pod>,
    /// The claim annotation of `pod`, parsed once per copy (decisions read it for every pod
    /// at every list).
    annotated_claim: Option<Claim>,
    /// The idle-since annotation of `pod`, parsed once per copy.
    annotated_idle_since_ms: Option<u64>,
    /// A claim this process wrote or is writing; it wins over the annotation, which may lag.
    pub(crate) claim_overlay: Option<Claim>,
    /// The job should-assign-work gave this pod, until job-completion (or the server shows
    /// the agent idle again).
    pub(crate) running_job: Option<u64>,
    /// Idle-since this process set (job-completion, first idle sighting); wins over the
    /// annotation.
    pub(crate) idle_since_overlay: Option<u64>,
    /// Decided to delete: never claimed, never assigned again.
    pub(crate) retired: bool,
    /// A DeletePod call for it is unanswered.
    pub(crate) delete_in_flight: bool,
    /// The container restarts a list showed that was issued once this process knew the
    /// agent registered (it gave it a job, or saw it building): a later restart killed the
    /// registered go-agent, and its successor cannot register with the used key.
    pub(crate) restarts_when_registered: Option<u32>,
}

impl PodRecord {
    pub(crate) fn new(pod: Arc<Pod>) -> PodRecord {
        PodRecord {
            annotated_claim: Claim::from_pod(&pod),
            annotated_idle_since_ms: annotated_idle_since_ms(&pod),
            pod,
            claim_overlay: None,
            running_job: None,
            idle_since_overlay: None,
            retired: false,
            delete_in_flight: false,
            restarts_when_registered: None,
        }
    }

    /// Take in a copy of the same pod name: a new object (another uid) starts a new record;
    /// otherwise the copy with the higher resourceVersion wins (an equal one is the same
    /// content).
    pub(super) fn take_newer(&mut self, pod: Arc<Pod>) {
        if self.pod.uid != pod.uid {
            *self = PodRecord::new(pod);
        } else if pod.resource_version > self.pod.resource_version {
            self.annotated_claim = Claim::from_pod(&pod);
            self.annotated_idle_since_ms = annotated_idle_since_ms(&pod);
            self.pod = pod;
        }
    }

    /// The claim on the pod: this process's, else the annotation (which may lag).
    pub(crate) fn claim(&self) -> Option<Claim> {
        self.claim_overlay.or(self.annotated_claim)
    }

    /// The pod's config hash annotation.
    pub(crate) fn config_hash(&self) -> Option<&str> {
        self.pod.annotation(pod_keys::CONFIG_HASH)
    }

    /// The pod's GoCD environment (label), if any.
    pub(crate) fn environment(&self) -> Option<&str> {
        self.pod.label(pod_keys::ENVIRONMENT)
    }

    /// Idle-since: this process's value, else the annotation.
    pub(crate) fn idle_since_ms(&self) -> Option<u64> {
        self.idle_since_overlay.or(self.annotated_idle_since_ms)
    }

    /// The pod's copy carries an idle-since annotation.
    pub(crate) fn carries_idle_since(&self) -> bool {
        self.annotated_idle_since_ms.is_some()
    }

    /// The idle-since this process set that the pod does not carry yet (its write failed or
    /// was never made); a restarted process would read the annotation instead.
    pub(crate) fn unwritten_idle_since_ms(&self) -> Option<u64> {
        let overlay = self.idle_since_overlay?;
        let unwritten = !self.retired && self.annotated_idle_since_ms != Some(overlay);
        unwritten.then_some(overlay)
    }

    /// The pod's phase is terminal: its container will never serve a job.
    pub(crate) fn is_terminated(&self) -> bool {
        matches!(self.pod.phase, PodPhase::Failed | PodPhase::Succeeded)
    }

    /// The agent container restarted: the go-agent came back with a used auto-register key
    /// (or a fresh identity), so the pod cannot serve jobs reliably any more.
    pub(crate) fn container_restarted(&self) -> bool {
        self.pod.restart_count > 0
    }

    /// No build can run in the pod any more, whatever the server shows: its phase is
    /// terminal, or its registered go-agent's container restarted since (the new one cannot
    /// register with the used key). Deleting it kills nothing.
    pub(crate) fn build_died(&self) -> bool {
        let restarted = (self.restarts_when_registered).is_some_and(|n| self.pod.restart_count > n);
        restarted || self.is_terminated()
    }
}

/// The pods of this plugin, plus the jobs that already have an agent.
#[derive(Debug, Default)]
pub(crate) struct View {
    pub(crate) pods: PodTable,
    /// Pods this process deleted: a list answered late must not bring them back.
    pub(crate) deleted: BTreeSet<String>,
    /// Jobs should-assign-work said true for, or that completed: a claim for one of them is
    /// spent, and a create-agent for one of them must not make a pod.
    pub(crate) served_jobs: BTreeSet<u64>,
    /// Jobs this process received a create-agent for. A claim written by an older process
    /// counts only once its job asks again (the server resends create-agent for every
    /// waiting job after a restart): a claim for a job served before the restart would
    /// otherwise pin an idle pod until the claim's deadline.
    pub(crate) requested_jobs: BTreeSet<u64>,
    /// Idle starts of job-completions for pods not in the view yet (right after a restart,
    /// before a list succeeded): applied when the next list shows the pod, or the pod would
    /// keep the idle start of an earlier idle period that its annotation may still carry.
    pub(crate) early_idle: BTreeMap<String, u64>,
    /// Pods whose annotated idle start this process does not trust: their agent was seen
    /// building at the server on a job this process did not give it (an older process did,
    /// and the writes that would have removed the idle-since may have been lost in an API
    /// cut before the restart), or this process started inside an API cut and its first list
    /// showed them (the older process may have lost writes up to its crash). Each one's idle
    /// clock starts anew when it is next seen idle (`redate_idle` in `ping.rs`;
    /// explore/elastic seeds 11557 and 683).
    pub(crate) seen_building: BTreeSet<String>,
    /// A Kubernetes call of this process failed (timeout or server error) before any list
    /// succeeded: it started inside an API cut.
    pub(crate) started_in_cut: bool,
    /// A list succeeded in this process.
    pub(crate) listed: bool,
    /// The last list merged, and the pods taken in or dropped outside a merge since: what
    /// an incremental merge compares the next list with (`merge.rs`).
    pub(super) merged: MergeBase,
    /// Pods known registered (given a job, seen building) since the last list was issued,
    /// whose container no list has dated yet.
    pub(crate) registered_unlisted: BTreeSet<String>,
    /// Such pods known before the list in flight was issued: its merge dates their container
    /// (`PodRecord::restarts_when_registered`). Lists run one at a time (the lock).
    pub(crate) awaiting_list: BTreeSet<String>,
}

impl View {
    /// `job_id` was given to the pod `name`: the job is served, and the agent registered.
    pub(crate) fn served(&mut self, name: &str, job_id: u64) {
        self.served_jobs.insert(job_id);
        self.known_registered(name);
    }

    /// The pod's agent is registered (this process gave it a job, or saw it building): the
    /// next list issued dates its container.
    pub(crate) fn known_registered(&mut self, name: &str) {
        let dated = (self.pods.get(name)).is_some_and(|r| r.restarts_when_registered.is_some());
        if !dated {
            self.registered_unlisted.insert(name.to_owned());
        }
    }

    /// A list is issued: it shows every pod known registered so far as it is since.
    pub(crate) fn list_issued(&mut self) {
        let known = std::mem::take(&mut self.registered_unlisted);
        self.awaiting_list.extend(known);
    }

    /// After a merge: the restarts of pods known registered before the list was issued.
    pub(crate) fn date_registered_containers(&mut self) {
        for name in std::mem::take(&mut self.awaiting_list) {
            self.pods.update(&name, |record| {
                record
                    .restarts_when_registered
                    .get_or_insert(record.pod.restart_count);
            });
        }
    }

    /// Take in one pod copy (from a get, create or annotate answer). A terminating copy
    /// removes the pod from the view, as a list would.
    pub(crate) fn observe(&mut self, pod: Arc<Pod>) {
        if self.deleted.contains(&pod.name) {
            return;
        }
        self.merged.touched.insert(pod.name.clone());
        if pod.is_terminating() {
            self.pods.remove(&pod.name);
            return;
        }
        self.pods.take_in(pod);
    }

    /// The first list of a process that started inside an API cut: no idle start a pod
    /// carries from before is trusted (`seen_building`).
    pub(crate) fn distrust_after_cut_start(&mut self) {
        if std::mem::replace(&mut self.listed, true) || !self.started_in_cut {
            return;
        }
        let suspects: Vec<String> = (self.pods.iter())
            .filter(|(_, record)| {
                record.idle_since_overlay.is_none()
                    && record.carries_idle_since()
                    && record.running_job.is_none()
            })
            .map(|(name, _)| name.clone())
            .collect();
        self.seen_building.extend(suspects);
    }

    /// Give listed pods the idle starts of job-completions that came before they were listed
    /// (`early_idle`); a pod a list does not show is gone, and its idle start with it.
    pub(crate) fn apply_early_idle(&mut self) {
        if self.early_idle.is_empty() {
            return;
        }
        for (name, idle_since_ms) in std::mem::take(&mut self.early_idle) {
            self.pods.update(&name, |record| {
                if record.running_job.is_none() && record.idle_since_overlay.is_none() {
                    record.idle_since_overlay = Some(idle_since_ms);
                }
            });
        }
    }

    /// The server's agents for one decision, as listed now; the index of pods a decision
    /// looks at is brought up to date with them (`pod_table.rs`).
    pub(crate) fn agents(&mut self, listing: AgentList) -> Agents {
        for name in self.pods.set_agents(listing.clone()) {
            let building = listing
                .get(&name)
                .is_some_and(|agent| agent_is_building(agent));
            let ours = (self.pods.get(&name)).is_some_and(|record| record.running_job.is_some());
            if building {
                self.known_registered(&name);
            }
            if building && !ours {
                self.seen_building.insert(name);
            }
        }
        Agents { listing }
    }

    /// Every pod a decision made with `agents` can reap, mark idle, wait for, find reserved
    /// or reuse, in name order: all but the settled ones (healthy, Running and building at
    /// the server; `pod_table.rs`), which no such decision ever picks.
    pub(crate) fn unsettled_pods<'a>(
        &'a self,
        agents: &Agents,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.pods.unsettled(&agents.listing)
    }

    /// The idle pods with no idle-since yet, in name order (`walk_index.rs`).
    pub(crate) fn unmarked_idle_pods<'a>(
        &'a self,
        agents: &Agents,
    ) -> impl Iterator<Item = &'a String> {
        self.pods.unmarked_idle(&agents.listing)
    }

    /// The pods not settled whose claim (live or not) names `job`, in name order: every
    /// pod the search for the job's reserved pod can find.
    pub(crate) fn pods_claiming<'a>(
        &'a self,
        agents: &Agents,
        job: u64,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.pods.claiming(&agents.listing, job)
    }

    /// The agents `agents` lists whose pod the view does not have, in name order.
    pub(crate) fn agents_without_pods<'a>(
        &'a self,
        agents: &Agents,
    ) -> impl Iterator<Item = &'a String> {
        self.pods.agents_without_pods(&agents.listing)
    }

    /// The unsettled pods except the healthy ones whose agent is idle (`pod_table.rs`), in
    /// name order: every pod the reaper can reap, or that can be being deleted or not Running.
    pub(crate) fn troubled_pods<'a>(
        &'a self,
        agents: &Agents,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.pods.troubled(&agents.listing)
    }

    /// The healthy pods with an idle agent made for the job's config and environment
    /// (`pod_table.rs`): every pod reuse can pick for the job while rules 6 and 8 hold.
    pub(crate) fn idle_pods_for<'a>(
        &'a self,
        agents: &Agents,
        needs: JobNeeds<'_>,
    ) -> impl Iterator<Item = (&'a String, &'a PodRecord)> {
        self.pods
            .idle_like(&agents.listing, needs.config_hash, needs.environment)
    }

    /// The pod is gone from Kubernetes.
    pub(crate) fn forget(&mut self, name: &str) {
        self.seen_building.remove(name);
        self.merged.touched.insert(name.to_owned());
        self.pods.remove(name);
        self.deleted.insert(name.to_owned());
    }

    /// The claim on a pod that still reserves it at `now_ms`: not past its deadline, its job
    /// not served yet (a served job's reservation is spent, wherever it ran) and still
    /// asking this process for an agent.
    pub(crate) fn live_claim(&self, record: &PodRecord, now_ms: u64) -> Option<Claim> {
        let claim = record.claim()?;
        let live = claim.deadline_ms > now_ms
            && !self.served_jobs.contains(&claim.job_id)
            && self.requested_jobs.contains(&claim.job_id);
        live.then_some(claim)
    }

    /// Pods not yet Running, as the last list saw them (upstream's pending semantics:
    /// Pending, Failed, Succeeded and Unknown all count).
    pub(crate) fn pods_not_running_count(&self) -> usize {
        self.pods.not_running_count()
    }
}

/// The idle-since annotation on a pod, if well-formed.
fn annotated_idle_since_ms(pod: &Pod) -> Option<u64> {
    pod.annotation(annotation::IDLE_SINCE_MS)?.parse().ok()
}

/// The server's agents as listed for one decision.
#[derive(Debug)]
pub(crate) struct Agents {
    listing: AgentList,
}

impl Agents {
    /// The agent with this id, if the server has one.
    pub(crate) fn get(&self, agent_id: &str) -> Option<&AgentMetadata> {
        self.listing.get(agent_id).map(Arc::as_ref)
    }

    /// Every agent id, in order.
    #[cfg(test)]
    pub(crate) fn ids(&self) -> impl Iterator<Item = &str> {
        self.listing.iter().map(|agent| &*agent.agent_id)
    }
}

/// The agent is registered, enabled and idle at the server: the server could give it work.
pub(crate) fn agent_is_assignable(agent: &AgentMetadata) -> bool {
    agent.config_state == ConfigState::Enabled
        && agent.agent_state == AgentState::Idle
        && agent.build_state == BuildState::Idle
}

/// The server says the agent is building (not merely Missing, as every agent is right after
/// a server restart).
pub(crate) fn agent_is_building(agent: &AgentMetadata) -> bool {
    agent.agent_state == AgentState::Building || agent.build_state == BuildState::Building
}

/// The agent may be running a job, so deleting its pod could kill a build: the server
/// says Building, or says Missing (after a server restart, agents are Missing until they
/// ping again, builds included).
pub(crate) fn agent_may_be_building(agent: &AgentMetadata) -> bool {
    agent.agent_state == AgentState::Building
        || agent.agent_state == AgentState::Missing
        || agent.build_state == BuildState::Building
}

/// What a job needs from a pod to run there.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobNeeds<'a> {
    pub(crate) job_id: u64,
    pub(crate) config_hash: &'a str,
    pub(crate) environment: Option<&'a str>,
    /// The cluster profile's idle timeout (reuse candidates must not be about to expire).
    pub(crate) idle_timeout_ms: u64,
}

impl JobNeeds<'_> {
    /// The pod was made for the same config and the same environment as the job (rule 6:
    /// the server only offers a job to agents of its environment).
    pub(crate) fn matches(&self, record: &PodRecord) -> bool {
        record.config_hash() == Some(self.config_hash) && record.environment() == self.environment
    }
}

/// How long the unregistered pods of this process may take to register.
pub(crate) fn registration_deadline_ms(record: &PodRecord, settings: &ClusterProfile) -> u64 {
    record
        .pod
        .created_ms
        .saturating_add(settings.auto_register_timeout_ms)
}
