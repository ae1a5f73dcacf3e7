//! The event queue, ordered by `(time, sequence)`: equal times pop in the order they were
//! pushed (or reserved).
//!
//! Most events of a run are due within a few seconds (network latencies of milliseconds,
//! 5 s pings, 1–10 s polls), so the queue is a timing wheel: one bucket per millisecond over
//! the next `WHEEL_MS`, each a list (threaded through the event slab) of the events due at
//! that millisecond in sequence order, and a bitmap of the non-empty buckets. Pushing and
//! popping a near event is then a constant amount of work. Events due later wait in a binary
//! heap and move into the wheel as soon as their millisecond enters it — before any event of
//! that millisecond can be pushed straight into the wheel, so the order is kept.

use super::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Milliseconds the wheel covers; a power of two.
const WHEEL_MS: u64 = 1 << 13;
const WORD_BITS: u64 = u64::BITS as u64;
/// Words of the wheel's bitmap (a power of two, so going round it is a mask, not a division).
const WORDS: usize = (WHEEL_MS / WORD_BITS) as usize;
/// No slot: the end of a bucket's list.
const NONE: u32 = u32::MAX;

/// A parked event with its sequence number and its place in a bucket's list, side by side:
/// popping reads the event seconds after it was pushed, so the list link and the event are
/// read together. (The due time is the bucket's millisecond, or the far heap's key.)
struct Parked<E> {
    sequence: u64,
    /// The next slot in the same bucket, or `NONE`.
    next: u32,
    /// The event; `None` while the slot is free.
    event: Option<E>,
}

/// A far event in the heap: its time, its tie-breaking sequence number and its slot.
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
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.sequence).cmp(&(self.time, self.sequence))
    }
}

/// One millisecond's events: the first and last slot of its list.
#[derive(Clone, Copy)]
struct Bucket {
    head: u32,
    tail: u32,
}

const EMPTY: Bucket = Bucket {
    head: NONE,
    tail: NONE,
};

