//! The host kernels of the fused batch normalisation: per channel, its statistics over the batch
//! and spatial positions (two passes, the variance from centred values) and one pass writing
//! `y = x scale + shift`; backwards, one pass for each channel's two sums and one pass writing the
//! input's cotangent. Channels are independent tasks for the sums; the elementwise passes run one
//! task per example. A channel's values are `N` contiguous runs of `S` (the spatial size).

use crate::simd_math::SimdFloat;
use nabla_core::fast_path::{BatchNormDims as Dims, BatchNormOp};
use nabla_core::{Element, Error, FastPath, HostAllocator, HostView, Result};
use rayon::prelude::*;

/// The float types the kernels run in.
pub(super) trait NormFloat: SimdFloat + Element {}
impl<T: SimdFloat + Element> NormFloat for T {}

/// Runs `op` in `T` on inputs of the sizes `d`.
pub(super) fn run<T: NormFloat>(
    op: BatchNormOp,
    d: Dims,
    views: &[HostView<'_>],
    alloc: &dyn HostAllocator,
) -> Result<Vec<T>> {
    let data: Vec<&[T]> = super::typed_inputs(op.name(), views)?;
    let numel = d.n * d.c * d.s;
    let mut out: Vec<T> = alloc.vec(numel + 2 * d.c);
    out.resize(numel + 2 * d.c, T::ZERO);
    let settings = op.settings();
    let eps = T::from_f64(settings.eps());
    let (main, tail) = out.split_at_mut(numel);
    let (first, second) = tail.split_at_mut(d.c);
    match (op, data.as_slice()) {
        (BatchNormOp::Forward(_), &[x, w, b]) => {
            let stats = statistics(x, d);
            normalize(x, d, &stats, (w, b), eps, settings.relu, main);
            for (c, &(mean, var)) in stats.iter().enumerate() {
                first[c] = mean;
                second[c] = var;
            }
        }
        (BatchNormOp::Vjp(_), &[x, w, packed, cot]) => {
            let stats: Vec<(T, T)> = (0..d.c)
                .map(|c| (packed[numel + c], packed[numel + d.c + c]))
                .collect();
            let g = OutputCotangents {
                y: &cot[..numel],
                relu_output: settings.relu.then(|| &packed[..numel]),
                mean: &cot[numel..numel + d.c],
                var: &cot[numel + d.c..],
            };
            backward(x, d, &stats, w, eps, &g, main, first, second);
        }
        _ => return Err(Error::invalid(op.name(), "wrong number of inputs")),
    }
    Ok(out)
}

/// Independent accumulators of a run's sums.
const LANES: usize = 8;

crate::simd_kernel! {
    /// `(Σ f(a_i, b_i), Σ h(a_i, b_i))` over two runs of one length, in [`LANES`] accumulators each.
    fn lane_sums<T: NormFloat>(a: &[T], b: &[T], f: impl Fn(T, T) -> T, h: impl Fn(T, T) -> T) -> (T, T) {
        let (mut s, mut t) = ([T::ZERO; LANES], [T::ZERO; LANES]);
        let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
        let (ra, rb) = (ca.remainder(), cb.remainder());
        for (x, y) in ca.zip(cb) {
            for l in 0..LANES {
                s[l] = s[l] + f(x[l], y[l]);
                t[l] = t[l] + h(x[l], y[l]);
            }
        }
        for (l, (&x, &y)) in ra.iter().zip(rb).enumerate() {
            s[l] = s[l] + f(x, y);
            t[l] = t[l] + h(x, y);
        }
        (lanes_total(s), lanes_total(t))
    }
}

/// The sum of [`LANES`] accumulators, pairwise.
#[inline(always)]
fn lanes_total<T: NormFloat>(v: [T; LANES]) -> T {
    ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))
}

crate::simd_kernel! {
    /// `out_i = a_i p + b_i q + r` (`b` may be empty, then `out_i = a_i p + r`).
    fn affine_run<T: NormFloat>(out: &mut [T], a: &[T], b: &[T], p: T, q: T, r: T) {
        if b.is_empty() {
            for (o, &x) in out.iter_mut().zip(a) {
                *o = x * p + r;
            }
        } else {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = x * p + y * q + r;
            }
        }
    }
}

