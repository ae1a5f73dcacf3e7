//! Reuse monitors: `idle-timeout` (always), `reuse-happens` and `restart-recovers`
//! (sometimes).

use super::completion_notice::CompletionNotice;
use super::deadlines::{ApiCut, Deadlines, ServerOutage};
use super::frozen::{ClusterSettings, FrozenSettings};
use super::jobs::seconds;
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::ids::{IdMap, NameMap, Names};
use crate::trace::{Actor, AgentRuntime, Record};
use std::collections::{BTreeMap, BTreeSet};

/// What `idle-timeout` knows of one live pod.
#[derive(Debug)]
struct IdlePod {
    config: String,
    /// The profile of the job the pod was created for, as a [`Names`] index.
    profile: Option<u32>,
    /// False once the pod can never take a job again: its container died or restarted, it
    /// failed, or its profile now has another config.
    reusable: bool,
    building: bool,
    idle_since_ms: Option<u64>,
    /// The least idle timeout in force since the pod became idle: a deletion after that
    /// long is not early, since a server-ping under that setting could make it.
    least_idle_timeout_ms: u64,
    /// The idle start the pod carries, as far as the records tell: it follows
    /// `idle_since_ms` while the plugin reaches the API and stays put while it cannot (an
    /// assignment's or a completion's write cannot land then).
    written_idle_since_ms: Option<u64>,
    /// The earlier idle start a restarted plugin may read (the lost-writes budget): set when
    /// the server stopped while the pod was idle and carried an older idle start; cleared
    /// when the pod is assigned or becomes idle again.
    lost_writes_idle_since_ms: Option<u64>,
    /// The node the pod was bound to, if any.
    node: Option<String>,
    /// The pod's agent is Missing or LostContact at the server while idle: the plugin sees
    /// it as maybe building and may not reap it until it is idle there again.
    away: bool,
}

/// `idle-timeout` (only with reuse): a reusable pod that became idle (at `AgentRegistered` or
/// `JobCompleted`) is not deleted by the allocator before IDLE, and is deleted within
/// IDLE + PING unless a job claims it. An idle start at registration gets one more PING:
/// no message tells the plugin that an agent registered, it sees it at its next list. An
/// idle start at a job's end counts from when the plugin can first know of it: the first of
/// the job-completion's delivery and the next server-ping (`completion_notice.rs`). A
/// server outage delays the second deadline by its length, and to at least restart + IDLE +
/// PING, because the restarted plugin has forgotten every idle time; a cut between the
/// plugin and the API delays it by its length + PING. Reported once per pod.
///
/// The lost-writes fault budget: a pod assigned and freed inside one cut between the plugin
/// and the API still carries the idle start of its earlier idle period, since neither the
/// assignment's write nor the completion's can land; if the server crashes before the cut
/// ends, the restarted plugin can only read that earlier idle start (no plugin without
/// storage of its own can know better). A delete of that pod before IDLE since the
/// completion, but at least IDLE after the earlier idle start, is reported as expected.
///
/// A pod on a node that is lost is no longer reusable: its container is gone, the pod stays
/// listed (not ready) until the node controller evicts it (`node_eviction`), and its agent,
/// Missing at the server, may never ask for work again; deleting it is no early delete, and
/// keeping it until eviction is no late one (explore/elastic seeds 231, 343, 1011, 1405,
/// 1715, 1743, 1795, 1837: idle pods on a node lost after they became idle).
///
/// The lost-writes budget reaches past the cut: the plugin learns that the API is back only
/// by calling it, so a write lost in a cut is repaired at the plugin's next request with the
/// API reachable (create-agent, server-ping or job-completion: a `PluginRequestDone` with no
/// cut). Until then the pod keeps what it carried at the cut, and a server crash before such
/// a request (a second cut that started before one came, say) is inside the budget.
///
/// A `cluster_profile_edited` record changes the rules for what follows it: turning reuse off
/// makes every pod non-reusable (the server-ping carries the profile as it is now, so the
/// plugin may delete an idle pod at once), and pods that exist when reuse comes back on stay
/// so. A pod is reusable only if the job it was created for was scheduled with reuse on:
/// every create-agent for a job carries the cluster profile frozen in its plan at scheduling
/// (`frozen.rs`). A new idle timeout applies to pods that become idle afterwards; a pod idle
/// across the edit may be deleted after the lesser of the two, and its deadline moves out by
/// any increase.
#[derive(Debug)]
pub(crate) struct IdleTimeout {
    /// Whether the cluster profile has reuse on now (the monitor exists only if it starts on).
    reuse_on: bool,
    /// The settings each job's plan froze.
    frozen: FrozenSettings,
    idle_timeout_ms: u64,
    idle_deadline_ms: u64,
    /// How late the plugin may learn of a registration (PING).
    notice_ms: u64,
    /// Profile names, so a job's profile is a small index.
    profiles: Names,
    /// Every job's profile: a pod may be created for a job long after it finished.
    profile_of_job: IdMap<u32>,
    config_of_profile: BTreeMap<u32, String>,
    pods: NameMap<IdlePod>,
    deadlines: Deadlines<String>,
    /// Job ends the plugin may not have heard of yet (`completion_notice.rs`).
    completion_notice: CompletionNotice,
    outage: ServerOutage,
    api_cut: ApiCut,
    /// A cut ended and no plugin request finished since: the writes it lost are not repaired.
    awaiting_request: bool,
    /// The server restarted while a cut was in force: the restarted plugin lists no pod
    /// before the cut ends (the restart floor then counts from the cut's end).
    restarted_in_cut: bool,
    reported: BTreeSet<String>,
}

