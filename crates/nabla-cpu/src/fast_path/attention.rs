//! The host kernels of the fused attention: the forward pass with an online softmax over blocks of
//! keys (FlashAttention's order: the scores of one block of queries against one block of keys at a
//! time, never the whole `[L, S]` matrix), and its vector-Jacobian product, which recomputes each
//! block's probabilities from the saved log-sum-exp. Every product is a sequential faer product on
//! a block that stays in cache; the thread pool runs blocks of queries (forward) or whole batch
//! entries (backward, so that each task owns the key and value cotangents it accumulates).

use crate::simd_math::SimdFloat;
use faer::linalg::matmul::matmul;
use faer::traits::ComplexField;
use faer::{Accum, MatMut, MatRef, Par};
use nabla_core::fast_path::{AttentionDims as Dims, AttentionOp};
use nabla_core::{Element, Error, FastPath, HostAllocator, HostView, Result};
use rayon::prelude::*;

/// Query rows per block: a forward task, and the rows of one backward step.
const BLOCK_ROWS: usize = 64;
/// Keys per block: a `64 x 128` block of scores is 32 KiB in `f32`, which stays in L1/L2 with the
/// operand blocks.
const BLOCK_COLS: usize = 128;

/// The float types the kernels run in.
pub(super) trait AttentionFloat: SimdFloat + Element + ComplexField {}
impl<T: SimdFloat + Element + ComplexField> AttentionFloat for T {}

/// The problem: sizes, the factor the scores are multiplied by, and whether query `i` may only see
/// keys `j <= i`.
#[derive(Clone, Copy, Debug)]
struct Problem<T> {
    dims: Dims,
    scale: T,
    causal: bool,
}

impl<T> Problem<T> {
    /// How many keys of the block starting at `c0` (of `cols` keys) query row `i` may see: all of
    /// them, or with the causal mask those up to and including `i`.
    fn visible(&self, i: usize, c0: usize, cols: usize) -> usize {
        if self.causal {
            (i + 1).saturating_sub(c0).min(cols)
        } else {
            cols
        }
    }
}

/// Runs `op` in `T` on inputs of `dims`.
pub(super) fn run<T: AttentionFloat>(
    op: AttentionOp,
    dims: Dims,
    views: &[HostView<'_>],
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let data: Vec<&[T]> = super::typed_inputs(op.name(), views)?;
    let (scale, causal) = op.params();
    let problem = Problem {
        dims,
        scale: T::from_f64(scale),
        causal,
    };
    let len = match op {
        AttentionOp::Forward { .. } => dims.forward_len(),
        AttentionOp::Vjp { .. } => dims.vjp_len(),
    };
    let len = len.ok_or_else(|| Error::invalid(op.name(), "sizes overflow"))?;
    let mut out: Vec<T> = alloc.vec(len);
    out.resize(len, T::ZERO);
    match (op, data.as_slice()) {
        (AttentionOp::Forward { .. }, &[q, k, v]) => forward(&problem, q, k, v, &mut out),
        (AttentionOp::Vjp { .. }, &[q, k, v, packed, cot]) => {
            backward(&problem, [q, k, v, packed, cot], &mut out)
        }
        _ => return Err(Error::invalid(op.name(), "wrong number of inputs")),
    }
    Ok(out)
}

/// A row-major `rows x cols` view of the start of `data`.
fn view<T: AttentionFloat>(data: &[T], rows: usize, cols: usize) -> MatRef<'_, T> {
    MatRef::from_row_major_slice(&data[..rows * cols], rows, cols)
}

/// A row-major `rows x cols` mutable view of the start of `data`.
fn view_mut<T: AttentionFloat>(data: &mut [T], rows: usize, cols: usize) -> MatMut<'_, T> {
    MatMut::from_row_major_slice_mut(&mut data[..rows * cols], rows, cols)
}

/// `dst = alpha a b` or `dst += alpha a b`, one sequential product (zero inner size included).
fn product<T: AttentionFloat>(
    mut dst: MatMut<'_, T>,
    accumulate: bool,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    alpha: T,
) {
    if dst.nrows() == 0 || dst.ncols() == 0 {
        return;
    }
    if a.ncols() == 0 {
        if !accumulate {
            dst.fill(T::zero_impl());
        }
        return;
    }
    let accum = if accumulate {
        Accum::Add
    } else {
        Accum::Replace
    };
    matmul(dst, accum, a, b, alpha, Par::Seq);
}

