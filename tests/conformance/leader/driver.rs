//! A scripted driver for one [`Replica`]: the test plays client-go's fake clientset (its
//! "reactors"), answering each Kubernetes call by hand, and fires timers in time order. Local
//! time equals test time.

use elasticsim::component::Component;
use elasticsim::leader::{
    CallId, Input, KubeCall, LeaderSettings, ModuleSpec, Observation, Output, Random, Replica,
    TimerToken, Variant,
};
use elasticsim::resources::{KubeReply, KubeRequest, KubeResult, Lease, LeaseSpec};
use std::collections::{BTreeMap, VecDeque};

pub const LEASE_NAME: &str = "agent-1-lock";
/// client-go's tests call the candidate "baz".
pub const ME: &str = "baz";

/// A 64-bit LCG: the replica's seeded stream.
pub struct Seeded(pub u64);

impl Random for Seeded {
    fn next_u64(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0
    }
}

/// Settings with `modules` (each runnable under the flag of its own name), obeying their ctx
/// (the `LeaderModule` contract the ported tests' fakes follow).
pub fn settings(variant: Variant, timings_ms: [u64; 3], modules: &[&str]) -> LeaderSettings {
    let [lease_duration_ms, renew_deadline_ms, retry_period_ms] = timings_ms;
    LeaderSettings {
        identity: ME.to_owned(),
        lease_name: LEASE_NAME.to_owned(),
        lease_duration_ms,
        renew_deadline_ms,
        retry_period_ms,
        variant,
        modules: modules
            .iter()
            .map(|name| ModuleSpec {
                name: (*name).to_owned(),
                runnable_when: (*name).to_owned(),
                work_ctx: elasticsim::leader::WorkCtx::Background,
            })
            .collect(),
        module_stop_latency_ms_min: 0,
        module_stop_latency_ms_max: 0,
        module_behaviour: elasticsim::leader::ModuleBehaviour::ObeysCtx,
        ablations: elasticsim::ablation::Ablations::none(),
    }
}

pub fn flags(on: &[&str], off: &[&str]) -> BTreeMap<String, bool> {
    on.iter()
        .map(|name| ((*name).to_owned(), true))
        .chain(off.iter().map(|name| ((*name).to_owned(), false)))
        .collect()
}

pub fn lease(holder: &str, duration_s: u32, transitions: u32, version: u64) -> KubeResult {
    Ok(KubeReply::Lease(Lease {
        name: LEASE_NAME.to_owned(),
        spec: LeaseSpec {
            holder_identity: holder.to_owned(),
            lease_duration_seconds: duration_s,
            acquire_time_ms: 0,
            renew_time_ms: 0,
            lease_transitions: transitions,
        },
        resource_version: version,
    }))
}

/// What the server answers to a write: the written spec with a new version.
pub fn accepted(call: &KubeCall, version: u64) -> KubeResult {
    let spec = written(call).expect("only a write is accepted").clone();
    Ok(KubeReply::Lease(Lease {
        name: LEASE_NAME.to_owned(),
        spec,
        resource_version: version,
    }))
}

/// The spec a Create or Update carries.
pub fn written(call: &KubeCall) -> Option<&LeaseSpec> {
    match &call.request {
        KubeRequest::CreateLease { spec, .. } | KubeRequest::UpdateLease { spec, .. } => Some(spec),
        _ => None,
    }
}

pub fn verb(call: &KubeCall) -> &'static str {
    call.request.verb()
}

pub struct Driver {
    replica: Replica,
    pub now_ms: u64,
    random: Seeded,
    timers: BTreeMap<(u64, u64), TimerToken>,
    /// Calls not answered yet, oldest first, with the time they were made.
    pending: VecDeque<(u64, KubeCall)>,
    pub calls: Vec<(u64, KubeCall)>,
    pub observations: Vec<(u64, Observation)>,
}

impl Driver {
    /// A started replica that got configuration version 1 (`flags`).
    pub fn start(settings: LeaderSettings, flags: BTreeMap<String, bool>, seed: u64) -> Driver {
        let mut driver = Driver {
            replica: Replica::new(settings).expect("conformance settings are valid"),
            now_ms: 0,
            random: Seeded(seed),
            timers: BTreeMap::new(),
            pending: VecDeque::new(),
            calls: Vec::new(),
            observations: Vec::new(),
        };
        driver.input(Input::Start);
        driver.input(Input::Config { version: 1, flags });
        driver
    }

    pub fn replica(&self) -> &Replica {
        &self.replica
    }

    pub fn input(&mut self, input: Input) {
        let mut out = Output::default();
        self.replica
            .handle(self.now_ms, input, &mut self.random, &mut out);
        for timer in out.timers {
            self.timers
                .insert((timer.at_local_ms, timer.token.0), timer.token);
        }
        for call in out.calls {
            self.calls.push((self.now_ms, call.clone()));
            self.pending.push_back((self.now_ms, call));
        }
        for observation in out.observations {
            self.observations.push((self.now_ms, observation));
        }
    }

