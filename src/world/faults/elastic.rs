//! The faults of the elastic-agent side: the GoCD server, its pods, profiles, nodes and jobs.

use super::super::Sink;
use super::super::build::{World, burst};
use super::super::events::Event;
use super::super::run::node;
use super::{Lasting, Started};
use crate::component::Random;
use crate::engine::SimTime;
use crate::gocd::JobState;
use crate::gocd::ServerInput;
use crate::kube::{KubeEffects, KubeletInput};
use crate::scenario::{ElasticFault, JobTarget, PodTarget, Range};
use crate::trace::Record;
use std::collections::BTreeMap;

/// The id of the run's one cluster profile, in records and fault targets.
const CLUSTER_PROFILE_ID: &str = "cluster-profile";

/// What a pod fault does to each pod it hits.
#[derive(Clone, Copy)]
enum PodAction {
    /// `pod_delete`
    Delete,
    /// `container_restart`
    Restart,
    /// `pod_fail`
    Fail,
}

impl World {
    /// A fault of the elastic-agent side starts; it ends at once but for a server crash,
    /// which ends when the server restarts.
    pub(super) fn start_elastic_fault(
        &mut self,
        now: SimTime,
        fault: &ElasticFault,
        sink: &mut dyn Sink,
    ) -> Started {
        let target = match fault {
            ElasticFault::ServerCrash { downtime_ms } => {
                return self.crash_server(now, *downtime_ms, sink);
            }
            ElasticFault::PodDelete { target, count } => {
                self.start_pod_fault(now, PodAction::Delete, *target, *count, sink)
            }
            ElasticFault::ContainerRestart { target, count } => {
                self.start_pod_fault(now, PodAction::Restart, *target, *count, sink)
            }
            ElasticFault::PodFail { target, count } => {
                self.start_pod_fault(now, PodAction::Fail, *target, *count, sink)
            }
            ElasticFault::ProfileEdit { profile, set } => {
                self.edit_profile(now, profile, set, sink)
            }
            ElasticFault::ClusterProfileEdit { set } => self.edit_cluster_profile(now, set, sink),
            ElasticFault::NodeLoss {
                count,
                replace_after_ms,
            } => self.lose_nodes(now, *count, *replace_after_ms, sink),
            ElasticFault::NodeAdd { count } => self.add_nodes(now, *count, sink),
            ElasticFault::JobCancel { target, count } => {
                self.cancel_jobs(now, *target, *count, sink)
            }
            ElasticFault::Burst {
                count,
                spread_ms,
                profile,
                runtime,
            } => self.start_burst(now, *count, *spread_ms, profile, *runtime),
        };
        Started::Acting {
            target,
            lasting: Lasting::Instant,
        }
    }

    /// Called when the server restarts: its crash fault ends.
    pub(in crate::world) fn end_server_crash_faults(&mut self, now: SimTime, sink: &mut dyn Sink) {
        self.end_faults(now, sink, |kind, _| {
            matches!(
                kind,
                crate::scenario::FaultKind::Elastic(ElasticFault::ServerCrash { .. })
            )
        });
    }

    /// `job_cancel`: the server cancels `count` jobs of `target`. Returns them, `job:N`
    /// comma-separated.
    fn cancel_jobs(
        &mut self,
        now: SimTime,
        target: JobTarget,
        count: u32,
        sink: &mut dyn Sink,
    ) -> String {
        let jobs = self.pick_jobs(target, count);
        self.server_step(now, ServerInput::CancelJobs(jobs.clone()), sink);
        let jobs: Vec<String> = jobs.iter().map(|job| format!("job:{job}")).collect();
        jobs.join(",")
    }

    /// `server_crash`: the server process dies and restarts after `downtime_ms`; nothing (the
    /// fault is skipped) while it is down already.
    fn crash_server(&mut self, now: SimTime, downtime_ms: u64, sink: &mut dyn Sink) -> Started {
        if !self.elastic.server_up() {
            return Started::Skipped;
        }
        // The node's epoch moves on first: what the crash releases is applied
        // after it, as before.
        self.nodes.crash(self.gocd);
        self.server_step(now, ServerInput::Crash, sink);
        self.queue
            .push(now.plus_ms(downtime_ms), Event::ServerRestart);
        Started::Acting {
            target: "gocd".to_owned(),
            lasting: Lasting::Signalled,
        }
    }

