//! One [`LeaderView`] for every leader monitor of a run: the view is rebuilt from each record
//! once, not once per monitor (ten times over, it was a tenth of a leader run's time).

use super::view::LeaderView;
use crate::trace::Record;
use std::cell::{Ref, RefCell};
use std::rc::Rc;

/// A monitor's handle on the view its run's leader monitors share. Each handle counts the
/// records it applied; the first handle to apply a record folds it in, the others only count
/// it. A monitor reads the state a record arrives in in `Monitor::before` (which the checker
/// calls on every such monitor before any observes the record) and the state it leaves after
/// applying it in `observe`, exactly as with a view of its own; `get` asserts on every read
/// that no other handle is ahead.
#[derive(Debug)]
pub(super) struct SharedView {
    view: Rc<RefCell<LeaderView>>,
    /// How many records this handle applied.
    seen: u64,
}

impl SharedView {
    /// A handle on a new view.
    pub(super) fn new(view: LeaderView) -> SharedView {
        SharedView {
            view: Rc::new(RefCell::new(view)),
            seen: 0,
        }
    }

    /// Another handle on the same view, for a monitor that has applied nothing yet.
    pub(super) fn handle(&self) -> SharedView {
        assert_eq!(self.seen, 0, "a handle is taken before the first record");
        SharedView {
            view: Rc::clone(&self.view),
            seen: 0,
        }
    }

    /// The view as this handle's monitor would hold it alone: after the records it applied.
    ///
    /// # Panics
    /// If another handle already applied a record this one has not (a monitor reading the
    /// state a record arrives in from `observe` instead of `before`).
    pub(super) fn get(&self) -> Ref<'_, LeaderView> {
        let view = self.view.borrow();
        assert_eq!(
            view.seen(),
            self.seen,
            "a leader monitor read the shared view out of step: the state a record arrives in is \
             read in `Monitor::before`"
        );
        view
    }

    /// Apply the next record: folded in if no handle did yet, counted in any case.
    pub(super) fn apply(&mut self, t_ms: u64, record: &Record) {
        let mut view = self.view.borrow_mut();
        if view.seen() == self.seen {
            view.apply(t_ms, record);
            debug_assert_eq!(view.seen(), self.seen + 1, "one record folded in at a time");
        } else {
            assert_eq!(
                view.seen(),
                self.seen + 1,
                "the leader monitors apply the same records in step"
            );
        }
        self.seen += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::view::LeaderView;
    use super::super::{LeaderBounds, feed, monitors_on};
    use super::SharedView;
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use crate::leader::Variant;
    use crate::trace::{Actor, Record};

    fn bounds(variant: Variant) -> LeaderBounds {
        LeaderBounds {
            variant,
            ..super::super::tests::bounds()
        }
    }

    fn alone() -> SharedView {
        SharedView::new(LeaderView::default())
    }

    /// A random leader record among three replicas, two modules and four fault kinds: every
    /// kind the view folds in, with terms, versions and resource versions small enough to
    /// collide, so that the monitors trip as well as pass.
    fn random_record(random: &mut Stream) -> Record {
        let replica = random.below(3) as u32;
        let module = ["gitops", "flux"][random.below(2) as usize].to_string();
        let term = 1 + random.below(3);
        match random.below(17) {
            0 => Record::ElectionStarted { replica },
            1 => Record::ElectionStopped { replica },
            2 => Record::LeaseHeld { replica, term },
            3 => Record::LeadingStarted { replica, term },
            4 => Record::LeadingStopped { replica, term },
            5 => Record::ModuleStarted {
                replica,
                module,
                term,
            },
            6 => Record::ModuleStopped { replica, module },
            7 => Record::ModuleConfig {
                replica,
                module,
                version: random.below(4),
            },
            8 => Record::ModuleAction { replica, module },
            9 => Record::ConfigReceived {
                replica,
                version: random.below(4),
                runnable_modules: if random.chance(0.7) {
                    vec![module]
                } else {
                    Vec::new()
                },
            },
            10 => Record::ReplicaStopped { replica },
            11 => Record::ReplicaStarted { replica },
            12 => Record::ReplicaPaused { replica },
            13 => Record::ReplicaResumed { replica },
            14 => {
                let (by, holder) = if random.chance(0.2) {
                    (Actor::External, String::new())
                } else {
                    (Actor::Replica(replica), format!("replica-{replica}"))
                };
                let verb = ["update", "create", "delete"][random.below(3) as usize];
                let rv = random.below(5);
                Record::LeaseWritten {
                    by,
                    verb: verb.to_string(),
                    holder,
                    transitions: random.below(3) as u32,
                    rv_current: random.chance(0.8).then_some(rv),
                    rv_sent: random.chance(0.8).then_some(rv),
                    rv_new: rv + random.below(2),
                }
            }
            15 => {
                let fault = ["api_outage", "partition", "clock_drift", "lease_delete"];
                Record::FaultStarted {
                    index: random.below(3) as u32,
                    fault: fault[random.below(4) as usize].to_string(),
                    target: format!("replica-{replica} rate=1.{}", random.below(5)),
                }
            }
            _ => {
                let fault = ["api_outage", "partition", "clock_drift", "lease_delete"];
                Record::FaultEnded {
                    index: random.below(3) as u32,
                    fault: fault[random.below(4) as usize].to_string(),
                }
            }
        }
    }

    #[test]
    fn monitors_sharing_one_view_report_what_each_would_with_a_view_of_its_own() {
        let mut violations = 0;
        for seed in 1..=80 {
            let mut random = Stream::new(seed, StreamId::Faults);
            let variant = [Variant::Fixed, Variant::AgentkV1][random.below(2) as usize];
            let shared = alone();
            let mut sharing = monitors_on(bounds(variant), || shared.handle());
            let mut reference = monitors_on(bounds(variant), alone);
            let mut t_ms = 0;
            for _ in 0..random.below(400) {
                t_ms += random.below(4_000);
                let record = random_record(&mut random);
                let (mut got, mut expected) = (Vec::new(), Vec::new());
                feed(&mut sharing, t_ms, &record, &mut got);
                feed(&mut reference, t_ms, &record, &mut expected);
                assert_eq!(got, expected, "seed {seed} at {t_ms}: {record:?}");
                violations += got.len();
            }
            for (one, other) in sharing.iter_mut().zip(&mut reference) {
                let (mut got, mut expected) = (Vec::new(), Vec::new());
                one.finish(t_ms + 60_000, &mut got);
                other.finish(t_ms + 60_000, &mut expected);
                assert_eq!(got, expected, "seed {seed}, {} at the end", one.id());
                violations += got.len();
            }
        }
        assert!(
            violations > 100,
            "the random records trip the monitors ({violations})"
        );
    }

    #[test]
    fn a_monitor_reading_the_state_before_a_record_another_folded_in_is_caught() {
        let first = alone();
        let mut applied = first.handle();
        let late = first.handle();
        assert_eq!(late.get().seen(), 0, "in step before the record");
        applied.apply(0, &Record::ReplicaStarted { replica: 0 });
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| late.get().seen()));
        let message = read
            .expect_err("a read out of step panics")
            .downcast::<String>()
            .map(|text| *text)
            .unwrap_or_default();
        assert!(message.contains("out of step"), "{message}");
    }
}
