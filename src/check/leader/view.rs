//! What the leader monitors know, rebuilt from trace records alone: each replica's runner,
//! elector and modules as the records show them, the Lease, and the faults in force.

use super::LeaderBounds;
use crate::trace::{Actor, Record};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// How many recent records per replica a violation quotes.
pub(super) const CONTEXT_LINES_MAX: usize = 8;

/// Fault names whose effect is that replicas cannot reach the API.
const API_FAULTS: [&str; 2] = ["api_outage", "partition"];

/// One replica process as the records show it.
#[derive(Clone, Debug, Default)]
pub(super) struct ReplicaView {
    pub(super) stopped: bool,
    pub(super) paused_since_ms: Option<u64>,
    /// The last finished pause: (end, length).
    pub(super) last_pause: Option<(u64, u64)>,
    /// Modules whose `Run` is active (started, not yet returned).
    pub(super) running: RunningModules,
    /// The term of the OnStartedLeading the runner acted on.
    pub(super) believed_term: Option<u64>,
    pub(super) leading_stopped_ms: Option<u64>,
    /// How long the process was paused since `leading_stopped_ms`: a paused process stops
    /// nothing, so the stop latency counts only the time it ran.
    pub(super) paused_since_leading_stopped_ms: u64,
    /// How long the process was paused since the later of `demand_changed_ms` and
    /// `election_changed_ms` (the current demand episode).
    pub(super) paused_in_episode_ms: u64,
    /// The term the elector holds the lease in (LeaseHeld), until its Run returns.
    pub(super) lease_term: Option<u64>,
    pub(super) last_held_ms: Option<u64>,
    /// When this process last released the Lease itself (an update to holder ""), until
    /// its next successful hold: a release is the replica's own choice, so an overlap that
    /// begins after it has no fault budget.
    pub(super) released_ms: Option<u64>,
    /// Where the runner is blocked (`RunnerBlocked`), until it is free again: agentk-v1's
    /// `holder.wait()` ends when the modules it waits for returned; agentk-v2's deadlock
    /// (H5) lasts until the process ends.
    pub(super) blocked_in: Option<String>,
    pub(super) election_running: bool,
    pub(super) election_changed_ms: u64,
    /// Runnable modules of the latest configuration; `None` before the first.
    pub(super) demand: Option<BTreeSet<String>>,
    pub(super) demand_changed_ms: u64,
    /// The newest configuration version each module received.
    pub(super) config_versions: BTreeMap<String, u64>,
}

/// The module `Run`s active on one replica, by name, counting each start: with H2 the same
/// module runs twice, and one of them returning leaves the other running.
#[derive(Clone, Default)]
pub(super) struct RunningModules(BTreeMap<String, u32>);

impl RunningModules {
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub(super) fn contains(&self, module: &str) -> bool {
        self.0.contains_key(module)
    }

    /// One more `Run` of `module`.
    pub(super) fn insert(&mut self, module: String) {
        *self.0.entry(module).or_insert(0) += 1;
    }

    /// One `Run` of `module` returned.
    pub(super) fn remove(&mut self, module: &str) {
        if let Some(count) = self.0.get_mut(module) {
            debug_assert!(*count > 0, "a module with no run left is not kept");
            *count -= 1;
            if *count == 0 {
                self.0.remove(module);
            }
        }
    }
}

impl<'a> IntoIterator for &'a RunningModules {
    type Item = &'a String;
    type IntoIter = std::collections::btree_map::Keys<'a, String, u32>;

    /// The names of the modules running, once each.
    fn into_iter(self) -> Self::IntoIter {
        self.0.keys()
    }
}

impl std::fmt::Debug for RunningModules {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_set().entries(self.0.keys()).finish()
    }
}

impl ReplicaView {
    /// Alive and not frozen.
    pub(super) fn active(&self) -> bool {
        !self.stopped && self.paused_since_ms.is_none()
    }

    /// When the current demand episode began: the later of the last demand change and the
    /// last election start or stop.
    pub(super) fn episode_started_ms(&self) -> u64 {
        self.demand_changed_ms.max(self.election_changed_ms)
    }

