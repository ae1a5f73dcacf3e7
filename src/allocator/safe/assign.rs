//! should-assign-work (rule 5: answering false changes nothing) and job-completion.

use super::view::{JobNeeds, PodRecord, annotation};
use super::{Pending, Safe, unexpected_reply};
use crate::ablation::Ablation;
use crate::allocator::{
    BuildState, ClusterProfile, ConfigState, DecisionCode, JobCompletionRequest, Outbox, RequestId,
    ServerApi, ShouldAssignWorkRequest, pod_spec,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, StringMap};

impl Safe {
    pub(super) fn assign_work(
        &mut self,
        now_ms: u64,
        request: &ShouldAssignWorkRequest,
        out: &mut Outbox,
    ) -> bool {
        let name = &*request.agent.agent_id;
        let job_id = request.job_identifier.job_id;
        let config_hash = self.config_hash(
            &request.elastic_agent_profile_properties,
            &request.cluster_profile_properties,
            request.environment.as_deref(),
        );
        let settings = ClusterProfile::from_properties(&request.cluster_profile_properties);
        let needs = JobNeeds {
            job_id,
            config_hash: &config_hash,
            environment: request.environment.as_deref(),
            idle_timeout_ms: settings.idle_timeout_ms,
        };
        let reuse = settings.enable_agent_reuse;
        if let Err(reason) = self.assign_verdict(now_ms, request, needs, reuse) {
            if self.ablated(Ablation::PureAssign) {
                // Ablated rule 5: pr355's `compute` returning null forgets the pod.
                self.view.forget(name);
            }
            // Rule 5: a false answer only records why; no state changes (pr355's `compute`
            // returning null evicted the pod on every false).
            out.decide(
                Some(job_id),
                Some(name),
                DecisionCode::AssignNo,
                format!("pod {name}: {reason}"),
            );
            return false;
        }
        self.view
            .pods
            .update(name, |record| {
                record.running_job = Some(job_id);
                record.claim_overlay = None;
                record.idle_since_overlay = None;
            })
            .expect("the verdict found the pod");
        self.view.served(name, job_id);
        let key = super::job_key(&request.job_identifier);
        self.assigned_jobs.insert(key, (name.to_owned(), job_id));
        let set = StringMap::from([(annotation::ASSIGNED_JOB_ID.to_owned(), job_id.to_string())]);
        let remove = [
            annotation::IDLE_SINCE_MS,
            annotation::CLAIM_JOB_ID,
            annotation::CLAIM_DEADLINE_MS,
        ];
        let request = KubeRequest::AnnotatePod {
            name: name.to_owned(),
            set,
            remove: remove.iter().map(|key| (*key).to_owned()).collect(),
            resource_version: None,
        };
        self.issue(
            request,
            Pending::Annotate {
                pod: name.to_owned(),
            },
            out,
        );
        let text = format!("pod {name} takes job {job_id}");
        out.decide(Some(job_id), Some(name), DecisionCode::AssignYes, text);
        true
    }

    /// Why the pod must not take the job, if it must not.
    fn assign_verdict(
        &self,
        now_ms: u64,
        request: &ShouldAssignWorkRequest,
        needs: JobNeeds<'_>,
        reuse: bool,
    ) -> Result<(), String> {
        let name = &*request.agent.agent_id;
        let job_id = needs.job_id;
        let record: &PodRecord = self
            .view
            .pods
            .get(name)
            .ok_or("not a pod this allocator has listed")?;
        if record.retired {
            return Err("being deleted".to_owned());
        }
        if request.agent.config_state == ConfigState::Disabled {
            return Err("agent disabled".to_owned());
        }
        // The server still reports the agent killing a cancelled build: the pod is busy until
        // a ping shows the kill over, even though job-completion already came.
        if request.agent.build_state == BuildState::Cancelled {
            return Err("still killing a cancelled build".to_owned());
        }
        let restarted = record.container_restarted() && !self.ablated(Ablation::ContainerRestart);
        if restarted || record.is_terminated() {
            return Err("container restarted or pod terminated: not reusable".to_owned());
        }
        if let Some(running) = record.running_job {
            return Err(format!("still running job {running}"));
        }
        if self.view.served_jobs.contains(&job_id) {
            return Err(format!("job {job_id} already has an agent"));
        }
        // Rule 6 and no-cross-config-reuse: only jobs of the pod's config and environment
        // (pr355 ignored the environment and reused pods across a profile edit).
        let matches = if self.ablated(Ablation::Assignable) {
            record.config_hash() == Some(needs.config_hash)
        } else {
            needs.matches(record)
        };
        if !matches {
            return Err(format!("config or environment differs from job {job_id}"));
        }
        // Rule 1: a claimed pod takes only the claiming job.
        let claim = self.view.live_claim(record, now_ms);
        if let Some(claim) = claim.filter(|_| !self.ablated(Ablation::Reservations)) {
            if claim.job_id == job_id {
                return Ok(());
            }
            return Err(format!(
                "reserved for job {} until t={}",
                claim.job_id, claim.deadline_ms
            ));
        }
        let created_for = record.pod.label(pod_spec::keys::JOB_ID);
        if !reuse && created_for != Some(job_id.to_string().as_str()) {
            return Err(format!(
                "reuse is off and the pod was created for job {created_for:?}"
            ));
        }
        Ok(())
    }

