//! Fully connected layers.

use super::conv::init_weight_bias;
use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// `y = x Wᵀ + b` (PyTorch's `nn.Linear`): `weight` is `[out_features, in_features]`, `bias`
/// `[out_features]`, both initialised `U(-1/√in, 1/√in)` as in PyTorch. Input `[..., in_features]`.
///
/// ```
/// use nabla_nn::{Forward, Linear};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let layer = Linear::new(3, 2, true, DType::F32, &mut Generator::new(0), &cpu)?;
/// let y = layer.forward(&Tensor::ones([5, 3], DType::F32, &cpu)?)?;
/// assert_eq!(y.shape(), &[5, 2]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct Linear<B: Backend> {
    /// `[out_features, in_features]`.
    pub weight: Param<B>,
    /// `[out_features]`, when the layer has a bias.
    pub bias: Option<Param<B>>,
}

impl<B: Backend> Linear<B> {
    /// A layer from `in_features` to `out_features` with PyTorch's default initialisation.
    pub fn new(
        in_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let (weight, bias) = init_weight_bias(
            &[out_features, in_features],
            bias.then_some(out_features),
            dtype,
            rng,
            backend,
        )?;
        Ok(Linear { weight, bias })
    }

    /// A layer with the given `weight` (`[out, in]`) and optional `bias` (`[out]`).
    pub fn from_tensors(weight: Tensor<B>, bias: Option<Tensor<B>>) -> Result<Self> {
        if weight.rank() != 2 {
            return Err(Error::invalid(
                "Linear",
                format!(
                    "weight must be [out_features, in_features], got {:?}",
                    weight.shape()
                ),
            ));
        }
        if let Some(b) = &bias
            && b.shape() != [weight.shape()[0]]
        {
            return Err(Error::shapes("Linear", weight.shape(), b.shape())
                .with_hint("bias must be [out_features]"));
        }
        Ok(Linear {
            weight: Param::new(weight)?,
            bias: bias.map(Param::new).transpose()?,
        })
    }

    /// `in_features`.
    pub fn in_features(&self) -> usize {
        self.weight.shape()[1]
    }

    /// `out_features`.
    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }
}

impl<B: Backend> Forward<B> for Linear<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let in_features = self.in_features();
        if x.rank() == 0 || x.shape()[x.rank() - 1] != in_features {
            return Err(
                Error::shapes("Linear", x.shape(), &self.weight.shape()).with_hint(format!(
                    "the input's last dimension must be in_features = {in_features}"
                )),
            );
        }
        let y = x.matmul(&self.weight.value().t()?)?;
        match &self.bias {
            Some(b) => y.add(b.value()),
            None => Ok(y),
        }
    }
}
