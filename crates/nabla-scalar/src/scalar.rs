//! The [`Scalar`] trait: the number interface that plain floats, dual numbers and tape variables share,
//! so one generic function runs on all of them.

use core::fmt::Debug;
use core::iter::Sum;
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// A real number that generic numerical code can be written against.
///
/// Implemented for `f32`, `f64`, [`DualN`](crate::DualN) (and so [`Dual`](crate::Dual), nested to any
/// depth) and the tape variable [`Var`](crate::Var). Comparisons (`PartialEq`, `PartialOrd`) compare
/// values only, so branches in generic code take the same path for every implementation.
///
/// Constants enter generic code through [`Scalar::from_f64`]; the concrete types also mix with plain
/// `f64` directly (`2.0 * x`, `x + 1.0`), which `f32` cannot, so generic code writes
/// `S::from_f64(2.0) * x` or `x.mul_f64(2.0)`.
///
/// ```
/// use nabla_scalar::{Dual, Scalar};
///
/// fn f<S: Scalar>(x: S) -> S {
///     x.sin() * x + S::from_f64(1.0)
/// }
/// let plain = f(0.5_f64);
/// let dual = f(Dual::variable(0.5_f64));
/// assert_eq!(dual.value(), plain);
/// assert!((dual.deriv() - (0.5_f64.cos() * 0.5 + 0.5_f64.sin())).abs() < 1e-15);
/// ```
pub trait Scalar:
    Copy
    + Debug
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Sum
{
    /// The constant `c` (a dual number with zero tangent, a tape variable that is not recorded).
    fn from_f64(c: f64) -> Self;
    /// The innermost plain value as `f64` (the primal of a dual number, nested or not).
    fn to_f64(self) -> f64;

    /// Zero.
    fn zero() -> Self {
        Self::from_f64(0.0)
    }
    /// One.
    fn one() -> Self {
        Self::from_f64(1.0)
    }
    /// `self + c`, cheaper than `self + Self::from_f64(c)` for dual numbers and tape variables.
    fn add_f64(self, c: f64) -> Self {
        self + Self::from_f64(c)
    }
    /// `self * c`, cheaper than `self * Self::from_f64(c)` for dual numbers and tape variables.
    fn mul_f64(self, c: f64) -> Self {
        self * Self::from_f64(c)
    }
    /// `self / c`, cheaper than `self / Self::from_f64(c)` for dual numbers and tape variables.
    fn div_f64(self, c: f64) -> Self {
        self / Self::from_f64(c)
    }

    /// `e^self`.
    fn exp(self) -> Self;
    /// The natural logarithm.
    fn ln(self) -> Self;
    /// `ln(1 + self)`, accurate near zero.
    fn log1p(self) -> Self;
    /// The square root.
    fn sqrt(self) -> Self;
    /// `self^n` for an integer `n`.
    fn powi(self, n: i32) -> Self;
    /// `self^e`. The partial derivative in `e` is taken as zero where `self <= 0`, where `self^e` is
    /// not differentiable in `e`, so that a constant exponent never turns a derivative into NaN.
    fn powf(self, e: Self) -> Self;
    /// The sine.
    fn sin(self) -> Self;
    /// The cosine.
    fn cos(self) -> Self;
    /// The tangent.
    fn tan(self) -> Self;
    /// The arcsine.
    fn asin(self) -> Self;
    /// The arccosine.
    fn acos(self) -> Self;
    /// The arctangent.
    fn atan(self) -> Self;
    /// The four-quadrant arctangent of `self / x` (`self` is `y`).
    fn atan2(self, x: Self) -> Self;
    /// The hyperbolic sine.
    fn sinh(self) -> Self;
    /// The hyperbolic cosine.
    fn cosh(self) -> Self;
    /// The hyperbolic tangent.
    fn tanh(self) -> Self;
    /// The absolute value. Its derivative is 1 at 0 (at `-0.0` too), as JAX and the tensor tier
    /// take it: `sign(x)` for `x != 0`.
    fn abs(self) -> Self;
    /// NumPy's sign: 1 above 0, -1 below, 0 at both zeros and NaN for NaN (unlike `f64::signum`,
    /// which is ±1 at ±0). Piecewise constant: the derivative is 0 everywhere, as in JAX and the
    /// tensor tier.
    fn sign(self) -> Self;
    /// The rectified linear unit `max(self, 0)`, computed as `self <= 0 ? 0 : self`. The derivative
    /// at 0 is 0, as `jax.nn.relu` and the tensor tier's `relu` take it (not the one-half that the tie
    /// rule of [`Scalar::max`] would give); NaN stays NaN, with derivative 1.
    fn relu(self) -> Self;
    /// The smaller value (`self` on a tie). The derivative follows the smaller argument; on a tie
    /// (`self == other`) it is split evenly, one half to each argument, as JAX and the tensor tier
    /// split it.
    fn min(self, other: Self) -> Self;
    /// The larger value (`self` on a tie). The derivative follows the larger argument; on a tie
    /// (`self == other`) it is split evenly, one half to each argument, as JAX and the tensor tier
    /// split it.
    fn max(self, other: Self) -> Self;
    /// `self` clamped into `[lo, hi]`: `self.max(lo).min(hi)`, as the tensor tier's `clamp` (and
    /// `jnp.clip`) compose it, so the derivative at a bound is the one-half of the tie rules of
    /// [`Scalar::max`] and [`Scalar::min`] (with `lo < hi`: 1/2 at `lo` and at `hi`, 1 between, 0
    /// outside), and `lo` and `hi` receive the rest when they are variables. With `lo > hi` the
    /// result is `hi`, as in the tensor tier (method syntax on a plain `f64` picks the inherent
    /// `f64::clamp`, which panics there instead).
    fn clamp(self, lo: Self, hi: Self) -> Self {
        self.max(lo).min(hi)
    }
    /// `sqrt(self^2 + other^2)` without overflow (derivative 0 at the origin).
    fn hypot(self, other: Self) -> Self;
}

/// Implements [`Scalar`] for a primitive float by forwarding to its inherent methods.
macro_rules! impl_float_scalar {
    ($t:ty) => {
        impl Scalar for $t {
            #[inline]
            fn from_f64(c: f64) -> Self {
                c as $t
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn add_f64(self, c: f64) -> Self {
                self + c as $t
            }
            #[inline]
            fn mul_f64(self, c: f64) -> Self {
                self * c as $t
            }
            #[inline]
            fn div_f64(self, c: f64) -> Self {
                self / c as $t
            }
            #[inline]
            fn powi(self, n: i32) -> Self {
                <$t>::powi(self, n)
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn log1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            #[inline]
            fn sign(self) -> Self {
                crate::rules::sign(self).0
            }
            #[inline]
            fn relu(self) -> Self {
                crate::rules::relu(self).0
            }
            #[inline]
            fn min(self, other: Self) -> Self {
                if other < self { other } else { self }
            }
            #[inline]
            fn max(self, other: Self) -> Self {
                if other > self { other } else { self }
            }
            impl_float_scalar!(@unary $t: exp ln sqrt sin cos tan asin acos atan sinh cosh tanh);
            impl_float_scalar!(@binary $t: powf atan2 hypot);
        }
    };
    (@unary $t:ty: $($f:ident)*) => {
        $(
            #[inline]
            fn $f(self) -> Self {
                <$t>::$f(self)
            }
        )*
    };
    (@binary $t:ty: $($f:ident)*) => {
        $(
            #[inline]
            fn $f(self, other: Self) -> Self {
                <$t>::$f(self, other)
            }
        )*
    };
}

impl_float_scalar!(f32);
impl_float_scalar!(f64);
