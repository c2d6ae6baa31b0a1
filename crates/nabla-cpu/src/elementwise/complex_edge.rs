//! Complex functions at the edges of the plane, as C99 Annex G (and the Array API standard, which
//! follows it) defines them: zeros, infinities and NaNs in either part give the standard's values,
//! not whatever the textbook formula's `inf * 0` makes of them. Each function is reduced by its
//! symmetries (odd or even, and `f(conj z) = conj f(z)`) to the quadrant `x ≥ 0, y ≥ 0`, where its
//! special cases are a short table; finite inputs go to the accurate formulas (Kahan's for the
//! inverse functions, FreeBSD's `ctanh`). `sin`, `cos` and `tan` are `sinh`, `cosh` and `tanh`
//! turned by `i`, as the standard defines them. Everything is computed in `f64`.

use super::complex_inverse as inverse;
use super::traits::Cplx;
use num_complex::Complex64;
use std::f64::consts::{FRAC_PI_2, FRAC_PI_4, PI};

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

fn c(re: f64, im: f64) -> Complex64 {
    Complex64::new(re, im)
}

/// How a function maps the other quadrants onto the first.
#[derive(Clone, Copy)]
enum Symmetry {
    /// `f(-z) = -f(z)` and `f(conj z) = conj f(z)`: both parts take the signs of `x` and `y`.
    Odd,
    /// `f(-z) = f(z)` and `f(conj z) = conj f(z)`: the imaginary part takes the sign of `x y`.
    Even,
    /// Only `f(conj z) = conj f(z)`: `x` is kept, the imaginary part takes the sign of `y`.
    Conjugate,
}

/// `f` on any `z`, from `quadrant`, its values for `x ≥ 0, y ≥ 0` (`x` non-negative only under
/// `Odd` and `Even`).
fn by_symmetry(z: Complex64, symmetry: Symmetry, quadrant: fn(f64, f64) -> Complex64) -> Complex64 {
    let (x, y) = (z.re, z.im);
    let (nx, ny) = (x.is_sign_negative(), y.is_sign_negative());
    match symmetry {
        Symmetry::Odd => {
            let w = quadrant(x.abs(), y.abs());
            c(flip(w.re, nx), flip(w.im, ny))
        }
        Symmetry::Even => {
            let w = quadrant(x.abs(), y.abs());
            c(w.re, flip(w.im, nx != ny))
        }
        Symmetry::Conjugate => {
            let w = quadrant(x, y.abs());
            c(w.re, flip(w.im, ny))
        }
    }
}

fn flip(v: f64, negate: bool) -> f64 {
    if negate { -v } else { v }
}

/// `i z` and `-i z`, exactly.
fn times_i(z: Complex64) -> Complex64 {
    c(-z.im, z.re)
}

fn times_minus_i(z: Complex64) -> Complex64 {
    c(z.im, -z.re)
}

/// `+∞ cis(y)`, the value of `e^z`, `sinh`, `cosh` and `expm1` at `x = +∞` (`y ≥ 0`): `+∞ + i0` on
/// the axis, `+∞ + iNaN` where `y` is infinite or NaN.
fn infinite_cis(y: f64) -> Complex64 {
    if y == 0.0 {
        c(INF, y)
    } else if y.is_finite() {
        c(INF * y.cos(), INF * y.sin())
    } else {
        c(INF, NAN)
    }
}

/// `sinh` for `x ≥ 0, y ≥ 0`.
fn sinh_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        return c(x.sinh() * y.cos(), x.cosh() * y.sin());
    }
    if x == 0.0 {
        return c(x, NAN); // +0 + i∞ and +0 + iNaN: ±0 + iNaN
    }
    if x.is_infinite() {
        return infinite_cis(y);
    }
    if x.is_nan() && y == 0.0 {
        return c(NAN, y);
    }
    c(NAN, NAN)
}

/// `cosh` for `x ≥ 0, y ≥ 0`.
fn cosh_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        return c(x.cosh() * y.cos(), x.sinh() * y.sin());
    }
    if x == 0.0 {
        return c(NAN, 0.0);
    }
    if x.is_infinite() {
        return infinite_cis(y);
    }
    if x.is_nan() && y == 0.0 {
        return c(NAN, 0.0);
    }
    c(NAN, NAN)
}

