//! A cache of large freed host buffers, reused by later outputs of the same byte size.
//!
//! Programs run many times (training steps, compiled transforms) allocate the same large outputs again
//! and again. Through the system allocator each of them is fresh memory that the kernel must zero and
//! page-fault in, which costs as much as a matrix product on mid-sized outputs. When the last handle to
//! a large host buffer drops (the CPU backend's storage calls `recycle`), its allocation goes to this
//! cache instead; the next output of the same size and alignment takes it back (`take`), already
//! mapped. Extension host kernels run by the CPU backend allocate their outputs through the allocator
//! it hands them (`CachedAllocator`), so that their buffers circulate rather than pile up.
//!
//! Only buffers of at least [`MIN_POOLED_BYTES`] are cached. The cache's capacity follows the
//! program's working set, as PyTorch's caching allocator keeps freed blocks: it starts at
//! [`INITIAL_CACHED_BYTES`], and when the cache had to free a buffer of some size to stay under its
//! capacity and that size is then asked for again (a step's working set is larger than the cache),
//! the capacity grows by that size, up to half the allocation limit
//! ([`nabla_core::max_allocation_bytes`], the machine's memory unless set). When a new buffer would
//! exceed the capacity, the buffers cached longest ago are freed first, so sizes a program stopped
//! using (the last, shorter batch of an epoch, say) do not pile up. [`release_cached_buffers`] frees
//! everything the cache holds; [`buffer_cache_stats`] tells its size, capacity, high-water mark and
//! hit rate.

use nabla_core::{HostAllocator, HostData};
use std::alloc::Layout;
use std::collections::{HashMap, VecDeque};
use std::mem::ManuallyDrop;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Buffers smaller than this go straight back to the allocator (which handles small sizes well).
pub const MIN_POOLED_BYTES: usize = 64 << 10;

/// The cache's capacity before it has learnt the program's working set; it never shrinks below it.
pub const INITIAL_CACHED_BYTES: usize = 256 << 20;

/// How many evicted sizes the cache remembers (to recognise a size asked for again).
const MAX_GHOSTS: usize = 4096;

/// What the buffer cache has done since the process started (see [`buffer_cache_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferCacheStats {
    /// Bytes the cache holds now.
    pub cached_bytes: usize,
    /// Buffers the cache holds now.
    pub cached_buffers: usize,
    /// The most bytes it may hold now (grown to the working set, see the module documentation).
    pub capacity_bytes: usize,
    /// The most bytes it has held at once.
    pub high_water_bytes: usize,
    /// Requests for a large buffer that a cached buffer answered.
    pub hits: u64,
    /// Requests for a large buffer that needed fresh memory.
    pub misses: u64,
    /// Bytes of those fresh buffers.
    pub fresh_bytes: u64,
    /// Buffers freed to keep the cache under its capacity.
    pub evictions: u64,
}

impl BufferCacheStats {
    /// The share of large-buffer requests answered from the cache (1 when there were none).
    pub fn hit_rate(&self) -> f64 {
        match self.hits + self.misses {
            0 => 1.0,
            all => self.hits as f64 / all as f64,
        }
    }
}

/// Size and alignment of a cached allocation.
type Key = (usize, usize);

/// Cached allocations by exact layout; pointers are stored as addresses, each with the sequence number
/// of its arrival. `order` lists arrivals oldest first; entries whose buffer was taken since are
/// skipped (and compacted away) when the cache evicts.
#[derive(Default)]
struct Pool {
    free: HashMap<Key, Vec<(u64, usize)>>,
    order: VecDeque<(u64, Key)>,
    next: u64,
    bytes: usize,
    buffers: usize,
    /// The capacity learnt so far beyond [`INITIAL_CACHED_BYTES`].
    grown: usize,
    /// Sizes evicted and not asked for since, with how many buffers of each.
    ghosts: HashMap<Key, u32>,
    stats: BufferCacheStats,
}

impl Pool {
    /// The most bytes the cache may hold now.
    fn capacity(&self) -> usize {
        INITIAL_CACHED_BYTES.saturating_add(self.grown)
    }

