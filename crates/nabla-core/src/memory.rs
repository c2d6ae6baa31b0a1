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

use crate::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution,
    ExtensionOp, HostData, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar, UnaryOp,
};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A [`Backend`] that runs every kernel on `B` and keeps count of the bytes held by live buffers, their
/// peak, and the number of buffers allocated.
///
/// Clones share the counters, so a `Tensor<MemoryTracked<B>>` and every tensor computed from it report
/// into the [`MemoryTracked`] they were made with. Device identity and names are those of `B`: tracking
/// changes what is counted, not where the data lives.
///
/// Each buffer a kernel returns is counted as a new allocation, as the [`Backend`] contract promises
/// (outputs are new buffers). Reading data back to the host ([`Backend::read`]) is not counted: it is
/// host memory owned by the caller.
#[derive(Clone)]
pub struct MemoryTracked<B: Backend> {
    inner: B,
    counters: Arc<Counters>,
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

impl<B: Backend> MemoryTracked<B> {
    /// Wraps `inner`, with all counters at zero.
    pub fn new(inner: B) -> Self {
        MemoryTracked {
            inner,
            counters: Arc::new(Counters::default()),
        }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

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

    /// Starts a new peak measurement: the peak becomes the bytes live now.
    pub fn reset_peak(&self) {
        let live = self.counters.live_bytes.load(Ordering::Relaxed);
        self.counters.peak_bytes.store(live, Ordering::Relaxed);
    }

    /// Counts a buffer of the wrapped backend as allocated on this one, and wraps it.
    pub fn track(&self, storage: B::Storage) -> TrackedStorage<B::Storage> {
        let bytes =
            self.inner.storage_len(&storage) * self.inner.storage_dtype(&storage).size_in_bytes();
        self.counters.register(bytes);
        TrackedStorage {
            inner: storage,
            allocation: Arc::new(Allocation {
                bytes,
                counters: self.counters.clone(),
            }),
        }
    }

    fn wrap(&self, storage: Result<B::Storage>) -> Result<<Self as Backend>::Storage> {
        storage.map(|s| self.track(s))
    }

    fn wrap_pair(
        &self,
        pair: Result<(B::Storage, B::Storage)>,
    ) -> Result<(<Self as Backend>::Storage, <Self as Backend>::Storage)> {
        pair.map(|(a, b)| (self.track(a), self.track(b)))
    }
}

impl<B: Backend> MemoryTracked<B> {
    /// Runs a fused kernel call `run` on the unwrapped inputs and records its results: result `j`
    /// written in place into input `donate[j]` (see [`Backend::fused`] for when the wrapped backend
    /// does so) inherits that input's record; the others are registered as new allocations.
    fn forward_donated(
        &self,
        kernel: &crate::FusedKernel,
        inputs: Vec<(TrackedStorage<B::Storage>, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
        run: impl FnOnce(Vec<(B::Storage, &Layout)>) -> Result<Vec<B::Storage>>,
    ) -> Result<Vec<TrackedStorage<B::Storage>>> {
        let n: usize = shape.iter().product();
        let dtypes = kernel.output_dtypes();
        let reuses = self.inner.fused_reuses_donation(kernel);
        let mut records = Vec::with_capacity(inputs.len());
        let mut inherited: Vec<Option<Arc<Allocation>>> = vec![None; dtypes.len()];
        let mut inner_inputs = Vec::with_capacity(inputs.len());
        for (k, (storage, layout)) in inputs.into_iter().enumerate() {
            let TrackedStorage { inner, allocation } = storage;
            let target = donate
                .iter()
                .position(|&d| d == Some(k))
                .filter(|&j| j < dtypes.len());
            let in_place = target.filter(|&j| {
                reuses
                    && Arc::strong_count(&allocation) == 1
                    && allocation.bytes == n * dtypes[j].size_in_bytes()
                    && self.inner.storage_len(&inner) == n
                    && self.inner.storage_dtype(&inner) == dtypes[j]
                    && layout.contiguous_range() == Some(0..n)
            });
            match in_place {
                Some(j) => inherited[j] = Some(allocation),
                None => records.push(allocation),
            }
            inner_inputs.push((inner, layout));
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
                None => self.track(out),
            })
            .collect();
        drop(records);
        Ok(tracked)
    }
}

impl<B: Backend + Default> Default for MemoryTracked<B> {
    fn default() -> Self {
        MemoryTracked::new(B::default())
    }
}

impl<B: Backend> fmt::Debug for MemoryTracked<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTracked")
            .field("inner", &self.inner)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<B: Backend> Backend for MemoryTracked<B> {
    type Storage = TrackedStorage<B::Storage>;

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }

    fn storage_dtype(&self, storage: &Self::Storage) -> DType {
        self.inner.storage_dtype(&storage.inner)
    }

    fn storage_len(&self, storage: &Self::Storage) -> usize {
        self.inner.storage_len(&storage.inner)
    }

    fn upload(&self, data: HostData) -> Result<Self::Storage> {
        self.wrap(self.inner.upload(data))
    }

    fn read(&self, storage: &Self::Storage, layout: &Layout) -> Result<HostData> {
        self.inner.read(&storage.inner, layout)
    }

    fn synchronize(&self) -> Result<()> {
        self.inner.synchronize()
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<Self::Storage> {
        self.wrap(self.inner.full(len, value, dtype))
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.random(dist, len, dtype, key))
    }

    fn copy(&self, x: &Self::Storage, layout: &Layout) -> Result<Self::Storage> {
        self.wrap(self.inner.copy(&x.inner, layout))
    }

