//! Invariant monitors, fed by trace records (`docs/invariants.md` describes them).
//!
//! A monitor sees nothing but [`Record`]s and the scenario's bounds; it never reads model
//! state. `always` monitors report at the record that broke them, `eventually` monitors at
//! their deadline or at the end of the settle phase, `sometimes` monitors at the end of the
//! run (as coverage, a failure only when the scenario requires them).

mod invariant_id;
mod leader;

pub use invariant_id::InvariantId;
pub use leader::{
    Hazard, LeaderBounds, defect_count_text, hazard_lines, hazard_of, leader_monitors,
};

use crate::trace::Record;
use serde::{Deserialize, Serialize};

/// How an invariant is judged (`always`, `eventually`, `sometimes` in reports and shards).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Must hold at every record; reported at the record that broke it.
    Always,
    /// Must come true by a deadline; reported at the deadline or at the end of the settle phase.
    Eventually,
    /// Must happen at least once in the run; checked at the end, as coverage.
    Sometimes,
}

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Violation {
    /// Stable id from `docs/invariants.md`, e.g. `job-wait-bound`.
    pub id: InvariantId,
    /// How the broken invariant is judged.
    pub kind: Kind,
    /// Simulated time at which the invariant broke, in milliseconds.
    pub at_ms: u64,
    /// Objects involved: `job:17`, `pod:k8s-ea-…`, `agent:…`, `replica:2`, `module:gitops`.
    pub objects: Vec<String>,
    /// One sentence saying what went wrong.
    pub message: String,
    /// The last trace events touching those objects, oldest first, one line each.
    pub context: Vec<String>,
    /// True when the violation happened outside the fault budget (reported, labelled
    /// expected, not a failure unless the scenario asks).
    pub expected: bool,
}

/// One invariant monitor.
pub trait Monitor {
    /// The invariant id.
    fn id(&self) -> InvariantId;
    /// Judge the record on the state it arrives in, before any monitor observes it: monitors
    /// that share what they rebuild from records (the leader monitors' one view) cannot read
    /// that state in `observe`, since the first of them to observe a record folds it in. The
    /// [`Checker`] calls it, then `observe`, on the monitors whose `reads_before` is true.
    fn before(&mut self, _t_ms: u64, _record: &Record) {}
    /// True if `before` must be called.
    fn reads_before(&self) -> bool {
        false
    }
    /// Observe one record at `t_ms`; push violations to `out`.
    fn observe(&mut self, t_ms: u64, record: &Record, out: &mut Vec<Violation>);
    /// The run ended at `t_ms` (end of the settle phase): judge eventually/sometimes. An
    /// `always` monitor has judged every record already: the default does nothing.
    fn finish(&mut self, _t_ms: u64, _out: &mut Vec<Violation>) {}
}

impl Violation {
    /// A violation with no context yet (the [`Checker`] fills it) that is not expected.
    pub fn new(
        id: InvariantId,
        kind: Kind,
        at_ms: u64,
        objects: Vec<String>,
        message: String,
    ) -> Violation {
        debug_assert!(
            !message.is_empty(),
            "a violation says what went wrong ({id})"
        );
        Violation {
            id,
            kind,
            at_ms,
            objects,
            message,
            context: Vec::new(),
            expected: false,
        }
    }
}

mod agents;
mod assignments;
mod bounds;
mod cancel;
mod capacity;
mod checker;
mod completion_notice;
mod context;
mod deadlines;
mod frozen;
mod jobs;
mod late_kill;
mod pods;
mod requests;
mod reuse;
mod stranded;
#[cfg(test)]
mod tests;
mod wait_budget;
mod wait_outage;

pub use bounds::Bounds;
pub(crate) use capacity::CapacityBounds;
pub use checker::Checker;
#[cfg(test)]
pub(crate) use context::{CONTEXT_LINES_MAX, RING_RECORDS_MAX, format_line};
pub(crate) use late_kill::LateKillBounds;
pub(crate) use wait_budget::WaitBounds;
