//! Operator overloading. Operators return `Result<Tensor>` because shapes and dtypes are checked at run
//! time: write `(&a + &b)?`. A number on either side adopts the tensor's dtype.
//!
//! ```
//! # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
//! let x = Tensor::from_vec(vec![1.0f32, 2.0], [2], &CpuBackend::new())?;
//! let y = ((&x * 3.0)? - &x)?;
//! assert_eq!(y.to_vec::<f32>()?, vec![2.0, 4.0]);
//! let z = (1.0 - &x)?;
//! assert_eq!(z.to_vec::<f32>()?, vec![0.0, -1.0]);
//! assert_eq!((-&x)?.to_vec::<f32>()?, vec![-1.0, -2.0]);
//! # Ok::<(), nabla_core::Error>(())
//! ```

use crate::Tensor;
use nabla_core::{Backend, BinaryOp, Result, Scalar};
use std::ops::{Add, Div, Mul, Neg, Rem, Sub};

macro_rules! tensor_operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<B: Backend> $trait<&Tensor<B>> for &Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: &Tensor<B>) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<Tensor<B>> for &Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: Tensor<B>) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<&Tensor<B>> for Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: &Tensor<B>) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<Tensor<B>> for Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: Tensor<B>) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        // One float and one integer type only: with more, a literal such as `2.0` would match several
        // impls and `(&x * 2.0)?` would need a type annotation. Other number types go through the
        // method forms (`x.mul(2.0f32)`), which accept any `Operand`.
        tensor_operator!(@scalars $trait, $method, $op, f64, i64);
    };
    (@scalars $trait:ident, $method:ident, $op:ident, $($s:ty),*) => {$(
        impl<B: Backend> $trait<$s> for &Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: $s) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<$s> for Tensor<B> {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: $s) -> Result<Tensor<B>> {
                self.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<&Tensor<B>> for $s {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: &Tensor<B>) -> Result<Tensor<B>> {
                Tensor::scalar(Scalar::from(self), rhs.dtype(), rhs.backend())?.binary(BinaryOp::$op, rhs)
            }
        }
        impl<B: Backend> $trait<Tensor<B>> for $s {
            type Output = Result<Tensor<B>>;
            fn $method(self, rhs: Tensor<B>) -> Result<Tensor<B>> {
                Tensor::scalar(Scalar::from(self), rhs.dtype(), rhs.backend())?.binary(BinaryOp::$op, rhs)
            }
        }
    )*};
}

tensor_operator!(Add, add, Add);
tensor_operator!(Sub, sub, Sub);
tensor_operator!(Mul, mul, Mul);
tensor_operator!(Div, div, Div);
tensor_operator!(Rem, rem, Rem);

impl<B: Backend> Neg for &Tensor<B> {
    type Output = Result<Tensor<B>>;
    fn neg(self) -> Result<Tensor<B>> {
        Tensor::neg(self)
    }
}

impl<B: Backend> Neg for Tensor<B> {
    type Output = Result<Tensor<B>>;
    fn neg(self) -> Result<Tensor<B>> {
        Tensor::neg(&self)
    }
}
