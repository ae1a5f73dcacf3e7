//! The event queue: a binary heap ordered by `(time, sequence)`.

use super::SimTime;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

struct Entry<E> {
    time: SimTime,
    sequence: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.time == other.time && self.sequence == other.sequence
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest event first; equal times
    /// pop in insertion order.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.time, other.sequence).cmp(&(self.time, self.sequence))
    }
}

/// Pending events in time order. Virtual time (`now`) is the time of the last popped event
/// and never goes backwards.
pub struct Queue<E> {
    heap: BinaryHeap<Entry<E>>,
    sequence: u64,
    now: SimTime,
    popped_count: u64,
}

impl<E> Default for Queue<E> {
    fn default() -> Self {
        Queue {
            heap: BinaryHeap::new(),
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
        self.heap.push(Entry {
            time,
            sequence: self.sequence,
            event,
        });
    }

    /// Schedule `event` `delay_ms` after now.
    pub fn push_after(&mut self, delay_ms: u64, event: E) {
        self.push(self.now.plus_ms(delay_ms), event);
    }

    /// Time of the earliest pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|entry| entry.time)
    }

    /// Pop the earliest event and advance `now` to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let entry = self.heap.pop()?;
        assert!(entry.time >= self.now, "queue order broken");
        self.now = entry.time;
        self.popped_count += 1;
        Some((entry.time, entry.event))
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
}
