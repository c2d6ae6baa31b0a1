//! The record an op leaves in the graph: which primitive ran, with the parameters its derivative needs.

use super::custom_call::CustomCall;
use super::extension_rules::BoundExtension;
use nabla_core::{Backend, DType, Primitive};
use std::sync::Arc;

/// A recorded op: a backend primitive, a view, or one of the records that are not backend work
/// (markers, extension ops with their rules, custom functions, device moves). Every tracked tensor op
/// reduces to these; composites record what they are made of. Inputs are listed in the order of the
/// primitive's (the backend method's) arguments.
#[derive(Clone, Debug)]
pub(crate) enum Op<B: Backend> {
    /// `y = x`: the marker a functional transform differentiates at.
    Identity,
    /// A backend primitive ([`Primitive`], the vocabulary the tracing backend and traced programs
    /// share); its rules sit in the family modules of `rules`.
    Primitive(Primitive),
    /// A new layout over the input's buffer.
    View(View),
    /// An extension op (all inputs and the output saved) with the rules its family bound.
    Extension(BoundExtension<B>),
    /// A call of a custom function (its rules, or its body re-run); all inputs and the output saved.
    Custom(Arc<CustomCall<B>>),
    /// A move between two devices of one backend type ([`crate::Tensor::to_backend`]).
    Transfer { from: B, to: B },
}

/// A view: the output reads the input's buffer through another layout, with no kernel. The input's
/// shape (the shape a cotangent goes back to) is recorded beside it ([`InputSpec`]).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum View {
    /// A reshape (also squeeze and unsqueeze).
    Reshape,
    /// Output axis `i` is input axis `perm[i]`.
    Permute { perm: Vec<usize> },
    /// A broadcast to the output's shape.
    Broadcast,
    /// `len` elements of `axis` starting at `first`, every `step`-th (may be negative).
    Slice {
        axis: usize,
        first: usize,
        len: usize,
        step: isize,
    },
    /// Reversal of `axes`.
    Flip { axes: Vec<usize> },
}

/// The dtype and shape of an op's input, recorded for the rules that read them (the `specs` of the
/// family's saves table): a reduction's or broadcast's input shape, a cast's source dtype, the sizes of
/// concatenated parts.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct InputSpec {
    pub(crate) dtype: DType,
    pub(crate) shape: Vec<usize>,
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

    /// A short name for error messages and graph dumps: the primitive's (`"exp"`, `"matmul"`), the
    /// view's, or the record's.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Op::Identity => "identity",
            // An extension op is recorded as `Op::Extension`, whose own name `stage` adds.
            Op::Primitive(Primitive::Extension(_)) => "extension",
            Op::Primitive(Primitive::Unary(op)) => op.name(),
            Op::Primitive(Primitive::Binary(op)) => op.name(),
            Op::Primitive(Primitive::Compare(op)) => op.name(),
            Op::Primitive(Primitive::ArgReduce { op, .. }) => op.name(),
            Op::Primitive(p) => p.kind().name(),
            Op::View(View::Reshape) => "reshape",
            Op::View(View::Permute { .. }) => "permute",
            Op::View(View::Broadcast) => "broadcast_to",
            Op::View(View::Slice { .. }) => "slice",
            Op::View(View::Flip { .. }) => "flip",
            Op::Extension(_) => "extension",
            Op::Transfer { .. } => "to_backend",
            Op::Custom(_) => "custom function",
        }
    }
}
