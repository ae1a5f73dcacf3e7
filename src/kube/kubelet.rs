//! The kubelet side: scheduling onto node slots, start-up, container death and restart,
//! pod removal and node loss.

use super::api::{KubeApi, Node, PodState};
use super::{KubeEffects, KubeTimer};
use crate::component::{Component, Random};
use crate::engine::SimTime;
use crate::resources::PodPhase;
use crate::trace::{Actor, Record};
use std::collections::BTreeMap;
use std::sync::Arc;

/// The kubelet's restart back-off cap (Kubernetes: five minutes).
const BACKOFF_MS_MAX: u64 = 5 * 60_000;

/// Everything that happens to the kubelets: their own timers firing and the faults that hit
/// a container, a pod or a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KubeletInput {
    /// A kubelet timer the kubelets asked for is due.
    Timer(KubeTimer),
    /// The agent container of a running pod dies (OOM kill, `container_restart` fault); the
    /// kubelet restarts it after its back-off (10 s, doubling up to 5 min). Counts in
    /// [`KubeEffects::hits`] if the container was running.
    KillContainer {
        /// The pod's name.
        pod: String,
    },
    /// The pod fails for good (eviction, image error): phase Failed, container stopped, no
    /// restart; the pod object stays until someone deletes it. Counts in
    /// [`KubeEffects::hits`] unless the pod is missing or Failed already.
    FailPod {
        /// The pod's name.
        pod: String,
    },
    /// The pod is deleted as `kubectl delete pod` would (a fault): the API's delete by
    /// [`Actor::External`]. Counts in [`KubeEffects::hits`] if the pod exists.
    DeletePod {
        /// The pod's name.
        pod: String,
    },
    /// A node, drawn among the live ones, becomes unreachable: its containers are gone, its
    /// pods stay listed, not ready, until they are evicted after `node_eviction`. With
    /// `replace_after_ms`, a new empty node of the same size joins then. The node lost goes
    /// to [`KubeEffects::lost_nodes`] (nothing when no live node is left).
    LoseNode {
        /// When a replacement node joins, after the loss.
        replace_after_ms: Option<u64>,
    },
    /// A new empty node of the cluster's size joins (`node_add` fault: a cluster
    /// autoscaler's scale-up) and takes the pods waiting for a slot.
    AddNode,
}

/// The kubelet timers asked for and not fired yet, by due time: each `(due ms, timer)` with
/// the number of times it is armed (one node loss may ask for two `NodeJoins` at one time).
/// Arming and firing are O(log n) in the timers pending, never a walk over the pods.
#[derive(Debug, Default)]
pub(super) struct KubeletTimers(BTreeMap<(u64, KubeTimer), u32>);

impl KubeletTimers {
    fn arm(&mut self, at_ms: u64, timer: KubeTimer) {
        *self.0.entry((at_ms, timer)).or_insert(0) += 1;
    }

    /// `timer` fired at `now_ms`, the time it was set for.
    fn fired(&mut self, now_ms: u64, timer: KubeTimer) {
        let key = (now_ms, timer);
        match self.0.get_mut(&key) {
            Some(1) => {
                self.0.remove(&key);
            }
            Some(count) => *count -= 1,
            None => debug_assert!(false, "kubelet timer {timer:?} fired at {now_ms} unasked"),
        }
    }

    fn first(&self) -> Option<u64> {
        self.0.first_key_value().map(|(&(at_ms, _), _)| at_ms)
    }
}

/// The kubelets of the cluster as one component, borrowed from the [`KubeApi`] whose store
/// they share (they write pod status through it, as real kubelets do through the API
/// server): `kube.kubelets().handle(…)`. Their timers are absolute simulated times, returned
/// in [`KubeEffects::timers`]; the ones an API write sets (a created pod's start-up, a
/// deleted pod's grace period) are theirs too and count in `next_deadline`.
pub(crate) struct Kubelets<'a> {
    cluster: &'a mut KubeApi,
}

impl KubeApi {
    /// The kubelets, as a [`Component`].
    pub(crate) fn kubelets(&mut self) -> Kubelets<'_> {
        Kubelets { cluster: self }
    }

    /// Ask for kubelet timer `timer` at `at`.
    fn set_timer(&mut self, at: SimTime, timer: KubeTimer, fx: &mut KubeEffects) {
        self.kubelet_timers.arm(at.as_ms(), timer);
        fx.timers.push((at, timer));
    }

    fn kubelet_input(
        &mut self,
        now: SimTime,
        input: KubeletInput,
        random: &mut dyn Random,
        fx: &mut KubeEffects,
    ) {
        let hit = match input {
            KubeletInput::Timer(timer) => {
                self.kubelet_timers.fired(now.as_ms(), timer);
                self.handle_timer(now, timer, random, fx);
                false
            }
            KubeletInput::KillContainer { pod } => self.kill_container(now, &pod, fx),
            KubeletInput::FailPod { pod } => self.fail_pod(&pod, fx),
            KubeletInput::DeletePod { pod } => {
                self.delete_pod(now, &pod, Actor::External, random, fx)
            }
            KubeletInput::LoseNode { replace_after_ms } => {
                if let Some(node) = self.lose_node(now, random, replace_after_ms, fx) {
                    fx.lost_nodes.push(node);
                }
                false
            }
            KubeletInput::AddNode => {
                self.add_node(now, random, fx);
                false
            }
        };
        fx.hits += u32::from(hit);
    }
}