/// `tanh` for `x ≥ 0, y ≥ 0`, by FreeBSD's formula for finite values: with `t = tan y`,
/// `s = sinh x`, `ρ = sqrt(1 + s²)`, `tanh z = (ρ s (1 + t²) + i t) / (1 + (1 + t²) s²)`, and
/// `1 + i 4 sin y cos y e^(-2x)` once `e^(-2x)` no longer matters.
fn tanh_q(x: f64, y: f64) -> Complex64 {
    if x.is_infinite() {
        // C99 gives the zero the sign of sin(2y); the Array API standard, +0.
        return c(1.0, 0.0);
    }
    if !y.is_finite() {
        // +0 + i∞ and +0 + iNaN: +0 + iNaN; other x: NaN + iNaN.
        return c(if x == 0.0 { x } else { NAN }, NAN);
    }
    if x.is_nan() {
        return c(NAN, if y == 0.0 { y } else { NAN });
    }
    if x > 22.0 {
        let e = (-2.0 * x).exp();
        return c(1.0, 4.0 * y.sin() * y.cos() * e);
    }
    let t = y.tan();
    let beta = 1.0 + t * t;
    let s = x.sinh();
    let rho = (1.0 + s * s).sqrt();
    let denom = 1.0 + beta * s * s;
    c(beta * rho * s / denom, t / denom)
}

/// `sqrt` for `y ≥ 0` (any `x`).
fn sqrt_q(x: f64, y: f64) -> Complex64 {
    if y.is_infinite() {
        return c(INF, y);
    }
    if x == -INF {
        return if y.is_nan() { c(NAN, INF) } else { c(0.0, INF) };
    }
    if x == INF {
        return c(INF, if y.is_nan() { NAN } else { 0.0 });
    }
    if x.is_nan() || y.is_nan() {
        return c(NAN, NAN);
    }
    if x == 0.0 && y == 0.0 {
        return c(0.0, y);
    }
    // Scaled by 1/4 where |x| + |z| could overflow.
    let big = x.abs() > f64::MAX / 4.0 || y > f64::MAX / 4.0;
    let (sx, sy) = if big { (x / 4.0, y / 4.0) } else { (x, y) };
    let mut t = ((sx.abs() + sx.hypot(sy)) / 2.0).sqrt();
    if big {
        t *= 2.0;
    }
    if x >= 0.0 {
        c(t, y / (2.0 * t))
    } else {
        c(y / (2.0 * t), t)
    }
}

/// `expm1` for `y ≥ 0` (any `x`).
fn expm1_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        if x == 0.0 && y == 0.0 {
            return c(0.0, y);
        }
        return super::complex::expm1(c(x, y));
    }
    if x == -INF {
        let im = if y.is_finite() {
            0.0f64.copysign(y.sin())
        } else {
            0.0
        };
        return c(-1.0, im);
    }
    if x == INF {
        return infinite_cis(y);
    }
    if x.is_nan() && y == 0.0 {
        return c(NAN, y);
    }
    c(NAN, NAN)
}

/// `acos` for `y ≥ 0` (any `x`).
fn acos_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        if x == 0.0 && y == 0.0 {
            return c(FRAC_PI_2, -0.0);
        }
        return inverse::acos(c(x, y));
    }
    if y.is_nan() {
        return match () {
            _ if x == 0.0 => c(FRAC_PI_2, NAN),
            _ if x.is_infinite() => c(NAN, -INF),
            _ => c(NAN, NAN),
        };
    }
    if x.is_nan() {
        return c(NAN, if y.is_infinite() { -INF } else { NAN });
    }
    match (x, y) {
        (x, y) if y.is_infinite() && x.is_finite() => c(FRAC_PI_2, -INF),
        (x, y) if y.is_infinite() => c(if x > 0.0 { FRAC_PI_4 } else { 3.0 * FRAC_PI_4 }, -INF),
        (x, _) => c(if x > 0.0 { 0.0 } else { PI }, -INF),
    }
}

