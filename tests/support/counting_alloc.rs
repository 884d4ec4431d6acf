//! A global allocator that counts: allocation calls, live heap bytes and
//! their peak. Shared by `tests/soak.rs` (heap back to its start),
//! `tests/parse_budget.rs` (the JSON memory bound against real allocations)
//! and `benches/allocations.rs` (allocations per call, bytes per session).
//! The tests reach it as `support::counting_alloc`, the bench with
//! `#[path]`; each that counts installs it with `#[global_allocator]`.
#![allow(unsafe_code, dead_code)] // a GlobalAlloc impl is unsafe by definition

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

/// Counts calls and live bytes, and forwards everything to `System`.
pub(crate) struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static PEAK_BYTES: AtomicIsize = AtomicIsize::new(0);

/// Allocation calls (`alloc` and `realloc`) so far.
pub(crate) fn allocations() -> usize {
    ALLOCATIONS.load(Ordering::Relaxed)
}

/// Heap bytes allocated and not yet freed.
pub(crate) fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// The most live heap bytes since the last [`reset_peak`].
pub(crate) fn peak_bytes() -> isize {
    PEAK_BYTES.load(Ordering::Relaxed)
}

/// Starts a new peak at the current live bytes.
pub(crate) fn reset_peak() {
    PEAK_BYTES.store(live_bytes(), Ordering::Relaxed);
}

fn grew(by: isize) {
    let now = LIVE_BYTES.fetch_add(by, Ordering::Relaxed) + by;
    PEAK_BYTES.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments
// unchanged; the counters are plain atomics and never affect the result.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        grew(layout.size() as isize);
        // SAFETY: forwarded as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // Counted as a fresh block before the old one is freed: the peak of
        // a move, which an in-place grow only undercuts.
        grew(new_size as isize);
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwarded as is.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