    /// `profile_edit`: the server's elastic profile changes, and the trace gets the profile's
    /// new config identity. Returns the profile's name.
    fn edit_profile(
        &mut self,
        now: SimTime,
        profile: &str,
        set: &BTreeMap<String, String>,
        sink: &mut dyn Sink,
    ) -> String {
        let input = ServerInput::EditProfile {
            profile: profile.to_owned(),
            set: set.clone(),
        };
        self.server_step(now, input, sink);
        let environment = self.profile_environment(profile);
        let config = self
            .elastic
            .server()
            .config_identity(profile, environment.as_deref());
        let record = Record::ProfileEdited {
            profile: profile.to_owned(),
            config,
        };
        self.emit(sink, node::GOCD, record);
        profile.to_owned()
    }

    /// `node_loss`: `count` nodes become unreachable, each replaced after `replace_after_ms`.
    /// Returns the nodes lost, comma-separated.
    fn lose_nodes(
        &mut self,
        now: SimTime,
        count: u32,
        replace_after_ms: u64,
        sink: &mut dyn Sink,
    ) -> String {
        let mut fx = KubeEffects::default();
        for _ in 0..count {
            let random = &mut self.faults.random_faults;
            let input = KubeletInput::LoseNode {
                replace_after_ms: Some(replace_after_ms),
            };
            self.elastic.kubelet_fault(now, input, random, &mut fx);
        }
        let lost = std::mem::take(&mut fx.lost_nodes);
        self.apply_kube(now, fx, sink);
        lost.join(",")
    }

    /// `node_add`: `count` new empty nodes join. Returns the nodes added, comma-separated.
    fn add_nodes(&mut self, now: SimTime, count: u32, sink: &mut dyn Sink) -> String {
        let mut fx = KubeEffects::default();
        for _ in 0..count {
            let random = &mut self.faults.random_faults;
            let input = KubeletInput::AddNode;
            self.elastic.kubelet_fault(now, input, random, &mut fx);
        }
        let added: Vec<String> = fx
            .records
            .iter()
            .filter_map(|record| match record {
                Record::NodeJoined { node } => Some(node.clone()),
                _ => None,
            })
            .collect();
        self.apply_kube(now, fx, sink);
        added.join(",")
    }

    /// `pod_delete`, `container_restart`, `pod_fail`: the pods hit, comma-separated.
    fn start_pod_fault(
        &mut self,
        now: SimTime,
        action: PodAction,
        target: PodTarget,
        count: u32,
        sink: &mut dyn Sink,
    ) -> String {
        let mut fx = KubeEffects::default();
        let pods = match action {
            PodAction::Delete => {
                let pods = self.pick_pods(target, count);
                for pod in &pods {
                    let input = KubeletInput::DeletePod { pod: pod.clone() };
                    self.elastic.kubelet_input(now, input, &mut fx);
                }
                pods
            }
            PodAction::Restart => {
                let pods: Vec<String> = self
                    .pick_pods(target, u32::MAX)
                    .into_iter()
                    .filter(|p| self.elastic.kube().container_running(p))
                    .collect();
                let pods = self.choose(pods, count);
                for pod in &pods {
                    let input = KubeletInput::KillContainer { pod: pod.clone() };
                    self.elastic.kubelet_input(now, input, &mut fx);
                }
                pods
            }
            PodAction::Fail => {
                let pods = self.pick_pods(target, count);
                for pod in &pods {
                    let input = KubeletInput::FailPod { pod: pod.clone() };
                    self.elastic.kubelet_input(now, input, &mut fx);
                }
                pods
            }
        };
        self.apply_kube(now, fx, sink);
        pods.join(",")
    }

