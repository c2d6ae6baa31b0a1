//! Index-driven movement: `gather` (NumPy `take_along_axis`), `index_select`, `scatter_add` (the transpose
//! of gather) and `one_hot`.
//!
//! Indices are `I64`; gather, index_select and scatter_add accept negative indices counting from the end.
//! Every index is validated before an output is returned, and the first invalid one in row-major order is
//! reported. Index views may be strided or broadcast like any other input.

use super::walk::{SharedOut, write_slice};
use super::{build, check_axis, checked_numel};
use crate::strided::{CHUNK, RowPlan, gather_view};
use crate::{CpuStorage, PARALLEL_THRESHOLD};
use nabla_core::num_complex::{Complex32, Complex64};
use nabla_core::{
    DType, Element, Error, HostSlice, Layout, Result, contiguous_strides, dispatch_dtype,
    with_host_slice,
};
use rayon::prelude::*;
use std::borrow::Cow;

/// `index_select` copies whole inner blocks at least this long with `memcpy`.
const MIN_BLOCK: usize = 8;

/// The `I64` elements of an index buffer, or an error naming `op`.
fn index_data<'a>(op: &'static str, index: &'a CpuStorage) -> Result<&'a [i64]> {
    match index.host() {
        HostSlice::I64(v) => Ok(v),
        other => Err(Error::dtype(op, other.dtype()).with_hint("indices must be int64")),
    }
}

/// Resolves an index in `-n..n` against a dimension of size `n`.
#[inline]
fn resolve(i: i64, n: usize) -> Option<usize> {
    let j = if i < 0 { i + n as i64 } else { i };
    (0..n as i64).contains(&j).then_some(j as usize)
}

/// Resolves an index already checked to lie in `-n..n`.
#[inline]
fn resolved(i: i64, n: isize) -> isize {
    if i < 0 { i as isize + n } else { i as isize }
}

/// Reports the first index (row-major over the view `li`) that `valid` rejects.
fn check_indices(
    op: &'static str,
    idx: &[i64],
    li: &Layout,
    size: usize,
    valid: impl Fn(i64) -> bool,
) -> Result<()> {
    let bad = match li.contiguous_range() {
        Some(r) => idx[r].iter().copied().find(|&i| !valid(i)),
        None => distinct_entries(li)
            .offsets()
            .map(|o| idx[o])
            .find(|&i| !valid(i)),
    };
    match bad {
        Some(index) => Err(Error::IndexOutOfBounds { op, index, size }),
        None => Ok(()),
    }
}

/// `li` with its broadcast axes (stride 0) cut to one entry: the same index values, each once (a
/// permutation's `[n, 1]` index broadcast to `[n, n]` is checked in `n` reads, not `n²`).
fn distinct_entries(li: &Layout) -> Layout {
    let shape = li
        .shape()
        .iter()
        .zip(li.strides())
        .map(|(&d, &s)| if s == 0 { d.min(1) } else { d })
        .collect();
    Layout::from_parts(shape, li.strides().to_vec(), li.offset())
        .expect("cutting broadcast axes of a valid layout leaves a valid layout")
}

/// Checks `-n..n` bounds for gather, index_select and scatter_add.
fn check_signed(op: &'static str, idx: &[i64], li: &Layout, n: usize) -> Result<()> {
    check_indices(op, idx, li, n, |i| resolve(i, n).is_some())
}

/// The index must have the rank of `shape` and equal sizes on every axis except `axis`.
fn check_index_shape(
    op: &'static str,
    shape: &[usize],
    index: &[usize],
    axis: usize,
) -> Result<()> {
    let agrees =
        shape.len() == index.len() && (0..shape.len()).all(|d| d == axis || shape[d] == index[d]);
    if !agrees {
        return Err(Error::shapes(op, shape, index).with_hint(format!(
            "the index must have rank {} and the same size on every axis except {axis}",
            shape.len()
        )));
    }
    Ok(())
}

