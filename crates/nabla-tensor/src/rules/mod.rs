//! The rules of every primitive, one module per family (`elementwise`, `reduce`, `linalg`,
//! `movement`, `indexing`), each holding side by side what recording saves, the reverse
//! (vector-Jacobian product) rule, the forward (Jacobian-vector product) rule and the batching rule.
//! Four exhaustive tables route a primitive to its family: [`saves`] and [`vjp`] here, [`jvp`] in
//! `forward.rs` and [`batch`] in `batch.rs`; a primitive's shape rule and kernels are the catalogue's
//! (`nabla_core::primitive`) and the backends'.
//!
//! The rules are written in tensor ops, so that a reverse pass with graph creation records them too
//! and gradients can be differentiated again, and a batched replay is differentiable and traceable.
//! They are generic over the backend, so the same code serves every device and any backend that
//! records instead of computing.

mod batch;
mod elementwise;
mod forward;
mod indexing;
mod linalg;
mod movement;
mod reduce;

pub(crate) use batch::batch;
pub(crate) use forward::jvp;
pub(crate) use linalg::{gram_jvp, is_transposed, rhs_cotangent_untransposed};
pub(crate) use movement::slice as slice_cotangent;

use crate::autograd::ExtensionRules;
use crate::autograd::extension;
use crate::autograd::op::{InputSpec, Op, SavedInputs, View};
use crate::{Precision, Tensor};
use nabla_core::{Backend, Error, Primitive, Result};

/// What an op's rules read, which recording keeps: the inputs in `inputs`, when `output` the op's own
/// output, and when `specs` its inputs' dtypes and shapes ([`InputSpec`]). Each op family states it
/// beside its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Saves {
    pub(crate) inputs: SavedInputs,
    pub(crate) output: bool,
    pub(crate) specs: bool,
}

impl Saves {
    /// Nothing: linear ops.
    pub(crate) const NOTHING: Saves = Saves {
        inputs: SavedInputs::NONE,
        output: false,
        specs: false,
    };
    /// Only the output.
    pub(crate) const OUTPUT: Saves = Saves {
        output: true,
        ..Saves::NOTHING
    };
    /// Only the inputs' dtypes and shapes (the shape a cotangent goes back to).
    pub(crate) const SPECS: Saves = Saves {
        specs: true,
        ..Saves::NOTHING
    };

    /// The inputs whose bits are set in `mask`.
    pub(crate) const fn inputs(mask: u8) -> Saves {
        Saves {
            inputs: SavedInputs::Mask(mask),
            ..Saves::NOTHING
        }
    }

    /// The same, and the output too.
    pub(crate) const fn and_output(self) -> Saves {
        Saves {
            output: true,
            ..self
        }
    }

    /// The same, and the inputs' dtypes and shapes too.
    pub(crate) const fn and_specs(self) -> Saves {
        Saves {
            specs: true,
            ..self
        }
    }
}

/// What the rules of `op` read (the table recording follows), routed to the op's family.
pub(crate) fn saves<B: Backend>(op: &Op<B>) -> Saves {
    match op {
        Op::Primitive(p) => primitive_saves(p),
        Op::View(View::Reshape | View::Broadcast | View::Slice { .. }) => Saves::SPECS,
        Op::View(View::Permute { .. } | View::Flip { .. }) => Saves::NOTHING,
        Op::Extension(_) | Op::Custom(_) => Saves {
            inputs: SavedInputs::All,
            output: true,
            specs: false,
        },
        Op::Identity | Op::Transfer { .. } => Saves::NOTHING,
    }
}

