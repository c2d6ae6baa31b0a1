//! Owns the CPU backend: [`CpuBackend`], [`CpuStorage`], their kernels, thread pool, buffer pool.
//! Must not depend on any nabla crate but `nabla-core`: it implements `Backend`, never `Tensor`.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Kernels are generic over [`nabla_core::Element`] and dispatched once per op on the runtime
//! dtype. They accept strided views (broadcast, transposed, negative-step) directly, take
//! contiguous fast paths that vectorise, and split work across threads with rayon above
//! [`PARALLEL_THRESHOLD`] elements. Matrix products of float and complex types go through faer
//! with the views' strides passed straight through.
//!
//! ```
//! use nabla_core::{Backend, HostData, Layout, UnaryOp};
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let x = cpu.upload(HostData::F32(vec![0.0, 1.0])).unwrap();
//! let y = cpu.unary(UnaryOp::Exp, &x, &Layout::contiguous([2])).unwrap();
//! let out = cpu.read(&y, &Layout::contiguous([2])).unwrap();
//! assert_eq!(out, HostData::F32(vec![1.0, std::f32::consts::E]));
//! ```
#![warn(missing_docs)]

mod conv;
mod elementwise;
mod fast_path;
pub use fast_path::host_loop_runs;
mod host_pool;
mod matmul;
mod movement;
mod pool2d;
mod random;
mod reduce;
pub mod simd_math;
mod sort;
mod storage;
mod strided;
mod thread_pool;

pub use host_pool::{
    BufferCacheStats, INITIAL_CACHED_BYTES, MIN_POOLED_BYTES, buffer_cache_stats, cached_bytes,
    release_cached_buffers,
};
pub use matmul::{host_gemm, host_gemm_uninit};
pub use storage::CpuStorage;
pub use strided::host_transpose;
pub use thread_pool::{init_thread_pool, max_threads};

use nabla_core::{
    ArgReduceOp, Backend, BinaryOp, CompareOp, Conv2dParams, DType, Device, Distribution,
    ExtensionOp, HostData, HostView, Layout, Pool2dParams, ReduceOp, Result, RngKey, Scalar,
    UnaryOp,
};
use std::sync::Arc;

/// Views with at least this many elements are processed by several threads.
pub const PARALLEL_THRESHOLD: usize = 1 << 15;

/// Whether the thread pool has two or more threads to split work over.
///
/// A split over a pool of one thread only moves the work: called from outside the pool (the program's
/// thread, whose pool keeps a thread of its own when it has one thread, see [`init_thread_pool`]),
/// each split op is handed to that thread while the caller sleeps until it is done, a hand-over and
/// a wake-up per op (a 256 x 256 LU gradient on one thread took 5 ms that way, 3 ms inline). Kernels
/// then run on the calling thread instead.
pub(crate) fn pool_is_parallel() -> bool {
    rayon::current_num_threads() > 1
}

/// Whether `work` (elements, or multiply-adds for products) is worth splitting over the thread pool:
/// at least `threshold`, and a pool of two or more threads ([`pool_is_parallel`]).
pub(crate) fn splits(work: usize, threshold: usize) -> bool {
    work >= threshold && pool_is_parallel()
}

/// The CPU device. Cheap to clone; all clones share the global rayon thread pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CpuBackend;

impl CpuBackend {
    /// The CPU backend.
    pub fn new() -> Self {
        CpuBackend
    }
}

impl Backend for CpuBackend {
    type Storage = CpuStorage;

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn fast_path_kernels(&self) -> Option<nabla_core::FastKernels> {
        Some(nabla_core::FastKernels(&fast_path::CpuFastPaths))
    }

    fn device(&self) -> Device {
        Device {
            kind: "cpu",
            ordinal: 0,
        }
    }

    fn storage_dtype(&self, storage: &CpuStorage) -> DType {
        storage.dtype()
    }

    fn storage_len(&self, storage: &CpuStorage) -> usize {
        storage.len()
    }

    fn upload(&self, data: HostData) -> Result<CpuStorage> {
        Ok(CpuStorage::new(data))
    }

    fn read(&self, storage: &CpuStorage, layout: &Layout) -> Result<HostData> {
        storage.check_layout("read", layout)?;
        if let Some(range) = layout.contiguous_range()
            && range.start == 0
            && range.end == storage.len()
        {
            return Ok(storage.host().to_owned());
        }
        Ok(elementwise::copy(storage, layout)?.into_host())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }

    fn full(&self, len: usize, value: Scalar, dtype: DType) -> Result<CpuStorage> {
        // On a cached buffer when one is free: a fresh `vec![value; len]` of zeros would be mapped to
        // the shared zero page and fault again when a later kernel writes the recycled buffer.
        fn fill<T: nabla_core::Element>(len: usize, value: Scalar) -> HostData {
            T::into_host(strided::filled_vec(len, T::from_scalar(value)))
        }
        Ok(CpuStorage::new(
            nabla_core::dispatch_dtype!(dtype, T => fill::<T>(len, value)),
        ))
    }

