//! Branch-free elementary functions that the compiler can vectorise.
//!
//! The functions here contain no calls, no loops and no data-dependent branches (only `if`
//! expressions between values that are already computed, which become vector blends), so the loops
//! that call them (the CPU backend's elementwise kernels, its fast-path kernels: fused rows,
//! attention, the LSTM layer, batch norm, Adam's loop) compile to SIMD code, including the AVX-512
//! and AVX2+FMA builds of those loops ([`simd_kernel!`](crate::simd_kernel)). They live with the
//! host kernels that use them, so that each shares one implementation and one set of accuracy
//! tests.
//!
//! ```
//! use nabla_cpu::simd_math::{exp_f32, tanh_f64};
//! assert!((exp_f32(1.0) - std::f32::consts::E).abs() <= f32::EPSILON * 3.0);
//! assert!((tanh_f64(0.5) - 0.5f64.tanh()).abs() < 1e-15);
//! ```
//!
//! `exp` works as follows, for `f32` and `f64` alike:
//! 1. clamp `x` into a range just wider than the one with finite, non-zero results (NaN is restored at
//!    the end), so every intermediate integer stays in range;
//! 2. `n = round(x / ln 2)` with the "shifter" trick (adding `1.5 * 2^(mantissa bits)` rounds to an
//!    integer and leaves that integer in the low bits of the sum);
//! 3. `r = x - n ln 2` with a Cody–Waite split `ln 2 = LN2_HI + LN2_LO`, where `LN2_HI` has few enough
//!    significant bits that `n * LN2_HI` and the subtraction are exact, so `|r| <= ln 2 / 2`
//!    carries no cancellation error;
//! 4. `e^r` by its Taylor polynomial (degree 7 for `f32`, 13 for `f64`, truncation error below 2^-27 and
//!    2^-57 respectively on `|r| <= ln 2 / 2`), as `1 + (r + r^2 Q(r))` with `Q` (the
//!    coefficients from `1/2!` on) evaluated by [`poly`];
//! 5. multiply by `2^n` as two factors `2^(n >> 1)` and `2^(n - (n >> 1))` built from bit patterns, so
//!    that both are normal numbers and a subnormal result is rounded once, and results beyond the
//!    range overflow to infinity or underflow to zero through ordinary IEEE rounding.
//!
//! Measured accuracy (see the tests): at most 1 ulp from the correctly rounded result for `f32`
//! over a sweep of the whole range and at most 2 ulp from `std`'s `f64::exp` for `f64`.
//!
//! `sigmoid` is `1 / (1 + e^-|x|)` (or `e^-|x|` times that for negative `x`), so nothing overflows.
//! `tanh` uses `1 - 2 / (e^(2|x|) + 1)` for `|x| >= 1` and an odd polynomial below, where that
//! formula would cancel: `(tanh(x) - x) / x^3` as a polynomial in `x^2` on `[0, 1]` (degree 7 for
//! `f32`, 15 for `f64`, error below 2e-9 and 5e-18) from Chebyshev interpolation at 50 digits:
//!
//! ```text
//! import mpmath as mp
//! mp.mp.dps = 50
//! f = lambda t: mp.mpf(-1) / 3 if t == 0 else (mp.tanh(mp.sqrt(t)) - mp.sqrt(t)) / t**1.5
//! poly = mp.chebyfit(f, [0, 1], degree + 1)  # highest degree first; listed here lowest first
//! ```

use std::ops::{Add, Mul};

/// Compiles a kernel function once per SIMD level worth its own build (AVX-512, then AVX2 with FMA,
/// on x86-64) besides the baseline, and runs the best one the CPU has (the `multiversion` crate's
/// dispatch, so the calling crate depends on `multiversion`). Every vectorised loop of the host
/// kernels goes through here, so that the levels are named once.
///
/// ```
/// nabla_cpu::simd_kernel! {
///     /// `dst += src`, elementwise.
///     fn add_assign(dst: &mut [f32], src: &[f32]) {
///         for (d, s) in dst.iter_mut().zip(src) {
///             *d += s;
///         }
///     }
/// }
/// let mut x = vec![1.0f32; 40];
/// add_assign(&mut x, &[2.0; 40]);
/// assert!(x.iter().all(|&v| v == 3.0));
/// ```
#[macro_export]
macro_rules! simd_kernel {
    ($(#[$attr:meta])* $vis:vis fn $($rest:tt)*) => {
        $(#[$attr])*
        #[multiversion::multiversion(targets(
            "x86_64+avx512f+avx512vl+avx512bw+avx512dq+avx2+fma",
            "x86_64+avx2+fma"
        ))]
        $vis fn $($rest)*
    };
}

