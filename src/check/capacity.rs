//! The capacity fault budget: the elastic-agent liveness invariants assume the cluster can
//! hold the work. When faults (`node_loss`) leave fewer node slots than there are jobs in
//! flight for longer than `replace_after` (the time a managed node group takes to replace a
//! node), the liveness violations that follow (`eventually` ones, and `job-wait-bound`, a
//! deadline on progress) are outside the budget: reported, labelled expected, not failures.
//! Safety violations are never excused.

use crate::trace::Record;

/// The cluster's shape and how long a node group takes to replace a lost node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CapacityBounds {
    /// Nodes the scenario's cluster starts with.
    pub nodes: u32,
    /// Agent pods one node holds.
    pub pods_per_node: u32,
    /// The longest `replace_after` of the scenario's node losses.
    pub replace_after_ms: u64,
}

/// Follows node losses and joins and the jobs in flight, and remembers when the cluster
/// first stayed too small for longer than `replace_after`.
#[derive(Debug)]
pub(crate) struct CapacityBudget {
    bounds: CapacityBounds,
    live_nodes: u32,
    /// Scheduled or assigned job instances.
    jobs_in_flight: u64,
    /// Since when the live slots have been fewer than the jobs in flight, if they are.
    short_since_ms: Option<u64>,
    /// When the first shortage outlasted `replace_after`.
    breached_at_ms: Option<u64>,
    /// The shortage then: (live slots, jobs in flight), for the label.
    breach: (u64, u64),
}

impl CapacityBudget {
    /// A budget for a cluster of `bounds`, with every node live and no job in flight yet.
    pub(crate) fn new(bounds: CapacityBounds) -> CapacityBudget {
        CapacityBudget {
            bounds,
            live_nodes: bounds.nodes,
            jobs_in_flight: 0,
            short_since_ms: None,
            breached_at_ms: None,
            breach: (0, 0),
        }
    }

    fn slots(&self) -> u64 {
        u64::from(self.live_nodes) * u64::from(self.bounds.pods_per_node)
    }

    /// Follow one record at `t_ms` (before the monitors see it).
    pub(crate) fn observe(&mut self, t_ms: u64, record: &Record) {
        debug_assert!(
            self.short_since_ms.is_none_or(|since_ms| since_ms <= t_ms),
            "records arrive in time order"
        );
        self.check_breach(t_ms);
        match record {
            Record::NodeLost { .. } => self.live_nodes = self.live_nodes.saturating_sub(1),
            Record::NodeJoined { .. } => self.live_nodes += 1,
            Record::JobScheduled { .. } => self.jobs_in_flight += 1,
            Record::JobCompleted { .. }
            | Record::JobRescheduled { .. }
            | Record::JobCancelled { .. } => {
                self.jobs_in_flight = self.jobs_in_flight.saturating_sub(1);
            }
            _ => return,
        }
        let short = self.slots() < self.jobs_in_flight;
        // Only a node loss starts a shortage (a queue longer than the whole cluster is load,
        // and the liveness invariants hold the allocator to it); the backlog it piled up
        // lasts, after a replacement joins, until the slots hold the jobs in flight again.
        let node_lost = self.live_nodes < self.bounds.nodes;
        match (short, self.short_since_ms) {
            (true, None) if node_lost => self.short_since_ms = Some(t_ms),
            (false, Some(_)) => self.short_since_ms = None,
            _ => {}
        }
    }

    /// Note a shortage that has lasted longer than `replace_after` by `t_ms`.
    pub(crate) fn check_breach(&mut self, t_ms: u64) {
        debug_assert!(
            self.breached_at_ms.is_none_or(|at_ms| at_ms < t_ms),
            "a breach is noted after its limit passed"
        );
        if self.breached_at_ms.is_some() {
            return;
        }
        if let Some(since_ms) = self.short_since_ms {
            let limit_ms = since_ms.saturating_add(self.bounds.replace_after_ms);
            if t_ms > limit_ms {
                debug_assert!(since_ms <= limit_ms && self.slots() < self.jobs_in_flight);
                self.breached_at_ms = Some(limit_ms);
                self.breach = (self.slots(), self.jobs_in_flight);
            }
        }
    }

    /// Why a liveness violation at `at_ms` is outside the budget, if it is: the cluster had
    /// stayed too small for longer than `replace_after` at or before it.
    pub(crate) fn outside_budget(&self, at_ms: u64) -> Option<String> {
        let breached_ms = self.breached_at_ms.filter(|ms| *ms <= at_ms)?;
        debug_assert!(
            self.short_since_ms
                .is_none_or(|since_ms| since_ms <= breached_ms)
        );
        let (slots, jobs) = self.breach;
        Some(format!(
            "from t={}s node losses left {slots} pod slots for {jobs} jobs for longer than \
             replace_after ({}s)",
            breached_ms / 1000,
            self.bounds.replace_after_ms / 1000
        ))
    }
}
