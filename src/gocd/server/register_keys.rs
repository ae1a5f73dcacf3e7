//! The server's ephemeral auto-register keys (`EphemeralAutoRegisterKeyService`): one issued
//! with every create-agent request, revoked by the registration that uses it, refused once
//! expired.
//!
//! The assignment tick forgets the expired keys, so that keys of requests that made no pod do
//! not pile up for the whole run. Forgetting them by a walk over every key cost O(keys) reads
//! of cold map nodes per tick, and a large cluster holds thousands of keys within their time
//! to live. [`RegisterKeys`] keeps the keys in expiry order beside the map, so a tick reads
//! only the keys it forgets. The naive reference is the walk (`forget_expired_naive`); the
//! randomised test below drives both with the same issues, uses and ticks.

use std::collections::{BTreeMap, BTreeSet};

/// Keys issued and not yet used or forgotten, with their expiry.
#[derive(Debug, Default)]
pub(super) struct RegisterKeys {
    /// Each key's expiry, in simulated milliseconds.
    expiry_of: BTreeMap<String, u64>,
    /// The same keys in expiry order.
    by_expiry: BTreeSet<(u64, String)>,
}

impl RegisterKeys {
    /// Issue `key`, valid up to and including `expiry_ms` (a key issued again gets the new
    /// expiry).
    pub(super) fn issue(&mut self, key: String, expiry_ms: u64) {
        if let Some(old) = self.expiry_of.insert(key.clone(), expiry_ms) {
            self.by_expiry.remove(&(old, key.clone()));
        }
        self.by_expiry.insert((expiry_ms, key));
        debug_assert_eq!(self.expiry_of.len(), self.by_expiry.len());
    }

    /// Use `key`: it is revoked whether or not it was still valid. Its expiry, if it was
    /// issued and not forgotten.
    pub(super) fn revoke(&mut self, key: &str) -> Option<u64> {
        let (key, expiry_ms) = self.expiry_of.remove_entry(key)?;
        let indexed = self.by_expiry.remove(&(expiry_ms, key));
        debug_assert!(indexed, "a key's expiry is indexed");
        Some(expiry_ms)
    }

    /// Forget every key that expired before `now_ms` (what a walk keeping the keys with an
    /// expiry at or after `now_ms` leaves).
    pub(super) fn forget_expired(&mut self, now_ms: u64) {
        while let Some((expiry_ms, _)) = self.by_expiry.first() {
            if *expiry_ms >= now_ms {
                break;
            }
            let (_, key) = self.by_expiry.pop_first().expect("a first key was seen");
            self.expiry_of.remove(&key);
        }
        debug_assert_eq!(self.expiry_of.len(), self.by_expiry.len());
    }
}

/// The naive reference: the walk over every key.
#[cfg(test)]
fn forget_expired_naive(keys: &mut BTreeMap<String, u64>, now_ms: u64) {
    keys.retain(|_, expiry_ms| *expiry_ms >= now_ms);
}

#[cfg(test)]
mod tests {
    use super::{RegisterKeys, forget_expired_naive};
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use std::collections::BTreeMap;

    /// Random issues (some of a key already held, with another expiry), uses (of held, used
    /// and never-issued keys) and ticks at rising times: the keys and every answer agree with
    /// a map walked at every tick.
    #[test]
    fn forgetting_by_expiry_order_leaves_what_the_walk_leaves() {
        let mut forgotten = 0;
        for seed in 0..40 {
            let mut random = Stream::new(seed, StreamId::Workload);
            let (mut keys, mut naive) = (RegisterKeys::default(), BTreeMap::new());
            let mut now_ms = 0;
            for _ in 0..400 {
                let key = format!("key-{}", random.below(60));
                match random.below(4) {
                    0 | 1 => {
                        let expiry_ms = now_ms + random.below(5_000);
                        keys.issue(key.clone(), expiry_ms);
                        naive.insert(key, expiry_ms);
                    }
                    2 => assert_eq!(keys.revoke(&key), naive.remove(&key), "seed {seed}"),
                    _ => {
                        now_ms += random.below(2_000);
                        let before = naive.len();
                        keys.forget_expired(now_ms);
                        forget_expired_naive(&mut naive, now_ms);
                        forgotten += before - naive.len();
                    }
                }
                assert_eq!(keys.expiry_of, naive, "seed {seed}");
                assert_eq!(keys.expiry_of.len(), keys.by_expiry.len(), "seed {seed}");
            }
        }
        assert!(forgotten > 1_000, "the ticks forgot keys: {forgotten}");
    }

    /// A key expiring exactly at the tick's time is kept; one a millisecond older goes.
    #[test]
    fn a_key_is_valid_through_its_expiry() {
        let mut keys = RegisterKeys::default();
        keys.issue("a".to_owned(), 100);
        keys.issue("b".to_owned(), 99);
        keys.forget_expired(100);
        assert_eq!(keys.revoke("b"), None);
        assert_eq!(keys.revoke("a"), Some(100));
        assert!(keys.expiry_of.is_empty());
    }
}