impl IdleTimeout {
    /// `idle_deadline_ms` is IDLE + PING (plus call slack); `notice_ms` is PING.
    pub(crate) fn new(
        idle_timeout_ms: u64,
        idle_deadline_ms: u64,
        notice_ms: u64,
        settings: ClusterSettings,
    ) -> Self {
        IdleTimeout {
            reuse_on: true,
            frozen: FrozenSettings::new(settings),
            idle_timeout_ms,
            idle_deadline_ms,
            notice_ms,
            profiles: Names::default(),
            profile_of_job: IdMap::default(),
            config_of_profile: BTreeMap::new(),
            pods: NameMap::default(),
            deadlines: Deadlines::default(),
            completion_notice: CompletionNotice::default(),
            outage: ServerOutage::default(),
            api_cut: ApiCut::new(notice_ms),
            awaiting_request: false,
            restarted_in_cut: false,
            reported: BTreeSet::new(),
        }
    }

    fn report(&mut self, at_ms: u64, pod: &str, message: String, out: &mut Vec<Violation>) {
        self.report_labelled(at_ms, pod, message, false, out);
    }

    /// Report once per pod; `expected` when the violation is outside the fault budget.
    fn report_labelled(
        &mut self,
        at_ms: u64,
        pod: &str,
        message: String,
        expected: bool,
        out: &mut Vec<Violation>,
    ) {
        if self.reported.insert(pod.to_owned()) {
            let objects = vec![format!("pod:{pod}")];
            let mut violation = Violation::new(
                InvariantId::IdleTimeout,
                Kind::Always,
                at_ms,
                objects,
                message,
            );
            violation.expected = expected;
            out.push(violation);
        }
    }

    fn report_passed(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        while let Some((deadline_ms, pod)) = self.deadlines.pop_passed(t_ms) {
            let since_ms = self
                .pods
                .get(&pod)
                .and_then(|p| p.idle_since_ms)
                .unwrap_or(0);
            let message = format!(
                "idle pod {pod} (idle since t={}) still existed at t={}, past its idle \
                 deadline ({} after becoming idle)",
                seconds(since_ms),
                seconds(deadline_ms),
                seconds(deadline_ms.saturating_sub(since_ms))
            );
            self.report(deadline_ms, &pod, message, out);
        }
    }

