//! The leader-election side's own state: the replica slots (process, clock, pause, graceful
//! stop, connection), the runner variant and the configuration timeline. Private to this
//! file; the world routes to it through the methods below and does the crossing itself (the
//! queue, the nodes' epochs, the trace, the calls).

use crate::component::{Component, Random};
use crate::engine::{NodeId, SimTime, Stream, StreamId};
use crate::leader::{Input, Output, Replica, Variant};
use std::collections::BTreeMap;

/// A replica's clock: `local = anchor_local + (real − anchor_real) × rate`.
#[derive(Clone, Copy, Debug)]
pub(in crate::world) struct Clock {
    anchor_real_ms: u64,
    anchor_local_ms: u64,
    rate: f64,
}

impl Clock {
    pub(in crate::world) fn local(&self, real: SimTime) -> u64 {
        let elapsed = real.as_ms().saturating_sub(self.anchor_real_ms) as f64;
        self.anchor_local_ms + (elapsed * self.rate).floor() as u64
    }

    /// The first real instant at which the local clock reads at least `local_ms`.
    pub(in crate::world) fn real(&self, local_ms: u64) -> SimTime {
        let ahead = local_ms.saturating_sub(self.anchor_local_ms) as f64;
        SimTime::from_ms(self.anchor_real_ms + (ahead / self.rate).ceil() as u64)
    }

    /// Change the rate from `now` on, keeping the reading continuous.
    fn set_rate(&mut self, now: SimTime, rate: f64) {
        self.anchor_local_ms = self.local(now);
        self.anchor_real_ms = now.as_ms();
        self.rate = rate;
    }
}

/// The leader-election side of a run: the replicas, the runner variant they run, and the
/// configuration the `[[leader.config]]` entries have set so far.
pub(in crate::world) struct LeaderHarness {
    replicas: Vec<ReplicaNode>,
    variant: Option<Variant>,
    /// The configuration flags as of the latest `[[leader.config]]` entry, and every version.
    config_flags: BTreeMap<String, bool>,
    config_version: u64,
    config_history: BTreeMap<u64, BTreeMap<String, bool>>,
    random_leader: Stream,
}

/// One replica process slot.
struct ReplicaNode {
    node: NodeId,
    process: Option<Replica>,
    clock: Clock,
    random: Stream,
    paused_until: Option<SimTime>,
    /// A graceful stop is under way: the new process starts this long after the old exits.
    restart_after_exit_ms: Option<u64>,
    /// When the process last heard from the API server on its connection (an answer, or
    /// the connection's start); the HTTP/2 dead-peer deadline counts from here.
    last_answer: SimTime,
    /// Its connection died while cut off: requests wait on a new dial since then.
    dialing_since: Option<SimTime>,
    /// Since when the replica cannot reach the API server (`None`: it can, so its
    /// connection's pings are answered).
    cut_since: Option<SimTime>,
}

impl LeaderHarness {
    /// No replicas yet (`World::add_replicas` adds them), running `variant` (the scenario's
    /// unless the run names another; a scenario without `[leader]` has no replicas, so `None`
    /// runs none).
    pub(in crate::world) fn new(seed: u64, variant: Option<Variant>) -> LeaderHarness {
        LeaderHarness {
            replicas: Vec::new(),
            variant,
            config_flags: BTreeMap::new(),
            config_version: 0,
            config_history: BTreeMap::new(),
            random_leader: Stream::new(seed, StreamId::Leader),
        }
    }

    /// The variant the run names, if any.
    pub(in crate::world) fn variant(&self) -> Option<Variant> {
        self.variant
    }

    /// How many replicas there are.
    pub(in crate::world) fn count(&self) -> u32 {
        u32::try_from(self.replicas.len()).expect("replica counts fit in a u32")
    }

