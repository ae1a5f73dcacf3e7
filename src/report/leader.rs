//! Leadership as the replicas' runners saw it: who leads, how long nobody led, how long two
//! replicas acted at once, and how long each failover took.
//!
//! Rules (the integrator and the reader of `summary.json` rely on them):
//! - The clocks start at the first leader-election record of the run, so a run without a
//!   `[leader]` section reports zero for every leader metric.
//! - A replica leads from its `LeadingStarted` until its `LeadingStopped` or `ReplicaStopped`
//!   (a crashed process leads nothing).
//! - A replica acts while at least one of its modules runs (`ModuleStarted` minus
//!   `ModuleStopped`, per replica; `ReplicaStopped` stops them all).
//! - `leader_changes` counts every `LeadingStarted` (every term a runner started, including the
//!   first and re-elections of the same replica); `failovers` counts those whose replica
//!   differs from the previous `LeadingStarted`'s replica.
//! - A failover's duration runs from when the previous leader stopped leading (its
//!   `LeadingStopped` or `ReplicaStopped`) to the new `LeadingStarted`. If the previous leader
//!   had not stopped by then (paused, partitioned), it runs from that leader's last `LeaseHeld`
//!   (its last successful Lease write), or else from its `LeadingStarted`. Overlaps count as 0.

use crate::trace::Record;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, Default)]
pub(super) struct LeaderTracker {
    /// Start of the clocks; `None` until the first leader-election record.
    clock_since_ms: Option<u64>,
    replicas_seen: BTreeSet<u32>,
    leading: BTreeSet<u32>,
    modules_running: BTreeMap<u32, u32>,
    replicas_acting: usize,
    no_leader_closed_ms: u64,
    two_acting_closed_ms: u64,
    previous_leader: Option<u32>,
    leading_started_ms: BTreeMap<u32, u64>,
    leading_stopped_ms: BTreeMap<u32, u64>,
    lease_held_ms: BTreeMap<u32, u64>,
    /// The replica whose identity the Lease names, after the last Lease write.
    lease_holder: Option<u32>,
    pub(super) leader_changes: u64,
    pub(super) failover_durations_ms: Vec<u64>,
}

impl LeaderTracker {
    pub(super) fn observe(&mut self, t_ms: u64, record: &Record) {
        if let Record::LeaseWritten { verb, holder, .. } = record {
            self.lease_holder = if verb.contains("delete") {
                None
            } else {
                replica_of_identity(holder)
            };
        }
        let is_lease_write = matches!(record, Record::LeaseWritten { .. });
        // A configuration reaching a replica says nothing about who leads: it neither opens
        // the clocks nor counts the replica as seen.
        let replica = match record {
            Record::ConfigReceived { .. } => None,
            other => other.replica(),
        };
        let Some(replica) = replica else {
            if is_lease_write {
                // A third party wrote the Lease: leader records exist from now on.
                self.advance_clocks(t_ms);
            }
            return;
        };
        self.advance_clocks(t_ms);
        self.replicas_seen.insert(replica);
        match record {
            Record::LeaseHeld { .. } => {
                self.lease_held_ms.insert(replica, t_ms);
            }
            Record::LeadingStarted { .. } => self.leading_started(t_ms, replica),
            Record::LeadingStopped { .. } => self.leading_stopped(t_ms, replica),
            Record::ModuleStarted { .. } => {
                let running = self.modules_running.entry(replica).or_insert(0);
                *running += 1;
                if *running == 1 {
                    self.replicas_acting += 1;
                }
            }
            Record::ModuleStopped { .. } => {
                if let Some(running) = self.modules_running.get_mut(&replica)
                    && *running > 0
                {
                    *running -= 1;
                    if *running == 0 {
                        self.replicas_acting -= 1;
                    }
                }
            }
            Record::ReplicaStopped { .. } => {
                self.leading_stopped(t_ms, replica);
                if self
                    .modules_running
                    .insert(replica, 0)
                    .is_some_and(|running| running > 0)
                {
                    self.replicas_acting -= 1;
                }
            }
            _ => {}
        }
    }

