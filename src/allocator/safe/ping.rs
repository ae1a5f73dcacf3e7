//! server-ping and reaping: adoption after a restart, the idle timeout, pods that can never
//! serve, and the delete sequence (disable the agent at the server first, then delete).

use super::view::registration_deadline_ms;
use super::view::{Agents, agent_is_assignable, agent_may_be_building, annotation};
use super::{Pending, Safe, error_name, unexpected_reply, view, walk_index};
use crate::ablation::Ablation;
use crate::allocator::{
    AgentState, ClusterProfile, ConfigState, DecisionCode, Outbox, RequestId, ServerApi,
    ServerPingRequest, pod_spec,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, StringMap};
use std::collections::BTreeSet;

impl Safe {
    pub(super) fn start_ping(
        &mut self,
        id: RequestId,
        request: ServerPingRequest,
        out: &mut Outbox,
    ) {
        // All cluster profiles share the namespace; the first one's timeouts apply.
        let settings = request
            .all_cluster_profile_properties
            .first()
            .map(ClusterProfile::from_properties)
            .unwrap_or_default();
        self.ping_settings = Some(settings.clone());
        self.pings.insert(id, settings);
        let selector = pod_spec::agent_selector();
        self.issue(
            KubeRequest::ListPods { selector },
            Pending::PingList(id),
            out,
        );
    }

    pub(super) fn on_ping_list(
        &mut self,
        now_ms: u64,
        id: RequestId,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let settings = self
            .pings
            .get(&id)
            .expect("a ping list belongs to a live ping")
            .clone();
        match result {
            Ok(KubeReply::Pods(pods)) => self.view.merge_list(pods),
            Ok(other) => unexpected_reply(&other, "a pod list"),
            Err(error) => {
                let text = format!(
                    "could not list pods ({}): no cleanup this ping",
                    error_name(error)
                );
                out.decide(None, None, DecisionCode::PingListFailed, text);
                // The server's agents still tell which agents build (`View::seen_building`).
                self.view.agents(server.agent_listing());
                self.finish_locked(id, out);
                return;
            }
        }
        let agents = self.view.agents(server.agent_listing());
        self.release_finished_assignments(now_ms, &agents);
        self.reap_dead_pods(now_ms, &settings, &agents, server, out);
        self.reap_idle_pods(now_ms, &settings, &agents, server, out);
        self.reap_agents_without_pods(&agents, server, out);
        if settings.enable_agent_reuse && !self.ablated(Ablation::IdleTimeout) {
            self.write_unwritten_idle_since(out);
        }
        self.finish_locked(id, out);
    }

    /// The refresh a create-agent runs on its fresh list before deciding (rule 2): pods that
    /// can never serve are reaped (rule 8 and the dead reasons), and with reuse the idle clock
    /// of newly idle pods starts (rule 3), so the decision sees what the next ping would.
    pub(super) fn refresh_before_create(
        &mut self,
        now_ms: u64,
        settings: &ClusterProfile,
        agents: &Agents,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        // An agent idle again at the server has finished its job, whether or not the
        // job-completion came: its job-completion may wait tens of seconds behind others in
        // the server's one job-status listener (explore/elastic-slow seed 1126: 28 s after a
        // gocd|kube-api cut), and the idle clock must not wait for it.
        self.release_finished_assignments(now_ms, agents);
        self.reap_dead_pods(now_ms, settings, agents, server, out);
        if settings.enable_agent_reuse {
            self.mark_idle_pods(now_ms, agents, out);
            // A job-completion that came before the first list of a restarted process dated
            // the pod's idle start, but its write failed and the request's retry came before
            // this list gave the pod that start: write it now, or a crash before the next
            // request leaves the next process an older idle start (explore/elastic 60472).
            if !self.ablated(Ablation::IdleTimeout) {
                self.write_unwritten_idle_since(out);
            }
        }
        // Idle pods past their idle timeout go at every list, not only at a server-ping's: a
        // ping waits for the lock behind every create-agent queued before it, and with API
        // calls of seconds that wait outgrew the PING the idle deadline allows
        // (explore/elastic-slow seed 3: a ping 22 s behind six create-agents reaped a pod
        // 0.06 s past IDLE + PING). The settings are the latest ping's, the ones in force
        // (the request's are its job's, frozen at scheduling); only with reuse on, since a
        // pod reaped for reuse being off must be judged under the settings of now.
        let current = self.ping_settings.clone();
        if let Some(current) = current.filter(|current| current.enable_agent_reuse) {
            self.reap_idle_pods(now_ms, &current, agents, server, out);
        }
    }