    /// The pause ends at `t_ms`: its part after LeadingStopped and its part inside the
    /// current demand episode are added to the time those deadlines do not count.
    fn resume(&mut self, t_ms: u64) {
        let Some(since_ms) = self.paused_since_ms.take() else {
            return;
        };
        debug_assert!(since_ms <= t_ms, "a pause ends after it began");
        self.last_pause = Some((t_ms, t_ms - since_ms));
        let paused_after = |from_ms: u64| t_ms - since_ms.max(from_ms);
        if let Some(stopped_ms) = self.leading_stopped_ms {
            self.paused_since_leading_stopped_ms += paused_after(stopped_ms);
        }
        self.paused_in_episode_ms += paused_after(self.episode_started_ms());
    }

    /// A process ended or began: nothing of the old one survives (its quoted records are
    /// kept apart, in the view's `Recent`).
    fn restart(&mut self, stopped: bool) {
        *self = ReplicaView {
            stopped,
            ..ReplicaView::default()
        };
    }

    pub(super) fn wants_election(&self) -> bool {
        self.demand
            .as_ref()
            .is_some_and(|demand| !demand.is_empty())
    }
}

/// The Lease as the API server's accepted writes show it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LeaseView {
    pub(super) holder: String,
    pub(super) transitions: u32,
    pub(super) resource_version: u64,
}

/// The last [`CONTEXT_LINES_MAX`] records touching each replica, for violations to quote
/// (`NaiveRecent` in the tests is the reference it is checked against on random records).
#[derive(Clone, Debug, Default)]
struct Recent {
    /// Per replica: (time, record), oldest first.
    by_replica: BTreeMap<u32, VecDeque<(u64, Record)>>,
}

impl Recent {
    /// Keep `record` if it touches a replica.
    fn keep(&mut self, t_ms: u64, record: &Record) {
        if let Some(replica) = record.replica() {
            let ring = self.by_replica.entry(replica).or_default();
            if ring.len() == CONTEXT_LINES_MAX {
                ring.pop_front();
            }
            debug_assert!(ring.back().is_none_or(|(last_ms, _)| *last_ms <= t_ms));
            ring.push_back((t_ms, record.clone()));
        }
    }

    /// The records kept for `replicas`, oldest first, as `<t_ms> <record:?>` lines.
    fn lines(&self, replicas: &[u32]) -> Vec<String> {
        let mut records: Vec<&(u64, Record)> = replicas
            .iter()
            .filter_map(|replica| self.by_replica.get(replica))
            .flatten()
            .collect();
        // A stable sort by time interleaves the replicas.
        records.sort_by_key(|(t_ms, _)| *t_ms);
        records
            .into_iter()
            .map(|(t_ms, record)| format!("{t_ms} {record:?}"))
            .collect()
    }
}

#[derive(Clone, Debug, Default)]
pub(super) struct LeaderView {
    /// The run's bounds and variant, for naming the hazard behind a violation
    /// (`hazard.rs`); `None` in views built without them.
    pub(super) bounds: Option<LeaderBounds>,
    pub(super) replicas: BTreeMap<u32, ReplicaView>,
    /// Faults started and not yet ended: index to name.
    pub(super) faults: BTreeMap<u32, String>,
    /// When the last API fault ended.
    pub(super) api_fault_ended_ms: Option<u64>,
    /// When a third party last edited or deleted the Lease.
    pub(super) external_edit_ms: Option<u64>,
    /// Clock drifts in force: index to rate, if the target names one.
    pub(super) drifts: BTreeMap<u32, Option<f64>>,
    pub(super) lease: Option<LeaseView>,
    /// The identity each replica writes as holder.
    pub(super) identities: BTreeMap<u32, String>,
    /// Each replica's clock rate now, from `replica-N rate=R` drift targets (1 if absent).
    clock_rates: BTreeMap<u32, f64>,
    /// The replica each drift in force applies to, by fault index.
    drifted_replicas: BTreeMap<u32, u32>,
    /// The slowest rate each replica's clock ran at since its last lease write.
    slowest_rates: BTreeMap<u32, f64>,
    /// The records violations quote, and how many records this view applied.
    recent: Recent,
    seen: u64,
}

