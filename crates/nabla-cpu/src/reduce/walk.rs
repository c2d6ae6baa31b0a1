//! The two ways a reduction walks its input.
//!
//! The input's axes are split into kept axes (which index the output, in output order) and reduced axes
//! (sorted so the smallest stride is innermost, with negative strides flipped: the order of a reduction
//! does not matter). Then either
//! - *horizontal*: each output element folds its reduced elements, innermost run first (a row sum), or
//! - *vertical*: when the innermost kept axis has the smaller stride (a column sum), whole output rows
//!   accumulate input rows, `out[j] = f(out[j], x[r, j])`, in cache-sized column tiles.
//!
//! Both combine partial results pairwise, and both split work across threads for large inputs.

use super::fold::{LEAF, PAR_LEAF, combine_into, combine4_into, fold_run};
use crate::strided::{CHUNK, RowPlan};
use nabla_core::{Layout, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Reduced elements accumulated serially into an output row before partial rows are combined pairwise.
const ROW_BLOCK: usize = 64;
/// Bytes of one column tile of a vertical reduction. Tiles are wide: when a tile spans whole rows of a
/// contiguous input, the rows of a task form one sequential stream, which the hardware prefetches best.
const TILE_BYTES: usize = 256 * 1024;

/// Calls `f(i, offsets)` for the elements `start..end` of a plan, in row-major order.
pub(super) fn for_each_elem<const K: usize>(
    plan: &RowPlan<K>,
    start: usize,
    end: usize,
    mut f: impl FnMut(usize, [usize; K]),
) {
    let len = plan.inner_len;
    if start >= end || len == 0 {
        return;
    }
    let s = plan.inner_strides;
    plan.for_rows(start / len, end.div_ceil(len), |row, offs| {
        let first = row * len;
        for i in start.max(first)..end.min(first + len) {
            let t = (i - first) as isize;
            f(
                i,
                std::array::from_fn(|k| (offs[k] as isize + t * s[k]) as usize),
            );
        }
    });
}

/// A view split into kept and reduced axes.
pub(super) struct Split {
    /// Buffer offsets of the output elements' first reduced element, in output order.
    pub kept: RowPlan<1>,
    /// Offsets of the reduced elements relative to that first one (all strides non-negative).
    pub red: RowPlan<1>,
    /// Number of output elements.
    pub n_out: usize,
    /// Number of elements folded into each output element.
    pub n_red: usize,
}

impl Split {
    /// Splits `layout` on the sorted, distinct, in-range `axes`.
    pub fn new(layout: &Layout, axes: &[usize]) -> Result<Split> {
        let (shape, strides) = (layout.shape(), layout.strides());
        let mut base = layout.offset() as isize;
        let (mut kept_dims, mut kept_strides) = (Vec::new(), Vec::new());
        let mut red: Vec<(usize, isize)> = Vec::new();
        for (ax, (&d, &s)) in shape.iter().zip(strides).enumerate() {
            if axes.contains(&ax) {
                if s < 0 && d > 0 {
                    base += s * (d as isize - 1);
                }
                red.push((d, s.abs()));
            } else {
                kept_dims.push(d);
                kept_strides.push(s);
            }
        }
        // Broadcast (stride 0) axes outermost, then by decreasing stride.
        red.sort_by_key(|&(_, s)| if s == 0 { isize::MIN } else { -s });
        let n_out = kept_dims.iter().product();
        let n_red = red.iter().map(|r| r.0).product();
        let kept = Layout::from_parts(kept_dims, kept_strides, base as usize)?;
        let (red_dims, red_strides) = red.into_iter().unzip();
        let red = Layout::from_parts(red_dims, red_strides, 0)?;
        Ok(Split {
            kept: RowPlan::new([&kept]),
            red: RowPlan::new([&red]),
            n_out,
            n_red,
        })
    }

    /// `true` when output rows should accumulate input rows (see the module docs).
    pub fn is_vertical(&self) -> bool {
        let ks = self.kept.inner_strides[0].unsigned_abs();
        let rs = self.red.inner_strides[0].unsigned_abs();
        self.kept.inner_len > 1 && (rs == 0 || ks < rs)
    }
}

/// Reduces with `f` over a split view of `x` whose `n_out` and `n_red` are both non-zero.
pub(super) fn reduce_split<T, F>(x: &[T], split: &Split, f: &F, par: bool) -> Vec<T>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    if split.is_vertical() {
        vertical(x, split, f, par)
    } else {
        horizontal(x, split, f, par)
    }
}

