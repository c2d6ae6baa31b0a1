//! Element families the elementwise kernels are generic over: real floats, complex floats and integers.
//!
//! Each trait lists exactly the operations the kernels need, implemented once per family by a macro that
//! forwards to the inherent methods of the primitive (or `num_complex`) type, so a kernel is written once
//! per family and monomorphised per dtype, with every call inlined into the vectorised loops.

use super::erf::{erf_f32, erf_f64};
use super::vector::{
    SliceKernel, erf_slice_f32, erf_slice_f64, exp_slice_f32, exp_slice_f64, sigmoid_slice_f32,
    sigmoid_slice_f64, tanh_slice_f32, tanh_slice_f64,
};
use crate::simd_math::{exp_f32, exp_f64, sigmoid_f32, sigmoid_f64, tanh_f32, tanh_f64};
use nabla_core::{Element, UnaryOp};
use num_complex::{Complex, Complex32, Complex64};
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

/// `f32` and `f64`.
pub(crate) trait Real:
    Element
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + Neg<Output = Self>
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// Not a number.
    const NAN: Self;
    /// The complex type whose parts are `Self`.
    type Complex: Cplx<Real = Self>;
    /// Absolute value.
    fn abs(self) -> Self;
    /// Square root.
    fn sqrt(self) -> Self;
    /// `e^x` through the vectorisable kernel of [`crate::simd_math`].
    fn exp(self) -> Self;
    /// `e^x - 1`.
    fn exp_m1(self) -> Self;
    /// Natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + x)`.
    fn ln_1p(self) -> Self;
    /// Sine.
    fn sin(self) -> Self;
    /// Cosine.
    fn cos(self) -> Self;
    /// Tangent.
    fn tan(self) -> Self;
    /// Arcsine.
    fn asin(self) -> Self;
    /// Arccosine.
    fn acos(self) -> Self;
    /// Arctangent.
    fn atan(self) -> Self;
    /// Inverse hyperbolic sine.
    fn asinh(self) -> Self;
    /// Inverse hyperbolic cosine.
    fn acosh(self) -> Self;
    /// Inverse hyperbolic tangent.
    fn atanh(self) -> Self;
    /// Hyperbolic sine.
    fn sinh(self) -> Self;
    /// Hyperbolic cosine.
    fn cosh(self) -> Self;
    /// Hyperbolic tangent (vectorisable).
    fn tanh(self) -> Self;
    /// Logistic function (vectorisable, stable).
    fn sigmoid(self) -> Self;
    /// Error function.
    fn erf(self) -> Self;
    /// Round down.
    fn floor(self) -> Self;
    /// Round up.
    fn ceil(self) -> Self;
    /// Round half to even.
    fn round_ties_even(self) -> Self;
    /// Round toward zero.
    fn trunc(self) -> Self;
    /// `true` for NaN.
    fn is_nan(self) -> bool;
    /// `true` for finite values.
    fn is_finite(self) -> bool;
    /// `self ^ e`.
    fn powf(self, e: Self) -> Self;
    /// `atan2(self, x)`.
    fn atan2(self, x: Self) -> Self;
    /// `|self|` with the sign of `s`.
    fn copysign(self, s: Self) -> Self;
    /// `sqrt(self^2 + o^2)` without undue overflow.
    fn hypot(self, o: Self) -> Self;
    /// `true` when the sign bit is set (`-0.0` and negative NaNs included).
    fn is_sign_negative(self) -> bool;
    /// The next representable value after `self` toward `toward` (`toward` when equal, NaN when
    /// either is NaN).
    fn next_after(self, toward: Self) -> Self;
    /// The vectorised slice kernel for `op`, where there is one (`Exp`, `Sigmoid`, `Tanh`, `Erf`).
    fn slice_kernel(op: UnaryOp) -> Option<SliceKernel<Self>>;
}

macro_rules! forward {
    ($t:ty: $($m:ident),*) => {$(
        #[inline(always)]
        fn $m(self) -> Self {
            <$t>::$m(self)
        }
    )*};
}

