//! The host kernels of the fused batch normalisation: per channel, its statistics over the batch
//! and spatial positions (two passes, the variance from centred values) and one pass writing
//! `y = x scale + shift`; backwards, one pass for each channel's two sums and one pass writing the
//! input's cotangent. Channels are independent tasks for the sums; the elementwise passes run one
//! task per example. A channel's values are `N` contiguous runs of `S` (the spatial size).

use super::Dims;
use nabla_core::Element;
use nabla_core::simd_math::SimdFloat;
use rayon::prelude::*;

/// The float types the kernels run in.
pub(super) trait NormFloat: SimdFloat + Element {}
impl<T: SimdFloat + Element> NormFloat for T {}

/// Independent accumulators of a run's sums.
const LANES: usize = 8;

nabla_core::simd_kernel! {
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
        let total = |v: [T; LANES]| {
            ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]))
        };
        (total(s), total(t))
    }
}

nabla_core::simd_kernel! {
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
pub(super) fn statistics<T: NormFloat>(x: &[T], d: Dims) -> Vec<(T, T)> {
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

/// `out = (x - mean) r w + b` per channel, with `r = 1 / sqrt(var + eps)`.
pub(super) fn normalize<T: NormFloat>(
    x: &[T],
    d: Dims,
    stats: &[(T, T)],
    w: &[T],
    b: &[T],
    eps: T,
    out: &mut [T],
) {
    let scale_shift: Vec<(T, T)> = stats
        .iter()
        .zip(w.iter().zip(b))
        .map(|(&(mean, var), (&w, &b))| {
            let scale = w / (var + eps).sqrt();
            (scale, b - mean * scale)
        })
        .collect();
    per_example(out, x, d, |o, x, c| {
        let (scale, shift) = scale_shift[c];
        affine_run(o, x, &[], scale, T::ZERO, shift);
    });
}

/// Runs `f(out run, x run, channel)` over every run, one parallel task per example.
fn per_example<T: NormFloat>(
    out: &mut [T],
    x: &[T],
    d: Dims,
    f: impl Fn(&mut [T], &[T], usize) + Sync,
) {
    if out.is_empty() || d.s == 0 {
        return;
    }
    out.par_chunks_mut(d.c * d.s)
        .zip(x.par_chunks(d.c * d.s))
        .for_each(|(o, x)| {
            for (c, (o, x)) in o.chunks_exact_mut(d.s).zip(x.chunks_exact(d.s)).enumerate() {
                f(o, x, c);
            }
        });
}

/// The cotangents of the layer's outputs: of `y` (like `x`), of the means and of the variances.
pub(super) struct OutputCotangents<'a, T> {
    pub y: &'a [T],
    pub mean: &'a [T],
    pub var: &'a [T],
}

/// The vector-Jacobian product: fills `dx` (like `x`), `dw` and `db` (`[C]`).
#[allow(clippy::too_many_arguments)]
pub(super) fn backward<T: NormFloat>(
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
            runs(x, d, c)
                .zip(runs(g.y, d, c))
                .fold((T::ZERO, T::ZERO), |acc, (xr, gr)| {
                    let (sg, sgx) = lane_sums(gr, xr, |g, _| g, |g, x| g * ((x - mean) * rc));
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
    per_example_with(dx, g.y, x, d, |o, gy, xr, c| {
        let (p, q, s) = coefficients[c];
        affine_run(o, gy, xr, p, q, s);
    });
}

/// Runs `f(out run, a run, b run, channel)` over every run, one parallel task per example.
fn per_example_with<T: NormFloat>(
    out: &mut [T],
    a: &[T],
    b: &[T],
    d: Dims,
    f: impl Fn(&mut [T], &[T], &[T], usize) + Sync,
) {
    if out.is_empty() || d.s == 0 {
        return;
    }
    let plane = d.c * d.s;
    out.par_chunks_mut(plane)
        .zip(a.par_chunks(plane).zip(b.par_chunks(plane)))
        .for_each(|(o, (a, b))| {
            let runs = o
                .chunks_exact_mut(d.s)
                .zip(a.chunks_exact(d.s).zip(b.chunks_exact(d.s)));
            for (c, (o, (a, b))) in runs.enumerate() {
                f(o, a, b, c);
            }
        });
}