/// NumPy `take_along_axis`: the result has the index's shape.
pub(crate) fn gather(
    x: &CpuStorage,
    lx: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
) -> Result<CpuStorage> {
    const OP: &str = "gather";
    let idx = index_data(OP, index)?;
    check_axis(OP, axis, lx.rank())?;
    check_index_shape(OP, lx.shape(), li.shape(), axis)?;
    check_signed(OP, idx, li, lx.shape()[axis])?;
    with_host_slice!(x.host(), v => gather_checked(v, lx, axis, idx, li).map(CpuStorage::from_vec))
}

/// Gathers with indices already validated; `li` has `lx`'s shape except on `axis`.
fn gather_checked<T: Element>(
    x: &[T],
    lx: &Layout,
    axis: usize,
    idx: &[i64],
    li: &Layout,
) -> Result<Vec<T>> {
    if li.numel() == 0 {
        return Ok(Vec::new());
    }
    // The index is non-empty and every index is valid, so `lx` is non-empty too.
    let n = lx.shape()[axis] as isize;
    let sa = lx.strides()[axis];
    // `base` walks `x` at position 0 of `axis` for every element of the index.
    let mut strides = lx.strides().to_vec();
    strides[axis] = 0;
    let base = Layout::from_parts(li.shape().to_vec(), strides, lx.offset())?;
    let plan = RowPlan::new([&base, li]);
    let [sb, si] = plan.inner_strides;
    Ok(plan.fill_rows(|out, [ob, oi]| {
        let (mut pb, mut pi) = (ob as isize, oi as isize);
        for o in out {
            let j = resolved(idx[pi as usize], n);
            o.write(x[(pb + j * sa) as usize]);
            pb += sb;
            pi += si;
        }
    }))
}

/// Selects entries of `axis` by a 1-D index.
pub(crate) fn index_select(
    x: &CpuStorage,
    lx: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
) -> Result<CpuStorage> {
    const OP: &str = "index_select";
    let idx = index_data(OP, index)?;
    check_axis(OP, axis, lx.rank())?;
    if li.rank() != 1 {
        return Err(Error::invalid(
            OP,
            format!("the index must be 1-D, got shape {:?}", li.shape()),
        ));
    }
    check_signed(OP, idx, li, lx.shape()[axis])?;
    with_host_slice!(x.host(), v => select_checked(v, lx, axis, idx, li).map(CpuStorage::from_vec))
}

/// `true` if dimensions `shape` with `strides` are row-major dense.
fn dense(shape: &[usize], strides: &[isize]) -> bool {
    let mut expected = 1isize;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 {
            if s != expected {
                return false;
            }
            expected *= d as isize;
        }
    }
    true
}

fn select_checked<T: Element>(
    x: &[T],
    lx: &Layout,
    axis: usize,
    idx: &[i64],
    li: &Layout,
) -> Result<Vec<T>> {
    let m = li.shape()[0];
    let mut out_shape = lx.shape().to_vec();
    out_shape[axis] = m;
    let total = checked_numel("index_select", &out_shape)?;
    if total == 0 {
        return Ok(Vec::new());
    }
    let inner: usize = lx.shape()[axis + 1..].iter().product();
    if inner >= MIN_BLOCK && dense(&lx.shape()[axis + 1..], &lx.strides()[axis + 1..]) {
        return select_blocks(x, lx, axis, idx, li, inner, total);
    }
    // General case: a gather whose index is the 1-D index broadcast over every other axis.
    let mut strides = vec![0isize; out_shape.len()];
    strides[axis] = li.strides()[0];
    let broadcast = Layout::from_parts(out_shape, strides, li.offset())?;
    gather_checked(x, lx, axis, idx, &broadcast)
}