    /// The pod's agent is idle from `t_ms`; `notice_ms` is how late the plugin may learn it.
    fn become_idle(&mut self, t_ms: u64, pod: &str, notice_ms: u64) {
        let Some(state) = self.pods.get_mut(pod) else {
            return;
        };
        debug_assert!(
            state.idle_since_ms.is_none_or(|since| since <= t_ms),
            "{pod}: records reach the monitor in time order"
        );
        state.building = false;
        state.idle_since_ms = Some(t_ms);
        state.least_idle_timeout_ms = self.idle_timeout_ms;
        state.lost_writes_idle_since_ms = None;
        if !self.api_cut.is_cut() {
            state.written_idle_since_ms = Some(t_ms);
        }
        if state.reusable {
            let deadline_ms = t_ms
                .saturating_add(self.idle_deadline_ms)
                .saturating_add(notice_ms);
            self.deadlines.set(pod.to_owned(), deadline_ms);
        }
    }

    /// The plugin heard of the end of the pod's job `early_ms` before the latest it could:
    /// its idle deadline moves back by that much.
    fn heard_early(&mut self, pod: &str, early_ms: u64) {
        let key = pod.to_owned();
        if let Some(deadline_ms) = self.deadlines.get(&key) {
            self.deadlines
                .set(key, deadline_ms.saturating_sub(early_ms));
        }
    }

    /// Job `job` ended on `pod`: idle from now, and the plugin knows at the first of the
    /// job-completion's delivery and its next server-ping (`completion_notice.rs`).
    fn job_completed(&mut self, t_ms: u64, job: u64, pod: &str) {
        self.become_idle(t_ms, pod, self.notice_ms);
        if self.deadlines.get(&pod.to_owned()).is_some() {
            let by_ms = t_ms.saturating_add(self.notice_ms);
            self.completion_notice.ended(pod, job, by_ms);
        }
    }

    fn never_reusable(&mut self, pod: &str) {
        self.completion_notice.forget(pod);
        if let Some(state) = self.pods.get_mut(pod) {
            state.reusable = false;
            self.deadlines.remove(&pod.to_owned());
        }
    }

    fn pod_deleted(&mut self, t_ms: u64, pod: &str, by: Actor, out: &mut Vec<Violation>) {
        self.deadlines.remove(&pod.to_owned());
        self.completion_notice.forget(pod);
        let Some(state) = self.pods.remove(pod) else {
            return;
        };
        let Some(since_ms) = state.idle_since_ms else {
            return;
        };
        let idle_ms = t_ms.saturating_sub(since_ms);
        let idle_timeout_ms = state.least_idle_timeout_ms;
        if by == Actor::Allocator && state.reusable && idle_ms < idle_timeout_ms {
            let mut message = format!(
                "the allocator deleted reusable pod {pod} after it had been idle for {} \
                 (since t={}), before IDLE = {}",
                seconds(idle_ms),
                seconds(since_ms),
                seconds(idle_timeout_ms)
            );
            let earlier_ms = state.lost_writes_idle_since_ms;
            let excused = earlier_ms.filter(|&earlier| t_ms >= earlier + idle_timeout_ms);
            if let Some(earlier_ms) = excused {
                message.push_str(&format!(
                    " (outside the lost-writes fault budget: the pod was assigned and freed \
                     inside a cut between the plugin and the API that the server crashed in, \
                     so it still carried the idle start t={} of its earlier idle period, \
                     which the restarted plugin honoured)",
                    seconds(earlier_ms)
                ));
            }
            self.report_labelled(t_ms, pod, message, excused.is_some(), out);
        }
    }

    fn pod_created(&mut self, pod: &str, job_label: Option<u64>, config: &str) {
        let profile = job_label.and_then(|job| self.profile_of_job.get(job).copied());
        let current = profile.and_then(|p| self.config_of_profile.get(&p));
        let planned_reuse = job_label.is_none_or(|job| self.frozen.of_job(job).enable_agent_reuse);
        let reusable =
            self.reuse_on && planned_reuse && current.is_none_or(|current| current == config);
        let state = IdlePod {
            config: config.to_owned(),
            profile,
            reusable,
            building: false,
            idle_since_ms: None,
            least_idle_timeout_ms: self.idle_timeout_ms,
            written_idle_since_ms: None,
            lost_writes_idle_since_ms: None,
            node: None,
            away: false,
        };
        self.pods.insert(pod, state);
    }

