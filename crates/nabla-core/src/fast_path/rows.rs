//! The row ops (softmax, log-softmax, layer norm over the trailing axes, and their vector-Jacobian
//! products: what PyTorch's `_softmax_backward_data`, `_log_softmax_backward_data` and
//! `native_layer_norm_backward` are) and ReLU in one pass each way (`relu`, `threshold_backward`).

use super::{FastPath, FastPathKernels, same_float_inputs};
use crate::{DType, Error, HostAllocator, HostData, HostView, OutputSpec, Result};

/// Which row computation a [`RowOp`] runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RowKernel {
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
    pub fn arity(self) -> usize {
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
/// flattened. Inputs are `f32` or `f64`, all of one shape; the output has that shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RowOp {
    /// What each row computes.
    pub kernel: RowKernel,
    /// How many trailing axes make a row.
    pub row_axes: usize,
}

impl RowOp {
    /// The axes a row spans, as negative indices (`[-2, -1]` for two).
    pub fn axes(self) -> Vec<isize> {
        (1..=self.row_axes as isize).rev().map(|a| -a).collect()
    }

    /// The op `kernel` over the same rows.
    pub fn with(self, kernel: RowKernel) -> RowOp {
        RowOp { kernel, ..self }
    }
}

impl FastPath for RowOp {
    fn name(&self) -> &'static str {
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

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let op = self.name();
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

    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        let shape = inputs.first().map_or(&[][..], |v| v.shape);
        let row_len = shape[shape.len().saturating_sub(self.row_axes)..]
            .iter()
            .product();
        kernels.rows(*self, row_len, inputs, alloc)
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

/// ReLU without the boolean mask of the composite `where(x <= 0, 0, x)`, and its vector-Jacobian
/// product from the output: `f32` or `f64` inputs of one shape, an output of that shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReluOp {
    /// `x -> x <= 0 ? 0 : x`.
    Relu,
    /// `(y, g) -> y <= 0 ? 0 : g`.
    ReluVjp,
}

impl ReluOp {
    /// How many tensors the op takes.
    pub fn arity(self) -> usize {
        match self {
            ReluOp::Relu => 1,
            ReluOp::ReluVjp => 2,
        }
    }
}

impl FastPath for ReluOp {
    fn name(&self) -> &'static str {
        match self {
            ReluOp::Relu => "fused.relu",
            ReluOp::ReluVjp => "fused.relu_vjp",
        }
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        same_float_inputs(self.name(), self.arity(), inputs)
    }

    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        kernels.relu(*self, inputs, alloc)
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}
