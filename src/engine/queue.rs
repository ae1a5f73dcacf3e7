//! The event queue: a binary heap of small keys ordered by `(time, sequence)`, with the
//! events themselves parked in a slab. Sifting moves 24-byte keys instead of whole events,
//! which is most of what a pop costs once events grow past a few words.

use super::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Where an event waits: its time, its tie-breaking sequence number and its slab slot.
#[derive(Clone, Copy)]
struct Key {
    time: SimTime,
    sequence: u64,
    slot: u32,
}

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.sequence == other.sequence
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event first; equal times
    /// pop in insertion order.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.sequence).cmp(&(self.time, self.sequence))
    }
}

/// Pending events in time order. Virtual time (`now`) is the time of the last popped event
/// and never goes backwards.
pub struct Queue<E> {
    heap: BinaryHeap<Key>,
    /// Events by slot; `None` marks a free slot (listed in `free`).
    slots: Vec<Option<E>>,
    free: Vec<u32>,
    sequence: u64,
    now: SimTime,
    popped_count: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            sequence: 0,
            now: SimTime::ZERO,
            popped_count: 0,
        }
    }
}

impl<E> Queue<E> {
    /// The time of the last popped event.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events popped so far.
    pub fn popped_count(&self) -> u64 {
        self.popped_count
    }

    /// Pending events.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedule `event` at `time`, which must not be in the past.
    pub fn push(&mut self, time: SimTime, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        self.sequence += 1;
        self.push_keyed(time, self.sequence, event);
    }

    fn push_keyed(&mut self, time: SimTime, sequence: u64, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(event);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len()).expect("fewer than 2^32 pending events");
                self.slots.push(Some(event));
                slot
            }
        };
        self.heap.push(Key {
            time,
            sequence,
            slot,
        });
    }

    /// Reserve `count` consecutive sequence numbers now and return the first. An event later
    /// pushed with one of them (`push_reserved`) pops exactly where it would have popped had
    /// it been pushed now: a long, time-ordered series (the workload's arrivals) can then be
    /// queued one at a time instead of all at once, keeping the heap small.
    pub fn reserve_sequences(&mut self, count: u64) -> u64 {
        let first = self.sequence + 1;
        self.sequence += count;
        first
    }

    /// Schedule `event` at `time` under a sequence number from `reserve_sequences`; each
    /// reserved number is used at most once.
    pub fn push_reserved(&mut self, time: SimTime, sequence: u64, event: E) {
        assert!(
            sequence <= self.sequence,
            "sequence {sequence} was never reserved"
        );
        self.push_keyed(time, sequence, event);
    }

    /// Schedule `event` `delay_ms` after now.
    pub fn push_after(&mut self, delay_ms: u64, event: E) {
        self.push(self.now.plus_ms(delay_ms), event);
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|key| key.time)
    }

    /// Pop the earliest event and advance `now` to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let key = self.heap.pop()?;
        assert!(key.time >= self.now, "queue order broken");
        self.now = key.time;
        self.popped_count += 1;
        let event = self.slots[key.slot as usize]
            .take()
            .expect("a queued key points at a parked event");
        self.free.push(key.slot);
        Some((key.time, event))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_pop_in_time_order_and_ties_in_insertion_order() {
        let mut queue = Queue::default();
        queue.push(SimTime::from_ms(20), "c");
        queue.push(SimTime::from_ms(10), "a");
        queue.push(SimTime::from_ms(10), "b");
        let order: Vec<_> = std::iter::from_fn(|| queue.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c"]);
        assert_eq!(queue.now(), SimTime::from_ms(20));
        assert_eq!(queue.popped_count(), 3);
    }

    #[test]
    fn interleaved_pushes_and_pops_match_a_sorted_reference_while_slots_are_reused() {
        let mut queue = Queue::default();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut label = 0u64;
        for _ in 0..5_000 {
            if next() % 3 != 0 || reference.is_empty() {
                let time = queue.now().as_ms() + next() % 50;
                label += 1;
                queue.push(SimTime::from_ms(time), label);
                reference.push((time, label));
            } else {
                // Earliest time first; among equal times, the earliest pushed (smallest label).
                let earliest = *reference.iter().min().expect("not empty");
                reference.retain(|entry| *entry != earliest);
                assert_eq!(
                    queue.pop(),
                    Some((SimTime::from_ms(earliest.0), earliest.1))
                );
            }
        }
        assert_eq!(queue.len(), reference.len());
        assert!(queue.slots.len() < 5_000, "popped slots are reused");
    }

    #[test]
    fn a_reserved_sequence_pops_where_an_early_push_would_have() {
        let mut early = Queue::default();
        early.push(SimTime::from_ms(10), "arrival");
        early.push(SimTime::from_ms(10), "timer");
        let mut late = Queue::default();
        let reserved = late.reserve_sequences(1);
        late.push(SimTime::from_ms(10), "timer");
        late.push_reserved(SimTime::from_ms(10), reserved, "arrival");
        for mut queue in [early, late] {
            let order: Vec<_> = std::iter::from_fn(|| queue.pop()).map(|(_, e)| e).collect();
            assert_eq!(order, ["arrival", "timer"]);
        }
    }
}
