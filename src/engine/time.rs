//! Simulated time: integer milliseconds since the start of the run.

use std::fmt;

/// A point in simulated time, in milliseconds since the run started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SimTime(u64);

impl SimTime {
    /// The start of every run.
    pub(crate) const ZERO: SimTime = SimTime(0);
    /// The latest representable time (never reached by a run).
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// The instant `ms` simulated milliseconds after the start.
    pub const fn from_ms(ms: u64) -> SimTime {
        SimTime(ms)
    }

    /// Simulated milliseconds since the start.
    pub const fn as_ms(self) -> u64 {
        self.0
    }

    /// Seconds, for reports.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1000.0
    }

    /// `self + ms`, saturating (a timer at "never" stays at the end of time).
    #[must_use]
    pub(crate) const fn plus_ms(self, ms: u64) -> SimTime {
        SimTime(self.0.saturating_add(ms))
    }

    /// Milliseconds from `earlier` to `self`; zero if `earlier` is later.
    pub(crate) const fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:03}s", self.0 / 1000, self.0 % 1000)
    }
}
