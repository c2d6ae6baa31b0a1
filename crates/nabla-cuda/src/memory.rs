//! The stream-ordered caching allocator: device memory comes from the driver's `cuMemAllocAsync` on the
//! backend's one stream, and a freed block goes to a cache keyed by its rounded size instead of back to
//! the driver, so the next output of that size takes it without a driver call. Every kernel runs on
//! the same stream, so a block handed out again is only touched after the work that used it before:
//! no event is needed, as in PyTorch's allocator for a single stream.
//!
//! Sizes round up to 512 bytes below 1 MiB and to 2 MiB above (PyTorch's granularity), so that
//! slightly different sizes share blocks. When the driver refuses an allocation, the cache is freed
//! and the allocation tried once more. [`CudaMemoryStats`] gives the live bytes, the high-water mark,
//! the cached bytes and the hit rate.

use cudarc::driver::{CudaStream, result as drv};
use nabla_core::{Error, Result};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Rounding below [`LARGE`]: 512 bytes.
const SMALL_GRANULE: usize = 512;
/// Sizes from here on round to [`LARGE_GRANULE`].
const LARGE: usize = 1 << 20;
/// Rounding of large blocks: 2 MiB.
const LARGE_GRANULE: usize = 2 << 20;

/// What the allocator holds and has done since the backend was opened.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CudaMemoryStats {
    /// Bytes of blocks held by live buffers (rounded sizes).
    pub live_bytes: usize,
    /// The largest `live_bytes` seen (the high-water mark).
    pub peak_bytes: usize,
    /// Bytes of freed blocks kept for reuse.
    pub cached_bytes: usize,
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests that needed memory from the driver.
    pub misses: u64,
}

impl CudaMemoryStats {
    /// The share of requests answered from the cache (1 when there were none).
    pub fn hit_rate(&self) -> f64 {
        match self.hits + self.misses {
            0 => 1.0,
            all => self.hits as f64 / all as f64,
        }
    }
}

/// The size a request of `bytes` is served with.
fn rounded(bytes: usize) -> Option<usize> {
    let granule = if bytes < LARGE {
        SMALL_GRANULE
    } else {
        LARGE_GRANULE
    };
    bytes.max(1).checked_next_multiple_of(granule)
}

#[derive(Default)]
struct Cache {
    free: HashMap<usize, Vec<u64>>,
    stats: CudaMemoryStats,
}

/// The allocator of one backend (shared by its buffers, which give their blocks back on drop).
pub(crate) struct Allocator {
    stream: Arc<CudaStream>,
    cache: Mutex<Cache>,
}

impl Allocator {
    pub(crate) fn new(stream: Arc<CudaStream>) -> Arc<Allocator> {
        Arc::new(Allocator {
            stream,
            cache: Mutex::new(Cache::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A block of at least `bytes` bytes (uninitialised).
    pub(crate) fn alloc(self: &Arc<Self>, op: &'static str, bytes: usize) -> Result<DeviceBlock> {
        let size = rounded(bytes).ok_or_else(|| {
            Error::invalid(op, format!("a device buffer of {bytes} bytes is too large"))
        })?;
        {
            let mut cache = self.lock();
            if let Some(ptr) = cache.free.get_mut(&size).and_then(Vec::pop) {
                cache.stats.hits += 1;
                cache.stats.cached_bytes -= size;
                cache.stats.live_bytes += size;
                cache.stats.peak_bytes = cache.stats.peak_bytes.max(cache.stats.live_bytes);
                return Ok(self.block(ptr, size));
            }
        }
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| crate::driver_error("binding the context", e))?;
        // SAFETY: the context is current; the block is freed on this stream when the cache releases it.
        let ptr = match unsafe { drv::malloc_async(self.stream.cu_stream(), size) } {
            Ok(p) => p,
            Err(_) => {
                self.release_cached()?;
                unsafe { drv::malloc_async(self.stream.cu_stream(), size) }.map_err(|e| {
                    crate::driver_error(
                        &format!("{op}: allocating {size} bytes of device memory"),
                        e,
                    )
                })?
            }
        };
        let mut cache = self.lock();
        cache.stats.misses += 1;
        cache.stats.live_bytes += size;
        cache.stats.peak_bytes = cache.stats.peak_bytes.max(cache.stats.live_bytes);
        Ok(self.block(ptr, size))
    }

    fn block(self: &Arc<Self>, ptr: u64, size: usize) -> DeviceBlock {
        DeviceBlock {
            ptr,
            size,
            allocator: Arc::clone(self),
        }
    }

    fn give_back(&self, ptr: u64, size: usize) {
        let mut cache = self.lock();
        cache.stats.live_bytes -= size;
        cache.stats.cached_bytes += size;
        cache.free.entry(size).or_default().push(ptr);
    }

    /// Frees every cached block to the driver.
    pub(crate) fn release_cached(&self) -> Result<()> {
        let free = {
            let mut cache = self.lock();
            cache.stats.cached_bytes = 0;
            std::mem::take(&mut cache.free)
        };
        self.stream
            .context()
            .bind_to_thread()
            .map_err(|e| crate::driver_error("binding the context", e))?;
        for ptr in free.into_values().flatten() {
            // SAFETY: each block came from `malloc_async` on this stream and no buffer holds it.
            unsafe { drv::free_async(ptr, self.stream.cu_stream()) }
                .map_err(|e| crate::driver_error("freeing cached device memory", e))?;
        }
        Ok(())
    }

    pub(crate) fn stats(&self) -> CudaMemoryStats {
        self.lock().stats
    }

    pub(crate) fn reset_peak(&self) {
        let mut cache = self.lock();
        cache.stats.peak_bytes = cache.stats.live_bytes;
    }
}

/// A block of device memory, given back to the allocator's cache when dropped.
pub(crate) struct DeviceBlock {
    pub(crate) ptr: u64,
    size: usize,
    allocator: Arc<Allocator>,
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        self.allocator.give_back(self.ptr, self.size);
    }
}

#[cfg(test)]
mod tests {
    use super::rounded;

    #[test]
    fn sizes_round_to_their_granule() {
        assert_eq!(rounded(0), Some(512));
        assert_eq!(rounded(513), Some(1024));
        assert_eq!(rounded((1 << 20) + 1), Some(2 << 20));
        assert_eq!(rounded(3 << 20), Some(4 << 20));
        assert_eq!(rounded(usize::MAX), None);
    }
}