    fn random(
        &self,
        dist: Distribution,
        len: usize,
        dtype: DType,
        key: RngKey,
    ) -> Result<CpuStorage> {
        random::random(dist, len, dtype, key)
    }

    fn copy(&self, x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
        x.check_layout("copy", layout)?;
        elementwise::copy(x, layout)
    }

    fn unary(&self, op: UnaryOp, x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
        x.check_layout(op.name(), layout)?;
        elementwise::unary(op, x, layout)
    }

    fn binary(
        &self,
        op: BinaryOp,
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
    ) -> Result<CpuStorage> {
        a.check_layout(op.name(), la)?;
        b.check_layout(op.name(), lb)?;
        elementwise::binary(op, a, la, b, lb)
    }

    fn compare(
        &self,
        op: CompareOp,
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
    ) -> Result<CpuStorage> {
        a.check_layout(op.name(), la)?;
        b.check_layout(op.name(), lb)?;
        elementwise::compare(op, a, la, b, lb)
    }

    fn select(
        &self,
        cond: &CpuStorage,
        lc: &Layout,
        on_true: &CpuStorage,
        lt: &Layout,
        on_false: &CpuStorage,
        lf: &Layout,
    ) -> Result<CpuStorage> {
        cond.check_layout("where", lc)?;
        on_true.check_layout("where", lt)?;
        on_false.check_layout("where", lf)?;
        elementwise::select(cond, lc, on_true, lt, on_false, lf)
    }

    fn cast(&self, x: &CpuStorage, layout: &Layout, dtype: DType) -> Result<CpuStorage> {
        x.check_layout("cast", layout)?;
        elementwise::cast(x, layout, dtype)
    }

    fn reduce(
        &self,
        op: ReduceOp,
        x: &CpuStorage,
        layout: &Layout,
        axes: &[usize],
    ) -> Result<CpuStorage> {
        x.check_layout(op.name(), layout)?;
        reduce::reduce(op, x, layout, axes)
    }

