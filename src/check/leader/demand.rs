//! The leader invariants about when a replica competes: `election-iff-demand` and
//! `rejoin-after-outage`.

use super::shared_view::SharedView;
use super::{LeaderBounds, violation};
use crate::check::InvariantId;
use crate::check::{Kind, Monitor, Violation};
use crate::trace::Record;
use std::collections::BTreeMap;

/// `election-iff-demand`: a replica runs the election exactly while some leader module of its
/// latest configuration is runnable. Starting may lag by the stop latency (agentk's runner
/// waits for the modules of a lost term first); stopping may lag by the stop latency plus a
/// release bounded by RD. A replica that stops competing for lack of demand while the Lease
/// still names it, with the API reachable, did not release.
pub(super) struct ElectionIffDemand {
    bounds: LeaderBounds,
    view: SharedView,
    /// Replicas already reported, with the (demand, election) change times of that episode.
    flagged: BTreeMap<u32, (u64, u64)>,
    /// The replica `before` found still named by the Lease as it stopped competing.
    pending: Option<u32>,
}

impl ElectionIffDemand {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> ElectionIffDemand {
        ElectionIffDemand {
            bounds,
            view,
            flagged: BTreeMap::new(),
            pending: None,
        }
    }

    fn grace_ms(&self, wants_election: bool) -> u64 {
        let bounds = &self.bounds;
        let start_ms = bounds.module_stop_latency_max_ms + bounds.round_trip_ms();
        if wants_election {
            start_ms
        } else {
            start_ms + bounds.renew_deadline_ms + bounds.round_trip_ms()
        }
    }

    /// At ElectionStopped without demand: the Lease must not still name the replica, unless
    /// the API was unreachable during the release (a call bounded by RD and a round trip:
    /// sent into a partition or outage, it is lost even if the fault ends before its timeout).
    fn unreleased(&self, t_ms: u64, record: &Record) -> Option<u32> {
        let Record::ElectionStopped { replica } = record else {
            return None;
        };
        let shared = self.view.get();
        let view = shared.replicas.get(replica)?;
        let identity = shared.identities.get(replica)?;
        let holds = shared
            .lease
            .as_ref()
            .is_some_and(|lease| lease.holder == *identity);
        let no_demand = view.demand.as_ref().is_some_and(|demand| demand.is_empty());
        let release_ms = self.bounds.renew_deadline_ms + self.bounds.round_trip_ms();
        let reachable = !shared.api_fault_active()
            && shared
                .api_fault_ended_ms
                .is_none_or(|ended_ms| t_ms >= ended_ms + release_ms);
        (holds && no_demand && reachable).then_some(*replica)
    }

    fn check(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        let mut found = Vec::new();
        for (replica, view) in &self.view.get().replicas {
            if !view.active() || view.demand.is_none() {
                continue;
            }
            let wants = view.wants_election();
            if wants == view.election_running {
                self.flagged.remove(replica);
                continue;
            }
            let episode = (view.demand_changed_ms, view.election_changed_ms);
            let since_ms = view.episode_started_ms();
            // A paused process changes nothing: its pause does not count against the grace.
            if t_ms <= since_ms + self.grace_ms(wants) + view.paused_in_episode_ms
                || self.flagged.get(replica) == Some(&episode)
            {
                continue;
            }
            self.flagged.insert(*replica, episode);
            let message = if wants {
                format!(
                    "replica {replica} has runnable leader modules {:?} but has not run the \
                     election for {} ms",
                    view.demand.as_ref().expect("demand is known here"),
                    t_ms - since_ms
                )
            } else {
                format!(
                    "replica {replica} has no runnable leader module but still runs the election \
                     {} ms later",
                    t_ms - since_ms
                )
            };
            found.push((*replica, message));
        }
        for (replica, message) in found {
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[replica],
                &[],
                message,
            ));
        }
    }
}

impl Monitor for ElectionIffDemand {
    fn id(&self) -> InvariantId {
        InvariantId::ElectionIffDemand
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, t_ms: u64, record: &Record) {
        self.pending = self.unreleased(t_ms, record);
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some(replica) = self.pending.take() {
            let message = format!(
                "replica {replica} stopped competing for lack of demand but the Lease still \
                 names it"
            );
            out.push(violation(
                self.id(),
                Kind::Always,
                t_ms,
                &self.view.get(),
                &[replica],
                &[],
                message,
            ));
        }
        self.check(t_ms, out);
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        self.check(t_ms, out);
    }
}

