//! Dropout: zeroes random elements during training and rescales the rest (inverted dropout).

use crate::module::{Forward, Module};
use crate::param::Param;
use nabla_core::{Backend, Error, Generator, Result};
use nabla_tensor::Tensor;
use std::sync::Mutex;

/// Checks that a drop probability lies in `[0, 1]`.
fn check_probability(op: &'static str, p: f64) -> Result<()> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(Error::invalid(
            op,
            format!("dropout probability has to be between 0 and 1, but got {p}"),
        ))
    }
}

/// Functional dropout (`torch.nn.functional.dropout`): in training, each element is zeroed with
/// probability `p` and the kept ones are scaled by `1 / (1 - p)`, so the expected value is unchanged.
/// The identity when not `training` or when `p = 0`; all zeros (`x * 0`) when `p = 1`. Random numbers
/// come from `rng`; `p` outside `[0, 1]` is an error.
pub fn dropout<B: Backend>(
    x: &Tensor<B>,
    p: f64,
    training: bool,
    rng: &mut Generator,
) -> Result<Tensor<B>> {
    check_probability("dropout", p)?;
    if !training || p == 0.0 {
        return Ok(x.clone());
    }
    if p == 1.0 {
        return x.mul(0.0);
    }
    let keep = Tensor::bernoulli(x.shape().to_vec(), 1.0 - p, x.dtype(), rng, x.backend())?;
    x.mul(keep.mul(1.0 / (1.0 - p))?)
}

/// Dropout as a module (PyTorch's `nn.Dropout(p)`): see [`dropout`]. Like every PyTorch module it
/// starts in training mode; `eval()` turns it into the identity. It owns its random stream (seeded
/// from the generator given at construction), so `forward` takes `&self`.
///
/// ```
/// use nabla_nn::{Dropout, Forward, Module};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let mut drop = Dropout::new(0.5, &mut Generator::new(0))?;
/// let x = Tensor::ones([1000], DType::F64, &cpu)?;
/// let y = drop.forward(&x)?.to_vec::<f64>()?;
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// Module::<CpuBackend>::eval(&mut drop);
/// assert_eq!(drop.forward(&x)?.to_vec::<f64>()?, vec![1.0; 1000]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct Dropout {
    p: f64,
    training: bool,
    rng: Mutex<Generator>,
}

impl Dropout {
    /// Dropout with drop probability `p` (PyTorch's default is 0.5), in training mode, with a random
    /// stream seeded by a draw from `rng`.
    pub fn new(p: f64, rng: &mut Generator) -> Result<Self> {
        check_probability("Dropout", p)?;
        Ok(Dropout {
            p,
            training: true,
            rng: Mutex::new(rng.fork()),
        })
    }

    /// The drop probability `p`.
    pub fn p(&self) -> f64 {
        self.p
    }

    /// `true` in training mode (elements are dropped).
    pub fn is_training(&self) -> bool {
        self.training
    }

    fn generator(&self) -> std::sync::MutexGuard<'_, Generator> {
        // A panic while drawing leaves a valid generator behind: recover it.
        self.rng.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clone for Dropout {
    fn clone(&self) -> Self {
        Dropout {
            p: self.p,
            training: self.training,
            rng: Mutex::new(self.generator().clone()),
        }
    }
}

impl std::fmt::Debug for Dropout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dropout")
            .field("p", &self.p)
            .field("training", &self.training)
            .finish()
    }
}

impl<B: Backend> Module<B> for Dropout {
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}

    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}

impl<B: Backend> Forward<B> for Dropout {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        if !self.training || self.p == 0.0 {
            return Ok(x.clone());
        }
        dropout(x, self.p, true, &mut self.generator())
    }
}
