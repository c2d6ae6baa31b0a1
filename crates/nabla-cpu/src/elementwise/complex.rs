//! Complex functions that need more care than the textbook formula: division (Smith's algorithm, as
//! NumPy), `expm1`, `log1p` and the logistic function without cancellation or overflow, NumPy's `power`
//! special cases, and NumPy's lexicographic maximum and minimum.

use super::traits::{Cplx, Real};
use nabla_core::Element;

/// `a / b` by Smith's algorithm, which avoids the overflow of `|b|^2`; division by zero gives the
/// infinities or NaNs of dividing each part by zero, as NumPy does.
#[inline]
pub(super) fn div<C: Cplx>(a: C, b: C) -> C {
    let (ar, ai, br, bi) = (a.re(), a.im(), b.re(), b.im());
    let (abs_br, abs_bi) = (br.abs(), bi.abs());
    if abs_br >= abs_bi {
        if abs_br == C::Real::ZERO && abs_bi == C::Real::ZERO {
            C::new(ar / abs_br, ai / abs_br)
        } else {
            let rat = bi / br;
            let scl = C::Real::ONE / (br + bi * rat);
            C::new((ar + ai * rat) * scl, (ai - ar * rat) * scl)
        }
    } else {
        let rat = br / bi;
        let scl = C::Real::ONE / (bi + br * rat);
        C::new((ar * rat + ai) * scl, (ai * rat - ar) * scl)
    }
}

/// `1 / z`.
#[inline]
pub(super) fn recip<C: Cplx>(z: C) -> C {
    div(C::new(C::Real::ONE, C::Real::ZERO), z)
}

/// `|z|`, without overflow for large parts.
#[inline]
pub(super) fn abs<C: Cplx>(z: C) -> C::Real {
    z.re().hypot(z.im())
}

/// `z / |z|`, and 0 at 0.
#[inline]
pub(super) fn sign<C: Cplx>(z: C) -> C {
    let r = abs(z);
    if r == C::Real::ZERO {
        C::new(C::Real::ZERO, C::Real::ZERO)
    } else {
        C::new(z.re() / r, z.im() / r)
    }
}

/// `e^z - 1`: the real part is `expm1(x) cos(y) - 2 sin^2(y / 2)`, which keeps full accuracy near 0.
#[inline]
pub(super) fn expm1<C: Cplx>(z: C) -> C {
    let (x, y) = (z.re(), z.im());
    if y == C::Real::ZERO {
        return C::new(x.exp_m1(), y);
    }
    let half = (y / (C::Real::ONE + C::Real::ONE)).sin();
    let two = C::Real::ONE + C::Real::ONE;
    C::new(x.exp_m1() * y.cos() - two * half * half, x.exp() * y.sin())
}

/// `ln(1 + z)`: for `|z| < 1/2` the real part is `log1p(2x + x^2 + y^2) / 2`, accurate near 0 (and far
/// from the cancellation of `1 + 2x + x^2` near `x = -1`); elsewhere `ln(1 + z)` directly.
#[inline]
pub(super) fn log1p<C: Cplx>(z: C) -> C {
    let (x, y) = (z.re(), z.im());
    let one = C::Real::ONE;
    let two = one + one;
    if abs(z) < one / two {
        C::new((x * (two + x) + y * y).ln_1p() / two, y.atan2(one + x))
    } else {
        (C::new(one + x, y)).ln()
    }
}

/// `1 / (1 + e^-z)`, written as `e^z / (1 + e^z)` when `Re z < 0` so that nothing overflows.
#[inline]
pub(super) fn sigmoid<C: Cplx>(z: C) -> C {
    let one = C::new(C::Real::ONE, C::Real::ZERO);
    if z.re() >= C::Real::ZERO {
        div(one, one + (-z).exp())
    } else {
        let e = z.exp();
        div(e, one + e)
    }
}

/// `a ^ b` with NumPy's rules: `a^0 = 1`, `0^b = 0` for real positive `b` (NaN for other `b`), exact
/// repeated squaring for integer exponents below 100 in magnitude, `exp(b ln a)` otherwise.
#[inline]
pub(super) fn pow<C: Cplx>(a: C, b: C) -> C {
    let zero = C::Real::ZERO;
    let one = C::new(C::Real::ONE, zero);
    if b.re() == zero && b.im() == zero {
        return one;
    }
    if a.re() == zero && a.im() == zero {
        return if b.re() > zero && b.im() == zero {
            C::new(zero, zero)
        } else {
            C::new(C::Real::NAN, C::Real::NAN)
        };
    }
    let br = b.re().to_scalar().to_f64();
    if b.im() == zero && br.trunc() == br && br.abs() < 100.0 {
        let n = br as i64;
        let mut e = n.unsigned_abs();
        let (mut acc, mut base) = (one, a);
        while e > 0 {
            if e & 1 == 1 {
                acc = acc * base;
            }
            base = base * base;
            e >>= 1;
        }
        return if n < 0 { recip(acc) } else { acc };
    }
    a.powc(b)
}

/// NumPy's `a >= b` for complex numbers: lexicographic on (real, imaginary).
#[inline]
fn ge<C: Cplx>(a: C, b: C) -> bool {
    (a.re() > b.re() && !a.im().is_nan() && !b.im().is_nan())
        || (a.re() == b.re() && a.im() >= b.im())
}

/// NumPy's `a <= b` for complex numbers: lexicographic on (real, imaginary).
#[inline]
fn le<C: Cplx>(a: C, b: C) -> bool {
    (a.re() < b.re() && !a.im().is_nan() && !b.im().is_nan())
        || (a.re() == b.re() && a.im() <= b.im())
}

/// `true` if either part is NaN.
#[inline]
pub(super) fn is_nan<C: Cplx>(z: C) -> bool {
    z.re().is_nan() || z.im().is_nan()
}

/// NumPy's `maximum` for complex numbers: the lexicographically larger, NaN propagating.
#[inline]
pub(super) fn maximum<C: Cplx>(a: C, b: C) -> C {
    if is_nan(a) || ge(a, b) { a } else { b }
}

/// NumPy's `minimum` for complex numbers: the lexicographically smaller, NaN propagating.
#[inline]
pub(super) fn minimum<C: Cplx>(a: C, b: C) -> C {
    if is_nan(a) || le(a, b) { a } else { b }
}
