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
//! [`Tensor::softmax`], [`Tensor::log_softmax`] and [`Tensor::layer_norm`] use them on the CPU backend for `f32` and `f64` when
//! the reduced axes are the trailing ones; other backends, traced programs (whose compiler fuses the
//! composite's elementwise chains itself) and other axes keep the composite formula, which computes the
//! same values up to rounding.

mod kernels;
mod rules;

use crate::Tensor;
use crate::autograd::ExtensionFamily;
use kernels::{RowFloat, run_rows};
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
    normalize_axes,
};
use std::sync::Arc;

/// Which row computation an op runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum RowKernel {
    /// `softmax(x)` along the row.
    Softmax,
    /// `y (g - <g, y>)` from the softmax output `y` and a cotangent `g`.
    SoftmaxVjp,
    /// `x - log(sum(e^x))` along the row.
    LogSoftmax,
    /// `g - e^y sum(g)` from the log-softmax output `y` and a cotangent `g`: its vector-Jacobian
    /// product.
    LogSoftmaxVjp,
    /// `t - <e^y, t>` from the log-softmax output `y` and a tangent `t`: its Jacobian-vector
    /// product (the transpose of the vector-Jacobian product).
    LogSoftmaxJvp,
    /// `(x - mean) / sqrt(var + eps)`; `eps` as the bits of an `f64` (so the op is `Eq + Hash`).
    LayerNorm {
        /// `eps.to_bits()`.
        eps: u64,
    },
    /// The layer norm's vector-Jacobian product from its input `x` and a cotangent `g`.
    LayerNormVjp {
        /// `eps.to_bits()`.
        eps: u64,
    },
}

impl RowKernel {
    /// How many tensors the op takes.
    fn arity(self) -> usize {
        match self {
            RowKernel::Softmax | RowKernel::LogSoftmax | RowKernel::LayerNorm { .. } => 1,
            RowKernel::SoftmaxVjp
            | RowKernel::LogSoftmaxVjp
            | RowKernel::LogSoftmaxJvp
            | RowKernel::LayerNormVjp { .. } => 2,
        }
    }
}

/// A fused row op: `kernel` applied independently to each row, a row being the last `row_axes` axes
/// flattened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RowOp {
    /// What each row computes.
    pub(crate) kernel: RowKernel,
    /// How many trailing axes make a row.
    pub(crate) row_axes: usize,
}

impl RowOp {
    /// The axes a row spans, as negative indices (`[-2, -1]` for two).
    pub(crate) fn axes(self) -> Vec<isize> {
        (1..=self.row_axes as isize).rev().map(|a| -a).collect()
    }

    /// The op `kernel` over the same rows.
    pub(crate) fn with(self, kernel: RowKernel) -> RowOp {
        RowOp { kernel, ..self }
    }
}

/// The fused row ops' family: binds their derivative rules ([`rules::rules`]).
pub(crate) struct FusedRows;

impl ExtensionFamily for FusedRows {
    fn rules<B: Backend>() -> crate::ExtensionRules<B> {
        rules::rules()
    }
}

/// Runs `op` on `inputs`, recorded with the family's rules.
pub(crate) fn apply<B: Backend>(op: RowOp, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<FusedRows>(Arc::new(op), inputs)
}

/// `softmax(x)` along the last axis, fused.
pub(crate) fn softmax<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    let op = RowOp {
        kernel: RowKernel::Softmax,
        row_axes: 1,
    };
    apply(op, &[x])
}

/// `log_softmax(x)` along the last axis, fused.
pub(crate) fn log_softmax<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    let op = RowOp {
        kernel: RowKernel::LogSoftmax,
        row_axes: 1,
    };
    apply(op, &[x])
}