    /// Records a request for `key` that no cached buffer answered; grows the capacity when the cache
    /// had evicted a buffer of that size (so it was too small for the program's working set).
    fn missed(&mut self, key: Key) {
        self.stats.misses += 1;
        self.stats.fresh_bytes += key.0 as u64;
        let Some(count) = self.ghosts.get_mut(&key) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.ghosts.remove(&key);
        }
        let most = (nabla_core::max_allocation_bytes() / 2).max(INITIAL_CACHED_BYTES);
        self.grown = self
            .grown
            .saturating_add(key.0)
            .min(most - INITIAL_CACHED_BYTES);
    }

    /// Remembers that a buffer of `key`'s size was evicted.
    fn remember_evicted(&mut self, key: Key) {
        self.stats.evictions += 1;
        if self.ghosts.len() >= MAX_GHOSTS && !self.ghosts.contains_key(&key) {
            self.ghosts.clear();
        }
        *self.ghosts.entry(key).or_default() += 1;
    }

    /// Removes the oldest cached buffer and returns it, or `None` when the cache is empty.
    fn evict_oldest(&mut self) -> Option<(Key, usize)> {
        while let Some((seq, key)) = self.order.pop_front() {
            let Some(list) = self.free.get_mut(&key) else {
                continue;
            };
            let Some(pos) = list.iter().position(|&(s, _)| s == seq) else {
                continue; // taken since it arrived
            };
            let (_, addr) = list.remove(pos);
            self.bytes -= key.0;
            self.buffers -= 1;
            self.remember_evicted(key);
            return Some((key, addr));
        }
        None
    }

    /// Drops records of buffers that were taken, once they outnumber the cached buffers.
    fn compact(&mut self) {
        if self.order.len() > 2 * self.buffers + 64 {
            let free = &self.free;
            self.order.retain(|(seq, key)| {
                free.get(key)
                    .is_some_and(|list| list.iter().any(|&(s, _)| s == *seq))
            });
        }
    }
}

/// Frees an allocation the cache owned.
///
/// # Safety
/// `addr` must have been allocated by the global allocator with the layout `key` describes and be
/// owned by the caller alone.
unsafe fn free_allocation(key: Key, addr: usize) {
    let layout = Layout::from_size_align(key.0, key.1).expect("a layout the cache stored");
    // SAFETY: guaranteed by the caller.
    unsafe { std::alloc::dealloc(addr as *mut u8, layout) };
}

static POOL: Mutex<Option<Pool>> = Mutex::new(None);

fn with_pool<R>(f: impl FnOnce(&mut Pool) -> R) -> R {
    let mut guard = POOL.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Pool::default))
}

/// An empty vector with capacity for exactly `n` elements, from the cache when it holds an allocation
/// of that size and alignment (`None` otherwise, and always for buffers under [`MIN_POOLED_BYTES`]).
pub(crate) fn take<U>(n: usize) -> Option<Vec<U>> {
    let addr = take_allocation(Layout::array::<U>(n).ok()?)?;
    // SAFETY: `addr` was allocated by the global allocator with exactly the layout of `n` elements of
    // `U` (a vector of some element type with this size and alignment, whose capacity times element
    // size is the layout's size), and the cache owned it exclusively; length 0 leaves every element
    // uninitialised.
    Some(unsafe { Vec::from_raw_parts(addr.as_ptr().cast::<U>(), 0, n) })
}

/// Removes a cached allocation of exactly `layout` from the cache and hands it over.
fn take_allocation(layout: Layout) -> Option<NonNull<u8>> {
    if layout.size() < MIN_POOLED_BYTES {
        return None;
    }
    let key = (layout.size(), layout.align());
    let addr = with_pool(|pool| {
        let Some((_, addr)) = pool.free.get_mut(&key).and_then(Vec::pop) else {
            pool.missed(key);
            return None;
        };
        pool.stats.hits += 1;
        pool.bytes -= layout.size();
        pool.buffers -= 1;
        pool.compact();
        Some(addr)
    })?;
    NonNull::new(addr as *mut u8)
}

/// The allocator the CPU backend gives extension host kernels: large outputs come from the cache.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CachedAllocator;

// SAFETY: the cache hands out allocations of exactly the requested layout, made by the global
// allocator and owned by the cache alone until taken.
unsafe impl HostAllocator for CachedAllocator {
    fn take(&self, layout: Layout) -> Option<NonNull<u8>> {
        take_allocation(layout)
    }
}

