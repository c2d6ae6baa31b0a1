//! Arithmetic on half-precision tensors (float16, bfloat16). The backends store and cast halves but
//! compute in float32 and wider; an op on half tensors runs in float32 and rounds its float result
//! back to the half dtype once, as PyTorch's CPU kernels do (so a chain of ops rounds after each op,
//! as in PyTorch). The casts are ordinary differentiable ops: a half tensor reached from a float32
//! variable carries gradients through them, and a half-precision variable gets half-precision
//! gradients.

use crate::Tensor;
use nabla_core::{Backend, DType, Result};

impl<B: Backend> Tensor<B> {
    /// For a half-precision `self`: `f` of `self` in float32, with a float32 result rounded back to
    /// `self`'s dtype (other results, such as booleans and indices, as they are). `None` for the
    /// other dtypes, which the caller handles itself.
    pub(crate) fn half_in_f32(
        &self,
        f: impl FnOnce(&Self) -> Result<Self>,
    ) -> Option<Result<Self>> {
        let half = self.dtype();
        if !half.is_half() {
            return None;
        }
        Some(self.cast(DType::F32).and_then(|x| f(&x)).and_then(|y| {
            if y.dtype() == DType::F32 {
                y.cast(half)
            } else {
                Ok(y)
            }
        }))
    }

    /// [`Tensor::half_in_f32`] for an op giving two tensors (values and indices): the first is
    /// rounded back to the half dtype.
    pub(crate) fn half_pair_in_f32(
        &self,
        f: impl FnOnce(&Self) -> Result<(Self, Self)>,
    ) -> Option<Result<(Self, Self)>> {
        let half = self.dtype();
        if !half.is_half() {
            return None;
        }
        Some(
            self.cast(DType::F32)
                .and_then(|x| f(&x))
                .and_then(|(v, i)| Ok((v.cast(half)?, i))),
        )
    }
}
