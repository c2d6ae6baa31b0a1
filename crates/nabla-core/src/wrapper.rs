//! Delegation: a backend that runs every kernel on another backend and changes only what it says.
//!
//! A [`Wrapper`] states what a wrapping backend changes: its buffer handle (how a buffer the inner
//! backend returns is wrapped, and how the inner buffer is found again), a hook around every kernel
//! call, and (optionally) how fused kernels with donated inputs are forwarded. [`Wrapped`] pairs it
//! with the inner backend and implements the whole [`Backend`] contract by forwarding, so the memory
//! accounting of [`crate::MemoryTracked`], a profiler or a call counter is a few lines:
//!
//! ```
//! use nabla_core::{Backend, DType, Result, Scalar, Wrapped, Wrapper};
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicUsize, Ordering};
//!
//! /// Counts kernel calls; buffers are the inner backend's own.
//! #[derive(Clone, Debug, Default)]
//! struct CountCalls(Arc<AtomicUsize>);
//!
//! impl<B: Backend> Wrapper<B> for CountCalls {
//!     type Storage = B::Storage;
//!     fn wrap(&self, _inner: &B, storage: B::Storage) -> B::Storage { storage }
//!     fn unwrap<'a>(&self, storage: &'a B::Storage) -> &'a B::Storage { storage }
//!     fn around<T>(&self, _op: &'static str, run: impl FnOnce() -> Result<T>) -> Result<T> {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!         run()
//!     }
//! }
//!
//! // Works for any device, e.g. `count(CpuBackend::new())`.
//! fn count<B: Backend>(device: B) -> Result<()> {
//!     let calls = CountCalls::default();
//!     let counted = Wrapped::with(device, calls.clone());
//!     let a = counted.full(4, Scalar::from(1.0), DType::F32)?;
//!     let _b = counted.copy(&a, &nabla_core::Layout::contiguous([4]))?;
//!     assert_eq!(calls.0.load(Ordering::Relaxed), 2);
//!     Ok(())
//! }
//! ```

use crate::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution,
    ExtensionOp, FusedKernel, HostData, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar,
    UnaryOp,
};
use std::fmt::Debug;
use std::sync::Arc;

/// A call of the inner backend's fused kernel on inner buffers (see [`Wrapper::forward_fused`]).
pub type FusedCall<'a, B> =
    dyn FnMut(Vec<(<B as Backend>::Storage, &Layout)>) -> Result<Vec<<B as Backend>::Storage>> + 'a;

/// What a [`Wrapped`] backend changes about the backend `B` it wraps. Only [`Wrapper::wrap`] and
/// [`Wrapper::unwrap`] are required.
pub trait Wrapper<B: Backend>: Clone + Debug + Send + Sync + 'static {
    /// The wrapped backend's buffer handle (`B::Storage` itself for a wrapper that only observes).
    type Storage: Clone + Debug + Send + Sync;

    /// Wraps a buffer that `inner` has just returned (a new allocation, by the [`Backend`] contract).
    fn wrap(&self, inner: &B, storage: B::Storage) -> Self::Storage;

    /// The inner backend's buffer behind a handle.
    fn unwrap<'a>(&self, storage: &'a Self::Storage) -> &'a B::Storage;

    /// Runs one kernel call of the inner backend, `op` naming the [`Backend`] method. The default just
    /// runs it; a profiler times it here, a tracer logs it.
    fn around<T>(&self, op: &'static str, run: impl FnOnce() -> Result<T>) -> Result<T> {
        let _ = op;
        run()
    }

    /// Forwards a fused-kernel call whose inputs come by value (some perhaps donated, see
    /// [`Backend::fused_many`]): `run` calls the inner backend on inner buffers and returns its
    /// results. The default hands each input's inner buffer down after dropping its handle (so a
    /// buffer whose only handle was donated is unique below too) and wraps every result.
    fn forward_fused(
        &self,
        inner: &B,
        kernel: &FusedKernel,
        inputs: Vec<(Self::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
        run: &mut FusedCall<'_, B>,
    ) -> Result<Vec<Self::Storage>> {
        let _ = (kernel, shape, donate);
        let inner_inputs = inputs
            .into_iter()
            .map(|(storage, layout)| (self.unwrap(&storage).clone(), layout))
            .collect();
        Ok(run(inner_inputs)?
            .into_iter()
            .map(|s| self.wrap(inner, s))
            .collect())
    }
}

/// The backend `B` seen through the [`Wrapper`] `W`: every kernel runs on `B`, with `W`'s handles and
/// hooks. Device identity and name are `B`'s.
#[derive(Clone, Debug, Default)]
pub struct Wrapped<B: Backend, W: Wrapper<B>> {
    inner: B,
    wrapper: W,
}

impl<B: Backend, W: Wrapper<B>> Wrapped<B, W> {
    /// `inner` seen through `wrapper`.
    pub fn with(inner: B, wrapper: W) -> Self {
        Wrapped { inner, wrapper }
    }

