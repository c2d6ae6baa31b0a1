//! Reverse rules of gather, index_select and scatter-add: each is the transpose of another.

use super::SavedValues;
use crate::Tensor;
use nabla_core::{Backend, Result};

fn zeros_with_axis<B: Backend>(g: &Tensor<B>, axis: usize, size: usize) -> Result<Tensor<B>> {
    let mut shape = g.shape().to_vec();
    shape[axis] = size;
    Tensor::zeros(shape, g.dtype(), g.backend())
}

/// `gather` reads; its transpose adds back at the positions read.
pub(super) fn gather<B: Backend>(
    axis: usize,
    size: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let index = s.input(1)?;
    let dx = zeros_with_axis(g, axis, size)?.scatter_add(axis as isize, index, g)?;
    Ok(vec![Some(dx), None])
}

pub(super) fn index_select<B: Backend>(
    axis: usize,
    size: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let index = s.input(1)?;
    let dx = zeros_with_axis(g, axis, size)?.index_add(axis as isize, index, g)?;
    Ok(vec![Some(dx), None])
}

/// `dst + scatter(src)`: the destination passes the gradient through; the source reads it back.
pub(super) fn scatter_add<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let dsrc = needs[2]
        .then(|| g.gather(axis as isize, s.input(1)?))
        .transpose()?;
    Ok(vec![Some(g.clone()), None, dsrc])
}