/// `rejoin-after-outage`: a replica that lost the lease while the API was unreachable (or
/// shortly after: a hung release returns when the outage ends) competes again once the API
/// answers, if it still has demand: by the outage's end plus stop latency, a release bounded
/// by RD, one jittered retry and two round trips.
pub(super) struct RejoinAfterOutage {
    bounds: LeaderBounds,
    view: SharedView,
    /// Replicas that lost the lease during an outage: when.
    lost: BTreeMap<u32, u64>,
    /// The replica `before` found losing its term in an outage.
    pending: Option<u32>,
}

impl RejoinAfterOutage {
    pub(super) fn new(bounds: LeaderBounds, view: SharedView) -> RejoinAfterOutage {
        RejoinAfterOutage {
            bounds,
            view,
            lost: BTreeMap::new(),
            pending: None,
        }
    }

    fn grace_ms(&self) -> u64 {
        let bounds = &self.bounds;
        bounds.module_stop_latency_max_ms
            + bounds.renew_deadline_ms
            + bounds.retry_gap_max_ms()
            + 2 * bounds.round_trip_ms()
    }

    /// Whether this record is a lease holder losing its term during (or right after) an
    /// API outage.
    fn loses_in_outage(&self, t_ms: u64, record: &Record) -> Option<u32> {
        let (Record::LeadingStopped { replica, .. } | Record::ElectionStopped { replica }) = record
        else {
            return None;
        };
        let shared = self.view.get();
        let held = shared
            .replicas
            .get(replica)
            .is_some_and(|view| view.lease_term.is_some());
        let late_ms = self.bounds.renew_deadline_ms + self.bounds.round_trip_ms();
        let recent_end = shared
            .api_fault_ended_ms
            .is_some_and(|end_ms| t_ms <= end_ms + late_ms);
        (held && (shared.api_fault_active() || recent_end)).then_some(*replica)
    }

    fn check(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        if self.view.get().api_fault_active() {
            return;
        }
        let ended_ms = self.view.get().api_fault_ended_ms.unwrap_or(0);
        let grace_ms = self.grace_ms();
        for (replica, lost_ms) in self.lost.clone() {
            let shared = self.view.get();
            let Some(view) = shared.replicas.get(&replica) else {
                continue;
            };
            if view.stopped {
                self.lost.remove(&replica);
                continue;
            }
            let back_ms = ended_ms.max(lost_ms);
            if t_ms <= back_ms + grace_ms {
                continue;
            }
            self.lost.remove(&replica);
            // Judged at the deadline: an election that starts and stops again at once (the
            // agentk-v1 wrapper unregistering) is no rejoin.
            let rejoined =
                view.election_running || view.last_held_ms.is_some_and(|held_ms| held_ms > back_ms);
            if !rejoined && view.active() && view.wants_election() {
                let message = format!(
                    "replica {replica} lost the lease in an API outage (at {lost_ms} ms) and has \
                     not re-entered the election {} ms after the API answered again",
                    t_ms - ended_ms
                );
                out.push(violation(
                    self.id(),
                    Kind::Eventually,
                    t_ms,
                    &self.view.get(),
                    &[replica],
                    &[],
                    message,
                ));
            }
        }
    }
}

impl Monitor for RejoinAfterOutage {
    fn id(&self) -> InvariantId {
        InvariantId::RejoinAfterOutage
    }

    fn reads_before(&self) -> bool {
        true
    }

    fn before(&mut self, t_ms: u64, record: &Record) {
        self.pending = self.loses_in_outage(t_ms, record);
    }

    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>) {
        self.view.apply(t_ms, record);
        if let Some(replica) = self.pending.take() {
            self.lost.entry(replica).or_insert(t_ms);
        }
        self.check(t_ms, out);
    }

    fn finish(&mut self, t_ms: u64, out: &mut Vec<Violation>) {
        self.check(t_ms, out);
    }
}