    pub(super) fn start_completion(
        &mut self,
        now_ms: u64,
        id: RequestId,
        request: JobCompletionRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let name = request.elastic_agent_id.clone();
        let job_id = request.job_identifier.job_id;
        let reuse =
            ClusterProfile::from_properties(&request.cluster_profile_properties).enable_agent_reuse;
        self.view.served_jobs.insert(job_id);
        let key = super::job_key(&request.job_identifier);
        if self
            .assigned_jobs
            .get(&key)
            .is_some_and(|(_, job)| *job == job_id)
        {
            self.assigned_jobs.remove(&key);
        }
        // A completion for an earlier job of a pod that runs another job of ours now (it
        // came after the next assignment) says nothing about the pod: it is not idle.
        let running = self
            .view
            .pods
            .get(&name)
            .and_then(|record| record.running_job);
        if let Some(running) = running.filter(|&running| running != job_id) {
            let text = format!(
                "job {job_id} completed on pod {name}, which runs job {running} now: \
                 nothing changes"
            );
            out.decide(Some(job_id), Some(&name), DecisionCode::CompleteStale, text);
            out.finished.push(id);
            return;
        }
        if reuse && self.complete_released(id, job_id, &name, out) {
            return;
        }
        // A pod not listed yet (right after a restart) is kept when reuse is on: the next
        // list shows whether it is healthy, and the reapers handle it if it is not; its
        // idle start waits for that list (`View::early_idle`).
        if reuse && !self.view.pods.contains_key(&name) {
            self.view.early_idle.insert(name.clone(), now_ms);
        }
        let reusable = reuse
            && self
                .view
                .pods
                .update(&name, |record| {
                    record.running_job = None;
                    record.claim_overlay = None;
                    // The phase in the view may predate the pod's start; it ran a job, so it
                    // ran, and a pod that failed since is reaped from the next list.
                    !record.retired && !record.container_restarted() && !record.is_terminated()
                })
                .unwrap_or(true);
        let previous = self.completions.insert(id, name.clone());
        assert!(previous.is_none(), "request ids are unique");
        if reusable {
            self.complete_idle(now_ms, id, job_id, name, out);
        } else {
            self.complete_delete(id, job_id, name, server, out);
        }
    }

    /// A job-completion for a pod a list already showed idle after its job (the message
    /// queued behind others in the server's job-status listener): the pod's idle clock runs
    /// from that list, and a claim or idle start written since stands. Only the decision is
    /// recorded; true when that is all there is to do.
    fn complete_released(&self, id: RequestId, job_id: u64, name: &str, out: &mut Outbox) -> bool {
        let Some(record) = self.view.pods.get(name) else {
            return false;
        };
        let healthy = !record.retired && !record.container_restarted() && !record.is_terminated();
        let since = record
            .idle_since_overlay
            .filter(|_| record.running_job.is_none());
        let Some(since_ms) = since.filter(|_| healthy) else {
            return false;
        };
        let text = format!(
            "job {job_id} completed on pod {name}, seen idle at a list since t={since_ms}: \
             its idle clock runs from then"
        );
        out.decide(Some(job_id), Some(name), DecisionCode::CompleteIdle, text);
        out.finished.push(id);
        true
    }

    /// A pod that served its job and may serve another becomes idle, in the view at once and
    /// on the pod's annotations (its claim removed).
    fn complete_idle(
        &mut self,
        now_ms: u64,
        id: RequestId,
        job_id: u64,
        name: String,
        out: &mut Outbox,
    ) {
        self.view.pods.update(&name, |record| {
            debug_assert!(
                record.running_job.is_none() && record.claim_overlay.is_none() && !record.retired,
                "only a free, unretired pod becomes idle"
            );
            record.idle_since_overlay = Some(now_ms);
        });
        let set = StringMap::from([(annotation::IDLE_SINCE_MS.to_owned(), now_ms.to_string())]);
        let remove = [annotation::CLAIM_JOB_ID, annotation::CLAIM_DEADLINE_MS];
        let call = KubeRequest::AnnotatePod {
            name: name.clone(),
            set,
            remove: remove.iter().map(|key| (*key).to_owned()).collect(),
            resource_version: None,
        };
        let text = format!("job {job_id} completed on pod {name}: idle since t={now_ms}");
        out.decide(Some(job_id), Some(&name), DecisionCode::CompleteIdle, text);
        self.issue(
            call,
            Pending::CompletionAnnotate {
                request: id,
                pod: name,
            },
            out,
        );
    }