    fn unary(&self, op: UnaryOp, x: &Self::Storage, layout: &Layout) -> Result<Self::Storage> {
        self.wrap(self.inner.unary(op, &x.inner, layout))
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .binary(op, &a.inner, a_layout, &b.inner, b_layout),
        )
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .compare(op, &a.inner, a_layout, &b.inner, b_layout),
        )
    }

    fn select(
        &self,
        cond: &Self::Storage,
        cond_layout: &Layout,
        on_true: &Self::Storage,
        true_layout: &Layout,
        on_false: &Self::Storage,
        false_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.select(
            &cond.inner,
            cond_layout,
            &on_true.inner,
            true_layout,
            &on_false.inner,
            false_layout,
        ))
    }

    fn cast(&self, x: &Self::Storage, layout: &Layout, dtype: DType) -> Result<Self::Storage> {
        self.wrap(self.inner.cast(&x.inner, layout, dtype))
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &Self::Storage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.reduce(op, &x.inner, layout, axes))
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.arg_reduce(op, &x.inner, layout, axis))
    }

    fn cumsum(&self, x: &Self::Storage, layout: &Layout, axis: usize) -> Result<Self::Storage> {
        self.wrap(self.inner.cumsum(&x.inner, layout, axis))
    }

    fn matmul(
        &self,
        a: &Self::Storage,
        a_layout: &Layout,
        b: &Self::Storage,
        b_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.matmul(&a.inner, a_layout, &b.inner, b_layout))
    }

    fn pad(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.pad(&x.inner, layout, pads, value))
    }

    fn concat(&self, parts: &[(&Self::Storage, &Layout)], axis: usize) -> Result<Self::Storage> {
        let inner_parts: Vec<(&B::Storage, &Layout)> =
            parts.iter().map(|(s, l)| (&s.inner, *l)).collect();
        self.wrap(self.inner.concat(&inner_parts, axis))
    }

    fn gather(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .gather(&x.inner, x_layout, axis, &index.inner, index_layout),
        )
    }

    fn index_select(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .index_select(&x.inner, x_layout, axis, &index.inner, index_layout),
        )
    }

    fn scatter_add(
        &self,
        dst: &Self::Storage,
        dst_layout: &Layout,
        axis: usize,
        index: &Self::Storage,
        index_layout: &Layout,
        src: &Self::Storage,
        src_layout: &Layout,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.scatter_add(
            &dst.inner,
            dst_layout,
            axis,
            &index.inner,
            index_layout,
            &src.inner,
            src_layout,
        ))
    }

    fn one_hot(
        &self,
        index: &Self::Storage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<Self::Storage> {
        self.wrap(self.inner.one_hot(&index.inner, layout, classes, dtype))
    }

    fn sort(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(Self::Storage, Self::Storage)> {
        self.wrap_pair(self.inner.sort(&x.inner, layout, axis, descending))
    }

    fn max_pool2d(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(Self::Storage, Self::Storage)> {
        self.wrap_pair(self.inner.max_pool2d(&x.inner, layout, params))
    }

    fn topk(
        &self,
        x: &Self::Storage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(Self::Storage, Self::Storage)> {
        self.wrap_pair(self.inner.topk(&x.inner, layout, axis, k, largest))
    }

    fn conv2d(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        w: &Self::Storage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .conv2d(&x.inner, x_layout, &w.inner, w_layout, params),
        )
    }

    fn conv2d_input_grad(
        &self,
        dy: &Self::Storage,
        dy_layout: &Layout,
        w: &Self::Storage,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .conv2d_input_grad(&dy.inner, dy_layout, &w.inner, w_layout, input_hw, params),
        )
    }

    fn conv2d_weight_grad(
        &self,
        x: &Self::Storage,
        x_layout: &Layout,
        dy: &Self::Storage,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<Self::Storage> {
        self.wrap(
            self.inner
                .conv2d_weight_grad(&x.inner, x_layout, &dy.inner, dy_layout, kernel_hw, params),
        )
    }

    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&Self::Storage, &Layout)],
    ) -> Result<Self::Storage> {
        let inner: Vec<(&B::Storage, &Layout)> =
            inputs.iter().map(|(s, l)| (&s.inner, *l)).collect();
        self.wrap(self.inner.extension(op, &inner))
    }

    /// Forwards the kernel. When the wrapped backend promises to write the result into the donated input
    /// ([`Backend::fused_reuses_donation`]) and the conditions hold (this is the only handle, read whole,
    /// output dtype and length), the result inherits the donated buffer's record: no new allocation is
    /// counted and the live bytes do not change. Otherwise the donated buffer is handed down too, but
    /// stays counted until the result is registered, as it is alive on the device until then.
    fn fused(
        &self,
        kernel: &crate::FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<Self::Storage> {
        kernel.check_single_output()?;
        let mut out = self.forward_donated(kernel, inputs, shape, &[donate], |inner| {
            Ok(vec![self.inner.fused(kernel, inner, shape, donate)?])
        })?;
        out.pop()
            .ok_or_else(|| crate::Error::invalid("fused", "the wrapped backend returned no result"))
    }

    /// Forwards the kernel; each result written into its donated input inherits that buffer's record,
    /// as for [`Backend::fused`].
    fn fused_many(
        &self,
        kernel: &crate::FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<Self::Storage>> {
        self.forward_donated(kernel, inputs, shape, donate, |inner| {
            self.inner.fused_many(kernel, inner, shape, donate)
        })
    }

    fn fused_reuses_donation(&self, kernel: &crate::FusedKernel) -> bool {
        self.inner.fused_reuses_donation(kernel)
    }
}