crate::simd_kernel! {
    /// One row of a block of scores folded into the running softmax of its query: the first
    /// `visible` scores become `e^(s - m')` (the rest 0), where `m'` is the new running maximum,
    /// and the running sum is rescaled and extended. Returns the factor `e^(m - m')` by which the
    /// row's output accumulator must be rescaled.
    fn online_row<T: AttentionFloat>(row: &mut [T], visible: usize, max: &mut T, sum: &mut T) -> T {
        let (seen, hidden) = row.split_at_mut(visible);
        hidden.fill(T::ZERO);
        let block_max = seen.iter().fold(T::NEG_INFINITY, |m, &v| if v > m { v } else { m });
        let new_max = if block_max > *max { block_max } else { *max };
        if new_max == T::NEG_INFINITY {
            // Nothing seen yet but -inf (or NaN) scores: the accumulator stays 0, and a NaN score
            // makes the running sum NaN, so that the query's output is NaN.
            if let Some(&nan) = seen.iter().find(|v| v.partial_cmp(v).is_none()) {
                *sum = nan;
            }
            seen.fill(T::ZERO);
            return T::ONE;
        }
        let mut block_sum = T::ZERO;
        for v in seen.iter_mut() {
            *v = (*v - new_max).exp();
            block_sum += *v;
        }
        let rescale = if *max == T::NEG_INFINITY { T::ZERO } else { (*max - new_max).exp() };
        *sum = *sum * rescale + block_sum;
        *max = new_max;
        rescale
    }
}

crate::simd_kernel! {
    /// `acc *= factor`, elementwise.
    fn scale_row<T: AttentionFloat>(acc: &mut [T], factor: T) {
        for a in acc.iter_mut() {
            *a *= factor;
        }
    }
}

crate::simd_kernel! {
    /// One row of the backward pass: from the scores `s` (first `visible` of them seen), the
    /// query's log-sum-exp and `dp = dO Vᵀ`, the probabilities `p = e^(s - lse)` into `s` and the
    /// score cotangents `p (dp - delta)` into `dp` (zero where hidden).
    fn backward_row<T: AttentionFloat>(s: &mut [T], dp: &mut [T], visible: usize, lse: T, delta: T) {
        let (s_seen, s_hidden) = s.split_at_mut(visible);
        let (dp_seen, dp_hidden) = dp.split_at_mut(visible);
        s_hidden.fill(T::ZERO);
        dp_hidden.fill(T::ZERO);
        for (p, d) in s_seen.iter_mut().zip(dp_seen.iter_mut()) {
            *p = (*p - lse).exp();
            *d = *p * (*d - delta);
        }
    }
}

/// Scratch buffers of one forward task.
struct ForwardScratch<T> {
    scores: Vec<T>,
    acc: Vec<T>,
    max: Vec<T>,
    sum: Vec<T>,
}

/// The fused forward pass: from `q` `[B, L, E]`, `k` `[B, S, E]` and `v` `[B, S, Ev]`, fills `out`
/// (`[B, L, Ev + 1]`) with each query's output row followed by its log-sum-exp. A query that sees
/// no key (only when `S = 0`) gets a zero output and a log-sum-exp of `-inf`.
fn forward<T: AttentionFloat>(p: &Problem<T>, q: &[T], k: &[T], v: &[T], out: &mut [T]) {
    let Dims { l, s, e, ev, .. } = p.dims;
    let width = ev + 1;
    if out.is_empty() {
        return;
    }
    out.par_chunks_mut(l * width)
        .enumerate()
        .for_each(|(b, out_b)| {
            let (q_b, k_b, v_b) = (
                &q[b * l * e..(b + 1) * l * e],
                &k[b * s * e..(b + 1) * s * e],
                &v[b * s * ev..(b + 1) * s * ev],
            );
            out_b
                .par_chunks_mut(BLOCK_ROWS * width)
                .enumerate()
                .for_each_init(
                    || ForwardScratch {
                        scores: vec![T::ZERO; BLOCK_ROWS * BLOCK_COLS],
                        acc: vec![T::ZERO; BLOCK_ROWS * ev],
                        max: vec![T::ZERO; BLOCK_ROWS],
                        sum: vec![T::ZERO; BLOCK_ROWS],
                    },
                    |scratch, (block, out_rows)| {
                        let r0 = block * BLOCK_ROWS;
                        forward_rows(p, r0, &q_b[r0 * e..], k_b, v_b, out_rows, scratch);
                    },
                );
        });
}

