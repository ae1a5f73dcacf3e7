//! The `always` leader invariants about the Lease, who acts, and what modules receive.

use super::shared_view::SharedView;
use super::{LeaderBounds, set_expected, violation};
use crate::check::InvariantId;
use crate::check::{Kind, Monitor, Violation};
use crate::trace::{Actor, Record};
use std::collections::BTreeSet;

/// `lease-cas`: every accepted write carried the current resourceVersion (or created an
/// absent Lease); `leaseTransitions` grows by one exactly when the holder changes to a new
/// non-empty holder, and stays put otherwise; a replica releases only a Lease that names it.
/// Third-party writes are unconditional by nature and only reset what the monitor knows.
pub(super) struct LeaseCas {
    view: SharedView,
    /// The broken rule `before` found in the record being observed.
    pending: Option<(Option<u32>, String)>,
}

impl LeaseCas {
    pub(super) fn new(_bounds: LeaderBounds, view: SharedView) -> LeaseCas {
        LeaseCas {
            view,
            pending: None,
        }
    }

    fn check_write(&self, record: &Record) -> Option<(Option<u32>, String)> {
        let Record::LeaseWritten {
            by,
            verb,
            holder,
            transitions,
            rv_current,
            rv_sent,
            rv_new,
        } = record
        else {
            return None;
        };
        let writer = match by {
            Actor::Replica(replica) => Some(*replica),
            _ => None,
        };
        if *by == Actor::External || verb.contains("delete") {
            return None;
        }
        if rv_current.is_some_and(|current| *rv_new <= current) {
            return Some((
                writer,
                format!("resourceVersion went from {rv_current:?} to {rv_new}"),
            ));
        }
        if verb.contains("create") {
            return rv_current.map(|current| {
                (
                    writer,
                    format!("a create was accepted over an existing Lease (rv {current})"),
                )
            });
        }
        if rv_sent != rv_current {
            let message =
                format!("a {verb} sent rv {rv_sent:?} but the current rv was {rv_current:?}");
            return Some((writer, message));
        }
        let shared = self.view.get();
        let previous = shared.lease.as_ref()?;
        // A release (holder "") by a replica whose identity the Lease no longer names wipes
        // the next holder's Lease: CAS-valid, yet what the lock exists to prevent (H3).
        let identity = writer.and_then(|replica| shared.identities.get(&replica));
        if holder.is_empty()
            && !previous.holder.is_empty()
            && identity.is_some_and(|identity| *identity != previous.holder)
        {
            let message = format!(
                "replica {} released a Lease held by {:?}",
                writer.expect("an identity belongs to a replica"),
                previous.holder
            );
            return Some((writer, message));
        }
        let moved = !holder.is_empty() && *holder != previous.holder;
        let expected = previous.transitions + u32::from(moved);
        (*transitions != expected).then(|| {
            let message = format!(
                "leaseTransitions went from {} to {transitions} when the holder went from {:?} \
                 to {holder:?} (expected {expected})",
                previous.transitions, previous.holder
            );
            (writer, message)
        })
    }
}

impl Monitor for LeaseCas {
    fn id(&self) -> InvariantId {
        InvariantId::LeaseCas
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, _t_ms: u64, record: &Record) {
        self.pending = self.check_write(record);
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some((writer, message)) = self.pending.take() {
            let replicas = writer.into_iter().collect::<Vec<_>>();
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &replicas,
                &[],
                message,
            ));
        }
    }
}

/// `single-leader-acting`: at most one replica has leader modules running at any instant.
/// A violation outside the fault budget is reported as expected, with the reason, unless one
/// of the overlapping replicas had released the Lease itself while its modules still ran: a
/// voluntary release is never excused.
pub(super) struct SingleLeaderActing {
    bounds: LeaderBounds,
    view: SharedView,
    overlapping: bool,
}

impl SingleLeaderActing {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> SingleLeaderActing {
        SingleLeaderActing {
            bounds,
            view,
            overlapping: false,
        }
    }
}

