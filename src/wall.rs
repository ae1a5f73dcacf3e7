//! Wall-clock timing of whole runs. The CLI, sweeps, the nightly and the benchmarks use it,
//! around a run — never inside one (the simulation's time is `engine::SimTime`). It is the
//! only module outside `live` that reads the real clock, and it builds without `live`.

/// A started wall-clock stopwatch.
pub(crate) struct Stopwatch {
    // Reading the real clock is the point of this type; it never feeds a simulation.
    #[allow(clippy::disallowed_methods)]
    started: std::time::Instant,
}

impl Stopwatch {
    /// Start measuring now.
    #[allow(clippy::disallowed_methods)] // Wall time of a whole run, measured outside it.
    pub(crate) fn start() -> Stopwatch {
        Stopwatch {
            started: std::time::Instant::now(),
        }
    }

    /// Seconds since `start`.
    pub(crate) fn seconds(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }
}
