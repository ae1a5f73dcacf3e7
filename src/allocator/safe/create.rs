//! create-agent: decide on a fresh list, reuse an idle pod by claiming it, else create a pod
//! within the limits.

use super::view::{Agents, PodRecord, registration_deadline_ms};
use super::view::{Claim, JobNeeds, agent_is_assignable, annotation};
use super::{
    CLAIM_DURATION_MS, CreateTask, EXPIRY_MARGIN_MS, Pending, Safe, error_name, unexpected_reply,
};
use crate::ablation::Ablation;
use crate::allocator::{
    ClusterProfile, CreateAgentRequest, DecisionCode, Outbox, RequestId, ServerApi, pod_spec,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, PodPhase, StringMap};
use std::collections::{BTreeSet, VecDeque};

impl Safe {
    /// The request holds the lock: list pods first (rule 2: decide on fresh state, so an
    /// externally deleted or failed pod never suppresses a create, as in pr355).
    pub(super) fn start_create(
        &mut self,
        id: RequestId,
        request: CreateAgentRequest,
        out: &mut Outbox,
    ) {
        let job_id = request.job_identifier.job_id;
        self.release_rescheduled(&request.job_identifier);
        self.view.requested_jobs.insert(job_id);
        self.turns.asking(job_id);
        if self.view.served_jobs.contains(&job_id) {
            let text = format!("job {job_id} already has an agent: no pod created");
            out.decide(Some(job_id), None, DecisionCode::SkipAssigned, text);
            self.finish_locked(id, out);
            return;
        }
        let settings = ClusterProfile::from_properties(&request.cluster_profile_properties);
        // Rule 4: the canonical hash is the same in every process, so pods survive a restart
        // as reusable (pr355's `Map.of` JSON order made them foreign after a JVM restart).
        let config_hash = self.config_hash(
            &request.elastic_agent_profile_properties,
            &request.cluster_profile_properties,
            request.environment.as_deref(),
        );
        let task = CreateTask {
            request,
            settings,
            config_hash,
            candidates: VecDeque::new(),
            conflicted: BTreeSet::new(),
            awaiting_delete: None,
            then_own: None,
        };
        self.creates.insert(id, task);
        let selector = pod_spec::agent_selector();
        self.issue(
            KubeRequest::ListPods { selector },
            Pending::CreateList(id),
            out,
        );
    }

    pub(super) fn on_create_list(
        &mut self,
        now_ms: u64,
        id: RequestId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let task = self
            .creates
            .get(&id)
            .expect("a create list belongs to a live create");
        let (job_id, settings) = (task.request.job_identifier.job_id, task.settings.clone());
        match result {
            // Ablated rule 2: the list is ignored; the view is the last server-ping's.
            Ok(KubeReply::Pods(_)) if self.ablated(Ablation::FreshState) => {}
            Ok(KubeReply::Pods(pods)) => self.view.merge_list(pods),
            Ok(other) => unexpected_reply(&other, "a pod list"),
            Err(error) => {
                let text = format!(
                    "could not list pods ({}): no decision for job {job_id}; the server resends",
                    error_name(error)
                );
                out.decide(Some(job_id), None, DecisionCode::SkipError, text);
                // The server's agents still tell which agents build (`View::seen_building`).
                self.view.agents(server.agent_listing());
                self.finish_locked(id, out);
                return;
            }
        }
        let agents = self.view.agents(server.agent_listing());
        self.refresh_before_create(now_ms, &settings, &agents, server, out);
        // A should-assign-work may have given the job an agent while the list was in flight.
        if self.finish_if_served(id, job_id, out) {
            return;
        }
        // One pod per job: a pod made for this job that is being deleted (it can never serve)
        // is gone before the replacement is created.
        let job_label = job_id.to_string();
        let deleting = self.view.troubled_pods(&agents).find(|(_, record)| {
            record.delete_in_flight && record.pod.label(pod_spec::keys::JOB_ID) == Some(&job_label)
        });
        if let Some((name, _)) = deleting {
            let name = name.clone();
            let text = format!("pod {name} of job {job_id} is being deleted: waiting for it");
            out.decide(Some(job_id), Some(&name), DecisionCode::WaitDelete, text);
            let task = self.creates.get_mut(&id).expect("the create is still live");
            task.awaiting_delete = Some(name);
            return;
        }
        self.decide_create(now_ms, id, &agents, out);
    }

