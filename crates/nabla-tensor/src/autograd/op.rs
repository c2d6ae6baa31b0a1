//! The record an op leaves in the graph: which primitive ran, with the parameters its derivative needs.

use super::custom_call::CustomCall;
use super::extension_rules::BoundExtension;
use nabla_core::{Backend, BinaryOp, Conv2dParams, DType, ReduceOp, UnaryOp};
use std::sync::Arc;

/// A recorded primitive. Every tracked tensor op reduces to one of these; composites record the
/// primitives they are made of. Inputs are listed in the order the rules in `rules` expect.
#[derive(Clone, Debug)]
pub(crate) enum Op<B: Backend> {
    /// `y = x` (a copy to contiguous memory, or the marker a functional transform differentiates at).
    Identity,
    /// Elementwise unary math on `[x]`.
    Unary(UnaryOp),
    /// Elementwise binary math on `[a, b]`, already broadcast to one shape.
    Binary(BinaryOp),
    /// `where(cond, on_true, on_false)` on `[cond, t, f]`, already broadcast.
    Select,
    /// Conversion from the input dtype `from`.
    Cast { from: DType },
    /// A reduction over `axes` of an input of shape `input`, with the reduced axes kept as size 1.
    Reduce {
        op: ReduceOp,
        axes: Vec<usize>,
        input: Vec<usize>,
    },
    /// Inclusive cumulative sum along `axis`.
    Cumsum { axis: usize },
    /// Batched matrix product of `[a, b]` with equal batch dimensions, at `precision` (which its
    /// derivatives' products keep).
    Matmul { precision: crate::Precision },
    /// A reshape (also squeeze and unsqueeze) from shape `from`.
    Reshape { from: Vec<usize> },
    /// Output axis `i` is input axis `perm[i]`.
    Permute { perm: Vec<usize> },
    /// Broadcast from shape `from`.
    Broadcast { from: Vec<usize> },
    /// `len` elements of `axis` (of size `size`) starting at `first`, every `step`-th (may be negative).
    Slice {
        axis: usize,
        first: usize,
        len: usize,
        step: isize,
        size: usize,
    },
    /// Reversal of `axes`.
    Flip { axes: Vec<usize> },
    /// Constant padding with `pads[axis] = (before, after)`.
    Pad { pads: Vec<(usize, usize)> },
    /// Concatenation along `axis` of inputs with these sizes along it.
    Concat { axis: usize, sizes: Vec<usize> },
    /// `take_along_axis` on `[x, index]`; `size` is the length of `axis` in `x`.
    Gather { axis: usize, size: usize },
    /// Selection of `axis` entries by a 1-D index on `[x, index]`; `size` is the length of `axis` in `x`.
    IndexSelect { axis: usize, size: usize },
    /// Scatter-add on `[dst, index, src]`.
    ScatterAdd { axis: usize },
    /// 2-D convolution of `[x, w]`.
    Conv2d { params: Conv2dParams },
    /// Input-gradient convolution of `[grad_out, w]` for an input of spatial size `input_hw`.
    Conv2dInputGrad {
        params: Conv2dParams,
        input_hw: (usize, usize),
    },
    /// Weight-gradient convolution of `[x, grad_out]` for a kernel of spatial size `kernel_hw`.
    Conv2dWeightGrad {
        params: Conv2dParams,
        kernel_hw: (usize, usize),
    },
    /// An extension op (all inputs and the output saved) with the rules its family bound.
    Extension(BoundExtension<B>),
    /// A call of a custom function (its rules, or its body re-run); all inputs and the output saved.
    Custom(Arc<CustomCall<B>>),
    /// A move between two devices of one backend type ([`crate::Tensor::to_backend`]).
    Transfer { from: B, to: B },
}

/// Which inputs a reverse rule reads, so recording keeps a reference to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SavedInputs {
    /// Input `i` is kept when bit `i` is set (core primitives have at most three inputs).
    Mask(u8),
    /// Every input, however many (extension ops).
    All,
}

impl SavedInputs {
    /// Nothing is kept.
    pub(crate) const NONE: SavedInputs = SavedInputs::Mask(0);

    /// `true` when input `i` is kept.
    pub(crate) fn keeps(self, i: usize) -> bool {
        match self {
            SavedInputs::Mask(bits) => i < 8 && bits & (1u8 << i) != 0,
            SavedInputs::All => true,
        }
    }
}

impl<B: Backend> Op<B> {
    /// The name the user gave the op, for an extension op (`"linalg.inv"`) or a custom function;
    /// `None` for the built-in primitives, whose [`Op::name`] is already their own.
    pub(crate) fn own_name(&self) -> Option<&str> {
        if let Op::Extension(bound) = self {
            Some(bound.op.name())
        } else if let Op::Custom(call) = self {
            Some(call.name())
        } else {
            None
        }
    }

    /// The stage name of an anomaly-detection message, with the op's own name when it has one
    /// (`"'linalg.inv' forward"`).
    pub(crate) fn stage(&self, stage: &str) -> String {
        match self.own_name() {
            Some(name) => format!("'{name}' {stage}"),
            None => stage.to_string(),
        }
    }

    /// A short name for error messages and graph dumps.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Identity => "identity",
            Op::Unary(op) => op.name(),
            Op::Binary(op) => op.name(),
            Op::Select => "where",
            Op::Cast { .. } => "cast",
            Op::Reduce { op, .. } => op.name(),
            Op::Cumsum { .. } => "cumsum",
            Op::Matmul { .. } => "matmul",
            Op::Reshape { .. } => "reshape",
            Op::Permute { .. } => "permute",
            Op::Broadcast { .. } => "broadcast_to",
            Op::Slice { .. } => "slice",
            Op::Flip { .. } => "flip",
            Op::Pad { .. } => "pad",
            Op::Concat { .. } => "cat",
            Op::Gather { .. } => "gather",
            Op::IndexSelect { .. } => "index_select",
            Op::ScatterAdd { .. } => "scatter_add",
            Op::Conv2d { .. } => "conv2d",
            Op::Conv2dInputGrad { .. } => "conv2d_input_grad",
            Op::Conv2dWeightGrad { .. } => "conv2d_weight_grad",
            Op::Extension(_) => "extension",
            Op::Transfer { .. } => "to_backend",
            Op::Custom(_) => "custom function",
        }
    }
}
