//! The one shape of every sans-IO model component: the allocator, the GoCD server, the
//! go-agent, the Kubernetes API server and kubelets, and the leader replica (its elector and
//! runner inside). `docs/architecture.md` ("One component shape") lists each one's inputs and
//! outputs.
//!
//! A component never reads a clock and never owns a random generator: the driver hands it the
//! simulated time and a [`Random`] with every input. Its timers are absolute times on that
//! clock, returned in its output; [`Component::next_deadline`] says when it next needs to be
//! woken, so a driver without a shared event queue can run it too.

/// A seeded source of randomness, passed in with every input. Implementors supply the raw
/// 64-bit draw; every derived draw is defined once, here, so two implementors fed the same raw
/// draws give the same values.
pub trait Random {
    /// The next raw 64-bit draw.
    fn next_u64(&mut self) -> u64;

    /// Uniform in `[0, 1)` (the top 53 bits of one raw draw).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in `[0, bound)`; `bound` must be positive.
    fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "below(0)");
        // Lemire's multiply-shift; the bias is below 2^-64 per draw, irrelevant here.
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
    }

    /// Uniform in `[min, max]` (inclusive).
    fn range_inclusive(&mut self, min: u64, max: u64) -> u64 {
        assert!(min <= max, "range_inclusive({min}, {max})");
        if min == max {
            min
        } else {
            min + self.below(max - min + 1)
        }
    }

    /// True with probability `p` (clamped to [0, 1]).
    fn chance(&mut self, p: f64) -> bool {
        if p <= 0.0 {
            false
        } else if p >= 1.0 {
            true
        } else {
            self.unit() < p
        }
    }

    /// Exponentially distributed with the given mean, rounded to whole milliseconds.
    fn exponential_ms(&mut self, mean_ms: f64) -> u64 {
        let u = 1.0 - self.unit(); // (0, 1]
        (-u.ln() * mean_ms).round().min(1e15) as u64
    }
}

/// A sans-IO state machine: one entry point for every input, absolute timers, and the time it
/// next needs to be woken.
pub trait Component {
    /// Everything that can happen to the component: a message, an answer, a timer firing, a
    /// fault.
    type Input;
    /// What the component asks of the world in one step (messages, calls, timers at absolute
    /// times, observations). The driver drains it after each call.
    type Output;

    /// Handle one input at `now_ms` on the component's clock (simulated milliseconds; a leader
    /// replica's own, possibly skewed, local clock). `now_ms` never goes backwards.
    fn handle(
        &mut self,
        now_ms: u64,
        input: Self::Input,
        random: &mut dyn Random,
        out: &mut Self::Output,
    );

    /// The earliest absolute time at which a timer this component asked for is due and has not
    /// fired yet; `None` when it only waits for inputs.
    fn next_deadline(&self) -> Option<u64>;
}

/// The timers a component asked for and that have not fired yet: what `next_deadline` reads.
/// Unordered, for components that hold a handful at a time (a go-agent, the server, a leader
/// replica): arming fills a free place, firing is a short search, and the deadline (asked by
/// checks only) the least due time. The first [`INLINE_TIMERS`] live inside the component, so
/// firing one touches no other allocation (a large run holds thousands of go-agents, and a
/// separate buffer per agent was a cache miss at nearly every agent event); more spill to a
/// vector. A component with a timer per object (the kubelets, one per pod) needs an ordered
/// structure instead.
///
/// Fields sit in memory in the order declared (`repr(C)`): the inline places first and the
/// spill last, so that an owner laid out by `world::layout` keeps the inline ones on its hot
/// cache line.
#[derive(Clone, Debug)]
#[repr(C)]
pub(crate) struct ArmedTimers<T> {
    /// Each inline place's due time, meaningful where `kinds` holds a timer.
    due: [u64; INLINE_TIMERS],
    /// Each inline place's timer; `None` for a free place.
    kinds: [Option<T>; INLINE_TIMERS],
    spilled: Vec<(u64, T)>,
}

/// Timers held without an allocation: a go-agent holds its ping and one other, rarely a
/// stale one besides.
pub(crate) const INLINE_TIMERS: usize = 3;

impl<T> Default for ArmedTimers<T> {
    fn default() -> Self {
        ArmedTimers {
            due: [0; INLINE_TIMERS],
            kinds: std::array::from_fn(|_| None),
            spilled: Vec::new(),
        }
    }
}