    /// The next replica runs on `node`, its process not started yet. Clocks start at large,
    /// different offsets: client-go must not care.
    pub(in crate::world) fn add_replica(&mut self, node: NodeId) {
        let index = u64::from(self.count());
        let mut random = self.random_leader.fork();
        let offset_ms = 1_000_000_000 + random.below(3_600_000) + index * 86_400_000;
        let clock = Clock {
            anchor_real_ms: 0,
            anchor_local_ms: offset_ms,
            rate: 1.0,
        };
        self.replicas.push(ReplicaNode {
            node,
            process: None,
            clock,
            random,
            paused_until: None,
            restart_after_exit_ms: None,
            last_answer: SimTime::from_ms(0),
            dialing_since: None,
            cut_since: None,
        });
    }

    fn slot(&self, index: u32) -> &ReplicaNode {
        &self.replicas[index as usize]
    }

    fn slot_mut(&mut self, index: u32) -> &mut ReplicaNode {
        &mut self.replicas[index as usize]
    }

    /// The node replica `index` runs on (its epoch says which process is current).
    pub(in crate::world) fn node(&self, index: u32) -> NodeId {
        self.slot(index).node
    }

    /// Replica `index`'s clock now.
    pub(in crate::world) fn clock(&self, index: u32) -> Clock {
        self.slot(index).clock
    }

    /// Until when replica `index` is paused, if it is.
    pub(in crate::world) fn paused_until(&self, index: u32) -> Option<SimTime> {
        self.slot(index).paused_until
    }

    /// True while replica `index`'s process runs.
    pub(in crate::world) fn is_running(&self, index: u32) -> bool {
        self.slot(index).process.is_some()
    }

    /// A delay in `[min_ms, max_ms]` drawn from replica `index`'s own stream (a
    /// configuration's delivery).
    pub(in crate::world) fn draw_delay_ms(&mut self, index: u32, min_ms: u64, max_ms: u64) -> u64 {
        self.slot_mut(index).random.range_inclusive(min_ms, max_ms)
    }

    /// Process `process` starts as replica `index` at `now`, on a new connection.
    pub(in crate::world) fn start(&mut self, index: u32, process: Replica, now: SimTime) {
        let slot = self.slot_mut(index);
        debug_assert!(slot.process.is_none(), "replica {index} starts twice");
        slot.process = Some(process);
        slot.restart_after_exit_ms = None;
        slot.last_answer = now;
        slot.dialing_since = None;
    }

    /// Feed `input` to replica `index` at its local time: its output and its clock, or
    /// `None` without a process.
    pub(in crate::world) fn handle(
        &mut self,
        index: u32,
        now: SimTime,
        input: Input,
    ) -> Option<(Output, Clock)> {
        let slot = self.slot_mut(index);
        let process = slot.process.as_mut()?;
        let mut out = Output::default();
        process.handle(slot.clock.local(now), input, &mut slot.random, &mut out);
        Some((out, slot.clock))
    }

    /// A graceful stop of replica `index` begins, its successor to start `downtime_ms` after
    /// it exits; false (nothing happens) if it is down, paused or stopping already.
    pub(in crate::world) fn begin_stop(&mut self, index: u32, downtime_ms: u64) -> bool {
        let slot = self.slot_mut(index);
        if slot.process.is_none()
            || slot.paused_until.is_some()
            || slot.restart_after_exit_ms.is_some()
        {
            return false;
        }
        slot.restart_after_exit_ms = Some(downtime_ms);
        true
    }

    /// A process whose graceful stop finished goes: the downtime before its successor, or
    /// `None` if replica `index` is not a stopped process.
    pub(in crate::world) fn take_exited(&mut self, index: u32) -> Option<u64> {
        let slot = self.slot_mut(index);
        let exited = slot.process.as_ref().is_some_and(Replica::has_exited);
        let downtime_ms = slot.restart_after_exit_ms.filter(|_| exited)?;
        slot.process = None;
        slot.restart_after_exit_ms = None;
        Some(downtime_ms)
    }

    /// Replica `index`'s process dies (no release); false if there is none.
    pub(in crate::world) fn kill(&mut self, index: u32) -> bool {
        let slot = self.slot_mut(index);
        if slot.process.is_none() {
            return false;
        }
        slot.process = None;
        slot.paused_until = None;
        slot.restart_after_exit_ms = None;
        true
    }