    fn arg_reduce(
        &self,
        op: ArgReduceOp,
        x: &CpuStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<CpuStorage> {
        x.check_layout(op.name(), layout)?;
        reduce::arg_reduce(op, x, layout, axis)
    }

    fn cumsum(&self, x: &CpuStorage, layout: &Layout, axis: usize) -> Result<CpuStorage> {
        x.check_layout("cumsum", layout)?;
        reduce::cumsum(x, layout, axis)
    }

    fn matmul(
        &self,
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
    ) -> Result<CpuStorage> {
        a.check_layout("matmul", la)?;
        b.check_layout("matmul", lb)?;
        matmul::matmul(a, la, b, lb)
    }

    fn matmul_rounded(
        &self,
        a: &CpuStorage,
        la: &Layout,
        b: &CpuStorage,
        lb: &Layout,
        precision: nabla_core::Precision,
    ) -> Result<CpuStorage> {
        a.check_layout("matmul_rounded", la)?;
        b.check_layout("matmul_rounded", lb)?;
        matmul::matmul_rounded(a, la, b, lb, precision)
    }

    fn pad(
        &self,
        x: &CpuStorage,
        layout: &Layout,
        pads: &[(usize, usize)],
        value: Scalar,
    ) -> Result<CpuStorage> {
        x.check_layout("pad", layout)?;
        movement::pad(x, layout, pads, value)
    }

    fn concat(&self, parts: &[(&CpuStorage, &Layout)], axis: usize) -> Result<CpuStorage> {
        for (s, l) in parts {
            s.check_layout("concat", l)?;
        }
        movement::concat(parts, axis)
    }

    fn gather(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        axis: usize,
        index: &CpuStorage,
        li: &Layout,
    ) -> Result<CpuStorage> {
        x.check_layout("gather", lx)?;
        index.check_layout("gather", li)?;
        movement::gather(x, lx, axis, index, li)
    }

    fn index_select(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        axis: usize,
        index: &CpuStorage,
        li: &Layout,
    ) -> Result<CpuStorage> {
        x.check_layout("index_select", lx)?;
        index.check_layout("index_select", li)?;
        movement::index_select(x, lx, axis, index, li)
    }

    fn scatter_add(
        &self,
        dst: &CpuStorage,
        ld: &Layout,
        axis: usize,
        index: &CpuStorage,
        li: &Layout,
        src: &CpuStorage,
        ls: &Layout,
    ) -> Result<CpuStorage> {
        dst.check_layout("scatter_add", ld)?;
        index.check_layout("scatter_add", li)?;
        src.check_layout("scatter_add", ls)?;
        movement::scatter_add(dst, ld, axis, index, li, src, ls)
    }

    fn one_hot(
        &self,
        index: &CpuStorage,
        layout: &Layout,
        classes: usize,
        dtype: DType,
    ) -> Result<CpuStorage> {
        index.check_layout("one_hot", layout)?;
        movement::one_hot(index, layout, classes, dtype)
    }

    fn sort(
        &self,
        x: &CpuStorage,
        layout: &Layout,
        axis: usize,
        descending: bool,
    ) -> Result<(CpuStorage, CpuStorage)> {
        x.check_layout("sort", layout)?;
        sort::sort(x, layout, axis, descending)
    }

    fn topk(
        &self,
        x: &CpuStorage,
        layout: &Layout,
        axis: usize,
        k: usize,
        largest: bool,
    ) -> Result<(CpuStorage, CpuStorage)> {
        x.check_layout("topk", layout)?;
        sort::topk(x, layout, axis, k, largest)
    }

    fn max_pool2d(
        &self,
        x: &CpuStorage,
        layout: &Layout,
        params: &Pool2dParams,
    ) -> Result<(CpuStorage, CpuStorage)> {
        x.check_layout("max_pool2d", layout)?;
        pool2d::max_pool2d(x, layout, params)
    }

    fn conv2d(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        p: &Conv2dParams,
    ) -> Result<CpuStorage> {
        x.check_layout("conv2d", lx)?;
        w.check_layout("conv2d", lw)?;
        conv::conv2d(x, lx, w, lw, p)
    }

    fn conv2d_input_grad(
        &self,
        dy: &CpuStorage,
        ldy: &Layout,
        w: &CpuStorage,
        lw: &Layout,
        input_hw: (usize, usize),
        p: &Conv2dParams,
    ) -> Result<CpuStorage> {
        dy.check_layout("conv2d_input_grad", ldy)?;
        w.check_layout("conv2d_input_grad", lw)?;
        conv::conv2d_input_grad(dy, ldy, w, lw, input_hw, p)
    }

    fn conv2d_weight_grad(
        &self,
        x: &CpuStorage,
        lx: &Layout,
        dy: &CpuStorage,
        ldy: &Layout,
        kernel_hw: (usize, usize),
        p: &Conv2dParams,
    ) -> Result<CpuStorage> {
        x.check_layout("conv2d_weight_grad", lx)?;
        dy.check_layout("conv2d_weight_grad", ldy)?;
        conv::conv2d_weight_grad(x, lx, dy, ldy, kernel_hw, p)
    }

    /// Runs the op's host kernel directly on the buffers of whole contiguous inputs (other views, and
    /// buffers in foreign memory, are copied to owned contiguous memory first).
    fn extension(
        &self,
        op: &Arc<dyn ExtensionOp>,
        inputs: &[(&CpuStorage, &Layout)],
    ) -> Result<CpuStorage> {
        let copies = inputs
            .iter()
            .map(|(s, l)| {
                s.check_layout("extension", l)?;
                let whole = l.contiguous_range() == Some(0..s.len());
                Ok(if !whole {
                    Some(elementwise::copy(s, l)?)
                } else if s.is_foreign() {
                    // A `HostView` borrows a `HostData`.
                    Some(CpuStorage::new(s.host().to_owned()))
                } else {
                    None
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let views: Vec<HostView<'_>> = inputs
            .iter()
            .zip(&copies)
            .map(|((s, l), copy)| {
                Ok(HostView {
                    data: copy.as_ref().unwrap_or(s).owned_host().ok_or_else(|| {
                        nabla_core::Error::invalid(
                            "extension",
                            "an input was left in foreign memory",
                        )
                    })?,
                    shape: l.shape(),
                })
            })
            .collect::<Result<_>>()?;
        Ok(CpuStorage::new(
            op.host_kernel(&views, &host_pool::CachedAllocator)?,
        ))
    }

    /// One blocked, multithreaded pass over the output for kernels over `f32` or `f64` (with `bool`
    /// intermediates), writing into the donated input when it is the only handle; other dtypes run step
    /// by step.
    fn fused(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(CpuStorage, &Layout)>,
        shape: &[usize],
        donate: Option<usize>,
    ) -> Result<CpuStorage> {
        elementwise::fused(kernel, inputs, shape, donate)
    }

    /// The same pass with one output buffer (or donated input) per result.
    fn fused_many(
        &self,
        kernel: &nabla_core::FusedKernel,
        inputs: Vec<(CpuStorage, &Layout)>,
        shape: &[usize],
        donate: &[Option<usize>],
    ) -> Result<Vec<CpuStorage>> {
        elementwise::fused_many(kernel, inputs, shape, donate)
    }

    fn fused_reuses_donation(&self, kernel: &nabla_core::FusedKernel) -> bool {
        elementwise::fast_dtype(kernel).is_some()
    }
}

#[cfg(test)]
mod split_tests {
    use super::{PARALLEL_THRESHOLD, splits};

    fn in_pool<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a test pool")
            .install(f)
    }

    #[test]
    fn a_one_thread_pool_never_splits_work() {
        assert!(!in_pool(1, || splits(usize::MAX, PARALLEL_THRESHOLD)));
        assert!(in_pool(2, || splits(
            PARALLEL_THRESHOLD,
            PARALLEL_THRESHOLD
        )));
        assert!(!in_pool(2, || splits(
            PARALLEL_THRESHOLD - 1,
            PARALLEL_THRESHOLD
        )));
    }
}
