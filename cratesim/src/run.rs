//! One seed of a lease-crate scenario: a thread of its own, a current-thread tokio runtime
//! with paused time and a seeded `select!`, the replicas, the fault injector, and the
//! observers (fingerprint, leader monitors, optional `trace.jsonl`).
//!
//! Determinism: tokio's paused clock only moves when every task waits, and then straight to
//! the next timer; every task runs on this one thread in an order fixed by the runtime's
//! seeded scheduler; the wall clock and entropy the crates read are the run's
//! (`determinism.rs`); latencies and errors come from the run's named streams. A fresh
//! thread per seed gives every thread-local generator (rand's, std's hash keys) a fresh
//! start from the run's entropy.

use crate::crates::LeaseCrate;
use crate::determinism::RunGuard;
use crate::faults::CrateFault;
use crate::replica::{Process, Timings};
use crate::sim::{Event, NetworkSettings, Node, Shared};
use elasticsim::check::InvariantId;
use elasticsim::check::{Checker, LeaderBounds, Violation, leader_monitors};
use elasticsim::scenario::ReplicaRef;
use elasticsim::trace::{Fingerprint, JsonlWriter, Record};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::sleep_until;

/// The leader invariants a crate run does not judge, and why (docs/crates.md).
pub const NOT_JUDGED: [(InvariantId, &str); 4] = [
    (
        InvariantId::LeaseCas,
        "both crates write with patches that carry no resourceVersion, by design: the monitor \
         would flag every write",
    ),
    (
        InvariantId::ConfigFresh,
        "the crates take no configuration: it is the agentk runner's",
    ),
    (
        InvariantId::ElectionIffDemand,
        "a crate replica always wants to lead: the invariant is the agentk runner's",
    ),
    (
        InvariantId::RunnerProgress,
        "the crates have no module runner: it is the agentk runner's",
    ),
];

/// Everything one seed needs, read from the scenario.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The crate the replicas run.
    pub lease_crate: LeaseCrate,
    /// How many replicas.
    pub replicas: u32,
    /// The election timings.
    pub timings: Timings,
    /// Latency, errors, request timeout.
    pub network: NetworkSettings,
    /// The faults, with their start times.
    pub faults: Vec<(u64, CrateFault)>,
    /// The safety phase.
    pub duration_ms: u64,
    /// The settle phase after it.
    pub settle_ms: u64,
    /// The elastic-agent bounds (every elastic monitor is switched off, but the checker
    /// takes them).
    pub bounds: elasticsim::check::Bounds,
    /// The leader monitors' bounds.
    pub leader_bounds: LeaderBounds,
    /// Invariants switched off: the elastic-agent ones, [`NOT_JUDGED`], `[invariants] disable`.
    pub disabled: Vec<InvariantId>,
}

/// What one seed gave.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The seed.
    pub seed: u64,
    /// The trace's fingerprint.
    pub fingerprint: String,
    /// How many records the run emitted.
    pub records: u64,
    /// The violations, ordered by time.
    pub violations: Vec<Violation>,
}

impl Outcome {
    /// No violation inside the fault budget.
    pub fn passed(&self) -> bool {
        self.violations.iter().all(|violation| violation.expected)
    }

    /// The ids violated inside the fault budget, once each, in order.
    pub fn violated_ids(&self) -> Vec<InvariantId> {
        let mut ids: Vec<InvariantId> = Vec::new();
        for violation in self.violations.iter().filter(|v| !v.expected) {
            if !ids.contains(&violation.id) {
                ids.push(violation.id);
            }
        }
        ids
    }
}

/// Run seed `seed` of `plan` on a thread of its own; with `trace`, write `trace.jsonl` there.
pub fn run_seed(plan: &Plan, seed: u64, trace: Option<PathBuf>) -> Result<Outcome, String> {
    let plan = plan.clone();
    std::thread::Builder::new()
        .name(format!("seed-{seed}"))
        .spawn(move || run_here(&plan, seed, trace))
        .map_err(|error| format!("cannot start the run's thread: {error}"))?
        .join()
        .map_err(|_| format!("seed {seed}: the run panicked"))?
}

fn run_here(plan: &Plan, seed: u64, trace: Option<PathBuf>) -> Result<Outcome, String> {
    let guard = RunGuard::start(seed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()))
        .build()
        .map_err(|error| format!("cannot build the runtime: {error}"))?;
    let outcome = runtime.block_on(async {
        guard.anchor();
        drive(plan, seed, trace).await
    });
    // The runtime drops the replicas' tasks while the run's clock is still in place.
    drop(runtime);
    drop(guard);
    outcome
}

