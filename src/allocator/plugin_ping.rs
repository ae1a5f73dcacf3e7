//! server-ping as the master branch runs it (and PR #355 leaves it): refresh every cluster
//! profile's map, then per cluster disable old idle agents, terminate disabled idle ones,
//! delete unregistered pods older than the auto-register timeout, and finally disable and
//! delete agents that no map knows (`checkForPossiblyMissingAgents`).
//!
//! A failed pod delete throws out of the plugin's executor, so it ends the whole ping here too.

use super::DecisionCode;
use super::declaration::{DeclaredCode, RequestKind, code};
use super::instances::{ClusterKey, KnownPod, PodMap};
use super::plugin_core::{Plugin, Rules, Waiter};
use super::{
    AgentMetadata, AgentState, ClusterProfile, ConfigState, Outbox, RequestId, ServerApi,
    ServerPingRequest,
};
use crate::resources::{KubeReply, KubeRequest, KubeResult};
use std::collections::{BTreeSet, VecDeque};

enum PingStage {
    /// The list call for `clusters[index]` is outstanding.
    Refreshing,
    /// Cleanup of `clusters[index]` starts (synchronous part).
    Begin,
    /// Terminating disabled idle agents: the head's delete is outstanding once issued.
    DeletingDisabled {
        names: VecDeque<String>,
        agents: Vec<String>,
        registered: BTreeSet<String>,
    },
    /// `terminateUnregisteredInstances`: a GET per pod the server does not know.
    Probing {
        names: VecDeque<String>,
        expired: Vec<String>,
    },
    DeletingUnregistered {
        names: VecDeque<String>,
    },
}

/// A server-ping in progress.
pub(super) struct PingTask {
    clusters: Vec<(ClusterKey, ClusterProfile)>,
    index: usize,
    stage: PingStage,
}

/// Drop leading names the map no longer holds (`terminate` of an unknown pod only forgets the
/// name) and return the next one to delete.
fn next_known(names: &mut VecDeque<String>, pods: &PodMap) -> Option<String> {
    while names.front().is_some_and(|name| !pods.contains_key(name)) {
        names.pop_front();
    }
    debug_assert!(names.front().is_none_or(|name| pods.contains_key(name)));
    names.front().cloned()
}

/// `AGENT_IDLE_PREDICATE` / `AGENT_DISABLED_PREDICATE`: Missing and LostContact count as idle.
fn idle_like(agent: &AgentMetadata) -> bool {
    matches!(
        agent.agent_state,
        AgentState::Idle | AgentState::Missing | AgentState::LostContact
    )
}

impl<R: Rules> Plugin<R> {
    pub(super) fn handle_ping(
        &mut self,
        id: RequestId,
        request: ServerPingRequest,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let clusters = request
            .all_cluster_profile_properties
            .iter()
            .map(|properties| {
                (
                    ClusterKey::from_properties(properties),
                    ClusterProfile::from_properties(properties),
                )
            })
            .collect::<Vec<_>>();
        if clusters.is_empty() {
            self.delete_missing_agents(server, out);
            self.finish(id, out);
            return;
        }
        debug_assert_eq!(
            clusters.len(),
            request.all_cluster_profile_properties.len(),
            "a ping visits every cluster profile it names"
        );
        let task = PingTask {
            clusters,
            index: 0,
            stage: PingStage::Refreshing,
        };
        self.park_ping(id, task);
        self.issue(Waiter::Task(id), Self::list_pods_request(), out);
    }

