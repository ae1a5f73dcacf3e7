//! Leader-election monitors: one per row of the leader table of `docs/invariants.md`.
//!
//! Every monitor rebuilds what it needs from the records alone ([`view::LeaderView`]): the
//! Lease from `LeaseWritten`, each replica's elector, runner and modules from the records the
//! world translates 1:1 from `crate::leader::Observation`, and the faults in force from
//! `FaultStarted`/`FaultEnded`. The world should name a clock drift's rate in its target
//! (`rate=1.3`); a drift of unknown rate counts as outside the fault budget.
//!
//! Files:
//! * `leader/view.rs`: the state rebuilt from records, and the fault budget;
//! * `leader/safety.rs`: `lease-cas`, `single-leader-acting`, `leader-grounded`,
//!   `leader-only`, `no-duplicate-module`, `config-fresh`;
//! * `leader/demand.rs`: `election-iff-demand`, `rejoin-after-outage`;
//! * `leader/liveness.rs`: `failover-bound`, `runner-progress`.

mod demand;
mod hazard;
mod liveness;
mod safety;
mod shared_view;
mod view;

#[cfg(test)]
mod tests;

pub use hazard::{Hazard, defect_count_text, hazard_lines, hazard_of};

use super::{InvariantId, Kind, Monitor, Violation};
use crate::leader::Variant;
use shared_view::SharedView;
use view::LeaderView;

/// The scenario's leader settings, as the monitors' bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaderBounds {
    /// How long a Lease is valid after its last renewal, in simulated milliseconds.
    pub lease_duration_ms: u64,
    /// How long a leader keeps trying to renew before it gives up leading.
    pub renew_deadline_ms: u64,
    /// The pause between a replica's acquire or renew attempts.
    pub retry_period_ms: u64,
    /// One API call, one way.
    pub api_latency_max_ms: u64,
    /// The longest a module takes to stop once its runner tells it to.
    pub module_stop_latency_max_ms: u64,
    /// How many replicas run the elector.
    pub replicas: u32,
    /// Which leader runner the replicas run; some bounds differ by variant.
    pub variant: Variant,
}

impl LeaderBounds {
    /// One API round trip at worst.
    fn round_trip_ms(&self) -> u64 {
        2 * self.api_latency_max_ms
    }

    /// LD − RP − RD − δ − module stop; overlaps need a fault larger than it.
    fn safety_margin_ms(&self) -> i64 {
        let spent_ms = self.retry_period_ms
            + self.renew_deadline_ms
            + self.round_trip_ms()
            + self.module_stop_latency_max_ms;
        self.lease_duration_ms as i64 - spent_ms as i64
    }

    /// The longest a jittered acquire gap lasts: 2.2·RP.
    fn retry_gap_max_ms(&self) -> u64 {
        self.retry_period_ms * 22 / 10
    }

    /// After a crash: LD + 2·2.2·RP, plus five round trips. client-go's jittered wait starts
    /// when the previous attempt returns (`JitterUntil`, sliding), so each of the two gaps
    /// comes after a Get's round trip: the Get in flight when the last write committed, and
    /// the one in flight when the lease expires on the follower's clock; then the observing
    /// Get, and the taking Get and Update. With round trips of milliseconds the two in-flight
    /// Gets were lost in the slack; with seconds (`leader-slow-api`) they are not.
    fn failover_ms(&self) -> u64 {
        self.lease_duration_ms + 2 * self.retry_gap_max_ms() + 5 * self.round_trip_ms()
    }

    /// After a release reached the server: 2.2·RP plus the Get in flight when it committed,
    /// then a Get and an Update.
    fn graceful_failover_ms(&self) -> u64 {
        self.retry_gap_max_ms() + 3 * self.round_trip_ms()
    }
}

/// Every leader monitor, in the order of the table. They share one view of the records
/// (`shared_view::SharedView`), which the first of them to observe a record folds in: the
/// monitors that judge a record on the state it arrives in do so in `Monitor::before`, which
/// the checker calls on them all before any observes it.
pub fn leader_monitors(bounds: LeaderBounds) -> Vec<Box<dyn Monitor>> {
    let shared = SharedView::new(LeaderView::with_bounds(bounds));
    monitors_on(bounds, || shared.handle())
}

/// The leader monitors in their order, each on the view `view` hands it.
fn monitors_on(
    bounds: LeaderBounds,
    mut view: impl FnMut() -> SharedView,
) -> Vec<Box<dyn Monitor>> {
    let mut monitors: Vec<Box<dyn Monitor>> = vec![
        Box::new(safety::LeaseCas::new(bounds, view())),
        Box::new(safety::SingleLeaderActing::new(bounds, view())),
        Box::new(safety::LeaderGrounded::new(bounds, view())),
        Box::new(safety::LeaderOnly::new(bounds, view())),
        Box::new(safety::NoDuplicateModule::new(bounds, view())),
        Box::new(safety::ConfigFresh::new(bounds, view())),
    ];
    // Only a design that promises it (agentk-v1's goal, kept by `fixed`) is judged on it;
    // agentk v2 and later always run the election (`2f07ea9d`).
    if bounds.variant.promises_election_iff_demand() {
        monitors.push(Box::new(demand::ElectionIffDemand::new(bounds, view())));
    }
    monitors.push(Box::new(liveness::FailoverBound::new(bounds, view())));
    monitors.push(Box::new(demand::RejoinAfterOutage::new(bounds, view())));
    monitors.push(Box::new(liveness::RunnerProgress::new(bounds, view())));
    monitors
}

/// Feed one record to `monitors` as the checker does.
#[cfg(test)]
fn feed(
    monitors: &mut [Box<dyn Monitor>],
    t_ms: u64,
    record: &crate::trace::Record,
    out: &mut Vec<Violation>,
) {
    let reading_before = super::checker::reading_before(monitors);
    super::checker::feed(monitors, &reading_before, t_ms, record, out);
}

/// Build a violation naming replicas and modules, quoting their recent records.
fn violation(
    id: InvariantId,
    kind: Kind,
    t_ms: u64,
    view: &LeaderView,
    replicas: &[u32],
    modules: &[&str],
    message: String,
) -> Violation {
    let objects = replicas
        .iter()
        .map(|replica| format!("replica:{replica}"))
        .chain(modules.iter().map(|module| format!("module:{module}")))
        .collect();
    let hazard = hazard::attribute(id, view, replicas, &message);
    Violation {
        id,
        kind,
        at_ms: t_ms,
        objects,
        message: hazard::tagged(message, hazard),
        context: view.context(replicas),
        expected: false,
    }
}

/// Label a violation expected (outside the fault budget) or not; an expected one needs no
/// defect to explain it, so it names no hazard.
fn set_expected(found: &mut Violation, expected: bool) {
    found.expected = expected;
    if expected && hazard_of(found).is_some() {
        let tag = found
            .message
            .rfind(" [")
            .expect("a hazard tag starts with ' ['");
        found.message.truncate(tag);
    }
}
