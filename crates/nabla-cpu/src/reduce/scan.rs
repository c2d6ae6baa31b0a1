//! Index reductions (argmax/argmin) and the cumulative sum: walks along one axis.

use super::elem::Arith;
use super::fold::fold_lanes;
use super::walk::for_each_elem;
use crate::PARALLEL_THRESHOLD;
use crate::strided::{CHUNK, RowPlan, gather_view};
use nabla_core::{Layout, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Bytes of one column tile when several positions along the axis are scanned side by side.
const TILE_BYTES: usize = 16 * 1024;

/// Elements of a contiguous run searched per block by [`first_extreme`].
const BLOCK: usize = 2048;

/// For each position of the non-`axis` dimensions (in row-major order), the index along `axis`
/// (non-empty) of the first element `v` for which `better(v, best)` held against every earlier one.
/// `fold` is the matching associative reduction (the extreme value itself, NaN-propagating).
pub(super) fn arg_select<T, B, F>(
    x: &[T],
    layout: &Layout,
    axis: usize,
    better: B,
    fold: F,
) -> Result<Vec<i64>>
where
    T: Copy + Send + Sync + PartialEq,
    B: Fn(T, T) -> bool + Sync,
    F: Fn(T, T) -> T + Sync,
{
    let (n, s) = (layout.shape()[axis], layout.strides()[axis]);
    let mut dims = layout.shape().to_vec();
    let mut strides = layout.strides().to_vec();
    dims.remove(axis);
    strides.remove(axis);
    let kept = RowPlan::new([&Layout::from_parts(dims, strides, layout.offset())?]);
    let n_out = kept.rows() * kept.inner_len;
    let par = crate::splits(n_out * n, PARALLEL_THRESHOLD);
    let ks = kept.inner_strides[0];
    if kept.inner_len > 1 && ks.unsigned_abs() < s.unsigned_abs() {
        // Several outputs side by side: scan whole rows of the tile along the axis.
        let width = kept.inner_len;
        let tile = (TILE_BYTES / size_of::<T>()).max(1);
        let mut out = vec![0i64; n_out];
        let units: Vec<(usize, usize, &mut [i64])> = out
            .chunks_mut(width)
            .enumerate()
            .flat_map(|(row, r)| {
                r.chunks_mut(tile)
                    .enumerate()
                    .map(move |(t, c)| (row, t * tile, c))
            })
            .collect();
        let work = |(row, c0, idx): (usize, usize, &mut [i64])| {
            let mut start = 0;
            kept.for_rows(row, row + 1, |_, [o]| start = o);
            let base = start as isize + c0 as isize * ks;
            let at = |i: usize, j: usize| x[(base + i as isize * s + j as isize * ks) as usize];
            let mut best: Vec<T> = (0..idx.len()).map(|j| at(0, j)).collect();
            for i in 1..n {
                for (j, (b, k)) in best.iter_mut().zip(idx.iter_mut()).enumerate() {
                    let v = at(i, j);
                    if better(v, *b) {
                        *b = v;
                        *k = i as i64;
                    }
                }
            }
        };
        if par {
            units.into_par_iter().for_each(work);
        } else {
            units.into_iter().for_each(work);
        }
        return Ok(out);
    }
    let scan = |base: usize| {
        if s == 1 {
            return first_extreme(&x[base..base + n], &better, &fold) as i64;
        }
        let mut best = x[base];
        let mut best_i = 0;
        for i in 1..n {
            let v = x[(base as isize + i as isize * s) as usize];
            if better(v, best) {
                best = v;
                best_i = i;
            }
        }
        best_i as i64
    };
    let mut out: Vec<i64> = crate::strided::output_vec(n_out);
    let spare = &mut out.spare_capacity_mut()[..n_out];
    let work = |start: usize, chunk: &mut [MaybeUninit<i64>]| {
        for_each_elem(&kept, start, start + chunk.len(), |i, [base]| {
            chunk[i - start].write(scan(base));
        })
    };
    if par {
        let per = (CHUNK / n).max(1);
        spare
            .par_chunks_mut(per)
            .enumerate()
            .for_each(|(t, chunk)| work(t * per, chunk));
    } else {
        work(0, spare);
    }
    // SAFETY: `for_each_elem` visited every index of `0..n_out` and each was written once.
    unsafe { out.set_len(n_out) };
    Ok(out)
}

/// Index of the first extreme element of a non-empty contiguous run: the extreme value of each block is
/// found with a vectorised fold, then the winning block is searched for its first occurrence.
#[allow(clippy::eq_op)]
fn first_extreme<T, B, F>(run: &[T], better: &B, fold: &F) -> usize
where
    T: Copy + PartialEq,
    B: Fn(T, T) -> bool,
    F: Fn(T, T) -> T,
{
    let mut best = run[0];
    let mut best_block = 0;
    for (b, block) in run.chunks(BLOCK).enumerate() {
        let m = fold_lanes(block, fold);
        if b == 0 || better(m, best) {
            best = m;
            best_block = b;
        }
    }
    let start = best_block * BLOCK;
    let block = &run[start..(start + BLOCK).min(run.len())];
    // The fold propagates NaN, so a NaN extreme is found as the first NaN.
    let hit = block
        .iter()
        .position(|&v| v == best || (best != best && v != v))
        .unwrap_or(0);
    start + hit
}

/// Inclusive cumulative sum along `axis` into a new contiguous vector.
pub(super) fn cumsum_typed<T: Arith>(x: &[T], layout: &Layout, axis: usize) -> Vec<T> {
    let mut v = gather_view(x, layout);
    let shape = layout.shape();
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let block = n * inner;
    if block == 0 || v.is_empty() {
        return v;
    }
    let scan = |blk: &mut [T]| {
        if inner == 1 {
            for i in 1..n {
                blk[i] = blk[i - 1].add(blk[i]);
            }
            return;
        }
        for i in 1..n {
            let (done, rest) = blk.split_at_mut(i * inner);
            add_assign(&mut rest[..inner], &done[(i - 1) * inner..]);
        }
    };
    if crate::splits(v.len(), PARALLEL_THRESHOLD) && v.len() > block {
        v.par_chunks_mut(block).for_each(scan);
    } else {
        v.chunks_mut(block).for_each(scan);
    }
    v
}

crate::simd_kernel! {
    /// `dst[j] = dst[j] + src[j]`.
    fn add_assign<T: Arith>(dst: &mut [T], src: &[T]) {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = s.add(*d);
        }
    }
}
