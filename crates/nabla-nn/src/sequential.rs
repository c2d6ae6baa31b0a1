//! A chain of modules applied one after another.

use crate::module::{Forward, Module, join_name};
use crate::param::Param;
use nabla_core::{Backend, Result};
use nabla_tensor::Tensor;

/// Modules applied in order, each to the previous one's output (PyTorch's `nn.Sequential`); the
/// parameters of item `i` are named `i.<name>`.
///
/// ```
/// use nabla_nn::{Forward, Linear, Module, Sequential, activation::Tanh};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let mut rng = Generator::new(0);
/// let model = Sequential::new()
///     .push(Linear::new(2, 8, true, DType::F32, &mut rng, &cpu)?)
///     .push(Tanh)
///     .push(Linear::new(8, 1, true, DType::F32, &mut rng, &cpu)?);
/// assert_eq!(model.named_parameters()[2].0, "2.weight");
/// let y = model.forward(&Tensor::zeros([4, 2], DType::F32, &cpu)?)?;
/// assert_eq!(y.shape(), &[4, 1]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct Sequential<B: Backend> {
    layers: Vec<Box<dyn Forward<B> + Send + Sync>>,
}

impl<B: Backend> Default for Sequential<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> Sequential<B> {
    /// An empty chain (the identity).
    pub fn new() -> Self {
        Sequential { layers: Vec::new() }
    }

    /// The chain with `layer` appended.
    pub fn push(mut self, layer: impl Forward<B> + Send + Sync + 'static) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// Number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// `true` for an empty chain.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// The layers, in order.
    pub fn into_layers(self) -> Vec<Box<dyn Forward<B> + Send + Sync>> {
        self.layers
    }

    /// The layer at `index`.
    pub fn get(&self, index: usize) -> Option<&(dyn Forward<B> + Send + Sync)> {
        self.layers.get(index).map(|l| l.as_ref())
    }
}

impl<B: Backend> Module<B> for Sequential<B> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        for (i, layer) in self.layers.iter().enumerate() {
            layer.visit(&join_name(prefix, &i.to_string()), visitor);
        }
    }

    fn set_training(&mut self, training: bool) {
        for layer in &mut self.layers {
            layer.set_training(training);
        }
    }
}

impl<B: Backend> Forward<B> for Sequential<B> {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let mut h = x.clone();
        for layer in &self.layers {
            h = layer.forward(&h)?;
        }
        Ok(h)
    }
}
