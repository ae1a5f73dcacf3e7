//! The kubelet side: scheduling onto node slots, start-up, container death and restart,
//! pod removal and node loss.

use super::api::{KubeApi, Node, PodState};
use super::{KubeEffects, KubeTimer};
use crate::component::Random;
use crate::engine::{SimTime, Stream};
use crate::resources::PodPhase;
use crate::trace::{Actor, Record};
use std::sync::Arc;

/// The kubelet's restart back-off cap (Kubernetes: five minutes).
const BACKOFF_MS_MAX: u64 = 5 * 60_000;

impl KubeApi {
    /// Place waiting pods on nodes with a free slot, oldest first. A pod that finds none is
    /// reported Unschedulable once and waits.
    pub(super) fn schedule_pending(
        &mut self,
        now: SimTime,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) {
        let mut still_waiting = std::collections::VecDeque::new();
        while let Some(name) = self.unscheduled.pop_front() {
            let Some(state) = self.pods.get(&name) else {
                continue;
            };
            if state.pod.node.is_some() {
                continue;
            }
            let capacity = self.settings.pods_per_node;
            let Some(index) = self.nodes.iter().position(|n| n.alive && n.used < capacity) else {
                if !state.reported_unschedulable {
                    fx.records
                        .push(Record::PodUnschedulable { pod: name.clone() });
                    let state = self.pods.get_mut(&name).expect("looked up above");
                    state.reported_unschedulable = true;
                }
                still_waiting.push_back(name);
                continue;
            };
            self.nodes[index].used += 1;
            let node = self.nodes[index].name.clone();
            let rv = self.bump();
            let state = self.pods.get_mut(&name).expect("looked up above");
            Arc::make_mut(&mut state.pod).node = Some(node.clone());
            Arc::make_mut(&mut state.pod).resource_version = rv;
            let (min, max) = self.settings.pod_startup_ms;
            let sample = &self.settings.pod_startup_sample_ms;
            let startup_ms = if sample.is_empty() {
                random.range_inclusive(min, max)
            } else {
                sample[random.below(sample.len() as u64) as usize]
            };
            let uid = state.pod.uid;
            self.publish(&name);
            fx.timers
                .push((now.plus_ms(startup_ms), KubeTimer::PodStarted { uid }));
            fx.records.push(Record::PodScheduled { pod: name, node });
        }
        self.unscheduled = still_waiting;
    }

    /// A kubelet timer fired.
    pub fn handle_timer(
        &mut self,
        now: SimTime,
        timer: KubeTimer,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) {
        match timer {
            KubeTimer::PodStarted { uid } | KubeTimer::ContainerRestart { uid } => {
                self.container_started(uid, timer, fx);
            }
            KubeTimer::PodGone { uid } => {
                if let Some(name) = self.uid_to_name.get(&uid).cloned() {
                    fx.records.push(Record::PodGone { pod: name.clone() });
                    self.remove_from_store(now, &name, random, fx);
                }
            }
            KubeTimer::NodeEvicted { node } => self.evict_node(now, node, random, fx),
            KubeTimer::NodeJoins => self.add_node(now, random, fx),
        }
    }

    /// The container of pod `uid` started (first start or restart after back-off), unless
    /// the pod is being deleted or its node is gone.
    fn container_started(&mut self, uid: u64, timer: KubeTimer, fx: &mut KubeEffects) {
        let Some(name) = self.uid_to_name.get(&uid).cloned() else {
            return;
        };
        let rv = self.bump();
        let Some(state) = self.pods.get(&name) else {
            return;
        };
        if self.on_lost_node(state) {
            return;
        }
        let state = self.pods.get_mut(&name).expect("looked up above");
        if state.pod.uid != uid
            || state.container_running
            || state.pod.phase == PodPhase::Failed
            || state.pod.is_terminating()
        {
            return;
        }
        if let KubeTimer::ContainerRestart { .. } = timer {
            Arc::make_mut(&mut state.pod).restart_count += 1;
            let restart_count = state.pod.restart_count;
            fx.records.push(Record::ContainerRestarted {
                pod: name.clone(),
                restart_count,
            });
        } else {
            Arc::make_mut(&mut state.pod).phase = PodPhase::Running;
            state.started = true;
            fx.records.push(Record::PodRunning { pod: name.clone() });
        }
        Arc::make_mut(&mut state.pod).ready = true;
        Arc::make_mut(&mut state.pod).resource_version = rv;
        state.container_running = true;
        self.publish(&name);
        fx.agent_started.push((uid, name));
    }