    /// Book the time since the last leader record to the no-leader and two-acting clocks.
    fn advance_clocks(&mut self, t_ms: u64) {
        let since_ms = *self.clock_since_ms.get_or_insert(t_ms);
        let elapsed_ms = t_ms.saturating_sub(since_ms);
        if self.leading.is_empty() {
            self.no_leader_closed_ms += elapsed_ms;
        }
        if self.replicas_acting >= 2 {
            self.two_acting_closed_ms += elapsed_ms;
        }
        self.clock_since_ms = Some(since_ms.max(t_ms));
    }

    fn leading_started(&mut self, t_ms: u64, replica: u32) {
        self.leader_changes += 1;
        if let Some(previous) = self.previous_leader
            && previous != replica
        {
            let reference_ms = self
                .leading_stopped_ms
                .get(&previous)
                .or_else(|| self.lease_held_ms.get(&previous))
                .or_else(|| self.leading_started_ms.get(&previous))
                .copied()
                .unwrap_or(t_ms);
            self.failover_durations_ms
                .push(t_ms.saturating_sub(reference_ms));
        }
        self.previous_leader = Some(replica);
        self.leading.insert(replica);
        self.leading_started_ms.insert(replica, t_ms);
        self.leading_stopped_ms.remove(&replica);
    }

    fn leading_stopped(&mut self, t_ms: u64, replica: u32) {
        if self.leading.remove(&replica) {
            self.leading_stopped_ms.insert(replica, t_ms);
        }
    }

    /// The replicas a fault acts on, resolved as the world resolves its target when the fault
    /// starts: `replica-N…` names one; a partition side `leader` is the Lease holder (else the
    /// lowest replica whose runner believes it leads), `replicas` every replica seen,
    /// `replica-N` that one. `None` for a fault aimed at no replica.
    pub(super) fn fault_replicas(&self, fault: &str, target: &str) -> Option<Vec<u32>> {
        let mut replicas: Vec<u32> = if fault == "partition" {
            let sides: Vec<&str> = target.split('|').collect();
            if !sides
                .iter()
                .any(|side| *side == "leader" || side.starts_with("replica"))
            {
                return None;
            }
            sides
                .iter()
                .flat_map(|side| match *side {
                    "leader" => self
                        .lease_holder
                        .or_else(|| self.leading.first().copied())
                        .into_iter()
                        .collect(),
                    "replicas" => self.replicas_seen.iter().copied().collect(),
                    other => replica_named(other).into_iter().collect::<Vec<u32>>(),
                })
                .collect()
        } else {
            vec![replica_named(target)?]
        };
        replicas.sort_unstable();
        replicas.dedup();
        Some(replicas)
    }

    /// Replicas currently leading, ascending.
    pub(super) fn leaders(&self) -> Vec<u32> {
        self.leading.iter().copied().collect()
    }

    /// Every replica any leader-election record named, ascending.
    pub(super) fn replicas_seen(&self) -> &BTreeSet<u32> {
        &self.replicas_seen
    }

    /// True once any leader-election record was seen.
    pub(super) fn has_records(&self) -> bool {
        self.clock_since_ms.is_some()
    }

    pub(super) fn failovers(&self) -> u64 {
        self.failover_durations_ms.len() as u64
    }

    fn open_ms(&self, end_ms: u64) -> u64 {
        self.clock_since_ms
            .map_or(0, |since_ms| end_ms.saturating_sub(since_ms))
    }

    /// Time with no replica leading, up to `end_ms`.
    pub(super) fn no_leader_ms(&self, end_ms: u64) -> u64 {
        let open_ms = if self.leading.is_empty() {
            self.open_ms(end_ms)
        } else {
            0
        };
        self.no_leader_closed_ms + open_ms
    }

    /// Time with two or more replicas running modules, up to `end_ms`.
    pub(super) fn two_acting_ms(&self, end_ms: u64) -> u64 {
        let open_ms = if self.replicas_acting >= 2 {
            self.open_ms(end_ms)
        } else {
            0
        };
        self.two_acting_closed_ms + open_ms
    }
}

/// `agentk-N` (a replica's Lease identity) → N.
fn replica_of_identity(identity: &str) -> Option<u32> {
    identity.strip_prefix("agentk-")?.parse().ok()
}

/// The replica a fault target names at its start (`replica-2`, `replica-0 rate=0.5`,
/// `replica-1 +55000ms`).
fn replica_named(target: &str) -> Option<u32> {
    let rest = target.strip_prefix("replica-")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
