//! A chain of modules applied one after another.

use crate::module::{Forward, LayerAlgebra, Module, join_name};
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
    /// Applies the layers in order, except that a ReLU-like layer followed by max pooling runs as
    /// pooling then the activation, on the smaller tensor: the same values and derivatives bit for
    /// bit (see [`LayerAlgebra`]).
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let mut h = x.clone();
        let mut layers = self.layers.iter().peekable();
        while let Some(layer) = layers.next() {
            let swap = layer.algebra() == LayerAlgebra::CommutesWithMax
                && layers
                    .peek()
                    .is_some_and(|next| next.algebra() == LayerAlgebra::MaxOverWindows);
            h = match layers.next_if(|_| swap) {
                Some(pool) => layer.forward(&pool.forward(&h)?)?,
                None => layer.forward(&h)?,
            };
        }
        Ok(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::activation::{ReLU, Tanh};
    use crate::{MaxPool1d, MaxPool2d};
    use nabla_core::DType;
    use nabla_cpu::CpuBackend;
    use nabla_tensor::{grad, jvp};
    use std::sync::{Arc, Mutex};

    type Cpu = CpuBackend;

    /// ReLU that records the shapes it is applied to, declaring the same algebra as [`ReLU`].
    #[derive(Clone, Default)]
    struct Probe(Arc<Mutex<Vec<Vec<usize>>>>);

    impl Module<Cpu> for Probe {
        fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<Cpu>)) {}
        fn set_training(&mut self, _training: bool) {}
    }

    impl Forward<Cpu> for Probe {
        fn forward(&self, x: &Tensor<Cpu>) -> Result<Tensor<Cpu>> {
            self.0.lock().unwrap().push(x.shape().to_vec());
            x.relu()
        }

        fn algebra(&self) -> LayerAlgebra {
            LayerAlgebra::CommutesWithMax
        }
    }

    /// Awkward values: NaN, infinities, signed zeros, negative runs (windows at most 0) and
    /// repeated values (ties), among ordinary ones.
    fn awkward(n: usize, seed: usize) -> Vec<f64> {
        let special = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e-310,
        ];
        (0..n)
            .map(|i| {
                let k = i * 7 + seed;
                match k % 13 {
                    0 => special[(k / 13) % special.len()],
                    1..=3 => -((k % 5) as f64),
                    4 | 5 => 2.0,
                    _ => ((k as f64) * 0.37).sin() * 3.0,
                }
            })
            .collect()
    }

    fn bits(t: &Tensor<Cpu>) -> Vec<u64> {
        t.cast(DType::F64)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    }

    /// `Sequential[ReLU, pool]` against the pool applied to the ReLU's output: values, gradients
    /// and forward-mode derivatives, bit for bit.
    fn check(
        pool: impl Forward<Cpu> + Clone + Send + Sync + 'static,
        shape: &[usize],
    ) -> Result<()> {
        let cpu = CpuBackend::new();
        let n = shape.iter().product();
        for dtype in [DType::F32, DType::F64] {
            let x = Tensor::from_vec(awkward(n, 0), shape.to_vec(), &cpu)?.cast(dtype)?;
            let seq = Sequential::new().push(ReLU).push(pool.clone());
            let reference = |x: &Tensor<Cpu>| pool.forward(&x.relu()?);
            let (y, y_ref) = (seq.forward(&x)?, reference(&x)?);
            assert_eq!(bits(&y), bits(&y_ref), "values {dtype:?} {shape:?}");
            let g =
                Tensor::from_vec(awkward(y.numel(), 5), y.shape().to_vec(), &cpu)?.cast(dtype)?;
            let loss = |f: &dyn Fn(&Tensor<Cpu>) -> Result<Tensor<Cpu>>, x: &Tensor<Cpu>| {
                f(x)?.mul(&g)?.sum_all()
            };
            let fused = grad(|x: &Tensor<Cpu>| loss(&|x| seq.forward(x), x))(&x)?;
            let plain = grad(|x: &Tensor<Cpu>| loss(&reference, x))(&x)?;
            assert_eq!(bits(&fused), bits(&plain), "gradients {dtype:?} {shape:?}");
            let t = Tensor::from_vec(awkward(n, 3), shape.to_vec(), &cpu)?.cast(dtype)?;
            let (_, d) = jvp(|x: &Tensor<Cpu>| seq.forward(x), &x, &t)?;
            let (_, d_ref) = jvp(reference, &x, &t)?;
            assert_eq!(bits(&d), bits(&d_ref), "jvp {dtype:?} {shape:?}");
        }
        Ok(())
    }

    #[test]
    fn relu_then_max_pool_matches_the_written_order_bit_for_bit() -> Result<()> {
        check(
            MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?,
            &[2, 3, 6, 6],
        )?;
        // Overlapping windows, padding (never the maximum) and a partial last window.
        check(
            MaxPool2d::new((3, 3), Some((2, 2)), (1, 1), (1, 1), true)?,
            &[2, 3, 7, 6],
        )?;
        check(
            MaxPool2d::new((2, 2), Some((1, 1)), (0, 0), (2, 2), false)?,
            &[3, 6, 5],
        )?;
        check(MaxPool1d::new(3, Some(2), 1, 1, true)?, &[2, 4, 9])?;
        // Zero-size batch.
        check(
            MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?,
            &[0, 3, 4, 4],
        )
    }

    #[test]
    fn only_an_activation_directly_before_max_pooling_moves() -> Result<()> {
        let cpu = CpuBackend::new();
        let x = Tensor::ones([1, 2, 4, 4], DType::F32, &cpu)?;
        let pool = MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?;
        let probe = Probe::default();
        Sequential::new()
            .push(probe.clone())
            .push(pool)
            .push(probe.clone())
            .push(Tanh)
            .push(pool)
            .push(probe.clone())
            .forward(&x)?;
        // Moved after the first pooling; the second probe is followed by Tanh, the third by nothing.
        assert_eq!(
            *probe.0.lock().unwrap(),
            [vec![1, 2, 2, 2], vec![1, 2, 2, 2], vec![1, 2, 1, 1]]
        );
        assert_eq!(
            <ReLU as Forward<Cpu>>::algebra(&ReLU),
            LayerAlgebra::CommutesWithMax
        );
        assert_eq!(<Tanh as Forward<Cpu>>::algebra(&Tanh), LayerAlgebra::Opaque);
        Ok(())
    }
}
