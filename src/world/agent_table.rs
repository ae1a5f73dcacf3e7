//! The running go-agent processes, by pod uid, with each uid's incarnation count.
//!
//! Every agent event (ping timer, request, reply: nine in ten events of a day) first asks
//! whether the incarnation it was sent for is still the running one. A map from uid to
//! process answered that in O(log pods); this table answers it in O(1) by indexing a vector
//! with the uid, which the Kubernetes model hands out densely from 1 (`KubeApi`). A process is
//! boxed, so a long-gone pod's uid costs 16 bytes (its address and its incarnation count); the
//! box starts the process on a cache line (`layout::CacheLine`, measured there).
//!
//! The reference is `tests::NaiveTable` (the two maps this replaced); the randomised test
//! beside it drives both with the same operations and compares every answer.

use super::layout::CacheLine;

/// The processes of the run, by uid: for each uid ever started, how many times its container
/// started or was killed, and the running process, if any.
pub(super) struct ProcessTable<P> {
    slots: Vec<Slot<P>>,
}

/// One uid's incarnation count and running process.
struct Slot<P> {
    incarnation: u32,
    process: Option<Box<CacheLine<P>>>,
}

impl<P> Default for ProcessTable<P> {
    fn default() -> Self {
        ProcessTable { slots: Vec::new() }
    }
}

impl<P> ProcessTable<P> {
    /// The container of `uid` started `process`: a new incarnation, which is returned.
    pub(super) fn start(&mut self, uid: u64, process: P) -> u32 {
        self.replace(uid, Some(Box::new(CacheLine::new(process))))
    }

    /// The container of `uid` died or its pod is gone: the process goes, and anything sent
    /// to its incarnation is stale from now on.
    pub(super) fn kill(&mut self, uid: u64) {
        self.replace(uid, None);
    }

    /// Put `process` in the place of `uid`'s, under a new incarnation, which is returned.
    /// The table grows to hold `uid`.
    fn replace(&mut self, uid: u64, process: Option<Box<CacheLine<P>>>) -> u32 {
        let at = index(uid);
        if at >= self.slots.len() {
            self.slots.resize_with(at + 1, || Slot {
                incarnation: 0,
                process: None,
            });
        }
        let slot = &mut self.slots[at];
        slot.incarnation += 1;
        slot.process = process;
        slot.incarnation
    }

    /// The process of `uid`, if `incarnation` is the one running.
    pub(super) fn current_mut(&mut self, uid: u64, incarnation: u32) -> Option<&mut P> {
        let slot = self.slots.get_mut(index(uid))?;
        if slot.incarnation != incarnation {
            return None;
        }
        slot.process.as_deref_mut().map(|line| &mut **line)
    }
}

/// The place of `uid`. Uids are dense (one per pod created), so the table stays as long as
/// the run's pod count.
fn index(uid: u64) -> usize {
    usize::try_from(uid).expect("pod uids are counted from 1 and fit in memory")
}

#[cfg(test)]
mod tests {
    use super::ProcessTable;
    use crate::component::Random;
    use crate::engine::{Stream, StreamId};
    use std::collections::BTreeMap;

    /// The reference: a map of running processes and a map of incarnation counts.
    #[derive(Default)]
    struct NaiveTable {
        processes: BTreeMap<u64, (u32, u64)>,
        incarnations: BTreeMap<u64, u32>,
    }

    impl NaiveTable {
        fn start(&mut self, uid: u64, process: u64) -> u32 {
            let incarnation = self.incarnations.entry(uid).or_insert(0);
            *incarnation += 1;
            let incarnation = *incarnation;
            self.processes.insert(uid, (incarnation, process));
            incarnation
        }

        fn kill(&mut self, uid: u64) {
            self.processes.remove(&uid);
            *self.incarnations.entry(uid).or_insert(0) += 1;
        }

        fn current_mut(&mut self, uid: u64, incarnation: u32) -> Option<&mut u64> {
            let (running, process) = self.processes.get_mut(&uid)?;
            (*running == incarnation).then_some(process)
        }
    }

    #[test]
    fn the_table_answers_as_the_two_maps_on_random_starts_kills_and_lookups() {
        let mut random = Stream::new(7, StreamId::Agents);
        let mut table = ProcessTable::default();
        let mut naive = NaiveTable::default();
        let mut hits = 0;
        for step in 0..20_000u64 {
            // Few uids, so restarts of the same uid and stale incarnations are common.
            let uid = 1 + random.below(40);
            match random.below(4) {
                0 => assert_eq!(table.start(uid, step), naive.start(uid, step)),
                1 => {
                    table.kill(uid);
                    naive.kill(uid);
                }
                _ => {
                    // The latest incarnation or one or two before it (stale events).
                    let latest = naive.incarnations.get(&uid).copied().unwrap_or(0);
                    let back = u32::try_from(random.below(3)).expect("small");
                    let incarnation = latest.saturating_sub(back);
                    let got = table.current_mut(uid, incarnation).map(|p| *p);
                    let want = naive.current_mut(uid, incarnation).map(|p| *p);
                    assert_eq!(got, want, "uid {uid} incarnation {incarnation}");
                    if let (Some(a), Some(b)) = (
                        table.current_mut(uid, incarnation),
                        naive.current_mut(uid, incarnation),
                    ) {
                        *a += 1;
                        *b += 1;
                        hits += 1;
                    }
                }
            }
        }
        assert!(
            hits > 1_000,
            "the walk must reach running processes ({hits})"
        );
    }

    #[test]
    fn a_killed_process_and_its_old_incarnations_are_gone_and_a_restart_is_new() {
        let mut table = ProcessTable::default();
        let first = table.start(3, "a");
        assert_eq!(table.current_mut(3, first), Some(&mut "a"));
        table.kill(3);
        assert_eq!(table.current_mut(3, first), None);
        let second = table.start(3, "b");
        assert_eq!(second, first + 2, "the kill counts as an incarnation");
        assert_eq!(table.current_mut(3, first), None);
        assert_eq!(table.current_mut(3, second), Some(&mut "b"));
        assert_eq!(
            table.current_mut(9, 0),
            None,
            "an unknown uid has no process"
        );
    }
}
