//! How a reduction walks its input.
//!
//! The input's axes are split into kept axes (which index the output, in output order) and reduced axes
//! (negative strides flipped: the order of a reduction does not matter). Reduced axes whose stride is
//! smaller than that of the innermost kept axis are *inner*: each output element folds them itself, as a
//! row sum does. The others are *outer*: whole output rows accumulate one partial row per outer index,
//! `out[j] = f(out[j], partial[o, j])`, as a column sum does. Walking outer axes across output rows keeps
//! the input streaming in memory order, whichever axes are reduced: a row sum has no outer axes, a column
//! sum no inner ones, and a batch-norm style reduction of `[N, C, L]` over `(0, 2)` has both.
//!
//! Partial results are combined pairwise (so float sums stay accurate), and large inputs are split across
//! threads by output tiles and by halves of the reduced range.

use super::fold::{LEAF, PAR_LEAF, combine_into, combine4_into, fold_run};
use crate::strided::{CHUNK, RowPlan};
use nabla_core::{Layout, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Outer elements accumulated serially into an output row before partial rows are combined pairwise.
const ROW_BLOCK: usize = 64;
/// Bytes of one column tile of output rows. Tiles are wide: when a tile spans whole rows of a
/// contiguous input, the rows of a task form one sequential stream, which the hardware prefetches best.
const TILE_BYTES: usize = 256 * 1024;
/// Inner runs up to this long are folded inline, one output element after another.
const SHORT_RUN: usize = 16;

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

/// A view split into kept, outer-reduced and inner-reduced axes.
pub(super) struct Split {
    /// Buffer offsets of the output elements' first reduced element, in output order.
    kept: RowPlan<1>,
    /// Offsets of the outer reduced elements relative to that first one (non-negative strides).
    outer: RowPlan<1>,
    /// Offsets of the inner reduced elements relative to an outer one (non-negative strides).
    inner: RowPlan<1>,
    /// `true` when there are inner reduced axes of size above 1.
    has_inner: bool,
    /// Number of output elements.
    pub n_out: usize,
    /// Number of outer reduced elements.
    n_outer: usize,
    /// Number of inner reduced elements.
    n_inner: usize,
}

fn plan(dims: Vec<usize>, strides: Vec<isize>, offset: usize) -> Result<RowPlan<1>> {
    Ok(RowPlan::new([&Layout::from_parts(dims, strides, offset)?]))
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
        let kept = plan(kept_dims, kept_strides, base as usize)?;
        let ks = kept.inner_strides[0].unsigned_abs();
        let split_at = if kept.inner_len > 1 {
            red.iter()
                .take_while(|&&(_, s)| s == 0 || s.unsigned_abs() > ks)
                .count()
        } else {
            0
        };
        let (outer, inner) = red.split_at(split_at);
        let unzip =
            |v: &[(usize, isize)]| -> (Vec<usize>, Vec<isize>) { v.iter().copied().unzip() };
        let ((od, os), (id, is)) = (unzip(outer), unzip(inner));
        Ok(Split {
            n_out,
            n_outer: od.iter().product(),
            n_inner: id.iter().product(),
            has_inner: id.iter().any(|&d| d > 1),
            kept,
            outer: plan(od, os, 0)?,
            inner: plan(id, is, 0)?,
        })
    }

    /// Number of input elements folded into each output element.
    pub fn n_red(&self) -> usize {
        self.n_outer * self.n_inner
    }
}

/// What every step of one reduction needs.
struct Walk<'a, T, F> {
    x: &'a [T],
    split: &'a Split,
    f: &'a F,
    par: bool,
}

/// Reduces with `f` over a split view of `x` whose `n_out` and `n_red()` are both non-zero.
pub(super) fn reduce_split<T, F>(x: &[T], split: &Split, f: &F, par: bool) -> Vec<T>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let w = Walk { x, split, f, par };
    if split.outer.rows() * split.outer.inner_len > 1 {
        w.rows()
    } else {
        w.elements()
    }
}

/// Treats a fully initialised slice of `MaybeUninit<T>` as `[T]`.
fn assume_init<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: callers pass only slices whose every element has been written.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