    fn profile_edited(&mut self, profile: &str, config: &str) {
        let profile = self.profiles.intern(profile);
        self.config_of_profile.insert(profile, config.to_owned());
        let stale: Vec<String> = (self.pods.sorted().into_iter())
            .filter(|(_, p)| p.profile == Some(profile) && p.config != config)
            .map(|(pod, _)| pod.to_owned())
            .collect();
        for pod in stale {
            self.never_reusable(&pod);
        }
    }

    /// A node was lost: its pods' containers are gone, they can never take a job again.
    fn node_lost(&mut self, node: &str) {
        let lost: Vec<String> = (self.pods.sorted().into_iter())
            .filter(|(_, p)| p.node.as_deref() == Some(node))
            .map(|(pod, _)| pod.to_owned())
            .collect();
        for pod in lost {
            self.never_reusable(&pod);
        }
    }

    /// The plugin finished a request with the API reachable: it wrote what it holds.
    fn api_reachable(&mut self) {
        for state in self.pods.values_mut() {
            state.written_idle_since_ms = state.idle_since_ms;
        }
    }

    /// The server stopped: a pod idle whose idle start could not be written keeps the earlier
    /// one for the restarted plugin (the lost-writes budget).
    fn server_stopped(&mut self) {
        for state in self.pods.values_mut() {
            let lagging =
                state.idle_since_ms.is_some() && state.written_idle_since_ms != state.idle_since_ms;
            if lagging && let Some(written_ms) = state.written_idle_since_ms {
                state.lost_writes_idle_since_ms = Some(written_ms);
            }
        }
    }

    /// Server outages and cuts between the plugin and the API move the deadlines; a plugin
    /// request finished with the API reachable after a cut repairs the writes it lost.
    fn follow_faults(&mut self, t_ms: u64, record: &Record) {
        if let Some(down_ms) = self.outage.observe(t_ms, record) {
            // The restarted plugin sees an idle pod first at one of its lists, up to a PING
            // after the restart, and starts its clock then (explore/elastic seed 10426: idle
            // since the first list 10 s after the restart, the ping 0.1 s short of IDLE
            // after it, reaped one PING later).
            let floor_ms =
                (t_ms.saturating_add(self.idle_deadline_ms)).saturating_add(self.notice_ms);
            self.deadlines.delay_all(down_ms, floor_ms);
            self.restarted_in_cut = self.api_cut.is_cut();
        }
        if let Some(delay_ms) = self.api_cut.observe(t_ms, record) {
            // A plugin restarted inside the cut lists no pod before it ends, and cannot
            // trust the idle starts it then reads (the older process may have lost writes
            // up to its crash), so it sees its idle pods first at a list after the cut:
            // the restart floor counts from there (explore/elastic seeds 683, 11557).
            let floor_ms = if std::mem::take(&mut self.restarted_in_cut) {
                (t_ms.saturating_add(self.idle_deadline_ms)).saturating_add(self.notice_ms)
            } else {
                0
            };
            self.deadlines.delay_all(delay_ms, floor_ms);
            self.awaiting_request = true;
        }
        if self.awaiting_request
            && !self.api_cut.is_cut()
            && matches!(record, Record::PluginRequestDone { .. })
        {
            self.awaiting_request = false;
            self.api_reachable();
        }
    }