/// The primitives eager code never records, as a pattern, so that every table over `Primitive`
/// (`saves`, `vjp`, `jvp`) stays an exhaustive match while the list is written once (see
/// [`not_recorded`] for why each is absent).
macro_rules! unrecorded {
    () => {
        Primitive::Constant(_)
            | Primitive::Full { .. }
            | Primitive::Random { .. }
            | Primitive::Compare(_)
            | Primitive::ArgReduce { .. }
            | Primitive::OneHot { .. }
            | Primitive::Sort { .. }
            | Primitive::Topk { .. }
            | Primitive::MaxPool2d(_)
            | Primitive::Extension(_)
            | Primitive::Fused { .. }
    };
}
pub(super) use unrecorded;

/// What the rules of primitive `p` read, from its family's table.
fn primitive_saves(p: &Primitive) -> Saves {
    match p {
        Primitive::Unary(u) => elementwise::unary_saves(*u),
        Primitive::Binary(b) => elementwise::binary_saves(*b),
        Primitive::Select => Saves::inputs(0b1),
        Primitive::Cast(_) => Saves::SPECS,
        Primitive::Reduce { op, .. } => reduce::reduce_saves(*op),
        Primitive::Matmul
        | Primitive::MatmulRounded(_)
        | Primitive::Conv2d(_)
        | Primitive::Conv2dInputGrad { .. }
        | Primitive::Conv2dWeightGrad { .. } => Saves::inputs(0b11),
        Primitive::Gather { .. } | Primitive::IndexSelect { .. } => Saves::inputs(0b10).and_specs(),
        Primitive::ScatterAdd { .. } => Saves::inputs(0b10),
        Primitive::Concat { .. } => Saves::SPECS,
        Primitive::Copy | Primitive::Cumsum { .. } | Primitive::Pad { .. } => Saves::NOTHING,
        // Their rules refuse, so nothing is kept.
        unrecorded!() => Saves::NOTHING,
    }
}

/// The error of a rule asked of a primitive eager code never records: sources (constants, fills,
/// random draws) have no inputs; comparisons, arg-reductions and one-hot encodings have integer or
/// boolean outputs; sort, top-k and max pooling record the gathers of their positions; extension
/// ops are recorded with their bound rules and fused kernels only exist in traced programs.
pub(super) fn not_recorded(p: &Primitive, stage: &'static str) -> Error {
    Error::autodiff(
        stage,
        format!(
            "internal error: '{}' is never recorded in the derivative graph, so it has no {stage} rule",
            p.name()
        ),
    )
}

/// The sum of the non-zero terms of a product rule.
pub(super) fn sum_terms<B: Backend, const N: usize>(
    terms: [Option<Tensor<B>>; N],
) -> Result<Option<Tensor<B>>> {
    let mut total: Option<Tensor<B>> = None;
    for term in terms.into_iter().flatten() {
        total = Some(match total {
            Some(sum) => sum.add(&term)?,
            None => term,
        });
    }
    Ok(total)
}

/// The values a rule reads: the inputs, the output and the input specs its op [`saves`].
pub(crate) struct SavedValues<B: Backend> {
    pub(crate) inputs: Vec<Option<Tensor<B>>>,
    pub(crate) output: Option<Tensor<B>>,
    pub(crate) specs: Vec<InputSpec>,
}

impl<B: Backend> SavedValues<B> {
    /// Input `i`, which the op must have saved.
    pub(crate) fn input(&self, i: usize) -> Result<&Tensor<B>> {
        self.inputs.get(i).and_then(Option::as_ref).ok_or_else(|| {
            Error::autodiff(
                "backward",
                format!("internal error: input {i} was not saved for the reverse rule"),
            )
        })
    }

    /// Every input, each of which the op must have saved (extension ops save them all).
    pub(crate) fn all_inputs(&self) -> Result<Vec<Tensor<B>>> {
        (0..self.inputs.len())
            .map(|i| self.input(i).cloned())
            .collect()
    }

    /// The dtype and shape of input `i`, which the op must have saved.
    pub(crate) fn spec(&self, i: usize) -> Result<&InputSpec> {
        self.specs.get(i).ok_or_else(|| {
            Error::autodiff(
                "backward",
                format!("internal error: the shape of input {i} was not saved for the rule"),
            )
        })
    }

