//! The aggregator: owns the monitors, feeds them every record, dedups their violations and
//! gives each one its context lines.

use super::agents::{NoCrossConfigReuse, NoKillWhileBuilding, NoWorkToDisabled, OneJobPerAgent};
use super::assignments::SharedAssignments;
use super::bounds::Bounds;
use super::cancel::NoAssignWhileCancelling;
use super::capacity::CapacityBudget;
use super::context::Ring;
use super::frozen::ClusterSettings;
use super::jobs::{AllJobsComplete, JobWaitBound, NoLostJob};
use super::pods::{NoOrphanPods, OnePodPerJob, PendingLimit};
use super::requests::BoundedRequests;
use super::reuse::{IdleTimeout, RestartRecovers, ReuseHappens};
use super::{Kind, Monitor, Violation};
use crate::check::InvariantId;
use crate::trace::Record;
use std::collections::BTreeSet;

/// How many of [`InvariantId::ALL`] are elastic-agent ids: they come first, in
/// `docs/invariants.md` order, and the leader ids follow from `lease-cas` on.
const ELASTIC_AGENT_ID_COUNT: usize = 15;
const _: () = assert!(matches!(
    InvariantId::ALL[ELASTIC_AGENT_ID_COUNT],
    InvariantId::LeaseCas
));

/// `always` invariants that are deadlines on progress (bounded liveness): the capacity fault
/// budget excuses them as it does `eventually` ones.
const BOUNDED_LIVENESS: [InvariantId; 1] = [InvariantId::JobWaitBound];

/// Runs the invariant monitors over one run's records.
///
/// Call [`Checker::observe`] for every record in order, then [`Checker::finish`] once at the
/// end of the settle phase. Each (id, objects) pair is reported at most once.
pub struct Checker {
    monitors: Vec<Box<dyn Monitor>>,
    /// The monitors (by index) that judge a record before any observes it.
    reading_before: Vec<usize>,
    /// Labels the liveness violations that follow a long capacity shortage as expected.
    capacity: CapacityBudget,
    ring: Ring,
    violations: Vec<Violation>,
    reported: BTreeSet<(InvariantId, Vec<String>)>,
    /// Scratch buffer the monitors push into, reused across records.
    fresh: Vec<Violation>,
    last_ms: u64,
    finished: bool,
}

/// The indices of the monitors whose `Monitor::before` must be called.
pub(super) fn reading_before(monitors: &[Box<dyn Monitor>]) -> Vec<usize> {
    (0..monitors.len())
        .filter(|&index| monitors[index].reads_before())
        .collect()
}

/// Feed one record to `monitors`: `before` on those at `reading_before` (the state the record
/// arrives in), then `observe` on all, in order.
pub(super) fn feed(
    monitors: &mut [Box<dyn Monitor>],
    reading_before: &[usize],
    t_ms: u64,
    record: &Record,
    out: &mut Vec<Violation>,
) {
    for &index in reading_before {
        monitors[index].before(t_ms, record);
    }
    for monitor in monitors {
        monitor.observe(t_ms, record, out);
    }
}

impl Checker {
    /// The elastic-agent monitors that apply under `bounds` (reuse turns `idle-timeout` and
    /// `reuse-happens` on and `one-pod-per-job` off), plus `extra` monitors (leader election),
    /// minus every monitor whose id is in `disabled`.
    pub fn new(bounds: &Bounds, disabled: &[InvariantId], extra: Vec<Box<dyn Monitor>>) -> Checker {
        // The three monitors that ask who builds what follow the assignments once.
        let assignments = SharedAssignments::default();
        let settings = ClusterSettings {
            pending_pods_count: bounds.pending_pods_count,
            enable_agent_reuse: bounds.reuse_enabled,
        };
        let mut monitors: Vec<Box<dyn Monitor>> = vec![
            Box::new(JobWaitBound::new(bounds, settings)),
            Box::new(NoCrossConfigReuse::default()),
            Box::new(OneJobPerAgent::sharing(&assignments)),
            Box::new(NoWorkToDisabled::default()),
            Box::new(PendingLimit::new(settings)),
            Box::new(NoKillWhileBuilding::sharing(&assignments)),
            Box::new(NoOrphanPods::new(
                bounds.registration_deadline_ms(),
                bounds.server_ping_interval_ms,
            )),
            Box::new(AllJobsComplete::new(bounds.late_kill.clone())),
            Box::new(NoLostJob::default()),
            Box::new(RestartRecovers::default()),
            Box::new(NoAssignWhileCancelling::sharing(&assignments)),
            Box::new(BoundedRequests),
        ];
        if bounds.reuse_enabled {
            if bounds.idle_timeout_enforced {
                let idle = IdleTimeout::new(
                    bounds.idle_timeout_ms,
                    bounds.idle_deadline_ms(),
                    bounds.server_ping_interval_ms,
                    settings,
                );
                monitors.push(Box::new(idle));
            }
            monitors.push(Box::new(ReuseHappens::default()));
        } else {
            monitors.push(Box::new(OnePodPerJob::default()));
        }
        monitors.extend(extra);
        monitors.retain(|monitor| !disabled.contains(&monitor.id()));
        let reading_before = reading_before(&monitors);
        debug_assert!(
            reading_before.iter().all(|&index| index < monitors.len()),
            "the monitors reading before are among the monitors"
        );
        Checker {
            monitors,
            reading_before,
            capacity: CapacityBudget::new(bounds.capacity),
            ring: Ring::default(),
            violations: Vec::new(),
            reported: BTreeSet::new(),
            fresh: Vec::new(),
            last_ms: 0,
            finished: false,
        }
    }