/// Gives the allocation of `v` to the cache (or frees it when the cache is full or it is small): a
/// kernel's large scratch buffer, say, so that its next call finds the memory mapped.
pub(crate) fn put<T>(v: Vec<T>) {
    let Ok(layout) = Layout::array::<T>(v.capacity()) else {
        return;
    };
    if layout.size() < MIN_POOLED_BYTES {
        return;
    }
    let key = (layout.size(), layout.align());
    let addr = ManuallyDrop::new(v).as_ptr() as usize;
    let evicted = with_pool(|pool| {
        if key.0 > pool.capacity() {
            // Larger than the whole cache: freed at once, remembered as evicted.
            pool.remember_evicted(key);
            return vec![(key, addr)];
        }
        let mut evicted = Vec::new();
        while pool.bytes + key.0 > pool.capacity() {
            match pool.evict_oldest() {
                Some(old) => evicted.push(old),
                None => break,
            }
        }
        let seq = pool.next;
        pool.next += 1;
        pool.bytes += key.0;
        pool.buffers += 1;
        pool.stats.high_water_bytes = pool.stats.high_water_bytes.max(pool.bytes);
        pool.free.entry(key).or_default().push((seq, addr));
        pool.order.push_back((seq, key));
        evicted
    });
    for (key, addr) in evicted {
        // SAFETY: evicted from the cache (or never admitted), which owned it; allocated by the global
        // allocator with `key`'s layout (a vector of plain numbers, which need no drop).
        unsafe { free_allocation(key, addr) };
    }
}

/// Moves the elements' allocation out of `data` (left empty) into the cache.
pub(crate) fn recycle(data: &mut HostData) {
    nabla_core::with_host_data!(data, v => put(std::mem::take(v)))
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

/// What the buffer cache holds and has done: its size, capacity and high-water mark, and how many
/// requests for large buffers it answered (its hit rate).
///
/// ```
/// let stats = nabla_cpu::buffer_cache_stats();
/// assert!(stats.cached_bytes <= stats.capacity_bytes);
/// assert!((0.0..=1.0).contains(&stats.hit_rate()));
/// ```
pub fn buffer_cache_stats() -> BufferCacheStats {
    with_pool(|pool| BufferCacheStats {
        cached_bytes: pool.bytes,
        cached_buffers: pool.buffers,
        capacity_bytes: pool.capacity(),
        ..pool.stats
    })
}

/// Frees every buffer the cache holds (they are otherwise kept for reuse by later outputs); the
/// capacity it has learnt stays.
pub fn release_cached_buffers() {
    let free = with_pool(|pool| {
        pool.bytes = 0;
        pool.buffers = 0;
        pool.order.clear();
        std::mem::take(&mut pool.free)
    });
    for (key, addrs) in free {
        for (_, addr) in addrs {
            // SAFETY: each address was allocated by the global allocator with `key`'s layout and is
            // owned by the cache alone.
            unsafe { free_allocation(key, addr) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gives `v`'s allocation to the cache, as dropping the last CPU buffer handle does.
    fn drop_into_cache(v: Vec<i64>) -> usize {
        let addr = v.as_ptr() as usize;
        recycle(&mut HostData::I64(v));
        addr
    }

    #[test]
    fn a_dropped_large_buffer_is_reused_by_the_next_output_of_its_size() {
        // An odd size no other test allocates, so concurrent tests cannot take the buffer first.
        let n = 123_457;
        let addr = drop_into_cache(vec![7i64; n]);
        let v: Vec<i64> = take(n).expect("the freed buffer is cached");
        assert_eq!((v.as_ptr() as usize, v.len(), v.capacity()), (addr, 0, n));
        // Small buffers are not cached.
        recycle(&mut HostData::U8(vec![1u8; 16]));
        assert!(take::<u8>(16).is_none());
    }

    #[test]
    fn the_cache_stays_under_its_cap_by_freeing_its_oldest_buffers() {
        // Odd element counts no other test allocates; 40 buffers of 8 MiB and a bit are more than the
        // cap holds.
        let n = (8 << 20) / 8 + 3;
        let count = INITIAL_CACHED_BYTES / (n * 8) + 8;
        let addrs: Vec<usize> = (0..count)
            .map(|i| drop_into_cache(vec![i as i64; n]))
            .collect();
        let stats = buffer_cache_stats();
        assert!(stats.cached_bytes <= stats.capacity_bytes);
        // The newest buffer is still cached (the oldest ones made room for it).
        let newest = *addrs.last().unwrap();
        let mut found = false;
        while let Some(v) = take::<i64>(n) {
            found |= v.as_ptr() as usize == newest;
            drop(v);
        }
        assert!(found);
    }
}
