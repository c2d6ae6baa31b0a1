//! 2-D max pooling with the position of each maximum (PyTorch's `max_pool2d(...,
//! return_indices=True)`).
//!
//! Every `H x W` plane (the last two dimensions) is pooled on its own; planes are split across
//! threads for large inputs. Window taps in the padding are skipped, so padding never wins; ties
//! keep the first maximum in row-major window order; the first NaN of a window is its maximum, as
//! in PyTorch.

mod gathered;
mod pairs;

use crate::CpuStorage;
use crate::strided::gather_view;
use gathered::{GatheredPool, Windows};
use nabla_core::{DType, Element, Error, Layout, Pool2dParams, Result};
use pairs::PairPool;
use rayon::prelude::*;
use std::borrow::Cow;
use std::hint::select_unpredictable;

/// Output elements above which planes are pooled in parallel.
const PARALLEL_OUTPUTS: usize = 1 << 14;

/// The taps of one axis. For output position `o`, the valid input positions are `first[o] + k *
/// dilation` for `k < count[o]` (taps in the padding left out); kernel tap `k` reads input `o *
/// stride + k * dilation - pad`, valid for the outputs `outputs[k].0..outputs[k].1`.
struct AxisTaps {
    first: Vec<usize>,
    count: Vec<usize>,
    outputs: Vec<(usize, usize)>,
    stride: usize,
    dilation: usize,
    pad: usize,
}

impl AxisTaps {
    fn new(
        size: usize,
        out: usize,
        kernel: usize,
        stride: usize,
        pad: usize,
        dilation: usize,
    ) -> Self {
        let input = |o: usize, k: usize| {
            (o * stride + k * dilation)
                .checked_sub(pad)
                .filter(|&i| i < size)
        };
        let (mut first, mut count) = (Vec::with_capacity(out), Vec::with_capacity(out));
        for o in 0..out {
            let mut valid = (0..kernel).filter_map(|k| input(o, k));
            let start = valid.next();
            first.push(start.unwrap_or(0));
            count.push(start.map_or(0, |_| 1 + valid.count()));
        }
        // The outputs that read a valid input through tap `k` form one run.
        let outputs = (0..kernel)
            .map(|k| {
                let valid: Vec<usize> = (0..out).filter(|&o| input(o, k).is_some()).collect();
                match (valid.first(), valid.last()) {
                    (Some(&lo), Some(&hi)) => (lo, hi + 1),
                    _ => (0, 0),
                }
            })
            .collect();
        AxisTaps {
            first,
            count,
            outputs,
            stride,
            dilation,
            pad,
        }
    }

    fn taps(&self, o: usize) -> impl Iterator<Item = usize> + '_ {
        (0..self.count[o]).map(move |k| self.first[o] + k * self.dilation)
    }
}

/// The geometry of one pooling: plane sizes and the taps of both axes.
struct Geometry {
    h: usize,
    w: usize,
    rows: AxisTaps,
    cols: AxisTaps,
}

impl Geometry {
    fn out_w(&self) -> usize {
        self.cols.count.len()
    }

    /// `true` when every flat position inside a plane fits a `u32` (see [`pool_plane_tiled`]).
    fn positions_fit_u32(&self) -> bool {
        self.h
            .checked_mul(self.w)
            .is_some_and(|n| n <= u32::MAX as usize)
    }