    /// The decision proper, on the list just merged and the server's agents as of now.
    fn decide_create(&mut self, now_ms: u64, id: RequestId, agents: &Agents, out: &mut Outbox) {
        let job_id = self.creates[&id].request.job_identifier.job_id;
        // A should-assign-work may have given the job an agent meanwhile.
        if self.finish_if_served(id, job_id, out) {
            return;
        }
        let task = self.creates.get(&id).expect("a deciding create is live");
        let needs = task.needs();
        let reserved = self.pod_reserved_for(now_ms, needs, &task.settings, agents);
        let candidates = match reserved {
            None if task.settings.enable_agent_reuse => {
                Some(self.reuse_candidates(now_ms, needs, agents))
            }
            _ => None,
        };
        if let Some((name, claim)) = reserved {
            let text = format!(
                "pod {name} is reserved for job {job_id} until t={} and can still serve it: \
                 no new pod",
                claim.deadline_ms
            );
            out.decide(Some(job_id), Some(&name), DecisionCode::SkipExisting, text);
            self.finish_locked(id, out);
            return;
        }
        if let Some(candidates) = candidates {
            let entry = self.creates.get_mut(&id).expect("the create is still live");
            entry.candidates = candidates;
        }
        self.claim_next_or_create(now_ms, id, out);
    }

    /// A delete answered: resume the create that waited for it. If the delete failed, the
    /// dead pod still exists: no replacement yet (one pod per job); the server's resend
    /// retries the delete first.
    pub(super) fn resume_create_after_delete(
        &mut self,
        now_ms: u64,
        name: &str,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let Some(holder) = self.lock_holder else {
            return;
        };
        let Some(task) = self.creates.get_mut(&holder) else {
            return;
        };
        if task.awaiting_delete.as_deref() != Some(name) {
            return;
        }
        task.awaiting_delete = None;
        let job_id = task.request.job_identifier.job_id;
        if self.view.pods.contains_key(name) {
            let text = format!(
                "pod {name} of job {job_id} could not be deleted yet: no replacement until the \
                 next create-agent"
            );
            out.decide(Some(job_id), Some(name), DecisionCode::SkipDeleting, text);
            self.finish_locked(holder, out);
            return;
        }
        let agents = self.view.agents(server.agent_listing());
        self.decide_create(now_ms, holder, &agents, out);
    }

    /// Finish the create if its job already has an agent (it must not get a pod).
    fn finish_if_served(&mut self, id: RequestId, job_id: u64, out: &mut Outbox) -> bool {
        if !self.view.served_jobs.contains(&job_id) {
            return false;
        }
        let text = format!("job {job_id} was assigned while deciding: no pod created");
        out.decide(Some(job_id), None, DecisionCode::SkipAssigned, text);
        self.finish_locked(id, out);
        true
    }

    /// A pod already reserved for this job (created for it, or claimed by an earlier request)
    /// that can still serve it. Rule 7: a pod of an older process that never registered can
    /// never serve, so its job label does not count.
    fn pod_reserved_for(
        &self,
        now_ms: u64,
        needs: JobNeeds<'_>,
        settings: &ClusterProfile,
        agents: &Agents,
    ) -> Option<(String, Claim)> {
        let mut claiming = self.view.pods_claiming(agents, needs.job_id);
        claiming.find_map(|(name, record)| {
            let claim = self.view.live_claim(record, now_ms)?;
            let serves = claim.job_id == needs.job_id
                && self.can_serve(now_ms, name, record, needs, settings, agents);
            serves.then(|| (name.clone(), claim))
        })
    }

