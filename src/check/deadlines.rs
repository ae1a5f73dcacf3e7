//! A queue of deadlines keyed by object, shared by the monitors that report "not done by T".

use std::collections::{BTreeMap, BTreeSet};

/// Deadlines per key, popped in time order (ties by key order, which is deterministic).
#[derive(Debug)]
pub(crate) struct Deadlines<K: Ord + Clone> {
    by_time: BTreeSet<(u64, K)>,
    by_key: BTreeMap<K, u64>,
}

impl<K: Ord + Clone> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            by_time: BTreeSet::new(),
            by_key: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Clone> Deadlines<K> {
    /// Set (or move) the deadline of `key`.
    pub(crate) fn set(&mut self, key: K, deadline_ms: u64) {
        self.remove(&key);
        self.by_time.insert((deadline_ms, key.clone()));
        self.by_key.insert(key, deadline_ms);
        debug_assert_eq!(
            self.by_time.len(),
            self.by_key.len(),
            "one deadline per key, in both indexes"
        );
    }

    /// The deadline of `key`, if it has one.
    pub(crate) fn get(&self, key: &K) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// Forget `key`'s deadline, if it has one.
    pub(crate) fn remove(&mut self, key: &K) {
        if let Some(deadline_ms) = self.by_key.remove(key) {
            let removed = self.by_time.remove(&(deadline_ms, key.clone()));
            assert!(removed, "the two deadline indexes agree");
        }
    }

    /// Pop the earliest deadline strictly before `now_ms`: a deadline equal to `now_ms` has not
    /// passed yet, because a record at that very time may still meet it.
    pub(crate) fn pop_passed(&mut self, now_ms: u64) -> Option<(u64, K)> {
        let first = self.by_time.first()?;
        if first.0 >= now_ms {
            return None;
        }
        let (deadline_ms, key) = self
            .by_time
            .pop_first()
            .expect("first() just returned an entry");
        let indexed = self.by_key.remove(&key);
        debug_assert_eq!(indexed, Some(deadline_ms), "the two deadline indexes agree");
        debug_assert!(deadline_ms < now_ms, "only a passed deadline pops");
        Some((deadline_ms, key))
    }

    /// Move every deadline to `max(deadline + delay_ms, floor_ms)`: the world stood still
    /// for `delay_ms` (a server outage), and nothing can be due before `floor_ms`.
    pub(crate) fn delay_all(&mut self, delay_ms: u64, floor_ms: u64) {
        let moved: Vec<(K, u64)> = self
            .by_key
            .iter()
            .map(|(key, deadline_ms)| {
                (
                    key.clone(),
                    deadline_ms.saturating_add(delay_ms).max(floor_ms),
                )
            })
            .collect();
        for (key, deadline_ms) in moved {
            self.set(key, deadline_ms);
        }
        debug_assert!(
            self.by_time
                .first()
                .is_none_or(|(first, _)| *first >= floor_ms),
            "nothing is due before the floor once delayed"
        );
    }
}

/// Tracks GoCD server outages: while the server is down no plugin runs and no agent can
/// register, so plugin-side deadlines wait for it.
#[derive(Debug, Default)]
pub(crate) struct ServerOutage {
    stopped_ms: Option<u64>,
}

impl ServerOutage {
    /// True while the server is stopped.
    pub(crate) fn is_down(&self) -> bool {
        self.stopped_ms.is_some()
    }

    /// Follow `record`; at a restart, returns how long the server was down.
    pub(crate) fn observe(&mut self, t_ms: u64, record: &crate::trace::Record) -> Option<u64> {
        debug_assert!(
            self.stopped_ms.is_none_or(|stopped_ms| stopped_ms <= t_ms),
            "records arrive in time order"
        );
        match record {
            crate::trace::Record::ServerStopped => {
                self.stopped_ms.get_or_insert(t_ms);
                None
            }
            crate::trace::Record::ServerStarted => self
                .stopped_ms
                .take()
                .map(|stopped_ms| t_ms.saturating_sub(stopped_ms)),
            _ => None,
        }
    }
}

/// Tracks faults that cut the plugin off the Kubernetes API (`api_outage`, or a partition
/// between `gocd` and `kube-api`): no plugin-side delete can land while one lasts, and only
/// the first server-ping after it can act, up to one PING later.
#[derive(Debug, Default)]
pub(crate) struct ApiCut {
    server_ping_interval_ms: u64,
    active: BTreeSet<u32>,
    started_ms: Option<u64>,
}

impl ApiCut {
    pub(crate) fn new(server_ping_interval_ms: u64) -> Self {
        ApiCut {
            server_ping_interval_ms,
            ..ApiCut::default()
        }
    }

    /// True while such a fault lasts.
    pub(crate) fn is_cut(&self) -> bool {
        !self.active.is_empty()
    }

    /// Follow `record`; when the last cut ends, returns how far plugin-side deadlines move:
    /// the cut's length plus one PING.
    pub(crate) fn observe(&mut self, t_ms: u64, record: &crate::trace::Record) -> Option<u64> {
        debug_assert_eq!(
            self.started_ms.is_some(),
            self.is_cut(),
            "a cut has a start exactly while one lasts"
        );
        debug_assert!(self.started_ms.is_none_or(|started_ms| started_ms <= t_ms));
        match record {
            crate::trace::Record::FaultStarted {
                index,
                fault,
                target,
            } if cuts_api(fault, target) => {
                self.active.insert(*index);
                self.started_ms.get_or_insert(t_ms);
                None
            }
            crate::trace::Record::FaultEnded { index, .. } if self.active.remove(index) => {
                if !self.active.is_empty() {
                    return None;
                }
                let started_ms = self.started_ms.take()?;
                let cut_ms = t_ms.saturating_sub(started_ms);
                Some(cut_ms.saturating_add(self.server_ping_interval_ms))
            }
            _ => None,
        }
    }
}

/// The fault keeps the GoCD server (and so the plugin) from reaching the Kubernetes API.
fn cuts_api(fault: &str, target: &str) -> bool {
    super::wait_outage::cut_of(fault, target) == Some(super::wait_outage::Cut::Api)
}