macro_rules! impl_real {
    ($t:ident, $c:ty, $exp:path, $sigmoid:path, $tanh:path, $erf:path, [$ek:path, $sk:path, $tk:path, $fk:path]) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NAN: Self = <$t>::NAN;
            type Complex = $c;
            forward!($t: abs, sqrt, exp_m1, ln, ln_1p, sin, cos, tan, asin, acos, atan, sinh, cosh);
            // Through f64, so that f32 keeps full accuracy (std's f32 atanh is 12 ulps off near ±1).
            #[inline(always)]
            fn asinh(self) -> Self {
                (self as f64).asinh() as $t
            }
            #[inline(always)]
            fn acosh(self) -> Self {
                (self as f64).acosh() as $t
            }
            #[inline(always)]
            fn atanh(self) -> Self {
                (self as f64).atanh() as $t
            }
            forward!($t: floor, ceil, round_ties_even, trunc);
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                $sigmoid(self)
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            #[inline(always)]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            #[inline(always)]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline(always)]
            fn powf(self, e: Self) -> Self {
                <$t>::powf(self, e)
            }
            #[inline(always)]
            fn atan2(self, x: Self) -> Self {
                <$t>::atan2(self, x)
            }
            #[inline(always)]
            fn copysign(self, s: Self) -> Self {
                <$t>::copysign(self, s)
            }
            #[inline(always)]
            fn hypot(self, o: Self) -> Self {
                <$t>::hypot(self, o)
            }
            #[inline(always)]
            fn is_sign_negative(self) -> bool {
                <$t>::is_sign_negative(self)
            }
            #[inline(always)]
            fn next_after(self, toward: Self) -> Self {
                if self.is_nan() || toward.is_nan() {
                    <$t>::NAN
                } else if self == toward {
                    toward
                } else if self < toward {
                    self.next_up()
                } else {
                    self.next_down()
                }
            }
            fn slice_kernel(op: UnaryOp) -> Option<SliceKernel<Self>> {
                match op {
                    UnaryOp::Exp => Some($ek),
                    UnaryOp::Sigmoid => Some($sk),
                    UnaryOp::Tanh => Some($tk),
                    UnaryOp::Erf => Some($fk),
                    _ => None,
                }
            }
        }
    };
}

impl_real!(
    f32,
    Complex32,
    exp_f32,
    sigmoid_f32,
    tanh_f32,
    erf_f32,
    [
        exp_slice_f32,
        sigmoid_slice_f32,
        tanh_slice_f32,
        erf_slice_f32
    ]
);
impl_real!(
    f64,
    Complex64,
    exp_f64,
    sigmoid_f64,
    tanh_f64,
    erf_f64,
    [
        exp_slice_f64,
        sigmoid_slice_f64,
        tanh_slice_f64,
        erf_slice_f64
    ]
);

/// `Complex32` and `Complex64`.
pub(crate) trait Cplx:
    Element + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Neg<Output = Self>
{
    /// The type of the real and imaginary parts.
    type Real: Real<Complex = Self>;
    /// `re + i im`.
    fn new(re: Self::Real, im: Self::Real) -> Self;
    /// Real part.
    fn re(self) -> Self::Real;
    /// Imaginary part.
    fn im(self) -> Self::Real;
    /// Complex conjugate.
    fn conj(self) -> Self;
    /// `e^z`.
    fn exp(self) -> Self;
    /// Principal natural logarithm.
    fn ln(self) -> Self;
    /// `self ^ e` through `exp(e ln self)`.
    fn powc(self, e: Self) -> Self;
    /// The value as a `Complex64` (exact).
    fn to_c64(self) -> num_complex::Complex64;
    /// The `Complex64` rounded to this type.
    fn from_c64(z: num_complex::Complex64) -> Self;
}

/// `ln |z|` of `re + i im`, without the cancellation of `ln(hypot(re, im))` near `|z| = 1`: there
/// it is `ln_1p(|z|² - 1) / 2`, with `|z|² - 1` from a fused multiply-add (exact for `f32` parts,
/// so complex64's logarithm is correctly rounded next to the unit circle).
fn ln_norm(re: f64, im: f64) -> f64 {
    let r2 = re * re + im * im;
    if (0.5..=2.0).contains(&r2) {
        0.5 * (re - 1.0).mul_add(re + 1.0, im * im).ln_1p()
    } else {
        re.hypot(im).ln()
    }
}