/// The rows `r0..` of one batch entry that `out` (whole rows of `Ev + 1`) holds, from that entry's
/// queries starting at row `r0` and all its keys and values.
fn forward_rows<T: AttentionFloat>(
    p: &Problem<T>,
    r0: usize,
    q: &[T],
    k: &[T],
    v: &[T],
    out: &mut [T],
    scratch: &mut ForwardScratch<T>,
) {
    let Dims { s, e, ev, .. } = p.dims;
    let width = ev + 1;
    let rows = out.len() / width;
    let ForwardScratch {
        scores,
        acc,
        max,
        sum,
    } = scratch;
    let (acc, max, sum) = (&mut acc[..rows * ev], &mut max[..rows], &mut sum[..rows]);
    acc.fill(T::ZERO);
    max.fill(T::NEG_INFINITY);
    sum.fill(T::ZERO);
    // With the causal mask, no row of the block sees a key past its last row.
    let key_end = if p.causal { s.min(r0 + rows) } else { s };
    let q_rows = view(q, rows, e);
    for c0 in (0..key_end).step_by(BLOCK_COLS) {
        let cols = BLOCK_COLS.min(key_end - c0);
        let k_block = view(&k[c0 * e..], cols, e).transpose();
        product(
            view_mut(scores, rows, cols),
            false,
            q_rows,
            k_block,
            p.scale,
        );
        for i in 0..rows {
            let visible = p.visible(r0 + i, c0, cols);
            let row = &mut scores[i * cols..(i + 1) * cols];
            let rescale = online_row(row, visible, &mut max[i], &mut sum[i]);
            if rescale != T::ONE {
                scale_row(&mut acc[i * ev..(i + 1) * ev], rescale);
            }
        }
        let v_block = view(&v[c0 * ev..], cols, ev);
        product(
            view_mut(acc, rows, ev),
            true,
            view(scores, rows, cols),
            v_block,
            T::ONE,
        );
    }
    for (i, row) in out.chunks_exact_mut(width).enumerate() {
        let (o, lse) = row.split_at_mut(ev);
        if sum[i] == T::ZERO {
            o.fill(T::ZERO);
            lse[0] = T::NEG_INFINITY;
        } else {
            // A NaN sum (from a NaN score) makes the whole row NaN.
            let inv = T::ONE / sum[i];
            for (o, &a) in o.iter_mut().zip(&acc[i * ev..(i + 1) * ev]) {
                *o = a * inv;
            }
            lse[0] = max[i] + sum[i].ln();
        }
    }
}

/// The forward pass's inputs and output, and the output's cotangent, of one batch entry.
struct EntryIn<'a, T> {
    q: &'a [T],
    k: &'a [T],
    v: &'a [T],
    /// `[L, Ev + 1]`: outputs and log-sum-exps.
    packed: &'a [T],
    /// `[L, Ev + 1]`: their cotangents.
    cot: &'a [T],
}

/// The cotangents of one batch entry's `q` `[L, E]`, `k` `[S, E]` and `v` `[S, Ev]`.
struct EntryOut<'a, T> {
    dq: &'a mut [T],
    dk: &'a mut [T],
    dv: &'a mut [T],
}

/// `count` consecutive pieces of `size` elements of `data` (empty pieces when `size` is 0).
fn pieces<T>(data: &mut [T], size: usize, count: usize) -> Vec<&mut [T]> {
    if size == 0 {
        return (0..count).map(|_| <&mut [T]>::default()).collect();
    }
    data.chunks_exact_mut(size).collect()
}