    /// An idle pod's agent out of touch with the server (Missing after a restart until it
    /// pings, LostContact, an agents|gocd cut) may be building for all the plugin can tell,
    /// and `safe` never deletes such a pod: it owes no deadline while away. Once the agent is
    /// Idle there again, the plugin sees it at its next list, so the deadline is then plus
    /// IDLE and two PINGs (explore/elastic seed 1999: an agents|gocd cut kept a registered
    /// idle agent Missing for 180 s after a server restart).
    fn agent_runtime(&mut self, t_ms: u64, agent: &str, state: AgentRuntime) {
        let Some(pod) = self.pods.get_mut(agent) else {
            return;
        };
        let key = agent.to_owned();
        match state {
            AgentRuntime::Missing | AgentRuntime::LostContact => {
                if !pod.building && pod.reusable && pod.idle_since_ms.is_some() {
                    pod.away = true;
                    self.deadlines.remove(&key);
                    self.completion_notice.forget(agent);
                }
            }
            AgentRuntime::Idle if std::mem::take(&mut pod.away) && pod.reusable => {
                // The deadline counts from the return now, the plugin's notice included.
                self.completion_notice.forget(agent);
                let deadline_ms =
                    (t_ms.saturating_add(self.idle_deadline_ms)).saturating_add(self.notice_ms);
                self.deadlines.set(key, deadline_ms);
            }
            AgentRuntime::Idle | AgentRuntime::Building => pod.away = false,
        }
    }

    fn agent_registered(&mut self, t_ms: u64, agent: &str) {
        // A re-registration keeps the earliest idle start: the plugin may remember it.
        let starts_idle = self
            .pods
            .get(agent)
            .is_some_and(|p| !p.building && p.idle_since_ms.is_none());
        if starts_idle {
            self.become_idle(t_ms, agent, self.notice_ms);
        }
    }

    fn job_assigned(&mut self, agent: &str) {
        self.completion_notice.forget(agent);
        let cut = self.api_cut.is_cut();
        if let Some(state) = self.pods.get_mut(agent) {
            state.building = true;
            state.idle_since_ms = None;
            state.lost_writes_idle_since_ms = None;
            if !cut {
                state.written_idle_since_ms = None;
            }
            self.deadlines.remove(&agent.to_owned());
        }
    }

    /// The cluster profile now has reuse `reuse_on` and idle timeout `idle_timeout_ms`.
    fn cluster_edited(&mut self, reuse_on: bool, idle_timeout_ms: u64) {
        if !reuse_on {
            // Every deadline is an idle pod's: none is owed any more.
            self.pods
                .values_mut()
                .for_each(|state| state.reusable = false);
            self.deadlines = Deadlines::default();
        }
        self.reuse_on = reuse_on;
        if idle_timeout_ms == self.idle_timeout_ms {
            return;
        }
        for state in self.pods.values_mut() {
            state.least_idle_timeout_ms = state.least_idle_timeout_ms.min(idle_timeout_ms);
        }
        let increase_ms = idle_timeout_ms.saturating_sub(self.idle_timeout_ms);
        if increase_ms > 0 {
            self.deadlines.delay_all(increase_ms, 0);
        }
        self.idle_deadline_ms = (self.idle_deadline_ms - self.idle_timeout_ms) + idle_timeout_ms;
        self.idle_timeout_ms = idle_timeout_ms;
    }
}

impl Monitor for IdleTimeout {
    fn id(&self) -> InvariantId {
        InvariantId::IdleTimeout
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        if !self.outage.is_down() && !self.api_cut.is_cut() {
            self.report_passed(t_ms, out);
        }
        self.frozen.observe(record);
        self.follow_faults(t_ms, record);
        for (pod, early_ms) in self.completion_notice.observe(t_ms, record) {
            self.heard_early(&pod, early_ms);
        }
        match record {
            Record::ServerStopped => self.server_stopped(),
            Record::JobScheduled { job, profile, .. } => {
                let profile = self.profiles.intern(profile);
                self.profile_of_job.insert(*job, profile);
            }
            Record::ProfileEdited { profile, config } => self.profile_edited(profile, config),
            Record::ClusterProfileEdited {
                enable_agent_reuse,
                idle_timeout_ms,
                ..
            } => self.cluster_edited(*enable_agent_reuse, *idle_timeout_ms),
            Record::PodCreated {
                pod,
                job_label,
                config,
                ..
            } => {
                self.pod_created(pod, *job_label, config);
            }
            Record::ContainerDied { pod }
            | Record::ContainerRestarted { pod, .. }
            | Record::PodPhase { pod, .. } => {
                self.never_reusable(pod);
            }
            Record::PodScheduled { pod, node } => {
                if let Some(state) = self.pods.get_mut(pod) {
                    state.node = Some(node.clone());
                }
            }
            Record::NodeLost { node } => self.node_lost(node),
            Record::AgentRegistered { agent, .. } => self.agent_registered(t_ms, agent),
            Record::AgentState { agent, state } => self.agent_runtime(t_ms, agent, *state),
            Record::JobCompleted { job, agent } => self.job_completed(t_ms, *job, agent),
            Record::JobAssigned { agent, .. } => self.job_assigned(agent),
            Record::PodDeleted { pod, by } => self.pod_deleted(t_ms, pod, *by, out),
            _ => {}
        }
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        if !self.outage.is_down() {
            self.report_passed(t_ms, out);
        }
    }
}