/// The channel `c`'s runs of `x`: example `n`'s is `x[(n C + c) S..][..S]`.
fn runs<T>(x: &[T], d: Dims, c: usize) -> impl Iterator<Item = &[T]> {
    (0..d.n).map(move |n| &x[(n * d.c + c) * d.s..(n * d.c + c + 1) * d.s])
}

/// Per channel, `(mean, biased variance)` of `x` over its `N S` values (`NaN` for none).
fn statistics<T: NormFloat>(x: &[T], d: Dims) -> Vec<(T, T)> {
    let count = T::from_f64(d.count() as f64);
    (0..d.c)
        .into_par_iter()
        .map(|c| {
            let sum = runs(x, d, c).fold(T::ZERO, |acc, r| {
                acc + lane_sums(r, r, |v, _| v, |_, _| T::ZERO).0
            });
            let mean = sum / count;
            let sq = runs(x, d, c).fold(T::ZERO, |acc, r| {
                acc + lane_sums(r, r, |v, _| (v - mean) * (v - mean), |_, _| T::ZERO).0
            });
            (mean, sq / count)
        })
        .collect()
}

crate::simd_kernel! {
    /// `out_i = max(0, a_i p + r)` (NaN stays NaN, as the ReLU's).
    fn affine_relu_run<T: NormFloat>(out: &mut [T], a: &[T], p: T, r: T) {
        for (o, &x) in out.iter_mut().zip(a) {
            let v = x * p + r;
            *o = if v < T::ZERO { T::ZERO } else { v };
        }
    }
}

/// `out = (x - mean) r w + b` per channel, with `r = 1 / sqrt(var + eps)`, and `max(0, out)` when
/// `relu`; `affine` is `(w, b)`.
fn normalize<T: NormFloat>(
    x: &[T],
    d: Dims,
    stats: &[(T, T)],
    affine: (&[T], &[T]),
    eps: T,
    relu: bool,
    out: &mut [T],
) {
    let (w, b) = affine;
    let scale_shift: Vec<(T, T)> = stats
        .iter()
        .zip(w.iter().zip(b))
        .map(|(&(mean, var), (&w, &b))| {
            let scale = w / (var + eps).sqrt();
            (scale, b - mean * scale)
        })
        .collect();
    per_run(out, d, |o, at, c| {
        let (scale, shift) = scale_shift[c];
        let x = &x[at..at + d.s];
        if relu {
            affine_relu_run(o, x, scale, shift);
        } else {
            affine_run(o, x, &[], scale, T::ZERO, shift);
        }
    });
}

crate::simd_kernel! {
    /// `(Σ h_i, Σ h_i (x_i - mean) r)` with `h_i = g_i` where `y_i > 0` and 0 elsewhere: the sums of
    /// the backward pass through a ReLU with output `y`.
    fn gated_sums<T: NormFloat>(g: &[T], x: &[T], y: &[T], mean: T, r: T) -> (T, T) {
        let (mut s, mut t) = ([T::ZERO; LANES], [T::ZERO; LANES]);
        let (cg, cx, cy) = (g.chunks_exact(LANES), x.chunks_exact(LANES), y.chunks_exact(LANES));
        let (rg, rx, ry) = (cg.remainder(), cx.remainder(), cy.remainder());
        let mut add = |l: usize, g: T, x: T, y: T| {
            let h = if y > T::ZERO { g } else { T::ZERO };
            s[l] = s[l] + h;
            t[l] = t[l] + h * ((x - mean) * r);
        };
        for ((g, x), y) in cg.zip(cx).zip(cy) {
            for l in 0..LANES {
                add(l, g[l], x[l], y[l]);
            }
        }
        for (l, ((&g, &x), &y)) in rg.iter().zip(rx).zip(ry).enumerate() {
            add(l, g, x, y);
        }
        (lanes_total(s), lanes_total(t))
    }
}