impl LeaderView {
    /// An empty view that knows the run's bounds and variant.
    pub(super) fn with_bounds(bounds: LeaderBounds) -> LeaderView {
        LeaderView {
            bounds: Some(bounds),
            ..LeaderView::default()
        }
    }

    /// How many records this view applied.
    pub(super) fn seen(&self) -> u64 {
        self.seen
    }

    pub(super) fn replica(&mut self, replica: u32) -> &mut ReplicaView {
        self.replicas.entry(replica).or_default()
    }

    pub(super) fn api_fault_active(&self) -> bool {
        self.faults
            .values()
            .any(|fault| API_FAULTS.contains(&fault.as_str()))
    }

    /// The replicas whose modules run (frozen ones included: they resume acting).
    pub(super) fn acting(&self) -> Vec<u32> {
        self.acting_replicas().collect()
    }

    /// Whether two replicas or more act (`acting` without collecting them).
    pub(super) fn several_acting(&self) -> bool {
        self.acting_replicas().nth(1).is_some()
    }

    fn acting_replicas(&self) -> impl Iterator<Item = u32> + '_ {
        let acting = self.replicas.iter();
        acting
            .filter(|(_, view)| !view.stopped && !view.running.is_empty())
            .map(|(r, _)| *r)
    }

    /// The last records touching these replicas, oldest first, as `<t_ms> <record:?>` lines.
    pub(super) fn context(&self, replicas: &[u32]) -> Vec<String> {
        self.recent.lines(replicas)
    }

    /// The first of `replicas` that released the Lease itself while it still runs modules,
    /// and when: an overlap that begins after a replica's own release is its own doing
    /// (a graceful stop, a cancelled term), which no fault budget excuses.
    pub(super) fn released_while_acting(&self, replicas: &[u32]) -> Option<(u32, u64)> {
        replicas.iter().find_map(|replica| {
            let view = self.replicas.get(replica)?;
            let released_ms = view.released_ms?;
            (!view.running.is_empty()).then_some((*replica, released_ms))
        })
    }

    /// Why a violation at `t_ms` involving `replicas` is outside the fault budget, if it is:
    /// a clock rate ratio at or above LD/(RP+RD), a pause longer than the safety margin, a
    /// third-party Lease edit, or bounds that leave no margin at all.
    pub(super) fn outside_budget(
        &self,
        t_ms: u64,
        replicas: &[u32],
        bounds: &LeaderBounds,
    ) -> Option<String> {
        let margin_ms = bounds.safety_margin_ms();
        if margin_ms <= 0 {
            return Some(
                "the bounds leave no safety margin (LD - RP - RD - latency - stop)".into(),
            );
        }
        let ratio_max = bounds.lease_duration_ms as f64
            / (bounds.retry_period_ms + bounds.renew_deadline_ms) as f64;
        if let Some(reason) = self.drift_outside(bounds.replicas, ratio_max) {
            return Some(reason);
        }
        let window_ms =
            bounds.lease_duration_ms + bounds.retry_period_ms + bounds.renew_deadline_ms;
        if self
            .external_edit_ms
            .is_some_and(|edit_ms| t_ms <= edit_ms + window_ms)
        {
            return Some("a third party edited the Lease".into());
        }
        for replica in replicas {
            let Some(view) = self.replicas.get(replica) else {
                continue;
            };
            let paused_ms = view.paused_since_ms.map(|since_ms| t_ms - since_ms);
            let recent_pause_ms = view
                .last_pause
                .filter(|(end_ms, _)| t_ms <= end_ms + window_ms)
                .map(|(_, length_ms)| length_ms);
            if let Some(length_ms) = paused_ms.into_iter().chain(recent_pause_ms).max()
                && length_ms as i64 > margin_ms
            {
                return Some(format!("replica {replica} was paused for {length_ms} ms"));
            }
        }
        None
    }

    /// How long `local_ms` of the replica's own clock may last in real time: its timers
    /// (renew deadline, module stop) run slow when its clock does.
    pub(super) fn on_own_clock_ms(&self, replica: u32, local_ms: u64) -> u64 {
        let rate = self.slowest_rates.get(&replica).copied().unwrap_or(1.0);
        (local_ms as f64 / rate.min(1.0)).ceil() as u64
    }

    /// The budget holds on pairs of clocks: client-go compares one replica's RP+RD (the
    /// leader's) with another's LD (a follower's), so the bound is on the ratio of the
    /// fastest to the slowest clock among the replicas, each at its drift's rate or 1.
    fn drift_outside(&self, replicas: u32, ratio_max: f64) -> Option<String> {
        let mut rates = (0..replicas)
            .map(|replica| self.clock_rates.get(&replica).copied().unwrap_or(1.0))
            .collect::<Vec<_>>();
        for (index, rate) in &self.drifts {
            match rate {
                // A drift whose target names no replica still runs some clock at its rate.
                Some(rate) if !self.drifted_replicas.contains_key(index) => rates.push(*rate),
                Some(_) => {}
                None => return Some("a clock drift of unknown rate is in force".into()),
            }
        }
        let slowest = rates.iter().copied().fold(f64::INFINITY, f64::min);
        let fastest = rates.iter().copied().fold(0.0, f64::max);
        (rates.len() >= 2 && fastest / slowest >= ratio_max).then(|| {
            format!(
                "clock rates {fastest} and {slowest} differ by {:.3}x, at or above \
                 LD/(RP+RD) = {ratio_max:.3}",
                fastest / slowest
            )
        })
    }

    /// Follow each replica's clock rate through drift faults and lease writes.
    fn track_clock_rates(&mut self, record: &Record) {
        match record {
            Record::LeaseHeld { replica, .. } => {
                let rate = self.clock_rates.get(replica).copied().unwrap_or(1.0);
                self.slowest_rates.insert(*replica, rate);
            }
            Record::FaultStarted {
                index,
                fault,
                target,
            } if fault == "clock_drift" => {
                let replica = target
                    .split(' ')
                    .next()
                    .and_then(|part| part.strip_prefix("replica-"))
                    .and_then(|n| n.parse::<u32>().ok());
                if let (Some(replica), Some(rate)) = (replica, parse_rate(target)) {
                    self.drifted_replicas.insert(*index, replica);
                    self.clock_rates.insert(replica, rate);
                    let slowest = self.slowest_rates.entry(replica).or_insert(1.0);
                    *slowest = slowest.min(rate);
                }
            }
            // A drift ends when its clock runs true again or a newer drift replaces it.
            Record::FaultEnded { index, .. } => {
                if let Some(replica) = self.drifted_replicas.remove(index) {
                    self.clock_rates.remove(&replica);
                }
            }
            _ => {}
        }
    }

    /// Fold one record in.
    pub(super) fn apply(&mut self, t_ms: u64, record: &Record) {
        debug_assert!(
            (self.external_edit_ms.into_iter())
                .chain(self.api_fault_ended_ms)
                .all(|ms| ms <= t_ms),
            "records arrive in time order"
        );
        self.track_clock_rates(record);
        if let Some(replica) = record.replica() {
            self.replica(replica);
        }
        self.recent.keep(t_ms, record);
        self.seen += 1;
        match record {
            Record::LeaseWritten {
                by,
                verb,
                holder,
                transitions,
                rv_new,
                ..
            } => {
                self.apply_lease_write(t_ms, *by, verb, holder, *transitions, *rv_new);
            }
            Record::FaultStarted {
                index,
                fault,
                target,
            } => {
                if fault == "clock_drift" {
                    self.drifts.insert(*index, parse_rate(target));
                }
                if fault == "lease_delete" {
                    self.external_edit_ms = Some(t_ms);
                }
                self.faults.insert(*index, fault.clone());
            }
            Record::FaultEnded { index, fault } => {
                self.faults.remove(index);
                if API_FAULTS.contains(&fault.as_str()) {
                    self.api_fault_ended_ms = Some(t_ms);
                }
                self.drifts.remove(index);
            }
            _ => self.apply_replica_record(t_ms, record),
        }
    }

    fn apply_lease_write(
        &mut self,
        t_ms: u64,
        by: Actor,
        verb: &str,
        holder: &str,
        transitions: u32,
        rv_new: u64,
    ) {
        if by == Actor::External {
            self.external_edit_ms = Some(t_ms);
        }
        // Renewals rewrite the same holder: its strings are reused, not allocated again.
        if let Actor::Replica(replica) = by
            && !holder.is_empty()
            && self.identities.get(&replica).map(String::as_str) != Some(holder)
        {
            self.identities.insert(replica, holder.to_string());
        }
        if verb.contains("delete") {
            self.lease = None;
            return;
        }
        if let Actor::Replica(replica) = by
            && holder.is_empty()
        {
            self.replica(replica).released_ms = Some(t_ms);
        }
        match &mut self.lease {
            Some(lease) if lease.holder == holder => {
                lease.transitions = transitions;
                lease.resource_version = rv_new;
            }
            lease => {
                *lease = Some(LeaseView {
                    holder: holder.to_string(),
                    transitions,
                    resource_version: rv_new,
                });
            }
        }
    }

    fn apply_replica_record(&mut self, t_ms: u64, record: &Record) {
        let Some(replica) = record.replica() else {
            return;
        };
        // agentk-v1's runner is free again once the modules it waits for returned.
        let holder_wait = self
            .bounds
            .is_some_and(|bounds| bounds.variant == crate::leader::Variant::AgentkV1);
        let view = self.replica(replica);
        match record {
            Record::ElectionStarted { .. } => {
                view.election_running = true;
                view.election_changed_ms = t_ms;
                view.paused_in_episode_ms = 0;
            }
            Record::ElectionStopped { .. } => {
                view.election_running = false;
                view.election_changed_ms = t_ms;
                view.paused_in_episode_ms = 0;
                view.lease_term = None;
            }
            Record::LeaseHeld { term, .. } => {
                view.lease_term = Some(*term);
                view.last_held_ms = Some(t_ms);
                view.released_ms = None;
            }
            Record::LeadingStarted { term, .. } => view.believed_term = Some(*term),
            Record::LeadingStopped { .. } => {
                view.believed_term = None;
                view.leading_stopped_ms = Some(t_ms);
                view.paused_since_leading_stopped_ms = 0;
            }
            Record::ModuleStarted { module, .. } => {
                view.running.insert(module.clone());
            }
            Record::ModuleStopped { module, .. } => {
                view.running.remove(module);
                if holder_wait && view.running.is_empty() {
                    view.blocked_in = None;
                }
            }
            Record::RunnerBlocked { waits_in, .. } => {
                view.blocked_in = Some(waits_in.clone());
            }
            Record::ModuleConfig {
                module, version, ..
            } => {
                let newest = view
                    .config_versions
                    .entry(module.clone())
                    .or_insert(*version);
                *newest = (*newest).max(*version);
            }
            Record::ConfigReceived {
                runnable_modules, ..
            } => {
                let demand = runnable_modules.iter().cloned().collect::<BTreeSet<_>>();
                if view.demand.as_ref() != Some(&demand) {
                    view.demand = Some(demand);
                    view.demand_changed_ms = t_ms;
                    view.paused_in_episode_ms = 0;
                }
            }
            Record::ReplicaStopped { .. } => view.restart(true),
            Record::ReplicaStarted { .. } => view.restart(false),
            Record::ReplicaPaused { .. } => view.paused_since_ms = Some(t_ms),
            Record::ReplicaResumed { .. } => view.resume(t_ms),
            _ => {}
        }
    }
}

/// A `rate=<x>` the world may put in a clock drift's target.
fn parse_rate(target: &str) -> Option<f64> {
    let rate = target
        .split([' ', ','])
        .find_map(|part| part.strip_prefix("rate="))?;
    rate.parse::<f64>().ok().filter(|rate| *rate > 0.0)
}