/// `index_select` when the dimensions after `axis` are dense: one `memcpy` of `inner` elements per
/// (outer position, selected entry), e.g. the rows of an embedding table.
fn select_blocks<T: Element>(
    x: &[T],
    lx: &Layout,
    axis: usize,
    idx: &[i64],
    li: &Layout,
    inner: usize,
    total: usize,
) -> Result<Vec<T>> {
    let n = lx.shape()[axis] as isize;
    let sa = lx.strides()[axis];
    let rows: Vec<isize> = li.offsets().map(|o| resolved(idx[o], n) * sa).collect();
    let m = rows.len();
    let outer = Layout::from_parts(
        lx.shape()[..axis].to_vec(),
        lx.strides()[..axis].to_vec(),
        lx.offset(),
    )?;
    let outer_offsets: Vec<isize> = outer.offsets().map(|o| o as isize).collect();
    let copy_block = |block: usize, dst: &mut [std::mem::MaybeUninit<T>]| {
        let s = (outer_offsets[block / m] + rows[block % m]) as usize;
        write_slice(dst, &x[s..s + inner]);
    };
    Ok(build(total, |out| {
        if crate::splits(total, PARALLEL_THRESHOLD) {
            let per_task = (CHUNK / inner).max(1);
            out.par_chunks_mut(per_task * inner)
                .enumerate()
                .for_each(|(t, chunk)| {
                    for (k, dst) in chunk.chunks_mut(inner).enumerate() {
                        copy_block(t * per_task + k, dst);
                    }
                });
        } else {
            for (b, dst) in out.chunks_mut(inner).enumerate() {
                copy_block(b, dst);
            }
        }
    }))
}

/// Element types `scatter_add` accumulates: exact float and complex addition, wrapping integer addition.
pub(crate) trait Accumulate: Element {
    /// `self + other` (wrapping for integers).
    fn accumulate(self, other: Self) -> Self;
}

macro_rules! accumulate_plain {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline]
            fn accumulate(self, other: Self) -> Self {
                self + other
            }
        }
    )*};
}
accumulate_plain!(f32, f64, Complex32, Complex64);

macro_rules! accumulate_wrapping {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            #[inline]
            fn accumulate(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
        }
    )*};
}
nabla_core::for_int_types!(accumulate_wrapping);

/// A copy of `dst` with every `src` element added at the position its index names along `axis`.
pub(crate) fn scatter_add(
    dst: &CpuStorage,
    ld: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
    src: &CpuStorage,
    ls: &Layout,
) -> Result<CpuStorage> {
    const OP: &str = "scatter_add";
    let idx = index_data(OP, index)?;
    if dst.dtype() != src.dtype() {
        return Err(Error::DTypeMismatch {
            op: OP,
            lhs: dst.dtype(),
            rhs: src.dtype(),
        });
    }
    check_axis(OP, axis, ld.rank())?;
    if li.shape() != ls.shape() {
        return Err(Error::shapes(OP, li.shape(), ls.shape())
            .with_hint("the index and the source must have one shape"));
    }
    check_index_shape(OP, ld.shape(), li.shape(), axis)?;
    macro_rules! go {
        ($v:expr) => {
            Scatter {
                dst: $v,
                ld,
                axis,
                idx,
                li,
                src: src.typed(OP)?,
                ls,
            }
            .run()
            .map(CpuStorage::from_vec)
        };
    }
    nabla_core::dispatch_dtype!(dst.dtype(), T, {
        real | complex | int => go!(dst.typed::<T>(OP)?),
        _ => Err(Error::dtype(OP, dst.dtype())),
    })
}

/// The operands of one scatter-add, shapes and dtypes already checked: `src` added into a copy of
/// `dst` at the positions `idx` names along `axis`.
#[derive(Clone, Copy)]
struct Scatter<'a, T> {
    dst: &'a [T],
    ld: &'a Layout,
    axis: usize,
    idx: &'a [i64],
    li: &'a Layout,
    src: &'a [T],
    ls: &'a Layout,
}

impl<T: Accumulate> Scatter<'_, T> {
    /// The result, line by line onto a constant where that applies, else after checking every index
    /// (an invalid index is reported as the first in row-major order of the index view either way).
    fn run(self) -> Result<Vec<T>> {
        const OP: &str = "scatter_add";
        let n = self.ld.shape()[self.axis];
        match scatter_onto_constant_lines(self) {
            Some(Ok(out)) => Ok(out),
            Some(Err(())) => check_signed(OP, self.idx, self.li, n)
                .and(Err(Error::invalid(OP, "an index is out of bounds"))),
            None => {
                check_signed(OP, self.idx, self.li, n)?;
                scatter_checked(self)
            }
        }
    }
}

