//! Activation checkpointing for modules: [`Checkpointed`] runs a module's forward without keeping
//! its intermediate values and recomputes them in backward ([`nabla_tensor::checkpoint`]), the way
//! `torch.utils.checkpoint` wraps a block; [`Sequential::checkpoint_each`] wraps every block of a
//! chain.

use crate::module::{Forward, Module};
use crate::param::{Param, ParamKind};
use crate::sequential::Sequential;
use nabla_core::{Backend, Result};
use nabla_tensor::{Tensor, checkpoint, is_grad_enabled};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// A module whose forward is checkpointed: backward runs it again instead of keeping its
/// activations. Gradients are the same bit for bit; the re-run draws the same random numbers
/// (dropout masks) as the first run, and buffers updated in training mode (batch-norm statistics) are
/// updated once, by the first run. Parameters and buffers keep their names (a state dict is the
/// wrapped module's).
///
/// ```
/// use nabla_nn::{Checkpointed, Forward, Linear, Module, Sequential, activation::Tanh};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let mut rng = Generator::new(0);
/// let block = Sequential::new()
///     .push(Linear::new(4, 4, true, DType::F64, &mut rng, &cpu)?)
///     .push(Tanh);
/// let model = Checkpointed::new(block);
/// let x = Tensor::ones([2, 4], DType::F64, &cpu)?;
/// let grads = model.forward(&x)?.sum_all()?.backward()?;
/// assert_eq!(model.named_parameters()[0].0, "0.weight");
/// assert!(model.parameters()[0].grad(&grads).is_some());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct Checkpointed<M> {
    inner: Arc<RwLock<M>>,
}

impl<M> Checkpointed<M> {
    /// Wraps `module`.
    pub fn new(module: M) -> Self {
        Checkpointed {
            inner: Arc::new(RwLock::new(module)),
        }
    }
}

impl<B: Backend, M: Module<B>> Module<B> for Checkpointed<M> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        read(&self.inner).visit(prefix, visitor);
    }

    fn set_training(&mut self, training: bool) {
        self.inner
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .set_training(training);
    }
}

fn read<M>(m: &RwLock<M>) -> std::sync::RwLockReadGuard<'_, M> {
    m.read().unwrap_or_else(|e| e.into_inner())
}

/// The values of the module's parameters (tracked leaves) or of its buffers.
fn values<B: Backend, M: Module<B>>(m: &M, kind: ParamKind) -> Vec<(Param<B>, Tensor<B>)> {
    let mut out = Vec::new();
    m.visit("", &mut |_, p| {
        if p.kind() == kind {
            out.push((p.clone(), p.value()));
        }
    });
    out
}

impl<B, M> Forward<B> for Checkpointed<M>
where
    B: Backend,
    M: Forward<B> + Send + Sync + 'static,
{
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let params = values(&*read(&self.inner), ParamKind::Parameter);
        let tracked = x.requires_grad() || params.iter().any(|(_, v)| v.requires_grad());
        if !tracked || !is_grad_enabled() {
            return read(&self.inner).forward(x);
        }
        let captured: Vec<&Tensor<B>> = params.iter().map(|(_, v)| v).collect();
        let inner = self.inner.clone();
        let first_run = AtomicBool::new(true);
        checkpoint(&[x], &captured, move |xs| {
            let module = read(&inner);
            if first_run.swap(false, Ordering::Relaxed) {
                return module.forward(&xs[0]);
            }
            // A re-run leaves the buffers as the first run left them.
            let buffers = values(&*module, ParamKind::Buffer);
            let out = module.forward(&xs[0]);
            for (param, value) in buffers {
                param.set(value)?;
            }
            out
        })
    }
}

impl<B: Backend> Sequential<B> {
    /// The chain with every block checkpointed ([`Checkpointed`]): backward keeps only the blocks'
    /// inputs and recomputes each block's activations when it reaches it.
    pub fn checkpoint_each(self) -> Sequential<B> {
        self.into_layers()
            .into_iter()
            .fold(Sequential::new(), |chain, layer| {
                chain.push(Checkpointed::new(layer))
            })
    }
}
