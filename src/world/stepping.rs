//! Stepping a world by hand, for drivers that interleave a run with something else: the
//! trace exporter (which reads pods after every event) and `serve` (which paces the run against
//! the wall clock and injects `kubectl delete pod`). `World::run` is `start_run` followed by
//! `step` until it returns false.

use super::Sink;
use super::build::{World, WorldError};
use super::run::node;
use crate::engine::SimTime;
use crate::kube::{ApiRequest, KubeApi, KubeEffects, KubeletInput};
use crate::resources::{KubeRequest, KubeResult};
use crate::trace::{Actor, Record};

impl World {
    /// Start the run: the server boots and every arrival, fault and phase end is scheduled.
    /// Call once, before `step`.
    pub(crate) fn start_run(&mut self, sink: &mut dyn Sink) {
        assert!(
            !self.ended && self.queue.popped_count() == 0,
            "a world starts once"
        );
        self.start(sink);
    }

    /// Handle the next event. Returns false once the run has ended (the end of the settle
    /// phase); later calls do nothing.
    pub fn step(&mut self, sink: &mut dyn Sink) -> Result<bool, WorldError> {
        if self.ended {
            return Ok(false);
        }
        let Some((now, event)) = self.queue.pop() else {
            panic!("the queue ran dry before the end event");
        };
        if self.queue.popped_count() > self.settings.events_max {
            return Err(WorldError::Bound(format!(
                "the run passed events_max = {} at t = {now}; a model is looping",
                self.settings.events_max
            )));
        }
        self.dispatch(now, event, sink);
        Ok(!self.ended)
    }

    /// When the next event is due, if any.
    pub fn next_event_time(&self) -> Option<SimTime> {
        self.queue.peek_time()
    }

    /// True once the end of the settle phase was handled.
    pub fn has_ended(&self) -> bool {
        self.ended
    }

    /// The simulated API server, read-only (pods, Leases).
    pub(crate) fn kube(&self) -> &KubeApi {
        self.elastic.kube()
    }

    /// One call to the simulated API server from outside the run (serve mode: a client's
    /// Lease write), now, as `Actor::External`: its records go to the trace like any write's.
    /// None once the run has ended (nothing is written any more).
    pub fn external_api_request(
        &mut self,
        request: KubeRequest,
        sink: &mut dyn Sink,
    ) -> Option<KubeResult> {
        if self.ended {
            return None;
        }
        let now = self.queue.now();
        let input = ApiRequest {
            actor: Actor::External,
            request,
        };
        Some(self.api_request(now, input, sink))
    }

    /// `kubectl delete pod NAME` from outside the run (serve mode), now: recorded as a
    /// `pod_delete` fault whose index follows the scenario's faults. Returns false (and records
    /// nothing) if no such pod exists.
    pub fn inject_pod_delete(&mut self, name: &str, sink: &mut dyn Sink) -> bool {
        if self.ended || self.elastic.kube().pod(name).is_none() {
            return false;
        }
        let now = self.queue.now();
        let index = self.faults.next_injected(self.scenario.faults.len());
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultStarted {
                index,
                fault: "pod_delete".to_owned(),
                target: name.to_owned(),
            },
        );
        let mut fx = KubeEffects::default();
        let input = KubeletInput::DeletePod {
            pod: name.to_owned(),
        };
        self.elastic.kubelet_input(now, input, &mut fx);
        let deleted = fx.hits > 0;
        self.apply_kube(now, fx, sink);
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultEnded {
                index,
                fault: "pod_delete".to_owned(),
            },
        );
        deleted
    }
}
