//! Derivative rules, written once: each returns the value of an elementary function at a primal point
//! together with its partial derivatives there. Dual numbers multiply their tangents by the partials,
//! the tape stores them on the node, so forward and reverse mode cannot disagree on a rule.
//!
//! The primal type is any [`Scalar`], so the rules hold at every nesting depth of dual numbers.

use crate::Scalar;

/// A unary function's value and derivative.
pub(crate) type Unary<T> = (T, T);
/// A binary function's value and its partials in the first and second argument.
pub(crate) type Binary<T> = (T, T, T);

/// Generates `fn name<T: Scalar>(v: T) -> Unary<T>` from a derivative expression in `v` and the value
/// `f`.
macro_rules! unary_rules {
    ($($name:ident: |$v:ident, $f:ident| $df:expr;)*) => {
        $(
            #[inline]
            pub(crate) fn $name<T: Scalar>($v: T) -> Unary<T> {
                let $f = $v.$name();
                let _ = &$f;
                ($f, $df)
            }
        )*
    };
}

unary_rules! {
    exp: |v, f| f;
    ln: |v, f| v.powi(-1);
    log1p: |v, f| v.add_f64(1.0).powi(-1);
    sqrt: |v, f| f.mul_f64(2.0).powi(-1);
    sin: |v, f| v.cos();
    cos: |v, f| -v.sin();
    tan: |v, f| (f * f).add_f64(1.0);
    asin: |v, f| (-(v * v)).add_f64(1.0).sqrt().powi(-1);
    acos: |v, f| -((-(v * v)).add_f64(1.0).sqrt().powi(-1));
    atan: |v, f| (v * v).add_f64(1.0).powi(-1);
    sinh: |v, f| v.cosh();
    cosh: |v, f| v.sinh();
    tanh: |v, f| (-(f * f)).add_f64(1.0);
}

/// `|v|`, with derivative 1 for `v >= 0` (so 1 at both zeros, as JAX and the tensor tier take it)
/// and -1 below (and for NaN, where the tensor tier's `v >= 0` test is false too).
#[inline]
pub(crate) fn abs<T: Scalar>(v: T) -> Unary<T> {
    let d = if v >= T::zero() { T::one() } else { -T::one() };
    (v.abs(), d)
}

/// NumPy's `sign(v)`: 1 above 0, -1 below, 0 at both zeros, NaN for NaN; piecewise constant, so the
/// derivative is 0 everywhere (as JAX and the tensor tier).
#[inline]
pub(crate) fn sign<T: Scalar>(v: T) -> Unary<T> {
    let x = v.to_f64();
    let s = if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else if x == 0.0 {
        0.0
    } else {
        x
    };
    (T::from_f64(s), T::zero())
}

/// `relu(v) = v <= 0 ? 0 : v`, with derivative 0 for `v <= 0` (so 0 at the kink, as `jax.nn.relu`
/// and the tensor tier, not the one-half of `max`'s tie rule) and 1 above (and for NaN, which stays
/// NaN).
#[inline]
pub(crate) fn relu<T: Scalar>(v: T) -> Unary<T> {
    if v <= T::zero() {
        (T::zero(), T::zero())
    } else {
        (v, T::one())
    }
}

/// `v^n`; the derivative of `v^0` is 0 everywhere (no `0 * inf` at 0).
#[inline]
pub(crate) fn powi<T: Scalar>(v: T, n: i32) -> Unary<T> {
    if n == 0 {
        return (T::one(), T::zero());
    }
    (v.powi(n), v.powi(n - 1).mul_f64(f64::from(n)))
}

/// `a * b`.
#[inline]
pub(crate) fn mul<T: Scalar>(a: T, b: T) -> Binary<T> {
    (a * b, b, a)
}

/// `a / b`.
#[inline]
pub(crate) fn div<T: Scalar>(a: T, b: T) -> Binary<T> {
    let q = a / b;
    let inv = b.powi(-1);
    (q, inv, -(q * inv))
}

/// `a^b`; the partial in `b` is 0 where `a <= 0` (see [`Scalar::powf`]).
#[inline]
pub(crate) fn powf<T: Scalar>(a: T, b: T) -> Binary<T> {
    let f = a.powf(b);
    let da = if b == T::zero() {
        T::zero()
    } else {
        b * a.powf(b.add_f64(-1.0))
    };
    let db = if a > T::zero() { f * a.ln() } else { T::zero() };
    (f, da, db)
}

/// `atan2(y, x)`.
#[inline]
pub(crate) fn atan2<T: Scalar>(y: T, x: T) -> Binary<T> {
    let r2 = x * x + y * y;
    if r2 == T::zero() {
        return (y.atan2(x), T::zero(), T::zero());
    }
    let inv = r2.powi(-1);
    (y.atan2(x), x * inv, -(y * inv))
}

/// `hypot(a, b)`, with zero partials at the origin.
#[inline]
pub(crate) fn hypot<T: Scalar>(a: T, b: T) -> Binary<T> {
    let h = a.hypot(b);
    if h == T::zero() {
        return (h, T::zero(), T::zero());
    }
    let inv = h.powi(-1);
    (h, a * inv, b * inv)
}

/// `min(a, b)`: the derivative follows the chosen argument; a tie (`a == b`) splits it evenly,
/// one half to each argument (as JAX and the tensor tier).
#[inline]
pub(crate) fn min<T: Scalar>(a: T, b: T) -> Binary<T> {
    if a == b {
        let half = T::from_f64(0.5);
        (a, half, half)
    } else if b < a {
        (b, T::zero(), T::one())
    } else {
        (a, T::one(), T::zero())
    }
}

/// `max(a, b)`: the derivative follows the chosen argument; a tie (`a == b`) splits it evenly,
/// one half to each argument (as JAX and the tensor tier).
#[inline]
pub(crate) fn max<T: Scalar>(a: T, b: T) -> Binary<T> {
    if a == b {
        let half = T::from_f64(0.5);
        (a, half, half)
    } else if b > a {
        (b, T::zero(), T::one())
    } else {
        (a, T::one(), T::zero())
    }
}

/// Writes the elementary-function methods of a [`Scalar`] implementation from the rules above, given
/// the type's inherent `chain1(self, rule)` and `chain2(self, other, rule)` and `primal(self)`.
macro_rules! scalar_functions_from_rules {
    () => {
        #[inline]
        fn powi(self, n: i32) -> Self {
            self.chain1($crate::rules::powi(self.primal(), n))
        }
        #[inline]
        fn abs(self) -> Self {
            self.chain1($crate::rules::abs(self.primal()))
        }
        scalar_functions_from_rules!(@unary exp ln log1p sqrt sin cos tan asin acos atan sinh cosh tanh sign relu);
        scalar_functions_from_rules!(@binary powf atan2 hypot min max);
    };
    (@unary $($f:ident)*) => {
        $(
            #[inline]
            fn $f(self) -> Self {
                self.chain1($crate::rules::$f(self.primal()))
            }
        )*
    };
    (@binary $($f:ident)*) => {
        $(
            #[inline]
            fn $f(self, other: Self) -> Self {
                self.chain2(other, $crate::rules::$f(self.primal(), other.primal()))
            }
        )*
    };
}
pub(crate) use scalar_functions_from_rules;
