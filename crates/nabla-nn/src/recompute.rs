//! Activation checkpointing for modules: [`Checkpointed`] runs a module's forward without keeping
//! its intermediate values and recomputes them in backward ([`nabla_tensor::checkpoint`]), the way
//! `torch.utils.checkpoint` wraps a block; [`Sequential::checkpoint_each`] wraps every block of a
//! chain.

use crate::module::{Forward, Module};
use crate::param::{Param, ParamKind};
use crate::sequential::Sequential;
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{Tensor, checkpoint, is_grad_enabled};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

/// A module whose forward is checkpointed: backward runs it again instead of keeping its
/// activations. Gradients are the same bit for bit: the re-run draws the same random numbers
/// (dropout masks) as the first run, runs in the training mode the first run had (even if the model
/// was switched to evaluation in between), and leaves the buffers (batch-norm statistics) as the
/// first run updated them. Replacing a parameter between forward and backward is an error at
/// backward. Parameters and buffers keep their names (a state dict is the
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
    /// The training flag last set, shared with pending re-runs.
    training: Arc<AtomicBool>,
}

impl<M> Checkpointed<M> {
    /// Wraps `module` (in training mode, as modules start).
    pub fn new(module: M) -> Self {
        Checkpointed {
            inner: Arc::new(RwLock::new(module)),
            training: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl<B: Backend, M: Module<B>> Module<B> for Checkpointed<M> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        read(&self.inner).visit(prefix, visitor);
    }

    fn set_training(&mut self, training: bool) {
        self.training.store(training, Ordering::Relaxed);
        write(&self.inner).set_training(training);
    }
}

fn write<M>(m: &RwLock<M>) -> std::sync::RwLockWriteGuard<'_, M> {
    m.write().unwrap_or_else(|e| e.into_inner())
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
        let (inner, training) = (self.inner.clone(), self.training.clone());
        let mode = training.load(Ordering::Relaxed);
        let first_run = AtomicBool::new(true);
        let weights: Vec<Tensor<B>> = params.iter().map(|(_, v)| v.clone()).collect();
        checkpoint(&[x], &captured, move |xs| {
            if first_run.swap(false, Ordering::Relaxed) {
                return read(&inner).forward(&xs[0]);
            }
            rerun(&inner, &training, mode, &weights, &xs[0])
        })
    }
}

/// A re-run of a checkpointed forward for backward: in the training mode of the first run, with the
/// same weights (an error if they were replaced since), leaving the buffers as the first run left them.
fn rerun<B, M>(
    inner: &RwLock<M>,
    training: &AtomicBool,
    mode: bool,
    weights: &[Tensor<B>],
    x: &Tensor<B>,
) -> Result<Tensor<B>>
where
    B: Backend,
    M: Forward<B>,
{
    let now = values(&*read(inner), ParamKind::Parameter);
    let same = now.len() == weights.len()
        && now
            .iter()
            .zip(weights)
            .all(|((_, v), w)| v.var_id() == w.var_id());
    if !same {
        return Err(Error::invalid(
            "Checkpointed",
            "a parameter of the checkpointed module was replaced between its forward pass and \
             backward: re-running it would differentiate other weights; run backward before \
             updating the parameters",
        ));
    }
    let switched = training.load(Ordering::Relaxed) != mode;
    if switched {
        write(inner).set_training(mode);
    }
    let module = read(inner);
    let buffers = values(&*module, ParamKind::Buffer);
    let out = module.forward(x);
    drop(module);
    let restored = buffers
        .into_iter()
        .try_for_each(|(param, value)| param.set(value));
    if switched {
        write(inner).set_training(!mode);
    }
    restored?;
    out
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