    /// Every elastic-agent invariant id (leader-election ids live with their monitors).
    pub fn ids() -> &'static [InvariantId] {
        InvariantId::ALL.split_at(ELASTIC_AGENT_ID_COUNT).0
    }

    /// The ids of the monitors this checker runs, in the order they run.
    pub(crate) fn active_ids(&self) -> Vec<InvariantId> {
        self.monitors.iter().map(|monitor| monitor.id()).collect()
    }

    /// The ids of the active `sometimes` monitors (coverage signals).
    pub(crate) fn sometimes_ids(&self) -> Vec<InvariantId> {
        self.active_ids()
            .into_iter()
            .filter(|id| id.is_sometimes())
            .collect()
    }

    /// Feed one record at `t_ms`. Times never decrease.
    pub fn observe(&mut self, t_ms: u64, record: &Record) {
        self.arrive(t_ms, record);
        self.ring.push(t_ms, record);
        feed(
            &mut self.monitors,
            &self.reading_before,
            t_ms,
            record,
            &mut self.fresh,
        );
        self.accept_fresh();
    }

    /// [`Checker::observe`] for a record that is not a `Sample`, given to keep: the context
    /// ring keeps it instead of a copy. It is lent back for the observers after this one.
    pub(crate) fn observe_owned(&mut self, t_ms: u64, record: Record) -> &Record {
        debug_assert!(
            !matches!(record, Record::Sample),
            "a sample is observed by reference"
        );
        self.arrive(t_ms, &record);
        let record = self.ring.keep(t_ms, record);
        feed(
            &mut self.monitors,
            &self.reading_before,
            t_ms,
            record,
            &mut self.fresh,
        );
        self.accept_fresh();
        self.ring
            .last()
            .expect("the ring keeps the record just observed")
    }

    /// The next record is `record` at `t_ms`: the capacity budget follows it.
    fn arrive(&mut self, t_ms: u64, record: &Record) {
        assert!(!self.finished, "observe after finish");
        assert!(
            t_ms >= self.last_ms,
            "records arrive in time order: {t_ms} < {}",
            self.last_ms
        );
        self.last_ms = t_ms;
        self.capacity.observe(t_ms, record);
    }

    /// End of the settle phase at `t_ms`: judge the eventually and sometimes invariants and
    /// return every violation, ordered by time then id. Calling it again returns the same.
    pub fn finish(&mut self, t_ms: u64) -> Vec<Violation> {
        if !self.finished {
            self.finished = true;
            self.capacity.check_breach(t_ms);
            for monitor in &mut self.monitors {
                monitor.finish(t_ms, &mut self.fresh);
            }
            self.accept_fresh();
            (self.violations).sort_by_key(|violation| (violation.at_ms, violation.id));
            debug_assert!(
                (self.violations.iter()).all(|violation| violation.at_ms <= t_ms),
                "the run's violations are judged by its end"
            );
        }
        self.violations.clone()
    }

    /// The violations so far, in the order they were found (sorted once finished).
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    fn accept_fresh(&mut self) {
        if self.fresh.is_empty() {
            return;
        }
        for mut violation in std::mem::take(&mut self.fresh) {
            debug_assert!(
                violation.at_ms <= self.last_ms || self.finished,
                "a violation is not reported ahead of the records: {violation:?}"
            );
            let key = (violation.id, violation.objects.clone());
            if !self.reported.insert(key) {
                continue;
            }
            if violation.context.is_empty() {
                violation.context = self.ring.context(&violation.objects, violation.at_ms);
            }
            if (violation.kind == Kind::Eventually || BOUNDED_LIVENESS.contains(&violation.id))
                && !violation.expected
                && let Some(reason) = self.capacity.outside_budget(violation.at_ms)
            {
                violation.expected = true;
                violation.message = format!(
                    "{} (outside the capacity fault budget: {reason})",
                    violation.message
                );
            }
            self.violations.push(violation);
        }
        debug_assert_eq!(
            self.violations.len(),
            self.reported.len(),
            "each (id, objects) is reported once"
        );
    }
}
