//! Data movement that copies: constant padding and concatenation here, the index-driven ops (gather,
//! index_select, scatter_add, one_hot) in [`indexing`].
//!
//! Outputs are built in place. `pad` fills the output with the pad value and copies the input into its
//! interior; `concat` copies each part into its slab of the output. Both walk the source view and the
//! destination region together as coalesced rows (see [`walk::copy_into`]), so contiguous inputs become one
//! `memcpy` per block of rows, and strided inputs (transposed, broadcast, reversed) are read in place
//! without being materialised first.

mod indexing;
#[cfg(test)]
pub(crate) mod tests;
pub(crate) mod walk;

pub(crate) use indexing::{gather, index_select, one_hot, scatter_add};

use crate::strided::CHUNK;
use crate::{CpuStorage, PARALLEL_THRESHOLD};
use nabla_core::{
    Element, Error, Layout, Result, Scalar, contiguous_strides, dispatch_dtype, with_host_slice,
};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use walk::{SharedOut, copy_into};

pub(crate) use nabla_core::checked_numel;

/// Rejects `axis >= rank`.
pub(crate) fn check_axis(op: &'static str, axis: usize, rank: usize) -> Result<()> {
    if axis >= rank {
        return Err(Error::InvalidAxis {
            op,
            axis: axis as isize,
            rank,
        });
    }
    Ok(())
}

/// A new vector of `n` elements produced by `fill`, which must initialise the whole slice it is given.
pub(crate) fn build<T>(n: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut out = crate::strided::output_vec(n);
    fill(&mut out.spare_capacity_mut()[..n]);
    // SAFETY: every caller's `fill` writes all `n` elements (documented contract of this function).
    unsafe { out.set_len(n) };
    out
}

/// Two new vectors of `n` elements each, produced by `fill`, which must initialise both slices whole.
pub(crate) fn build_pair<A, B>(
    n: usize,
    fill: impl FnOnce(&mut [MaybeUninit<A>], &mut [MaybeUninit<B>]),
) -> (Vec<A>, Vec<B>) {
    let mut a = crate::strided::output_vec(n);
    let mut b = crate::strided::output_vec(n);
    fill(
        &mut a.spare_capacity_mut()[..n],
        &mut b.spare_capacity_mut()[..n],
    );
    // SAFETY: every caller's `fill` writes all `n` elements of both slices (documented contract).
    unsafe {
        a.set_len(n);
        b.set_len(n);
    }
    (a, b)
}

/// Constant padding: each dimension `i` grows by `pads[i].0` elements before and `pads[i].1` after, all
/// equal to `value` converted to the input's dtype.
pub(crate) fn pad(
    x: &CpuStorage,
    layout: &Layout,
    pads: &[(usize, usize)],
    value: Scalar,
) -> Result<CpuStorage> {
    if pads.len() != layout.rank() {
        return Err(Error::invalid(
            "pad",
            format!(
                "{} (before, after) pairs were given for shape {:?} of rank {}; give one pair per dimension",
                pads.len(),
                layout.shape(),
                layout.rank()
            ),
        ));
    }
    let out_shape = layout
        .shape()
        .iter()
        .zip(pads)
        .map(|(&d, &(before, after))| d.checked_add(before)?.checked_add(after))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            Error::invalid(
                "pad",
                format!("pads {pads:?} overflow the shape {:?}", layout.shape()),
            )
        })?;
    let n = checked_numel("pad", &out_shape)?;
    let strides = contiguous_strides(&out_shape);
    let start: isize = pads
        .iter()
        .zip(&strides)
        .map(|(p, s)| p.0 as isize * s)
        .sum();
    let interior = Layout::from_parts(layout.shape().to_vec(), strides, start as usize)?;
    Ok(with_host_slice!(x.host(), v => {
        CpuStorage::from_vec(pad_typed(v, layout, &interior, n, value))
    }))
}

fn pad_typed<T: Element>(
    x: &[T],
    layout: &Layout,
    interior: &Layout,
    n: usize,
    value: Scalar,
) -> Vec<T> {
    let value = T::from_scalar(value);
    build(n, |out| {
        let fill = |chunk: &mut [MaybeUninit<T>]| {
            for v in chunk {
                v.write(value);
            }
        };
        if crate::splits(n, PARALLEL_THRESHOLD) {
            out.par_chunks_mut(CHUNK).for_each(fill);
        } else {
            fill(out);
        }
        let shared = SharedOut::new(out);
        // SAFETY: `interior` has the output's row-major strides restricted to a sub-box, so it is
        // injective, and nothing else touches the output during the copy.
        unsafe { copy_into(&shared, interior, x, layout) };
    })
}

/// Joins `parts` (one dtype, one rank, equal sizes except on `axis`) along `axis` into a contiguous result.
pub(crate) fn concat(parts: &[(&CpuStorage, &Layout)], axis: usize) -> Result<CpuStorage> {
    const OP: &str = "concat";
    let Some(&(first, first_layout)) = parts.first() else {
        return Err(Error::invalid(OP, "at least one tensor is needed"));
    };
    let dtype = first.dtype();
    let shape = first_layout.shape();
    check_axis(OP, axis, shape.len())?;
    let mut total = 0usize;
    for &(s, l) in parts {
        if s.dtype() != dtype {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: dtype,
                rhs: s.dtype(),
            });
        }
        let agrees = l.rank() == shape.len()
            && (0..shape.len()).all(|d| d == axis || l.shape()[d] == shape[d]);
        if !agrees {
            return Err(Error::shapes(OP, shape, l.shape()).with_hint(format!(
                "all parts must have rank {} and equal sizes on every axis except {axis}",
                shape.len()
            )));
        }
        total = total
            .checked_add(l.shape()[axis])
            .ok_or_else(|| Error::invalid(OP, "the joined axis is too large"))?;
    }
    let mut out_shape = shape.to_vec();
    out_shape[axis] = total;
    let n = checked_numel(OP, &out_shape)?;
    let strides = contiguous_strides(&out_shape);
    // Each part lands in the slab of the output that starts at its running offset along `axis`.
    let mut start = 0usize;
    let mut slabs = Vec::with_capacity(parts.len());
    for &(_, l) in parts {
        let at = start as isize * strides[axis];
        slabs.push(Layout::from_parts(
            l.shape().to_vec(),
            strides.clone(),
            at as usize,
        )?);
        start += l.shape()[axis];
    }
    fn join<T: Element>(
        parts: &[(&CpuStorage, &Layout)],
        slabs: &[Layout],
        n: usize,
    ) -> Result<CpuStorage> {
        let srcs = parts
            .iter()
            .map(|(s, _)| s.typed::<T>(OP))
            .collect::<Result<Vec<_>>>()?;
        let out = build(n, |out| {
            let shared = SharedOut::new(out);
            let copy_part = |p: usize| {
                // SAFETY: the slabs are disjoint boxes of the row-major output, each injective.
                unsafe { copy_into(&shared, &slabs[p], srcs[p], parts[p].1) }
            };
            if crate::splits(n, PARALLEL_THRESHOLD) && parts.len() > 1 {
                (0..parts.len()).into_par_iter().for_each(copy_part);
            } else {
                (0..parts.len()).for_each(copy_part);
            }
        });
        Ok(CpuStorage::from_vec(out))
    }
    dispatch_dtype!(dtype, T => join::<T>(parts, &slabs, n))
}