    /// Replica `index` freezes until `until`; false if it is down or paused already.
    pub(in crate::world) fn pause(&mut self, index: u32, until: SimTime) -> bool {
        let slot = self.slot_mut(index);
        if slot.process.is_none() || slot.paused_until.is_some() {
            return false;
        }
        slot.paused_until = Some(until);
        true
    }

    /// Replica `index` resumes if its pause is over at `now`; false if it is not paused or
    /// still frozen.
    pub(in crate::world) fn resume(&mut self, index: u32, now: SimTime) -> bool {
        let slot = self.slot_mut(index);
        if slot.paused_until.is_none_or(|until| until > now) {
            return false;
        }
        slot.paused_until = None;
        true
    }

    /// A paused replica's pause ends at `now` instead (end of the safety phase); false if it
    /// is not paused.
    pub(in crate::world) fn cut_pause_short(&mut self, index: u32, now: SimTime) -> bool {
        let slot = self.slot_mut(index);
        let paused = slot.paused_until.is_some();
        if paused {
            slot.paused_until = Some(now);
        }
        paused
    }

    /// Replica `index`'s clock runs at `rate` from `now` on.
    pub(in crate::world) fn set_rate(&mut self, index: u32, now: SimTime, rate: f64) {
        self.slot_mut(index).clock.set_rate(now, rate);
    }

    /// The first replica whose process believes it leads.
    pub(in crate::world) fn believed_leader(&self) -> Option<u32> {
        (0..self.count()).find(|&index| {
            self.slot(index)
                .process
                .as_ref()
                .is_some_and(|p| p.believed_term().is_some())
        })
    }

    /// Replica `index`'s next started-leading callback comes `delay_ms` late; false without
    /// a process.
    pub(in crate::world) fn delay_next_started_leading(
        &mut self,
        index: u32,
        delay_ms: u64,
    ) -> bool {
        let Some(process) = self.slot_mut(index).process.as_mut() else {
            return false;
        };
        process.delay_next_started_leading(delay_ms);
        true
    }

    /// True while a late callback of replica `index` is still to be delivered.
    pub(in crate::world) fn callback_delay_pending(&self, index: u32) -> bool {
        self.slot(index)
            .process
            .as_ref()
            .is_some_and(Replica::callback_delay_pending)
    }

    /// No further callback of replica `index` is delayed (end of the safety phase).
    pub(in crate::world) fn disarm_callback_delay(&mut self, index: u32) {
        if let Some(process) = self.slot_mut(index).process.as_mut() {
            process.disarm_callback_delay();
        }
    }
}

/// The configuration timeline.
impl LeaderHarness {
    /// The latest configuration version (0: none yet).
    pub(in crate::world) fn config_version(&self) -> u64 {
        self.config_version
    }

    /// A `[[leader.config]]` entry switches `set`'s flags: the new version.
    pub(in crate::world) fn configure(&mut self, set: &BTreeMap<String, bool>) -> u64 {
        for (flag, value) in set {
            self.config_flags.insert(flag.clone(), *value);
        }
        self.config_version += 1;
        let flags = self.config_flags.clone();
        self.config_history.insert(self.config_version, flags);
        self.config_version
    }

    /// The flags of configuration `version` (none for an unknown version).
    pub(in crate::world) fn config(&self, version: u64) -> BTreeMap<String, bool> {
        self.config_history
            .get(&version)
            .cloned()
            .unwrap_or_default()
    }
}

/// Each replica's connection to the API server.
impl LeaderHarness {
    /// True while replica `index` cannot reach the API server.
    pub(in crate::world) fn is_cut(&self, index: u32) -> bool {
        self.slot(index).cut_since.is_some()
    }

    /// Replica `index` can (`connected`) or cannot reach the API server as of `now`: true if
    /// this heals a cut.
    pub(in crate::world) fn set_reach(
        &mut self,
        index: u32,
        connected: bool,
        now: SimTime,
    ) -> bool {
        let slot = self.slot_mut(index);
        match (connected, slot.cut_since) {
            (true, Some(_)) => {
                slot.cut_since = None;
                slot.dialing_since = None;
                true
            }
            (false, None) => {
                slot.cut_since = Some(now);
                false
            }
            _ => false,
        }
    }

