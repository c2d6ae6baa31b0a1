//! Forward mode: dual numbers with `N` tangent components, generic over the primal [`Scalar`] so they
//! nest (`Dual<Dual<f64>>` carries second derivatives).

use core::ops::{Add, Div, Mul, Neg, Sub};

use crate::Scalar;
use crate::mixed::mixed_and_assign_ops;
use crate::rules::{self, Binary, Unary, scalar_functions_from_rules};

/// A dual number `val + Σ eps[i] ε_i` with `N` tangent directions (`ε_i ε_j = 0`).
///
/// `N` is a const generic, so the type is `Copy`, lives on the stack and costs no allocation: one
/// evaluation of a function on `DualN<T, N>` yields its value and `N` directional derivatives. The
/// gradient of a function of `n` inputs takes `ceil(n / N)` such passes
/// ([`gradient_chunked`](crate::gradient_chunked)); choose `N` between 4 and 16 for large `n`, or
/// `N = n` for small inputs ([`gradient`](crate::gradient)).
///
/// The primal `T` is any [`Scalar`], including another dual number: `DualN<DualN<f64, N>, N>` gives
/// Hessians ([`hessian`](crate::hessian)) and `Dual<Dual<Dual<f64>>>` third derivatives.
///
/// ```
/// use nabla_scalar::{DualN, Scalar};
///
/// // f(x, y) = x * y + sin(x) at (1, 2): both partials in one pass.
/// let [x, y] = DualN::<f64, 2>::variables([1.0, 2.0]);
/// let f = x * y + x.sin();
/// assert_eq!(f.eps, [2.0 + 1.0_f64.cos(), 1.0]);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct DualN<T, const N: usize> {
    /// The primal value.
    pub val: T,
    /// The tangent components: the derivatives of the value along the `N` seeded directions.
    pub eps: [T; N],
}

/// A dual number with one tangent: `Dual::variable(x)` seeds `dx = 1`, and
/// [`deriv`](DualN::deriv) reads the derivative back.
///
/// ```
/// use nabla_scalar::{Dual, Scalar};
///
/// let x = Dual::variable(2.0);
/// let y = 3.0 * x.powi(2) + 1.0; // 3x^2 + 1
/// assert_eq!((y.value(), y.deriv()), (13.0, 12.0));
///
/// // Nested: the second derivative of x^5 at 2 is 20 * 2^3.
/// let x = Dual::new(Dual::variable(2.0), Dual::from_f64(1.0));
/// let y = x.powi(5);
/// assert_eq!(y.deriv().deriv(), 160.0);
/// ```
pub type Dual<T> = DualN<T, 1>;

impl<T: Scalar> DualN<T, 1> {
    /// The dual number `val + d ε`.
    #[inline]
    pub fn new(val: T, d: T) -> Self {
        DualN { val, eps: [d] }
    }

    /// An independent variable: `x + 1 ε`.
    #[inline]
    pub fn variable(x: T) -> Self {
        Self::new(x, T::one())
    }

    /// The derivative (the single tangent component).
    #[inline]
    pub fn deriv(&self) -> T {
        self.eps[0]
    }
}

impl<T: Scalar, const N: usize> DualN<T, N> {
    /// The dual number with value `val` and tangents `eps`.
    #[inline]
    pub fn from_parts(val: T, eps: [T; N]) -> Self {
        DualN { val, eps }
    }

    /// A constant: zero tangents.
    #[inline]
    pub fn constant(val: T) -> Self {
        DualN {
            val,
            eps: [T::zero(); N],
        }
    }

    /// The `i`-th coordinate variable: tangent 1 in direction `i`, 0 elsewhere (a constant when
    /// `i >= N`).
    #[inline]
    pub fn seeded(val: T, i: usize) -> Self {
        let mut d = Self::constant(val);
        if let Some(e) = d.eps.get_mut(i) {
            *e = T::one();
        }
        d
    }

    /// `N` independent variables, one per direction: `values[i]` seeded in direction `i`.
    pub fn variables(values: [T; N]) -> [Self; N] {
        core::array::from_fn(|i| Self::seeded(values[i], i))
    }

    /// The primal value.
    #[inline]
    pub fn value(&self) -> T {
        self.val
    }

    /// The primal, for the derivative rules.
    #[inline]
    fn primal(self) -> T {
        self.val
    }

    /// Applies a unary rule: value `f`, tangents scaled by `df`.
    #[inline]
    fn chain1(self, (f, df): Unary<T>) -> Self {
        DualN {
            val: f,
            eps: self.eps.map(|e| e * df),
        }
    }

    /// Applies a binary rule: value `f`, tangents `da * eps_a + db * eps_b`.
    #[inline]
    fn chain2(self, other: Self, (f, da, db): Binary<T>) -> Self {
        DualN {
            val: f,
            eps: core::array::from_fn(|i| self.eps[i] * da + other.eps[i] * db),
        }
    }
}

impl<T: Scalar, const N: usize> Scalar for DualN<T, N> {
    #[inline]
    fn from_f64(c: f64) -> Self {
        Self::constant(T::from_f64(c))
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self.val.to_f64()
    }
    #[inline]
    fn add_f64(self, c: f64) -> Self {
        DualN {
            val: self.val.add_f64(c),
            eps: self.eps,
        }
    }
    #[inline]
    fn mul_f64(self, c: f64) -> Self {
        DualN {
            val: self.val.mul_f64(c),
            eps: self.eps.map(|e| e.mul_f64(c)),
        }
    }
    #[inline]
    fn div_f64(self, c: f64) -> Self {
        DualN {
            val: self.val.div_f64(c),
            eps: self.eps.map(|e| e.div_f64(c)),
        }
    }
    scalar_functions_from_rules!();
}

impl<T: Scalar, const N: usize> Add for DualN<T, N> {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        DualN {
            val: self.val + o.val,
            eps: core::array::from_fn(|i| self.eps[i] + o.eps[i]),
        }
    }
}

impl<T: Scalar, const N: usize> Sub for DualN<T, N> {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        DualN {
            val: self.val - o.val,
            eps: core::array::from_fn(|i| self.eps[i] - o.eps[i]),
        }
    }
}

impl<T: Scalar, const N: usize> Mul for DualN<T, N> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        self.chain2(o, rules::mul(self.val, o.val))
    }
}

impl<T: Scalar, const N: usize> Div for DualN<T, N> {
    type Output = Self;
    #[inline]
    fn div(self, o: Self) -> Self {
        self.chain2(o, rules::div(self.val, o.val))
    }
}

impl<T: Scalar, const N: usize> Neg for DualN<T, N> {
    type Output = Self;
    #[inline]
    fn neg(self) -> Self {
        DualN {
            val: -self.val,
            eps: self.eps.map(|e| -e),
        }
    }
}

/// Equality of values only, like every comparison of [`Scalar`]s.
impl<T: Scalar, const N: usize> PartialEq for DualN<T, N> {
    #[inline]
    fn eq(&self, o: &Self) -> bool {
        self.val == o.val
    }
}

/// Order of values only, so branches take the same path as on plain numbers.
impl<T: Scalar, const N: usize> PartialOrd for DualN<T, N> {
    #[inline]
    fn partial_cmp(&self, o: &Self) -> Option<core::cmp::Ordering> {
        self.val.partial_cmp(&o.val)
    }
}

mixed_and_assign_ops!([T: Scalar, const N: usize] DualN<T, N>);
