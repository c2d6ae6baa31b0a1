//! Reverse rules of reductions and the cumulative sum.

use super::SavedValues;
use crate::Tensor;
use nabla_core::{Backend, ReduceOp, Result};

/// `g` has the input's rank with the reduced `axes` kept as size 1.
pub(super) fn reduce<B: Backend>(
    op: ReduceOp,
    axes: &[usize],
    input: &[usize],
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Tensor<B>> {
    let axes: Vec<isize> = axes.iter().map(|&a| a as isize).collect();
    match op {
        ReduceOp::Sum => g.broadcast_to(input.to_vec()),
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
/// so zeros are handled apart: with no zero the gradient is `p / x`; with one zero only that element
/// gets the product of the others; with two or more every element gets zero.
fn prod<B: Backend>(axes: &[isize], x: &Tensor<B>, g: &Tensor<B>) -> Result<Tensor<B>> {
    let is_zero = x.eq(0.0)?;
    let safe = is_zero.where_(1.0, x)?;
    let product_of_nonzero = safe.prod(axes, true)?;
    let zeros = is_zero.cast(x.dtype())?.sum(axes, true)?;
    let no_zero = zeros.eq(0.0)?;
    let one_zero = zeros.eq(1.0)?;
    let without_self = product_of_nonzero.div(&safe)?;
    let at_the_zero = is_zero.where_(&product_of_nonzero, 0.0)?;
    let others = one_zero.where_(&at_the_zero, 0.0)?;
    let d = no_zero.where_(&without_self, &others)?;
    g.mul(&d)
}

/// The reverse of an inclusive cumulative sum is a reversed cumulative sum.
pub(super) fn cumsum<B: Backend>(axis: usize, g: &Tensor<B>) -> Result<Tensor<B>> {
    let a = [axis as isize];
    g.flip(&a)?.cumsum(axis as isize)?.flip(&a)
}