    /// An answer reached replica `index` at `now` on a live connection.
    pub(in crate::world) fn heard_answer(&mut self, index: u32, now: SimTime) {
        let slot = self.slot_mut(index);
        slot.last_answer = now;
        slot.dialing_since = None;
    }

    /// The transport closed replica `index`'s connection at `now` (or its dial failed): the
    /// next request dials a new one.
    pub(in crate::world) fn connection_died(&mut self, index: u32, now: SimTime) {
        let slot = self.slot_mut(index);
        slot.last_answer = now;
        slot.dialing_since = Some(now);
    }

    /// The HTTP/2 dead-peer deadline of a call of replica `index`: while the replica reaches
    /// the API server its pings are answered, so the next check is one `dead_ms` from now;
    /// once cut off, the connection dies `dead_ms` after the later of its last answer and
    /// the cut, and a new connection's dial fails `dial_timeout_ms` after it started.
    pub(in crate::world) fn dead_peer_deadline(
        &self,
        index: u32,
        now: SimTime,
        dead_ms: u64,
        dial_timeout_ms: u64,
    ) -> SimTime {
        let slot = self.slot(index);
        match (slot.cut_since, slot.dialing_since) {
            (None, _) => now.plus_ms(dead_ms),
            (Some(_), Some(dial)) => dial.plus_ms(dial_timeout_ms).max(now),
            (Some(cut), None) => cut.max(slot.last_answer).plus_ms(dead_ms).max(now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::LeaderHarness;
    use crate::engine::{Nodes, SimTime};
    use std::collections::BTreeMap;

    const DEAD_MS: u64 = 45_000;
    const DIAL_MS: u64 = 30_000;

    fn one_replica() -> LeaderHarness {
        let mut harness = LeaderHarness::new(1, None);
        let mut nodes = Nodes::default();
        harness.add_replica(nodes.add());
        harness
    }

    fn at(ms: u64) -> SimTime {
        SimTime::from_ms(ms)
    }

    #[test]
    fn a_connection_dies_dead_ms_after_the_later_of_its_last_answer_and_the_cut_then_dials() {
        let mut harness = one_replica();
        let deadline = |h: &LeaderHarness, now| h.dead_peer_deadline(0, at(now), DEAD_MS, DIAL_MS);
        assert_eq!(
            deadline(&harness, 1_000),
            at(46_000),
            "reachable: pings answered"
        );
        harness.heard_answer(0, at(5_000));
        assert!(
            !harness.set_reach(0, false, at(10_000)),
            "a cut heals nothing"
        );
        assert!(harness.is_cut(0));
        assert_eq!(
            deadline(&harness, 12_000),
            at(55_000),
            "dead 45 s after the cut"
        );
        harness.heard_answer(0, at(20_000));
        assert_eq!(
            deadline(&harness, 21_000),
            at(65_000),
            "a later answer moves it"
        );
        harness.connection_died(0, at(65_000));
        assert_eq!(
            deadline(&harness, 65_000),
            at(95_000),
            "a new dial fails after 30 s"
        );
        assert!(
            harness.set_reach(0, true, at(70_000)),
            "the heal ends the cut"
        );
        assert!(!harness.is_cut(0));
        assert_eq!(deadline(&harness, 70_000), at(115_000), "reachable again");
    }

    #[test]
    fn each_configuration_version_keeps_the_flags_as_of_its_entry() {
        let mut harness = one_replica();
        assert_eq!(harness.config_version(), 0);
        let first = harness.configure(&BTreeMap::from([("a".to_owned(), true)]));
        let second = harness.configure(&BTreeMap::from([("b".to_owned(), false)]));
        assert_eq!((first, second), (1, 2));
        assert_eq!(harness.config(1), BTreeMap::from([("a".to_owned(), true)]));
        let both = BTreeMap::from([("a".to_owned(), true), ("b".to_owned(), false)]);
        assert_eq!(
            harness.config(2),
            both,
            "a version carries the earlier flags"
        );
        assert!(
            harness.config(3).is_empty(),
            "an unknown version has no flags"
        );
    }
}