    /// Write the idle-since this process holds but the pod does not carry (rule 3): a
    /// job-completion's write failed, or an assignment ended without one. Otherwise a
    /// restarted process reads an older idle period's annotation and reaps the pod early.
    /// Pods with an annotation write in flight wait for its answer.
    pub(super) fn write_unwritten_idle_since(&mut self, out: &mut Outbox) {
        let unwritten: Vec<(String, u64)> = (self.view.pods.unwritten_idle_since())
            .map(|(name, idle_since_ms)| (name.clone(), idle_since_ms))
            .collect();
        if unwritten.is_empty() {
            return;
        }
        let in_flight: BTreeSet<&str> = self
            .calls
            .values()
            .filter_map(|pending| match pending {
                Pending::Annotate { pod } | Pending::CompletionAnnotate { pod, .. } => {
                    Some(pod.as_str())
                }
                _ => None,
            })
            .collect();
        let unwritten: Vec<(String, u64)> = (unwritten.into_iter())
            .filter(|(name, _)| !in_flight.contains(name.as_str()))
            .collect();
        for (name, idle_since_ms) in unwritten {
            self.write_idle_since(&name, idle_since_ms, out);
        }
    }

    /// Write `idle_since_ms` on the pod; no request waits for the answer.
    fn write_idle_since(&mut self, name: &str, idle_since_ms: u64, out: &mut Outbox) {
        let set = StringMap::from([(
            annotation::IDLE_SINCE_MS.to_owned(),
            idle_since_ms.to_string(),
        )]);
        let request = KubeRequest::AnnotatePod {
            name: name.to_owned(),
            set,
            remove: Vec::new(),
            resource_version: None,
        };
        let pod = name.to_owned();
        self.issue(request, Pending::Annotate { pod }, out);
    }

    /// The server shows the agent idle again although no job-completion came (a rescheduled
    /// job gets none): the assignment is over, and the pod is idle from now.
    fn release_finished_assignments(&mut self, now_ms: u64, agents: &Agents) {
        // An assignable agent is not building, so its pod is unsettled.
        let released: Vec<String> = self
            .view
            .unsettled_pods(agents)
            .filter(|(name, record)| {
                record.running_job.is_some() && agents.get(name).is_some_and(agent_is_assignable)
            })
            .map(|(name, _)| name.clone())
            .collect();
        for name in released {
            self.view.pods.update(&name, |record| {
                record.running_job = None;
                record.idle_since_overlay.get_or_insert(now_ms);
            });
        }
    }

    /// Delete pods that can never serve a job: terminated; container restarted (rule 8:
    /// pr355 kept such a pod "idle" and let it suppress creates until ART); never
    /// registered in time; created by an older process and not registered (rule 7: their
    /// one-time key died with the old server, and upstream waited ART while its job label
    /// blocked the replacement); disabled or lost at the server.
    fn reap_dead_pods(
        &mut self,
        now_ms: u64,
        settings: &ClusterProfile,
        agents: &Agents,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        // A pod's reason depends on its own record only, so all are found before any retires.
        // A healthy pod with an idle agent has none.
        let dead: Vec<(String, DecisionCode, String)> = self
            .view
            .troubled_pods(agents)
            .filter_map(|(name, record)| {
                let (code, text) = self.dead_reason(now_ms, name, record, settings, agents)?;
                Some((name.clone(), code, text))
            })
            .collect();
        for (name, code, text) in dead {
            self.retire(&name, code, text, agents, server, out);
        }
    }