    /// The shape of input `i` (see [`SavedValues::spec`]).
    pub(crate) fn input_shape(&self, i: usize) -> Result<&[usize]> {
        Ok(&self.spec(i)?.shape)
    }

    /// The length of `axis` of input `i` (see [`SavedValues::spec`]).
    pub(crate) fn input_axis(&self, i: usize, axis: usize) -> Result<usize> {
        self.input_shape(i)?.get(axis).copied().ok_or_else(|| {
            Error::autodiff(
                "backward",
                format!("internal error: input {i} has no axis {axis}"),
            )
        })
    }

    /// The op's output, which the op must have saved.
    pub(crate) fn output(&self) -> Result<&Tensor<B>> {
        self.output.as_ref().ok_or_else(|| {
            Error::autodiff(
                "backward",
                "internal error: the output was not saved for the reverse rule",
            )
        })
    }
}

/// Gradients of the inputs of `op` given the output cotangent `g`; `needs[i]` is false for inputs that
/// need none (the rule may skip them). Entries are `None` for inputs that get no gradient. Extension ops
/// take their rules from `overrides` when it has them, else from their family's bound rules.
pub(crate) fn vjp<B: Backend>(
    op: &Op<B>,
    saved: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
    overrides: Option<&ExtensionRules<B>>,
) -> Result<Vec<Option<Tensor<B>>>> {
    match op {
        Op::Extension(e) => extension::vjp(
            e,
            overrides,
            &saved.all_inputs()?,
            saved.output()?,
            g,
            needs,
        ),
        Op::Custom(c) => c.vjp(&saved.all_inputs()?, saved.output()?, g, needs, overrides),
        Op::Identity => Ok(vec![Some(g.clone())]),
        Op::Transfer { from, .. } => Ok(vec![Some(g.move_to(from)?)]),
        Op::Primitive(p) => primitive_vjp(p, saved, g, needs),
        Op::View(v) => Ok(vec![Some(movement::view_vjp(v, saved, g)?)]),
    }
}

/// [`vjp`] of a backend primitive, routed to its family.
fn primitive_vjp<B: Backend>(
    p: &Primitive,
    saved: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let one = |t: Tensor<B>| Ok(vec![Some(t)]);
    match p {
        Primitive::Copy => one(g.clone()),
        Primitive::Unary(u) => one(elementwise::unary(*u, saved, g)?),
        Primitive::Binary(b) => elementwise::binary(*b, saved, g, needs),
        Primitive::Select => elementwise::select(saved, g, needs),
        Primitive::Cast(_) => one(g.cast(saved.spec(0)?.dtype)?),
        Primitive::Reduce { op, axes } => one(reduce::reduce(*op, axes, saved, g)?),
        Primitive::Cumsum { axis } => one(reduce::cumsum(*axis, g)?),
        Primitive::Matmul => linalg::matmul(saved, g, needs, Precision::Full),
        Primitive::MatmulRounded(precision) => linalg::matmul(saved, g, needs, *precision),
        Primitive::Conv2d(params) => linalg::conv2d(params, saved, g, needs),
        Primitive::Conv2dInputGrad { params, .. } => {
            linalg::conv2d_input_grad(params, saved, g, needs)
        }
        Primitive::Conv2dWeightGrad { params, .. } => {
            linalg::conv2d_weight_grad(params, saved, g, needs)
        }
        Primitive::Pad { pads, .. } => one(movement::pad(pads, g)?),
        Primitive::Concat { axis } => movement::concat(*axis, saved, g),
        Primitive::Gather { axis } => indexing::gather(*axis, saved, g),
        Primitive::IndexSelect { axis } => indexing::index_select(*axis, saved, g),
        Primitive::ScatterAdd { axis } => indexing::scatter_add(*axis, saved, g, needs),
        unrecorded!() => Err(not_recorded(p, "backward")),
    }
}
