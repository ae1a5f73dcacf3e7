//! Rule 9's fairness: the jobs the pending limit turned away go first when room frees.
//!
//! The server resends a waiting job's create-agent on its own period, so each job's request
//! arrives at its own phase of that period. Under a full `pending_pods_count`, a job whose
//! phase keeps landing just after the others filled the room can wait for ever while younger
//! jobs, arriving a little later, take every slot (found by `scenarios/explore/elastic.toml`
//! with reuse switched off and a low limit). A job turned away is therefore remembered with
//! its request, and the room a younger job's create-agent finds makes the oldest waiting
//! job's pod first, the younger job's own pod following while room remains (`create.rs`):
//! every slot is used, in the order the jobs were scheduled. A job that
//! stops asking (cancelled while scheduled) is forgotten after [`TURN_HELD_MS`], one served
//! (given an agent) at once.

use std::collections::BTreeMap;

/// How long a turned-away job keeps its turn without asking again: longer than the server's
/// create-agent resend period (as the claim duration is).
pub(crate) const TURN_HELD_MS: u64 = super::CLAIM_DURATION_MS;

/// The jobs the limit turned away, by job id (the server numbers jobs in scheduling order,
/// so a smaller id is an older job), each with the time of its last refusal and what is
/// needed to make its pod (`T`).
#[derive(Debug)]
pub(crate) struct Turns<T> {
    turned_away: BTreeMap<u64, (u64, T)>,
}

impl<T> Default for Turns<T> {
    fn default() -> Self {
        Turns {
            turned_away: BTreeMap::new(),
        }
    }
}

impl<T> Turns<T> {
    /// `job` asks again: its turn is now (it is remembered again if turned away again).
    pub(crate) fn asking(&mut self, job: u64) {
        self.turned_away.remove(&job);
    }

    /// The limit turned `job` away at `now_ms`; `waiting` makes its pod when its turn comes.
    pub(crate) fn turned_away(&mut self, job: u64, now_ms: u64, waiting: T) {
        self.turned_away.insert(job, (now_ms, waiting));
    }

    /// Take the turn of the oldest job, older than `job`, turned away within
    /// [`TURN_HELD_MS`] of `now_ms`, not `served`, and whose waiting request `fits` (the
    /// caller's test that it is still current): the room `job` found is its. Turns held too
    /// long, or of served jobs, are forgotten as the walk meets them.
    pub(crate) fn take_ahead_of(
        &mut self,
        job: u64,
        now_ms: u64,
        served: impl Fn(u64) -> bool,
        fits: impl Fn(&T) -> bool,
    ) -> Option<(u64, T)> {
        let mut ended = Vec::new();
        let mut taken = None;
        for (older, (at_ms, waiting)) in self.turned_away.range(..job) {
            if served(*older) || now_ms.saturating_sub(*at_ms) > TURN_HELD_MS {
                ended.push(*older);
            } else if fits(waiting) {
                taken = Some(*older);
                break;
            }
        }
        for older in ended {
            self.turned_away.remove(&older);
        }
        let older = taken?;
        let (_, waiting) = self.turned_away.remove(&older)?;
        Some((older, waiting))
    }
}

#[cfg(test)]
mod tests {
    use super::{TURN_HELD_MS, Turns};

    #[test]
    fn the_room_a_younger_job_finds_goes_to_the_oldest_job_turned_away_once() {
        let mut turns = Turns::default();
        turns.turned_away(7, 1_000, "seven");
        turns.turned_away(5, 2_000, "five");
        assert_eq!(
            turns.take_ahead_of(9, 3_000, |_| false, |_| true),
            Some((5, "five"))
        );
        // The turn is used: the next room goes to the next oldest.
        assert_eq!(
            turns.take_ahead_of(9, 3_000, |_| false, |_| true),
            Some((7, "seven"))
        );
        assert_eq!(turns.take_ahead_of(9, 3_000, |_| false, |_| true), None);
        // An older job than every turned-away one is not held back.
        turns.turned_away(5, 2_000, "five");
        assert_eq!(turns.take_ahead_of(4, 3_000, |_| false, |_| true), None);
        assert_eq!(turns.take_ahead_of(5, 3_000, |_| false, |_| true), None);
    }

    #[test]
    fn a_turn_whose_request_does_not_fit_the_room_is_passed_over() {
        let mut turns = Turns::default();
        turns.turned_away(5, 0, "old config");
        turns.turned_away(6, 0, "new config");
        let fits = |waiting: &&str| *waiting == "new config";
        assert_eq!(
            turns.take_ahead_of(9, 1_000, |_| false, fits),
            Some((6, "new config"))
        );
        assert_eq!(turns.take_ahead_of(9, 1_000, |_| false, fits), None);
    }

    #[test]
    fn a_job_that_asks_again_or_is_served_or_stops_asking_holds_no_turn() {
        let mut turns = Turns::default();
        turns.turned_away(5, 0, ());
        turns.asking(5);
        assert_eq!(turns.take_ahead_of(9, 1_000, |_| false, |_| true), None);
        turns.turned_away(5, 0, ());
        assert_eq!(
            turns.take_ahead_of(9, 1_000, |job| job == 5, |_| true),
            None
        );
        turns.turned_away(6, 0, ());
        assert_eq!(
            turns.take_ahead_of(9, TURN_HELD_MS, |_| false, |_| true),
            Some((6, ()))
        );
        turns.turned_away(6, 0, ());
        assert_eq!(
            turns.take_ahead_of(9, TURN_HELD_MS + 1, |_| false, |_| true),
            None
        );
    }
}