    fn dead_reason(
        &self,
        now_ms: u64,
        name: &str,
        record: &view::PodRecord,
        settings: &ClusterProfile,
        agents: &Agents,
    ) -> Option<(DecisionCode, String)> {
        if record.retired {
            return Some((
                DecisionCode::ReapRetry,
                format!("pod {name} is being deleted: retrying"),
            ));
        }
        if record.is_terminated() {
            let phase = record.pod.phase.as_str();
            return Some((
                DecisionCode::ReapFailed,
                format!("pod {name} is {phase}: it can never serve"),
            ));
        }
        if record.container_restarted() && !self.ablated(Ablation::ContainerRestart) {
            let text = format!(
                "pod {name} restarted its container ({} restarts): not reusable, disabling and \
                 deleting; its job, if any, is left to the server's reschedule",
                record.pod.restart_count
            );
            return Some((DecisionCode::ReapRestarted, text));
        }
        let Some(agent) = agents.get(name) else {
            let older = !self.is_own_pod_name(name) || record.pod.created_ms < self.start_ms();
            if older && !self.ablated(Ablation::RestartAdoption) {
                let text = format!(
                    "pod {name} was created before this server process and never registered: \
                     its auto-register key died with the old server, deleting it now"
                );
                return Some((DecisionCode::ReapOrphan, text));
            }
            let deadline_ms = registration_deadline_ms(record, settings);
            if now_ms >= deadline_ms {
                let text = format!(
                    "pod {name} did not register within auto_register_timeout (t={deadline_ms})"
                );
                return Some((DecisionCode::ReapUnregistered, text));
            }
            return None;
        };
        if agent_may_be_building(agent) {
            return None;
        }
        self.disabled_or_lost_reason(name, record, agent)
    }

    /// A disabled agent's pod, or a lost agent's that runs no build we know of, can never serve.
    fn disabled_or_lost_reason(
        &self,
        name: &str,
        record: &view::PodRecord,
        agent: &crate::allocator::AgentMetadata,
    ) -> Option<(DecisionCode, String)> {
        match (agent.config_state, agent.agent_state) {
            (ConfigState::Disabled, _) => Some((
                DecisionCode::ReapDisabled,
                format!("agent {name} is disabled at the server"),
            )),
            // A lost agent may have finished its build and be unable to report it: its pod
            // stays until the server reschedules the job (`release_rescheduled`) or the pod
            // dies (explore/elastic seed 317: the pod of a finished, unreported build reaped
            // 20 s before the hung-job check would have rescheduled it). The same for a job an
            // older process gave, seen building by this one (explore/elastic seed 40453: reaped
            // 345 s after a restart, 16 s after the agents' cut ended).
            (_, AgentState::LostContact)
                if record.running_job.is_some() || self.view.seen_building.contains(name) =>
            {
                None
            }
            (_, AgentState::LostContact) => Some((
                DecisionCode::ReapLost,
                format!("agent {name} lost contact with the server"),
            )),
            _ => None,
        }
    }

    /// Rule 3 (pr355 measured idleness from pod creation, killing pods between jobs and
    /// keeping short-job pods too long): an idle pod is disabled at the server first, then
    /// deleted, once it has been idle for idle_timeout since idle-since (written on the pod,
    /// so restarts keep it). An assigned pod is never reaped, nor is a claimed pod before its
    /// idle timeout: a claim is made only well before expiry (`EXPIRY_MARGIN_MS`), so it is
    /// taken first unless the agent cannot reach the server; then idle_timeout still holds
    /// and the job gets a new pod on its next create-agent. Without reuse, an idle pod whose
    /// job is gone is deleted at once.
    fn reap_idle_pods(
        &mut self,
        now_ms: u64,
        settings: &ClusterProfile,
        agents: &Agents,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        for name in self.idle_pod_names(agents) {
            if self.redate_idle(now_ms, &name, settings, out) {
                continue;
            }
            let record = self.view.pods.get(&name).expect("names come from the view");
            let claim = self.view.live_claim(record, now_ms);
            if !settings.enable_agent_reuse {
                if claim.is_none() {
                    let text = format!("agent {name} is idle and reuse is off: deleting its pod");
                    self.retire(&name, DecisionCode::ReapIdle, text, agents, server, out);
                }
                continue;
            }
            // Ablated rule 3: pr355's clock, from pod creation.
            let idle_since = if self.ablated(Ablation::IdleTimeout) {
                Some(record.pod.created_ms)
            } else {
                record.idle_since_ms()
            };
            let Some(idle_since_ms) = idle_since else {
                self.mark_idle(now_ms, &name, out);
                continue;
            };
            let expiry_ms = idle_since_ms.saturating_add(settings.idle_timeout_ms);
            if now_ms >= expiry_ms {
                let claimed = claim.map_or(String::new(), |claim| {
                    format!(" (its claim for job {} was not taken)", claim.job_id)
                });
                let text = format!(
                    "pod {name} idle since t={idle_since_ms}, past idle_timeout \
                     ({} ms){claimed}: disabling and deleting",
                    settings.idle_timeout_ms
                );
                self.retire(&name, DecisionCode::ReapIdle, text, agents, server, out);
            }
        }
    }