/// Evaluates the polynomial with coefficients `c` (lowest degree first, at least four) at `x` as
/// four interleaved Horner chains in `x^4`, combined at the end. The chains are independent, so the
/// latency of the evaluation is about a quarter of plain Horner's, which is what limits a
/// vectorised loop.
#[inline(always)]
pub fn poly<T: Copy + Add<Output = T> + Mul<Output = T>>(c: &[T], x: T) -> T {
    let n = c.len();
    let (x2, x4) = (x * x, x * x * (x * x));
    let chain = |r: usize| {
        let mut i = r + (n - 1 - r) / 4 * 4;
        let mut acc = c[i];
        while i >= r + 4 {
            i -= 4;
            acc = acc * x4 + c[i];
        }
        acc
    };
    (chain(0) + x * chain(1)) + x2 * (chain(2) + x * chain(3))
}

/// Generates `exp` and `sigmoid` for one float type from its constants.
macro_rules! exp_impl {
    (
        $exp:ident, $sigmoid:ident, $f:ty, $bits:ty, $int:ty, mantissa = $mant:expr, bias = $bias:expr,
        shifter = $shift:expr, lo = $lo:expr, hi = $hi:expr, ln2_hi = $ln2_hi:expr, ln2_lo = $ln2_lo:expr,
        taylor = [$($c:expr),+ $(,)?]
    ) => {
        /// `e^x`, branch-free and vectorisable; overflow gives `inf`, underflow `0`, NaN stays NaN.
        #[inline(always)]
        pub fn $exp(x: $f) -> $f {
            const LOG2E: $f = std::f64::consts::LOG2_E as $f;
            const SHIFT: $f = $shift;
            // NaN goes to `lo` here (max ignores NaN) and is restored below.
            let xc = x.max($lo).min($hi);
            let t = xc * LOG2E + SHIFT;
            let nf = t - SHIFT;
            let n = (t.to_bits() as $int).wrapping_sub(SHIFT.to_bits() as $int);
            let r = (xc - nf * $ln2_hi) - nf * $ln2_lo;
            // e^r = 1 + (r + r^2 Q(r)): the rounding errors of Q are damped by r^2 <= 0.121.
            let q = poly::<$f>(&[$($c),+], r);
            let p = 1.0 + (r + (r * r) * q);
            let n1 = n >> 1;
            let n2 = n.wrapping_sub(n1);
            let s1 = <$f>::from_bits((n1.wrapping_add($bias) as $bits) << $mant);
            let s2 = <$f>::from_bits((n2.wrapping_add($bias) as $bits) << $mant);
            let y = p * s1 * s2;
            if x.is_nan() { x } else { y }
        }

        /// The logistic function `1 / (1 + e^-x)`, from `e^-|x|` so that nothing overflows: exactly
        /// `1` and `0` in the limits, NaN for NaN.
        #[inline(always)]
        pub fn $sigmoid(x: $f) -> $f {
            let e = $exp(-x.abs());
            let s = 1.0 / (1.0 + e);
            if x >= 0.0 { s } else { e * s }
        }
    };
}

exp_impl!(
    exp_f32,
    sigmoid_f32,
    f32,
    u32,
    i32,
    mantissa = 23,
    bias = 127,
    shifter = 12_582_912.0, // 1.5 * 2^23
    lo = -105.0,
    hi = 89.0,               // e^-105 rounds to 0 and e^89 overflows
    ln2_hi = 0.693_145_75, // = 0.693145751953125, ln 2 rounded down to 16 bits: n * LN2_HI is exact for |n| < 256
    ln2_lo = 1.428_606_8e-6, // ln 2 - LN2_HI
    taylor = [
        0.5,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0
    ]
);

