//! Reverse (vector-Jacobian product) rules for every recorded primitive, written in tensor ops so that
//! a reverse pass with graph creation records them too and gradients can be differentiated again.
//!
//! The rules are generic over the backend, so the same code serves every device and any backend that
//! records instead of computing.

mod elementwise;
mod forward;
mod indexing;
mod linalg;
mod movement;
mod reduce;

pub(crate) use forward::jvp;
pub(crate) use linalg::{gram_jvp, is_transposed, rhs_cotangent_untransposed};
pub(crate) use movement::slice as slice_cotangent;

use super::extension;
use super::extension_rules::ExtensionRules;
use super::op::{Op, SavedInputs};
use crate::Tensor;
use nabla_core::{Backend, Error, Result};

/// What an op's rules read, which recording keeps: the inputs in `inputs` and, when `output`, the
/// op's own output. Each op family states it beside its rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Saves {
    pub(crate) inputs: SavedInputs,
    pub(crate) output: bool,
}

impl Saves {
    /// Nothing: linear ops.
    pub(crate) const NOTHING: Saves = Saves {
        inputs: SavedInputs::NONE,
        output: false,
    };
    /// Only the output.
    pub(crate) const OUTPUT: Saves = Saves {
        inputs: SavedInputs::NONE,
        output: true,
    };

    /// The inputs whose bits are set in `mask`.
    pub(crate) const fn inputs(mask: u8) -> Saves {
        Saves {
            inputs: SavedInputs::Mask(mask),
            output: false,
        }
    }

    /// The same, and the output too.
    pub(crate) const fn and_output(self) -> Saves {
        Saves {
            output: true,
            ..self
        }
    }
}

/// What the rules of `op` read (the table recording follows), routed to the op's family.
pub(crate) fn saves<B: Backend>(op: &Op<B>) -> Saves {
    match op {
        Op::Unary(u) => elementwise::unary_saves(*u),
        Op::Binary(b) => elementwise::binary_saves(*b),
        Op::Select => Saves::inputs(0b1),
        Op::Reduce { op, .. } => reduce::reduce_saves(*op),
        Op::Matmul { .. }
        | Op::Conv2d { .. }
        | Op::Conv2dInputGrad { .. }
        | Op::Conv2dWeightGrad { .. } => Saves::inputs(0b11),
        Op::Gather { .. } | Op::IndexSelect { .. } | Op::ScatterAdd { .. } => Saves::inputs(0b10),
        Op::Extension(_) | Op::Custom(_) => Saves {
            inputs: SavedInputs::All,
            output: true,
        },
        Op::Identity
        | Op::Cast { .. }
        | Op::Transfer { .. }
        | Op::Cumsum { .. }
        | Op::Reshape { .. }
        | Op::Permute { .. }
        | Op::Broadcast { .. }
        | Op::Slice { .. }
        | Op::Flip { .. }
        | Op::Pad { .. }
        | Op::Concat { .. } => Saves::NOTHING,
    }
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

/// The values a rule reads: the inputs and the output its op [`saves`].
pub(crate) struct SavedValues<B: Backend> {
    pub(crate) inputs: Vec<Option<Tensor<B>>>,
    pub(crate) output: Option<Tensor<B>>,
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
        Op::Unary(u) => Ok(vec![Some(elementwise::unary(*u, saved, g)?)]),
        Op::Binary(b) => elementwise::binary(*b, saved, g, needs),
        Op::Select => elementwise::select(saved, g, needs),
        Op::Cast { from } => Ok(vec![Some(g.cast(*from)?)]),
        Op::Transfer { from, .. } => Ok(vec![Some(g.move_to(from)?)]),
        Op::Reduce { op, axes, input } => {
            Ok(vec![Some(reduce::reduce(*op, axes, input, saved, g)?)])
        }
        Op::Cumsum { axis } => Ok(vec![Some(reduce::cumsum(*axis, g)?)]),
        Op::Matmul { precision } => linalg::matmul(saved, g, needs, *precision),
        Op::Conv2d { params } => linalg::conv2d(params, saved, g, needs),
        Op::Conv2dInputGrad { params, .. } => linalg::conv2d_input_grad(params, saved, g, needs),
        Op::Conv2dWeightGrad { params, .. } => linalg::conv2d_weight_grad(params, saved, g, needs),
        Op::Reshape { from } => Ok(vec![Some(g.reshape(from.clone())?)]),
        Op::Permute { perm } => Ok(vec![Some(movement::permute(perm, g)?)]),
        Op::Broadcast { from } => Ok(vec![Some(movement::unbroadcast(from, g)?)]),
        Op::Slice {
            axis,
            first,
            len,
            step,
            size,
        } => Ok(vec![Some(movement::slice(
            *axis, *first, *len, *step, *size, g,
        )?)]),
        Op::Flip { axes } => {
            let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
            Ok(vec![Some(g.flip(&axes)?)])
        }
        Op::Pad { pads } => Ok(vec![Some(movement::pad(pads, g)?)]),
        Op::Concat { axis, sizes } => movement::concat(*axis, sizes, g),
        Op::Gather { axis, size } => indexing::gather(*axis, *size, saved, g),
        Op::IndexSelect { axis, size } => indexing::index_select(*axis, *size, saved, g),
        Op::ScatterAdd { axis } => indexing::scatter_add(*axis, saved, g, needs),
    }
}
