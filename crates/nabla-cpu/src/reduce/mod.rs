//! Reductions over sets of axes, index reductions along one axis, and the cumulative sum.
//!
//! Float sums are pairwise over vectorised multi-lane leaves, so a sum of `n` elements has an error
//! that grows with `log n` rather than `n` (an `f32` sum of 2^24 ones is exact) while running at
//! memory bandwidth. See [`walk`] for how a view is traversed.

mod elem;
mod fold;
mod scan;
mod walk;

#[cfg(test)]
mod tests;

pub(crate) use elem::Arith;

use crate::{CpuStorage, PARALLEL_THRESHOLD};
use elem::{max_nan, min_nan};
use nabla_core::{ArgReduceOp, Element, Error, Layout, ReduceOp, Result, dispatch_dtype};

/// Checks that `axes` are sorted, distinct and below the rank of `layout`.
fn check_axes(op: &'static str, layout: &Layout, axes: &[usize]) -> Result<()> {
    let rank = layout.rank();
    if let Some(&bad) = axes.iter().find(|&&a| a >= rank) {
        return Err(Error::InvalidAxis {
            op,
            axis: bad as isize,
            rank,
        });
    }
    if axes.windows(2).any(|w| w[0] >= w[1]) {
        return Err(Error::invalid(
            op,
            format!(
                "axes {axes:?} must be sorted and distinct (shape {:?})",
                layout.shape()
            ),
        ));
    }
    Ok(())
}

/// Reduces `x` over `axes` with `op`; the result keeps the reduced axes with size 1.
pub(crate) fn reduce(
    op: ReduceOp,
    x: &CpuStorage,
    layout: &Layout,
    axes: &[usize],
) -> Result<CpuStorage> {
    let dtype = x.dtype();
    if !op.supports(dtype) {
        return Err(Error::dtype(op.name(), dtype));
    }
    check_axes(op.name(), layout, axes)?;
    let unsupported = || Err(Error::dtype(op.name(), dtype));
    match op {
        ReduceOp::Sum => dispatch_dtype!(dtype, T, {
            real | complex | int => run::<T, _>(op, x, layout, axes, Some(T::zero()), T::add),
            _ => unsupported(),
        }),
        ReduceOp::Prod => dispatch_dtype!(dtype, T, {
            real | complex | int => run::<T, _>(op, x, layout, axes, Some(T::one()), T::mul),
            _ => unsupported(),
        }),
        ReduceOp::Max => dispatch_dtype!(dtype, T, {
            real | int | bool => run::<T, _>(op, x, layout, axes, None, max_nan::<T>),
            _ => unsupported(),
        }),
        ReduceOp::Min => dispatch_dtype!(dtype, T, {
            real | int | bool => run::<T, _>(op, x, layout, axes, None, min_nan::<T>),
            _ => unsupported(),
        }),
    }
}

fn run<T: Element, F: Fn(T, T) -> T + Sync>(
    op: ReduceOp,
    x: &CpuStorage,
    layout: &Layout,
    axes: &[usize],
    identity: Option<T>,
    f: F,
) -> Result<CpuStorage> {
    let data = x.typed::<T>(op.name())?;
    let out = reduce_typed(op.name(), data, layout, axes, identity, &f)?;
    Ok(CpuStorage::from_vec(out))
}

/// Folds the elements of the view over `axes` with the associative `f`. `identity` is the result of an
/// empty fold; without one, an empty fold is an error.
pub(crate) fn reduce_typed<T, F>(
    op: &'static str,
    x: &[T],
    layout: &Layout,
    axes: &[usize],
    identity: Option<T>,
    f: &F,
) -> Result<Vec<T>>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let split = walk::Split::new(layout, axes)?;
    if split.n_out == 0 {
        return Ok(Vec::new());
    }
    if split.n_red() == 0 {
        return match identity {
            Some(id) => Ok(vec![id; split.n_out]),
            None => Err(Error::invalid(
                op,
                format!(
                    "zero-size reduction has no identity (reducing axes {axes:?} of shape {:?})",
                    layout.shape()
                ),
            )),
        };
    }
    let par = crate::splits(split.n_out * split.n_red(), PARALLEL_THRESHOLD);
    Ok(walk::reduce_split(x, &split, f, par))
}

/// Index of the first maximum (or minimum) along `axis` as `I64`, keeping the axis with size 1.
pub(crate) fn arg_reduce(
    op: ArgReduceOp,
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
) -> Result<CpuStorage> {
    let dtype = x.dtype();
    if dtype.is_complex() || dtype.is_half() {
        return Err(Error::dtype(op.name(), dtype));
    }
    check_axes(op.name(), layout, &[axis])?;
    let n = layout.shape()[axis];
    let n_out: usize = layout
        .shape()
        .iter()
        .enumerate()
        .filter(|&(a, _)| a != axis)
        .map(|(_, &d)| d)
        .product();
    if n == 0 && n_out > 0 {
        return Err(Error::invalid(
            op.name(),
            format!(
                "attempt to take the {} of an empty axis {axis} (shape {:?})",
                op.name(),
                layout.shape()
            ),
        ));
    }
    if layout.numel() == 0 {
        return Ok(CpuStorage::from_vec(Vec::<i64>::new()));
    }
    // A NaN counts as the maximum for argmax and the minimum for argmin: the first NaN wins either way.
    #[allow(clippy::eq_op)]
    fn arg_run<T: Element + PartialOrd>(
        op: ArgReduceOp,
        x: &CpuStorage,
        layout: &Layout,
        axis: usize,
    ) -> Result<CpuStorage> {
        let data = x.typed::<T>(op.name())?;
        let out = match op {
            ArgReduceOp::ArgMax => scan::arg_select(
                data,
                layout,
                axis,
                |v: T, best: T| v > best || (v != v && best == best),
                max_nan::<T>,
            )?,
            ArgReduceOp::ArgMin => scan::arg_select(
                data,
                layout,
                axis,
                |v: T, best: T| v < best || (v != v && best == best),
                min_nan::<T>,
            )?,
        };
        Ok(CpuStorage::from_vec(out))
    }
    dispatch_dtype!(dtype, T, {
        real | int | bool => arg_run::<T>(op, x, layout, axis),
        _ => Err(Error::dtype(op.name(), dtype)),
    })
}

/// Inclusive cumulative sum along `axis`; same shape as the input. Integers wrap on overflow.
pub(crate) fn cumsum(x: &CpuStorage, layout: &Layout, axis: usize) -> Result<CpuStorage> {
    let dtype = x.dtype();
    if dtype.is_bool() || dtype.is_half() {
        return Err(Error::dtype("cumsum", dtype));
    }
    check_axes("cumsum", layout, &[axis])?;
    dispatch_dtype!(dtype, T, {
        real | complex | int => {
            let data = x.typed::<T>("cumsum")?;
            Ok(CpuStorage::from_vec(scan::cumsum_typed(data, layout, axis)))
        },
        _ => Err(Error::dtype("cumsum", dtype)),
    })
}
