//! The one place that replaces what the crates under test read from the operating system:
//! the wall clock and entropy. Every other file of this crate denies `unsafe`.
//!
//! The crates read the time through `std::time::SystemTime::now` (kube-lease-manager),
//! `jiff::Timestamp::now` (kube-leader-election, and kube-lease-manager's patches; jiff reads
//! `SystemTime`), and `std::time::Instant::now`, all of which end in libc's `clock_gettime`.
//! They draw random numbers through `rand::rng()` (kube-lease-manager's back-off, its release
//! pause and its random identities), which seeds itself from the `getrandom` crate, which on
//! Linux/glibc looks `getrandom` up with `dlsym(RTLD_DEFAULT, …)`; std's `HashMap` keys come
//! the same way. This module defines both C symbols in the executable, as madsim does:
//!
//! * `clock_gettime`: the executable's definition wins over libc's at link time, so every
//!   call from Rust code lands here;
//! * `getrandom`: exported to the dynamic symbol table (`build.rs` passes
//!   `--export-dynamic-symbol=getrandom` to the linker), so `dlsym` finds it before libc's.
//!
//! On a thread that runs a simulation ([`RunGuard`]), both answer from the run: the time is
//! the run's tokio clock (paused, advanced by tokio's auto-advance to the next timer) since
//! the run began, plus a fixed epoch; the bytes come from a stream seeded with the run's
//! seed. On any other thread they make the real system call, so the command line, the
//! progress output and the test harness keep the real clock.
//!
//! Symbol interposition is process-wide, which is why this runner is a binary of its own and
//! never linked into `elasticsim`.
#![allow(unsafe_code)]

use elasticsim::component::Random;
use elasticsim::engine::{Stream, StreamId};
use std::cell::{Cell, RefCell};

/// The wall clock's reading when a run starts: 2026-01-01T00:00:00Z, in nanoseconds since the
/// Unix epoch. A fixed value, so the Lease timestamps a run writes are the same every time.
pub const EPOCH_NS: u64 = 1_767_225_600 * NANOS_PER_SECOND;

/// The monotonic clock's reading when a run starts (any fixed value far from zero).
const MONOTONIC_BASE_NS: u64 = 1_000_000 * NANOS_PER_SECOND;

const NANOS_PER_SECOND: u64 = 1_000_000_000;

/// How far each reading of a run's clock moves it past the tokio clock: time passes while code
/// runs, and a loop that waits for `now > expiry` without sleeping (kube-lease-manager's
/// watcher, when its sleep until the expiry rounds to zero) would otherwise spin at
/// `now == expiry` forever, tokio's paused clock moving only when every task waits.
const NANOS_PER_READING: u64 = 1_000;

