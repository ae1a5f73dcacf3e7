//! Which agent builds which job, followed once for the monitors that ask.
//!
//! `one-job-per-agent`, `no-kill-while-building` and `no-assign-while-cancelling` each ask,
//! at a record, who built what *before* that record, then take the record in. Each kept its
//! own two string-keyed maps, so every assignment was filed three times. [`SharedAssignments`]
//! files it once: the monitors of one run share a store, and a record's change is applied when
//! the first of them reaches the next record, so each monitor reads exactly what a copy of its
//! own would hold. The reference is a private [`Assignments`] per monitor; the test below feeds
//! both the same random records and compares every answer.

use crate::ids::NameMap;
use crate::trace::Record;
use std::cell::{Ref, RefCell};
use std::collections::BTreeMap;
use std::rc::Rc;

/// Which agent builds which job: an agent builds from `JobAssigned` until the job's
/// `JobCompleted`, `JobRescheduled` or `JobCancelled`.
#[derive(Debug, Default)]
pub(crate) struct Assignments {
    job_of_agent: NameMap<u64>,
    agent_of_job: BTreeMap<u64, String>,
}

impl Assignments {
    /// The job `agent` is building, if any.
    pub(crate) fn job_of(&self, agent: &str) -> Option<u64> {
        self.job_of_agent.get(agent).copied()
    }

    /// The agent building `job`, if any.
    pub(crate) fn agent_of(&self, job: u64) -> Option<&str> {
        self.agent_of_job.get(&job).map(String::as_str)
    }

    /// Follow one record (what each monitor did with its own copy: the reference).
    #[cfg(test)]
    pub(crate) fn observe(&mut self, record: &Record) {
        if let Some(change) = Change::of(record) {
            self.apply(change);
        }
    }

    fn apply(&mut self, change: Change) {
        match change {
            Change::Assigned { job, agent } => {
                self.job_of_agent.insert(&agent, job);
                self.agent_of_job.insert(job, agent);
            }
            Change::Ended { job } => {
                if let Some(agent) = self.agent_of_job.remove(&job)
                    && self.job_of_agent.get(&agent) == Some(&job)
                {
                    self.job_of_agent.remove(&agent);
                }
            }
        }
    }
}

/// What a record changes in the assignments.
#[derive(Debug)]
enum Change {
    Assigned { job: u64, agent: String },
    Ended { job: u64 },
}

impl Change {
    fn of(record: &Record) -> Option<Change> {
        match record {
            Record::JobAssigned { job, agent, .. } => Some(Change::Assigned {
                job: *job,
                agent: agent.clone(),
            }),
            Record::JobCompleted { job, .. }
            | Record::JobRescheduled { job, .. }
            | Record::JobCancelled { job } => Some(Change::Ended { job: *job }),
            _ => None,
        }
    }
}

/// The assignments one monitor reads, from a store the monitors of a run share. A monitor
/// reads through [`SharedAssignments::before`] and then hands the record to
/// [`SharedAssignments::after`], once per record, as the checker feeds every monitor every
/// record in step.
#[derive(Debug, Default)]
pub(crate) struct SharedAssignments {
    store: Rc<RefCell<Store>>,
    /// Records this monitor has handed over.
    seen: u64,
}

#[derive(Debug, Default)]
struct Store {
    assignments: Assignments,
    /// Records whose change is applied (or that change nothing).
    applied: u64,
    /// Records handed over by the first monitor to reach them.
    offered: u64,
    /// The change of record `applied`, handed over and not yet applied.
    pending: Option<Change>,
}

impl SharedAssignments {
    /// A reader of `other`'s store, at the same record.
    pub(crate) fn sharing(other: &SharedAssignments) -> SharedAssignments {
        SharedAssignments {
            store: Rc::clone(&other.store),
            seen: other.seen,
        }
    }

    /// The assignments before the record this monitor is at.
    pub(crate) fn before(&self) -> Ref<'_, Assignments> {
        self.catch_up(&mut self.store.borrow_mut());
        Ref::map(self.store.borrow(), |store| &store.assignments)
    }

    /// This monitor is done with `record`.
    pub(crate) fn after(&mut self, record: &Record) {
        let mut store = self.store.borrow_mut();
        self.catch_up(&mut store);
        if store.offered == self.seen {
            store.pending = Change::of(record);
            store.offered += 1;
        }
        self.seen += 1;
    }

    /// Apply the change of the record before this monitor's, if no sharer has yet.
    fn catch_up(&self, store: &mut Store) {
        debug_assert!(
            store.applied <= self.seen && self.seen <= store.offered,
            "monitors sharing assignments read the same records in step"
        );
        if store.applied < self.seen {
            if let Some(change) = store.pending.take() {
                store.assignments.apply(change);
            }
            store.applied = self.seen;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Assignments, SharedAssignments};
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use crate::trace::Record;

    fn record(random: &mut Stream) -> Record {
        let job = random.below(12);
        match random.below(6) {
            0 | 1 => Record::JobAssigned {
                job,
                agent: format!("pod-{}", random.below(5)),
                config: "h".to_owned(),
            },
            2 => Record::JobCompleted {
                job,
                agent: format!("pod-{}", random.below(5)),
            },
            3 => Record::JobCancelled { job },
            4 => Record::ServerPing,
            _ => Record::JobRescheduled {
                job,
                new_job: job + 100,
                reason: "hung".to_owned(),
            },
        }
    }

    /// Three monitors sharing one store, each reading before and handing over after every
    /// record, answer as three private copies do, whichever monitor reads first.
    #[test]
    fn sharing_monitors_read_what_private_copies_hold() {
        let mut random = Stream::new(5, StreamId::Workload);
        let first = SharedAssignments::default();
        let mut shared = [
            SharedAssignments::sharing(&first),
            SharedAssignments::sharing(&first),
            first,
        ];
        let mut private: [Assignments; 3] = Default::default();
        let mut answered = 0;
        for _ in 0..20_000 {
            let record = record(&mut random);
            for (reader, copy) in shared.iter_mut().zip(&mut private) {
                for _ in 0..random.below(3) {
                    let (agent, job) = (format!("pod-{}", random.below(5)), random.below(12));
                    let read = reader.before();
                    assert_eq!(read.job_of(&agent), copy.job_of(&agent));
                    assert_eq!(read.agent_of(job), copy.agent_of(job));
                    answered += usize::from(copy.job_of(&agent).is_some());
                }
                reader.after(&record);
                copy.observe(&record);
            }
        }
        assert!(
            answered > 1_000,
            "the queries found assignments ({answered})"
        );
    }
}