    /// A `burst` fault: its jobs join the arrivals, drawn from the fault stream.
    fn start_burst(
        &mut self,
        now: SimTime,
        count: u32,
        spread_ms: u64,
        profile: &str,
        runtime: Range,
    ) -> String {
        let mut planned = Vec::new();
        burst(
            &mut planned,
            &mut self.faults.random_faults,
            now.as_ms(),
            count,
            spread_ms,
            profile,
            runtime,
        );
        for arrival in planned {
            let at = SimTime::from_ms(arrival.at_ms);
            let index = self.elastic.add_arrival(arrival);
            self.queue.push(at, Event::SingleArrival { index });
        }
        format!("{count} jobs of {profile}")
    }

    /// The GoCD environment of the pipelines using `profile`.
    pub(in crate::world) fn profile_environment(&self, profile: &str) -> Option<String> {
        self.scenario
            .profiles
            .iter()
            .find(|p| p.name == profile)
            .and_then(|p| p.environment.clone())
    }

    /// Pods matching `target`, sorted by name, `count` of them chosen at random.
    fn pick_pods(&mut self, target: PodTarget, count: u32) -> Vec<String> {
        let candidates = self.elastic.pods_in(target);
        self.choose(candidates, count)
    }

    /// Live jobs in `target`'s state, by id, `count` of them chosen at random.
    fn pick_jobs(&mut self, target: JobTarget, count: u32) -> Vec<u64> {
        if !self.elastic.server_up() {
            return Vec::new();
        }
        let state = match target {
            JobTarget::Building => JobState::Assigned,
            JobTarget::Scheduled => JobState::Scheduled,
        };
        let candidates = self.elastic.server().jobs_in(state);
        self.choose(candidates, count)
    }

    /// `cluster_profile_edit`: the server's cluster profile takes the new values, and a
    /// `cluster_profile_edited` record says which settings later requests carry.
    fn edit_cluster_profile(
        &mut self,
        now: SimTime,
        set: &crate::scenario::ClusterProfileChanges,
        sink: &mut dyn Sink,
    ) -> String {
        let edited = edited_cluster_profile(self.elastic.server().cluster_profile(), set);
        let record = Record::ClusterProfileEdited {
            cluster: CLUSTER_PROFILE_ID.to_owned(),
            pending_pods_count: edited.pending_pods_count,
            enable_agent_reuse: edited.enable_agent_reuse,
            auto_register_timeout_ms: edited.auto_register_timeout_ms,
            idle_timeout_ms: edited.idle_timeout_ms,
            max_pods: edited.max_pods,
        };
        self.server_step(now, ServerInput::SetClusterProfile(edited), sink);
        self.emit(sink, node::GOCD, record);
        CLUSTER_PROFILE_ID.to_owned()
    }

    /// `count` of `candidates` drawn at random (fewer if fewer), in sorted order. Ids and
    /// names have a total order, so a stable and an unstable sort give the same list.
    fn choose<T: Ord>(&mut self, mut candidates: Vec<T>, count: u32) -> Vec<T> {
        let mut chosen = Vec::new();
        while chosen.len() < count as usize && !candidates.is_empty() {
            let index = self.faults.random_faults.below(candidates.len() as u64) as usize;
            chosen.push(candidates.swap_remove(index));
        }
        chosen.sort_unstable();
        chosen
    }
}

/// The cluster profile after a `cluster_profile_edit`.
fn edited_cluster_profile(
    profile: &crate::allocator::ClusterProfile,
    set: &crate::scenario::ClusterProfileChanges,
) -> crate::allocator::ClusterProfile {
    let mut edited = profile.clone();
    if let Some(url) = &set.go_server_url {
        edited.go_server_url.clone_from(url);
    }
    if let Some(reuse) = set.enable_agent_reuse {
        edited.enable_agent_reuse = reuse;
    }
    if let Some(ms) = set.auto_register_timeout_ms {
        edited.auto_register_timeout_ms = ms;
    }
    if let Some(count) = set.pending_pods_count {
        edited.pending_pods_count = count;
    }
    if let Some(ms) = set.idle_timeout_ms {
        edited.idle_timeout_ms = ms;
    }
    if let Some(count) = set.max_pods {
        edited.max_pods = Some(count);
    }
    edited
}