/// For every element of the index `li`, the position in the contiguous output of shape `ld.shape()`
/// where its line along `axis` starts (the output position with index 0 on `axis`).
fn line_starts(ld: &Layout, li: &Layout, axis: usize) -> Result<Layout> {
    let mut strides = contiguous_strides(ld.shape());
    strides[axis] = 0;
    Layout::from_parts(li.shape().to_vec(), strides, 0)
}

/// Scatter-add along the last axis onto a broadcast constant (the zeros of a gather's gradient, as in
/// max pooling's backward), one output line at a time: each line is filled and receives its
/// contributions while it is in cache, instead of the whole output being filled first and then
/// revisited. Indices are checked as they are used; `Some(Err(()))` when one is out of bounds (the
/// output is then dropped), `None` when the destination or the axis does not fit this path.
fn scatter_onto_constant_lines<T: Accumulate>(
    s: Scatter<'_, T>,
) -> Option<std::result::Result<Vec<T>, ()>> {
    let Scatter {
        dst,
        ld,
        axis,
        idx,
        li,
        src,
        ls,
    } = s;
    let n = ld.shape()[axis];
    let constant = ld.strides().iter().all(|&s| s == 0);
    if axis + 1 != ld.rank() || !constant || n == 0 || ld.numel() == 0 || li.numel() == 0 {
        return None;
    }
    let fill = dst[ld.offset()];
    // Its zero stride along the axis keeps each row of the plan to one index line.
    let base = line_starts(ld, li, axis).ok()?;
    let plan = RowPlan::new([&base, li, ls]);
    let len = plan.inner_len;
    if len != li.shape()[axis] || plan.rows() * n != ld.numel() {
        return None;
    }
    let [_, si, ss] = plan.inner_strides;
    let lines = |r0: usize, out: &mut [std::mem::MaybeUninit<T>]| -> bool {
        let mut valid = true;
        let first = r0 * n;
        plan.for_rows(r0, r0 + out.len() / n, |_, [ob, oi, os]| {
            let line = &mut out[ob - first..ob - first + n];
            line.fill(std::mem::MaybeUninit::new(fill));
            if (si, ss) == (1, 1) {
                // Contiguous index and source lines (max pooling's backward): plain slices, so that the
                // loop keeps its state in registers.
                // SAFETY: the whole line was initialised just above, and `MaybeUninit<T>` has `T`'s layout.
                let line = unsafe { &mut *(std::ptr::from_mut(line) as *mut [T]) };
                valid &= add_line(line, &idx[oi..oi + len], &src[os..os + len]);
                return;
            }
            let (mut pi, mut ps) = (oi as isize, os as isize);
            for _ in 0..len {
                let Some(at) = resolve(idx[pi as usize], n) else {
                    valid = false;
                    return;
                };
                let slot = &mut line[at];
                // SAFETY: the whole line was initialised above.
                let sum = unsafe { slot.assume_init() }.accumulate(src[ps as usize]);
                *slot = std::mem::MaybeUninit::new(sum);
                pi += si;
                ps += ss;
            }
        });
        valid
    };
    // Every line is filled before its indices are read, so the buffer is whole even after a bad index.
    let mut valid = true;
    let out = build(ld.numel(), |out| {
        valid = if crate::splits(out.len(), PARALLEL_THRESHOLD) && plan.rows() > 1 {
            let per_task = (CHUNK / n).max(1);
            out.par_chunks_mut(per_task * n)
                .enumerate()
                .map(|(t, o)| lines(t * per_task, o))
                .reduce(|| true, |a, b| a & b)
        } else {
            lines(0, out)
        };
    });
    Some(if valid { Ok(out) } else { Err(()) })
}

/// Adds `src[k]` onto `line[idx[k]]` for each `k` (a negative index counts from the end); `false` at the
/// first index out of bounds.
#[inline]
fn add_line<T: Accumulate>(line: &mut [T], idx: &[i64], src: &[T]) -> bool {
    let n = line.len();
    for (&i, &v) in idx.iter().zip(src) {
        let Some(at) = resolve(i, n) else {
            return false;
        };
        line[at] = line[at].accumulate(v);
    }
    true
}