/// The observers: fingerprint, monitors and trace, fed in record order.
struct Observers {
    fingerprint: Fingerprint,
    checker: Checker,
    trace: Option<JsonlWriter>,
    records: u64,
}

impl Observers {
    fn see(&mut self, event: &Event) -> Result<(), String> {
        let node = event.node.name();
        self.records += 1;
        self.fingerprint.add(event.t_ms, &node, &event.record);
        self.checker.observe(event.t_ms, &event.record);
        if let Some(trace) = &mut self.trace {
            trace
                .write(event.t_ms, &node, &event.record)
                .map_err(|error| format!("writing trace.jsonl: {error}"))?;
        }
        Ok(())
    }
}

/// The fingerprint, the leader monitors and, with `trace`, `trace.jsonl`.
fn observers(plan: &Plan, trace: Option<PathBuf>) -> Result<Observers, String> {
    let trace = match trace {
        Some(path) => Some(
            JsonlWriter::create(&path)
                .map_err(|error| format!("cannot create {}: {error}", path.display()))?,
        ),
        None => None,
    };
    let extra = leader_monitors(plan.leader_bounds);
    let mut observers = Observers {
        fingerprint: Fingerprint::default(),
        checker: Checker::new(&plan.bounds, &plan.disabled, extra),
        trace,
        records: 0,
    };
    observers.fingerprint.add_note(&format!(
        "elasticsim-crates {} {}",
        plan.lease_crate.name(),
        plan.lease_crate.version()
    ));
    Ok(observers)
}

async fn drive(plan: &Plan, seed: u64, trace: Option<PathBuf>) -> Result<Outcome, String> {
    let (sender, mut events) = mpsc::unbounded_channel();
    let shared = Shared::new(seed, plan.replicas, plan.network, sender);
    let mut observers = observers(plan, trace)?;
    let slots: Slots = Arc::new(Mutex::new(
        (0..plan.replicas)
            .map(|replica| {
                Slot::Running(Process::start(
                    &shared,
                    replica,
                    plan.lease_crate,
                    plan.timings,
                ))
            })
            .collect(),
    ));
    // The processes live until the run ends (dropping one would close its stop channel).
    let injector = Injector {
        shared: shared.clone(),
        slots: slots.clone(),
        plan: plan.clone(),
    };
    tokio::spawn(injector.run());
    let end_ms = plan.duration_ms + plan.settle_ms;
    let end = shared.clock.at(end_ms);
    loop {
        tokio::select! {
            biased;
            Some(event) = events.recv() => observers.see(&event)?,
            () = sleep_until(end) => break,
        }
    }
    while let Ok(event) = events.try_recv() {
        observers.see(&event)?;
    }
    drop(slots);
    let ended = Event {
        t_ms: end_ms,
        node: Node::Harness,
        record: Record::RunEnded,
    };
    observers.see(&ended)?;
    if let Some(trace) = observers.trace.take() {
        trace
            .finish()
            .map_err(|error| format!("writing trace.jsonl: {error}"))?;
    }
    Ok(Outcome {
        seed,
        fingerprint: observers.fingerprint.hex(),
        records: observers.records,
        violations: observers.checker.finish(end_ms),
    })
}

/// A replica process slot.
enum Slot {
    Running(Process),
    /// Shutting down gracefully.
    Stopping(JoinHandle<()>),
    Down,
}

type Slots = Arc<Mutex<Vec<Slot>>>;

/// What the injector does at a time.
#[derive(Clone, Debug)]
enum Action {
    Start(usize),
    /// Undo fault `index` (heal, end the outage) and record its end.
    End(usize, Vec<u32>),
    /// Restart a replica after fault `index` took it down.
    Restart(usize, u32),
    SafetyPhaseEnds,
}

struct Injector {
    shared: Arc<Shared>,
    slots: Slots,
    plan: Plan,
}

