//! The `eventually` leader invariants with deadlines: `failover-bound` and `runner-progress`.

use super::shared_view::SharedView;
use super::{LeaderBounds, violation};
use crate::check::InvariantId;
use crate::check::{Kind, Monitor, Violation};
use crate::trace::{Actor, Record};
use std::collections::BTreeMap;

/// Faults that legitimately hold a failover up until they end: nobody reaches the API, or a
/// new leader's OnStartedLeading is deliberately late. The world ends a `callback_delay`
/// fault when the delayed callback is delivered.
const SUSPENDING_FAULTS: [&str; 3] = ["api_outage", "partition", "callback_delay"];

/// `failover-bound`: while some live replica has a runnable module, some replica runs the
/// modules within LD + 2·2.2·RP (+ round trips) of the last renewal of the replica that ran
/// them, or within 2.2·RP (+ round trips) of a release. The clock restarts when a fault ends
/// or a replica starts or resumes, and stands still while a suspending fault is in force.
pub(super) struct FailoverBound {
    bounds: LeaderBounds,
    view: SharedView,
    since_ms: u64,
    bound_ms: u64,
    flagged: bool,
    /// `holderIdentity` after the last Lease write seen (empty: released or deleted).
    holder: String,
}

impl FailoverBound {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> FailoverBound {
        let bound_ms = bounds.failover_ms();
        FailoverBound {
            bounds,
            view,
            since_ms: 0,
            bound_ms,
            flagged: false,
            holder: String::new(),
        }
    }

    fn restart_clock(&mut self, t_ms: u64, record: &Record) {
        let failover_ms = self.bounds.failover_ms();
        match record {
            Record::LeaseHeld { replica, .. } => {
                let acting = self
                    .view
                    .get()
                    .replicas
                    .get(replica)
                    .is_some_and(|view| !view.running.is_empty());
                if acting {
                    (self.since_ms, self.bound_ms) = (t_ms, failover_ms);
                }
            }
            // A fresh term's LeaseHeld comes before its modules start: the clock restarts
            // from that renewal once they do (the new leader may be lost before it renews
            // with them running).
            Record::ModuleStarted { replica, .. } => {
                let held_ms = self
                    .view
                    .get()
                    .replicas
                    .get(replica)
                    .and_then(|view| view.lease_term.and(view.last_held_ms));
                if let Some(held_ms) = held_ms.filter(|held_ms| *held_ms > self.since_ms) {
                    (self.since_ms, self.bound_ms) = (held_ms, failover_ms);
                }
            }
            Record::LeaseWritten {
                by: Actor::Replica(_),
                holder,
                ..
            } if holder.is_empty() => {
                (self.since_ms, self.bound_ms) = (t_ms, self.bounds.graceful_failover_ms());
            }
            // A write that takes the Lease for a new holder: that holder may be lost (a crash,
            // or a stop while the answer to its taking write is still in flight, so it cannot
            // release what it does not know it holds) before its modules start, and then the
            // others wait a lease duration from this write. Only a change of holder restarts
            // the clock, so a holder that renews without ever acting is still flagged.
            Record::LeaseWritten {
                by: Actor::Replica(_),
                holder,
                ..
            } if *holder != self.holder && t_ms + failover_ms > self.since_ms + self.bound_ms => {
                (self.since_ms, self.bound_ms) = (t_ms, failover_ms);
            }
            // A release may already have restarted the clock with the shorter bound.
            Record::FaultEnded { .. }
            | Record::ReplicaStarted { .. }
            | Record::ReplicaResumed { .. }
            | Record::ConfigReceived { .. }
                if t_ms + failover_ms > self.since_ms + self.bound_ms =>
            {
                (self.since_ms, self.bound_ms) = (t_ms, failover_ms);
            }
            Record::FaultStarted { fault, .. } if SUSPENDING_FAULTS.contains(&fault.as_str()) => {
                (self.since_ms, self.bound_ms) = (t_ms, failover_ms);
            }
            _ => {}
        }
    }

    fn check(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        let acting = self
            .view
            .get()
            .replicas
            .values()
            .any(|view| view.active() && !view.running.is_empty());
        if acting {
            self.flagged = false;
            return;
        }
        let suspended = self
            .view
            .get()
            .faults
            .values()
            .any(|fault| SUSPENDING_FAULTS.contains(&fault.as_str()));
        if self.flagged || suspended || t_ms <= self.since_ms + self.bound_ms {
            return;
        }
        let waiting = self
            .view
            .get()
            .replicas
            .iter()
            .filter(|(_, view)| view.active() && view.wants_election())
            .map(|(replica, _)| *replica)
            .collect::<Vec<_>>();
        if waiting.is_empty() {
            return;
        }
        debug_assert!(
            self.since_ms <= t_ms && !self.flagged,
            "a failover is flagged once, after its start"
        );
        self.flagged = true;
        let message = format!(
            "no replica runs the leader modules {} ms after {} ms although replicas {waiting:?} \
             want to (bound {} ms)",
            t_ms - self.since_ms,
            self.since_ms,
            self.bound_ms
        );
        out.push(violation(
            self.id(),
            Kind::Eventually,
            t_ms,
            &self.view.get(),
            &waiting,
            &[],
            message,
        ));
    }
}

impl Monitor for FailoverBound {
    fn id(&self) -> InvariantId {
        InvariantId::FailoverBound
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        self.restart_clock(t_ms, record);
        if let Record::LeaseWritten { holder, .. } = record {
            self.holder.clone_from(holder);
        }
        self.check(t_ms, out);
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        self.check(t_ms, out);
    }
}