/// Scatter-add with validated indices and shapes. Each output element receives its contributions in
/// row-major order of the index, so the result is deterministic, also when work is split across threads.
fn scatter_checked<T: Accumulate>(s: Scatter<'_, T>) -> Result<Vec<T>> {
    let Scatter {
        dst,
        ld,
        axis,
        idx,
        li,
        src,
        ls,
    } = s;
    let mut out = gather_view(dst, ld);
    if li.numel() == 0 {
        return Ok(out);
    }
    // `base` addresses the output at position 0 of `axis` for every element of the index.
    let sa = contiguous_strides(ld.shape())[axis];
    let base = line_starts(ld, li, axis)?;
    // Walk with `axis` innermost: a row then holds every contribution to one line of the output along
    // `axis`, so distinct rows write disjoint output elements and rows can go to different threads.
    let perm: Vec<usize> = (0..ld.rank())
        .filter(|&d| d != axis)
        .chain([axis])
        .collect();
    let (base, li, ls) = (base.permute(&perm)?, li.permute(&perm)?, ls.permute(&perm)?);
    let plan = RowPlan::new([&base, &li, &ls]);
    let (rows, len) = (plan.rows(), plan.inner_len);
    let [sb, si, ss] = plan.inner_strides;
    let n = ld.shape()[axis] as isize;
    let shared = SharedOut::from_init(&mut out);
    let run = |r0: usize, r1: usize| {
        plan.for_rows(r0, r1, |_, [ob, oi, os]| {
            let (mut pb, mut pi, mut ps) = (ob as isize, oi as isize, os as isize);
            for _ in 0..len {
                let t = (pb + resolved(idx[pi as usize], n) * sa) as usize;
                // SAFETY: the output is initialised (a copy of `dst`), and rows, each of which stays
                // within one line of the output along `axis`, are never split between threads.
                unsafe { shared.write(t, shared.read(t).accumulate(src[ps as usize])) };
                pb += sb;
                pi += si;
                ps += ss;
            }
        })
    };
    if crate::splits(rows * len, PARALLEL_THRESHOLD) && rows > 1 {
        let per_task = (CHUNK / len.max(1)).max(1);
        (0..rows.div_ceil(per_task))
            .into_par_iter()
            .for_each(|t| run(t * per_task, ((t + 1) * per_task).min(rows)));
    } else {
        run(0, rows);
    }
    Ok(out)
}

/// One-hot encoding: shape `s` of indices in `0..classes` becomes `s + [classes]` of `dtype`.
pub(crate) fn one_hot(
    index: &CpuStorage,
    layout: &Layout,
    classes: usize,
    dtype: DType,
) -> Result<CpuStorage> {
    const OP: &str = "one_hot";
    let idx = index_data(OP, index)?;
    check_indices(OP, idx, layout, classes, |i| {
        (0..classes as i64).contains(&i)
    })?;
    let total = checked_numel(OP, &[layout.numel(), classes])?;
    let values: Cow<[i64]> = match layout.contiguous_range() {
        Some(r) => Cow::Borrowed(&idx[r]),
        None => Cow::Owned(gather_view(idx, layout)),
    };
    fn encode<T: Element>(values: &[i64], classes: usize, total: usize) -> Vec<T> {
        let (zero, one) = (T::zero(), T::one());
        let rows = |out: &mut [std::mem::MaybeUninit<T>], values: &[i64]| {
            for (row, &i) in out.chunks_mut(classes).zip(values) {
                for (c, v) in row.iter_mut().enumerate() {
                    v.write(if c as i64 == i { one } else { zero });
                }
            }
        };
        build(total, |out| {
            if crate::splits(total, PARALLEL_THRESHOLD) {
                let per_task = (CHUNK / classes).max(1);
                out.par_chunks_mut(per_task * classes)
                    .zip(values.par_chunks(per_task))
                    .for_each(|(o, v)| rows(o, v));
            } else if classes > 0 {
                rows(out, values);
            }
        })
    }
    Ok(dispatch_dtype!(dtype, T => CpuStorage::from_vec(encode::<T>(&values, classes, total))))
}
