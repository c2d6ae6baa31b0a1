//! Reading a traced operand under `vmap`: the strided view a node was recorded with, re-expressed as
//! differentiable movement ops (reshape, narrow, permute, flip, broadcast) on the value's batched
//! tensor, so the view costs no copy in the common cases and its gradient flows back through the
//! rules those ops already have.

use super::BatchValue;
use crate::Tensor;
use crate::trace::ValueInfo;
use nabla_core::{Backend, DType, Layout, Result};

/// One dimension of an operand view with a non-zero stride and more than one element.
#[derive(Clone, Copy, Debug)]
struct StridedDim {
    /// Position in the view's shape.
    axis: usize,
    size: usize,
    /// Stride in elements, made positive (a negative one is recorded in `flipped`).
    stride: usize,
    flipped: bool,
}

/// The view `layout` of the buffer `value` (whose contiguous per-example shape is `info.shape`), with
/// the batch dimension (when `value` has one) kept in front.
pub(super) fn read_operand<B: Backend>(
    value: &BatchValue<B>,
    layout: &Layout,
    info: &ValueInfo,
) -> Result<BatchValue<B>> {
    let whole =
        layout.shape() == info.shape.as_slice() && layout.offset() == 0 && layout.is_contiguous();
    if whole {
        return Ok(value.clone());
    }
    let lead: Vec<usize> = value.tensor.shape()[..value.lead()].to_vec();
    let mut flat_shape = lead.clone();
    flat_shape.push(info.len());
    let flat = value.tensor.reshape(flat_shape)?;
    let viewed = match strided_dims(layout) {
        Some(dims) if layout.numel() > 0 => movement_view(&flat, &lead, layout, &dims)?,
        _ => gathered_view(&flat, &lead, layout)?,
    };
    Ok(BatchValue {
        tensor: viewed,
        batched: value.batched,
    })
}

/// The dimensions that step through memory, sorted by decreasing stride, when they nest without
/// overlap (each stride a multiple of the next and at least the next's extent); `None` otherwise.
fn strided_dims(layout: &Layout) -> Option<Vec<StridedDim>> {
    let mut dims: Vec<StridedDim> = layout
        .shape()
        .iter()
        .zip(layout.strides())
        .enumerate()
        .filter(|(_, (size, stride))| **size > 1 && **stride != 0)
        .map(|(axis, (&size, &stride))| StridedDim {
            axis,
            size,
            stride: stride.unsigned_abs(),
            flipped: stride < 0,
        })
        .collect();
    dims.sort_by_key(|d| std::cmp::Reverse(d.stride));
    let nested = dims
        .windows(2)
        .all(|w| w[0].stride.is_multiple_of(w[1].stride) && w[0].stride / w[1].stride >= w[1].size);
    nested.then_some(dims)
}

/// The view as narrow/reshape/permute/flip/broadcast of the flat buffer `flat` (`lead` dims, then
/// the buffer): the buffer from the view's first element is cut into a grid whose axes step by the
/// view's strides, each axis narrowed to the view's size.
fn movement_view<B: Backend>(
    flat: &Tensor<B>,
    lead: &[usize],
    layout: &Layout,
    dims: &[StridedDim],
) -> Result<Tensor<B>> {
    let n = lead.len();
    let buffer = flat.shape()[n];
    // The lowest address the view touches: its offset moved back along every flipped dimension.
    let start = dims
        .iter()
        .filter(|d| d.flipped)
        .fold(layout.offset(), |o, d| o - (d.size - 1) * d.stride);
    let mut grid = Vec::with_capacity(dims.len() + 1);
    let mut keep = Vec::with_capacity(dims.len() + 1);
    let span = match dims.first() {
        Some(outer) => {
            grid.push(outer.size);
            keep.push(outer.size);
            for w in dims.windows(2) {
                grid.push(w[0].stride / w[1].stride);
                keep.push(w[1].size);
            }
            let inner = dims[dims.len() - 1].stride;
            grid.push(inner);
            keep.push(1);
            outer.size * outer.stride
        }
        None => 1,
    };
    let available = buffer - start;
    let mut x = if start == 0 && span == buffer {
        flat.clone()
    } else {
        flat.narrow(n as isize, start, span.min(available))?
    };
    if span > available {
        let mut pads = vec![(0, 0); n];
        pads.push((0, span - available));
        x = x.pad(&pads, 0.0)?;
    }
    let mut shape = lead.to_vec();
    shape.extend(&grid);
    x = x.reshape(shape)?;
    for (j, (&g, &k)) in grid.iter().zip(&keep).enumerate() {
        if g != k {
            x = x.narrow((n + j) as isize, 0, k)?;
        }
    }
    // Drop the innermost unit axis; the remaining axes are the strided dims in decreasing stride.
    let mut sorted_shape = lead.to_vec();
    sorted_shape.extend(dims.iter().map(|d| d.size));
    x = x.reshape(sorted_shape)?;
    // Back to the view's axis order.
    let mut order: Vec<usize> = (0..dims.len()).collect();
    order.sort_by_key(|&i| dims[i].axis);
    if order.iter().enumerate().any(|(i, &o)| i != o) {
        let mut perm: Vec<isize> = (0..n as isize).collect();
        perm.extend(order.iter().map(|&o| (n + o) as isize));
        x = x.permute(&perm)?;
    }
    let flips: Vec<isize> = order
        .iter()
        .enumerate()
        .filter(|(_, o)| dims[**o].flipped)
        .map(|(i, _)| (n + i) as isize)
        .collect();
    if !flips.is_empty() {
        x = x.flip(&flips)?;
    }
    // Unit and broadcast dimensions come back as size 1, then are expanded.
    let mut with_units = lead.to_vec();
    with_units.extend(layout.shape().iter().enumerate().map(|(axis, &size)| {
        if dims.iter().any(|d| d.axis == axis) {
            size
        } else {
            1
        }
    }));
    x = x.reshape(with_units)?;
    let mut full = lead.to_vec();
    full.extend(layout.shape());
    if x.shape() != full.as_slice() {
        x = x.broadcast_to(full)?;
    }
    Ok(x)
}

/// Any other view (overlapping strides, or no element): the buffer's elements at the view's
/// addresses, selected with a constant index.
fn gathered_view<B: Backend>(
    flat: &Tensor<B>,
    lead: &[usize],
    layout: &Layout,
) -> Result<Tensor<B>> {
    let addresses: Vec<i64> = layout.offsets().map(|o| o as i64).collect();
    let count = addresses.len();
    let index = Tensor::from_vec(addresses, [count], flat.backend())?;
    debug_assert_eq!(index.dtype(), DType::I64);
    let picked = flat.index_select(lead.len() as isize, &index)?;
    let mut shape = lead.to_vec();
    shape.extend(layout.shape());
    picked.reshape(shape)
}