impl Monitor for SingleLeaderActing {
    fn id(&self) -> InvariantId {
        InvariantId::SingleLeaderActing
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if !self.view.get().several_acting() {
            self.overlapping = false;
            return;
        }
        if self.overlapping {
            return;
        }
        self.overlapping = true;
        let acting = self.view.get().acting();
        let mut message = format!("replicas {acting:?} run leader modules at the same time");
        // The fault budget covers involuntary loss (partition, outage, crash, pause), which
        // the old leader cannot know of; its own release is a choice it makes knowingly.
        let budget = match self.view.get().released_while_acting(&acting) {
            Some((replica, released_ms)) => {
                message.push_str(&format!(
                    " (replica {replica} released the Lease itself at {released_ms} ms while \
                     its modules still ran: a voluntary release has no fault budget)"
                ));
                None
            }
            None => self.view.get().outside_budget(t_ms, &acting, &self.bounds),
        };
        if let Some(reason) = &budget {
            message.push_str(&format!(" (outside the fault budget: {reason})"));
        }
        let mut found = violation(
            self.id(),
            Kind::Always,
            t_ms,
            &self.view.get(),
            &acting,
            &[],
            message,
        );
        set_expected(&mut found, budget.is_some());
        out.push(found);
    }
}

/// `leader-grounded`: modules run only within RP + RD + stop latency of the replica's last
/// successful Lease write (plus one API latency of slack).
pub(super) struct LeaderGrounded {
    bounds: LeaderBounds,
    view: SharedView,
    flagged: BTreeSet<u32>,
}

impl LeaderGrounded {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> LeaderGrounded {
        LeaderGrounded {
            bounds,
            view,
            flagged: BTreeSet::new(),
        }
    }

    /// RP + RD and the module's stop are timed on the replica's own clock: on a slow one
    /// they last longer.
    fn bound_ms(&self, replica: u32) -> u64 {
        let bounds = &self.bounds;
        let local_ms =
            bounds.retry_period_ms + bounds.renew_deadline_ms + bounds.module_stop_latency_max_ms;
        self.view.get().on_own_clock_ms(replica, local_ms) + bounds.api_latency_max_ms
    }

    fn check(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        for (replica, view) in &self.view.get().replicas {
            if !view.active() || view.running.is_empty() {
                self.flagged.remove(replica);
                continue;
            }
            let bound_ms = self.bound_ms(*replica);
            let grounded = view
                .last_held_ms
                .is_some_and(|held_ms| t_ms <= held_ms + bound_ms);
            if grounded || !self.flagged.insert(*replica) {
                continue;
            }
            let message = match view.last_held_ms {
                Some(held_ms) => format!(
                    "replica {replica} runs leader modules {} ms after its last lease write \
                     (bound {bound_ms} ms)",
                    t_ms - held_ms
                ),
                None => {
                    format!("replica {replica} runs leader modules without ever holding the lease")
                }
            };
            let budget = self
                .view
                .get()
                .outside_budget(t_ms, &[*replica], &self.bounds);
            let mut found = violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[*replica],
                &[],
                message,
            );
            set_expected(&mut found, budget.is_some());
            out.push(found);
        }
    }
}

impl Monitor for LeaderGrounded {
    fn id(&self) -> InvariantId {
        InvariantId::LeaderGrounded
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Record::LeaseHeld { replica, .. } = record {
            self.flagged.remove(replica);
        }
        self.check(t_ms, out);
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        self.check(t_ms, out);
    }
}

/// `leader-only`: the runner believes it leads only on an OnStartedLeading of the term its
/// elector currently holds; a module starts only under the term the runner believes in; and
/// no module runs longer than the stop latency after the runner stopped leading.
pub(super) struct LeaderOnly {
    bounds: LeaderBounds,
    view: SharedView,
    flagged: BTreeSet<u32>,
    /// The broken rule `before` found in the record being observed.
    pending: Option<(u32, Option<String>, String)>,
}

impl LeaderOnly {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> LeaderOnly {
        LeaderOnly {
            bounds,
            view,
            flagged: BTreeSet::new(),
            pending: None,
        }
    }

    /// A broken rule at this record, judged on the state before it.
    fn check_record(&self, record: &Record) -> Option<(u32, Option<String>, String)> {
        match record {
            Record::LeadingStarted { replica, term } => {
                let lease_term = self
                    .view
                    .get()
                    .replicas
                    .get(replica)
                    .and_then(|view| view.lease_term);
                (lease_term != Some(*term)).then(|| {
                    let message = format!(
                        "replica {replica}'s runner took the OnStartedLeading of term {term} while \
                         its elector holds {lease_term:?}"
                    );
                    (*replica, None, message)
                })
            }
            Record::ModuleStarted {
                replica,
                module,
                term,
            } => {
                let believed = self
                    .view
                    .get()
                    .replicas
                    .get(replica)
                    .and_then(|view| view.believed_term);
                (believed != Some(*term)).then(|| {
                    let message = format!(
                        "module {module} started for term {term} on replica {replica} whose runner \
                         believes {believed:?}"
                    );
                    (*replica, Some(module.clone()), message)
                })
            }
            _ => None,
        }
    }

