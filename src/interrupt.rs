//! Ctrl-C and SIGTERM for long sweeps: the first one asks the sweep to stop dispatching
//! seeds (the seeds in flight finish and their tables are written, marked `interrupted`, exit
//! 130); the second one exits at once with 130.
//!
//! A sweep calls [`install`] when it starts and asks [`requested`] before it starts each seed.
//! Signals only decide *which* seeds run, never what happens inside one, so determinism holds:
//! the rows written are those an uninterrupted sweep writes for the same seeds.

use std::sync::Once;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

/// The exit code of an interrupted command (128 + SIGINT, as shells report it).
pub(crate) const EXIT_CODE: i32 = 130;

static REQUESTED: AtomicBool = AtomicBool::new(false);
static SIGNALS: AtomicU32 = AtomicU32::new(0);
static INSTALL: Once = Once::new();

/// Route SIGINT and SIGTERM here (once per process; later calls do nothing). Failing to
/// install leaves the default behaviour (the process dies), which is reported, not fatal.
pub(crate) fn install() {
    INSTALL.call_once(|| {
        #[cfg(unix)]
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the action only touches atomics and calls `_exit`, both
            // async-signal-safe.
            #[allow(unsafe_code)]
            let registered = unsafe { signal_hook_registry::register(signal, on_signal) };
            if let Err(error) = registered {
                eprintln!("warning: cannot catch signal {signal}: {error}");
            }
        }
    });
}

#[allow(unsafe_code)]
fn on_signal() {
    if SIGNALS.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: `_exit` is async-signal-safe; a second Ctrl-C means "now".
        #[cfg(unix)]
        unsafe {
            libc::_exit(EXIT_CODE)
        };
    }
    REQUESTED.store(true, Ordering::SeqCst);
}

/// True once a stop was asked for: start no new seed.
pub(crate) fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Ask for a stop as a signal would (for callers that stop for their own reasons, and tests).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}

/// Which seeds ran and which did not, for an interrupted sweep's tables.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Interrupted {
    /// Seeds that ran, in the sweep's order.
    pub done: Vec<u64>,
    /// Planned seeds that did not run, in the sweep's order.
    pub not_done: Vec<u64>,
}

impl Interrupted {
    /// `done` of `planned` (both in the sweep's order); None if every seed ran.
    pub(crate) fn of(planned: &[u64], done: &[u64]) -> Option<Interrupted> {
        if done.len() == planned.len() {
            return None;
        }
        let not_done = planned
            .iter()
            .copied()
            .filter(|seed| !done.contains(seed))
            .collect();
        Some(Interrupted {
            done: done.to_vec(),
            not_done,
        })
    }

    /// One Markdown/terminal line: `interrupted: 12 seeds done, 88 not done (13..100)`.
    pub(crate) fn line(&self) -> String {
        format!(
            "interrupted: {} seeds done, {} not done ({})",
            self.done.len(),
            self.not_done.len(),
            spans(&self.not_done)
        )
    }
}

/// `1..4, 7, 9..10` for sorted seeds (half-open spans, as `--seeds A..B` takes them).
pub(crate) fn spans(seeds: &[u64]) -> String {
    let mut sorted = seeds.to_vec();
    sorted.sort_unstable();
    let mut parts = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end += 1;
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}..{}", end + 1)
        });
        index += 1;
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::Interrupted;

    #[test]
    fn the_line_names_seeds_not_done_as_spans() {
        let planned: Vec<u64> = (1..=10).collect();
        let stopped = Interrupted::of(&planned, &[1, 2, 3, 5]).expect("not every seed ran");
        assert_eq!(stopped.not_done, vec![4, 6, 7, 8, 9, 10]);
        assert_eq!(
            stopped.line(),
            "interrupted: 4 seeds done, 6 not done (4, 6..11)"
        );
        assert_eq!(Interrupted::of(&planned, &planned), None);
    }
}