    pub(super) fn ping_on_kube(
        &mut self,
        now_ms: u64,
        id: RequestId,
        mut task: PingTask,
        result: KubeResult,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        let key = task.clusters[task.index].0.clone();
        let profile = task.clusters[task.index].1.clone();
        match &mut task.stage {
            PingStage::Begin => panic!("a ping beginning a cleanup has no call outstanding"),
            PingStage::Refreshing => {
                self.apply_refresh(&key, result, out);
                task.index += 1;
                if task.index < task.clusters.len() {
                    self.park_ping(id, task);
                    self.issue(Waiter::Task(id), Self::list_pods_request(), out);
                    return;
                }
                task.index = 0;
                task.stage = PingStage::Begin;
            }
            PingStage::DeletingDisabled { names, .. }
            | PingStage::DeletingUnregistered { names } => {
                let name = names
                    .pop_front()
                    .expect("the head's delete was outstanding");
                if !Self::deleted(&result) {
                    let text = format!(
                        "server ping: deleting pod {name} failed ({result:?}); the plugin's \
                         executor throws, so the rest of this ping is skipped"
                    );
                    out.decide(None, Some(&name), DecisionCode::PingAborted, text);
                    self.finish(id, out);
                    return;
                }
                let cluster = self.clusters.get_mut(&key).expect("a refresh made the map");
                cluster.refreshed.touch(&name);
                cluster.pods.remove(&name);
            }
            PingStage::Probing { names, expired } => {
                let name = names.pop_front().expect("the head's get was outstanding");
                // A failed GET reads as "already deleted" and skips the pod.
                let timeout_ms = profile.auto_register_timeout_ms;
                if let Ok(KubeReply::Pod(pod)) = result
                    && now_ms > pod.created_ms + timeout_ms
                {
                    let job_id = KnownPod::from_pod(&pod).job_id;
                    let text = format!(
                        "pod {name} never registered an agent and is older than the \
                         auto-register timeout ({timeout_ms} ms): deleting it"
                    );
                    out.decide(job_id, Some(&name), DecisionCode::ReapUnregistered, text);
                    expired.push(name);
                }
            }
        }
        self.advance_ping(now_ms, id, task, server, out);
    }

    /// Run the ping's synchronous steps until it waits for a call or is done.
    fn advance_ping(
        &mut self,
        now_ms: u64,
        id: RequestId,
        mut task: PingTask,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) {
        loop {
            debug_assert!(
                task.index < task.clusters.len(),
                "the ping is on one of its clusters"
            );
            let (key, profile) = task.clusters[task.index].clone();
            let pods = &self
                .clusters
                .get(&key)
                .expect("a refresh made the map")
                .pods;
            match &mut task.stage {
                PingStage::Refreshing => panic!("refreshing waits for its list call"),
                PingStage::Begin => {
                    task.stage = self.disable_old_agents(now_ms, &key, &profile, server, out);
                }
                PingStage::DeletingDisabled {
                    names,
                    agents,
                    registered,
                } => {
                    if let Some(name) = next_known(names, pods) {
                        let delete = KubeRequest::DeletePod { name };
                        self.park_ping(id, task);
                        return self.issue(Waiter::Task(id), delete, out);
                    }
                    if !agents.is_empty() {
                        server.delete_agents(agents);
                    }
                    let unknown = pods.keys().filter(|name| !registered.contains(*name));
                    let names = unknown.cloned().collect();
                    task.stage = PingStage::Probing {
                        names,
                        expired: Vec::new(),
                    };
                }
                PingStage::Probing { names, expired } => {
                    if let Some(name) = names.front() {
                        let get = KubeRequest::GetPod { name: name.clone() };
                        self.park_ping(id, task);
                        return self.issue(Waiter::Task(id), get, out);
                    }
                    let names = std::mem::take(expired).into();
                    task.stage = PingStage::DeletingUnregistered { names };
                }
                PingStage::DeletingUnregistered { names } => {
                    if let Some(name) = next_known(names, pods) {
                        let delete = KubeRequest::DeletePod { name };
                        self.park_ping(id, task);
                        return self.issue(Waiter::Task(id), delete, out);
                    }
                    task.index += 1;
                    if task.index == task.clusters.len() {
                        self.delete_missing_agents(server, out);
                        return self.finish(id, out);
                    }
                    task.stage = PingStage::Begin;
                }
            }
        }
    }