exp_impl!(
    exp_f64,
    sigmoid_f64,
    f64,
    u64,
    i64,
    mantissa = 52,
    bias = 1023,
    shifter = 6_755_399_441_055_744.0, // 1.5 * 2^52
    lo = -746.0,
    hi = 710.0,                         // e^-746 rounds to 0 and e^710 overflows
    ln2_hi = 0.693_147_180_559_208_2, // ln 2 rounded down to 40 bits: n * LN2_HI is exact for |n| < 2^13
    ln2_lo = 7.371_002_565_167_799e-13, // ln 2 - LN2_HI
    taylor = [
        0.5,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40_320.0,
        1.0 / 362_880.0,
        1.0 / 3_628_800.0,
        1.0 / 39_916_800.0,
        1.0 / 479_001_600.0,
        1.0 / 6_227_020_800.0,
    ]
);

/// Generates a branch-free `tanh` from an `exp` and the coefficients (lowest degree first) of
/// `(tanh(x) - x) / x^3` as a polynomial in `x^2` on `[0, 1]`.
macro_rules! tanh_impl {
    ($tanh:ident, $exp:ident, $f:ty, poly = [$($c:expr),+ $(,)?]) => {
        /// Hyperbolic tangent, branch-free: `x + x^3 P(x^2)` for `|x| < 1`, where `1 - 2 /
        /// (e^(2|x|) + 1)` would cancel, and that formula beyond (it reaches exactly ±1 and needs
        /// no overflow check).
        #[inline(always)]
        pub fn $tanh(x: $f) -> $f {
            let a = x.abs();
            let t = x * x;
            let p = poly::<$f>(&[$($c),+], t);
            let small = (a + a * t * p).copysign(x);
            let e = $exp(a + a);
            let large = (1.0 - 2.0 / (e + 1.0)).copysign(x);
            if a < 1.0 { small } else { large }
        }
    };
}

tanh_impl!(
    tanh_f32,
    exp_f32,
    f32,
    poly = [
        -0.333_333_33,
        0.133_333_11,
        -0.053_963_415,
        0.021_829_55,
        -0.008_697_848,
        0.003_206_803_4,
        -0.000_923_500_85,
        0.000_142_793_19,
    ]
);

tanh_impl!(
    tanh_f64,
    exp_f64,
    f64,
    poly = [
        -0.3333333333333333,
        0.1333333333333309,
        -0.05396825396804637,
        0.02186948852912909,
        -0.008863235404578283,
        0.003592126679366341,
        -0.0014558246920964941,
        0.0005899792946300052,
        -0.00023895705228738225,
        9.646277743313181e-05,
        -3.8389607893147334e-05,
        1.4606131676715378e-05,
        -4.987760317520347e-06,
        1.3791814499083342e-06,
        -2.6330772232959337e-07,
        2.5155023659382105e-08,
    ]
);

/// The float types the vectorisable kernels compute in (`f32`, `f64`): arithmetic, the constants
/// the kernels start from, and this module's functions by method, so that one generic kernel serves
/// both.
pub trait SimdFloat:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + Mul<Output = Self>
    + std::ops::Div<Output = Self>
{
    /// `0`.
    const ZERO: Self;
    /// `1`.
    const ONE: Self;
    /// `-inf`, the identity of `max`.
    const NEG_INFINITY: Self;
    /// `e^self` ([`exp_f32`], [`exp_f64`]).
    fn exp(self) -> Self;
    /// The logistic function ([`sigmoid_f32`], [`sigmoid_f64`]).
    fn sigmoid(self) -> Self;
    /// The hyperbolic tangent ([`tanh_f32`], [`tanh_f64`]).
    fn tanh(self) -> Self;
    /// `self^(1/2)`.
    fn sqrt(self) -> Self;
    /// The natural logarithm (the standard library's: for a value per row, not per element).
    fn ln(self) -> Self;
    /// `value` rounded to this type.
    fn from_f64(value: f64) -> Self;
}

