//! Fast paths: fused kernels that a backend may offer for ops that every backend can also run as a
//! composite of primitives (softmax, layer norm, ReLU, an LSTM layer, attention, batch norm).
//!
//! The split is by who knows what:
//! - this module describes each fused kernel — its parameters, the inputs it accepts and the output
//!   it writes ([`RowOp`], [`ReluOp`], [`LstmOp`], [`AttentionOp`], [`BatchNormOp`], each a
//!   [`FastPath`]) — and makes any of them an [`ExtensionOp`] ([`FastPathOp`]) that records like
//!   any other; an optimizer's update ([`AdamUpdate`]) is a native loop a fused kernel carries
//!   ([`crate::HostLoop`]) rather than an op;
//! - a backend that has the kernels implements [`FastPathKernels`] and returns them from
//!   [`crate::Backend::fast_path_kernels`] (the CPU backend does; a backend that returns `None`, the
//!   default, gets the composite);
//! - the crates above (`nabla-tensor`, `nabla-nn`) ask the backend for the kernels when an op is
//!   called, record a [`FastPathOp`] holding them when it has them, and bind the op's derivative
//!   rules. They hold no kernel and never compare a device name.

mod adam;
mod attention;
mod batch_norm;
mod lstm;
mod rows;

pub use adam::{AdamCoefficients, AdamUpdate};
pub use attention::{AttentionDims, AttentionOp};
pub use batch_norm::{BatchNormDims, BatchNormOp, BatchNormSettings};
pub use lstm::{LstmDims, LstmOp, time_of_step};
pub use rows::{ReluOp, RowKernel, RowOp};

use crate::{DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result};
use std::fmt::Debug;
use std::hash::{Hash, Hasher};

/// The fused kernels of a backend that computes on host memory, one method per fused family. Each
/// method receives inputs already validated by its op's [`FastPath::output_spec`] (contiguous, of
/// one float dtype, of the shapes the sizes say) and returns the output the op describes.
pub trait FastPathKernels: Send + Sync + 'static {
    /// A row op ([`RowOp`]) over rows of `row_len` elements.
    fn rows(
        &self,
        op: RowOp,
        row_len: usize,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;

    /// `relu` or its vector-Jacobian product.
    fn relu(
        &self,
        op: ReluOp,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;

    /// One LSTM layer or its vector-Jacobian product.
    fn lstm(
        &self,
        op: LstmOp,
        dims: LstmDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;

    /// Attention or its vector-Jacobian product.
    fn attention(
        &self,
        op: AttentionOp,
        dims: AttentionDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;

    /// Batch normalisation with batch statistics or its vector-Jacobian product.
    fn batch_norm(
        &self,
        op: BatchNormOp,
        dims: BatchNormDims,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;
}

/// A backend's fast-path kernels as a value an op can hold. All handles compare equal and hash to
/// nothing, so an op's identity stays its parameters (two recordings of one op on two CPU backends
/// are one function).
#[derive(Clone, Copy)]
pub struct FastKernels(pub &'static dyn FastPathKernels);

impl PartialEq for FastKernels {
    fn eq(&self, _other: &FastKernels) -> bool {
        true
    }
}

impl Eq for FastKernels {}

impl Hash for FastKernels {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

impl Debug for FastKernels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FastKernels")
    }
}

/// The description of one fused kernel: its name, the inputs it accepts and its output, and which
/// of a backend's [`FastPathKernels`] runs it.
pub trait FastPath: Copy + Debug + PartialEq + Eq + Hash + Send + Sync + 'static {
    /// The op's name, namespaced by the family (`"fused.softmax"`); its rules are bound under it.
    fn name(&self) -> &'static str;

    /// The output for inputs of these dtypes and shapes, or an error naming the op and what it
    /// expects.
    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec>;

    /// Runs the kernel on inputs that [`FastPath::output_spec`] accepted.
    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData>;

    /// `true` when the op maps over leading dimensions ([`ExtensionOp::maps_leading_dims`]).
    fn maps_leading_dims(&self) -> bool {
        false
    }
}

/// A fused kernel `op` run by the backend's `kernels`: the extension op that the fast paths
/// record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FastPathOp<P: FastPath> {
    /// What the kernel computes.
    pub op: P,
    /// Who runs it.
    pub kernels: FastKernels,
}

impl<P: FastPath> FastPathOp<P> {
    /// The op `op` run by the same kernels (a rule's vjp op, say).
    pub fn with<Q: FastPath>(&self, op: Q) -> FastPathOp<Q> {
        FastPathOp {
            op,
            kernels: self.kernels,
        }
    }
}

impl<P: FastPath> ExtensionOp for FastPathOp<P> {
    fn name(&self) -> &str {
        self.op.name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        self.op.output_spec(inputs)
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        self.op.run(self.kernels.0, inputs, alloc)
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        self.op.maps_leading_dims()
    }
}

/// The dtypes and shapes of host inputs, as [`FastPath::output_spec`] takes them.
pub fn input_specs<'a>(inputs: &'a [HostView<'a>]) -> Vec<(DType, &'a [usize])> {
    inputs.iter().map(|v| (v.data.dtype(), v.shape)).collect()
}

/// The output of a fused op over `arity` inputs of one shape and one float dtype (`f32` or `f64`):
/// that shape and dtype, or an error naming `op` and what was expected.
pub fn same_float_inputs(
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