impl<T: Copy + PartialEq> ArmedTimers<T> {
    /// `timer` was asked for at `at_ms`.
    pub(crate) fn arm(&mut self, at_ms: u64, timer: T) {
        match self.kinds.iter().position(Option::is_none) {
            Some(place) => {
                self.due[place] = at_ms;
                self.kinds[place] = Some(timer);
            }
            None => self.spilled.push((at_ms, timer)),
        }
    }

    /// A timer fired: forget one armed timer that `is_it(due, timer)` picks, and return its
    /// due time (`None` if none was armed). Callers pick exactly one, or timers alike in due
    /// time and kind, so which of equals goes does not matter.
    pub(crate) fn fired(&mut self, is_it: impl Fn(u64, T) -> bool) -> Option<u64> {
        let inline = (0..INLINE_TIMERS)
            .find(|&place| self.kinds[place].is_some_and(|timer| is_it(self.due[place], timer)));
        if let Some(place) = inline {
            self.kinds[place] = None;
            return Some(self.due[place]);
        }
        let index = self
            .spilled
            .iter()
            .position(|&(at_ms, timer)| is_it(at_ms, timer))?;
        Some(self.spilled.swap_remove(index).0)
    }

    /// The earliest due time of the timers still armed.
    pub(crate) fn next_deadline(&self) -> Option<u64> {
        let inline = (self.due.iter().zip(&self.kinds))
            .filter(|(_, timer)| timer.is_some())
            .map(|(&at_ms, _)| at_ms);
        inline
            .chain(self.spilled.iter().map(|&(at_ms, _)| at_ms))
            .min()
    }

    /// Forget every timer (the process died: its timers never fire).
    pub(crate) fn clear(&mut self) {
        self.kinds = [None; INLINE_TIMERS];
        self.spilled.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::{ArmedTimers, Random};

    #[test]
    fn armed_timers_fire_by_choice_and_the_deadline_is_the_least_left() {
        let mut timers = ArmedTimers::default();
        timers.arm(30, 'a');
        timers.arm(10, 'b');
        timers.arm(20, 'a');
        assert_eq!(timers.next_deadline(), Some(10));
        assert_eq!(timers.fired(|at, t| at == 20 && t == 'a'), Some(20));
        assert_eq!(timers.fired(|_, t| t == 'b'), Some(10));
        assert_eq!(timers.next_deadline(), Some(30));
        assert_eq!(timers.fired(|_, t| t == 'b'), None);
        timers.clear();
        assert_eq!(timers.next_deadline(), None);
    }

    /// More timers than fit inline spill over, and fire and count as the inline ones do.
    #[test]
    fn armed_timers_past_the_inline_places_spill_and_fire_alike() {
        let mut timers = ArmedTimers::default();
        for at in [50, 40, 30, 20, 10] {
            timers.arm(at, at / 10);
        }
        assert_eq!(timers.next_deadline(), Some(10));
        assert_eq!(timers.fired(|_, t| t == 1), Some(10));
        assert_eq!(timers.fired(|_, t| t == 5), Some(50));
        assert_eq!(timers.next_deadline(), Some(20));
        timers.arm(60, 6);
        for (t, at) in [(2, 20), (3, 30), (4, 40), (6, 60)] {
            assert_eq!(timers.fired(|_, armed| armed == t), Some(at));
        }
        assert_eq!(timers.next_deadline(), None);
        assert_eq!(timers.fired(|_, _| true), None);
    }

    /// A counter: raw draws 0, 2^62, 2^63, 3·2^62, … in turn.
    struct Quarters(u64);

    impl Random for Quarters {
        fn next_u64(&mut self) -> u64 {
            let draw = self.0 << 62;
            self.0 += 1;
            draw
        }
    }

    #[test]
    fn derived_draws_follow_from_the_raw_draw() {
        let mut r = Quarters(1);
        assert_eq!(r.unit(), 0.25);
        assert_eq!(r.below(8), 4);
        assert_eq!(r.range_inclusive(10, 13), 13);
        assert!(!r.chance(0.0) && r.chance(1.0));
        let mut r = Quarters(2);
        assert_eq!(r.exponential_ms(1000.0), 693);
    }
}