    /// The pod can run the job: same config and environment, healthy container, and either
    /// idle and enabled at the server or still able to register (rule 6).
    fn can_serve(
        &self,
        now_ms: u64,
        name: &str,
        record: &PodRecord,
        needs: JobNeeds<'_>,
        settings: &ClusterProfile,
        agents: &Agents,
    ) -> bool {
        let healthy = !record.retired
            && !record.is_terminated()
            && !record.container_restarted()
            && record.running_job.is_none()
            && needs.matches(record);
        healthy
            && match agents.get(name) {
                Some(agent) => agent_is_assignable(agent),
                None => {
                    (self.ablated(Ablation::RestartAdoption)
                        || self.is_own_pod_name(name) && record.pod.created_ms >= self.start_ms())
                        && now_ms < registration_deadline_ms(record, settings)
                }
            }
    }

    /// Idle pods the job could run on, longest idle first (rule 6: assignable at the
    /// server, same config and environment, container never restarted, not reserved).
    fn reuse_candidates(
        &self,
        now_ms: u64,
        needs: JobNeeds<'_>,
        agents: &Agents,
    ) -> VecDeque<String> {
        // Ablated rule 6 reuses pods whatever the server says, settled ones included; ablated
        // rule 8 reuses restarted pods, which are not among the healthy idle ones.
        let full = |(name, record): &(&String, &PodRecord)| {
            self.is_reuse_candidate(now_ms, name, record, needs, agents)
        };
        let pods: Box<dyn Iterator<Item = (&String, &PodRecord)>> =
            if self.ablated(Ablation::Assignable) {
                Box::new(self.view.pods.iter().filter(full))
            } else if self.ablated(Ablation::ContainerRestart) {
                Box::new(self.view.unsettled_pods(agents).filter(full))
            } else {
                let free = |(name, record): &(&String, &PodRecord)| {
                    self.is_free_idle_pod(now_ms, name, record, needs, agents)
                };
                Box::new(self.view.idle_pods_for(agents, needs).filter(free))
            };
        let mut candidates: Vec<(u64, String)> = pods
            .map(|(name, record)| (record.idle_since_ms().unwrap_or(0), name.clone()))
            .collect();
        candidates.sort();
        candidates.into_iter().map(|(_, name)| name).collect()
    }

    fn is_reuse_candidate(
        &self,
        now_ms: u64,
        name: &str,
        record: &PodRecord,
        needs: JobNeeds<'_>,
        agents: &Agents,
    ) -> bool {
        // Ablated rule 6: the config hash alone decides, whatever the server would do.
        // (Evaluated after the cheap checks of the pod's own record: every check is pure, so
        // the order only decides how much is looked at, never the answer.)
        let assignable = || {
            if self.ablated(Ablation::Assignable) {
                record.config_hash() == Some(needs.config_hash)
            } else {
                needs.matches(record) && agents.get(name).is_some_and(agent_is_assignable)
            }
        };
        !record.retired
            && !record.delete_in_flight
            && record.pod.phase == PodPhase::Running
            && (self.ablated(Ablation::ContainerRestart) || !record.container_restarted())
            && self.is_free_now(now_ms, record, needs)
            && assignable()
    }

    /// The pod is free for a job now: no job of its own, its idle clock not about to run out,
    /// no live claim on it.
    fn is_free_now(&self, now_ms: u64, record: &PodRecord, needs: JobNeeds<'_>) -> bool {
        record.running_job.is_none()
            && !Self::expires_soon(now_ms, record, needs.idle_timeout_ms)
            && (self.ablated(Ablation::Reservations)
                || self.view.live_claim(record, now_ms).is_none())
    }

