//! `Vector<T, N>`: a column vector of `N` scalars.

use core::ops::{Index, IndexMut};

use super::elementwise_ops;
use crate::Scalar;

/// A column vector of `N` scalars, stored inline (`Copy` when `T` is).
///
/// ```
/// use nabla_scalar::Vector;
///
/// let v = Vector::new([3.0, 4.0]);
/// assert_eq!(v.norm(), 5.0);
/// assert_eq!((v + v * 2.0)[1], 12.0);
/// assert_eq!(v.dot(&Vector::new([1.0, 1.0])), 7.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Vector<T, const N: usize>(pub [T; N]);

impl<T: Scalar, const N: usize> Vector<T, N> {
    /// The vector with components `data`.
    pub fn new(data: [T; N]) -> Self {
        Vector(data)
    }

    /// The zero vector.
    pub fn zeros() -> Self {
        Vector([T::zero(); N])
    }

    /// The vector with component `i` equal to `f(i)`.
    pub fn from_fn(f: impl FnMut(usize) -> T) -> Self {
        Vector(core::array::from_fn(f))
    }

    /// The `i`-th unit vector (zero when `i >= N`).
    pub fn unit(i: usize) -> Self {
        Self::from_fn(|k| if k == i { T::one() } else { T::zero() })
    }

    /// The components.
    pub fn as_array(&self) -> &[T; N] {
        &self.0
    }

    /// The components, by value.
    pub fn into_array(self) -> [T; N] {
        self.0
    }

    /// `f` applied to every component.
    pub fn map<U>(&self, f: impl FnMut(T) -> U) -> Vector<U, N> {
        Vector(self.0.map(f))
    }

    /// `f` applied to matching components of `self` and `o`.
    pub fn zip_map(&self, o: &Self, mut f: impl FnMut(T, T) -> T) -> Self {
        Self::from_fn(|i| f(self.0[i], o.0[i]))
    }

    /// `self * s`.
    pub fn scale(&self, s: T) -> Self {
        self.map(|a| a * s)
    }

    /// The inner product `Σ self_i o_i`.
    pub fn dot(&self, o: &Self) -> T {
        let mut acc = T::zero();
        for i in 0..N {
            acc += self.0[i] * o.0[i];
        }
        acc
    }

    /// The sum of the components.
    pub fn sum(&self) -> T {
        self.0.iter().copied().sum()
    }

    /// `self · self`.
    pub fn norm_squared(&self) -> T {
        self.dot(self)
    }

    /// The Euclidean norm (its derivative is not defined at the zero vector).
    pub fn norm(&self) -> T {
        self.norm_squared().sqrt()
    }
}

impl<T, const N: usize> From<[T; N]> for Vector<T, N> {
    fn from(data: [T; N]) -> Self {
        Vector(data)
    }
}

impl<T, const N: usize> Index<usize> for Vector<T, N> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        &self.0[i]
    }
}

impl<T, const N: usize> IndexMut<usize> for Vector<T, N> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.0[i]
    }
}

elementwise_ops!(Vector<N>);
