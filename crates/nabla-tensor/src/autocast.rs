//! Mixed precision: an autocast scope in which matrix products and convolutions of float32 tensors
//! multiply in bf16 (or f16) with f32 accumulation, as under PyTorch's
//! `torch.autocast(device_type="cpu", dtype=torch.bfloat16)`.
//!
//! Inside [`autocast`] (or while an [`AutocastGuard`] lives), [`Tensor::matmul`] and
//! [`Tensor::conv2d`] of F32 operands, and everything built on them (`nn::Linear`, `nn::Conv2d`,
//! attention, `einsum`), round each operand element to the scope's type and sum the products in
//! f32. The precision is recorded with the product, so its reverse-
//! and forward-mode derivatives, and their derivatives in turn, multiply at it too, wherever
//! `backward` is called (PyTorch's rule: backward ops run in the type autocast chose for the forward
//! op). Everything else (elementwise math, reductions, softmax, norms, losses, optimizer updates)
//! runs in f32 as outside the scope, and results stay F32: parameters, activations and gradients
//! keep f32 storage. Tensors of other dtypes (F64, complex, integers) are never affected.
//!
//! The scope is per thread, like PyTorch's. With f16, whose range ends at 65504 and whose smallest
//! normal number is `2^-14`, small gradients flush to zero in the rounded products of backward:
//! scale the loss (`nabla::nn::GradScaler`), as PyTorch's f16 training does.

use nabla_core::{Conv2dParams, DType, Error, Precision, Result};
use std::cell::Cell;

thread_local! {
    /// The dtype the innermost active autocast scope of this thread computes products in.
    static AUTOCAST: Cell<Option<DType>> = const { Cell::new(None) };
}

/// The precision a product of `dtype` operands (a matrix product or a convolution) takes under this
/// thread's autocast state: [`Precision::Bf16`] for F32 operands inside a bf16 scope, else
/// [`Precision::Full`].
pub fn autocast_precision(dtype: DType) -> Precision {
    match (AUTOCAST.with(Cell::get), dtype) {
        (Some(DType::BF16), DType::F32) => Precision::Bf16,
        (Some(DType::F16), DType::F32) => Precision::F16,
        _ => Precision::Full,
    }
}

/// `params` with the precision autocast gives a convolution of `dtype` operands: the scope's
/// precision where `params` asks for [`Precision::Full`], else `params` unchanged.
pub fn autocast_conv_params(params: &Conv2dParams, dtype: DType) -> Conv2dParams {
    match params.precision {
        Precision::Full => Conv2dParams {
            precision: autocast_precision(dtype),
            ..*params
        },
        Precision::Bf16 | Precision::F16 => *params,
    }
}

/// Checks that autocast can compute in `dtype` ([`DType::BF16`] or [`DType::F16`]), naming
/// `autocast` in the error.
pub fn check_autocast_dtype(dtype: DType) -> Result<()> {
    match dtype {
        DType::BF16 | DType::F16 => Ok(()),
        other => Err(Error::dtype("autocast", other)
            .with_hint("autocast computes products in bfloat16 or float16")),
    }
}

/// Runs `f` with autocast to `dtype` enabled on this thread (see the [module docs](self)), and
/// restores the previous state afterwards, also when `f` panics. [`DType::BF16`] and [`DType::F16`]
/// are accepted.
///
/// ```
/// # use nabla_tensor::{Tensor, autocast, autocast_precision, Precision}; use nabla_cpu::CpuBackend; use nabla_core::DType;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![1.0f32 + 1.0 / 512.0, 2.0], [1, 2], &cpu)?;
/// let b = Tensor::from_vec(vec![1.0f32, 1.0], [2, 1], &cpu)?;
/// // 1 + 2^-9 is not a bf16 value: it rounds to 1 inside the scope.
/// let mixed = autocast(DType::BF16, || a.matmul(&b))??;
/// assert_eq!(mixed.to_vec::<f32>()?, vec![3.0]);
/// assert_eq!(a.matmul(&b)?.to_vec::<f32>()?, vec![3.0 + 1.0 / 512.0]);
/// assert_eq!(autocast_precision(DType::F32), Precision::Full);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn autocast<R>(dtype: DType, f: impl FnOnce() -> R) -> Result<R> {
    let _guard = AutocastGuard::new(dtype)?;
    Ok(f())
}

/// Runs `f` with autocast disabled on this thread (PyTorch's `autocast(enabled=False)` inside an
/// autocast region): its products multiply in their operands' dtype.
pub fn autocast_disabled<R>(f: impl FnOnce() -> R) -> R {
    let _guard = AutocastGuard::set(None);
    f()
}

/// The dtype this thread's autocast scope computes products in, if one is active.
pub fn autocast_dtype() -> Option<DType> {
    AUTOCAST.with(Cell::get)
}

/// Enables autocast on this thread until dropped, then restores the state it found.
#[derive(Debug)]
#[must_use = "autocast ends when the guard is dropped"]
pub struct AutocastGuard {
    previous: Option<DType>,
}

impl AutocastGuard {
    /// Enables autocast to `dtype` ([`DType::BF16`] or [`DType::F16`]).
    pub fn new(dtype: DType) -> Result<AutocastGuard> {
        check_autocast_dtype(dtype)?;
        Ok(AutocastGuard::set(Some(dtype)))
    }

    /// Disables autocast until dropped (PyTorch's `autocast(enabled=False)`).
    pub fn disabled() -> AutocastGuard {
        AutocastGuard::set(None)
    }

    fn set(state: Option<DType>) -> AutocastGuard {
        AutocastGuard {
            previous: AUTOCAST.with(|cell| cell.replace(state)),
        }
    }
}

impl Drop for AutocastGuard {
    fn drop(&mut self) {
        AUTOCAST.with(|cell| cell.set(self.previous));
    }
}