/// One output element at a time: folds its reduced rows pairwise.
fn horizontal<T, F>(x: &[T], split: &Split, f: &F, par: bool) -> Vec<T>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let n_out = split.n_out;
    let rows = split.red.rows();
    let mut out: Vec<T> = Vec::with_capacity(n_out);
    let spare = &mut out.spare_capacity_mut()[..n_out];
    let work = |start: usize, chunk: &mut [MaybeUninit<T>]| {
        for_each_elem(&split.kept, start, start + chunk.len(), |i, [base]| {
            chunk[i - start].write(fold_rows(x, &split.red, base, 0, rows, f, par));
        });
    };
    if par && n_out > 1 {
        let per = (CHUNK / split.n_red).max(1);
        spare
            .par_chunks_mut(per)
            .enumerate()
            .for_each(|(t, chunk)| work(t * per, chunk));
    } else {
        work(0, spare);
    }
    // SAFETY: `for_each_elem` visited every index of `0..n_out` and each was written once.
    unsafe { out.set_len(n_out) };
    out
}

/// Folds reduced rows `r0..r1` (non-empty) of the element whose first reduced element is at `base`.
fn fold_rows<T, F>(
    x: &[T],
    red: &RowPlan<1>,
    base: usize,
    r0: usize,
    r1: usize,
    f: &F,
    par: bool,
) -> T
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let (len, stride) = (red.inner_len, red.inner_strides[0]);
    let n = r1 - r0;
    if n == 1 || n * len <= LEAF {
        let mut acc = x[base];
        let mut first = true;
        red.for_rows(r0, r1, |_, [o]| {
            let v = fold_run(x, base + o, len, stride, f, par);
            acc = if first { v } else { f(acc, v) };
            first = false;
        });
        return acc;
    }
    let mid = r0 + n / 2;
    let (a, b) = if par && n * len >= PAR_LEAF {
        rayon::join(
            || fold_rows(x, red, base, r0, mid, f, par),
            || fold_rows(x, red, base, mid, r1, f, par),
        )
    } else {
        (
            fold_rows(x, red, base, r0, mid, f, par),
            fold_rows(x, red, base, mid, r1, f, par),
        )
    };
    f(a, b)
}

/// Output rows accumulate input rows, one column tile at a time.
fn vertical<T, F>(x: &[T], split: &Split, f: &F, par: bool) -> Vec<T>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let width = split.kept.inner_len;
    let ks = split.kept.inner_strides[0];
    let tile = (TILE_BYTES / size_of::<T>()).max(1);
    // Every element is overwritten; `x[0]` is just a valid value to start from.
    let mut out = vec![x[0]; split.n_out];
    let units: Vec<(usize, usize, &mut [T])> = out
        .chunks_mut(width)
        .enumerate()
        .flat_map(|(row, r)| {
            r.chunks_mut(tile)
                .enumerate()
                .map(move |(t, c)| (row, t * tile, c))
        })
        .collect();
    let work = |(row, c0, dst): (usize, usize, &mut [T])| {
        let mut start = 0;
        split.kept.for_rows(row, row + 1, |_, [o]| start = o);
        let base = (start as isize + c0 as isize * ks) as usize;
        accumulate_rows(x, &split.red, base, ks, dst, 0, split.n_red, f, par);
    };
    if par {
        units.into_par_iter().for_each(work);
    } else {
        units.into_iter().for_each(work);
    }
    out
}

/// Sets `dst` to the fold of reduced elements `e0..e1` (non-empty), where element `e` contributes the
/// input row starting at `base + offset(e)` with stride `ks`.
#[allow(clippy::too_many_arguments)]
fn accumulate_rows<T, F>(
    x: &[T],
    red: &RowPlan<1>,
    base: usize,
    ks: isize,
    dst: &mut [T],
    e0: usize,
    e1: usize,
    f: &F,
    par: bool,
) where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let n = e1 - e0;
    let w = dst.len();
    if n <= ROW_BLOCK {
        let mut rows = [0usize; ROW_BLOCK];
        for_each_elem(red, e0, e1, |e, [o]| rows[e - e0] = base + o);
        let rows = &rows[..n];
        if ks == 1 {
            let row = |r: usize| &x[r..r + w];
            dst.copy_from_slice(row(rows[0]));
            let mut quads = rows[1..].chunks_exact(4);
            for q in &mut quads {
                combine4_into(dst, [row(q[0]), row(q[1]), row(q[2]), row(q[3])], f);
            }
            for &r in quads.remainder() {
                combine_into(dst, row(r), f);
            }
        } else {
            for (i, &r) in rows.iter().enumerate() {
                for (j, d) in dst.iter_mut().enumerate() {
                    let v = x[(r as isize + j as isize * ks) as usize];
                    *d = if i == 0 { v } else { f(*d, v) };
                }
            }
        }
        return;
    }
    let mid = e0 + n / 2;
    let mut tmp = dst.to_vec();
    if par && n * w >= PAR_LEAF {
        rayon::join(
            || accumulate_rows(x, red, base, ks, dst, e0, mid, f, par),
            || accumulate_rows(x, red, base, ks, &mut tmp, mid, e1, f, par),
        );
    } else {
        accumulate_rows(x, red, base, ks, dst, e0, mid, f, par);
        accumulate_rows(x, red, base, ks, &mut tmp, mid, e1, f, par);
    }
    combine_into(dst, &tmp, f);
}
