//! LU factorization with partial pivoting of a small square matrix.

use super::{Matrix, Vector};
use crate::{Error, Result, Scalar};

/// The factorization `P A = L U` of an `N x N` matrix: unit lower-triangular `L` and upper-triangular
/// `U` packed in one matrix, and the row permutation `P`.
///
/// Pivots are chosen by magnitude of value, so with dual numbers or tape variables the factorization
/// takes the same steps as on plain numbers and its derivatives are those of the solve.
///
/// ```
/// use nabla_scalar::{Matrix, Vector};
///
/// let lu = Matrix::new([[0.0, 2.0], [3.0, 1.0]]).lu()?;
/// assert_eq!(lu.determinant(), -6.0);
/// assert_eq!(lu.solve(&Vector::new([2.0, 4.0])), Vector::new([1.0, 1.0]));
/// # Ok::<(), nabla_scalar::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Lu<T, const N: usize> {
    packed: Matrix<T, N, N>,
    perm: [usize; N],
    odd_swaps: bool,
    /// The smallest pivot magnitude and its column.
    smallest_pivot: (f64, usize),
}

impl<T: Scalar, const N: usize> Lu<T, N> {
    /// Factors `a`, failing when a pivot is below `N * f64::EPSILON * max |a_ij|`; `op` names the
    /// caller in the error.
    pub(crate) fn new(a: &Matrix<T, N, N>, op: &'static str) -> Result<Self> {
        let lu = Self::factor(a);
        let scale =
            a.0.iter()
                .flatten()
                .fold(0.0_f64, |m, v| m.max(v.to_f64().abs()));
        let tolerance = N as f64 * f64::EPSILON * scale;
        let (pivot, column) = lu.smallest_pivot;
        if pivot <= tolerance || pivot.is_nan() {
            return Err(Error::Singular {
                op,
                n: N,
                column,
                pivot,
                tolerance,
            });
        }
        Ok(lu)
    }

    /// Gaussian elimination with partial pivoting, skipping columns with an exactly zero pivot.
    pub(crate) fn factor(a: &Matrix<T, N, N>) -> Self {
        let mut m = *a;
        let mut perm: [usize; N] = core::array::from_fn(|i| i);
        let mut odd_swaps = false;
        let mut smallest_pivot = (f64::INFINITY, 0);
        for k in 0..N {
            let mut p = k;
            for i in k + 1..N {
                if m.0[i][k].abs() > m.0[p][k].abs() {
                    p = i;
                }
            }
            if p != k {
                m.0.swap(p, k);
                perm.swap(p, k);
                odd_swaps = !odd_swaps;
            }
            let pivot = m.0[k][k];
            let magnitude = pivot.to_f64().abs();
            if magnitude.is_nan() || magnitude < smallest_pivot.0 {
                smallest_pivot = (magnitude, k);
            }
            if pivot == T::zero() {
                continue;
            }
            for i in k + 1..N {
                let l = m.0[i][k] / pivot;
                m.0[i][k] = l;
                for j in k + 1..N {
                    let u = m.0[k][j];
                    m.0[i][j] -= l * u;
                }
            }
        }
        Lu {
            packed: m,
            perm,
            odd_swaps,
            smallest_pivot,
        }
    }

    /// The solution of `A x = b`.
    pub fn solve(&self, b: &Vector<T, N>) -> Vector<T, N> {
        let m = &self.packed.0;
        let mut x = Vector::from_fn(|i| b[self.perm[i]]);
        for i in 0..N {
            for j in 0..i {
                let l = m[i][j];
                let xj = x[j];
                x[i] -= l * xj;
            }
        }
        for i in (0..N).rev() {
            for j in i + 1..N {
                let u = m[i][j];
                let xj = x[j];
                x[i] -= u * xj;
            }
            x[i] /= m[i][i];
        }
        x
    }

    /// The determinant of `A`: the product of the pivots, signed by the permutation.
    pub fn determinant(&self) -> T {
        let mut det = T::one();
        for i in 0..N {
            det *= self.packed.0[i][i];
        }
        if self.odd_swaps { -det } else { det }
    }
}