/// `acosh` for `y ≥ 0` (any `x`).
fn acosh_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        if x == 0.0 && y == 0.0 {
            return c(0.0, FRAC_PI_2);
        }
        return inverse::acosh(c(x, y));
    }
    if y.is_nan() {
        return match () {
            _ if x == 0.0 => c(NAN, FRAC_PI_2),
            _ if x.is_infinite() => c(INF, NAN),
            _ => c(NAN, NAN),
        };
    }
    if x.is_nan() {
        return if y.is_infinite() {
            c(INF, NAN)
        } else {
            c(NAN, NAN)
        };
    }
    match (x, y) {
        (x, y) if y.is_infinite() && x.is_finite() => c(INF, FRAC_PI_2),
        (x, y) if y.is_infinite() => c(INF, if x > 0.0 { FRAC_PI_4 } else { 3.0 * FRAC_PI_4 }),
        (x, _) => c(INF, if x > 0.0 { 0.0 } else { PI }),
    }
}

/// `asinh` for `x ≥ 0, y ≥ 0`.
fn asinh_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        return times_minus_i(inverse::asin(times_i(c(x, y))));
    }
    if x.is_nan() {
        return match () {
            _ if y == 0.0 => c(NAN, y),
            _ if y.is_infinite() => c(INF, NAN),
            _ => c(NAN, NAN),
        };
    }
    if x.is_infinite() {
        return c(
            INF,
            if y.is_nan() {
                NAN
            } else if y.is_infinite() {
                FRAC_PI_4
            } else {
                0.0
            },
        );
    }
    // Finite x: y is ±∞ or NaN.
    if y.is_infinite() {
        c(INF, FRAC_PI_2)
    } else {
        c(NAN, NAN)
    }
}

/// `atanh` for `x ≥ 0, y ≥ 0`.
fn atanh_q(x: f64, y: f64) -> Complex64 {
    if x.is_finite() && y.is_finite() {
        if x == 1.0 && y == 0.0 {
            return c(INF, y);
        }
        return inverse::atanh(c(x, y));
    }
    if y.is_nan() {
        return match () {
            _ if x == 0.0 => c(x, NAN),
            _ if x.is_infinite() => c(0.0, NAN),
            _ => c(NAN, NAN),
        };
    }
    if x.is_nan() {
        return if y.is_infinite() {
            c(0.0, FRAC_PI_2)
        } else {
            c(NAN, NAN)
        };
    }
    // One part infinite, neither NaN.
    c(0.0, FRAC_PI_2)
}