    /// [`Safe::is_reuse_candidate`] for a pod the index files as idle for the job's config and
    /// environment (`pod_table.rs`): the index already vouches that it is healthy (Running,
    /// never restarted, not retired, no delete in flight), made for that config and
    /// environment, and that its agent is assignable. Only the checks on what it is doing
    /// now are left: no job of its own, its idle clock not running out, no live claim. In a
    /// large cluster a create-agent looks at hundreds of idle pods, and the vouched-for checks
    /// were two annotation lookups and an agent lookup by name each. Debug builds check the
    /// answer against the full test.
    fn is_free_idle_pod(
        &self,
        now_ms: u64,
        name: &str,
        record: &PodRecord,
        needs: JobNeeds<'_>,
        agents: &Agents,
    ) -> bool {
        let free = self.is_free_now(now_ms, record, needs);
        debug_assert_eq!(
            free,
            self.is_reuse_candidate(now_ms, name, record, needs, agents),
            "pod {name}: the idle index and the full reuse test disagree"
        );
        free
    }

    /// The pod's idle clock runs out within `EXPIRY_MARGIN_MS`: it is left to the reaper.
    /// A claim on it would be taken only after the ping that should reap it, and would keep
    /// the pod past idle_timeout + one ping (the `idle-timeout` bound).
    fn expires_soon(now_ms: u64, record: &PodRecord, idle_timeout_ms: u64) -> bool {
        record.idle_since_ms().is_some_and(|since_ms| {
            now_ms.saturating_add(EXPIRY_MARGIN_MS) >= since_ms.saturating_add(idle_timeout_ms)
        })
    }

    /// Try the next idle candidate with a compare-and-swap claim, or go on to create.
    fn claim_next_or_create(&mut self, now_ms: u64, id: RequestId, out: &mut Outbox) {
        let task = self
            .creates
            .get_mut(&id)
            .expect("a create between calls is live");
        let job_id = task.request.job_identifier.job_id;
        let name = loop {
            let task = self
                .creates
                .get_mut(&id)
                .expect("a create between calls is live");
            let Some(name) = task.candidates.pop_front() else {
                self.create_within_limits(now_ms, id, out);
                return;
            };
            // Skip pods that vanished, or were assigned or reserved since the list.
            let still_free = self.view.pods.get(&name).is_some_and(|record| {
                !record.retired
                    && record.running_job.is_none()
                    && (self.ablated(Ablation::Reservations)
                        || self.view.live_claim(record, now_ms).is_none())
            });
            if still_free {
                break name;
            }
        };
        // Rule 1: the claim (with its deadline) reserves the pod for this job only, so n
        // jobs never all wait on one idle pod (pr355 serialised them); the CAS
        // on resourceVersion re-validates it (rule 2): a deleted or changed pod fails.
        let claim = Claim {
            job_id,
            deadline_ms: now_ms + CLAIM_DURATION_MS,
        };
        let resource_version = self
            .view
            .pods
            .update(&name, |record| {
                record.claim_overlay = Some(claim);
                record.pod.resource_version
            })
            .expect("the loop checked the pod exists");
        let set = StringMap::from([
            (annotation::CLAIM_JOB_ID.to_owned(), job_id.to_string()),
            (
                annotation::CLAIM_DEADLINE_MS.to_owned(),
                claim.deadline_ms.to_string(),
            ),
        ]);
        let request = KubeRequest::AnnotatePod {
            name: name.clone(),
            set,
            // Idle-since stays: if the job runs elsewhere the claim is spent and the pod's
            // idle clock goes on from when it really became idle.
            remove: Vec::new(),
            resource_version: Some(resource_version),
        };
        self.issue(
            request,
            Pending::Claim {
                request: id,
                pod: name,
            },
            out,
        );
    }

