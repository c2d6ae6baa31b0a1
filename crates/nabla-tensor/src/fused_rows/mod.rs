//! Fused row ops: softmax, log-softmax and layer normalisation over the trailing axes as single-pass
//! kernels, with their vector-Jacobian products as fused ops too (what PyTorch's
//! `_softmax_backward_data`, `_log_softmax_backward_data` and `native_layer_norm_backward` are).
//!
//! They form an extension family ([`FusedRows`]) whose rules are written in differentiable tensor ops
//! and in the family's own ops, so every transform differentiates them to any order:
//! - `softmax(x) = y`: both rules are `softmax_vjp(y, ·)` (its Jacobian is symmetric);
//! - `log_softmax(x) = y`: the reverse rule is `log_softmax_vjp(y, ·)`, the forward rule
//!   `log_softmax_jvp(y, ·)` (its Jacobian is not symmetric; the two ops are each other's transpose);
//! - `layer_norm(x)`: both rules are `layer_norm_vjp(x, ·)` (symmetric too);
//! - the vjp and jvp ops are linear in their cotangent argument, with the same op as that part of their
//!   rules, and have closed-form derivatives in the other argument.
//!
//! [`Tensor::softmax`], [`Tensor::log_softmax`] and [`Tensor::layer_norm`] use them on a backend with
//! fast-path kernels ([`Backend::fast_path_kernels`]) for `f32` and `f64` when
//! the reduced axes are the trailing ones; other backends, traced programs (whose compiler fuses the
//! composite's elementwise chains itself) and other axes keep the composite formula, which computes the
//! same values up to rounding.

mod rules;

use crate::Tensor;
use crate::autograd::ExtensionFamily;
use nabla_core::fast_path::{RowKernel, RowOp};
use nabla_core::{Backend, DType, FastKernels, FastPathOp, Result, normalize_axes};
use std::sync::Arc;

/// The fused row ops' family: binds their derivative rules ([`rules::rules`]).
pub(crate) struct FusedRows;

impl ExtensionFamily for FusedRows {
    fn rules<B: Backend>() -> crate::ExtensionRules<B> {
        rules::rules()
    }
}

/// Runs `op` on `inputs`, recorded with the family's rules.
pub(crate) fn apply<B: Backend>(op: FastPathOp<RowOp>, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<FusedRows>(Arc::new(op), inputs)
}

/// `kernel` over rows of the last `row_axes` axes, run by `kernels`.
fn rows_op(kernels: FastKernels, kernel: RowKernel, row_axes: usize) -> FastPathOp<RowOp> {
    FastPathOp {
        op: RowOp { kernel, row_axes },
        kernels,
    }
}

/// `softmax(x)` along the last axis, fused.
pub(crate) fn softmax<B: Backend>(kernels: FastKernels, x: &Tensor<B>) -> Result<Tensor<B>> {
    apply(rows_op(kernels, RowKernel::Softmax, 1), &[x])
}

/// `log_softmax(x)` along the last axis, fused.
pub(crate) fn log_softmax<B: Backend>(kernels: FastKernels, x: &Tensor<B>) -> Result<Tensor<B>> {
    apply(rows_op(kernels, RowKernel::LogSoftmax, 1), &[x])
}

/// `layer_norm(x, eps)` over the last `row_axes` axes, fused.
pub(crate) fn layer_norm<B: Backend>(
    kernels: FastKernels,
    x: &Tensor<B>,
    row_axes: usize,
    eps: f64,
) -> Result<Tensor<B>> {
    let kernel = RowKernel::LayerNorm { eps: eps.to_bits() };
    apply(rows_op(kernels, kernel, row_axes), &[x])
}

impl<B: Backend> Tensor<B> {
    /// How many trailing axes `axes` are (empty = all axes), or `None` when they are not the
    /// trailing ones; errors on invalid axes.
    pub(crate) fn trailing_axes(&self, op: &'static str, axes: &[isize]) -> Result<Option<usize>> {
        if axes.is_empty() {
            return Ok(Some(self.rank()));
        }
        let axes = normalize_axes(op, axes, self.rank())?;
        let k = axes.len();
        Ok(axes
            .iter()
            .copied()
            .eq(self.rank() - k..self.rank())
            .then_some(k))
    }
}

/// The backend's kernels when `x`'s softmax, log-softmax or layer norm over its last `row_axes`
/// axes should run as a fused row op: on a backend with fast-path kernels, for `f32` or `f64`, with
/// non-empty rows. With `row_axes = 0` (rows of one element), whether an elementwise fused op such
/// as [`crate::fused_relu`] applies.
pub(crate) fn applies<B: Backend>(x: &Tensor<B>, row_axes: usize) -> Option<FastKernels> {
    let applies = matches!(x.dtype(), DType::F32 | DType::F64)
        && row_axes <= x.rank()
        && x.shape()[x.rank() - row_axes..].iter().product::<usize>() > 0;
    applies.then(|| x.backend().fast_path_kernels()).flatten()
}