macro_rules! simd_float {
    ($f:ty, $exp:ident, $sigmoid:ident, $tanh:ident) => {
        impl SimdFloat for $f {
            const ZERO: $f = 0.0;
            const ONE: $f = 1.0;
            const NEG_INFINITY: $f = <$f>::NEG_INFINITY;
            #[inline(always)]
            fn exp(self) -> $f {
                $exp(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> $f {
                $sigmoid(self)
            }
            #[inline(always)]
            fn tanh(self) -> $f {
                $tanh(self)
            }
            #[inline(always)]
            fn sqrt(self) -> $f {
                <$f>::sqrt(self)
            }
            #[inline(always)]
            fn ln(self) -> $f {
                <$f>::ln(self)
            }
            fn from_f64(value: f64) -> $f {
                value as $f
            }
        }
    };
}

simd_float!(f32, exp_f32, sigmoid_f32, tanh_f32);
simd_float!(f64, exp_f64, sigmoid_f64, tanh_f64);

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place between two floats of one sign (or zero).
    fn ulps32(a: f32, b: f32) -> u64 {
        let key = |v: f32| {
            let b = v.to_bits() as i64;
            if b < 0x8000_0000 { b } else { 0x8000_0000 - b }
        };
        (key(a) - key(b)).unsigned_abs()
    }

    fn ulps64(a: f64, b: f64) -> u64 {
        let key = |v: f64| {
            let b = v.to_bits() as i128;
            if b < 1 << 63 { b } else { (1i128 << 63) - b }
        };
        (key(a) - key(b)).unsigned_abs() as u64
    }

    fn same_class32(got: f32, want: f32) -> bool {
        (got.is_nan() && want.is_nan()) || got == want || ulps32(got, want) <= 1
    }

    #[test]
    fn exp_f32_within_one_ulp_over_the_whole_range() {
        let mut worst = (0u64, 0.0f32);
        // Every 61st bit pattern covers all exponents and many mantissas, both signs.
        for bits in (0..=u32::MAX).step_by(61) {
            let x = f32::from_bits(bits);
            let want = (x as f64).exp() as f32;
            let got = exp_f32(x);
            if want.is_nan() {
                assert!(got.is_nan(), "exp({x:e}) = {got:e}, want NaN");
                continue;
            }
            let d = ulps32(got, want);
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 1,
            "worst error {} ulp at x = {:e}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn exp_f32_edge_cases() {
        let cases: [(f32, f32); 9] = [
            (0.0, 1.0),
            (-0.0, 1.0),
            (f32::INFINITY, f32::INFINITY),
            (f32::NEG_INFINITY, 0.0),
            (89.0, f32::INFINITY),
            (-104.0, 0.0),
            (1e-30, 1.0),
            (-1e-30, 1.0),
            (88.0, (88.0f64).exp() as f32),
        ];
        for (x, want) in cases {
            assert!(same_class32(exp_f32(x), want), "exp({x}) = {}", exp_f32(x));
        }
        assert!(exp_f32(f32::NAN).is_nan());
        // Near the overflow and underflow thresholds, and in the subnormal range.
        let max_finite = f32::from_bits(0x42B1_7217); // largest x with finite e^x
        assert!(exp_f32(max_finite).is_finite());
        assert!(exp_f32(f32::from_bits(0x42B1_7218)).is_infinite());
        for x in [-87.0f32, -87.5, -95.0, -100.0, -103.0, -103.9, -103.97] {
            let want = (x as f64).exp() as f32;
            assert!(
                ulps32(exp_f32(x), want) <= 1,
                "exp({x}) = {:e} want {want:e}",
                exp_f32(x)
            );
        }
    }

    #[test]
    fn exp_f64_within_two_ulp() {
        let mut worst = (0u64, 0.0f64);
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut xs = vec![
            0.0,
            -0.0,
            1e-300,
            -1e-300,
            5e-324,
            1.0,
            -1.0,
            709.78,
            709.782712893384,
            -708.39,
            -745.13,
            -744.0,
            -730.0,
            -720.5,
        ];
        for _ in 0..400_000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            xs.push(-746.0 + 1456.0 * u);
            xs.push((u - 0.5) * 2.0);
            xs.push((u - 0.5) * 1e-6);
        }
        for x in xs {
            let got = exp_f64(x);
            let want = x.exp();
            let d = ulps64(got, want);
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 2,
            "worst error {} ulp at x = {:e}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn exp_f64_edge_cases() {
        assert_eq!(exp_f64(0.0), 1.0);
        assert_eq!(exp_f64(-0.0), 1.0);
        assert_eq!(exp_f64(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp_f64(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_f64(709.8), f64::INFINITY);
        assert!(exp_f64(709.78).is_finite());
        assert_eq!(exp_f64(-746.0), 0.0);
        assert_eq!(exp_f64(-745.2), 0.0);
        assert_eq!(exp_f64(-745.0), (-745.0f64).exp()); // the smallest subnormal
        assert!(exp_f64(f64::NAN).is_nan());
        assert!(ulps64(exp_f64(1.0), std::f64::consts::E) <= 1);
    }

    #[test]
    fn sigmoid_is_stable_and_accurate() {
        for x in [
            -1e4f32, -200.0, -90.0, -20.0, -1.0, -1e-8, 0.0, 1e-8, 0.5, 3.0, 20.0, 1e4,
        ] {
            let want = (1.0 / (1.0 + (-(x as f64)).exp())) as f32;
            let got = sigmoid_f32(x);
            assert!(got.is_finite(), "sigmoid({x})");
            assert!(
                ulps32(got, want) <= 3,
                "sigmoid({x}) = {got:e}, want {want:e}"
            );
        }
        assert_eq!(sigmoid_f32(1e4), 1.0);
        assert_eq!(sigmoid_f32(-1e4), 0.0);
        assert_eq!(sigmoid_f64(1e4), 1.0);
        assert_eq!(sigmoid_f64(-1e4), 0.0);
        assert_eq!(sigmoid_f64(f64::INFINITY), 1.0);
        assert_eq!(sigmoid_f64(f64::NEG_INFINITY), 0.0);
        assert!(sigmoid_f64(f64::NAN).is_nan());
        for i in -400..=400 {
            let x = i as f64 * 0.37;
            let e = (-x.abs()).exp();
            let want = if x >= 0.0 {
                1.0 / (1.0 + e)
            } else {
                e / (1.0 + e)
            };
            assert!(ulps64(sigmoid_f64(x), want) <= 4, "sigmoid({x})");
        }
    }

    #[test]
    fn tanh_f32_within_two_ulp() {
        let mut worst = (0u64, 0.0f32);
        for bits in (0..=u32::MAX).step_by(97) {
            let x = f32::from_bits(bits);
            let want = (x as f64).tanh() as f32;
            let got = tanh_f32(x);
            if want.is_nan() {
                assert!(got.is_nan(), "tanh({x:e}) = {got:e}");
                continue;
            }
            let d = ulps32(got, want);
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 2,
            "worst error {} ulp at x = {:e}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn tanh_f64_within_three_ulp() {
        let mut worst = (0u64, 0.0f64);
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        for i in 0..600_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let u = (s >> 11) as f64 / (1u64 << 53) as f64;
            let x = match i % 3 {
                0 => (u - 0.5) * 4.0,
                1 => (u - 0.5) * 50.0,
                _ => (u - 0.5) * 1e-5,
            };
            let d = ulps64(tanh_f64(x), x.tanh());
            if d > worst.0 {
                worst = (d, x);
            }
        }
        assert!(
            worst.0 <= 3,
            "worst error {} ulp at x = {:e}",
            worst.0,
            worst.1
        );
    }

    #[test]
    fn tanh_edge_cases() {
        assert!(tanh_f32(-0.0).is_sign_negative() && tanh_f32(-0.0) == 0.0);
        assert!(tanh_f64(-0.0).is_sign_negative());
        assert_eq!(tanh_f64(1e-300), 1e-300);
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f64(f64::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f64(30.0), 1.0);
        assert_eq!(tanh_f32(-1e4), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan() && tanh_f64(f64::NAN).is_nan());
        for x in [1.0f64, -1.0, 0.999_999_999, 1.000_000_001] {
            assert!(ulps64(tanh_f64(x), x.tanh()) <= 3, "tanh({x})");
        }
    }
}
