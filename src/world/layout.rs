//! Micro-layouts: the one place where the simulator chooses how its data sits in memory.
//!
//! A layout here exists only for speed and stays only while callgrind on the day's 4 h cut
//! (`docs/performance.md`) shows it saves at least 3 % of instructions, L1 or L2 data misses
//! per event. Nothing else in `src/` aligns, pads or prefetches (`cargo xtask tidy` checks);
//! the two domain types it relies on only keep their fields in declaration order
//! (`#[repr(C)]` on `gocd::GoAgent` and `component::ArmedTimers`), most-read first.
//!
//! [`CacheLine`] starts a value on a 64-byte cache line. The go-agent process table boxes each
//! process in one, so the fields every ping, poll and reply reads (phase, uuid, id, back-off
//! and the inline timers) fill the agent's first line and the rarely read rest (spilled
//! timers, the ping flag, the registration) its second. With the allocator's placement and the
//! compiler's field order, the hot fields of thousands of agents straddled two lines. Measured
//! (`bench-lto`, callgrind, per event): the day's 4 h cut, L1 data misses 7.101 → 6.635
//! (−6.6 %), instructions and L2 misses unchanged; the ten-times day's 2 h cut, L1 −6.4 % and
//! L2 1.735 → 1.438 (−17.1 %).

use crate::gocd::GoAgent;
use std::ops::{Deref, DerefMut};

/// A value that starts on a cache line (64 bytes, the line of every target the simulator is
/// measured on) and fills whole lines.
#[repr(C, align(64))]
pub(super) struct CacheLine<T>(T);

impl<T> CacheLine<T> {
    /// `value`, placed at the start of a line.
    pub(super) fn new(value: T) -> CacheLine<T> {
        CacheLine(value)
    }
}

impl<T> Deref for CacheLine<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> DerefMut for CacheLine<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.0
    }
}

/// A boxed go-agent takes exactly two lines on a 64-bit target: the hot one and the rest. A
/// field that grows it past two lines fails the build here; one added among the hot fields
/// (before the inline timers' spill) may push them off the first line unnoticed: add fields
/// after the inline timers, or re-measure.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::align_of::<CacheLine<GoAgent>>() == 64);
    assert!(std::mem::size_of::<CacheLine<GoAgent>>() == 128);
};

#[cfg(test)]
mod tests {
    use super::CacheLine;

    #[test]
    fn a_cache_line_value_starts_a_line_and_reads_through() {
        let boxed: Vec<Box<CacheLine<u8>>> = (0..8).map(|i| Box::new(CacheLine::new(i))).collect();
        for (i, value) in boxed.iter().enumerate() {
            let address = std::ptr::from_ref::<CacheLine<u8>>(value).addr();
            assert_eq!(address % 64, 0, "value {i} at {address:#x}");
            assert_eq!(usize::from(***value), i);
        }
        let mut one = CacheLine::new(5u32);
        *one += 1;
        assert_eq!(*one, 6);
        assert_eq!(std::mem::size_of::<CacheLine<u8>>(), 64);
    }
}
