//! Movement ops save nothing. Their reverse rules are the transposed movements (inverse permutation,
//! sum over broadcast axes, zero-filling the elements a slice skipped, slicing away padding); their
//! forward rules move the tangent the same way as the values; batching rules leave the batch dimension
//! in front.

use super::SavedValues;
use crate::Tensor;
use crate::autograd::View;
use crate::vmap::{BatchValue, any_batched, batch_axis, expand_all};
use nabla_core::{Backend, DType, Result, Scalar};

/// The cotangent of a view's input: the transposed movement of `g`, back to the input's shape.
pub(super) fn view_vjp<B: Backend>(
    view: &View,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Tensor<B>> {
    match view {
        View::Reshape => g.reshape(s.input_shape(0)?.to_vec()),
        View::Permute { perm } => permute(perm, g),
        View::Broadcast => unbroadcast(s.input_shape(0)?, g),
        View::Slice {
            axis,
            first,
            len,
            step,
        } => slice(*axis, *first, *len, *step, s.input_axis(0, *axis)?, g),
        View::Flip { axes } => g.flip(&signed(axes)),
    }
}

/// The tangent of a view's output (of shape `out`): the input's tangent `t` moved as the values were.
pub(super) fn view_jvp<B: Backend>(view: &View, t: &Tensor<B>, out: &[usize]) -> Result<Tensor<B>> {
    match view {
        View::Reshape => t.reshape(out.to_vec()),
        View::Permute { perm } => t.permute(&signed(perm)),
        View::Broadcast => t.broadcast_to(out.to_vec()),
        View::Slice {
            axis,
            first,
            len,
            step,
        } => t.slice_view(*axis, *first, *len, *step),
        View::Flip { axes } => t.flip(&signed(axes)),
    }
}

/// Axes as the signed indices tensor methods take.
fn signed(axes: &[usize]) -> Vec<isize> {
    axes.iter().map(|&a| a as isize).collect()
}

pub(super) fn permute<B: Backend>(perm: &[usize], g: &Tensor<B>) -> Result<Tensor<B>> {
    let mut inverse = vec![0isize; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i as isize;
    }
    g.permute(&inverse)
}

/// Places `g` (the sliced elements) back at their positions in an axis of `size`, zeros elsewhere.
/// Built from flip, pad and reshape so that it is itself differentiable.
pub(crate) fn slice<B: Backend>(
    axis: usize,
    first: usize,
    len: usize,
    step: isize,
    size: usize,
    g: &Tensor<B>,
) -> Result<Tensor<B>> {
    let ax = axis as isize;
    if len == 0 {
        let mut shape = g.shape().to_vec();
        shape[axis] = size;
        return Tensor::zeros(shape, g.dtype(), g.backend());
    }
    let stride = step.unsigned_abs();
    // Positions ascend from `lowest` by `stride`.
    let (g, lowest) = if step > 0 {
        (g.clone(), first)
    } else {
        (g.flip(&[ax])?, first - (len - 1) * stride)
    };
    let spread = if stride == 1 {
        g
    } else {
        // [.., len, ..] -> [.., len, stride, ..] with zeros after each element -> [.., len * stride, ..]
        let mut pads = vec![(0, 0); g.rank() + 1];
        pads[axis + 1] = (0, stride - 1);
        let padded = g.unsqueeze(ax + 1)?.pad(&pads, 0.0)?;
        let merged = padded.flatten(ax, ax + 1)?;
        merged.narrow(ax, 0, (len - 1) * stride + 1)?
    };
    let covered = spread.shape()[axis];
    let mut pads = vec![(0, 0); spread.rank()];
    pads[axis] = (lowest, size - lowest - covered);
    spread.pad(&pads, 0.0)
}

/// Sums `g` back to the shape `from` it was broadcast from. Half-precision types have no sum kernel,
/// so their cotangents are summed in f32 and cast back.
pub(super) fn unbroadcast<B: Backend>(from: &[usize], g: &Tensor<B>) -> Result<Tensor<B>> {
    if g.dtype().is_half() {
        return g.cast(DType::F32)?.sum_to(from.to_vec())?.cast(g.dtype());
    }
    g.sum_to(from.to_vec())
}

pub(super) fn pad<B: Backend>(pads: &[(usize, usize)], g: &Tensor<B>) -> Result<Tensor<B>> {
    let mut out = g.clone();
    for (axis, &(before, after)) in pads.iter().enumerate() {
        if before != 0 || after != 0 {
            let len = out.shape()[axis] - before - after;
            out = out.narrow(axis as isize, before, len)?;
        }
    }
    Ok(out)
}

/// Each part's cotangent is its piece of `g` (the parts' lengths along `axis` are their saved shapes).
pub(super) fn concat<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let mut start = 0;
    (0..s.specs.len())
        .map(|i| {
            let n = s.input_axis(i, axis)?;
            let part = g.narrow(axis as isize, start, n)?;
            start += n;
            Ok(Some(part))
        })
        .collect()
}

/// The tangent of a concatenation: the inputs' tangents joined, zeros for inputs without one.
pub(super) fn concat_jvp<B: Backend>(
    axis: usize,
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(any) = t.iter().flatten().next() else {
        return Ok(None);
    };
    let parts = t
        .iter()
        .enumerate()
        .map(|(i, ti)| match ti {
            Some(ti) => Ok(ti.clone()),
            None => Tensor::zeros(s.input_shape(i)?.to_vec(), any.dtype(), any.backend()),
        })
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Tensor<B>> = parts.iter().collect();
    Ok(Some(Tensor::cat(&refs, axis as isize)?))
}

/// Batching: a batched operand's batch dimension gets no padding.
pub(super) fn pad_batch<B: Backend>(
    pads: &[(usize, usize)],
    value: Scalar,
    x: &BatchValue<B>,
) -> Result<Tensor<B>> {
    let mut all = if x.batched { vec![(0, 0)] } else { Vec::new() };
    all.extend(pads);
    x.tensor.pad(&all, value)
}

/// Batching: every part with the batch dimension (unbatched ones broadcast along it), joined along
/// the shifted axis.
pub(super) fn concat_batch<B: Backend>(
    axis: usize,
    operands: &[BatchValue<B>],
    batch: usize,
) -> Result<Tensor<B>> {
    let lead = any_batched(operands);
    let parts = expand_all(operands, batch)?;
    Tensor::cat(&parts.iter().collect::<Vec<_>>(), batch_axis(axis, lead))
}
