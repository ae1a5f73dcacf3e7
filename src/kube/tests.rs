//! The kubelets' `next_deadline` against the timers they asked for, driven by random API
//! calls, faults and timers firing in queue order.

use super::{
    ApiOutput, ApiRequest, KubeApi, KubeEffects, KubeSettings, KubeTimer, KubeletInput,
    PodDescription,
};
use crate::component::{Component, Random};
use crate::engine::{Stream, StreamId};
use crate::resources::{KubeRequest, Pod, PodTemplate, StringMap};
use crate::trace::Actor;
use std::collections::BTreeMap;

fn describe(_: &Pod) -> PodDescription {
    PodDescription {
        job_label: None,
        config: String::new(),
    }
}

fn cluster() -> KubeApi {
    KubeApi::new(KubeSettings {
        nodes: 3,
        pods_per_node: 2,
        pod_startup_ms: (1_000, 20_000),
        pod_startup_sample_ms: Vec::new(),
        container_restart_backoff_ms: 10_000,
        describe_pod: describe,
        termination_grace_ms: 30_000,
        node_eviction_ms: 60_000,
    })
}

/// The timers asked for and not fired, in the order the world's queue fires them.
#[derive(Default)]
struct Asked {
    pending: BTreeMap<(u64, u64), KubeTimer>,
    sequence: u64,
}

impl Asked {
    fn take(&mut self, fx: &mut KubeEffects) {
        for (at, timer) in fx.timers.drain(..) {
            self.pending.insert((at.as_ms(), self.sequence), timer);
            self.sequence += 1;
        }
    }

    fn earliest(&self) -> Option<u64> {
        self.pending.keys().next().map(|&(at_ms, _)| at_ms)
    }
}

/// An API call from the allocator; the API server never has a deadline of its own.
fn call(kube: &mut KubeApi, now_ms: u64, request: KubeRequest, random: &mut Stream) -> KubeEffects {
    let mut out = ApiOutput::default();
    let input = ApiRequest {
        actor: Actor::Allocator,
        request,
    };
    let mut api = kube.api_server();
    api.handle(now_ms, input, random, &mut out);
    assert!(out.reply.is_some(), "every request is answered");
    assert_eq!(api.next_deadline(), None);
    out.effects
}

fn create(name: String) -> KubeRequest {
    KubeRequest::CreatePod {
        template: PodTemplate {
            name,
            labels: StringMap::new(),
            annotations: StringMap::new(),
            image: "agent".to_owned(),
            env: StringMap::new(),
        },
    }
}

/// One random step at or after `now`: a call, a fault, or the earliest timer firing.
fn step(kube: &mut KubeApi, now: &mut u64, asked: &mut Asked, streams: &mut [Stream; 2]) {
    let [random, choices] = streams;
    let pods: Vec<String> = kube.pods().map(|pod| pod.name.clone()).collect();
    let choice = choices.below(8);
    if choice >= 6 || (pods.is_empty() && choice >= 2) {
        if let Some(((at_ms, _), timer)) = asked.pending.pop_first() {
            *now = at_ms;
            let mut fx = KubeEffects::default();
            kube.kubelets()
                .handle(*now, KubeletInput::Timer(timer), random, &mut fx);
            asked.take(&mut fx);
        }
        return;
    }
    let earliest = asked.earliest().unwrap_or(u64::MAX);
    *now = (*now + choices.below(5_000)).min(earliest);
    let pod = pods
        .get(choices.below(pods.len().max(1) as u64) as usize)
        .cloned()
        .unwrap_or_default();
    let mut fx = match choice {
        0 | 1 => call(
            kube,
            *now,
            create(format!("pod-{}", choices.next_u64())),
            random,
        ),
        2 => call(
            kube,
            *now,
            KubeRequest::DeletePod { name: pod.clone() },
            random,
        ),
        _ => KubeEffects::default(),
    };
    let inputs = match choice {
        3 => vec![KubeletInput::KillContainer { pod }],
        4 => vec![KubeletInput::FailPod { pod }],
        5 if choices.chance(0.2) => {
            // Two losses at once ask for two replacements at one time.
            let replace_after_ms = Some(choices.range_inclusive(0, 90_000));
            vec![KubeletInput::LoseNode { replace_after_ms }; 2]
        }
        5 => vec![KubeletInput::DeletePod { pod }],
        _ => Vec::new(),
    };
    for input in inputs {
        kube.kubelets().handle(*now, input, random, &mut fx);
    }
    asked.take(&mut fx);
}

#[test]
fn kubelets_next_deadline_is_the_earliest_timer_not_fired() {
    for seed in 0..4 {
        let mut kube = cluster();
        let mut streams = [
            Stream::new(seed, StreamId::Kubelet),
            Stream::new(seed, StreamId::Faults),
        ];
        let (mut now, mut asked) = (0, Asked::default());
        for index in 0..3_000 {
            step(&mut kube, &mut now, &mut asked, &mut streams);
            assert_eq!(
                kube.kubelets().next_deadline(),
                asked.earliest(),
                "seed {seed}, step {index}"
            );
        }
        assert!(asked.sequence > 500, "seed {seed}: too few timers to judge");
    }
}