/// The fused vector-Jacobian product: from the forward pass's inputs, its packed output and that
/// output's cotangent (`[B, L, Ev + 1]`, the log-sum-exps' cotangents included), fills `out` with
/// the cotangents of `q`, `k` and `v`, one after the other (`B L E + B S E + B S Ev` elements,
/// which must be zero on entry).
fn backward<T: AttentionFloat>(p: &Problem<T>, inputs: [&[T]; 5], out: &mut [T]) {
    let Dims { batch, l, s, e, ev } = p.dims;
    let [q, k, v, packed, cot] = inputs;
    let (dq, rest) = out.split_at_mut(batch * l * e);
    let (dk, dv) = rest.split_at_mut(batch * s * e);
    let width = ev + 1;
    let tasks: Vec<_> = pieces(dq, l * e, batch)
        .into_iter()
        .zip(pieces(dk, s * e, batch))
        .zip(pieces(dv, s * ev, batch))
        .enumerate()
        .collect();
    tasks.into_par_iter().for_each(|(b, ((dq, dk), dv))| {
        let entry = EntryIn {
            q: &q[b * l * e..(b + 1) * l * e],
            k: &k[b * s * e..(b + 1) * s * e],
            v: &v[b * s * ev..(b + 1) * s * ev],
            packed: &packed[b * l * width..(b + 1) * l * width],
            cot: &cot[b * l * width..(b + 1) * l * width],
        };
        backward_entry(p, &entry, EntryOut { dq, dk, dv });
    });
}

/// The backward pass of one batch entry, FlashAttention-2's loop: for each block of keys, each
/// block of queries that can see it recomputes its probabilities and adds its shares to the
/// cotangents of the keys, the values and the queries.
fn backward_entry<T: AttentionFloat>(p: &Problem<T>, x: &EntryIn<'_, T>, d: EntryOut<'_, T>) {
    let Dims { l, s, e, ev, .. } = p.dims;
    let width = ev + 1;
    // Per query: its output's cotangent dO (a strided row of `cot`), its log-sum-exp, and
    // delta = <dO, O> - (the log-sum-exp's cotangent).
    let mut d_out = vec![T::ZERO; l * ev];
    let mut lse = vec![T::ZERO; l];
    let mut delta = vec![T::ZERO; l];
    for i in 0..l {
        let (o, c) = (&x.packed[i * width..], &x.cot[i * width..]);
        d_out[i * ev..(i + 1) * ev].copy_from_slice(&c[..ev]);
        let dot = (0..ev).fold(T::ZERO, |acc, t| acc + c[t] * o[t]);
        lse[i] = o[ev];
        delta[i] = dot - c[ev];
    }
    let mut probs = vec![T::ZERO; BLOCK_ROWS * BLOCK_COLS];
    let mut d_scores = vec![T::ZERO; BLOCK_ROWS * BLOCK_COLS];
    for c0 in (0..s).step_by(BLOCK_COLS) {
        let cols = BLOCK_COLS.min(s - c0);
        let k_block = view(&x.k[c0 * e..], cols, e);
        let v_block = view(&x.v[c0 * ev..], cols, ev);
        // With the causal mask, queries before the block's first key see none of it.
        let first_row = if p.causal { c0 } else { 0 };
        for r0 in (first_row..l).step_by(BLOCK_ROWS) {
            let rows = BLOCK_ROWS.min(l - r0);
            let q_rows = view(&x.q[r0 * e..], rows, e);
            let d_out_rows = view(&d_out[r0 * ev..], rows, ev);
            product(
                view_mut(&mut probs, rows, cols),
                false,
                q_rows,
                k_block.transpose(),
                p.scale,
            );
            product(
                view_mut(&mut d_scores, rows, cols),
                false,
                d_out_rows,
                v_block.transpose(),
                T::ONE,
            );
            for i in 0..rows {
                let visible = p.visible(r0 + i, c0, cols);
                backward_row(
                    &mut probs[i * cols..(i + 1) * cols],
                    &mut d_scores[i * cols..(i + 1) * cols],
                    visible,
                    lse[r0 + i],
                    delta[r0 + i],
                );
            }
            let (probs, d_scores) = (view(&probs, rows, cols), view(&d_scores, rows, cols));
            product(
                view_mut(&mut d.dv[c0 * ev..], cols, ev),
                true,
                probs.transpose(),
                d_out_rows,
                T::ONE,
            );
            product(
                view_mut(&mut d.dk[c0 * e..], cols, e),
                true,
                d_scores.transpose(),
                q_rows,
                p.scale,
            );
            product(
                view_mut(&mut d.dq[r0 * e..], rows, e),
                true,
                d_scores,
                k_block,
                p.scale,
            );
        }
    }
}
