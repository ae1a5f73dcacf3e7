//! A hint to the processor: start loading a value's cache lines now, because the program will
//! read them soon. The event loop uses it for the next event's target (a go-agent, a server
//! record) while the current event runs, so the load overlaps with work instead of stalling it.
//! A prefetch changes no value the program reads: it cannot change a run.

/// Start loading every cache line of `value` (on x86-64; a no-op elsewhere).
#[inline(always)]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        let start = (value as *const T).cast::<i8>();
        let mut offset = 0;
        while offset < std::mem::size_of::<T>().max(1) {
            // SAFETY: `_mm_prefetch` only hints the cache: it never faults, even on an
            // address it cannot load, and reads nothing the program sees. SSE, which it
            // needs, is part of every x86-64 target.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(start.wrapping_add(offset)) };
            offset += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}
