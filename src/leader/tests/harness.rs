//! A scripted world for the leader tests: a fake Lease API with compare-and-swap, fixed
//! latency and scheduled outages, per-replica clock offsets, and an event queue ordered by
//! (real time, sequence number).

use crate::component::Component;
use crate::leader::{
    CallId, Input, LeaderSettings, ModuleSpec, Observation, Output, Random, Replica, TimerToken,
    Variant,
};
use crate::resources::{KubeError, KubeReply, KubeRequest, KubeResult, Lease, LeaseSpec};
use std::collections::{BTreeMap, BTreeSet};

pub(crate) const LEASE_NAME: &str = "agent-1-lock";

/// A deterministic stream (64-bit LCG, top 53 bits).
pub(crate) struct SeededRandom(pub(crate) u64);

impl Random for SeededRandom {
    fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }
}

/// agentk's timings (LD 15 s, RD 10 s, RP 2 s), one module `gitops` stopping in 1 s once
/// its ctx is cancelled (the `LeaderModule` contract; tests of the shipped modules set
/// `module_behaviour` themselves).
pub(crate) fn settings(identity: &str, variant: Variant) -> LeaderSettings {
    LeaderSettings {
        identity: identity.to_string(),
        lease_name: LEASE_NAME.to_string(),
        lease_duration_ms: 15_000,
        renew_deadline_ms: 10_000,
        retry_period_ms: 2_000,
        variant,
        modules: vec![ModuleSpec {
            name: "gitops".to_string(),
            runnable_when: "gitops".to_string(),
            work_ctx: crate::leader::WorkCtx::Background,
        }],
        module_stop_latency_ms_min: 1_000,
        module_stop_latency_ms_max: 1_000,
        module_behaviour: crate::leader::ModuleBehaviour::ObeysCtx,
        ablations: crate::ablation::Ablations::none(),
    }
}

