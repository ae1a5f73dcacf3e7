//! Leader lanes (`leader.csv`): for each replica, the intervals it led, ran modules, was down
//! (crashed) or paused, as its runner's records tell. The leader plot draws one lane per
//! replica from this table.
//!
//! Rules: a replica leads from `LeadingStarted` to `LeadingStopped` or `ReplicaStopped`; it
//! acts while at least one module runs (`ModuleStarted` minus `ModuleStopped`, all stopped by
//! `ReplicaStopped`); it is down from `ReplicaStopped` to `ReplicaStarted` and paused from
//! `ReplicaPaused` to `ReplicaResumed`. A span still open at the end of the run has no end.

use crate::trace::Record;
use std::collections::BTreeMap;

/// What a replica's lane shows during a span.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LaneState {
    /// The replica's runner believed it led (from `LeadingStarted`).
    Leading,
    /// At least one of the replica's modules ran.
    Acting,
    /// The replica was stopped (crashed), until it started again.
    Down,
    /// The replica was paused, until it resumed.
    Paused,
}

impl LaneState {
    /// The word used in `leader.csv`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LaneState::Leading => "leading",
            LaneState::Acting => "acting",
            LaneState::Down => "down",
            LaneState::Paused => "paused",
        }
    }

    /// The state named `name` in `leader.csv`, if any.
    pub(crate) fn from_name(name: &str) -> Option<LaneState> {
        [
            LaneState::Leading,
            LaneState::Acting,
            LaneState::Down,
            LaneState::Paused,
        ]
        .into_iter()
        .find(|state| state.name() == name)
    }
}

/// One row of `leader.csv`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LaneSpan {
    /// The leader replica the span belongs to.
    pub replica: u32,
    /// What the replica was doing during the span.
    pub state: LaneState,
    /// Simulated time the span began, in milliseconds.
    pub from_ms: u64,
    /// `None` while the span is still open at the end of the run.
    pub until_ms: Option<u64>,
}

/// Folds leader-election records into lane spans, in start order.
#[derive(Clone, Debug, Default)]
pub(super) struct LaneTracker {
    spans: Vec<LaneSpan>,
    /// Position in `spans` of each open (replica, state) span.
    open: BTreeMap<(u32, LaneState), usize>,
    modules_running: BTreeMap<u32, u32>,
}

impl LaneTracker {
    pub(super) fn observe(&mut self, t_ms: u64, record: &Record) {
        match record {
            Record::LeadingStarted { replica, .. } => {
                self.start(t_ms, *replica, LaneState::Leading)
            }
            Record::LeadingStopped { replica, .. } => self.stop(t_ms, *replica, LaneState::Leading),
            Record::ModuleStarted { replica, .. } => {
                let running = self.modules_running.entry(*replica).or_insert(0);
                *running += 1;
                if *running == 1 {
                    self.start(t_ms, *replica, LaneState::Acting);
                }
            }
            Record::ModuleStopped { replica, .. } => {
                if let Some(running) = self.modules_running.get_mut(replica)
                    && *running > 0
                {
                    *running -= 1;
                    if *running == 0 {
                        self.stop(t_ms, *replica, LaneState::Acting);
                    }
                }
            }
            Record::ReplicaStopped { replica } => {
                self.stop(t_ms, *replica, LaneState::Leading);
                self.modules_running.insert(*replica, 0);
                self.stop(t_ms, *replica, LaneState::Acting);
                self.start(t_ms, *replica, LaneState::Down);
            }
            Record::ReplicaStarted { replica } => self.stop(t_ms, *replica, LaneState::Down),
            Record::ReplicaPaused { replica } => self.start(t_ms, *replica, LaneState::Paused),
            Record::ReplicaResumed { replica } => self.stop(t_ms, *replica, LaneState::Paused),
            _ => {}
        }
    }

    /// Open a span unless one of the same state is already open for the replica.
    fn start(&mut self, t_ms: u64, replica: u32, state: LaneState) {
        if self.open.contains_key(&(replica, state)) {
            return;
        }
        self.spans.push(LaneSpan {
            replica,
            state,
            from_ms: t_ms,
            until_ms: None,
        });
        self.open.insert((replica, state), self.spans.len() - 1);
    }

    fn stop(&mut self, t_ms: u64, replica: u32, state: LaneState) {
        if let Some(position) = self.open.remove(&(replica, state)) {
            self.spans[position].until_ms = Some(t_ms);
        }
    }

    /// Every span in start order.
    pub(super) fn spans(&self) -> &[LaneSpan] {
        &self.spans
    }
}

#[cfg(test)]
mod tests {
    use super::LaneTracker;
    use crate::trace::Record;

    #[test]
    fn a_crash_ends_leading_and_acting_and_opens_a_down_span_until_restart() {
        let mut lanes = LaneTracker::default();
        lanes.observe(
            1_000,
            &Record::LeadingStarted {
                replica: 1,
                term: 1,
            },
        );
        let module = "gitops".to_owned();
        lanes.observe(
            1_500,
            &Record::ModuleStarted {
                replica: 1,
                module: module.clone(),
                term: 1,
            },
        );
        lanes.observe(4_000, &Record::ReplicaStopped { replica: 1 });
        lanes.observe(9_000, &Record::ReplicaStarted { replica: 1 });
        lanes.observe(9_500, &Record::ReplicaPaused { replica: 0 });
        let spans: Vec<(u32, &str, u64, Option<u64>)> = lanes
            .spans()
            .iter()
            .map(|span| (span.replica, span.state.name(), span.from_ms, span.until_ms))
            .collect();
        assert_eq!(
            spans,
            vec![
                (1, "leading", 1_000, Some(4_000)),
                (1, "acting", 1_500, Some(4_000)),
                (1, "down", 4_000, Some(9_000)),
                (0, "paused", 9_500, None),
            ]
        );
    }
}
