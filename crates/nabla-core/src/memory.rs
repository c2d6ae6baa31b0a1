//! Memory accounting: a [`Backend`] wrapper that counts the bytes of the buffers alive on it.
//!
//! [`MemoryTracked`] delegates every kernel to the backend it wraps and registers each buffer it returns
//! with a counter shared by the wrapper and its clones. A buffer counts `len * dtype.size_in_bytes()`
//! bytes from the moment a kernel (or an upload) returns it until the last clone of its handle is
//! dropped. Views share their buffer's handle and so cost nothing, exactly as on the wrapped device.
//!
//! The counters belong to one [`MemoryTracked::new`] call and its clones; there is no global state, so
//! tests that measure memory can run in parallel.
//!
//! ```
//! use nabla_core::{Backend, DType, MemoryTracked, Scalar};
//!
//! // Works for any device, e.g. `measure(CpuBackend::new())`.
//! fn measure<B: Backend>(device: B) -> nabla_core::Result<()> {
//!     let tracked = MemoryTracked::new(device);
//!     let a = tracked.full(1000, Scalar::from(1.0), DType::F32)?;
//!     let view = a.clone(); // a second handle to the same buffer: no new bytes
//!     assert_eq!(tracked.stats().live_bytes, 4000);
//!     drop((a, view));
//!     assert_eq!(tracked.stats().live_bytes, 0);
//!     assert_eq!(tracked.stats().peak_bytes, 4000);
//!     Ok(())
//! }
//! ```

use crate::wrapper::FusedCall;
use crate::{Backend, FusedKernel, Layout, Result, Wrapped, Wrapper};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A [`Backend`] that runs every kernel on `B` and keeps count of the bytes held by live buffers, their
/// peak, and the number of buffers allocated: `B` [`Wrapped`] by the [`MemoryCounter`] wrapper, which
/// changes only the buffer handles (each carries its accounting record).
///
/// Clones share the counters, so a `Tensor<MemoryTracked<B>>` and every tensor computed from it report
/// into the [`MemoryTracked`] they were made with. Device identity and names are those of `B`: tracking
/// changes what is counted, not where the data lives.
///
/// Each buffer a kernel returns is counted as a new allocation, as the [`Backend`] contract promises
/// (outputs are new buffers). Reading data back to the host ([`Backend::read`]) is not counted: it is
/// host memory owned by the caller.
pub type MemoryTracked<B> = Wrapped<B, MemoryCounter>;

/// The [`Wrapper`] of [`MemoryTracked`]: the shared counters, and a record on every buffer.
#[derive(Clone, Default)]
pub struct MemoryCounter {
    counters: Arc<Counters>,
}

impl fmt::Debug for MemoryCounter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryCounter")
            .field("stats", &self.stats())
            .finish()
    }
}

/// A snapshot of the counters of a [`MemoryTracked`] backend.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MemoryStats {
    /// Bytes held by buffers that are alive now.
    pub live_bytes: usize,
    /// The largest `live_bytes` seen since the backend was made or [`MemoryTracked::reset_peak`] was
    /// last called.
    pub peak_bytes: usize,
    /// Buffers allocated since the backend was made (freed ones included).
    pub allocations: u64,
    /// Buffers alive now.
    pub live_buffers: usize,
}

impl fmt::Display for MemoryStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} live bytes in {} buffers, peak {} bytes, {} allocations",
            self.live_bytes, self.live_buffers, self.peak_bytes, self.allocations
        )
    }
}

/// The shared counters. Updates are relaxed atomics: each counter is exact once the threads that
/// allocate have synchronised with the reader (joined, or returned from a kernel).
#[derive(Debug, Default)]
struct Counters {
    live_bytes: AtomicUsize,
    peak_bytes: AtomicUsize,
    allocations: AtomicU64,
    live_buffers: AtomicUsize,
}

impl Counters {
    fn register(&self, bytes: usize) {
        let live = self.live_bytes.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.peak_bytes.fetch_max(live, Ordering::Relaxed);
        self.allocations.fetch_add(1, Ordering::Relaxed);
        self.live_buffers.fetch_add(1, Ordering::Relaxed);
    }

    fn unregister(&self, bytes: usize) {
        self.live_bytes.fetch_sub(bytes, Ordering::Relaxed);
        self.live_buffers.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The record of one counted buffer; dropping it (with the last handle) gives the bytes back.
struct Allocation {
    bytes: usize,
    counters: Arc<Counters>,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        self.counters.unregister(self.bytes);
    }
}

/// A buffer of a [`MemoryTracked`] backend: the wrapped backend's buffer plus its accounting record.
///
/// Cloning shares both; the bytes are given back when the last clone is dropped. Two handles are equal
/// when they are clones of one buffer.
#[derive(Clone)]
pub struct TrackedStorage<S> {
    inner: S,
    allocation: Arc<Allocation>,
}

impl<S> TrackedStorage<S> {
    /// The wrapped backend's buffer.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// Bytes this buffer is counted for (`len * dtype.size_in_bytes()`).
    pub fn bytes(&self) -> usize {
        self.allocation.bytes
    }
}

impl<S: fmt::Debug> fmt::Debug for TrackedStorage<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TrackedStorage")
            .field("bytes", &self.allocation.bytes)
            .field("inner", &self.inner)
            .finish()
    }
}

