//! The host kernels of the fused row ops: each row (the trailing axes, flattened) is read from
//! memory once and stays in cache for the passes over it, so a softmax, a log-softmax or a layer
//! normalisation costs about one read and one write of its input instead of the five to eight
//! passes of the composite formula.
//!
//! Sums run in eight independent lanes (combined at the end), so the SIMD builds of these loops
//! vectorise without reassociating anything the compiler would have to prove; `exp` is the
//! branch-free one of [`crate::simd_math`]. Rows are split across the thread pool in tasks of
//! at least [`TASK_ELEMENTS`] elements.

use crate::simd_math::SimdFloat as RowFloat;
use nabla_core::fast_path::{RowKernel, RowOp};
use nabla_core::{Error, FastPath, HostAllocator, HostData, HostView, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Runs `op` over rows of `row_len` elements of its one or two inputs.
pub(super) fn run(
    op: RowOp,
    row_len: usize,
    views: &[HostView<'_>],
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    let data = |i: usize| views.get(i).map(|v| v.data);
    match (data(0), data(1)) {
        (Some(HostData::F32(a)), b) => Ok(HostData::F32(run_typed(
            op,
            a,
            f32_or_empty(b),
            row_len,
            alloc,
        )?)),
        (Some(HostData::F64(a)), b) => Ok(HostData::F64(run_typed(
            op,
            a,
            f64_or_empty(b),
            row_len,
            alloc,
        )?)),
        (other, _) => Err(Error::invalid(
            op.name(),
            format!("unsupported input {:?}", other.map(HostData::dtype)),
        )),
    }
}

/// The second input's `f32` values, or none.
fn f32_or_empty(b: Option<&HostData>) -> &[f32] {
    match b {
        Some(HostData::F32(b)) => b,
        _ => &[],
    }
}

/// The second input's `f64` values, or none.
fn f64_or_empty(b: Option<&HostData>) -> &[f64] {
    match b {
        Some(HostData::F64(b)) => b,
        _ => &[],
    }
}

/// The output over `a` (and `b`, which two-input kernels need of `a`'s length) in rows of `n`
/// elements.
fn run_typed<T: RowFloat>(
    op: RowOp,
    a: &[T],
    b: &[T],
    n: usize,
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let b_len = if op.kernel.arity() == 2 { a.len() } else { 0 };
    if b.len() != b_len || !a.len().is_multiple_of(n) {
        return Err(Error::invalid(
            op.name(),
            format!(
                "inputs of {} and {} elements do not make rows of {n}",
                a.len(),
                b.len()
            ),
        ));
    }
    let mut out: Vec<T> = alloc.vec(a.len());
    if !a.is_empty() {
        run_rows(op.kernel, n, a, b, &mut out.spare_capacity_mut()[..a.len()]);
    }
    // SAFETY: `run_rows` wrote all `a.len()` elements (an empty input has none to write).
    unsafe { out.set_len(a.len()) };
    Ok(out)
}

/// Elements per parallel task: below it a second thread costs more than it saves.
const TASK_ELEMENTS: usize = 1 << 14;

/// Independent accumulators of a row sum.
const LANES: usize = 8;

/// `Σ f(a_i, b_i)` over two rows of one length, in [`LANES`] interleaved accumulators (whole chunks
/// of the rows, so the loop has no bounds checks and vectorises).
#[inline(always)]
fn lane_sum<T: RowFloat>(a: &[T], b: &[T], f: impl Fn(T, T) -> T) -> T {
    let mut acc = [T::ZERO; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for l in 0..LANES {
            acc[l] = acc[l] + f(x[l], y[l]);
        }
    }
    for ((acc, &x), &y) in acc.iter_mut().zip(ra).zip(rb) {
        *acc = *acc + f(x, y);
    }
    let q = [
        acc[0] + acc[4],
        acc[1] + acc[5],
        acc[2] + acc[6],
        acc[3] + acc[7],
    ];
    (q[0] + q[2]) + (q[1] + q[3])
}

/// The largest element of a non-empty row, ignoring NaN (a NaN row still comes out NaN, through
/// `exp(NaN)` in the sum).
#[inline(always)]
fn row_max<T: RowFloat>(x: &[T]) -> T {
    let mut acc = [T::NEG_INFINITY; LANES];
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for (a, &v) in acc.iter_mut().zip(c) {
            *a = if v > *a { v } else { *a };
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a = if v > *a { v } else { *a };
    }
    acc.into_iter()
        .fold(T::NEG_INFINITY, |m, v| if v > m { v } else { m })
}

/// `e^(x - max) / Σ e^(x - max)` of one row, the composite's formula.
#[inline(always)]
fn softmax_row<T: RowFloat>(x: &[T], out: &mut [MaybeUninit<T>]) {
    let m = row_max(x);
    for (o, &v) in out.iter_mut().zip(x) {
        o.write((v - m).exp());
    }
    // SAFETY: every element of `out` was written just above.
    let out = unsafe { assume_init(out) };
    let s = lane_sum(&*out, &*out, |v, _| v);
    for o in out.iter_mut() {
        *o = *o / s;
    }
}

/// `y (g - <g, y>)` of one row: the softmax's vector-Jacobian product from its output `y`.
#[inline(always)]
fn softmax_vjp_row<T: RowFloat>(y: &[T], g: &[T], out: &mut [MaybeUninit<T>]) {
    let s = lane_sum(g, y, |g, y| g * y);
    for ((o, &yv), &gv) in out.iter_mut().zip(y).zip(g) {
        o.write(yv * (gv - s));
    }
}

/// `(x - max) - log Σ e^(x - max)` of one row, the composite's formula.
#[inline(always)]
fn log_softmax_row<T: RowFloat>(x: &[T], out: &mut [MaybeUninit<T>]) {
    let m = row_max(x);
    let log_sum = lane_sum(x, x, |v, _| (v - m).exp()).ln();
    for (o, &v) in out.iter_mut().zip(x) {
        o.write((v - m) - log_sum);
    }
}

/// `g - e^y Σ g` of one row: the log-softmax's vector-Jacobian product from its output `y`.
#[inline(always)]
fn log_softmax_vjp_row<T: RowFloat>(y: &[T], g: &[T], out: &mut [MaybeUninit<T>]) {
    let s = lane_sum(g, g, |v, _| v);
    for ((o, &yv), &gv) in out.iter_mut().zip(y).zip(g) {
        o.write(gv - yv.exp() * s);
    }
}

/// `t - <e^y, t>` of one row: the log-softmax's Jacobian-vector product from its output `y`.
#[inline(always)]
fn log_softmax_jvp_row<T: RowFloat>(y: &[T], t: &[T], out: &mut [MaybeUninit<T>]) {
    let s = lane_sum(y, t, |y, t| y.exp() * t);
    for (o, &tv) in out.iter_mut().zip(t) {
        o.write(tv - s);
    }
}

/// The mean and the reciprocal standard deviation `1 / sqrt(var + eps)` of a non-empty row (the
/// population variance, by the two-pass formula).
#[inline(always)]
fn row_moments<T: RowFloat>(x: &[T], eps: T) -> (T, T) {
    let n = T::from_f64(x.len() as f64);
    let mean = lane_sum(x, x, |v, _| v) / n;
    let var = lane_sum(x, x, |v, _| (v - mean) * (v - mean)) / n;
    (mean, T::ONE / (var + eps).sqrt())
}

/// `(x - mean) / sqrt(var + eps)` of one row.
#[inline(always)]
fn layer_norm_row<T: RowFloat>(x: &[T], eps: T, out: &mut [MaybeUninit<T>]) {
    let (mean, r) = row_moments(x, eps);
    for (o, &v) in out.iter_mut().zip(x) {
        o.write((v - mean) * r);
    }
}

/// `r (g - mean(g) - x̂ mean(g x̂))` of one row, where `x̂ = (x - mean) r`: the layer norm's
/// vector-Jacobian product, recomputing the row's statistics from `x`.
#[inline(always)]
fn layer_norm_vjp_row<T: RowFloat>(x: &[T], g: &[T], eps: T, out: &mut [MaybeUninit<T>]) {
    let (mean, r) = row_moments(x, eps);
    let n = T::from_f64(x.len() as f64);
    let g_mean = lane_sum(g, g, |v, _| v) / n;
    let a = lane_sum(g, x, |g, x| g * ((x - mean) * r)) / n;
    for ((o, &xv), &gv) in out.iter_mut().zip(x).zip(g) {
        o.write(r * (gv - g_mean - (xv - mean) * r * a));
    }
}

/// Views a fully written slice as initialised.
///
/// # Safety
/// Every element of `s` must have been written.
unsafe fn assume_init<T>(s: &mut [MaybeUninit<T>]) -> &mut [T] {
    // SAFETY: `MaybeUninit<T>` has `T`'s layout, and the caller guarantees every element is written.
    unsafe { &mut *(s as *mut [MaybeUninit<T>] as *mut [T]) }
}

crate::simd_kernel! {
    /// Runs `kernel` over consecutive rows of `n` elements: `a` (and `b` for the two-input kernels,
    /// else empty) in, `out` written in full.
    fn rows_task<T: RowFloat>(
        kernel: RowKernel,
        n: usize,
        a: &[T],
        b: &[T],
        out: &mut [MaybeUninit<T>],
    ) {
        match kernel {
            RowKernel::Softmax => out
                .chunks_exact_mut(n)
                .zip(a.chunks_exact(n))
                .for_each(|(o, x)| softmax_row(x, o)),
            RowKernel::SoftmaxVjp => out
                .chunks_exact_mut(n)
                .zip(a.chunks_exact(n).zip(b.chunks_exact(n)))
                .for_each(|(o, (y, g))| softmax_vjp_row(y, g, o)),
            RowKernel::LogSoftmax => out
                .chunks_exact_mut(n)
                .zip(a.chunks_exact(n))
                .for_each(|(o, x)| log_softmax_row(x, o)),
            RowKernel::LogSoftmaxVjp => out
                .chunks_exact_mut(n)
                .zip(a.chunks_exact(n).zip(b.chunks_exact(n)))
                .for_each(|(o, (y, g))| log_softmax_vjp_row(y, g, o)),
            RowKernel::LogSoftmaxJvp => out
                .chunks_exact_mut(n)
                .zip(a.chunks_exact(n).zip(b.chunks_exact(n)))
                .for_each(|(o, (y, t))| log_softmax_jvp_row(y, t, o)),
            RowKernel::LayerNorm { eps } => {
                let eps = T::from_f64(f64::from_bits(eps));
                out.chunks_exact_mut(n)
                    .zip(a.chunks_exact(n))
                    .for_each(|(o, x)| layer_norm_row(x, eps, o))
            }
            RowKernel::LayerNormVjp { eps } => {
                let eps = T::from_f64(f64::from_bits(eps));
                out.chunks_exact_mut(n)
                    .zip(a.chunks_exact(n).zip(b.chunks_exact(n)))
                    .for_each(|(o, (x, g))| layer_norm_vjp_row(x, g, eps, o))
            }
        }
    }
}

/// Applies `kernel` to rows of `n > 0` elements of `a` (and `b`, of `a`'s length, for the two-input
/// kernels; empty otherwise), writing every element of `out` (of `a`'s length). Rows are split
/// across the thread pool when there are enough of them.
fn run_rows<T: RowFloat>(
    kernel: RowKernel,
    n: usize,
    a: &[T],
    b: &[T],
    out: &mut [MaybeUninit<T>],
) {
    debug_assert!(n > 0 && a.len().is_multiple_of(n) && out.len() == a.len());
    let rows_per_task = TASK_ELEMENTS.div_ceil(n);
    if !crate::pool_is_parallel() || a.len() <= TASK_ELEMENTS || a.len() / n <= rows_per_task {
        rows_task(kernel, n, a, b, out);
        return;
    }
    let chunk = rows_per_task * n;
    out.par_chunks_mut(chunk).enumerate().for_each(|(t, o)| {
        let range = t * chunk..t * chunk + o.len();
        let b = if b.is_empty() { b } else { &b[range.clone()] };
        rows_task(kernel, n, &a[range], b, o);
    });
}
