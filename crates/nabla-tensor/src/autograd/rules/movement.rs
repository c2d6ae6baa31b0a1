//! Movement ops save nothing. Their reverse rules are the transposed movements (inverse permutation,
//! sum over broadcast axes, zero-filling the elements a slice skipped, slicing away padding); their
//! forward rules move the tangent the same way as the values.

use crate::Tensor;
use nabla_core::{Backend, DType, Result};

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

pub(super) fn concat<B: Backend>(
    axis: usize,
    sizes: &[usize],
    g: &Tensor<B>,
) -> Result<Vec<Option<Tensor<B>>>> {
    let mut start = 0;
    sizes
        .iter()
        .map(|&n| {
            let part = g.narrow(axis as isize, start, n)?;
            start += n;
            Ok(Some(part))
        })
        .collect()
}

/// The tangent of a concatenation: the inputs' tangents joined, zeros for inputs without one.
pub(super) fn concat_jvp<B: Backend>(
    axis: usize,
    sizes: &[usize],
    t: &[Option<Tensor<B>>],
    out: &[usize],
) -> Result<Option<Tensor<B>>> {
    let Some(any) = t.iter().flatten().next() else {
        return Ok(None);
    };
    let parts = t
        .iter()
        .zip(sizes)
        .map(|(ti, &n)| match ti {
            Some(ti) => Ok(ti.clone()),
            None => {
                let mut shape = out.to_vec();
                shape[axis] = n;
                Tensor::zeros(shape, any.dtype(), any.backend())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&Tensor<B>> = parts.iter().collect();
    Ok(Some(Tensor::cat(&refs, axis as isize)?))
}