thread_local! {
    /// Set while this thread runs a simulation.
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The run's tokio instant at which its virtual clocks read their base values.
    static ANCHOR: Cell<Option<tokio::time::Instant>> = const { Cell::new(None) };
    /// The last virtual elapsed time computed, answered while a reading is under way (tokio
    /// outside a runtime reads `Instant::now`, which comes back here).
    static LAST_NS: Cell<u64> = const { Cell::new(0) };
    static READING: Cell<bool> = const { Cell::new(false) };
    /// How many times the run's clocks were read.
    static READINGS: Cell<u64> = const { Cell::new(0) };
    /// The run's entropy.
    static ENTROPY: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// While alive, this thread's clocks and entropy are the run's. Create it first thing on the
/// thread that runs one seed (before tokio or rand are touched), and call
/// [`RunGuard::anchor`] inside the runtime before any replica starts.
pub struct RunGuard {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl RunGuard {
    /// Make this thread's clocks and entropy the run's, for `seed`.
    pub fn start(seed: u64) -> RunGuard {
        ENTROPY.with(|entropy| *entropy.borrow_mut() = Some(Stream::new(seed, StreamId::Leader)));
        LAST_NS.with(|last| last.set(0));
        READINGS.with(|readings| readings.set(0));
        ANCHOR.with(|anchor| anchor.set(None));
        ACTIVE.with(|active| active.set(true));
        RunGuard {
            _not_send: std::marker::PhantomData,
        }
    }

    /// From now on the clocks follow the current (paused) tokio runtime's clock.
    pub fn anchor(&self) {
        ANCHOR.with(|anchor| anchor.set(Some(tokio::time::Instant::now())));
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        ACTIVE.with(|active| active.set(false));
        ANCHOR.with(|anchor| anchor.set(None));
        ENTROPY.with(|entropy| *entropy.borrow_mut() = None);
    }
}

/// The run's virtual time since it started, in nanoseconds; `None` off a run's thread.
fn elapsed_ns() -> Option<u64> {
    if !ACTIVE.with(Cell::get) {
        return None;
    }
    if READING.with(Cell::get) {
        return Some(LAST_NS.with(Cell::get));
    }
    READING.with(|reading| reading.set(true));
    let elapsed = ANCHOR.with(Cell::get).map(|anchor| {
        let now = tokio::time::Instant::now();
        u64::try_from(now.saturating_duration_since(anchor).as_nanos()).unwrap_or(u64::MAX)
    });
    READING.with(|reading| reading.set(false));
    let readings = READINGS.with(|readings| {
        readings.set(readings.get() + 1);
        readings.get()
    });
    let elapsed = elapsed.map_or_else(
        || LAST_NS.with(Cell::get),
        |elapsed| elapsed + readings * NANOS_PER_READING,
    );
    LAST_NS.with(|last| last.set(elapsed));
    Some(elapsed)
}

/// What a run's clock `clock` reads, or `None` for a clock a run does not replace (CPU-time
/// clocks) and off a run's thread.
fn virtual_ns(clock: libc::clockid_t) -> Option<u64> {
    let base = match clock {
        libc::CLOCK_REALTIME | libc::CLOCK_REALTIME_COARSE | libc::CLOCK_TAI => EPOCH_NS,
        libc::CLOCK_MONOTONIC
        | libc::CLOCK_MONOTONIC_COARSE
        | libc::CLOCK_MONOTONIC_RAW
        | libc::CLOCK_BOOTTIME => MONOTONIC_BASE_NS,
        _ => return None,
    };
    elapsed_ns().map(|elapsed| base + elapsed)
}

/// libc's `clock_gettime`, answered from the run's clock on a run's thread.
///
/// # Safety
/// As libc's: `tp` must point to a writable `timespec`.
// SAFETY: the symbol has libc's signature and contract, so every caller linked against
// libc's declaration calls it correctly; it never unwinds (no panicking call inside).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn clock_gettime(
    clock: libc::clockid_t,
    tp: *mut libc::timespec,
) -> libc::c_int {
    match virtual_ns(clock) {
        Some(ns) => {
            // SAFETY: the caller passes a writable timespec, as to libc's clock_gettime.
            unsafe {
                (*tp).tv_sec = (ns / NANOS_PER_SECOND) as libc::time_t;
                (*tp).tv_nsec = (ns % NANOS_PER_SECOND) as libc::c_long;
            }
            0
        }
        // determinism-ok: off a run's thread (the command line, the test harness) the real
        // clock is read, by the system call libc's wrapper makes.
        // SAFETY: the arguments are the caller's, passed through unchanged.
        None => unsafe { libc::syscall(libc::SYS_clock_gettime, clock, tp) as libc::c_int },
    }
}

/// libc's `getrandom`, answered from the run's seeded stream on a run's thread.
///
/// # Safety
/// As libc's: `buf` must point to `len` writable bytes.
// SAFETY: the symbol has libc's signature and contract (`dlsym` callers cast it to exactly
// that type); it never unwinds: a busy entropy stream falls back to the system call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn getrandom(
    buf: *mut libc::c_void,
    len: libc::size_t,
    flags: libc::c_uint,
) -> libc::ssize_t {
    let filled = ENTROPY.with(|entropy| {
        let mut entropy = entropy.try_borrow_mut().ok()?;
        let stream = entropy.as_mut()?;
        // SAFETY: the caller passes `len` writable bytes at `buf`, as to libc's getrandom.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), len) };
        for chunk in bytes.chunks_mut(8) {
            let word = stream.next_u64().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
        Some(len as libc::ssize_t)
    });
    match filled {
        Some(filled) => filled,
        // determinism-ok: off a run's thread the kernel's entropy is used, as libc would.
        // SAFETY: the arguments are the caller's, passed through unchanged.
        None => unsafe { libc::syscall(libc::SYS_getrandom, buf, len, flags) as libc::ssize_t },
    }
}

#[cfg(test)]
mod tests {
    use super::{EPOCH_NS, RunGuard};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    // The test reads the clock and entropy the crates read, to show they are the run's.
    #[allow(clippy::disallowed_methods)]
    fn wall_ns() -> u128 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    }

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn a_runs_clock_is_its_tokio_clock_and_its_entropy_its_seed() {
        let draw = |seed| {
            std::thread::spawn(move || {
                let guard = RunGuard::start(seed);
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .start_paused(true)
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    guard.anchor();
                    // The epoch, plus 1 µs per reading (a handful here).
                    let start = wall_ns() - u128::from(EPOCH_NS);
                    let again = wall_ns() - u128::from(EPOCH_NS);
                    assert!(start < 100_000 && again > start, "{start} {again}");
                    tokio::time::sleep(Duration::from_millis(1500)).await;
                    let later = wall_ns() - u128::from(EPOCH_NS) - 1_500_000_000;
                    assert!(later > again && later < 100_000, "{later}");
                });
                // rand's thread generator seeds itself from `getrandom` on first use.
                use rand::RngExt;
                rand::rng().random::<[u64; 2]>()
            })
            .join()
            .unwrap()
        };
        assert_eq!(draw(7), draw(7));
        assert_ne!(draw(7), draw(8));
        // Off a run's thread the clock is the real one (long after 2026-01-01 is not needed:
        // it differs from the fixed epoch).
        assert_ne!(wall_ns(), u128::from(EPOCH_NS));
    }
}
