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
        self.by_key.remove(&key);
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
    }
}

/// Tracks the times the plugin cannot act on the cluster: the GoCD server is down (no plugin
/// runs, no agent can register), or the plugin is cut off from the API server (a partition
/// between `gocd` and `kube-api`, an API outage). Plugin-side deadlines wait for it.
#[derive(Debug, Default)]
pub(crate) struct ServerOutage {
    /// Active causes: fault indexes, and `u32::MAX` for a stopped server.
    causes: BTreeSet<u32>,
    started_ms: Option<u64>,
    /// The server restarted during the current cut-off (the plugin forgot its memory).
    restarted: bool,
}

/// The cause id of a stopped server.
const SERVER_DOWN: u32 = u32::MAX;

impl ServerOutage {
    /// True while the plugin cannot act.
    pub(crate) fn is_down(&self) -> bool {
        !self.causes.is_empty()
    }

    /// Follow `record`; when the last cause ends, returns how long the plugin was cut off and
    /// whether the server restarted meanwhile.
    pub(crate) fn observe(
        &mut self,
        t_ms: u64,
        record: &crate::trace::Record,
    ) -> Option<(u64, bool)> {
        use crate::trace::Record;
        let (cause, starts) = match record {
            Record::ServerStopped => (SERVER_DOWN, true),
            Record::ServerStarted => (SERVER_DOWN, false),
            Record::FaultStarted {
                index,
                fault,
                target,
            } if cuts_plugin_off(fault, target) => (*index, true),
            Record::FaultEnded { index, .. } if self.causes.contains(index) => (*index, false),
            _ => return None,
        };
        if starts {
            if self.causes.is_empty() {
                self.started_ms = Some(t_ms);
                self.restarted = false;
            }
            self.causes.insert(cause);
            return None;
        }
        if !self.causes.remove(&cause) {
            return None;
        }
        if cause == SERVER_DOWN {
            self.restarted = true;
        }
        if !self.causes.is_empty() {
            return None;
        }
        let started_ms = self.started_ms.take()?;
        Some((t_ms.saturating_sub(started_ms), self.restarted))
    }
}

/// True for a fault that cuts the plugin off from the API server.
fn cuts_plugin_off(fault: &str, target: &str) -> bool {
    fault == "api_outage"
        || (fault == "partition" && target.contains("gocd") && target.contains("kube-api"))
}