macro_rules! complex_fn {
    ($(#[$doc:meta])* $name:ident, $symmetry:ident, $quadrant:ident) => {
        $(#[$doc])*
        pub(super) fn $name<C: Cplx>(z: C) -> C {
            C::from_c64(by_symmetry(z.to_c64(), Symmetry::$symmetry, $quadrant))
        }
    };
}

complex_fn!(/// `sinh z`.
    sinh, Odd, sinh_q);
complex_fn!(/// `cosh z`.
    cosh, Even, cosh_q);
complex_fn!(/// `tanh z`.
    tanh, Odd, tanh_q);
complex_fn!(/// Principal `sqrt z`.
    sqrt, Conjugate, sqrt_q);
complex_fn!(/// `e^z - 1`.
    expm1, Conjugate, expm1_q);
complex_fn!(/// Principal `acos z`.
    acos, Conjugate, acos_q);
complex_fn!(/// Principal `acosh z`.
    acosh, Conjugate, acosh_q);
complex_fn!(/// Principal `asinh z`.
    asinh, Odd, asinh_q);
complex_fn!(/// Principal `atanh z`.
    atanh, Odd, atanh_q);

/// `sin z = -i sinh(i z)`.
pub(super) fn sin<C: Cplx>(z: C) -> C {
    C::from_c64(times_minus_i(sinh(times_i(z.to_c64()))))
}

/// `cos z = cosh(i z)`.
pub(super) fn cos<C: Cplx>(z: C) -> C {
    C::from_c64(cosh(times_i(z.to_c64())))
}

/// `tan z = -i tanh(i z)`.
pub(super) fn tan<C: Cplx>(z: C) -> C {
    C::from_c64(times_minus_i(tanh(times_i(z.to_c64()))))
}

/// Principal `asin z = -i asinh(i z)`.
pub(super) fn asin<C: Cplx>(z: C) -> C {
    C::from_c64(times_minus_i(asinh(times_i(z.to_c64()))))
}

/// Principal `atan z = -i atanh(i z)`.
pub(super) fn atan<C: Cplx>(z: C) -> C {
    C::from_c64(times_minus_i(atanh(times_i(z.to_c64()))))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same value, NaNs equal and the signs of zeros compared; `any_sign` marks parts whose sign
    /// the standard leaves open.
    fn same(got: f64, want: f64, any_sign: bool) -> bool {
        if want.is_nan() {
            return got.is_nan();
        }
        got == want && (any_sign || got.is_sign_negative() == want.is_sign_negative())
    }

    #[test]
    fn annex_g_special_values() {
        /// A function, its input, the value it must give, and whether zeros' signs are free.
        type Case = (
            &'static str,
            fn(Complex64) -> Complex64,
            (f64, f64),
            (f64, f64),
            bool,
        );
        let cases: [Case; 19] = [
            ("sqrt(+inf + iNaN)", sqrt, (INF, NAN), (INF, NAN), false),
            ("sqrt(-inf + i1)", sqrt, (-INF, 1.0), (0.0, INF), false),
            ("sqrt(-4 - i0)", sqrt, (-4.0, -0.0), (0.0, -2.0), false),
            ("cosh(+0 + i∞)", cosh, (0.0, INF), (NAN, 0.0), true),
            ("cosh(+∞ + i0)", cosh, (INF, 0.0), (INF, 0.0), false),
            ("sinh(NaN + i0)", sinh, (NAN, 0.0), (NAN, 0.0), false),
            ("sinh(-∞ - i0)", sinh, (-INF, -0.0), (-INF, -0.0), false),
            ("tanh(+∞ + i2)", tanh, (INF, 2.0), (1.0, 0.0), false),
            ("tanh(+0 + iNaN)", tanh, (0.0, NAN), (0.0, NAN), false),
            ("expm1(-∞ + i∞)", expm1, (-INF, INF), (-1.0, 0.0), true),
            ("expm1(-0 + i0)", expm1, (-0.0, 0.0), (0.0, 0.0), false),
            (
                "acos(-∞ + i∞)",
                acos,
                (-INF, INF),
                (3.0 * FRAC_PI_4, -INF),
                false,
            ),
            ("acos(+0 + iNaN)", acos, (0.0, NAN), (FRAC_PI_2, NAN), false),
            ("acosh(-∞ + i1)", acosh, (-INF, 1.0), (INF, PI), false),
            ("acosh(NaN + i∞)", acosh, (NAN, INF), (INF, NAN), false),
            ("asinh(+∞ + i∞)", asinh, (INF, INF), (INF, FRAC_PI_4), false),
            (
                "asinh(-1 - i∞)",
                asinh,
                (-1.0, -INF),
                (-INF, -FRAC_PI_2),
                false,
            ),
            ("atanh(+1 + i0)", atanh, (1.0, 0.0), (INF, 0.0), false),
            ("atanh(NaN + i∞)", atanh, (NAN, INF), (0.0, FRAC_PI_2), true),
        ];
        for (what, f, (x, y), (re, im), any_sign) in cases {
            let got = f(c(x, y));
            assert!(
                same(got.re, re, any_sign) && same(got.im, im, any_sign),
                "{what} = {got}, want {re} + {im}i"
            );
        }
        // Far from the axis tanh is 1 and a vanishing imaginary part, not NaN (textbook's inf/inf).
        let t = tanh(c(45.0, 1.0));
        assert!(t.re == 1.0 && t.im > 0.0 && t.im < 1e-38, "{t}");
    }

    #[test]
    fn finite_values_match_the_formulas() {
        for &(x, y) in &[(0.3, -0.7), (-2.0, 5.0), (1e-8, 3.0), (10.0, -0.1)] {
            let z = c(x, y);
            for (what, got, want) in [
                ("sinh", sinh(z), z.sinh()),
                ("cosh", cosh(z), z.cosh()),
                ("tanh", tanh(z), z.tanh()),
                ("sin", sin(z), z.sin()),
                ("cos", cos(z), z.cos()),
                ("tan", tan(z), z.tan()),
                ("sqrt", sqrt(z), z.sqrt()),
                ("asin", asin(z), z.asin()),
                ("atan", atan(z), z.atan()),
            ] {
                assert!(
                    (got - want).norm() <= 1e-14 * want.norm(),
                    "{what}({z}) = {got}, want {want}"
                );
            }
        }
    }
}