    /// True when the pod was placed on a node that is gone.
    fn on_lost_node(&self, state: &PodState) -> bool {
        state
            .pod
            .node
            .as_deref()
            .is_some_and(|node| self.nodes.iter().any(|n| n.name == node && !n.alive))
    }

    /// The agent container of a running pod dies (OOM kill, `container_restart` fault); the
    /// kubelet restarts it after its back-off (10 s, doubling up to 5 min).
    pub fn kill_container(&mut self, now: SimTime, name: &str, fx: &mut KubeEffects) -> bool {
        let rv = self.bump();
        let base = self.settings.container_restart_backoff_ms;
        let Some(state) = self.pods.get_mut(name) else {
            return false;
        };
        if !state.container_running {
            return false;
        }
        state.container_running = false;
        Arc::make_mut(&mut state.pod).ready = false;
        Arc::make_mut(&mut state.pod).resource_version = rv;
        state.backoff_ms = if state.backoff_ms == 0 {
            base
        } else {
            (state.backoff_ms * 2).min(BACKOFF_MS_MAX)
        };
        let uid = state.pod.uid;
        fx.records.push(Record::ContainerDied {
            pod: name.to_owned(),
        });
        fx.agent_killed.push(uid);
        fx.timers.push((
            now.plus_ms(state.backoff_ms),
            KubeTimer::ContainerRestart { uid },
        ));
        self.publish(name);
        true
    }

    /// The pod fails for good (eviction, image error): phase Failed, container stopped, no
    /// restart. The pod object stays until someone deletes it.
    pub fn fail_pod(&mut self, name: &str, fx: &mut KubeEffects) -> bool {
        let rv = self.bump();
        let Some(state) = self.pods.get_mut(name) else {
            return false;
        };
        if state.pod.phase == PodPhase::Failed {
            return false;
        }
        Arc::make_mut(&mut state.pod).phase = PodPhase::Failed;
        Arc::make_mut(&mut state.pod).ready = false;
        Arc::make_mut(&mut state.pod).resource_version = rv;
        if state.container_running {
            state.container_running = false;
            fx.agent_killed.push(state.pod.uid);
        }
        fx.records.push(Record::PodPhase {
            pod: name.to_owned(),
            phase: "Failed".to_owned(),
        });
        self.publish(name);
        true
    }

    /// Delete a pod (API delete, eviction). A pod whose container runs gets a deletion
    /// timestamp and stays listed, phase unchanged, until its grace period is over; its
    /// go-agent gets the stop signal now. Any other pod leaves the store at once. Deleting a
    /// pod that is already terminating changes nothing (and succeeds).
    pub(super) fn delete_pod(
        &mut self,
        now: SimTime,
        name: &str,
        actor: Actor,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) -> bool {
        let grace_ms = self.settings.termination_grace_ms;
        let Some(state) = self.pods.get(name) else {
            return false;
        };
        if state.pod.is_terminating() {
            return true;
        }
        fx.records.push(Record::PodDeleted {
            pod: name.to_owned(),
            by: actor,
        });
        if !state.container_running || grace_ms == 0 {
            self.remove_from_store(now, name, random, fx);
            return true;
        }
        let rv = self.bump();
        let state = self.pods.get_mut(name).expect("looked up above");
        let pod = Arc::make_mut(&mut state.pod);
        pod.deletion_ms = Some(now.as_ms());
        pod.ready = false;
        pod.resource_version = rv;
        state.container_running = false;
        let uid = state.pod.uid;
        fx.agent_killed.push(uid);
        fx.timers
            .push((now.plus_ms(grace_ms), KubeTimer::PodGone { uid }));
        self.publish(name);
        true
    }

    /// The pod leaves the store: its slot is freed and its agent, if any, killed.
    fn remove_from_store(
        &mut self,
        now: SimTime,
        name: &str,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) {
        let Some(state) = self.pods.remove(name) else {
            return;
        };
        self.publish(name);
        self.bump();
        self.uid_to_name.remove(&state.pod.uid);
        if let Some(node) = &state.pod.node
            && let Some(slot) = self.nodes.iter_mut().find(|n| &n.name == node)
        {
            slot.used = slot.used.saturating_sub(1);
        }
        if state.container_running {
            fx.agent_killed.push(state.pod.uid);
        }
        self.schedule_pending(now, random, fx);
    }

