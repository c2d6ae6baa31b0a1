//! The peak heap memory of a closure on the current thread: a global allocator that counts each
//! thread's live bytes, so tests running in parallel do not see each other's allocations.
//!
//! Shared by the test binaries of nabla-data and nabla-nn (the latter includes this file with
//! `#[path]`); declaring the module installs [`Counting`] as the binary's global allocator, so a
//! binary that includes it must not declare another.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the live and peak bytes of each thread.
struct Counting;

/// Counts each thread's heap bytes, so tests can bound what a reader or loader holds.
#[global_allocator]
static ALLOCATOR: Counting = Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn record(delta: isize) {
    // `try_with`: allocations while the thread's locals are torn down are not counted.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded to `System` unchanged; the counting touches only `Cell<isize>`
// thread-locals with const initialisers, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            record(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            record(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's guarantees.
        unsafe { System.dealloc(ptr, layout) };
        record(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            record(new_size as isize - layout.size() as isize);
        }
        p
    }
}

/// Runs `f` and returns its result with the most heap bytes it held at once on this thread (beyond
/// what was live when it started).
pub fn peak_bytes<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let result = f();
    let peak = PEAK.with(Cell::get);
    (result, (peak - start).max(0) as usize)
}