    pub(super) fn on_claim(
        &mut self,
        now_ms: u64,
        id: RequestId,
        name: &str,
        result: KubeResult,
        out: &mut Outbox,
    ) {
        let task = self
            .creates
            .get(&id)
            .expect("a claim belongs to a live create");
        let job_id = task.request.job_identifier.job_id;
        match result {
            Ok(KubeReply::Pod(pod)) => {
                self.view.observe(pod);
                let overlay = self.view.pods.get(name).and_then(|r| r.claim_overlay);
                let Some(claim) = overlay else {
                    // The overlay is spent while the claim was in flight: should-assign-work
                    // gave the pod the claiming job (the usual case), or the pod went away.
                    if !self.finish_if_served(id, job_id, out) {
                        self.claim_next_or_create(now_ms, id, out);
                    }
                    return;
                };
                let deadline_ms = claim.deadline_ms;
                let text = format!(
                    "claimed idle pod {name} for job {job_id} until about t={deadline_ms}: \
                     no new pod"
                );
                out.decide(Some(job_id), Some(name), DecisionCode::Claim, text);
                self.finish_locked(id, out);
            }
            Ok(other) => unexpected_reply(&other, "a pod annotation"),
            Err(error) => {
                self.on_claim_failed(now_ms, id, name, job_id, error, out);
            }
        }
    }

    fn on_claim_failed(
        &mut self,
        now_ms: u64,
        id: RequestId,
        name: &str,
        job_id: u64,
        error: KubeError,
        out: &mut Outbox,
    ) {
        match error {
            KubeError::Conflict if self.first_conflict(id, name) => {
                // The pod changed since the list (an idle-since write, a status update):
                // GET it and try once more if it is still a free idle pod (rule 2).
                let request = KubeRequest::GetPod {
                    name: name.to_owned(),
                };
                let pending = Pending::Revalidate {
                    request: id,
                    pod: name.to_owned(),
                };
                self.issue(request, pending, out);
            }
            KubeError::NotFound | KubeError::Conflict => {
                // The pod is gone or changed since the list: it does not count (rule 2).
                if error == KubeError::NotFound {
                    self.view.forget(name);
                } else {
                    self.view
                        .pods
                        .update(name, |record| record.claim_overlay = None);
                }
                let text = format!(
                    "idle pod {name} {} since the list: not reused for job {job_id}",
                    if error == KubeError::NotFound {
                        "was deleted"
                    } else {
                        "changed"
                    }
                );
                out.decide(Some(job_id), Some(name), DecisionCode::ClaimLost, text);
                if !self.finish_if_served(id, job_id, out) {
                    self.claim_next_or_create(now_ms, id, out);
                }
            }
            KubeError::Timeout | KubeError::ServerError => {
                // The claim may or may not be written: keep the pod reserved for this job
                // (it serves no other job) and also create a pod, so the job never waits
                // on a reservation that may not exist.
                let text = format!(
                    "claim of idle pod {name} for job {job_id} failed ({}): creating a pod",
                    error_name(error)
                );
                out.decide(Some(job_id), Some(name), DecisionCode::ClaimFailed, text);
                if let Some(task) = self.creates.get_mut(&id) {
                    task.candidates.clear();
                }
                if !self.finish_if_served(id, job_id, out) {
                    self.create_within_limits(now_ms, id, out);
                }
            }
        }
    }
}

impl Safe {
    /// The oldest job older than the task's that a limit turned away, has not been served
    /// since and needs a pod of the task's config hash, with the create that makes its pod
    /// (`turns.rs`); none when rule 9 is ablated. The hash of the request in hand is current:
    /// a waiting request with another hash may predate a profile edit, and a pod made from
    /// it could never serve its job.
    fn older_job_first(&mut self, now_ms: u64, task: &CreateTask) -> Option<(u64, CreateTask)> {
        if self.ablated(Ablation::Limits) {
            return None;
        }
        // The older job's pod must fit its own limits: its plan may carry a lower
        // pending_pods_count than the request that found the room (a job rescheduled as
        // hung keeps the plan of its first instance, from before a cluster profile edit;
        // explore/elastic seed 396).
        let counts = self.limit_counts();
        let served = &self.view.served_jobs;
        let job_id = task.request.job_identifier.job_id;
        self.turns.take_ahead_of(
            job_id,
            now_ms,
            |job| served.contains(&job),
            |waiting| {
                waiting.config_hash == task.config_hash
                    && limit_refusal_at(counts, waiting).is_none()
            },
        )
    }