impl<T, F> Walk<'_, T, F>
where
    T: Copy + Send + Sync,
    F: Fn(T, T) -> T + Sync,
{
    /// Folds the inner reduced elements of the output element whose first one is at `base`.
    fn fold_inner(&self, base: usize, par: bool) -> T {
        let inner = &self.split.inner;
        if inner.rows() == 1 && inner.inner_len <= SHORT_RUN {
            let (len, s) = (inner.inner_len, inner.inner_strides[0]);
            let mut acc = self.x[base];
            for t in 1..len {
                acc = (self.f)(acc, self.x[(base as isize + t as isize * s) as usize]);
            }
            return acc;
        }
        self.fold_inner_rows(base, 0, inner.rows(), par)
    }

    /// Folds inner rows `r0..r1` (non-empty) pairwise.
    fn fold_inner_rows(&self, base: usize, r0: usize, r1: usize, par: bool) -> T {
        let inner = &self.split.inner;
        let (len, stride) = (inner.inner_len, inner.inner_strides[0]);
        let n = r1 - r0;
        if n == 1 || n * len <= LEAF {
            let mut acc = self.x[base];
            let mut first = true;
            inner.for_rows(r0, r1, |_, [o]| {
                let v = fold_run(self.x, base + o, len, stride, self.f, par);
                acc = if first { v } else { (self.f)(acc, v) };
                first = false;
            });
            return acc;
        }
        let mid = r0 + n / 2;
        let (a, b) = if par && n * len >= PAR_LEAF {
            rayon::join(
                || self.fold_inner_rows(base, r0, mid, par),
                || self.fold_inner_rows(base, mid, r1, par),
            )
        } else {
            (
                self.fold_inner_rows(base, r0, mid, par),
                self.fold_inner_rows(base, mid, r1, par),
            )
        };
        (self.f)(a, b)
    }

    /// No outer axes: one output element at a time.
    fn elements(&self) -> Vec<T> {
        let n_out = self.split.n_out;
        let mut out: Vec<T> = crate::strided::output_vec(n_out);
        let spare = &mut out.spare_capacity_mut()[..n_out];
        let work = |start: usize, chunk: &mut [MaybeUninit<T>]| {
            for_each_elem(&self.split.kept, start, start + chunk.len(), |i, [base]| {
                chunk[i - start].write(self.fold_inner(base, self.par));
            });
        };
        if self.par && n_out > 1 {
            let per = (CHUNK / self.split.n_red()).max(1);
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

    /// Outer axes: output rows accumulate partial rows, one column tile at a time.
    fn rows(&self) -> Vec<T> {
        let kept = &self.split.kept;
        let (width, ks) = (kept.inner_len, kept.inner_strides[0]);
        let tile = (TILE_BYTES / size_of::<T>()).max(1);
        let n_out = self.split.n_out;
        let mut out: Vec<T> = crate::strided::output_vec(n_out);
        let units: Vec<(usize, usize, &mut [MaybeUninit<T>])> = out.spare_capacity_mut()[..n_out]
            .chunks_mut(width)
            .enumerate()
            .flat_map(|(row, r)| {
                r.chunks_mut(tile)
                    .enumerate()
                    .map(move |(t, c)| (row, t * tile, c))
            })
            .collect();
        let work = |(row, c0, dst): (usize, usize, &mut [MaybeUninit<T>])| {
            let mut start = 0;
            kept.for_rows(row, row + 1, |_, [o]| start = o);
            let base = (start as isize + c0 as isize * ks) as usize;
            self.accumulate(base, dst, 0, self.split.n_outer);
        };
        if self.par {
            units.into_par_iter().for_each(work);
        } else {
            units.into_iter().for_each(work);
        }
        // SAFETY: the units partition the output and `accumulate` initialises all of each.
        unsafe { out.set_len(n_out) };
        out
    }

    /// Initialises `dst` with the fold over outer elements `e0..e1` (non-empty) of the partial rows
    /// starting at `base`.
    fn accumulate(&self, base: usize, dst: &mut [MaybeUninit<T>], e0: usize, e1: usize) {
        let n = e1 - e0;
        let w = dst.len();
        let ks = self.split.kept.inner_strides[0];
        // Halves run on two threads when there is enough work, also below `ROW_BLOCK` rows: a few
        // output elements each folding long inner runs (a convolution bias's gradient, `[N, C, H, W]`
        // summed over `(0, 2, 3)`) would otherwise run on one thread.
        let parallel = self.par && n > 1 && n * w * self.split.n_inner >= PAR_LEAF;
        if n <= ROW_BLOCK && !parallel {
            let mut rows = [0usize; ROW_BLOCK];
            for_each_elem(&self.split.outer, e0, e1, |e, [o]| rows[e - e0] = base + o);
            self.leaf(&rows[..n], ks, dst);
            return;
        }
        let mid = e0 + n / 2;
        let mut tmp: Vec<T> = Vec::with_capacity(w);
        let spare = &mut tmp.spare_capacity_mut()[..w];
        if parallel {
            rayon::join(
                || self.accumulate(base, dst, e0, mid),
                || self.accumulate(base, spare, mid, e1),
            );
        } else {
            self.accumulate(base, dst, e0, mid);
            self.accumulate(base, spare, mid, e1);
        }
        // SAFETY: `accumulate` initialised all `w` elements.
        unsafe { tmp.set_len(w) };
        combine_into(assume_init(dst), &tmp, self.f);
    }

    /// Initialises `dst` with the fold of the partial rows starting at each of `rows` (non-empty).
    fn leaf(&self, rows: &[usize], ks: isize, dst: &mut [MaybeUninit<T>]) {
        let (x, f, w) = (self.x, self.f, dst.len());
        let at = |r: usize, j: usize| (r as isize + j as isize * ks) as usize;
        if self.split.has_inner {
            for (j, d) in dst.iter_mut().enumerate() {
                d.write(self.fold_inner(at(rows[0], j), false));
            }
            let dst = assume_init(dst);
            for &r in &rows[1..] {
                for (j, d) in dst.iter_mut().enumerate() {
                    *d = f(*d, self.fold_inner(at(r, j), false));
                }
            }
        } else if ks == 1 {
            let row = |r: usize| &x[r..r + w];
            for (d, &v) in dst.iter_mut().zip(row(rows[0])) {
                d.write(v);
            }
            let dst = assume_init(dst);
            let mut quads = rows[1..].chunks_exact(4);
            for q in &mut quads {
                combine4_into(dst, [row(q[0]), row(q[1]), row(q[2]), row(q[3])], f);
            }
            for &r in quads.remainder() {
                combine_into(dst, row(r), f);
            }
        } else {
            for (j, d) in dst.iter_mut().enumerate() {
                d.write(x[at(rows[0], j)]);
            }
            let dst = assume_init(dst);
            for &r in &rows[1..] {
                for (j, d) in dst.iter_mut().enumerate() {
                    *d = f(*d, x[at(r, j)]);
                }
            }
        }
    }
}
