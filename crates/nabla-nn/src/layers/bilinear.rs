//! Bilinear maps of two inputs: `Bilinear`.

use crate::init;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// `y_k = x1ᵀ W_k x2 + b_k` (PyTorch's `nn.Bilinear`): `weight` `[out_features, in1_features,
/// in2_features]` and `bias` `[out_features]`, both initialised `U(-1/√in1, 1/√in1)` as in PyTorch.
/// Inputs `[*, in1_features]` and `[*, in2_features]` with the same leading dimensions give
/// `[*, out_features]`. It takes two inputs, so it is applied with [`Bilinear::forward2`].
///
/// ```
/// use nabla_nn::Bilinear;
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let layer = Bilinear::new(3, 4, 5, true, DType::F32, &mut Generator::new(0), &cpu)?;
/// let y = layer.forward2(&Tensor::ones([8, 3], DType::F32, &cpu)?, &Tensor::ones([8, 4], DType::F32, &cpu)?)?;
/// assert_eq!(y.shape(), &[8, 5]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct Bilinear<B: Backend> {
    /// `[out_features, in1_features, in2_features]`.
    pub weight: Param<B>,
    /// `[out_features]`, when the layer has a bias.
    pub bias: Option<Param<B>>,
}

impl<B: Backend> Bilinear<B> {
    /// A layer with PyTorch's arguments and default initialisation.
    pub fn new(
        in1_features: usize,
        in2_features: usize,
        out_features: usize,
        bias: bool,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let bound = init::bias_bound(in1_features);
        let mut draw = |shape: Vec<usize>| -> Result<Param<B>> {
            Param::new(init::uniform(shape, -bound, bound, dtype, rng, backend)?)
        };
        let weight = draw(vec![out_features, in1_features, in2_features])?;
        let bias = if bias {
            Some(draw(vec![out_features])?)
        } else {
            None
        };
        Ok(Bilinear { weight, bias })
    }

    /// Applies the layer to `x1` `[*, in1_features]` and `x2` `[*, in2_features]`.
    pub fn forward2(&self, x1: &Tensor<B>, x2: &Tensor<B>) -> Result<Tensor<B>> {
        const OP: &str = "Bilinear";
        let w = self.weight.value();
        let (out, in1, in2) = (w.shape()[0], w.shape()[1], w.shape()[2]);
        let (r1, r2) = (x1.rank(), x2.rank());
        if r1 == 0
            || r1 != r2
            || x1.shape()[r1 - 1] != in1
            || x2.shape()[r2 - 1] != in2
            || x1.shape()[..r1 - 1] != x2.shape()[..r2 - 1]
        {
            return Err(Error::shapes(OP, x1.shape(), x2.shape()).with_hint(format!(
                "expected inputs [*, {in1}] and [*, {in2}] with the same leading dimensions \
                 (weight {:?})",
                w.shape()
            )));
        }
        let lead = &x1.shape()[..r1 - 1];
        let m: usize = lead.iter().product();
        let a = x1.reshape([m, in1])?;
        let b = x2.reshape([m, 1, in2])?;
        // t[m, k, j] = sum_i x1[m, i] W[k, i, j], then y[m, k] = sum_j t[m, k, j] x2[m, j].
        let wt = w.permute(&[1, 0, 2])?.reshape([in1, out * in2])?;
        let t = a.matmul(&wt)?.reshape([m, out, in2])?;
        let y = t.mul(&b)?.sum(&[-1], false)?;
        let y = match &self.bias {
            Some(bias) => y.add(bias.value())?,
            None => y,
        };
        let mut shape = lead.to_vec();
        shape.push(out);
        y.reshape(shape)
    }
}
