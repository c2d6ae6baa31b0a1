//! `Matrix<T, M, N>`: an `M x N` matrix stored by rows, with products whose shapes the compiler checks.

use core::ops::{Index, IndexMut, Mul};

use super::{Lu, Vector, elementwise_ops};
use crate::{Result, Scalar};

/// An `M x N` matrix of scalars stored inline by rows (`Copy` when `T` is).
///
/// ```
/// use nabla_scalar::{Matrix, Vector};
///
/// let a = Matrix::new([[2.0, 1.0], [1.0, 3.0]]);
/// let x = a.solve(&Vector::new([3.0, 5.0]))?;
/// assert!((x - Vector::new([0.8, 1.4])).norm() < 1e-15);
/// assert_eq!((a * a.transpose())[(0, 1)], 5.0);
/// # Ok::<(), nabla_scalar::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Matrix<T, const M: usize, const N: usize>(pub [[T; N]; M]);

impl<T: Scalar, const M: usize, const N: usize> Matrix<T, M, N> {
    /// The matrix with rows `rows`.
    pub fn new(rows: [[T; N]; M]) -> Self {
        Matrix(rows)
    }

    /// The zero matrix.
    pub fn zeros() -> Self {
        Matrix([[T::zero(); N]; M])
    }

    /// The matrix with entry `(i, j)` equal to `f(i, j)`.
    pub fn from_fn(mut f: impl FnMut(usize, usize) -> T) -> Self {
        Matrix(core::array::from_fn(|i| core::array::from_fn(|j| f(i, j))))
    }

    /// The rows.
    pub fn rows(&self) -> &[[T; N]; M] {
        &self.0
    }

    /// Row `i` as a vector.
    pub fn row(&self, i: usize) -> Vector<T, N> {
        Vector(self.0[i])
    }

    /// Column `j` as a vector.
    pub fn col(&self, j: usize) -> Vector<T, M> {
        Vector::from_fn(|i| self.0[i][j])
    }

    /// `f` applied to every entry.
    pub fn map<U>(&self, mut f: impl FnMut(T) -> U) -> Matrix<U, M, N> {
        Matrix(self.0.map(|row| row.map(&mut f)))
    }

    /// `f` applied to matching entries of `self` and `o`.
    pub fn zip_map(&self, o: &Self, mut f: impl FnMut(T, T) -> T) -> Self {
        Self::from_fn(|i, j| f(self.0[i][j], o.0[i][j]))
    }

    /// `self * s`.
    pub fn scale(&self, s: T) -> Self {
        self.map(|a| a * s)
    }

    /// The `N x M` transpose.
    pub fn transpose(&self) -> Matrix<T, N, M> {
        Matrix::from_fn(|i, j| self.0[j][i])
    }

    /// The product `self * o` of an `M x N` and an `N x P` matrix.
    pub fn matmul<const P: usize>(&self, o: &Matrix<T, N, P>) -> Matrix<T, M, P> {
        let mut out = Matrix::<T, M, P>::zeros();
        for i in 0..M {
            for k in 0..N {
                let a = self.0[i][k];
                for j in 0..P {
                    out.0[i][j] += a * o.0[k][j];
                }
            }
        }
        out
    }

    /// The product `self * v` with an `N`-vector.
    pub fn matvec(&self, v: &Vector<T, N>) -> Vector<T, M> {
        Vector::from_fn(|i| self.row(i).dot(v))
    }
}

impl<T: Scalar, const N: usize> Matrix<T, N, N> {
    /// The identity matrix.
    pub fn identity() -> Self {
        Self::from_fn(|i, j| if i == j { T::one() } else { T::zero() })
    }

    /// The sum of the diagonal.
    pub fn trace(&self) -> T {
        (0..N).map(|i| self.0[i][i]).sum()
    }

    /// The LU factorization with partial pivoting.
    ///
    /// # Errors
    /// [`Error::Singular`](crate::Error::Singular) when the matrix is singular to working precision.
    pub fn lu(&self) -> Result<Lu<T, N>> {
        Lu::new(self, "lu")
    }

    /// The solution `x` of `self * x = b`, by LU with partial pivoting.
    ///
    /// # Errors
    /// [`Error::Singular`](crate::Error::Singular) when the matrix is singular to working precision.
    pub fn solve(&self, b: &Vector<T, N>) -> Result<Vector<T, N>> {
        Ok(Lu::new(self, "solve")?.solve(b))
    }

    /// The inverse, by LU with partial pivoting.
    ///
    /// # Errors
    /// [`Error::Singular`](crate::Error::Singular) when the matrix is singular to working precision.
    pub fn inverse(&self) -> Result<Self> {
        let lu = Lu::new(self, "inverse")?;
        let cols: [Vector<T, N>; N] = core::array::from_fn(|j| lu.solve(&Vector::unit(j)));
        Ok(Self::from_fn(|i, j| cols[j][i]))
    }

    /// The determinant (exactly 0 only where elimination meets an exactly zero column; a matrix that is
    /// singular to working precision can have a tiny nonzero determinant).
    pub fn determinant(&self) -> T {
        Lu::factor(self).determinant()
    }
}

impl<T, const M: usize, const N: usize> From<[[T; N]; M]> for Matrix<T, M, N> {
    fn from(rows: [[T; N]; M]) -> Self {
        Matrix(rows)
    }
}

impl<T, const M: usize, const N: usize> Index<(usize, usize)> for Matrix<T, M, N> {
    type Output = T;
    fn index(&self, (i, j): (usize, usize)) -> &T {
        &self.0[i][j]
    }
}

impl<T, const M: usize, const N: usize> IndexMut<(usize, usize)> for Matrix<T, M, N> {
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut T {
        &mut self.0[i][j]
    }
}

impl<T: Scalar, const M: usize, const N: usize, const P: usize> Mul<Matrix<T, N, P>>
    for Matrix<T, M, N>
{
    type Output = Matrix<T, M, P>;
    fn mul(self, o: Matrix<T, N, P>) -> Matrix<T, M, P> {
        self.matmul(&o)
    }
}

impl<T: Scalar, const M: usize, const N: usize> Mul<Vector<T, N>> for Matrix<T, M, N> {
    type Output = Vector<T, M>;
    fn mul(self, v: Vector<T, N>) -> Vector<T, M> {
        self.matvec(&v)
    }
}

elementwise_ops!(Matrix<M, N>);