impl Injector {
    async fn run(self) {
        let mut timeline: BTreeMap<(u64, u64), Action> = BTreeMap::new();
        let mut sequence = 0;
        for (index, (at_ms, _)) in self.plan.faults.iter().enumerate() {
            if *at_ms < self.plan.duration_ms {
                timeline.insert((*at_ms, sequence), Action::Start(index));
                sequence += 1;
            }
        }
        timeline.insert((self.plan.duration_ms, u64::MAX), Action::SafetyPhaseEnds);
        let mut ended = false;
        while let Some(((at_ms, _), action)) = timeline.pop_first() {
            // After the safety phase, what is left (ends and restarts) happens at once.
            let at_ms = if ended {
                self.shared.clock.now_ms()
            } else {
                at_ms
            };
            sleep_until(self.shared.clock.at(at_ms)).await;
            let later = match action {
                Action::Start(index) => self.start(index),
                Action::End(index, replicas) => {
                    self.end(index, &replicas);
                    None
                }
                Action::Restart(index, replica) => {
                    self.restart(index, replica).await;
                    None
                }
                Action::SafetyPhaseEnds => {
                    ended = true;
                    self.shared.emit(Node::Harness, Record::SafetyPhaseEnded);
                    None
                }
            };
            if let Some((after_ms, action)) = later {
                let when = (at_ms + after_ms).min(self.plan.duration_ms);
                timeline.insert((when, sequence), action);
                sequence += 1;
            }
        }
    }

    /// Start fault `index`; what to do when it ends, and after how long.
    fn start(&self, index: usize) -> Option<(u64, Action)> {
        let fault = self.plan.faults[index].1.clone();
        match fault {
            CrateFault::CutOff { replicas, for_ms } => {
                let cut: Vec<u32> = match replicas {
                    None => (0..self.plan.replicas).collect(),
                    Some(replica) => vec![self.resolve(replica)?],
                };
                let side = match replicas {
                    None => "replicas".to_owned(),
                    Some(_) => format!("replica-{}", cut[0]),
                };
                self.started(index, &fault, format!("{side}|kube-api"));
                for replica in &cut {
                    self.shared.cut_off(*replica);
                }
                Some((for_ms, Action::End(index, cut)))
            }
            CrateFault::Outage { for_ms, mode } => {
                self.started(
                    index,
                    &fault,
                    format!("kube-api mode={mode:?}").to_lowercase(),
                );
                self.shared.outage_starts(index as u32, mode);
                Some((for_ms, Action::End(index, Vec::new())))
            }
            CrateFault::Down {
                replica,
                downtime_ms,
                graceful,
            } => {
                let replica = self.resolve(replica)?;
                let process = {
                    let mut slots = self.lock_slots();
                    match std::mem::replace(&mut slots[replica as usize], Slot::Down) {
                        Slot::Running(process) => process,
                        other => {
                            slots[replica as usize] = other;
                            return None;
                        }
                    }
                };
                self.started(index, &fault, format!("replica-{replica}"));
                if graceful {
                    let stopping = tokio::spawn(process.stop());
                    self.lock_slots()[replica as usize] = Slot::Stopping(stopping);
                } else {
                    process.crash();
                }
                Some((downtime_ms, Action::Restart(index, replica)))
            }
        }
    }

    fn started(&self, index: usize, fault: &CrateFault, target: String) {
        let record = Record::FaultStarted {
            index: index as u32,
            fault: fault.name().to_owned(),
            target,
        };
        self.shared.emit(Node::Harness, record);
    }

    fn ended(&self, index: usize) {
        let record = Record::FaultEnded {
            index: index as u32,
            fault: self.plan.faults[index].1.name().to_owned(),
        };
        self.shared.emit(Node::Harness, record);
    }

    fn end(&self, index: usize, replicas: &[u32]) {
        match &self.plan.faults[index].1 {
            CrateFault::CutOff { .. } => {
                for replica in replicas {
                    self.shared.reconnect(*replica);
                }
            }
            CrateFault::Outage { .. } => self.shared.outage_ends(index as u32),
            CrateFault::Down { .. } => {}
        }
        self.ended(index);
    }

    async fn restart(&self, index: usize, replica: u32) {
        let slot = std::mem::replace(&mut self.lock_slots()[replica as usize], Slot::Down);
        if let Slot::Stopping(stopping) = slot {
            // A graceful stop still under way finishes first (at most its grace period).
            let _ = stopping.await;
        }
        self.ended(index);
        let process = Process::start(
            &self.shared,
            replica,
            self.plan.lease_crate,
            self.plan.timings,
        );
        self.lock_slots()[replica as usize] = Slot::Running(process);
    }

    /// A fault's replica: an index, or the one whose module runs (`None`: nobody leads).
    fn resolve(&self, replica: ReplicaRef) -> Option<u32> {
        match replica {
            ReplicaRef::Index(index) => (index < self.plan.replicas).then_some(index),
            ReplicaRef::Leader => self.shared.acting_replica(),
        }
    }

    fn lock_slots(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