pub(crate) fn flags(gitops: bool) -> BTreeMap<String, bool> {
    BTreeMap::from([("gitops".to_string(), gitops)])
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutageMode {
    /// Every call fails at once with a server error.
    Error,
    /// Calls hang until the outage ends (or the caller's timeout fires).
    Hang,
}

#[derive(Clone, Debug)]
struct Outage {
    from_ms: u64,
    until_ms: u64,
    mode: OutageMode,
    replicas: BTreeSet<usize>,
}

/// One call as the world saw it.
#[derive(Clone, Debug)]
pub(crate) struct CallRecord {
    pub(crate) replica: usize,
    pub(crate) sent_ms: u64,
    pub(crate) request: KubeRequest,
    pub(crate) answer: Option<(u64, KubeResult)>,
}

/// Everything observable, in the order it happened (what a world turns into trace records).
#[derive(Clone, Debug)]
pub(crate) enum Journal {
    Observed {
        replica: usize,
        observation: Observation,
    },
    /// An accepted Lease write; `by` is `None` for a third party.
    Written {
        by: Option<usize>,
        verb: &'static str,
        spec: LeaseSpec,
        rv_current: Option<u64>,
        rv_sent: Option<u64>,
        rv_new: u64,
    },
    Crashed {
        replica: usize,
    },
}

#[derive(Clone, Debug)]
enum Event {
    Timer(usize, TimerToken),
    Arrive(usize, CallId),
    Answer(usize, CallId, KubeResult),
    Timeout(usize, CallId),
    ExternalWrite(LeaseSpec),
}

struct Slot {
    replica: Option<Replica>,
    clock_offset_ms: u64,
}

pub(crate) struct World {
    pub(crate) now_ms: u64,
    pub(crate) lease: Option<Lease>,
    next_resource_version: u64,
    latency_ms: u64,
    outages: Vec<Outage>,
    slots: Vec<Slot>,
    queue: BTreeMap<(u64, u64), Event>,
    sequence: u64,
    random: SeededRandom,
    calls: BTreeMap<(usize, CallId), usize>,
    pub(crate) call_log: Vec<CallRecord>,
    /// Every accepted write: (real time, writer, spec); the writer is `None` for third parties.
    pub(crate) writes: Vec<(u64, Option<usize>, LeaseSpec)>,
    pub(crate) observations: Vec<(u64, usize, Observation)>,
    pub(crate) journal: Vec<(u64, Journal)>,
}

impl World {
    pub(crate) fn new(latency_ms: u64, seed: u64) -> World {
        World {
            now_ms: 0,
            lease: None,
            next_resource_version: 1,
            latency_ms,
            outages: Vec::new(),
            slots: Vec::new(),
            queue: BTreeMap::new(),
            sequence: 0,
            random: SeededRandom(seed),
            calls: BTreeMap::new(),
            call_log: Vec::new(),
            writes: Vec::new(),
            observations: Vec::new(),
            journal: Vec::new(),
        }
    }

    /// Add a replica whose local clock reads real time plus `clock_offset_ms`; it starts now
    /// with configuration version 1.
    pub(crate) fn add_replica(
        &mut self,
        settings: LeaderSettings,
        clock_offset_ms: u64,
        gitops: bool,
    ) -> usize {
        let replica = Replica::new(settings).expect("test settings are valid");
        self.slots.push(Slot {
            replica: Some(replica),
            clock_offset_ms,
        });
        let index = self.slots.len() - 1;
        self.step(index, Input::Start);
        self.step(
            index,
            Input::Config {
                version: 1,
                flags: flags(gitops),
            },
        );
        index
    }

    pub(crate) fn replica(&self, index: usize) -> &Replica {
        self.slots[index]
            .replica
            .as_ref()
            .expect("the replica is alive")
    }

    pub(crate) fn replica_mut(&mut self, index: usize) -> &mut Replica {
        self.slots[index]
            .replica
            .as_mut()
            .expect("the replica is alive")
    }

    pub(crate) fn crash(&mut self, index: usize) {
        self.slots[index].replica = None;
        self.journal
            .push((self.now_ms, Journal::Crashed { replica: index }));
    }

    pub(crate) fn configure(&mut self, index: usize, version: u64, gitops: bool) {
        self.step(
            index,
            Input::Config {
                version,
                flags: flags(gitops),
            },
        );
    }

    pub(crate) fn outage(
        &mut self,
        from_ms: u64,
        until_ms: u64,
        mode: OutageMode,
        replicas: &[usize],
    ) {
        let replicas = replicas.iter().copied().collect();
        self.outages.push(Outage {
            from_ms,
            until_ms,
            mode,
            replicas,
        });
    }

    /// A third party writes the Lease at `at_ms` (unconditionally).
    pub(crate) fn external_write(&mut self, at_ms: u64, spec: LeaseSpec) {
        self.push(at_ms, Event::ExternalWrite(spec));
    }

    fn push(&mut self, at_ms: u64, event: Event) {
        self.sequence += 1;
        self.queue
            .insert((at_ms.max(self.now_ms), self.sequence), event);
    }

    /// `Component::next_deadline` of replica `index` is the earliest of its timers still queued.
    fn check_next_deadline(&self, index: usize) {
        let Some(replica) = self.slots[index].replica.as_ref() else {
            return;
        };
        let offset = self.slots[index].clock_offset_ms;
        let queued = self
            .queue
            .iter()
            .filter_map(|(&(at_ms, _), event)| match event {
                Event::Timer(owner, _) if *owner == index => Some(at_ms + offset),
                _ => None,
            })
            .min();
        assert_eq!(
            replica.next_deadline(),
            queued,
            "replica {index}'s next deadline"
        );
    }

    fn local_ms(&self, index: usize) -> u64 {
        self.now_ms + self.slots[index].clock_offset_ms
    }

    fn step(&mut self, index: usize, input: Input) {
        let now_local_ms = self.local_ms(index);
        let mut out = Output::default();
        let Some(replica) = self.slots[index].replica.as_mut() else {
            return;
        };
        replica.handle(now_local_ms, input, &mut self.random, &mut out);
        for timer in out.timers {
            let at_ms = timer.at_local_ms - self.slots[index].clock_offset_ms;
            self.push(at_ms, Event::Timer(index, timer.token));
        }
        self.check_next_deadline(index);
        for call in out.calls {
            self.calls.insert((index, call.call), self.call_log.len());
            self.call_log.push(CallRecord {
                replica: index,
                sent_ms: self.now_ms,
                request: call.request,
                answer: None,
            });
            self.push(
                self.now_ms + self.latency_ms,
                Event::Arrive(index, call.call),
            );
            if let Some(timeout_ms) = call.timeout_ms {
                self.push(self.now_ms + timeout_ms, Event::Timeout(index, call.call));
            }
        }
        for observation in out.observations {
            let entry = Journal::Observed {
                replica: index,
                observation: observation.clone(),
            };
            self.journal.push((self.now_ms, entry));
            self.observations.push((self.now_ms, index, observation));
        }
    }

    pub(crate) fn run_until(&mut self, until_ms: u64) {
        while let Some(entry) = self.queue.first_entry() {
            let (at_ms, _) = *entry.key();
            if at_ms > until_ms {
                break;
            }
            let event = entry.remove();
            self.now_ms = at_ms;
            self.handle(event);
        }
        self.now_ms = until_ms;
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Timer(index, token) => self.step(index, Input::Timer(token)),
            Event::Arrive(index, call) => self.arrive(index, call),
            Event::Answer(index, call, result) => self.answer(index, call, result),
            Event::Timeout(index, call) => self.answer(index, call, Err(KubeError::Timeout)),
            Event::ExternalWrite(spec) => {
                self.write(None, "update-lease", None, spec);
            }
        }
    }

    fn outage_for(&self, index: usize) -> Option<&Outage> {
        self.outages.iter().find(|outage| {
            outage.from_ms <= self.now_ms
                && self.now_ms < outage.until_ms
                && (outage.replicas.is_empty() || outage.replicas.contains(&index))
        })
    }

    fn arrive(&mut self, index: usize, call: CallId) {
        let log_index = self.calls[&(index, call)];
        if self.call_log[log_index].answer.is_some() {
            return;
        }
        match self
            .outage_for(index)
            .map(|outage| (outage.mode, outage.until_ms))
        {
            Some((OutageMode::Error, _)) => {
                let at_ms = self.now_ms + self.latency_ms;
                self.push(
                    at_ms,
                    Event::Answer(index, call, Err(KubeError::ServerError)),
                );
            }
            // The request is held and served when the outage ends.
            Some((OutageMode::Hang, until_ms)) => self.push(until_ms, Event::Arrive(index, call)),
            None => {
                let request = self.call_log[log_index].request.clone();
                let result = self.apply(index, request);
                let at_ms = self.now_ms + self.latency_ms;
                self.push(at_ms, Event::Answer(index, call, result));
            }
        }
    }

    fn answer(&mut self, index: usize, call: CallId, result: KubeResult) {
        let log_index = self.calls[&(index, call)];
        if self.call_log[log_index].answer.is_some() {
            return;
        }
        self.call_log[log_index].answer = Some((self.now_ms, result.clone()));
        self.step(index, Input::Kube(call, result));
    }

    fn write(
        &mut self,
        by: Option<usize>,
        verb: &'static str,
        rv_sent: Option<u64>,
        spec: LeaseSpec,
    ) -> Lease {
        let lease = Lease {
            name: LEASE_NAME.to_string(),
            spec: spec.clone(),
            resource_version: self.next_resource_version,
        };
        self.next_resource_version += 1;
        let rv_current = self.lease.as_ref().map(|lease| lease.resource_version);
        self.lease = Some(lease.clone());
        self.writes.push((self.now_ms, by, spec.clone()));
        let rv_new = lease.resource_version;
        let entry = Journal::Written {
            by,
            verb,
            spec,
            rv_current,
            rv_sent,
            rv_new,
        };
        self.journal.push((self.now_ms, entry));
        lease
    }

    /// The API server: Get, Create (409 if present), Update (409 on a stale version).
    fn apply(&mut self, index: usize, request: KubeRequest) -> KubeResult {
        match request {
            KubeRequest::GetLease { .. } => self
                .lease
                .clone()
                .map(KubeReply::Lease)
                .ok_or(KubeError::NotFound),
            KubeRequest::CreateLease { spec, .. } if self.lease.is_none() => Ok(KubeReply::Lease(
                self.write(Some(index), "create-lease", None, spec),
            )),
            KubeRequest::UpdateLease {
                spec,
                resource_version,
                ..
            } if self
                .lease
                .as_ref()
                .is_some_and(|lease| lease.resource_version == resource_version) =>
            {
                let rv_sent = Some(resource_version);
                Ok(KubeReply::Lease(self.write(
                    Some(index),
                    "update-lease",
                    rv_sent,
                    spec,
                )))
            }
            KubeRequest::CreateLease { .. } | KubeRequest::UpdateLease { .. } => {
                Err(KubeError::Conflict)
            }
            other => panic!("the elector never sends {other:?}"),
        }
    }

    // ── queries ─────────────────────────────────────────────────────────────────────────

    /// Real times at which `replica` made `observation`.
    pub(crate) fn times_of(&self, replica: usize, observation: &Observation) -> Vec<u64> {
        self.observations
            .iter()
            .filter(|(_, index, seen)| *index == replica && seen == observation)
            .map(|(at_ms, _, _)| *at_ms)
            .collect()
    }

    /// Real times of `replica`'s accepted writes naming `holder`.
    pub(crate) fn writes_of(&self, replica: usize, holder: &str) -> Vec<u64> {
        self.writes
            .iter()
            .filter(|(_, by, spec)| *by == Some(replica) && spec.holder_identity == holder)
            .map(|(at_ms, _, _)| *at_ms)
            .collect()
    }

    /// The calls of `replica`, in order.
    pub(crate) fn calls_of(&self, replica: usize) -> Vec<&CallRecord> {
        self.call_log
            .iter()
            .filter(|record| record.replica == replica)
            .collect()
    }

    /// Whether `replica` has a module whose Run is running at the end of the log: the
    /// started and stopped observations are paired per module.
    pub(crate) fn module_running(&self, replica: usize) -> bool {
        let mut running = false;
        for (_, index, observation) in &self.observations {
            if *index != replica {
                continue;
            }
            match observation {
                Observation::ModuleStarted { .. } => running = true,
                Observation::ModuleStopped { .. } => running = false,
                _ => {}
            }
        }
        running
    }
}