    /// Pods whose agent is idle and enabled at the server, with no job of ours: the pods the
    /// idle clock runs for, claimed or not (a claim keeps a pod only until its idle timeout,
    /// and a fresh pod's reservation for a job cancelled while scheduled is never released:
    /// the server sends no job-completion for a job no agent ran, nor another create-agent).
    fn idle_pod_names(&self, agents: &Agents) -> Vec<String> {
        self.view
            .unsettled_pods(agents)
            .filter(|(name, record)| self.is_idle(name, record, agents))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The pod's agent is idle and enabled at the server, with no job of ours.
    fn is_idle(&self, name: &str, record: &view::PodRecord, agents: &Agents) -> bool {
        walk_index::is_idle(record, agents.get(name))
    }

    /// Start the idle clock of idle pods that have none yet, at every list (create-agent
    /// lists come often), so idle-since lags the real moment as little as possible.
    fn mark_idle_pods(&mut self, now_ms: u64, agents: &Agents, out: &mut Outbox) {
        // Marking one pod changes no other pod's record, so the pods to mark are found in one
        // pass, the pure check of the record's own idle-since first.
        let unmarked: Vec<String> = self.view.unmarked_idle_pods(agents).cloned().collect();
        for name in unmarked {
            self.mark_idle(now_ms, &name, out);
        }
    }

    /// Write idle-since on a pod seen idle without one (never assigned, whether or not its
    /// job still holds it; adopted; or its claim lapsed). A lapsed claim's deadline is when
    /// the pod became free only if this process asked for the claim's job: an older
    /// process's claim may have been taken since, with the writes that would have removed it
    /// and dated the job's end lost in an API outage before the restart, so the idle clock
    /// of such a pod starts now.
    fn mark_idle(&mut self, now_ms: u64, name: &str, out: &mut Outbox) {
        let requested = &self.view.requested_jobs;
        let idle_since_ms = self
            .view
            .pods
            .update(name, |record| {
                let lapsed = (record.claim()).filter(|claim| requested.contains(&claim.job_id));
                let idle_since_ms = lapsed.map_or(now_ms, |claim| claim.deadline_ms.min(now_ms));
                record.idle_since_overlay = Some(idle_since_ms);
                idle_since_ms
            })
            .expect("callers pass a name from the view");
        self.write_idle_since(name, idle_since_ms, out);
        let text = format!("pod {name} is idle and reusable: idle since t={idle_since_ms}");
        out.decide(None, Some(name), DecisionCode::IdleSince, text);
    }

    /// An idle pod whose agent this process saw building on a job it did not give it
    /// (`View::seen_building`) and whose idle start it did not set: the idle-since the pod
    /// carries is from before that build (the writes removing it were lost before a restart),
    /// so its idle clock starts now, and the job-completion, if it comes, dates it better.
    /// True when the pod was re-dated (it is not reaped at this list).
    fn redate_idle(
        &mut self,
        now_ms: u64,
        name: &str,
        settings: &ClusterProfile,
        out: &mut Outbox,
    ) -> bool {
        if !self.view.seen_building.remove(name) {
            return false;
        }
        let unset = (self.view.pods.get(name)).is_some_and(|r| r.idle_since_overlay.is_none());
        if !unset || !settings.enable_agent_reuse || self.ablated(Ablation::IdleTimeout) {
            return false;
        }
        self.view.pods.update(name, |record| {
            record.idle_since_overlay = Some(now_ms);
        });
        self.write_idle_since(name, now_ms, out);
        let text = format!(
            "pod {name} is idle after a build this process did not assign: idle since \
             t={now_ms}, not its annotation's earlier start"
        );
        out.decide(None, Some(name), DecisionCode::IdleSince, text);
        true
    }

    /// Agents whose pod no longer exists can never run a job: disable and delete them.
    fn reap_agents_without_pods(
        &mut self,
        agents: &Agents,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let missing: Vec<String> = (self.view.agents_without_pods(agents)).cloned().collect();
        if missing.is_empty() {
            return;
        }
        server.disable_agents(&missing);
        server.delete_agents(&missing);
        for name in &missing {
            let text = format!("agent {name} has no pod any more: disabled and deleted");
            out.decide(None, Some(name), DecisionCode::ReapMissing, text);
        }
    }

    /// Retire a pod: it is never claimed or assigned again; its agent is disabled at the
    /// server first, then the pod is deleted, unless the server still shows the agent
    /// building a build that may be alive (then the delete waits for a later ping, so no
    /// build is killed).
    pub(super) fn retire(
        &mut self,
        name: &str,
        code: DecisionCode,
        text: String,
        agents: &Agents,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let agent = agents.get(name);
        let (newly_retired, running_job, delete_now) = self
            .view
            .pods
            .update(name, |record| {
                let newly_retired = !std::mem::replace(&mut record.retired, true);
                // A build that died with its container or pod is no reason to wait: the
                // server reschedules its job only once the agent is gone or lost (LOST, 300 s
                // after the last ping), and only while some agent is live. Explore/elastic
                // seed 40880: the wait outlasted every other agent and the job stayed assigned
                // to the run's end; seed 20298: two waits of LOST for failed pods made a long
                // build's last instance start too late to end in the run.
                let building = agent.is_some_and(agent_may_be_building) && !record.build_died();
                let delete_now = !building && !record.delete_in_flight;
                record.delete_in_flight |= delete_now;
                (newly_retired, record.running_job, delete_now)
            })
            .expect("callers pass a name from the view");
        if newly_retired {
            out.decide(running_job, Some(name), code, text);
        }
        if agent.is_some_and(|agent| agent.config_state != ConfigState::Disabled) {
            server.disable_agents(&[name.to_owned()]);
        }
        if !delete_now {
            return;
        }
        let request = KubeRequest::DeletePod {
            name: name.to_owned(),
        };
        self.issue(
            request,
            Pending::Delete {
                pod: name.to_owned(),
            },
            out,
        );
    }

    /// A pod delete answered, for a retire (`completion` None) or for a job-completion
    /// (`completion` the request, finished before a create waiting on the delete resumes).
    pub(super) fn on_delete(
        &mut self,
        now_ms: u64,
        completion: Option<RequestId>,
        name: &str,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        match result {
            Ok(KubeReply::Deleted) | Err(KubeError::NotFound) => {
                self.view.forget(name);
                server.delete_agents(&[name.to_owned()]);
            }
            Ok(other) => unexpected_reply(&other, "a pod delete"),
            Err(error) => {
                // The pod stays retired; the next list or ping retries the delete.
                self.view.pods.update(name, |record| {
                    record.delete_in_flight = false;
                });
                let text = format!(
                    "deleting pod {name} failed ({}): retried",
                    error_name(error)
                );
                out.decide(None, Some(name), DecisionCode::DeleteFailed, text);
            }
        }
        if let Some(id) = completion {
            self.finish_completion(id, out);
        }
        self.resume_create_after_delete(now_ms, name, server, out);
    }

    pub(super) fn on_annotate(&mut self, name: &str, result: KubeResult, out: &mut Outbox) {
        match result {
            Ok(KubeReply::Pod(pod)) => {
                self.view.observe(pod);
                self.remove_stale_idle_since(name, out);
            }
            Ok(other) => unexpected_reply(&other, "a pod annotation"),
            Err(KubeError::NotFound) => self.view.forget(name),
            // The in-memory value stands; the next request writes it again if it is missing
            // (`retry_lost_writes`), and removes an idle-since the pod's job made stale.
            Err(_) => self.note_unremoved_idle_since(name),
        }
    }
}
