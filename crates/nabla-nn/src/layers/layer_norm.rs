//! Layer normalisation over the trailing dimensions.

use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// Layer normalisation (PyTorch's `nn.LayerNorm`): `(x - mean) / sqrt(var + eps) * weight + bias`,
/// with the mean and the population variance taken over the trailing `normalized_shape` dimensions.
/// `weight` (ones) and `bias` (zeros) have shape `normalized_shape`; they exist when
/// `elementwise_affine` (and, for `bias`, when `bias` is set).
///
/// ```
/// use nabla_nn::{Forward, LayerNorm};
/// use nabla_core::DType;
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let norm = LayerNorm::new(vec![4], 1e-5, true, true, DType::F64, &cpu)?;
/// let x = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0, 8.0], [2, 4], &cpu)?;
/// let y = norm.forward(&x)?;
/// let row_mean = y.mean(&[-1], false)?.to_vec::<f64>()?;
/// assert!(row_mean.iter().all(|m| m.abs() < 1e-12));
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct LayerNorm<B: Backend> {
    /// Scale, shape `normalized_shape`, when `elementwise_affine`.
    pub weight: Option<Param<B>>,
    /// Shift, shape `normalized_shape`, when `elementwise_affine` and `bias`.
    pub bias: Option<Param<B>>,
    /// The trailing dimensions normalised over.
    pub normalized_shape: Vec<usize>,
    /// Added to the variance for stability (PyTorch's default is `1e-5`).
    pub eps: f64,
}

impl<B: Backend> LayerNorm<B> {
    /// A layer normalising over the trailing `normalized_shape` dimensions, with PyTorch's
    /// initialisation (weight ones, bias zeros). PyTorch's defaults: `eps = 1e-5`,
    /// `elementwise_affine = true`, `bias = true`.
    pub fn new(
        normalized_shape: Vec<usize>,
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
        dtype: DType,
        backend: &B,
    ) -> Result<Self> {
        if normalized_shape.is_empty() {
            return Err(Error::invalid(
                "LayerNorm",
                "normalized_shape must have at least one dimension",
            ));
        }
        if eps.is_nan() || eps < 0.0 {
            return Err(Error::invalid(
                "LayerNorm",
                format!("eps must be >= 0, got {eps}"),
            ));
        }
        let param = |value: i64| -> Result<Param<B>> {
            Param::new(Tensor::full(
                normalized_shape.clone(),
                value,
                dtype,
                backend,
            )?)
        };
        let weight = elementwise_affine.then(|| param(1)).transpose()?;
        let bias = (elementwise_affine && bias).then(|| param(0)).transpose()?;
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape,
            eps,
        })
    }
}

impl<B: Backend> Forward<B> for LayerNorm<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let k = self.normalized_shape.len();
        let rank = x.rank();
        if rank < k || x.shape()[rank - k..] != self.normalized_shape[..] {
            return Err(
                Error::shapes("LayerNorm", x.shape(), &self.normalized_shape).with_hint(format!(
                    "the input's trailing dimensions must equal normalized_shape {:?}",
                    self.normalized_shape
                )),
            );
        }
        let axes: Vec<isize> = (1..=k as isize).rev().map(|a| -a).collect();
        let mut y = x.layer_norm(&axes, self.eps)?;
        if let Some(w) = &self.weight {
            y = y.mul(w.value())?;
        }
        if let Some(b) = &self.bias {
            y = y.add(b.value())?;
        }
        Ok(y)
    }
}