    /// Pools one plane into `vals`/`idx` (each `out_h * out_w` long), one output row at a time:
    /// each row starts from the first valid tap of every window, then every tap `(kh, kw)` in
    /// window order sweeps the whole row, so later taps replace the maximum only when strictly
    /// larger (ties keep the first) or when they are the window's first NaN. `Err(position)` names
    /// an output whose window covers no input element.
    fn pool_plane<T: Element + PartialOrd>(
        &self,
        plane: &[T],
        vals: &mut [T],
        idx: &mut [i64],
    ) -> std::result::Result<(), (usize, usize)> {
        let out_w = self.out_w();
        if let Some((kh, kw)) = self.dense_kernel() {
            // Constant kernel sizes for the common cases, so that the window loops unroll.
            let tiles = self.cols.stride == kw && self.positions_fit_u32();
            match (kh, kw, tiles) {
                (2, 2, true) => {
                    pool_plane_tiled::<T, 2, 2>(plane, (self.w, out_w), self.rows.stride, vals, idx)
                }
                (3, 3, true) => {
                    pool_plane_tiled::<T, 3, 3>(plane, (self.w, out_w), self.rows.stride, vals, idx)
                }
                (2, 2, false) => self.pool_plane_dense(plane, vals, idx, 2, 2),
                (3, 3, false) => self.pool_plane_dense(plane, vals, idx, 3, 3),
                _ => self.pool_plane_dense(plane, vals, idx, kh, kw),
            }
            return Ok(());
        }
        let cols = &self.cols;
        for (oh, (v_row, i_row)) in vals
            .chunks_exact_mut(out_w)
            .zip(idx.chunks_exact_mut(out_w))
            .enumerate()
        {
            for ow in 0..out_w {
                if self.rows.count[oh] == 0 || cols.count[ow] == 0 {
                    return Err((oh, ow));
                }
                let at = self.rows.first[oh] * self.w + cols.first[ow];
                v_row[ow] = plane[at];
                i_row[ow] = at as i64;
            }
            for ih in self.rows.taps(oh) {
                let row = &plane[ih * self.w..(ih + 1) * self.w];
                for (kw, &(lo, hi)) in cols.outputs.iter().enumerate() {
                    // Input column of output `ow` through tap `kw`: `ow * stride + shift`.
                    let shift = kw * cols.dilation;
                    for ow in lo..hi {
                        let iw = ow * cols.stride + shift - cols.pad;
                        if replaces_max(row[iw], v_row[ow]) {
                            v_row[ow] = row[iw];
                            i_row[ow] = (ih * self.w + iw) as i64;
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

impl Geometry {
    /// The window offsets for the gathering kernels, when every window lies wholly inside the plane
    /// (no padding, no ceil-mode overhang; any stride and dilation).
    fn windows(&self) -> Option<Windows> {
        let whole = |a: &AxisTaps| a.pad == 0 && a.count.iter().all(|&c| c == a.outputs.len());
        if !(whole(&self.rows) && whole(&self.cols)) {
            return None;
        }
        Windows::new(
            self.w,
            (self.rows.count.len(), self.out_w()),
            (self.rows.outputs.len(), self.cols.outputs.len()),
            (self.rows.stride, self.cols.stride),
            (self.rows.dilation, self.cols.dilation),
        )
    }

    /// `true` for whole `2x2` windows placed 2 apart on both axes (see [`pairs`]).
    fn is_pairs(&self) -> bool {
        self.dense_kernel() == Some((2, 2)) && self.rows.stride == 2 && self.cols.stride == 2
    }

    /// `(kh, kw)` when every window lies wholly inside the plane with unit dilation (no padding, no
    /// ceil-mode overhang): then each output reads its `kh x kw` window directly.
    fn dense_kernel(&self) -> Option<(usize, usize)> {
        let full = |a: &AxisTaps| {
            let k = a.outputs.len();
            (a.pad == 0 && a.dilation == 1 && a.count.iter().all(|&c| c == k)).then_some(k)
        };
        Some((full(&self.rows)?, full(&self.cols)?))
    }

    /// Pools one plane whose windows are all whole (see [`Geometry::dense_kernel`]): each output
    /// scans its window in row-major order, keeping the first maximum, or the first NaN.
    #[inline(always)]
    fn pool_plane_dense<T: Element + PartialOrd>(
        &self,
        plane: &[T],
        vals: &mut [T],
        idx: &mut [i64],
        kh: usize,
        kw: usize,
    ) {
        let (w, out_w) = (self.w, self.out_w());
        let (sh, sw) = (self.rows.stride, self.cols.stride);
        for (oh, (v_row, i_row)) in vals
            .chunks_exact_mut(out_w)
            .zip(idx.chunks_exact_mut(out_w))
            .enumerate()
        {
            let top = oh * sh * w;
            for (ow, (v_out, i_out)) in v_row.iter_mut().zip(i_row.iter_mut()).enumerate() {
                let corner = top + ow * sw;
                let (mut best, mut at) = (plane[corner], corner);
                for r in 0..kh {
                    let row = corner + r * w;
                    for c in 0..kw {
                        let v = plane[row + c];
                        let wins = replaces_max(v, best);
                        // Selects rather than a branch: which tap wins is data-dependent and
                        // mispredicts often.
                        best = select_unpredictable(wins, v, best);
                        at = select_unpredictable(wins, row + c, at);
                    }
                }
                *v_out = best;
                *i_out = at as i64;
            }
        }
    }
}

/// `true` when tap value `v` replaces the window's maximum so far, `best`: when it is strictly
/// larger, or the first NaN (so ties keep the earliest tap and a NaN, once taken, stays). Written
/// without short-circuits, so that callers can select instead of branch.
#[inline(always)]
#[allow(clippy::eq_op)]
fn replaces_max<T: PartialOrd>(v: T, best: T) -> bool {
    (v > best) | ((v != v) & (best == best))
}

/// The vector form of the replacement test, shared by the gathered and the paired kernels.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Tap value `v` at positions `pos` replaces the maximum so far, `best` at `at`, in the lanes
    /// where it is strictly larger or the window's first NaN: [`super::replaces_max`] on eight
    /// lanes.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn keep_max8(
        (best, at): (__m256, __m256i),
        v: __m256,
        pos: __m256i,
    ) -> (__m256, __m256i) {
        let larger = _mm256_cmp_ps::<_CMP_GT_OQ>(v, best);
        let first_nan = _mm256_andnot_ps(
            _mm256_cmp_ps::<_CMP_UNORD_Q>(best, best),
            _mm256_cmp_ps::<_CMP_UNORD_Q>(v, v),
        );
        let wins = _mm256_or_ps(larger, first_nan);
        (
            _mm256_blendv_ps(best, v, wins),
            _mm256_blendv_epi8(at, pos, _mm256_castps_si256(wins)),
        )
    }
}

crate::simd_kernel! {
    /// Pools one plane whose whole `KH x KW` windows also tile each row (column stride `KW`, as in
    /// the usual `2x2` stride-2 pooling; rows `row_stride` apart), into `vals`/`idx` rows of equal
    /// length. Window row `r` of all outputs in an output row is one branch-free sweep over
    /// `KW`-wide chunks of an input row, carrying the winning flat position as a `u32` lane beside
    /// the value (the caller checks that positions fit), so the sweep vectorises; compiled per SIMD
    /// level.
    fn pool_plane_tiled<T: Element + PartialOrd, const KH: usize, const KW: usize>(
        plane: &[T],
        (w, out_w): (usize, usize),
        row_stride: usize,
        vals: &mut [T],
        idx: &mut [i64],
    ) {
        if out_w == 0 {
            return;
        }
        // The winning position of each output of a row; a small plane's row fits on the stack.
        let mut on_stack = [0u32; 64];
        let mut on_heap = Vec::new();
        let best_at: &mut [u32] = if out_w <= on_stack.len() {
            &mut on_stack[..out_w]
        } else {
            on_heap.resize(out_w, 0);
            &mut on_heap
        };
        for (oh, (v_row, i_row)) in vals
            .chunks_exact_mut(out_w)
            .zip(idx.chunks_exact_mut(out_w))
            .enumerate()
        {
            for r in 0..KH {
                let row = (oh * row_stride + r) * w;
                let (windows, _) = plane[row..row + w].as_chunks::<KW>();
                let outputs = v_row.iter_mut().zip(best_at.iter_mut());
                for (ow, ((best, at), window)) in outputs.zip(&windows[..out_w]).enumerate() {
                    let corner = (row + ow * KW) as u32;
                    // The first window row starts from the window's first tap.
                    let (mut b, mut a, from) = match r {
                        0 => (window[0], corner, 1),
                        _ => (*best, *at, 0),
                    };
                    for (c, &v) in window.iter().enumerate().skip(from) {
                        let wins = replaces_max(v, b);
                        // Selects, not branches, also in the scalar tail of a short row.
                        b = select_unpredictable(wins, v, b);
                        a = select_unpredictable(wins, corner + c as u32, a);
                    }
                    (*best, *at) = (b, a);
                }
            }
            for (out, &a) in i_row.iter_mut().zip(best_at.iter()) {
                *out = i64::from(a);
            }
        }
    }
}

/// Max pooling of every plane of `x`; returns the values and the `I64` flat positions of the
/// maxima.
pub(crate) fn max_pool2d(
    x: &CpuStorage,
    layout: &Layout,
    p: &Pool2dParams,
) -> Result<(CpuStorage, CpuStorage)> {
    const OP: &str = "max_pool2d";
    let shape = layout.shape();
    let rank = shape.len();
    if rank < 2 {
        return Err(Error::invalid(
            OP,
            format!("expected at least 2 dimensions [..., H, W], got shape {shape:?}"),
        ));
    }
    let (h, w) = (shape[rank - 2], shape[rank - 1]);
    let (out_h, out_w) = p.checked_output_size(OP, (h, w))?.ok_or_else(|| {
        Error::invalid(
            OP,
            format!("parameters {p:?} give no output for an input plane of {h}x{w}"),
        )
    })?;
    // The tap tables hold a pair of positions per kernel tap of each axis.
    nabla_core::check_allocation(OP, &[p.kernel.0.max(p.kernel.1), 2], DType::I64)?;
    let geometry = Geometry {
        h,
        w,
        rows: AxisTaps::new(h, out_h, p.kernel.0, p.stride.0, p.padding.0, p.dilation.0),
        cols: AxisTaps::new(w, out_w, p.kernel.1, p.stride.1, p.padding.1, p.dilation.1),
    };
    macro_rules! go {
        ($T:ty) => {
            pool_typed::<$T>(x.typed::<$T>(OP)?, layout, &geometry, p)
        };
    }
    let dtype = x.dtype();
    nabla_core::dispatch_dtype!(dtype, T, {
        real | int => go!(T),
        _ => Err(Error::invalid(
            OP,
            format!("max pooling supports real floats and integers, not {dtype}"),
        )),
    })
}

fn pool_typed<T: Element + PartialOrd + GatheredPool + PairPool>(
    data: &[T],
    layout: &Layout,
    g: &Geometry,
    p: &Pool2dParams,
) -> Result<(CpuStorage, CpuStorage)> {
    let input: Cow<'_, [T]> = match layout.contiguous_range() {
        Some(r) => Cow::Borrowed(&data[r]),
        None => Cow::Owned(gather_view(data, layout)),
    };
    let (plane_in, plane_out) = (g.h * g.w, g.rows.count.len() * g.out_w());
    let planes = input.len().checked_div(plane_in).unwrap_or(0);
    // Pooled buffers (zeroed here, every element is overwritten) avoid fresh pages on every call.
    let mut vals = crate::strided::filled_vec(planes * plane_out, T::zero());
    let mut idx = crate::strided::filled_vec(planes * plane_out, 0i64);
    let windows = g.windows();
    let pairs = g.is_pairs().then_some((g.rows.count.len(), g.out_w()));
    let run = |(i, (v, ix)): (usize, (&mut [T], &mut [i64]))| {
        let plane = &input[i * plane_in..(i + 1) * plane_in];
        if pairs.is_some_and(|out| T::pool_pairs(plane, g.w, out, v, ix)) {
            return Ok(());
        }
        match &windows {
            Some(w) if T::pool_gathered(plane, w, v, ix) => Ok(()),
            _ => g.pool_plane(plane, v, ix),
        }
    };
    let outcome = if plane_out == 0 {
        Ok(())
    } else if crate::splits(vals.len(), PARALLEL_OUTPUTS) {
        // At least `PARALLEL_OUTPUTS` outputs per task: small planes are many.
        vals.par_chunks_mut(plane_out)
            .zip(idx.par_chunks_mut(plane_out))
            .enumerate()
            .with_min_len(PARALLEL_OUTPUTS.div_ceil(plane_out))
            .try_for_each(run)
    } else {
        vals.chunks_mut(plane_out)
            .zip(idx.chunks_mut(plane_out))
            .enumerate()
            .try_for_each(run)
    };
    outcome.map_err(|(oh, ow)| {
        Error::invalid(
            "max_pool2d",
            format!(
                "the window of output ({oh}, {ow}) covers no input element ({p:?} on a {}x{} plane)",
                g.h, g.w
            ),
        )
    })?;
    Ok((CpuStorage::from_vec(vals), CpuStorage::from_vec(idx)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(values: Vec<f32>, h: usize, w: usize, p: Pool2dParams) -> (Vec<f32>, Vec<i64>) {
        let x = CpuStorage::from_vec(values);
        let (v, i) = max_pool2d(&x, &Layout::contiguous([1, h, w]), &p).unwrap();
        (
            v.typed::<f32>("t").unwrap().to_vec(),
            i.typed::<i64>("t").unwrap().to_vec(),
        )
    }

    #[test]
    fn two_by_two_windows_pick_the_first_maximum() {
        let x = vec![
            1., 3., 3., 0., 2., 2., -1., 4., 5., 5., 0., 0., 5., 5., 0., 7.,
        ];
        let (v, i) = pool(x, 4, 4, Pool2dParams::square(2));
        assert_eq!(v, vec![3., 4., 5., 7.]);
        assert_eq!(i, vec![1, 7, 8, 15]);
    }

    #[test]
    fn padding_never_wins_and_nan_propagates() {
        let p = Pool2dParams {
            padding: (1, 1),
            ..Pool2dParams::square(2)
        };
        let (v, i) = pool(vec![-5., -6., f32::NAN, -7.], 2, 2, p);
        assert_eq!(v[..2], [-5., -6.]);
        assert!(v[2].is_nan());
        assert_eq!(i, vec![0, 1, 2, 3]);
    }

    #[test]
    fn strided_views_are_pooled_as_seen() {
        let x = CpuStorage::from_vec((0..8).map(|v| v as f64).collect::<Vec<_>>());
        // The transpose of a 2x4 plane: a 4x2 plane.
        let view = Layout::contiguous([2, 4]).permute(&[1, 0]).unwrap();
        let (v, i) = max_pool2d(&x, &view, &Pool2dParams::square(2)).unwrap();
        assert_eq!(v.typed::<f64>("t").unwrap(), [5., 7.]);
        assert_eq!(i.typed::<i64>("t").unwrap(), [3, 7]);
    }
}
