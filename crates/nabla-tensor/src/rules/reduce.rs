//! Reductions and the cumulative sum: what each saves, its reverse, forward and batching rules.

use super::{SavedValues, Saves};
use crate::Tensor;
use crate::vmap::{BatchValue, batch_axis};
use nabla_core::{Backend, ReduceOp, Result};

/// `g` has the input's rank with the reduced `axes` kept as size 1.
pub(super) fn reduce<B: Backend>(
    op: ReduceOp,
    axes: &[usize],
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Tensor<B>> {
    let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    match op {
        ReduceOp::Sum => g.broadcast_to(s.input_shape(0)?.to_vec()),
        ReduceOp::Max | ReduceOp::Min if g.dtype().is_complex() => {
            Err(super::elementwise::not_for_complex(op.name(), g))
        }
        // Ties share the gradient evenly, as JAX does.
        ReduceOp::Max | ReduceOp::Min => {
            let (x, y) = (s.input(0)?, s.output()?);
            let hit = x.eq(y)?;
            let count = hit.cast(g.dtype())?.sum(&axes, true)?;
            hit.where_(g.div(&count)?, 0.0)
        }
        ReduceOp::Prod => prod(&axes, s.input(0)?, g),
    }
}

/// d prod / d x_i is the product of the other elements. Dividing the product by `x_i` fails at zeros,
/// so zeros are handled apart: with `x_i` replaced by 1 where it is zero, the derivative is
/// `prod(nonzero) / x_i` times the product of the *other* zeros, which is 1 when there is none, the
/// (tracked) value of that zero when there is one, and 0 when there are more. Keeping the other zero as
/// a tracked factor, rather than a constant 0, makes the result right to first order in every element,
/// so second derivatives are right at zeros too (d2 prod / dx_i dx_j = product of the rest).
fn prod<B: Backend>(axes: &[isize], x: &Tensor<B>, g: &Tensor<B>) -> Result<Tensor<B>> {
    let is_zero = x.eq(0.0)?;
    let safe = is_zero.where_(1.0, x)?;
    let product_of_nonzero = safe.prod(axes, true)?;
    let zero_count = is_zero.cast(x.dtype())?;
    let other_zeros = zero_count.sum(axes, true)?.sub(&zero_count)?;
    // The sum of the other zeros' values: 0, but it carries their derivative.
    let zero_values = is_zero.where_(x, 0.0)?;
    let other_zero = zero_values.sum(axes, true)?.sub(&zero_values)?;
    let one_other = other_zeros.eq(1.0)?.where_(&other_zero, 0.0)?;
    let factor = other_zeros.eq(0.0)?.where_(1.0, &one_other)?;
    g.mul(&product_of_nonzero.div(&safe)?.mul(&factor)?)
}

/// The reverse of an inclusive cumulative sum is a reversed cumulative sum.
pub(super) fn cumsum<B: Backend>(axis: usize, g: &Tensor<B>) -> Result<Tensor<B>> {
    let a = [axis as isize];
    g.flip(&a)?.cumsum(axis as isize)?.flip(&a)
}

/// What the rules of reduction `op` read: the input's shape for a sum, the input for a product, input
/// and output for a maximum or minimum.
pub(super) fn reduce_saves(op: ReduceOp) -> Saves {
    match op {
        ReduceOp::Sum => Saves::SPECS,
        ReduceOp::Prod => Saves::inputs(0b1),
        ReduceOp::Max | ReduceOp::Min => Saves::inputs(0b1).and_output(),
    }
}

/// The tangent of a reduction: the reverse factor applied to the tangent, reduced over `axes`.
pub(super) fn reduce_jvp<B: Backend>(
    op: ReduceOp,
    axes: &[usize],
    s: &SavedValues<B>,
    t: &Tensor<B>,
) -> Result<Tensor<B>> {
    let signed: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    reduce(op, axes, s, t)?.sum(&signed, true)
}

/// Batching: the axes move past a batched operand's batch dimension (no axes: the identity).
pub(super) fn reduce_batch<B: Backend>(
    op: ReduceOp,
    axes: &[usize],
    x: &BatchValue<B>,
) -> Result<Tensor<B>> {
    if axes.is_empty() {
        return Ok(x.tensor.clone());
    }
    let axes: Vec<isize> = axes.iter().map(|&a| batch_axis(a, x.batched)).collect();
    x.tensor.reduce(op, &axes, true)
}

/// Batching: the sum runs along the shifted axis.
pub(super) fn cumsum_batch<B: Backend>(axis: usize, x: &BatchValue<B>) -> Result<Tensor<B>> {
    x.tensor.cumsum(batch_axis(axis, x.batched))
}