    /// `instancesCreatedAfterTimeout` + `disableIdleAgents`, then pick the disabled idle agents
    /// to terminate.
    fn disable_old_agents(
        &mut self,
        now_ms: u64,
        key: &ClusterKey,
        profile: &ClusterProfile,
        server: &mut dyn ServerApi,
        out: &mut Outbox,
    ) -> PingStage {
        let pods = &self.clusters.get(key).expect("a refresh made the map").pods;
        let timeout_ms = profile.auto_register_timeout_ms;
        let mut to_disable = Vec::new();
        for agent in server.list_agents() {
            let Some(pod) = pods.get(&*agent.agent_id) else {
                continue;
            };
            let old = now_ms > pod.created_ms + timeout_ms;
            if old && agent.config_state == ConfigState::Enabled && idle_like(&agent) {
                let text = format!(
                    "agent {} is {:?} at the server and its pod is older than the auto-register \
                     timeout ({timeout_ms} ms since creation): disabling it",
                    agent.agent_id, agent.agent_state
                );
                out.decide(
                    pod.job_id,
                    Some(&agent.agent_id),
                    DecisionCode::DisableOld,
                    text,
                );
                to_disable.push(agent.agent_id.to_string());
            }
        }
        if !to_disable.is_empty() {
            server.disable_agents(&to_disable);
        }
        let agents = server.list_agents();
        let registered = agents
            .iter()
            .map(|agent| agent.agent_id.to_string())
            .collect();
        let mut terminate = Vec::new();
        for agent in agents {
            if agent.config_state == ConfigState::Disabled && idle_like(&agent) {
                let job_id = pods.get(&*agent.agent_id).and_then(|pod| pod.job_id);
                let text = format!(
                    "agent {} is Disabled and {:?} at the server: deleting its pod and the agent",
                    agent.agent_id, agent.agent_state
                );
                out.decide(job_id, Some(&agent.agent_id), DecisionCode::ReapIdle, text);
                terminate.push(agent.agent_id.to_string());
            }
        }
        PingStage::DeletingDisabled {
            names: terminate.clone().into(),
            agents: terminate,
            registered,
        }
    }

    /// `checkForPossiblyMissingAgents`: agents no map knows are disabled and deleted at once.
    fn delete_missing_agents(&mut self, server: &mut dyn ServerApi, out: &mut Outbox) {
        let mut missing = Vec::new();
        for agent in server.list_agents() {
            if self
                .clusters
                .values()
                .any(|cluster| cluster.pods.contains_key(&*agent.agent_id))
            {
                continue;
            }
            let text = format!(
                "agent {} has no pod in any of the plugin's maps: disabling and deleting it",
                agent.agent_id
            );
            out.decide(None, Some(&agent.agent_id), DecisionCode::ReapMissing, text);
            missing.push(agent.agent_id.to_string());
        }
        if !missing.is_empty() {
            server.disable_agents(&missing);
            server.delete_agents(&missing);
        }
    }
}

/// The decisions the shared server-ping clean-up records for `upstream` and `pr355`.
pub(super) const PING_CODES: &[DeclaredCode] = &[
    code(
        DecisionCode::PingAborted,
        RequestKind::ServerPing,
        "a call of the ping failed: the rest of the clean-up waits for the next ping",
    ),
    code(
        DecisionCode::ReapUnregistered,
        RequestKind::ServerPing,
        "a pod did not register within auto_register_timeout: deleted",
    ),
    code(
        DecisionCode::DisableOld,
        RequestKind::ServerPing,
        "an idle agent is older than its timeout: disabled before deletion",
    ),
    code(
        DecisionCode::ReapIdle,
        RequestKind::ServerPing,
        "a disabled idle agent: its pod and the agent are deleted",
    ),
    code(
        DecisionCode::ReapMissing,
        RequestKind::ServerPing,
        "an agent whose pod is gone: the agent is deleted",
    ),
];
