//! The inverse trigonometric and hyperbolic functions of complex numbers on their principal branches,
//! by Kahan's formulas ("Branch Cuts for Complex Elementary Functions", 1987): each part comes from
//! square roots of `1 ± z` combined without cancellation, so the results keep full accuracy across the
//! plane (where `ln(z + sqrt(z² + 1))` loses every digit for large negative real parts) and the sign
//! of zero picks the side of each branch cut. `Complex32` inputs are computed in `f64`, so that their
//! intermediate squares cannot overflow.

use num_complex::Complex64;

/// `1 - z` with the imaginary part negated, not subtracted from +0, so that its sign of zero is the
/// opposite of `z`'s and each square root lands on its side of the cut.
fn one_minus(z: Complex64) -> Complex64 {
    Complex64::new(1.0 - z.re, -z.im)
}

/// `1 + z`, keeping the sign of a zero imaginary part.
fn one_plus(z: Complex64) -> Complex64 {
    Complex64::new(1.0 + z.re, z.im)
}

/// `asin z`: real part `atan2(x, Re(sqrt(1 - z) sqrt(1 + z)))`, imaginary part
/// `asinh(Im(conj(sqrt(1 - z)) sqrt(1 + z)))`.
fn asin64(z: Complex64) -> Complex64 {
    let (s1, s2) = (one_minus(z).sqrt(), one_plus(z).sqrt());
    Complex64::new(
        z.re.atan2(s1.re * s2.re - s1.im * s2.im),
        (s1.re * s2.im - s1.im * s2.re).asinh(),
    )
}

/// `acos z`: real part `2 atan2(Re sqrt(1 - z), Re sqrt(1 + z))`, imaginary part
/// `asinh(Im(conj(sqrt(1 + z)) sqrt(1 - z)))`.
fn acos64(z: Complex64) -> Complex64 {
    let (s1, s2) = (one_minus(z).sqrt(), one_plus(z).sqrt());
    Complex64::new(
        2.0 * s1.re.atan2(s2.re),
        (s2.re * s1.im - s2.im * s1.re).asinh(),
    )
}

/// `acosh z`: real part `asinh(Re(conj(sqrt(z - 1)) sqrt(z + 1)))`, imaginary part
/// `2 atan2(Im sqrt(z - 1), Re sqrt(z + 1))`.
fn acosh64(z: Complex64) -> Complex64 {
    let (s1, s2) = (Complex64::new(z.re - 1.0, z.im).sqrt(), one_plus(z).sqrt());
    Complex64::new(
        (s1.re * s2.re + s1.im * s2.im).asinh(),
        2.0 * s1.im.atan2(s2.re),
    )
}

/// `atanh z = (log1p(z) - log1p(-z)) / 2`, accurate near 0 and, through the signed zero of the
/// negated imaginary part, on the correct side of the cuts.
fn atanh64(z: Complex64) -> Complex64 {
    let (a, b) = (log1p64(z), log1p64(-z));
    Complex64::new((a.re - b.re) / 2.0, (a.im - b.im) / 2.0)
}

/// `ln(1 + z)`, with the real part `ln|1 + z|` through `ln_1p` where `|z|` is small.
fn log1p64(z: Complex64) -> Complex64 {
    let w = Complex64::new(1.0 + z.re, z.im);
    let re = if z.norm() < 0.5 {
        // |1 + z|² - 1 = 2x + x² + y², free of cancellation.
        0.5 * (2.0 * z.re + z.re * z.re + z.im * z.im).ln_1p()
    } else {
        w.norm().ln()
    };
    Complex64::new(re, w.im.atan2(w.re))
}

/// Principal `asin z` (finite `z`; [`super::complex_edge`] handles the rest).
pub(super) fn asin(z: Complex64) -> Complex64 {
    asin64(z)
}

/// Principal `acos z` (finite `z`).
pub(super) fn acos(z: Complex64) -> Complex64 {
    acos64(z)
}

/// Principal `acosh z` (finite `z`).
pub(super) fn acosh(z: Complex64) -> Complex64 {
    acosh64(z)
}

/// Principal `atanh z` (finite `z`).
pub(super) fn atanh(z: Complex64) -> Complex64 {
    atanh64(z)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: Complex64, b: Complex64) -> bool {
        // Relative to |b|, or absolute below 1 (the round trip through acos and cos loses the
        // relative accuracy of tiny values).
        (a - b).norm() <= 1e-14 * b.norm().max(1.0)
    }

    #[test]
    fn inverses_undo_their_functions_across_the_plane() {
        for &(re, im) in &[
            (0.3, 0.2),
            (-2731.0, 1.0),
            (1e-9, -1e-9),
            (5.0, -7.0),
            (-0.5, 3.0),
            (1e10, 1e10),
        ] {
            let z = Complex64::new(re, im);
            assert!(close(asin64(z).sin(), z), "asin {z}");
            assert!(close(acos64(z).cos(), z), "acos {z}");
            assert!(close(acosh64(z).cosh(), z), "acosh {z}");
            // tanh is ill-conditioned near its poles, where atanh of a large z lands: compare with
            // the logarithmic formula instead, which is accurate away from ±1.
            let one = Complex64::new(1.0, 0.0);
            let by_log = ((one + z) / (one - z)).ln() / 2.0;
            assert!(
                (atanh64(z) - by_log).norm() <= 1e-13 * by_log.norm().max(1.0),
                "atanh {z}"
            );
            if z.norm() < 1e-6 {
                assert!((atanh64(z) - z).norm() <= 1e-15 * z.norm(), "atanh {z} ~ z");
            }
            let iz = Complex64::new(-z.im, z.re);
            let w = asin64(iz);
            let asinh = Complex64::new(w.im, -w.re);
            assert!(close(asinh.sinh(), z), "asinh {z}");
        }
    }

    #[test]
    fn branches_match_the_principal_values() {
        // On the real segment where they are real, the real functions.
        for x in [-0.9, -0.3, 0.0, 0.4, 0.99] {
            let z = Complex64::new(x, 0.0);
            assert!((asin64(z).re - x.asin()).abs() < 1e-15);
            assert!((acos64(z).re - x.acos()).abs() < 1e-15);
            assert!((atanh64(z).re - x.atanh()).abs() < 1e-15);
        }
        // asin(2 + 0i) lies above the cut: π/2 + i acosh(2); below it with -0.
        let above = asin64(Complex64::new(2.0, 0.0));
        let below = asin64(Complex64::new(2.0, -0.0));
        assert!((above.re - std::f64::consts::FRAC_PI_2).abs() < 1e-15);
        assert!((above.im - 2f64.acosh()).abs() < 1e-15 && (below.im + 2f64.acosh()).abs() < 1e-15);
        // acosh(-2 + 0i) = acosh(2) + iπ.
        let w = acosh64(Complex64::new(-2.0, 0.0));
        assert!((w.re - 2f64.acosh()).abs() < 1e-15 && (w.im - std::f64::consts::PI).abs() < 1e-15);
    }
}
