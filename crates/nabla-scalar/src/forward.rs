//! Forward-mode helpers: derivatives, gradients, Jacobians and Hessians by evaluating a function on
//! dual numbers.
//!
//! Closures cannot be generic, so the function passed in is written for the dual type the helper
//! uses (see each signature); a generic `fn f<S: Scalar>(...)` passed by name fits all of them.

use crate::{Dual, DualN, Scalar};

/// `f'(x)`: one evaluation on [`Dual`]. Nest it for higher derivatives.
///
/// ```
/// use nabla_scalar::{Scalar, derivative};
///
/// fn f<S: Scalar>(x: S) -> S {
///     x.exp() * x.sin()
/// }
/// let x = 0.7_f64;
/// let d1 = derivative(f, x);
/// let d2 = derivative(|y| derivative(f, y), x);
/// assert!((d1 - x.exp() * (x.sin() + x.cos())).abs() < 1e-14);
/// assert!((d2 - 2.0 * x.exp() * x.cos()).abs() < 1e-14);
/// ```
pub fn derivative<T: Scalar, F>(f: F, x: T) -> T
where
    F: Fn(Dual<T>) -> Dual<T>,
{
    f(Dual::variable(x)).deriv()
}

/// The gradient of `f` at `x` in one evaluation on `N`-component duals (`N` = the input size).
///
/// For large inputs prefer [`gradient_chunked`], whose cost per operation does not grow with the
/// input size, or reverse mode ([`Tape`](crate::Tape)).
///
/// ```
/// use nabla_scalar::{Scalar, gradient};
///
/// fn f<S: Scalar>(x: &[S; 2]) -> S {
///     x[0] * x[0] * x[1] + x[1].exp()
/// }
/// assert_eq!(gradient(f, &[3.0, 0.0]), [0.0, 10.0]);
/// ```
pub fn gradient<T: Scalar, const N: usize, F>(f: F, x: &[T; N]) -> [T; N]
where
    F: Fn(&[DualN<T, N>; N]) -> DualN<T, N>,
{
    f(&DualN::variables(*x)).eps
}

/// The gradient of `f` at `x` (any length) by `ceil(len / C)` evaluations on `C`-component duals,
/// each seeding `C` coordinate directions.
///
/// ```
/// use nabla_scalar::{DualN, Scalar, gradient_chunked};
///
/// fn sum_squares<S: Scalar>(x: &[S]) -> S {
///     x.iter().map(|&v| v * v).sum()
/// }
/// let x: Vec<f64> = (0..10).map(f64::from).collect();
/// let g = gradient_chunked::<4, _, _>(sum_squares::<DualN<f64, 4>>, &x);
/// assert_eq!(g, x.iter().map(|v| 2.0 * v).collect::<Vec<_>>());
/// ```
pub fn gradient_chunked<const C: usize, T: Scalar, F>(f: F, x: &[T]) -> Vec<T>
where
    F: Fn(&[DualN<T, C>]) -> DualN<T, C>,
{
    const {
        assert!(
            C > 0,
            "gradient_chunked needs at least one component per dual"
        )
    };
    let mut input: Vec<DualN<T, C>> = x.iter().map(|&v| DualN::constant(v)).collect();
    let mut grad = Vec::with_capacity(x.len());
    for start in (0..x.len()).step_by(C) {
        let end = (start + C).min(x.len());
        for (j, d) in input[start..end].iter_mut().enumerate() {
            d.eps[j] = T::one();
        }
        let out = f(&input);
        grad.extend_from_slice(&out.eps[..end - start]);
        for (j, d) in input[start..end].iter_mut().enumerate() {
            d.eps[j] = T::zero();
        }
    }
    grad
}

/// The `M x N` Jacobian of `f: R^N -> R^M` at `x` in one evaluation on `N`-component duals: row `i`
/// holds the gradient of output `i`.
///
/// ```
/// use nabla_scalar::{Scalar, jacobian};
///
/// // polar to Cartesian
/// fn f<S: Scalar>(p: &[S; 2]) -> [S; 2] {
///     [p[0] * p[1].cos(), p[0] * p[1].sin()]
/// }
/// let j = jacobian(f, &[2.0, 0.0]);
/// assert_eq!(j, [[1.0, 0.0], [0.0, 2.0]]);
/// ```
pub fn jacobian<T: Scalar, const N: usize, const M: usize, F>(f: F, x: &[T; N]) -> [[T; N]; M]
where
    F: Fn(&[DualN<T, N>; N]) -> [DualN<T, N>; M],
{
    f(&DualN::variables(*x)).map(|y| y.eps)
}

/// The `N x N` Hessian of `f` at `x`: the [`jacobian`] of the [`gradient`], by one evaluation on
/// nested duals `DualN<DualN<T, N>, N>` (cost per operation grows as `N^2`; meant for small `N`).
///
/// ```
/// use nabla_scalar::{Scalar, hessian};
///
/// fn f<S: Scalar>(x: &[S; 2]) -> S {
///     x[0] * x[0] * x[1] + x[1].powi(3)
/// }
/// // [[2y, 2x], [2x, 6y]] at (1, 2)
/// assert_eq!(hessian(f, &[1.0, 2.0]), [[4.0, 2.0], [2.0, 12.0]]);
/// ```
pub fn hessian<T: Scalar, const N: usize, F>(f: F, x: &[T; N]) -> [[T; N]; N]
where
    F: Fn(&[DualN<DualN<T, N>, N>; N]) -> DualN<DualN<T, N>, N>,
{
    jacobian(|y: &[DualN<T, N>; N]| gradient(&f, y), x)
}
