//! Fault injection. Each fault is modelled as the real system behaves; what each
//! kind does is in `docs/scenario-format.md`, what it may break in `docs/policies.md`.
//!
//! This file holds the fault harness (which faults are under way, and their records); the
//! faults of each owner start in their own file: `faults/elastic.rs` (server, pods,
//! profiles, nodes, jobs), `faults/network.rs` (partitions, API outages) and
//! `faults/leader.rs` (replicas and their Lease).

mod elastic;
mod leader;
mod network;

use super::Sink;
use super::build::World;
use super::events::Event;
use super::run::node;
use crate::engine::{SimTime, Stream, StreamId};
use crate::scenario::{FaultKind, LeaderFault};
use crate::trace::Record;
use std::collections::BTreeMap;

/// How a started fault ends.
enum Lasting {
    /// At once: an instant fault.
    Instant,
    /// A timer at its start plus this length.
    For(u64),
    /// When the world signals it (a restart, a resume, a newer drift, a callback delivered),
    /// or at the end of the safety phase.
    Signalled,
}

/// What starting a fault did.
enum Started {
    /// It acts on `target`, and ends as `lasting` says.
    Acting { target: String, lasting: Lasting },
    /// Its replica is not there at this moment: recorded as a fault without a target.
    NoTarget,
    /// Nothing to do and nothing recorded (a server crash while the server is down).
    Skipped,
}

/// The fault side of a run: the faults under way, the replicas they hit, what the swarm drew,
/// and the faults injected from outside. Only the fault files change it.
pub(super) struct FaultHarness {
    /// Active fault intervals by fault index, for `FaultEnded` at the end of the safety phase.
    active_faults: BTreeMap<usize, &'static str>,
    /// The replica a running fault of one replica hit, by fault index.
    fault_targets: BTreeMap<usize, u32>,
    /// The safety phase is over: no new fault starts.
    safety_over: bool,
    /// What the swarm drew for this seed, one line each.
    swarm_drawn: Vec<String>,
    /// Faults injected from outside the run (`serve`'s pod deletes), numbered after the
    /// scenario's own. Only `serve` (the `live` feature) injects.
    #[cfg_attr(not(feature = "live"), allow(dead_code))]
    injected_faults: usize,
    /// Which pods, jobs and nodes a fault hits, and a burst's jobs.
    random_faults: Stream,
}

impl FaultHarness {
    /// No fault under way yet; `swarm_drawn` says what the swarm drew.
    pub(super) fn new(seed: u64, swarm_drawn: Vec<String>) -> FaultHarness {
        FaultHarness {
            active_faults: BTreeMap::new(),
            fault_targets: BTreeMap::new(),
            safety_over: false,
            swarm_drawn,
            injected_faults: 0,
            random_faults: Stream::new(seed, StreamId::Faults),
        }
    }

    /// True once the safety phase is over (no new fault starts, nothing restarts late).
    pub(super) fn safety_over(&self) -> bool {
        self.safety_over
    }

    /// What the swarm drew for this seed, one line each.
    pub(super) fn swarm_drawn(&self) -> &[String] {
        &self.swarm_drawn
    }

    /// The index of the next fault injected from outside, after the scenario's `planned`.
    #[cfg_attr(not(feature = "live"), allow(dead_code))]
    pub(super) fn next_injected(&mut self, planned: usize) -> u32 {
        let index = planned + self.injected_faults;
        self.injected_faults += 1;
        u32::try_from(index).expect("fault indexes fit in a u32")
    }

    /// A lasting fault `index` is under way.
    fn activate(&mut self, index: usize, name: &'static str) {
        let previous = self.active_faults.insert(index, name);
        debug_assert!(previous.is_none(), "fault {index} started twice");
    }
}

