//! The kubelet side: scheduling onto node slots, start-up, container death and restart,
//! pod removal and node loss.

use super::api::KubeApi;
use super::{KubeEffects, KubeTimer};
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
            fx.timers
                .push((now.plus_ms(startup_ms), KubeTimer::PodStarted { uid }));
            fx.records.push(Record::PodScheduled { pod: name, node });
        }
        self.unscheduled = still_waiting;
    }

    /// A kubelet timer fired.
    pub fn handle_timer(&mut self, timer: KubeTimer, fx: &mut KubeEffects) {
        let uid = match timer {
            KubeTimer::PodStarted { uid } | KubeTimer::ContainerRestart { uid } => uid,
        };
        let Some(name) = self.uid_to_name.get(&uid).cloned() else {
            return;
        };
        let rv = self.bump();
        let Some(state) = self.pods.get_mut(&name) else {
            return;
        };
        if state.pod.uid != uid || state.container_running || state.pod.phase == PodPhase::Failed {
            return;
        }
        match timer {
            KubeTimer::PodStarted { .. } => {
                Arc::make_mut(&mut state.pod).phase = PodPhase::Running;
                state.started = true;
                fx.records.push(Record::PodRunning { pod: name.clone() });
            }
            KubeTimer::ContainerRestart { .. } => {
                Arc::make_mut(&mut state.pod).restart_count += 1;
                let restart_count = state.pod.restart_count;
                fx.records.push(Record::ContainerRestarted {
                    pod: name.clone(),
                    restart_count,
                });
            }
        }
        Arc::make_mut(&mut state.pod).ready = true;
        Arc::make_mut(&mut state.pod).resource_version = rv;
        state.container_running = true;
        fx.agent_started.push((uid, name));
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
        true
    }

    /// Remove a pod (API delete, node loss). Frees its slot and kills its agent.
    pub(super) fn remove_pod(
        &mut self,
        now: SimTime,
        name: &str,
        actor: Actor,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) -> bool {
        let Some(state) = self.pods.remove(name) else {
            return false;
        };
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
        fx.records.push(Record::PodDeleted {
            pod: name.to_owned(),
            by: actor,
        });
        self.schedule_pending(now, random, fx);
        true
    }

    /// Delete a pod as `kubectl delete pod` would (a fault).
    pub fn delete_pod_external(
        &mut self,
        now: SimTime,
        name: &str,
        random: &mut Stream,
        fx: &mut KubeEffects,
    ) -> bool {
        self.remove_pod(now, name, Actor::External, random, fx)
    }

    /// A node disappears with all its pods. Returns false if no live node is left to lose.
    pub fn lose_node(
        &mut self,
        now: SimTime,
        random: &mut Stream,
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
            self.remove_pod(now, &name, Actor::NodeLoss, random, fx);
        }
        Some(node)
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
