//! Static shapes: [`Vector<T, N>`] and [`Matrix<T, M, N>`] with their sizes in the type, generic over
//! [`Scalar`](crate::Scalar) so the same linear algebra runs on `f64`, dual numbers and tape variables.
//!
//! Sizes are const generics, so shapes are checked by the compiler: multiplying a `2x3` matrix by a
//! `2x3` matrix does not compile.
//!
//! ```compile_fail,E0277
//! use nabla_scalar::Matrix;
//!
//! let a = Matrix::<f64, 2, 3>::zeros();
//! let b = Matrix::<f64, 2, 3>::zeros();
//! let _ = a * b; // needs a 3xP right-hand side
//! ```
//!
//! ```compile_fail,E0308
//! use nabla_scalar::{Matrix, Vector};
//!
//! let a = Matrix::<f64, 2, 2>::identity();
//! let v = Vector::<f64, 3>::zeros();
//! let _ = a.solve(&v); // a 2x2 system needs a 2-vector
//! ```

mod lu;
mod matrix;
mod vector;

pub use lu::Lu;
pub use matrix::Matrix;
pub use vector::Vector;

/// Implements `+`, `-` (binary and unary) and scaling by `T` for an array-backed shape type, elementwise
/// through its `map` and `zip_map`.
macro_rules! elementwise_ops {
    ($t:ident<$($c:ident),+>) => {
        impl<T: $crate::Scalar, $(const $c: usize),+> core::ops::Add for $t<T, $($c),+> {
            type Output = Self;
            fn add(self, o: Self) -> Self {
                self.zip_map(&o, |a, b| a + b)
            }
        }
        impl<T: $crate::Scalar, $(const $c: usize),+> core::ops::Sub for $t<T, $($c),+> {
            type Output = Self;
            fn sub(self, o: Self) -> Self {
                self.zip_map(&o, |a, b| a - b)
            }
        }
        impl<T: $crate::Scalar, $(const $c: usize),+> core::ops::Neg for $t<T, $($c),+> {
            type Output = Self;
            fn neg(self) -> Self {
                self.map(|a| -a)
            }
        }
        impl<T: $crate::Scalar, $(const $c: usize),+> core::ops::Mul<T> for $t<T, $($c),+> {
            type Output = Self;
            fn mul(self, s: T) -> Self {
                self.map(|a| a * s)
            }
        }
    };
}
use elementwise_ops;