    /// The wrapped backend.
    pub fn inner(&self) -> &B {
        &self.inner
    }

    /// The wrapper.
    pub fn wrapper(&self) -> &W {
        &self.wrapper
    }

    /// Runs the kernel `op` and wraps its buffer.
    fn one(
        &self,
        op: &'static str,
        run: impl FnOnce(&B) -> Result<B::Storage>,
    ) -> Result<W::Storage> {
        let out = self.wrapper.around(op, || run(&self.inner))?;
        Ok(self.wrapper.wrap(&self.inner, out))
    }

    /// Runs the kernel `op` and wraps its two buffers.
    fn two(
        &self,
        op: &'static str,
        run: impl FnOnce(&B) -> Result<(B::Storage, B::Storage)>,
    ) -> Result<(W::Storage, W::Storage)> {
        let (a, b) = self.wrapper.around(op, || run(&self.inner))?;
        Ok((
            self.wrapper.wrap(&self.inner, a),
            self.wrapper.wrap(&self.inner, b),
        ))
    }

    fn un<'a>(&self, s: &'a W::Storage) -> &'a B::Storage {
        self.wrapper.unwrap(s)
    }

    fn unwrap_all<'a>(
        &self,
        parts: &[(&'a W::Storage, &'a Layout)],
    ) -> Vec<(&'a B::Storage, &'a Layout)> {
        parts.iter().map(|(s, l)| (self.un(s), *l)).collect()
    }
}

impl<B: Backend, W: Wrapper<B>> Backend for Wrapped<B, W> {
    type Storage = W::Storage;

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn device(&self) -> Device {
        self.inner.device()
    }

    fn storage_dtype(&self, storage: &W::Storage) -> DType {
        self.inner.storage_dtype(self.un(storage))
    }

    fn storage_len(&self, storage: &W::Storage) -> usize {
        self.inner.storage_len(self.un(storage))
    }

    fn upload(&self, data: HostData) -> Result<W::Storage> {
        self.one("upload", |b| b.upload(data))
    }

    fn read(&self, storage: &W::Storage, layout: &Layout) -> Result<HostData> {
        self.wrapper
            .around("read", || self.inner.read(self.un(storage), layout))
    }

    fn is_symbolic(&self) -> bool {
        self.inner.is_symbolic()
    }

    fn fast_path_kernels(&self) -> Option<crate::FastKernels> {
        self.inner.fast_path_kernels()
    }