    /// What rule 9's limits count now: pods not Running yet (every pod when ablated), and
    /// all pods.
    fn limit_counts(&self) -> LimitCounts {
        let pending = if self.ablated(Ablation::Limits) {
            self.view.pods.len()
        } else {
            self.view.pods_not_running_count()
        };
        LimitCounts {
            pending,
            pods: self.view.pods.len(),
        }
    }

    /// Rule 9: why a limit says no pod for `task`'s job now, if one does. pending_pods_count
    /// limits pods not yet Running (upstream semantics), so pr355's all-pods limit cannot cap
    /// concurrency at 10 running agents, and Running pods (idle or building) never block a
    /// create; the optional max_pods limits all pods.
    fn limit_refusal(&self, task: &CreateTask) -> Option<(DecisionCode, String)> {
        limit_refusal_at(self.limit_counts(), task)
    }

    /// Create a pod for the job unless a limit says no (rule 9).
    fn create_within_limits(&mut self, now_ms: u64, id: RequestId, out: &mut Outbox) {
        let task = self
            .creates
            .get(&id)
            .expect("a create between calls is live")
            .clone();
        let job_id = task.request.job_identifier.job_id;
        if let Some((code, text)) = self.limit_refusal(&task) {
            out.decide(Some(job_id), None, code, text);
            self.turns.turned_away(job_id, now_ms, task);
            self.finish_locked(id, out);
            return;
        }
        // Rule 9, in turn: the room goes to the oldest job a limit turned away first; the
        // request's own job follows if room remains once that pod exists (`on_create`).
        let task = match self.older_job_first(now_ms, &task) {
            Some((older, mut waiting)) => {
                let text = format!(
                    "job {older}, older, was turned away by the pod limit: the room goes to its \
                     pod first; job {job_id} gets a pod only if room remains"
                );
                out.decide(Some(job_id), None, DecisionCode::SkipTurn, text);
                self.turns.turned_away(job_id, now_ms, task.clone());
                waiting.then_own = Some(Box::new(task));
                self.creates.insert(id, waiting.clone());
                waiting
            }
            None => task,
        };
        let (job_id, settings) = (task.request.job_identifier.job_id, &task.settings);
        self.pod_counter += 1;
        let name = pod_spec::pod_name(self.process_id, self.pod_counter);
        let mut template = pod_spec::pod_template(&name, &task.request, settings);
        // The new pod is reserved for its job until it had time to register and be assigned.
        let deadline_ms = now_ms
            .saturating_add(settings.auto_register_timeout_ms)
            .saturating_add(CLAIM_DURATION_MS);
        let annotations = &mut template.annotations;
        annotations.insert(
            pod_spec::keys::CONFIG_HASH.to_owned(),
            task.config_hash.clone(),
        );
        annotations.insert(annotation::CLAIM_JOB_ID.to_owned(), job_id.to_string());
        annotations.insert(
            annotation::CLAIM_DEADLINE_MS.to_owned(),
            deadline_ms.to_string(),
        );
        let pending = Pending::Create {
            request: id,
            pod: name,
        };
        self.issue(KubeRequest::CreatePod { template }, pending, out);
    }