crate::simd_kernel! {
    /// `out_i = h_i p + x_i q + r` with `h_i = g_i` where `y_i > 0` and 0 elsewhere.
    fn gated_affine_run<T: NormFloat>(out: &mut [T], g: &[T], x: &[T], y: &[T], p: T, q: T, r: T) {
        for (((o, &g), &x), &y) in out.iter_mut().zip(g).zip(x).zip(y) {
            let h = if y > T::ZERO { g } else { T::ZERO };
            *o = h * p + x * q + r;
        }
    }
}

/// Runs `f(out run, its offset, channel)` over every run of `out` (laid out like `x`), one parallel
/// task per example.
fn per_run<T: NormFloat>(out: &mut [T], d: Dims, f: impl Fn(&mut [T], usize, usize) + Sync) {
    if out.is_empty() || d.s == 0 {
        return;
    }
    let plane = d.c * d.s;
    out.par_chunks_mut(plane).enumerate().for_each(|(n, o)| {
        for (c, o) in o.chunks_exact_mut(d.s).enumerate() {
            f(o, n * plane + c * d.s, c);
        }
    });
}

/// The cotangents of the layer's outputs: of `y` (like `x`), of the means and of the variances.
struct OutputCotangents<'a, T> {
    y: &'a [T],
    mean: &'a [T],
    var: &'a [T],
    /// The output `y` when a ReLU follows the normalisation: `y`'s cotangent passes only where it
    /// is positive.
    relu_output: Option<&'a [T]>,
}

/// The vector-Jacobian product: fills `dx` (like `x`), `dw` and `db` (`[C]`).
#[allow(clippy::too_many_arguments)]
fn backward<T: NormFloat>(
    x: &[T],
    d: Dims,
    stats: &[(T, T)],
    w: &[T],
    eps: T,
    g: &OutputCotangents<'_, T>,
    dx: &mut [T],
    dw: &mut [T],
    db: &mut [T],
) {
    let r: Vec<T> = stats
        .iter()
        .map(|&(_, var)| T::ONE / (var + eps).sqrt())
        .collect();
    let sums: Vec<(T, T)> = (0..d.c)
        .into_par_iter()
        .map(|c| {
            let (mean, rc) = (stats[c].0, r[c]);
            (0..d.n).fold((T::ZERO, T::ZERO), |acc, n| {
                let at = (n * d.c + c) * d.s;
                let (gr, xr) = (&g.y[at..at + d.s], &x[at..at + d.s]);
                let (sg, sgx) = match g.relu_output {
                    Some(y) => gated_sums(gr, xr, &y[at..at + d.s], mean, rc),
                    None => lane_sums(gr, xr, |g, _| g, |g, x| g * ((x - mean) * rc)),
                };
                (acc.0 + sg, acc.1 + sgx)
            })
        })
        .collect();
    for (c, &(sg, sgx)) in sums.iter().enumerate() {
        db[c] = sg;
        dw[c] = sgx;
    }
    let count = T::from_f64(d.count() as f64);
    // dx = w r (gy - Σgy / m - x̂ Σ(gy x̂) / m) + g_mean / m + g_var 2 (x - mean) / m, written as
    // gy p + x q + s per channel.
    let coefficients: Vec<(T, T, T)> = (0..d.c)
        .map(|c| {
            let (mean, rc) = (stats[c].0, r[c]);
            let (sg, sgx) = sums[c];
            let p = w[c] * rc;
            let two_var = (T::ONE + T::ONE) * g.var[c] / count;
            let q = two_var - p * rc * sgx / count;
            let s = g.mean[c] / count - p * sg / count - q * mean;
            (p, q, s)
        })
        .collect();
    per_run(dx, d, |o, at, c| {
        let (p, q, s) = coefficients[c];
        let (gy, xr) = (&g.y[at..at + d.s], &x[at..at + d.s]);
        match g.relu_output {
            Some(y) => gated_affine_run(o, gy, xr, &y[at..at + d.s], p, q, s),
            None => affine_run(o, gy, xr, p, q, s),
        }
    });
}