    fn synchronize(&self) -> Result<()> {
        self.wrapper
            .around("synchronize", || self.inner.synchronize())
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<W::Storage> {
        self.one("full", |b| b.full(len, value, dtype))
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<W::Storage> {
        self.one("random", |b| b.random(dist, len, dtype, key))
    }

    fn copy(&self, x: &W::Storage, layout: &Layout) -> Result<W::Storage> {
        self.one("copy", |b| b.copy(self.un(x), layout))
    }

    fn unary(&self, op: UnaryOp, x: &W::Storage, layout: &Layout) -> Result<W::Storage> {
        self.one("unary", |b| b.unary(op, self.un(x), layout))
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &W::Storage,
        a_layout: &Layout,
        c: &W::Storage,
        c_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("binary", |b| {
            b.binary(op, self.un(a), a_layout, self.un(c), c_layout)
        })
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &W::Storage,
        a_layout: &Layout,
        c: &W::Storage,
        c_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("compare", |b| {
            b.compare(op, self.un(a), a_layout, self.un(c), c_layout)
        })
    }

    fn select(
        &self,
        cond: &W::Storage,
        cond_layout: &Layout,
        on_true: &W::Storage,
        true_layout: &Layout,
        on_false: &W::Storage,
        false_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("select", |b| {
            b.select(
                self.un(cond),
                cond_layout,
                self.un(on_true),
                true_layout,
                self.un(on_false),
                false_layout,
            )
        })
    }

    fn cast(&self, x: &W::Storage, layout: &Layout, dtype: DType) -> Result<W::Storage> {
        self.one("cast", |b| b.cast(self.un(x), layout, dtype))
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &W::Storage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<W::Storage> {
        self.one("reduce", |b| b.reduce(op, self.un(x), layout, axes))
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &W::Storage,
        layout: &Layout,
        axis: usize,
    ) -> Result<W::Storage> {
        self.one("arg_reduce", |b| b.arg_reduce(op, self.un(x), layout, axis))
    }

    fn cumsum(&self, x: &W::Storage, layout: &Layout, axis: usize) -> Result<W::Storage> {
        self.one("cumsum", |b| b.cumsum(self.un(x), layout, axis))
    }

    fn matmul(
        &self,
        a: &W::Storage,
        a_layout: &Layout,
        c: &W::Storage,
        c_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("matmul", |b| {
            b.matmul(self.un(a), a_layout, self.un(c), c_layout)
        })
    }

    fn matmul_rounded(
        &self,
        a: &W::Storage,
        a_layout: &Layout,
        c: &W::Storage,
        c_layout: &Layout,
        precision: crate::Precision,
    ) -> Result<W::Storage> {
        self.one("matmul_rounded", |b| {
            b.matmul_rounded(self.un(a), a_layout, self.un(c), c_layout, precision)
        })
    }

    fn pad(
        &self,
        x: &W::Storage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<W::Storage> {
        self.one("pad", |b| b.pad(self.un(x), layout, pads, value))
    }

    fn concat(&self, parts: &[(&W::Storage, &Layout)], axis: usize) -> Result<W::Storage> {
        self.one("concat", |b| b.concat(&self.unwrap_all(parts), axis))
    }

    fn gather(
        &self,
        x: &W::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &W::Storage,
        index_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("gather", |b| {
            b.gather(self.un(x), x_layout, axis, self.un(index), index_layout)
        })
    }

    fn index_select(
        &self,
        x: &W::Storage,
        x_layout: &Layout,
        axis: usize,
        index: &W::Storage,
        index_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("index_select", |b| {
            b.index_select(self.un(x), x_layout, axis, self.un(index), index_layout)
        })
    }

    fn scatter_add(
        &self,
        dst: &W::Storage,
        dst_layout: &Layout,
        axis: usize,
        index: &W::Storage,
        index_layout: &Layout,
        src: &W::Storage,
        src_layout: &Layout,
    ) -> Result<W::Storage> {
        self.one("scatter_add", |b| {
            b.scatter_add(
                self.un(dst),
                dst_layout,
                axis,
                self.un(index),
                index_layout,
                self.un(src),
                src_layout,
            )
        })
    }

    fn one_hot(
        &self,
        index: &W::Storage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<W::Storage> {
        self.one("one_hot", |b| {
            b.one_hot(self.un(index), layout, classes, dtype)
        })
    }

    fn sort(
        &self,
        x: &W::Storage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(W::Storage, W::Storage)> {
        self.two("sort", |b| b.sort(self.un(x), layout, axis, descending))
    }

    fn topk(
        &self,
        x: &W::Storage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(W::Storage, W::Storage)> {
        self.two("topk", |b| b.topk(self.un(x), layout, axis, k, largest))
    }

    fn conv2d(
        &self,
        x: &W::Storage,
        x_layout: &Layout,
        w: &W::Storage,
        w_layout: &Layout,
        params: &Conv2dParams,
    ) -> Result<W::Storage> {
        self.one("conv2d", |b| {
            b.conv2d(self.un(x), x_layout, self.un(w), w_layout, params)
        })
    }

    fn conv2d_input_grad(
        &self,
        dy: &W::Storage,
        dy_layout: &Layout,
        w: &W::Storage,
        w_layout: &Layout,
        input_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<W::Storage> {
        self.one("conv2d_input_grad", |b| {
            b.conv2d_input_grad(
                self.un(dy),
                dy_layout,
                self.un(w),
                w_layout,
                input_hw,
                params,
            )
        })
    }

    fn conv2d_weight_grad(
        &self,
        x: &W::Storage,
        x_layout: &Layout,
        dy: &W::Storage,
        dy_layout: &Layout,
        kernel_hw: (usize, usize),
        params: &Conv2dParams,
    ) -> Result<W::Storage> {
        self.one("conv2d_weight_grad", |b| {
            b.conv2d_weight_grad(
                self.un(x),
                x_layout,
                self.un(dy),
                dy_layout,
                kernel_hw,
                params,
            )
        })
    }

    fn max_pool2d(
        &self,
        x: &W::Storage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(W::Storage, W::Storage)> {
        self.two("max_pool2d", |b| b.max_pool2d(self.un(x), layout, params))
    }

    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&W::Storage, &Layout)],
    ) -> Result<W::Storage> {
        self.one("extension", |b| b.extension(op, &self.unwrap_all(inputs)))
    }

    fn fused(
        &self,
        kernel: &FusedKernel,
        inputs: Vec<(W::Storage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<W::Storage> {
        kernel.check_single_output()?;
        let mut run = |ins: Vec<(B::Storage, &Layout)>| {
            self.wrapper.around("fused", || {
                Ok(vec![self.inner.fused(kernel, ins, shape, donate)?])
            })
        };
        let mut out =
            self.wrapper
                .forward_fused(&self.inner, kernel, inputs, shape, &[donate], &mut run)?;
        out.pop()
            .ok_or_else(|| crate::Error::invalid("fused", "the wrapped backend returned no result"))
    }

    fn fused_many(
        &self,
        kernel: &FusedKernel,
        inputs: Vec<(W::Storage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<W::Storage>> {
        let mut run = |ins: Vec<(B::Storage, &Layout)>| {
            self.wrapper.around("fused_many", || {
                self.inner.fused_many(kernel, ins, shape, donate)
            })
        };
        self.wrapper
            .forward_fused(&self.inner, kernel, inputs, shape, donate, &mut run)
    }

    fn fused_reuses_donation(&self, kernel: &FusedKernel) -> bool {
        self.inner.fused_reuses_donation(kernel)
    }
}