    pub(super) fn on_create(
        &mut self,
        now_ms: u64,
        id: RequestId,
        name: &str,
        result: KubeResult,
        out: &mut Outbox,
    ) {
        let task = self
            .creates
            .get_mut(&id)
            .expect("a create call belongs to a live create");
        let job_id = task.request.job_identifier.job_id;
        let then_own = task.then_own.take();
        match result {
            Ok(KubeReply::Pod(pod)) => {
                self.view.observe(pod);
                let text = format!("created pod {name} for job {job_id}");
                out.decide(Some(job_id), Some(name), DecisionCode::Create, text);
                if let Some(own) = then_own {
                    self.resume_own_create(now_ms, id, *own, out);
                    return;
                }
            }
            Ok(other) => unexpected_reply(&other, "a pod create"),
            Err(error) => {
                let text = format!(
                    "creating pod {name} for job {job_id} failed ({}); if it exists after all, \
                     the next list adopts it as reserved for the job",
                    error_name(error)
                );
                out.decide(Some(job_id), Some(name), DecisionCode::CreateFailed, text);
            }
        }
        self.finish_locked(id, out);
    }

    /// Rule 9: an older job's turn took the room first and its pod exists; the request's own
    /// job gets a pod too if its limits still have room (or the room goes to the next older
    /// turn). A turn takes a slot only while another remains for nobody: a younger job never
    /// waits behind an older one while the limit has room for both (explore/elastic seeds
    /// 40364 and 40476).
    fn resume_own_create(&mut self, now_ms: u64, id: RequestId, own: CreateTask, out: &mut Outbox) {
        let job_id = own.request.job_identifier.job_id;
        self.turns.asking(job_id);
        self.creates.insert(id, own);
        if !self.finish_if_served(id, job_id, out) {
            self.create_within_limits(now_ms, id, out);
        }
    }
}

impl Safe {
    /// True the first time this create meets a conflict on this pod.
    fn first_conflict(&mut self, id: RequestId, name: &str) -> bool {
        let task = self
            .creates
            .get_mut(&id)
            .expect("a claim belongs to a live create");
        task.conflicted.insert(name.to_owned())
    }

    /// The GET after a conflicting claim: claim again if the pod is still a free idle pod.
    pub(super) fn on_revalidate(
        &mut self,
        now_ms: u64,
        id: RequestId,
        name: &str,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        self.view
            .pods
            .update(name, |record| record.claim_overlay = None);
        match result {
            Ok(KubeReply::Pod(pod)) => self.view.observe(pod),
            Ok(other) => unexpected_reply(&other, "a pod get"),
            Err(KubeError::NotFound) => self.view.forget(name),
            Err(_) => {}
        }
        let task = self
            .creates
            .get(&id)
            .expect("a revalidation belongs to a live create")
            .clone();
        let agents = self.view.agents(server.agent_listing());
        let still_candidate = self.view.pods.get(name).is_some_and(|record| {
            self.is_reuse_candidate(now_ms, name, record, task.needs(), &agents)
        });
        if still_candidate {
            let task = self.creates.get_mut(&id).expect("checked above");
            task.candidates.push_front(name.to_owned());
        }
        let job_id = task.request.job_identifier.job_id;
        if !self.finish_if_served(id, job_id, out) {
            self.claim_next_or_create(now_ms, id, out);
        }
    }
}

/// The pod counts rule 9's limits compare with.
#[derive(Clone, Copy, Debug)]
struct LimitCounts {
    pending: usize,
    pods: usize,
}

/// Why a limit says no pod for `task`'s job under `counts`, if one does (rule 9).
fn limit_refusal_at(counts: LimitCounts, task: &CreateTask) -> Option<(DecisionCode, String)> {
    let (job_id, settings) = (task.request.job_identifier.job_id, &task.settings);
    let pending_count = counts.pending;
    if pending_count >= settings.pending_pods_count as usize {
        let text = format!(
            "{pending_count} pods are not Running yet (limit {}): no pod for job {job_id} now",
            settings.pending_pods_count
        );
        return Some((DecisionCode::SkipLimit, text));
    }
    let pods_count = counts.pods;
    let pods_max = settings
        .max_pods
        .filter(|max| pods_count >= *max as usize)?;
    let text =
        format!("{pods_count} pods exist (max_pods {pods_max}): no pod for job {job_id} now");
    Some((DecisionCode::SkipMaxPods, text))
}
