//! Right-hand operands of binary ops: tensors or plain numbers.

use crate::Tensor;
use nabla_core::{Backend, DType, Result, Scalar};

/// Anything that can be the second operand of a binary op: a tensor (by value or reference) or a
/// number. A number takes the dtype of the tensor it is combined with, as in PyTorch.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![1.0f32, 2.0], [2], &CpuBackend::new())?;
/// assert_eq!(x.add(1)?.to_vec::<f32>()?, vec![2.0, 3.0]);
/// assert_eq!(x.mul(&x)?.to_vec::<f32>()?, vec![1.0, 4.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub trait Operand<B: Backend> {
    /// The operand as a tensor; a number becomes a rank-0 tensor of `dtype` on `backend`.
    fn into_operand(self, dtype: DType, backend: &B) -> Result<Tensor<B>>;

    /// The operand's own dtype, if it is a tensor (numbers have none and adapt).
    fn operand_dtype(&self) -> Option<DType>;

    /// The dtype of combining this operand with a tensor of `dtype`: [`DType::promote`] for a
    /// tensor, [`Scalar::result_type`] for a number (numbers are weak).
    fn result_dtype(&self, dtype: DType) -> DType;
}

impl<B: Backend> Operand<B> for Tensor<B> {
    fn into_operand(self, _dtype: DType, _backend: &B) -> Result<Tensor<B>> {
        Ok(self)
    }
    fn operand_dtype(&self) -> Option<DType> {
        Some(self.dtype())
    }
    fn result_dtype(&self, dtype: DType) -> DType {
        dtype.promote(self.dtype())
    }
}

impl<B: Backend> Operand<B> for &Tensor<B> {
    fn into_operand(self, _dtype: DType, _backend: &B) -> Result<Tensor<B>> {
        Ok(self.clone())
    }
    fn operand_dtype(&self) -> Option<DType> {
        Some(self.dtype())
    }
    fn result_dtype(&self, dtype: DType) -> DType {
        dtype.promote(self.dtype())
    }
}

macro_rules! scalar_operand {
    ($($t:ty),*) => {$(
        impl<B: Backend> Operand<B> for $t {
            fn into_operand(self, dtype: DType, backend: &B) -> Result<Tensor<B>> {
                Tensor::scalar(Scalar::from(self), dtype, backend)
            }
            fn operand_dtype(&self) -> Option<DType> {
                None
            }
            fn result_dtype(&self, dtype: DType) -> DType {
                Scalar::from(*self).result_type(dtype)
            }
        }
    )*};
}
scalar_operand!(
    f32,
    f64,
    i32,
    i64,
    u8,
    bool,
    Scalar,
    num_complex::Complex32,
    num_complex::Complex64
);