/// Pending events in time order. Virtual time (`now`) is the time of the last popped event
/// and never goes backwards.
pub struct Queue<E> {
    /// Events due in `[now, now + WHEEL_MS)`, by due millisecond modulo `WHEEL_MS`.
    buckets: Vec<Bucket>,
    /// Bit `i` is set when bucket `i` is not empty.
    occupied: Vec<u64>,
    /// Events due at `now + WHEEL_MS` or later.
    far: BinaryHeap<Key>,
    /// Every pending event with its list place; free slots are listed in `free`.
    slots: Vec<Parked<E>>,
    free: Vec<u32>,
    sequence: u64,
    now: SimTime,
    popped_count: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            buckets: vec![EMPTY; WHEEL_MS as usize],
            occupied: vec![0; WORDS],
            far: BinaryHeap::new(),
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
        self.slots.len() - self.free.len()
    }

    /// True when no event is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedule `event` at `time`, which must not be in the past.
    pub fn push(&mut self, time: SimTime, event: E) {
        self.sequence += 1;
        self.push_keyed(time, self.sequence, event);
    }

    /// Reserve `count` consecutive sequence numbers now and return the first. An event later
    /// pushed with one of them (`push_reserved`) pops exactly where it would have popped had
    /// it been pushed now: a long, time-ordered series (the workload's arrivals) can then be
    /// queued one at a time instead of all at once.
    pub(crate) fn reserve_sequences(&mut self, count: u64) -> u64 {
        let first = self.sequence + 1;
        self.sequence += count;
        first
    }

    /// Schedule `event` at `time` under a sequence number from `reserve_sequences`; each
    /// reserved number is used at most once.
    pub(crate) fn push_reserved(&mut self, time: SimTime, sequence: u64, event: E) {
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
        match self.first_bucket() {
            Some(bucket) => Some(self.bucket_time(bucket)),
            None => self.far.peek().map(|key| key.time),
        }
    }

    /// Pop the earliest event and advance `now` to its time. (Inlined into the world's one
    /// call site: the event loop.)
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let (time, slot) = match self.first_bucket() {
            Some(bucket) => (self.bucket_time(bucket), self.unlink_head(bucket)),
            // The wheel is empty: the next event is far; jump to it.
            None => self.far.pop().map(|key| (key.time, key.slot))?,
        };
        assert!(time >= self.now, "queue order broken");
        let event = self.slots[slot as usize]
            .event
            .take()
            .expect("a queued slot holds its event");
        self.free.push(slot);
        self.popped_count += 1;
        self.now = time;
        self.pull_far_into_wheel();
        Some((time, event))
    }

    fn push_keyed(&mut self, time: SimTime, sequence: u64, event: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past: {time} < {}",
            self.now
        );
        let slot = match self.free.pop() {
            Some(slot) => {
                // Filled in place: the freed slot's event is already gone.
                let parked = &mut self.slots[slot as usize];
                (parked.sequence, parked.next) = (sequence, NONE);
                parked.event = Some(event);
                slot
            }
            None => {
                let slot = u32::try_from(self.slots.len())
                    .ok()
                    .filter(|slot| *slot != NONE)
                    .expect("fewer than 2^32 - 1 pending events");
                self.slots.push(Parked {
                    sequence,
                    next: NONE,
                    event: Some(event),
                });
                slot
            }
        };
        if time.as_ms() - self.now.as_ms() < WHEEL_MS {
            self.link(slot, time);
        } else {
            self.far.push(Key {
                time,
                sequence,
                slot,
            });
        }
    }

    /// Far events whose millisecond is now inside the wheel move into it. Their sequence
    /// numbers are older than any event pushed straight into that bucket later.
    fn pull_far_into_wheel(&mut self) {
        while let Some(key) = self.far.peek()
            && key.time.as_ms() - self.now.as_ms() < WHEEL_MS
        {
            let (slot, time) = (key.slot, key.time);
            self.far.pop();
            self.link(slot, time);
        }
    }

    /// Put `slot`, due at `time`, into its bucket's list, in sequence order (at the tail but
    /// for a reserved sequence number, which may be older than events already there).
    fn link(&mut self, slot: u32, time: SimTime) {
        let sequence = self.slots[slot as usize].sequence;
        let index = (time.as_ms() % WHEEL_MS) as usize;
        let bucket = self.buckets[index];
        if bucket.head == NONE {
            self.buckets[index] = Bucket {
                head: slot,
                tail: slot,
            };
            self.occupied[index / WORD_BITS as usize] |= 1 << (index as u64 % WORD_BITS);
            return;
        }
        // The newest number issued is above every other pending one (each number is used
        // once), so a plain push goes to the tail without reading the tail's slot: a slot
        // pushed seconds ago, often out of the cache by now. Reserved numbers and far events
        // moving in compare with it.
        if sequence == self.sequence || self.slots[bucket.tail as usize].sequence < sequence {
            self.slots[bucket.tail as usize].next = slot;
            self.buckets[index].tail = slot;
            return;
        }
        if sequence < self.slots[bucket.head as usize].sequence {
            self.slots[slot as usize].next = bucket.head;
            self.buckets[index].head = slot;
            return;
        }
        let mut before = bucket.head;
        while self.slots[self.slots[before as usize].next as usize].sequence < sequence {
            before = self.slots[before as usize].next;
        }
        self.slots[slot as usize].next = self.slots[before as usize].next;
        self.slots[before as usize].next = slot;
    }

    /// The millisecond a non-empty bucket holds: the one in `[now, now + WHEEL_MS)` that maps
    /// to it.
    fn bucket_time(&self, index: usize) -> SimTime {
        let offset = (index as u64).wrapping_sub(self.now.as_ms()) % WHEEL_MS;
        self.now.plus_ms(offset)
    }

    /// Take the first slot of a non-empty bucket.
    fn unlink_head(&mut self, index: usize) -> u32 {
        let head = self.buckets[index].head;
        let next = self.slots[head as usize].next;
        self.buckets[index].head = next;
        if next == NONE {
            self.buckets[index].tail = NONE;
            self.occupied[index / WORD_BITS as usize] &= !(1 << (index as u64 % WORD_BITS));
        }
        head
    }

    /// The non-empty bucket due first: the first set bit at or after `now`'s bucket, going
    /// round the wheel once.
    fn first_bucket(&self) -> Option<usize> {
        self.occupied_from((self.now.as_ms() % WHEEL_MS) as usize, WORDS)
    }

    /// The first non-empty bucket at or after `start` (taken round the wheel), looking at
    /// `start`'s bitmap word and at most `words` more; after all `WORDS` of them, only the
    /// bits before `start` are left in its own word. (Inlined into both callers, so each gets
    /// its word count as a constant: called, it cost 20 instructions per event more.)
    #[inline(always)]
    fn occupied_from(&self, start: usize, words: usize) -> Option<usize> {
        let start = start % WHEEL_MS as usize;
        let (start_word, start_bit) = (start / WORD_BITS as usize, start as u64 % WORD_BITS);
        let first = self.occupied[start_word] >> start_bit;
        if first != 0 {
            return Some(start + first.trailing_zeros() as usize);
        }
        for step in 1..=words {
            let word = (start_word + step) % WORDS;
            let mut bits = self.occupied[word];
            if step == WORDS {
                // Back at the start word: only the bits before `start` are left.
                bits &= (1u64 << start_bit).wrapping_sub(1);
            }
            if bits != 0 {
                return Some(word * WORD_BITS as usize + bits.trailing_zeros() as usize);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{Queue, WHEEL_MS};
    use crate::engine::SimTime;

    /// A xorshift stream from `state` (the tests' own, so the engine's streams stay apart).
    fn xorshift(mut state: u64) -> impl FnMut() -> u64 {
        move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        }
    }

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
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15_u64);
        let mut label = 0u64;
        for _ in 0..5_000 {
            if !next().is_multiple_of(3) || reference.is_empty() {
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

    #[test]
    fn far_events_and_reserved_sequences_keep_time_and_sequence_order() {
        let mut queue = Queue::default();
        let mut reference: Vec<(u64, u64)> = Vec::new();
        let mut next = xorshift(0x2545_f491_4f6c_dd1d_u64);
        // Sequence numbers reserved up front and used later, like the workload's arrivals.
        let mut reserved = Vec::new();
        for _ in 0..20_000 {
            let roll = next() % 10;
            if roll < 5 || reference.is_empty() {
                // Near, far (beyond the wheel) and same-millisecond events.
                let delay_ms = match next() % 4 {
                    0 => 0,
                    1 => next() % 20,
                    2 => next() % (3 * WHEEL_MS),
                    _ => WHEEL_MS - 1 + next() % 3,
                };
                let time = queue.now().as_ms() + delay_ms;
                let sequence = match reserved.pop() {
                    Some(sequence) if roll == 0 => {
                        queue.push_reserved(SimTime::from_ms(time), sequence, sequence);
                        sequence
                    }
                    other => {
                        reserved.extend(other);
                        queue.push(SimTime::from_ms(time), queue.sequence + 1);
                        queue.sequence
                    }
                };
                reference.push((time, sequence));
            } else if roll == 5 {
                let first = queue.reserve_sequences(3);
                reserved.extend([first + 2, first + 1, first]);
            } else {
                let earliest = *reference.iter().min().expect("not empty");
                reference.retain(|entry| *entry != earliest);
                assert_eq!(queue.peek_time(), Some(SimTime::from_ms(earliest.0)));
                assert_eq!(
                    queue.pop(),
                    Some((SimTime::from_ms(earliest.0), earliest.1))
                );
            }
        }
        assert_eq!(queue.len(), reference.len());
        reference.sort();
        let rest: Vec<_> = std::iter::from_fn(|| queue.pop())
            .map(|(time, sequence)| (time.as_ms(), sequence))
            .collect();
        assert_eq!(rest, reference);
    }
}