/// What a module of a leading replica is expected to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Start,
    /// Receive this configuration version or a newer one.
    Config(u64),
    Stop,
}

/// `runner-progress`: the runner and every module wrapper get back to their loop, seen from
/// outside: on a leading replica, a configuration change reaches each running module (or stops
/// it when it is no longer runnable) and starts each newly runnable one; an OnStartedLeading
/// starts every runnable module; and every start of a module gives it the replica's latest
/// configuration (L5: a module restarted after a lost term runs on the latest configuration,
/// never on none). Each within twice the stop latency plus RP (a wrapper may be waiting for
/// its module to return). Where the module itself decides runnability (agentk v2 and later,
/// `3d59282c`), a configuration that is not runnable reaches the running module instead of
/// stopping it.
pub(super) struct RunnerProgress {
    bounds: LeaderBounds,
    view: SharedView,
    /// (replica, module) to the step awaited and its deadline.
    awaited: BTreeMap<(u32, String), (Step, u64)>,
    /// The latest configuration version each replica received.
    latest_config: BTreeMap<u32, u64>,
}

impl RunnerProgress {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> RunnerProgress {
        RunnerProgress {
            bounds,
            view,
            awaited: BTreeMap::new(),
            latest_config: BTreeMap::new(),
        }
    }

    fn grace_ms(&self) -> u64 {
        let bounds = &self.bounds;
        2 * bounds.module_stop_latency_max_ms + bounds.retry_period_ms + bounds.round_trip_ms()
    }

    fn expect_steps(&mut self, t_ms: u64, record: &Record) {
        let deadline_ms = t_ms + self.grace_ms();
        match record {
            Record::ConfigReceived {
                replica,
                version,
                runnable_modules,
            } => {
                self.latest_config.insert(*replica, *version);
                let shared = self.view.get();
                let Some(view) = shared.replicas.get(replica) else {
                    return;
                };
                let gated = self.bounds.variant.promises_election_iff_demand();
                for module in &view.running {
                    let step = if !gated || runnable_modules.contains(module) {
                        Step::Config(*version)
                    } else {
                        Step::Stop
                    };
                    self.awaited
                        .insert((*replica, module.clone()), (step, deadline_ms));
                }
                if view.believed_term.is_some() {
                    for module in runnable_modules
                        .iter()
                        .filter(|module| !view.running.contains(module))
                    {
                        self.awaited
                            .insert((*replica, module.clone()), (Step::Start, deadline_ms));
                    }
                }
            }
            Record::ModuleStarted {
                replica, module, ..
            } => {
                // A start is made on a runnable configuration, so the replica has one.
                if let Some(version) = self.latest_config.get(replica) {
                    self.awaited.insert(
                        (*replica, module.clone()),
                        (Step::Config(*version), deadline_ms),
                    );
                }
            }
            Record::LeadingStarted { replica, .. } => {
                let shared = self.view.get();
                let Some(view) = shared.replicas.get(replica) else {
                    return;
                };
                let demand = view.demand.iter().flatten();
                for module in demand.filter(|module| !view.running.contains(module)) {
                    self.awaited
                        .insert((*replica, module.clone()), (Step::Start, deadline_ms));
                }
            }
            _ => {}
        }
    }

    fn resolve_steps(&mut self, record: &Record) {
        match record {
            Record::ModuleStarted {
                replica, module, ..
            } => {
                let key = (*replica, module.clone());
                if self
                    .awaited
                    .get(&key)
                    .is_some_and(|(step, _)| *step == Step::Start)
                {
                    self.awaited.remove(&key);
                }
            }
            Record::ModuleConfig {
                replica,
                module,
                version,
            } => {
                let key = (*replica, module.clone());
                let satisfied =
                    |step: &Step| matches!(step, Step::Config(wanted) if wanted <= version);
                if self
                    .awaited
                    .get(&key)
                    .is_some_and(|(step, _)| satisfied(step))
                {
                    self.awaited.remove(&key);
                }
            }
            Record::ModuleStopped { replica, module } => {
                self.awaited.remove(&(*replica, module.clone()));
            }
            Record::LeadingStopped { replica, .. } => {
                self.awaited.retain(|(awaited_replica, _), (step, _)| {
                    awaited_replica != replica || *step != Step::Start
                });
            }
            Record::ReplicaStopped { replica } | Record::ReplicaPaused { replica } => {
                self.awaited
                    .retain(|(awaited_replica, _), _| awaited_replica != replica);
            }
            _ => {}
        }
    }

    fn check(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        let overdue = self
            .awaited
            .iter()
            .filter(|(_, (_, deadline_ms))| t_ms > *deadline_ms)
            .map(|(key, (step, _))| (key.clone(), *step))
            .collect::<Vec<_>>();
        for ((replica, module), step) in overdue {
            let awaited = self.awaited.remove(&(replica, module.clone()));
            debug_assert!(awaited.is_some(), "an overdue step was awaited");
            let what = match step {
                Step::Start => "start".to_string(),
                Step::Config(version) => format!("receive config {version}"),
                Step::Stop => "stop".to_string(),
            };
            let message = format!(
                "module {module} on replica {replica} did not {what} within {} ms: the runner or \
                 its wrapper is stuck",
                self.grace_ms()
            );
            out.push(violation(
                self.id(),
                Kind::Eventually,
                t_ms,
                &self.view.get(),
                &[replica],
                &[&module],
                message,
            ));
        }
    }
}

impl Monitor for RunnerProgress {
    fn id(&self) -> InvariantId {
        InvariantId::RunnerProgress
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        self.expect_steps(t_ms, record);
        self.resolve_steps(record);
        self.check(t_ms, out);
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        self.check(t_ms, out);
    }
}
