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

use super::extension::{self, ExtensionRules};
use super::op::Op;
use crate::Tensor;
use nabla_core::{Backend, Error, Result};

/// The values a rule reads: inputs marked in [`Op::saved_inputs`] and the output when
/// [`Op::saves_output`].
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
        Op::Matmul => linalg::matmul(saved, g, needs),
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
