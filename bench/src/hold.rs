//! The hold-model message pattern on two event loops: a bare `BinaryHeap` loop and
//! elasticsim's engine (`Queue`, `Stream`, `Nodes`). Their ratio is the engine's overhead.
//!
//! Pattern: `clients` clients each keep `window` requests in flight to one server. Every
//! message takes a uniform random latency; the server answers every request, and a client
//! that gets an answer sends its next request until it has sent `rounds`. Both loops draw the
//! same latencies in the same order, so they pop the same events and end at the same time.

use elasticsim::component::Random;
use elasticsim::engine::{Epoch, NodeId, Nodes, Queue, SimTime, Stream, StreamId};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The shape of one hold-model run.
#[derive(Clone, Copy, Debug)]
pub struct HoldSettings {
    pub clients: u32,
    pub window: u32,
    /// Requests each client sends in all.
    pub rounds: u32,
    pub latency_min_ms: u64,
    pub latency_max_ms: u64,
}

impl HoldSettings {
    /// About 2 M events with 4 000 pending: 1 000 clients, 4 in flight, 1 000 requests each.
    pub const STANDARD: HoldSettings = HoldSettings {
        clients: 1_000,
        window: 4,
        rounds: 1_000,
        latency_min_ms: 1,
        latency_max_ms: 10,
    };

    /// Every request and every answer is one event.
    pub fn events_expected(&self) -> u64 {
        2 * u64::from(self.clients) * u64::from(self.rounds)
    }
}

/// What a loop did: events popped and the simulated time of the last one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HoldResult {
    pub events: u64,
    pub end_ms: u64,
}

/// The seed of the bare loop's generator that makes it draw exactly what the engine loop
/// draws: the engine loop forks its latency stream from the `Network` stream of `seed`, and a
/// fork is seeded with the parent's next draw.
pub fn bare_seed(seed: u64) -> u64 {
    Stream::new(seed, StreamId::Network).next_u64()
}

/// The bare loop: a `BinaryHeap` of `(time, sequence, client, is_answer)` tuples and a raw
/// xoshiro256++ generator seeded with `latency_seed` (see [`bare_seed`]).
pub fn bare_loop(settings: &HoldSettings, latency_seed: u64) -> HoldResult {
    let mut random = Xoshiro256PlusPlus::seed_from_u64(latency_seed);
    let span = settings.latency_max_ms - settings.latency_min_ms + 1;
    let mut latency = move || {
        // The engine's `Stream::below` (Lemire's multiply-shift), inlined.
        let offset = ((u128::from(random.next_u64()) * u128::from(span)) >> 64) as u64;
        settings.latency_min_ms + offset
    };
    let mut heap: BinaryHeap<Reverse<(u64, u64, u32, bool)>> = BinaryHeap::new();
    let mut sequence = 0u64;
    let mut sent = vec![0u32; settings.clients as usize];
    for client in 0..settings.clients {
        for _ in 0..settings.window.min(settings.rounds) {
            sequence += 1;
            heap.push(Reverse((latency(), sequence, client, false)));
            sent[client as usize] += 1;
        }
    }
    let mut events = 0u64;
    let mut now = 0u64;
    while let Some(Reverse((time, _, client, is_answer))) = heap.pop() {
        events += 1;
        now = time;
        if !is_answer {
            sequence += 1;
            heap.push(Reverse((now + latency(), sequence, client, true)));
        } else if sent[client as usize] < settings.rounds {
            sent[client as usize] += 1;
            sequence += 1;
            heap.push(Reverse((now + latency(), sequence, client, false)));
        }
    }
    HoldResult {
        events,
        end_ms: now,
    }
}

/// One hold-model event on the engine, addressed to a node incarnation like the world's.
enum HoldEvent {
    /// A request reaches the server (`epoch` is the server's when it was sent).
    Request { client: u32, epoch: Epoch },
    /// An answer reaches the client node `client` (stamped with its epoch).
    Answer { client: u32, epoch: Epoch },
}

/// The same pattern on elasticsim's engine: `Queue` orders events, a `Stream` forked from the
/// `Network` stream of `seed` draws latencies, and every event is checked against its node's
/// epoch (`Nodes::is_current`) before it is handled, as the world does.
pub fn engine_loop(settings: &HoldSettings, seed: u64) -> HoldResult {
    let mut random = Stream::new(seed, StreamId::Network).fork();
    let (min_ms, max_ms) = (settings.latency_min_ms, settings.latency_max_ms);
    let mut nodes = Nodes::default();
    let server = nodes.add();
    let client_nodes: Vec<NodeId> = (0..settings.clients).map(|_| nodes.add()).collect();
    let mut queue: Queue<HoldEvent> = Queue::default();
    let mut sent = vec![0u32; settings.clients as usize];
    for client in 0..settings.clients {
        for _ in 0..settings.window.min(settings.rounds) {
            let epoch = nodes.epoch(server);
            let time = SimTime::from_ms(random.range_inclusive(min_ms, max_ms));
            queue.push(time, HoldEvent::Request { client, epoch });
            sent[client as usize] += 1;
        }
    }
    while let Some((_, event)) = queue.pop() {
        match event {
            HoldEvent::Request { client, epoch } => {
                if nodes.is_current(server, epoch) {
                    let epoch = nodes.epoch(client_nodes[client as usize]);
                    let delay_ms = random.range_inclusive(min_ms, max_ms);
                    queue.push_after(delay_ms, HoldEvent::Answer { client, epoch });
                }
            }
            HoldEvent::Answer { client, epoch } => {
                let index = client as usize;
                if nodes.is_current(client_nodes[index], epoch) && sent[index] < settings.rounds {
                    sent[index] += 1;
                    let epoch = nodes.epoch(server);
                    let delay_ms = random.range_inclusive(min_ms, max_ms);
                    queue.push_after(delay_ms, HoldEvent::Request { client, epoch });
                }
            }
        }
    }
    HoldResult {
        events: queue.popped_count(),
        end_ms: queue.now().as_ms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: HoldSettings = HoldSettings {
        clients: 50,
        window: 3,
        rounds: 40,
        latency_min_ms: 1,
        latency_max_ms: 10,
    };

    #[test]
    fn bare_and_engine_loops_pop_the_same_events_and_end_at_the_same_time() {
        for seed in [1, 7, 42] {
            let bare = bare_loop(&SMALL, bare_seed(seed));
            let engine = engine_loop(&SMALL, seed);
            assert_eq!(bare, engine, "seed {seed}");
            assert_eq!(bare.events, SMALL.events_expected());
        }
    }

    #[test]
    fn different_seeds_draw_different_latencies() {
        // One client, one message in flight: the end time is the sum of every latency drawn.
        let serial = HoldSettings {
            clients: 1,
            window: 1,
            ..SMALL
        };
        let end_times: std::collections::BTreeSet<u64> = (1..=4)
            .map(|seed| engine_loop(&serial, seed).end_ms)
            .collect();
        assert!(
            end_times.len() > 1,
            "four seeds, one end time: {end_times:?}"
        );
    }

    #[test]
    fn a_window_wider_than_the_rounds_sends_only_the_rounds() {
        let settings = HoldSettings {
            window: 10,
            rounds: 3,
            ..SMALL
        };
        let bare = bare_loop(&settings, bare_seed(5));
        assert_eq!(bare.events, settings.events_expected());
        assert_eq!(bare, engine_loop(&settings, 5));
    }
}