impl<S> PartialEq for TrackedStorage<S> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.allocation, &other.allocation)
    }
}

impl<S> Eq for TrackedStorage<S> {}

impl MemoryCounter {
    /// The counters now.
    pub fn stats(&self) -> MemoryStats {
        let c = &self.counters;
        MemoryStats {
            live_bytes: c.live_bytes.load(Ordering::Relaxed),
            peak_bytes: c.peak_bytes.load(Ordering::Relaxed),
            allocations: c.allocations.load(Ordering::Relaxed),
            live_buffers: c.live_buffers.load(Ordering::Relaxed),
        }
    }

    /// A record of `bytes` counted as allocated.
    fn record(&self, bytes: usize) -> Arc<Allocation> {
        self.counters.register(bytes);
        Arc::new(Allocation {
            bytes,
            counters: self.counters.clone(),
        })
    }
}

impl<B: Backend> MemoryTracked<B> {
    /// Wraps `inner`, with all counters at zero.
    pub fn new(inner: B) -> Self {
        Wrapped::with(inner, MemoryCounter::default())
    }

    /// The counters now.
    pub fn stats(&self) -> MemoryStats {
        self.wrapper().stats()
    }

    /// Starts a new peak measurement: the peak becomes the bytes live now.
    pub fn reset_peak(&self) {
        let counters = &self.wrapper().counters;
        let live = counters.live_bytes.load(Ordering::Relaxed);
        counters.peak_bytes.store(live, Ordering::Relaxed);
    }

    /// Counts a buffer of the wrapped backend as allocated on this one, and wraps it.
    pub fn track(&self, storage: B::Storage) -> TrackedStorage<B::Storage> {
        self.wrapper().wrap(self.inner(), storage)
    }
}

impl<B: Backend> Wrapper<B> for MemoryCounter {
    type Storage = TrackedStorage<B::Storage>;

    fn wrap(&self, inner: &B, storage: B::Storage) -> TrackedStorage<B::Storage> {
        let bytes = inner.storage_len(&storage) * inner.storage_dtype(&storage).size_in_bytes();
        TrackedStorage {
            inner: storage,
            allocation: self.record(bytes),
        }
    }

    fn unwrap<'a>(&self, storage: &'a TrackedStorage<B::Storage>) -> &'a B::Storage {
        &storage.inner
    }

    /// Result `j` written in place into input `donate[j]` (when the wrapped backend promises to, see
    /// [`Backend::fused_reuses_donation`], and the conditions hold: this is the only handle, read
    /// whole, output dtype and length) inherits that input's record: no new allocation is counted and
    /// the live bytes do not change. Other results are registered as new allocations; a donated buffer
    /// that was not reused stays counted until the results are registered, as it is alive on the
    /// device until then.
    fn forward_fused(
        &self,
        inner: &B,
        kernel: &FusedKernel,
        inputs: Vec<(TrackedStorage<B::Storage>, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
        run: &mut FusedCall<'_, B>,
    ) -> Result<Vec<TrackedStorage<B::Storage>>> {
        let n: usize = shape.iter().product();
        let dtypes = kernel.output_dtypes();
        let reuses = inner.fused_reuses_donation(kernel);
        let mut records = Vec::with_capacity(inputs.len());
        let mut inherited: Vec<Option<Arc<Allocation>>> = vec![None; dtypes.len()];
        let mut inner_inputs = Vec::with_capacity(inputs.len());
        for (k, (storage, layout)) in inputs.into_iter().enumerate() {
            let TrackedStorage {
                inner: buffer,
                allocation,
            } = storage;
            let target = donate
                .iter()
                .position(|&d| d == Some(k))
                .filter(|&j| j < dtypes.len());
            let in_place = target.filter(|&j| {
                reuses
                    && Arc::strong_count(&allocation) == 1
                    && allocation.bytes == n * dtypes[j].size_in_bytes()
                    && inner.storage_len(&buffer) == n
                    && inner.storage_dtype(&buffer) == dtypes[j]
                    && layout.contiguous_range() == Some(0..n)
            });
            match in_place {
                Some(j) => inherited[j] = Some(allocation),
                None => records.push(allocation),
            }
            inner_inputs.push((buffer, layout));
        }
        let outs = run(inner_inputs)?;
        let tracked = outs
            .into_iter()
            .zip(inherited.into_iter().chain(std::iter::repeat(None)))
            .map(|(out, inherited)| match inherited {
                Some(allocation) => TrackedStorage {
                    inner: out,
                    allocation,
                },
                None => self.wrap(inner, out),
            })
            .collect();
        drop(records);
        Ok(tracked)
    }
}