    /// Fire every timer due up to `until_ms`, in time order; stop early when a call is
    /// waiting for an answer (the test must answer it at the time it was made).
    pub fn advance(&mut self, until_ms: u64) {
        while self.pending.is_empty() {
            let Some(entry) = self.timers.first_entry() else {
                break;
            };
            let (at_ms, _) = *entry.key();
            if at_ms > until_ms {
                break;
            }
            let token = entry.remove();
            self.now_ms = self.now_ms.max(at_ms);
            self.input(Input::Timer(token));
        }
        if self.pending.is_empty() {
            self.now_ms = self.now_ms.max(until_ms);
        }
    }

    /// The oldest unanswered call (advancing timers up to `until_ms` to find one).
    pub fn next_call(&mut self, until_ms: u64) -> Option<KubeCall> {
        self.advance(until_ms);
        self.pending.front().map(|(_, call)| call.clone())
    }

    /// Answer call `id` at `at_ms` (not before now).
    /// Timers due before then fire first.
    pub fn answer_at(&mut self, at_ms: u64, id: CallId, result: KubeResult) {
        self.pending.retain(|(_, call)| call.call != id);
        self.advance(at_ms);
        self.now_ms = self.now_ms.max(at_ms);
        self.input(Input::Kube(id, result));
    }

    /// Answer the oldest call now.
    pub fn answer(&mut self, result: KubeResult) -> KubeCall {
        let (_, call) = self.pending.pop_front().expect("a call is waiting");
        self.input(Input::Kube(call.call, result));
        call
    }

    pub fn starts_of(&self, module: &str) -> usize {
        self.observations
            .iter()
            .filter(
                |(_, o)| matches!(o, Observation::ModuleStarted { module: m, .. } if m == module),
            )
            .count()
    }

    pub fn configs_of(&self, module: &str) -> Vec<u64> {
        self.observations
            .iter()
            .filter_map(|(_, o)| match o {
                Observation::ModuleConfig { module: m, version } if m == module => Some(*version),
                _ => None,
            })
            .collect()
    }
}

/// A one-Lease API server with compare-and-swap, for scripts longer than a few calls.
#[derive(Default)]
pub struct Server {
    pub lease: Option<Lease>,
    next_version: u64,
    /// Every call fails with a server error before this time.
    pub failing_until_ms: u64,
}

impl Server {
    pub fn apply(&mut self, now_ms: u64, call: &KubeCall) -> KubeResult {
        use elasticsim::resources::KubeError;
        if now_ms < self.failing_until_ms {
            return Err(KubeError::ServerError);
        }
        match &call.request {
            KubeRequest::GetLease { .. } => match &self.lease {
                Some(lease) => Ok(KubeReply::Lease(lease.clone())),
                None => Err(KubeError::NotFound),
            },
            KubeRequest::CreateLease { spec, .. } if self.lease.is_none() => self.store(spec),
            KubeRequest::UpdateLease {
                spec,
                resource_version,
                ..
            } if self
                .lease
                .as_ref()
                .is_some_and(|lease| lease.resource_version == *resource_version) =>
            {
                self.store(spec)
            }
            _ => Err(KubeError::Conflict),
        }
    }

    /// The Lease's holder, if a Lease exists (`""` once released).
    pub fn holder(&self) -> Option<&str> {
        self.lease
            .as_ref()
            .map(|lease| lease.spec.holder_identity.as_str())
    }

    fn store(&mut self, spec: &LeaseSpec) -> KubeResult {
        self.next_version += 1;
        let lease = Lease {
            name: LEASE_NAME.to_owned(),
            spec: spec.clone(),
            resource_version: self.next_version,
        };
        self.lease = Some(lease.clone());
        Ok(KubeReply::Lease(lease))
    }
}

impl Driver {
    /// Let `server` answer calls until the Lease is first held (the renew loop's immediate
    /// attempt is then waiting, unanswered).
    pub fn acquire(&mut self, server: &mut Server) {
        while !self
            .observations
            .iter()
            .any(|(_, o)| matches!(o, Observation::LeaseHeld { .. }))
        {
            let call = self
                .next_call(u64::MAX)
                .expect("the candidate keeps trying");
            let result = server.apply(self.now_ms, &call);
            self.answer(result);
        }
    }

    /// Let `server` answer every call at once until `until_ms`.
    pub fn serve(&mut self, server: &mut Server, until_ms: u64) {
        while let Some(call) = self.next_call(until_ms) {
            let result = server.apply(self.now_ms, &call);
            self.answer(result);
        }
    }
}
