//! A cache of large freed output buffers, reused by later outputs of the same byte size.
//!
//! Programs run many times (training steps, compiled transforms) allocate the same large outputs again
//! and again. Through the system allocator each of them is fresh memory that the kernel must page-fault
//! in, which costs as much as a matrix product on mid-sized outputs. When the last handle to a large
//! CPU buffer drops, its allocation goes to this cache instead; the next output of the same size and
//! alignment takes it back, already mapped. Only buffers of at least [`MIN_POOLED_BYTES`] are cached, at
//! most [`MAX_CACHED_BYTES`] in all (beyond that they are freed), and [`release_cached_buffers`] frees
//! everything the cache holds.

use nabla_core::HostData;
use std::alloc::Layout;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::Mutex;

/// Buffers smaller than this go straight back to the allocator (which handles small sizes well).
pub const MIN_POOLED_BYTES: usize = 64 << 10;

/// The cache frees buffers rather than keep more than this many bytes.
pub const MAX_CACHED_BYTES: usize = 1 << 30;

/// Cached allocations by exact layout (size and alignment); pointers are stored as addresses.
#[derive(Default)]
struct Pool {
    free: HashMap<(usize, usize), Vec<usize>>,
    bytes: usize,
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Pool::default))
}

/// An empty vector with capacity for exactly `n` elements, from the cache when it holds an allocation
/// of that size and alignment.
pub(crate) fn take<U>(n: usize) -> Option<Vec<U>> {
    let layout = Layout::array::<U>(n).ok()?;
    if layout.size() < MIN_POOLED_BYTES {
        return None;
    }
    let addr = with_pool(|pool| {
        let addr = pool.free.get_mut(&(layout.size(), layout.align()))?.pop()?;
        pool.bytes -= layout.size();
        Some(addr)
    })?;
    // SAFETY: `addr` was allocated by the global allocator with exactly `layout` (a vector of some
    // element type with this size and alignment, whose capacity times element size is `layout.size()`),
    // and the cache owned it exclusively; length 0 leaves every element uninitialised.
    Some(unsafe { Vec::from_raw_parts(addr as *mut U, 0, n) })
}

/// Gives the allocation of `v` to the cache (or frees it when the cache is full or it is small).
fn put<T>(v: Vec<T>) {
    let Ok(layout) = Layout::array::<T>(v.capacity()) else {
        return;
    };
    if layout.size() < MIN_POOLED_BYTES {
        return;
    }
    let mut v = ManuallyDrop::new(v);
    let addr = v.as_mut_ptr() as usize;
    let kept = with_pool(|pool| {
        if pool.bytes + layout.size() > MAX_CACHED_BYTES {
            return false;
        }
        pool.bytes += layout.size();
        pool.free
            .entry((layout.size(), layout.align()))
            .or_default()
            .push(addr);
        true
    });
    if !kept {
        // SAFETY: the vector's own allocation, released once (it was not handed to the cache).
        drop(unsafe { Vec::from_raw_parts(addr as *mut T, 0, v.capacity()) });
    }
}

/// Moves the elements' allocation out of `data` (left empty) into the cache.
pub(crate) fn recycle(data: &mut HostData) {
    match data {
        HostData::F16(v) => put(std::mem::take(v)),
        HostData::BF16(v) => put(std::mem::take(v)),
        HostData::F32(v) => put(std::mem::take(v)),
        HostData::F64(v) => put(std::mem::take(v)),
        HostData::C64(v) => put(std::mem::take(v)),
        HostData::C128(v) => put(std::mem::take(v)),
        HostData::I32(v) => put(std::mem::take(v)),
        HostData::I64(v) => put(std::mem::take(v)),
        HostData::U8(v) => put(std::mem::take(v)),
        HostData::Bool(v) => put(std::mem::take(v)),
    }
}

/// Bytes the cache currently holds.
///
/// ```
/// nabla_cpu::release_cached_buffers();
/// assert_eq!(nabla_cpu::cached_bytes(), 0);
/// ```
pub fn cached_bytes() -> usize {
    with_pool(|pool| pool.bytes)
}

/// Frees every buffer the cache holds (they are otherwise kept for reuse by later outputs).
pub fn release_cached_buffers() {
    let free = with_pool(|pool| {
        pool.bytes = 0;
        std::mem::take(&mut pool.free)
    });
    for ((size, align), addrs) in free {
        let layout = Layout::from_size_align(size, align).expect("a layout the cache stored");
        for addr in addrs {
            // SAFETY: each address was allocated by the global allocator with `layout` and is owned by
            // the cache alone.
            unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuStorage;

    #[test]
    fn a_dropped_large_buffer_is_reused_by_the_next_output_of_its_size() {
        // An odd size no other test allocates, so concurrent tests cannot take the buffer first.
        let n = 123_457;
        let storage = CpuStorage::from_vec(vec![7i64; n]);
        let addr = storage.typed::<i64>("test").unwrap().as_ptr() as usize;
        drop(storage);
        let v: Vec<i64> = take(n).expect("the freed buffer is cached");
        assert_eq!((v.as_ptr() as usize, v.len(), v.capacity()), (addr, 0, n));
        // Small buffers are not cached.
        let small = CpuStorage::from_vec(vec![1u8; 16]);
        drop(small);
        assert!(take::<u8>(16).is_none());
    }

    #[test]
    fn into_host_keeps_the_data_and_caches_nothing() {
        let n = 98_765;
        let storage = CpuStorage::from_vec(vec![3.5f64; n]);
        let host = storage.clone().into_host(); // shared: a copy
        assert_eq!(host.len(), n);
        let owned = storage.into_host(); // the only handle: moved out, not recycled
        assert_eq!(owned.get(n - 1), Some(nabla_core::Scalar::from(3.5f64)));
        assert!(take::<f64>(n).is_none());
    }
}