    /// Delete a pod as `kubectl delete pod` would (a fault).
    pub fn delete_pod_external(
        &mut self,
        now: SimTime,
        name: &str,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) -> bool {
        self.delete_pod(now, name, Actor::External, random, fx)
    }

    /// A node becomes unreachable: its containers are gone (their agents stop at once), its
    /// pods stay listed, not ready, phase unchanged, until they are evicted after
    /// `node_eviction`. With `replace_after_ms`, a new empty node of the same size joins then.
    /// Returns None if no live node is left to lose.
    pub fn lose_node(
        &mut self,
        now: SimTime,
        random: &mut Stream,
        replace_after_ms: Option<u64>,
        fx: &mut KubeEffects,
    ) -> Option<String> {
        let alive: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].alive)
            .collect();
        if alive.is_empty() {
            return None;
        }
        let index = alive[random.below(alive.len() as u64) as usize];
        self.nodes[index].alive = false;
        let node = self.nodes[index].name.clone();
        fx.records.push(Record::NodeLost { node: node.clone() });
        let victims: Vec<String> = self
            .pods
            .values()
            .filter(|s| s.pod.node.as_deref() == Some(node.as_str()))
            .map(|s| s.pod.name.clone())
            .collect();
        for name in victims {
            let rv = self.bump();
            let state = self.pods.get_mut(&name).expect("listed above");
            Arc::make_mut(&mut state.pod).ready = false;
            Arc::make_mut(&mut state.pod).resource_version = rv;
            if std::mem::take(&mut state.container_running) {
                fx.agent_killed.push(state.pod.uid);
            }
            self.publish(&name);
        }
        let node_index = index as u32;
        let eviction_ms = self.settings.node_eviction_ms;
        if eviction_ms == 0 {
            self.evict_node(now, node_index, random, fx);
        } else {
            let evicted = KubeTimer::NodeEvicted { node: node_index };
            fx.timers.push((now.plus_ms(eviction_ms), evicted));
        }
        if let Some(after_ms) = replace_after_ms {
            fx.timers
                .push((now.plus_ms(after_ms), KubeTimer::NodeJoins));
        }
        Some(node)
    }

    /// The pods still listed on lost node `index` are evicted: deleted by the node
    /// lifecycle controller, and gone at once (no kubelet is left to wait for).
    fn evict_node(&mut self, now: SimTime, index: u32, random: &mut Stream, fx: &mut KubeEffects) {
        let node = self.nodes[index as usize].name.clone();
        let victims: Vec<(String, bool)> = self
            .pods
            .values()
            .filter(|s| s.pod.node.as_deref() == Some(node.as_str()))
            .map(|s| (s.pod.name.clone(), s.pod.is_terminating()))
            .collect();
        for (name, terminating) in victims {
            fx.records.push(if terminating {
                Record::PodGone { pod: name.clone() }
            } else {
                Record::PodDeleted {
                    pod: name.clone(),
                    by: Actor::NodeLoss,
                }
            });
            self.remove_from_store(now, &name, random, fx);
        }
    }

    /// A new empty node with the cluster's pod slots joins; waiting pods are placed on it.
    fn add_node(&mut self, now: SimTime, random: &mut Stream, fx: &mut KubeEffects) {
        let name = format!("node-{}", self.nodes.len());
        self.nodes.push(Node {
            name: name.clone(),
            alive: true,
            used: 0,
        });
        fx.records.push(Record::NodeJoined { node: name });
        self.schedule_pending(now, random, fx);
    }

    /// Nodes that are up.
    pub fn live_node_count(&self) -> u32 {
        self.nodes.iter().filter(|n| n.alive).count() as u32
    }

    /// Count pods by phase: (not Running, Running).
    pub fn phase_counts(&self) -> (u32, u32) {
        let running = self
            .pods
            .values()
            .filter(|s| s.pod.phase == PodPhase::Running)
            .count() as u32;
        (self.pods.len() as u32 - running, running)
    }
}
