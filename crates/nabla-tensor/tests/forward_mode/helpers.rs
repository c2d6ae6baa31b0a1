//! The checks shared by the forward-mode tests: the adjoint identity between `jvp_n` and `vjp_n`, and
//! `jvp` against central finite differences.

use super::support::*;
use nabla_tensor::{Result, jvp_n, vjp_n};

/// Relative tolerance of the adjoint identity in f64: both sides are sums of a few hundred products
/// of order one, so rounding stays near 1e-15 of the sum of their magnitudes.
pub const ADJ_TOL: f64 = 1e-10;

/// `sum(a * b)` and `sum(|a * b|)` of two tensors of one shape, in f64.
pub fn dot_and_scale(a: &T, b: &T) -> (f64, f64) {
    assert_eq!(a.shape(), b.shape(), "dot of different shapes");
    let (a, b) = (vals(a), vals(b));
    a.iter()
        .zip(&b)
        .fold((0.0, 0.0), |(d, s), (x, y)| (d + x * y, s + (x * y).abs()))
}

/// Seeded random tangents, one per input, of the inputs' shapes.
pub fn tangents(xs: &[T], seed: u64) -> Vec<T> {
    xs.iter()
        .enumerate()
        .map(|(i, x)| {
            randn(
                x.shape(),
                seed.wrapping_mul(31).wrapping_add(7 + 13 * i as u64),
            )
        })
        .collect()
}

/// Checks `<u, J v> == <Jᵀ u, v>` for `f` at `xs` with seeded random tangents `v` (one per input) and
/// a seeded random cotangent `u`, to [`ADJ_TOL`] of the sum of the magnitudes of the terms; and that the
/// primal returned by `jvp_n` is `f(xs)` with a tangent of its shape and dtype.
#[track_caller]
pub fn adjoint(label: &str, f: impl Fn(&[T]) -> Result<T>, xs: &[T], seed: u64) {
    adjoint_tol(label, f, xs, seed, ADJ_TOL);
}

/// [`adjoint`] with a given relative tolerance.
#[track_caller]
pub fn adjoint_tol(label: &str, f: impl Fn(&[T]) -> Result<T>, xs: &[T], seed: u64, tol: f64) {
    let vs = tangents(xs, seed);
    adjoint_with(label, &f, xs, &vs, seed, tol);
}

/// [`adjoint`] with given tangents.
#[track_caller]
pub fn adjoint_with(
    label: &str,
    f: impl Fn(&[T]) -> Result<T>,
    xs: &[T],
    vs: &[T],
    seed: u64,
    tol: f64,
) {
    let (y, jv) = jvp_n(&f, xs, vs).unwrap_or_else(|e| panic!("{label}: jvp_n failed: {e}"));
    let plain = f(xs).unwrap_or_else(|e| panic!("{label}: f failed: {e}"));
    assert_eq!(y.shape(), plain.shape(), "{label}: primal shape");
    assert_eq!(y.dtype(), plain.dtype(), "{label}: primal dtype");
    let (yv, pv) = (vals(&y), vals(&plain));
    for (a, b) in yv.iter().zip(&pv) {
        assert!(
            (a - b).abs() <= 1e-13 * (1.0 + b.abs()),
            "{label}: jvp primal {yv:?} differs from f(x) {pv:?}"
        );
    }
    assert_eq!(jv.shape(), y.shape(), "{label}: tangent shape");
    assert_eq!(jv.dtype(), y.dtype(), "{label}: tangent dtype");
    let u = randn(y.shape(), seed.wrapping_mul(31).wrapping_add(3))
        .cast(y.dtype())
        .unwrap();
    let (_, gs) = vjp_n(&f, xs, &u).unwrap_or_else(|e| panic!("{label}: vjp_n failed: {e}"));
    let (lhs, mut scale) = dot_and_scale(&u, &jv);
    let mut rhs = 0.0;
    for (g, v) in gs.iter().zip(vs) {
        let (d, s) = dot_and_scale(g, v);
        rhs += d;
        scale += s;
    }
    // Where J v cancels to rounding noise (x * recip(x)), the terms are tiny but their rounding is
    // not: a floor of |u| |v| (the size of the terms for a Jacobian of order one) covers it.
    let norm = |t: &T| vals(t).iter().map(|a| a * a).sum::<f64>().sqrt();
    let floor = norm(&u) * vs.iter().map(norm).sum::<f64>();
    assert!(
        (lhs - rhs).abs() <= tol * (scale + 1e-3 * floor),
        "{label}: <u, J v> = {lhs:e} but <J^T u, v> = {rhs:e} (difference {:e}, scale {scale:e})\n\
         J v = {:?}",
        (lhs - rhs).abs(),
        vals(&jv)
    );
}

/// Checks `jvp_n` against the central difference `(f(x + h v) - f(x - h v)) / 2h` with seeded random
/// tangents, elementwise to `1e-6 + 1e-6 |fd|`.
#[track_caller]
pub fn finite_difference(label: &str, f: impl Fn(&[T]) -> Result<T>, xs: &[T], seed: u64) {
    let vs = tangents(xs, seed);
    let (_, jv) = jvp_n(&f, xs, &vs).unwrap_or_else(|e| panic!("{label}: jvp_n failed: {e}"));
    let h = 1e-6;
    let shifted = |sign: f64| -> Vec<f64> {
        let moved: Vec<T> = xs
            .iter()
            .zip(&vs)
            .map(|(x, v)| x.add(v.mul(sign * h).unwrap()).unwrap())
            .collect();
        vals(&f(&moved).unwrap())
    };
    let (plus, minus) = (shifted(1.0), shifted(-1.0));
    let got = vals(&jv);
    assert_eq!(got.len(), plus.len(), "{label}: tangent size");
    for (k, g) in got.iter().enumerate() {
        let fd = (plus[k] - minus[k]) / (2.0 * h);
        assert!(
            (g - fd).abs() <= 1e-6 + 1e-6 * fd.abs(),
            "{label}: element {k}: jvp {g} vs finite difference {fd}\njvp {got:?}"
        );
    }
}