impl Component for Kubelets<'_> {
    type Input = KubeletInput;
    type Output = KubeEffects;

    fn handle(
        &mut self,
        now_ms: u64,
        input: KubeletInput,
        random: &mut dyn Random,
        out: &mut KubeEffects,
    ) {
        let before = self.cluster.resource_version;
        self.cluster
            .kubelet_input(SimTime::from_ms(now_ms), input, random, out);
        self.cluster.check_store_after(before);
    }

    fn next_deadline(&self) -> Option<u64> {
        self.cluster.kubelet_timers.first()
    }
}

impl KubeApi {
    /// Place waiting pods on nodes with a free slot, oldest first. A pod that finds none is
    /// reported Unschedulable once and waits.
    pub(super) fn schedule_pending(
        &mut self,
        now: SimTime,
        random: &mut dyn Random,
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
            self.set_timer(now.plus_ms(startup_ms), KubeTimer::PodStarted { uid }, fx);
            fx.records.push(Record::PodScheduled { pod: name, node });
        }
        self.unscheduled = still_waiting;
    }

    /// A kubelet timer fired.
    fn handle_timer(
        &mut self,
        now: SimTime,
        timer: KubeTimer,
        random: &mut dyn Random,
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
            debug_assert!(
                state.started,
                "{name}: a container restarts only after a first start"
            );
            Arc::make_mut(&mut state.pod).restart_count += 1;
            let restart_count = state.pod.restart_count;
            fx.records.push(Record::ContainerRestarted {
                pod: name.clone(),
                restart_count,
            });
        } else {
            debug_assert!(
                state.pod.phase == PodPhase::Pending && !state.started,
                "{name}: a pod goes Running once, from Pending ({:?})",
                state.pod.phase
            );
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

    /// [`KubeletInput::KillContainer`]: true if the container was running.
    fn kill_container(&mut self, now: SimTime, name: &str, fx: &mut KubeEffects) -> bool {
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
        let at = now.plus_ms(state.backoff_ms);
        self.set_timer(at, KubeTimer::ContainerRestart { uid }, fx);
        self.publish(name);
        true
    }

    /// [`KubeletInput::FailPod`]: true if the pod was there and not Failed yet.
    fn fail_pod(&mut self, name: &str, fx: &mut KubeEffects) -> bool {
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
        random: &mut dyn Random,
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
        self.set_timer(now.plus_ms(grace_ms), KubeTimer::PodGone { uid }, fx);
        self.publish(name);
        true
    }

    /// The pod leaves the store: its slot is freed and its agent, if any, killed.
    fn remove_from_store(
        &mut self,
        now: SimTime,
        name: &str,
        random: &mut dyn Random,
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

    /// A node becomes unreachable: its containers are gone (their agents stop at once), its
    /// pods stay listed, not ready, phase unchanged, until they are evicted after
    /// `node_eviction`. With `replace_after_ms`, a new empty node of the same size joins then.
    /// Returns None if no live node is left to lose.
    fn lose_node(
        &mut self,
        now: SimTime,
        random: &mut dyn Random,
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
            self.set_timer(now.plus_ms(eviction_ms), evicted, fx);
        }
        if let Some(after_ms) = replace_after_ms {
            self.set_timer(now.plus_ms(after_ms), KubeTimer::NodeJoins, fx);
        }
        Some(node)
    }

    /// The pods still listed on lost node `index` are evicted: deleted by the node
    /// lifecycle controller, and gone at once (no kubelet is left to wait for).
    fn evict_node(
        &mut self,
        now: SimTime,
        index: u32,
        random: &mut dyn Random,
        fx: &mut KubeEffects,
    ) {
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
    fn add_node(&mut self, now: SimTime, random: &mut dyn Random, fx: &mut KubeEffects) {
        let name = format!("node-{}", self.nodes.len());
        self.nodes.push(Node {
            name: name.clone(),
            alive: true,
            used: 0,
        });
        fx.records.push(Record::NodeJoined { node: name });
        self.schedule_pending(now, random, fx);
    }
}
