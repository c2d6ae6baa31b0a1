//! Functions with derivative rules of their own ([`CustomFn`], like `jax.custom_vjp`/`custom_jvp` and
//! `torch.autograd.Function`) and activation checkpointing ([`checkpoint`], like `jax.checkpoint`).
//!
//! A custom function runs its body without recording, then records one node whose rules are the ones
//! given. A mode without a rule differentiates the body itself by running it again, with recording, from
//! the saved inputs: that is exactly checkpointing, which is a custom function with no rules. The
//! function and its record are in [`super::custom_call`]; this module records calls, handing them the
//! nested passes of an [`AdContext`].

use super::context::AdContext;
use super::custom_call::{CustomCall, CustomFn, NestedPasses};
use super::extension_rules::ExtensionRules;
use super::grad_mode::no_grad;
use super::op::Op;
use crate::Tensor;
use crate::random_replay;
use nabla_core::{Backend, Error, Result};
use std::sync::Arc;

impl<B: Backend> CustomFn<B> {
    /// Runs the body on `inputs` (not recorded) and records one node carrying this function's rules.
    pub fn apply(&self, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
        self.apply_capturing(inputs, &[])
    }

    /// [`CustomFn::apply`] for a body that also reads `captured` tensors (parameters, say) besides its
    /// inputs: they become inputs of the recorded node, so gradients reach them through the rules
    /// computed by re-running the body (only a function without custom rules may capture).
    pub(crate) fn apply_capturing(
        &self,
        inputs: &[&Tensor<B>],
        captured: &[&Tensor<B>],
    ) -> Result<Tensor<B>> {
        if !captured.is_empty() && (self.reverse.is_some() || self.forward.is_some()) {
            return Err(Error::invalid(
                "custom function",
                format!(
                    "{}: a function with custom rules cannot capture tensors",
                    self.name
                ),
            ));
        }
        let detached: Vec<Tensor<B>> = inputs.iter().map(|t| t.detach()).collect();
        let (out, draws) = random_replay::record(|| no_grad(|| (self.body)(&detached)));
        let out = out?;
        let all: Vec<&Tensor<B>> = inputs.iter().chain(captured).copied().collect();
        let call = || {
            Op::Custom(Arc::new(CustomCall {
                func: self.clone(),
                num_inputs: inputs.len(),
                captured: captured.iter().map(|&t| t.clone()).collect(),
                draws: draws.clone(),
                nested: NestedPasses {
                    vjp: nested_vjp::<B>,
                    jvp: nested_jvp::<B>,
                },
            }))
        };
        out.record_checked(call, &all)
    }
}

/// Checkpointing (`jax.checkpoint`, `torch.utils.checkpoint`): `f(inputs)` computed without keeping
/// its intermediate values; backward (and forward mode) runs `f` again to get them. Gradients are the
/// same as without checkpointing, bit for bit. `captured` lists the tracked tensors `f` reads besides
/// its inputs (a block's parameters), so that they get gradients too.
///
/// ```
/// use nabla_tensor::{Tensor, checkpoint};
/// use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let w = Tensor::var("w", Tensor::from_vec(vec![0.5f64, -1.0], [2], &cpu)?)?;
/// let x = Tensor::var("x", Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?)?;
/// let block = {
///     let w = w.clone();
///     move |xs: &[Tensor<CpuBackend>]| xs[0].mul(&w)?.tanh()?.exp()
/// };
/// let y = checkpoint(&[&x], &[&w], block.clone())?.sum_all()?;
/// let plain = block(&[x.clone()])?.sum_all()?;
/// assert_eq!(y.grad(&w)?.to_vec::<f64>()?, plain.grad(&w)?.to_vec::<f64>()?);
/// assert_eq!(y.grad(&x)?.to_vec::<f64>()?, plain.grad(&x)?.to_vec::<f64>()?);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn checkpoint<B: Backend>(
    inputs: &[&Tensor<B>],
    captured: &[&Tensor<B>],
    f: impl Fn(&[Tensor<B>]) -> Result<Tensor<B>> + Send + Sync + 'static,
) -> Result<Tensor<B>> {
    CustomFn::new("checkpoint", f).apply_capturing(inputs, captured)
}

/// The context a re-run body is differentiated in: graph creation as the enclosing pass has it, and
/// the enclosing context's extension-rule overrides.
fn context<B: Backend>(create: bool, overrides: Option<&ExtensionRules<B>>) -> AdContext {
    let builder = AdContext::builder().create_graph(create);
    match overrides {
        Some(rules) => builder.with_extension_rules(rules.clone()),
        None => builder,
    }
    .build()
}

/// The nested reverse pass of a custom call ([`NestedPasses::vjp`]).
fn nested_vjp<B: Backend>(
    create: bool,
    overrides: Option<&ExtensionRules<B>>,
    out: &Tensor<B>,
    wrt: &[&Tensor<B>],
    g: &Tensor<B>,
) -> Result<Vec<Tensor<B>>> {
    context(create, overrides).vjp_n(out, wrt, g)
}

/// The nested forward pass of a custom call ([`NestedPasses::jvp`]).
fn nested_jvp<B: Backend>(
    create: bool,
    overrides: Option<&ExtensionRules<B>>,
    out: &Tensor<B>,
    wrt: &[&Tensor<B>],
    tangents: &[&Tensor<B>],
) -> Result<Tensor<B>> {
    context(create, overrides).jvp_n(out, wrt, tangents)
}