macro_rules! impl_cplx {
    ($t:ty, $r:ty) => {
        impl Cplx for $t {
            type Real = $r;
            #[inline(always)]
            fn new(re: $r, im: $r) -> Self {
                Complex::new(re, im)
            }
            #[inline(always)]
            fn re(self) -> $r {
                self.re
            }
            #[inline(always)]
            fn im(self) -> $r {
                self.im
            }
            forward!($t: exp);
            #[inline(always)]
            fn ln(self) -> Self {
                Complex::new(ln_norm(self.re as f64, self.im as f64) as $r, self.im.atan2(self.re))
            }
            #[inline(always)]
            fn conj(self) -> Self {
                Complex::new(self.re, -self.im)
            }
            #[inline(always)]
            fn powc(self, e: Self) -> Self {
                <$t>::powc(self, e)
            }
            #[inline(always)]
            fn to_c64(self) -> num_complex::Complex64 {
                num_complex::Complex64::new(self.re as f64, self.im as f64)
            }
            #[inline(always)]
            fn from_c64(z: num_complex::Complex64) -> Self {
                Complex::new(z.re as $r, z.im as $r)
            }
        }
    };
}

impl_cplx!(Complex32, f32);
impl_cplx!(Complex64, f64);

/// The integer types, with wrapping arithmetic.
pub(crate) trait Int:
    Element
    + Ord
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
    + std::ops::Not<Output = Self>
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// `a + b`, wrapping.
    fn wrapping_add(self, o: Self) -> Self;
    /// `a - b`, wrapping.
    fn wrapping_sub(self, o: Self) -> Self;
    /// `a * b`, wrapping.
    fn wrapping_mul(self, o: Self) -> Self;
    /// `-a`, wrapping.
    fn wrapping_neg(self) -> Self;
    /// `|a|`, wrapping (`MIN` stays `MIN`).
    fn wrapping_abs(self) -> Self;
    /// Truncating division, wrapping (`MIN / -1 = MIN`); `o` must not be 0.
    fn wrapping_div(self, o: Self) -> Self;
    /// Truncating remainder, wrapping (`MIN % -1 = 0`); `o` must not be 0.
    fn wrapping_rem(self, o: Self) -> Self;
    /// `-1`, `0` or `1`.
    fn signum(self) -> Self;
    /// `true` when the value is below zero.
    fn is_negative(self) -> bool;
    /// The low bit (odd numbers give `true`).
    fn is_odd(self) -> bool;
    /// The value as a 64-bit exponent (only called on non-negative values).
    fn as_u64(self) -> u64;
    /// `self << by`; 0 when `by` is negative or at least the width.
    fn shift_left(self, by: Self) -> Self;
    /// `self >> by` (arithmetic for signed types); when `by` is negative or at least the width, 0,
    /// or -1 for a negative `self`.
    fn shift_right(self, by: Self) -> Self;
}

macro_rules! impl_int {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            #[inline(always)]
            fn wrapping_add(self, o: Self) -> Self {
                <$t>::wrapping_add(self, o)
            }
            #[inline(always)]
            fn wrapping_sub(self, o: Self) -> Self {
                <$t>::wrapping_sub(self, o)
            }
            #[inline(always)]
            fn wrapping_mul(self, o: Self) -> Self {
                <$t>::wrapping_mul(self, o)
            }
            #[inline(always)]
            fn wrapping_div(self, o: Self) -> Self {
                <$t>::wrapping_div(self, o)
            }
            #[inline(always)]
            fn wrapping_rem(self, o: Self) -> Self {
                <$t>::wrapping_rem(self, o)
            }
            forward!($t: wrapping_neg);
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn wrapping_abs(self) -> Self {
                if self < 0 { self.wrapping_neg() } else { self }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn signum(self) -> Self {
                if self > 0 { 1 } else if self < 0 { (0 as $t).wrapping_sub(1) } else { 0 }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn is_negative(self) -> bool {
                self < 0
            }
            #[inline(always)]
            fn is_odd(self) -> bool {
                self & 1 == 1
            }
            #[inline(always)]
            fn as_u64(self) -> u64 {
                self as u64
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn shift_left(self, by: Self) -> Self {
                if by < 0 || by as u64 >= <$t>::BITS as u64 { 0 } else { self << by }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn shift_right(self, by: Self) -> Self {
                if by < 0 || by as u64 >= <$t>::BITS as u64 {
                    if self < 0 { !0 } else { 0 }
                } else {
                    self >> by
                }
            }
        }
    )*};
}

nabla_core::for_int_types!(impl_int);