/// `layer_norm(x, eps)` over the last `row_axes` axes, fused.
pub(crate) fn layer_norm<B: Backend>(
    x: &Tensor<B>,
    row_axes: usize,
    eps: f64,
) -> Result<Tensor<B>> {
    let op = RowOp {
        kernel: RowKernel::LayerNorm { eps: eps.to_bits() },
        row_axes,
    };
    apply(op, &[x])
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

/// `true` when `x`'s softmax, log-softmax or layer norm over its last `row_axes` axes should run as a fused row op:
/// on the CPU backend, for `f32` or `f64`, with non-empty rows. With `row_axes = 0` (rows of one
/// element), whether an elementwise fused op such as [`crate::fused_relu`] applies.
pub(crate) fn applies<B: Backend>(x: &Tensor<B>, row_axes: usize) -> bool {
    x.backend().device().kind == "cpu"
        && matches!(x.dtype(), DType::F32 | DType::F64)
        && row_axes <= x.rank()
        && x.shape()[x.rank() - row_axes..].iter().product::<usize>() > 0
}

impl RowOp {
    /// The op's name, namespaced by the family.
    fn op_name(&self) -> &'static str {
        match self.kernel {
            RowKernel::Softmax => "fused.softmax",
            RowKernel::SoftmaxVjp => "fused.softmax_vjp",
            RowKernel::LogSoftmax => "fused.log_softmax",
            RowKernel::LogSoftmaxVjp => "fused.log_softmax_vjp",
            RowKernel::LogSoftmaxJvp => "fused.log_softmax_jvp",
            RowKernel::LayerNorm { .. } => "fused.layer_norm",
            RowKernel::LayerNormVjp { .. } => "fused.layer_norm_vjp",
        }
    }
}

impl ExtensionOp for RowOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let op = self.op_name();
        let spec = same_float_inputs(op, self.kernel.arity(), inputs)?;
        if spec.shape.len() < self.row_axes {
            return Err(Error::invalid(
                op,
                format!(
                    "rows span the last {} axes, but the input has shape {:?}",
                    self.row_axes, spec.shape
                ),
            ));
        }
        Ok(spec)
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let shape = views[0].shape;
        let n: usize = shape[shape.len() - self.row_axes..].iter().product();
        let data = |i: usize| views.get(i).map(|v| v.data);
        match (data(0), data(1)) {
            (Some(HostData::F32(a)), b) => {
                Ok(HostData::F32(self.run(a, f32_or_empty(b), n, alloc)?))
            }
            (Some(HostData::F64(a)), b) => {
                Ok(HostData::F64(self.run(a, f64_or_empty(b), n, alloc)?))
            }
            (other, _) => Err(Error::invalid(
                self.op_name(),
                format!("unsupported input {:?}", other.map(HostData::dtype)),
            )),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

/// The output of a fused op over `arity` inputs of one shape and one float dtype (`f32` or `f64`):
/// that shape and dtype, or an error naming `op` and what was expected.
pub(crate) fn same_float_inputs(
    op: &'static str,
    arity: usize,
    inputs: &[(DType, &[usize])],
) -> Result<OutputSpec> {
    if inputs.len() != arity {
        return Err(Error::invalid(
            op,
            format!("takes {arity} inputs, got {}", inputs.len()),
        ));
    }
    let (dtype, shape) = inputs[0];
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(Error::dtype(op, dtype).with_hint(format!("{op} takes f32 or f64 input")));
    }
    for &(d, s) in &inputs[1..] {
        if d != dtype {
            return Err(Error::DTypeMismatch {
                op,
                lhs: dtype,
                rhs: d,
            });
        }
        if s != shape {
            return Err(Error::shapes(op, shape, s).with_hint("the inputs need one shape"));
        }
    }
    Ok(OutputSpec {
        dtype,
        shape: shape.to_vec(),
    })
}

/// The second input's `f32` values, or none.
fn f32_or_empty(b: Option<&HostData>) -> &[f32] {
    match b {
        Some(HostData::F32(b)) => b,
        _ => &[],
    }
}

/// The second input's `f64` values, or none.
fn f64_or_empty(b: Option<&HostData>) -> &[f64] {
    match b {
        Some(HostData::F64(b)) => b,
        _ => &[],
    }
}

impl RowOp {
    /// The output over `a` (and `b`, which two-input kernels need of `a`'s length) in rows of `n`
    /// elements.
    fn run<T: RowFloat>(
        &self,
        a: &[T],
        b: &[T],
        n: usize,
        alloc: &dyn HostAllocator,
    ) -> Result<Vec<T>> {
        let b_len = if self.kernel.arity() == 2 { a.len() } else { 0 };
        if b.len() != b_len || !a.len().is_multiple_of(n) {
            return Err(Error::invalid(
                self.op_name(),
                format!(
                    "inputs of {} and {} elements do not make rows of {n}",
                    a.len(),
                    b.len()
                ),
            ));
        }
        let mut out: Vec<T> = alloc.vec(a.len());
        if !a.is_empty() {
            run_rows(
                self.kernel,
                n,
                a,
                b,
                &mut out.spare_capacity_mut()[..a.len()],
            );
        }
        // SAFETY: `run_rows` wrote all `a.len()` elements (an empty input has none to write).
        unsafe { out.set_len(a.len()) };
        Ok(out)
    }
}