impl World {
    /// A scheduled fault starts: act on its target, record it, and schedule its end if it
    /// lasts (one file per owner of fault kinds).
    pub(super) fn fault_start(&mut self, now: SimTime, index: usize, sink: &mut dyn Sink) {
        if self.faults.safety_over {
            return;
        }
        let kind = self.scenario.faults[index].kind.clone();
        let started = match &kind {
            FaultKind::Elastic(fault) => self.start_elastic_fault(now, fault, sink),
            FaultKind::Network(fault) => self.start_network_fault(now, index, fault),
            FaultKind::Leader(fault) => self.start_leader_fault(now, index, fault, sink),
        };
        match started {
            Started::Acting { target, lasting } => {
                self.record_fault_start(now, index, kind.name(), target, lasting, sink);
            }
            Started::NoTarget => self.no_target(index, kind.name(), sink),
            Started::Skipped => {}
        }
    }

    /// Record a started fault; a lasting one is active until its end (scheduled here when
    /// it lasts for a given time), an instant one ends at once.
    fn record_fault_start(
        &mut self,
        now: SimTime,
        index: usize,
        name: &'static str,
        target: String,
        lasting: Lasting,
        sink: &mut dyn Sink,
    ) {
        let record = Record::FaultStarted {
            index: index as u32,
            fault: name.to_owned(),
            target,
        };
        self.emit(sink, node::HARNESS, record);
        match lasting {
            Lasting::For(ms) => {
                self.faults.activate(index, name);
                self.queue.push(now.plus_ms(ms), Event::FaultEnd { index });
            }
            Lasting::Signalled => self.faults.activate(index, name),
            Lasting::Instant => {
                let record = Record::FaultEnded {
                    index: index as u32,
                    fault: name.to_owned(),
                };
                self.emit(sink, node::HARNESS, record);
            }
        }
    }

    /// A lasting fault ends (also called for every active fault at the end of the safety
    /// phase, and when a crashed server restarts).
    pub(super) fn fault_end(&mut self, now: SimTime, index: usize, sink: &mut dyn Sink) {
        let Some(name) = self.faults.active_faults.remove(&index) else {
            return;
        };
        match &self.scenario.faults[index].kind {
            FaultKind::Network(fault) => {
                let fault = fault.clone();
                self.end_network_fault(now, index, &fault, sink);
            }
            // Nothing to undo: the restart, the resume or the last step already happened.
            FaultKind::Elastic(_) | FaultKind::Leader(_) => {}
        }
        let record = Record::FaultEnded {
            index: index as u32,
            fault: name.to_owned(),
        };
        self.emit(sink, node::HARNESS, record);
    }

    /// A fault with no target at this moment (no leader, replica down): recorded as such.
    fn no_target(&mut self, index: usize, name: &str, sink: &mut dyn Sink) {
        let target = "none (no such replica at this moment)".to_owned();
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultStarted {
                index: index as u32,
                fault: name.to_owned(),
                target,
            },
        );
        self.emit(
            sink,
            node::HARNESS,
            Record::FaultEnded {
                index: index as u32,
                fault: name.to_owned(),
            },
        );
    }

    /// `duration` reached: no new fault starts, and every active fault ends but a late
    /// callback already on its way, which ends its fault when it arrives (`heal_replicas`
    /// disarms the others).
    pub(super) fn end_faults_of_safety_phase(&mut self, now: SimTime, sink: &mut dyn Sink) {
        self.faults.safety_over = true;
        self.end_faults(now, sink, |kind, _| {
            !matches!(kind, FaultKind::Leader(LeaderFault::CallbackDelay { .. }))
        });
    }

    /// End every active fault for which `ends(kind, target replica)` holds, in index order.
    fn end_faults(
        &mut self,
        now: SimTime,
        sink: &mut dyn Sink,
        ends: impl Fn(&FaultKind, Option<u32>) -> bool,
    ) {
        let ended: Vec<usize> = self
            .faults
            .active_faults
            .keys()
            .copied()
            .filter(|i| {
                ends(
                    &self.scenario.faults[*i].kind,
                    self.faults.fault_targets.get(i).copied(),
                )
            })
            .collect();
        for index in ended {
            self.faults.fault_targets.remove(&index);
            self.fault_end(now, index, sink);
        }
    }
}