    /// A pod that may not serve another job (reuse off, restarted, terminated, retired) is
    /// disabled and deleted.
    fn complete_delete(
        &mut self,
        id: RequestId,
        job_id: u64,
        name: String,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        // Without reuse (or for a pod that cannot be reused) the pod served its one job.
        self.view.pods.update(&name, |record| {
            record.retired = true;
            record.delete_in_flight = true;
        });
        server.disable_agents(std::slice::from_ref(&name));
        let text = format!("job {job_id} completed on pod {name}: disabling and deleting it");
        out.decide(
            Some(job_id),
            Some(&name),
            DecisionCode::CompleteDelete,
            text,
        );
        let call = KubeRequest::DeletePod { name: name.clone() };
        self.issue(
            call,
            Pending::CompletionDelete {
                request: id,
                pod: name,
            },
            out,
        );
    }

    pub(super) fn on_completion_annotate(
        &mut self,
        id: RequestId,
        name: &str,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        match result {
            Ok(KubeReply::Pod(pod)) => {
                self.view.observe(pod);
                self.remove_stale_idle_since(name, out);
            }
            Ok(other) => unexpected_reply(&other, "a pod annotation"),
            Err(KubeError::NotFound) => {
                self.view.forget(name);
                server.delete_agents(&[name.to_owned()]);
            }
            // The in-memory idle-since stands; the next server-ping writes it again.
            Err(_) => {}
        }
        self.finish_completion(id, out);
    }

    /// A pod this process gave a job carries an idle-since again: a job-completion's write
    /// landed after the next assignment's write removing it (both in flight, applied out of
    /// order). Remove it again once no other write to the pod is in flight, or a restarted
    /// process would read that idle start while the job runs (rule 3).
    pub(super) fn remove_stale_idle_since(&mut self, name: &str, out: &mut Outbox) {
        let stale = (self.view.pods.get(name))
            .is_some_and(|record| record.running_job.is_some() && record.carries_idle_since());
        // Looked for only when stale: most answers find the pod as it should be.
        let in_flight = || {
            self.calls.values().any(|pending| match pending {
                Pending::Annotate { pod } | Pending::CompletionAnnotate { pod, .. } => pod == name,
                _ => false,
            })
        };
        if !stale || in_flight() {
            return;
        }
        let request = KubeRequest::AnnotatePod {
            name: name.to_owned(),
            set: StringMap::new(),
            remove: vec![annotation::IDLE_SINCE_MS.to_owned()],
            resource_version: None,
        };
        let pod = name.to_owned();
        self.issue(request, Pending::Annotate { pod }, out);
    }

    /// A create-agent for another instance of a job a pod of ours was given: the server
    /// rescheduled that job (its agent lost contact past the hung-job check), so the pod runs
    /// it no more and a lost agent's pod may be reaped (`dead_reason` in `ping.rs`).
    pub(super) fn release_rescheduled(&mut self, job: &crate::allocator::JobIdentifier) {
        let key = super::job_key(job);
        let Some((pod, old_job)) = self.assigned_jobs.get(&key).cloned() else {
            return;
        };
        if old_job == job.job_id {
            return;
        }
        self.assigned_jobs.remove(&key);
        self.view.pods.update(&pod, |record| {
            if record.running_job == Some(old_job) {
                record.running_job = None;
            }
        });
    }

    /// A write to a pod failed: if the pod runs a job of this process and still carries an
    /// idle-since, the removal is owed until a write lands (`retry_lost_writes`).
    pub(super) fn note_unremoved_idle_since(&mut self, name: &str) {
        let stale = (self.view.pods.get(name))
            .is_some_and(|record| record.running_job.is_some() && record.carries_idle_since());
        if stale {
            self.unremoved_idle_since.insert(name.to_owned());
        }
    }

    /// Retry the writes an API fault lost, at every request (create-agent, server-ping,
    /// job-completion): an idle-since held but not written (a completion's write failed),
    /// and the removal of an idle-since from a pod given a job (the assignment's write
    /// failed). Either left alone until a server restart makes the restarted process read
    /// an older idle period's start and reap the pod early (rule 3); retried at once, only
    /// a restart with no request with the API reachable since the lost write can
    /// (`docs/invariants.md`, the lost-writes budget).
    pub(super) fn retry_lost_writes(&mut self, out: &mut Outbox) {
        if !self.ablated(Ablation::IdleTimeout) {
            self.write_unwritten_idle_since(out);
        }
        if self.unremoved_idle_since.is_empty() {
            return;
        }
        let owed = std::mem::take(&mut self.unremoved_idle_since);
        for name in owed {
            let stale = (self.view.pods.get(&name))
                .is_some_and(|record| record.running_job.is_some() && record.carries_idle_since());
            if stale {
                self.unremoved_idle_since.insert(name.clone());
                self.remove_stale_idle_since(&name, out);
            }
        }
    }

    pub(super) fn finish_completion(&mut self, id: RequestId, out: &mut Outbox) {
        let known = self.completions.remove(&id);
        assert!(known.is_some(), "a job-completion finishes exactly once");
        out.finished.push(id);
    }
}