/// `reuse-happens` (sometimes, only with reuse): some job is assigned to an agent that had
/// completed an earlier job.
#[derive(Debug, Default)]
pub(crate) struct ReuseHappens {
    completed_agents: BTreeSet<String>,
    happened: bool,
}

impl Monitor for ReuseHappens {
    fn id(&self) -> InvariantId {
        InvariantId::ReuseHappens
    }

    fn observe(&mut self, _t_ms: u64, record: &Record, _out: &mut Vec<Violation>) {
        match record {
            Record::JobCompleted { agent, .. } if !self.happened => {
                self.completed_agents.insert(agent.clone());
            }
            Record::JobAssigned { agent, .. } if self.completed_agents.contains(agent) => {
                debug_assert!(!self.happened, "agents are forgotten once reuse happened");
                self.happened = true;
                // Nothing more to learn: free the memory.
                self.completed_agents.clear();
            }
            _ => {}
        }
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        if !self.happened {
            let message = "reuse is enabled but no job ran on an agent that had run an earlier job";
            out.push(Violation::new(
                self.id(),
                Kind::Sometimes,
                t_ms,
                Vec::new(),
                message.into(),
            ));
        }
    }
}

/// `restart-recovers` (sometimes, only if the server stopped): some pod created before a
/// `ServerStopped` is assigned a job after the following `ServerStarted`.
#[derive(Debug, Default)]
pub(crate) struct RestartRecovers {
    /// How many `ServerStopped` records came before each live pod's creation.
    stops_before_pod: NameMap<u32>,
    stops_count: u32,
    server_down: bool,
    happened: bool,
}

impl Monitor for RestartRecovers {
    fn id(&self) -> InvariantId {
        InvariantId::RestartRecovers
    }

    fn observe(&mut self, _t_ms: u64, record: &Record, _out: &mut Vec<Violation>) {
        match record {
            Record::ServerStopped => {
                debug_assert!(
                    !self.server_down,
                    "a stopped server starts before it stops again"
                );
                self.stops_count += 1;
                self.server_down = true;
            }
            Record::ServerStarted => self.server_down = false,
            Record::PodCreated { pod, .. } => {
                debug_assert!(
                    !self.stops_before_pod.contains_key(pod),
                    "pod {pod} is created once while it exists"
                );
                self.stops_before_pod.insert(pod, self.stops_count);
            }
            Record::PodDeleted { pod, .. } => {
                self.stops_before_pod.remove(pod);
            }
            Record::JobAssigned { agent, .. } if !self.server_down => {
                let stops = self.stops_before_pod.get(agent).copied();
                if stops.is_some_and(|stops| stops < self.stops_count) {
                    self.happened = true;
                }
            }
            _ => {}
        }
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        if self.stops_count > 0 && !self.happened {
            let message = format!(
                "the server stopped {} time(s) but no pod created before a stop ran a job after \
                 the restart",
                self.stops_count
            );
            out.push(Violation::new(
                self.id(),
                Kind::Sometimes,
                t_ms,
                Vec::new(),
                message,
            ));
        }
    }
}