    /// Modules still running past the stop latency after LeadingStopped (time the process
    /// spent paused since then does not count: a frozen process stops nothing).
    fn check_lingering(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        let shared = self.view.get();
        for (replica, view) in &shared.replicas {
            let stopping =
                view.active() && !view.running.is_empty() && view.believed_term.is_none();
            // The stop latency (a float on the replica's own clock) only for a stopping one.
            let lingering_past_ms = match view.leading_stopped_ms {
                Some(stopped_ms) if stopping => {
                    let stop_ms =
                        shared.on_own_clock_ms(*replica, self.bounds.module_stop_latency_max_ms);
                    let since_ms = stopped_ms + view.paused_since_leading_stopped_ms;
                    (t_ms > since_ms + stop_ms).then_some(stop_ms)
                }
                _ => None,
            };
            let Some(stop_ms) = lingering_past_ms else {
                self.flagged.remove(replica);
                continue;
            };
            if self.flagged.insert(*replica) {
                let message = format!(
                    "replica {replica} still runs {:?} more than {stop_ms} ms after its runner \
                     stopped leading",
                    view.running
                );
                out.push(violation(
                    self.id(),
                    Kind::Always,
                    t_ms,
                    &shared,
                    &[*replica],
                    &[],
                    message,
                ));
            }
        }
    }
}

impl Monitor for LeaderOnly {
    fn id(&self) -> InvariantId {
        InvariantId::LeaderOnly
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, _t_ms: u64, record: &Record) {
        self.pending = self.check_record(record);
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some((replica, module, message)) = self.pending.take() {
            let modules = module.as_deref().into_iter().collect::<Vec<_>>();
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[replica],
                &modules,
                message,
            ));
        }
        self.check_lingering(t_ms, out);
    }
}

/// `no-duplicate-module`: a module never starts on a replica where its `Run` is active.
pub(super) struct NoDuplicateModule {
    view: SharedView,
    /// The (replica, module) started again, found by `before` in the record being observed.
    pending: Option<(u32, String)>,
}

impl NoDuplicateModule {
    pub(super) fn new(_bounds: LeaderBounds, view: SharedView) -> NoDuplicateModule {
        NoDuplicateModule {
            view,
            pending: None,
        }
    }
}

impl Monitor for NoDuplicateModule {
    fn id(&self) -> InvariantId {
        InvariantId::NoDuplicateModule
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, _t_ms: u64, record: &Record) {
        self.pending = match record {
            Record::ModuleStarted {
                replica, module, ..
            } => self
                .view
                .get()
                .replicas
                .get(replica)
                .is_some_and(|view| view.running.contains(module))
                .then_some((*replica, module.clone())),
            _ => None,
        };
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some((replica, module)) = self.pending.take() {
            let message =
                format!("module {module} started again on replica {replica} while running");
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[replica],
                &[&module],
                message,
            ));
        }
    }
}

/// `config-fresh`: a module never receives a configuration older than one it already
/// received (per replica process).
pub(super) struct ConfigFresh {
    view: SharedView,
    /// (replica, module, version, newest) of a stale configuration `before` found.
    pending: Option<(u32, String, u64, u64)>,
}

impl ConfigFresh {
    pub(super) fn new(_bounds: LeaderBounds, view: SharedView) -> ConfigFresh {
        ConfigFresh {
            view,
            pending: None,
        }
    }
}

impl Monitor for ConfigFresh {
    fn id(&self) -> InvariantId {
        InvariantId::ConfigFresh
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, _t_ms: u64, record: &Record) {
        self.pending = match record {
            Record::ModuleConfig {
                replica,
                module,
                version,
            } => self
                .view
                .get()
                .replicas
                .get(replica)
                .and_then(|view| view.config_versions.get(module).copied())
                .filter(|newest| newest > version)
                .map(|newest| (*replica, module.clone(), *version, newest)),
            _ => None,
        };
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some((replica, module, version, newest)) = self.pending.take() {
            let message = format!(
                "module {module} on replica {replica} received config {version} after config \
                 {newest}"
            );
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[replica],
                &[&module],
                message,
            ));
        }
    }
}
