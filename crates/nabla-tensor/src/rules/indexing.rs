//! Gather, index_select and scatter-add: each saves its index (input 1) and its reverse rule is the
//! transpose of another; forward rules apply the op to the tangent; batching rules give the source and
//! the index the batch dimension.

use super::SavedValues;
use crate::Tensor;
use crate::vmap::{BatchValue, any_batched, batch_axis, expand_n};
use nabla_core::{Backend, Result};

fn zeros_with_axis<B: Backend>(g: &Tensor<B>, axis: usize, size: usize) -> Result<Tensor<B>> {
    let mut shape = g.shape().to_vec();
    shape[axis] = size;
    // A broadcast zero: the scatter writes its output once, rather than copying a filled buffer.
    Tensor::zeros([], g.dtype(), g.backend())?.broadcast_to(shape)
}

/// `gather` reads; its transpose adds back at the positions read.
pub(super) fn gather<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let index = s.input(1)?;
    let dx =
        zeros_with_axis(g, axis, s.input_axis(0, axis)?)?.scatter_add(axis as isize, index, g)?;
    Ok(vec![Some(dx), None])
}

pub(super) fn index_select<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let index = s.input(1)?;
    let dx =
        zeros_with_axis(g, axis, s.input_axis(0, axis)?)?.index_add(axis as isize, index, g)?;
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

/// The tangent of a scatter-add: the destination's tangent with the source's tangent added in.
pub(super) fn scatter_add_jvp<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
    out: &[usize],
) -> Result<Option<Tensor<B>>> {
    let index = s.input(1)?;
    let Some(any) = t[0].as_ref().or(t[2].as_ref()) else {
        return Ok(None);
    };
    let dst = match &t[0] {
        Some(td) => td.clone(),
        None => Tensor::zeros(out.to_vec(), any.dtype(), any.backend())?,
    };
    match &t[2] {
        Some(ts) => Ok(Some(dst.scatter_add(axis as isize, index, ts)?)),
        None => Ok(Some(dst)),
    }
}

/// Batching: source and index both with the batch dimension, gathered along the shifted axis.
pub(super) fn gather_batch<B: Backend>(
    axis: usize,
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Tensor<B>> {
    let lead = any_batched(operands);
    let [src, index] = expand_n(operands, batch)?;
    src.gather(batch_axis(axis, lead), &index)
}

/// Batching: a shared 1-D index selects along the shifted axis; a batched one (one index vector per
/// example) becomes a gather along it.
pub(super) fn index_select_batch<B: Backend>(
    axis: usize,
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Tensor<B>> {
    let (x, index) = (&operands[0], &operands[1]);
    if !index.batched {
        return x
            .tensor
            .index_select(batch_axis(axis, x.batched), &index.tensor);
    }
    let x = x.expanded(batch)?;
    let count = index.tensor.shape()[1];
    let mut index_shape = vec![1; x.rank()];
    index_shape[0] = batch;
    index_shape[axis + 1] = count;
    let mut target = x.shape().to_vec();
    target[axis + 1] = count;
    let index = index.tensor.reshape(index_shape)?.broadcast_to(target)?;
    x.gather((axis + 1) as isize, &index)
}

/// Batching: destination, index and source all with the batch dimension, scattered along the
/// shifted axis.
pub(super) fn scatter_add_batch<B: Backend>(
    axis: usize,
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Tensor<B>> {
    let lead = any_batched(operands);
    let [dst, index, src] = expand_n(operands, batch)?;
    dst.scatter_add(batch_axis(axis, lead), &index, &src)
}
