//! The CPU's fast-path kernels ([`nabla_core::fast_path`]): fused row ops, ReLU, the LSTM layer,
//! attention and batch norm, each forwards and backwards, and the native loops fused kernels carry
//! (Adam's update), on host memory with the backend's allocator cache, SIMD builds and thread pool.

/// Runs `$run::<T>` (returning `Result<Vec<T>>`) for the real float element type `T` of the first of
/// `$views`, as a [`HostData`] result; an error naming the op `$op` for any other dtype.
macro_rules! by_float_dtype {
    ($op:expr, $views:expr, $($run:ident)::+($($arg:expr),*)) => {
        match $views.first().map(|v| v.data.dtype()) {
            Some(dtype) => nabla_core::dispatch_dtype!(dtype, T, {
                real => Ok(nabla_core::Element::into_host($($run)::+::<T>($($arg),*)?)),
                _ => Err(nabla_core::Error::dtype(nabla_core::FastPath::name(&$op), dtype)),
            }),
            None => Err(nabla_core::Error::invalid(nabla_core::FastPath::name(&$op), "no inputs")),
        }
    };
}

mod adam;
mod attention;
mod batch_norm;
mod lstm;
mod relu;
mod rows;

use crate::elementwise::Real;
use nabla_core::fast_path::{
    AttentionDims, AttentionOp, BatchNormDims, BatchNormOp, LstmDims, LstmOp, ReluOp, RowOp,
};
use nabla_core::{FastPathKernels, HostAllocator, HostData, HostLoop, HostView, Result};

/// Runs a fused kernel's native loop ([`HostLoop`]) in place on `results` with the read-only
/// `reads`; `false`, having written nothing, when the slices are not of the loop's form.
pub(crate) fn run_host_loop<T: Real>(
    host_loop: &HostLoop,
    results: &mut [&mut [T]],
    reads: &[&[T]],
) -> bool {
    match host_loop {
        HostLoop::Adam(update) => adam::run(update, results, reads),
    }
}

/// The inputs' elements as `T`, or an error naming the op `op` (the dtypes were validated by the
/// op's description; this is the typed view of them).
fn typed_inputs<'a, T: nabla_core::Element>(
    op: &'static str,
    views: &'a [HostView<'a>],
) -> Result<Vec<&'a [T]>> {
    views
        .iter()
        .map(|v| T::slice_of(v.data).ok_or_else(|| nabla_core::Error::dtype(op, v.data.dtype())))
        .collect()
}

/// Native host loops ([`HostLoop`]) run on this thread so far: a diagnostic that tells tests and
/// profilers whether a fused kernel's loop ran natively or its steps were interpreted.
pub fn host_loop_runs() -> usize {
    adam::native_runs()
}

/// The CPU backend's [`FastPathKernels`].
pub(crate) struct CpuFastPaths;

impl FastPathKernels for CpuFastPaths {
    fn rows(
        &self,
        op: RowOp,
        row_len: usize,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        rows::run(op, row_len, inputs, alloc)
    }

    fn relu(
        &self,
        op: ReluOp,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        relu::run_op(op, inputs, alloc)
    }

    fn lstm(
        &self,
        op: LstmOp,
        dims: LstmDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        lstm::run_op(op, dims, inputs, alloc)
    }

    fn attention(
        &self,
        op: AttentionOp,
        dims: AttentionDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        by_float_dtype!(op, inputs, attention::run(op, dims, inputs, alloc))
    }

    fn batch_norm(
        &self,
        op: BatchNormOp,
        dims: BatchNormDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        by_float_dtype!(op, inputs, batch_norm::run(op, dims, inputs, alloc))
    }
}
