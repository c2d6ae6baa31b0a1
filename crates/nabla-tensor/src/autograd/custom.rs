//! Functions with derivative rules of their own ([`CustomFn`], like `jax.custom_vjp`/`custom_jvp` and
//! `torch.autograd.Function`) and activation checkpointing ([`checkpoint`], like `jax.checkpoint`).
//!
//! A custom function runs its body without recording, then records one node whose rules are the ones
//! given. A mode without a rule differentiates the body itself by running it again, with recording, from
//! the saved inputs: that is exactly checkpointing, which is a custom function with no rules.

use super::context::AdContext;
use super::extension::ExtensionRules;
use super::grad_mode::{no_grad, with_grad};
use super::op::Op;
use crate::Tensor;
use crate::random_replay::{self, DrawnKeys};
use nabla_core::{Backend, Error, Result};
use std::fmt;
use std::sync::Arc;

/// What a custom function's rules see: its inputs (as called) and its output. With graph creation
/// (higher order) they are tracked, so rules written in differentiable tensor ops differentiate again.
pub struct CustomArgs<'a, B: Backend> {
    /// The inputs, in call order.
    pub inputs: &'a [Tensor<B>],
    /// The output.
    pub output: &'a Tensor<B>,
}

/// The body of a custom function: tensors in, one tensor out.
type Body<B> = Arc<dyn Fn(&[Tensor<B>]) -> Result<Tensor<B>> + Send + Sync>;

/// A custom reverse rule: from the output cotangent, the cotangent of each input (`None` for none).
pub type CustomReverseRule<B> =
    Arc<dyn Fn(&CustomArgs<'_, B>, &Tensor<B>) -> Result<Vec<Option<Tensor<B>>>> + Send + Sync>;

/// A custom forward rule: from the tangent of each input (`None` where zero), the output's tangent.
pub type CustomForwardRule<B> = Arc<
    dyn Fn(&CustomArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>> + Send + Sync,
>;

/// A function of tensors with its own derivative rules: a reverse rule ([`CustomFn::reverse`]), a
/// forward rule ([`CustomFn::forward`]), both, or neither. Every transform uses them (`backward`,
/// `grad`, `jvp`, `hessian`, ..., eager and traced); a mode without a rule differentiates the body by
/// running it again from the saved inputs. Rules written in differentiable tensor ops compose to any
/// order.
///
/// ```
/// use nabla_tensor::{CustomFn, Tensor, grad};
/// use nabla_cpu::CpuBackend;
/// // softplus = log(1 + e^x) with the stable derivative sigmoid(x) (the naive one overflows).
/// let softplus = CustomFn::<CpuBackend>::new("softplus", |x| x[0].softplus())
///     .reverse(|args, g| Ok(vec![Some(g.mul(&args.inputs[0].sigmoid()?)?)]))
///     .forward(|args, t| t[0].as_ref().map(|t| t.mul(&args.inputs[0].sigmoid()?)).transpose());
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![0.0f64, 1000.0], [2], &cpu)?;
/// let g = grad(|x: &Tensor<CpuBackend>| softplus.apply(&[x])?.sum_all())(&x)?;
/// assert_eq!(g.to_vec::<f64>()?, vec![0.5, 1.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct CustomFn<B: Backend> {
    name: Arc<str>,
    body: Body<B>,
    reverse: Option<CustomReverseRule<B>>,
    forward: Option<CustomForwardRule<B>>,
}

impl<B: Backend> Clone for CustomFn<B> {
    fn clone(&self) -> Self {
        CustomFn {
            name: self.name.clone(),
            body: self.body.clone(),
            reverse: self.reverse.clone(),
            forward: self.forward.clone(),
        }
    }
}

impl<B: Backend> fmt::Debug for CustomFn<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CustomFn")
            .field("name", &self.name)
            .field("reverse", &self.reverse.is_some())
            .field("forward", &self.forward.is_some())
            .finish()
    }
}

impl<B: Backend> CustomFn<B> {
    /// A custom function named `name` (for error messages) computing `body`, with no rules yet.
    pub fn new(
        name: impl Into<String>,
        body: impl Fn(&[Tensor<B>]) -> Result<Tensor<B>> + Send + Sync + 'static,
    ) -> Self {
        CustomFn {
            name: name.into().into(),
            body: Arc::new(body),
            reverse: None,
            forward: None,
        }
    }

    /// Sets the reverse rule: given the arguments and the output cotangent, one entry per input.
    pub fn reverse(
        mut self,
        rule: impl Fn(&CustomArgs<'_, B>, &Tensor<B>) -> Result<Vec<Option<Tensor<B>>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.reverse = Some(Arc::new(rule));
        self
    }

    /// Sets the forward rule: given the arguments and each input's tangent, the output's tangent.
    pub fn forward(
        mut self,
        rule: impl Fn(&CustomArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.forward = Some(Arc::new(rule));
        self
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.name
    }

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

/// A recorded call of a custom function: the function, how many of the node's inputs are its inputs
/// (the rest are captured tensors), and the captured tensors as the body reads them (tracked: the node's
/// saved copies may be detached). Holding them keeps their buffers alive while the graph lives, so an
/// optimizer updating a captured parameter during backward writes a new buffer instead of the old one.
#[derive(Clone)]
pub(crate) struct CustomCall<B: Backend> {
    func: CustomFn<B>,
    num_inputs: usize,
    captured: Vec<Tensor<B>>,
    /// The random draws of the first run, repeated by every re-run.
    draws: DrawnKeys,
}

impl<B: Backend> fmt::Debug for CustomCall<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CustomCall({:?}, {} inputs)", self.func, self.num_inputs)
    }
}

/// A re-run body: the differentiable handle of each input (`None` for integer inputs) and the output.
type Rerun<B> = (Vec<Option<Tensor<B>>>, Tensor<B>);

/// A rule's output list with one entry per input, or an error naming the function.
fn check_len<T>(name: &str, got: Vec<T>, want: usize) -> Result<Vec<T>> {
    if got.len() == want {
        Ok(got)
    } else {
        Err(Error::autodiff(
            "custom function",
            format!(
                "{name}: the reverse rule returned {} gradients for {want} inputs",
                got.len()
            ),
        ))
    }
}

impl<B: Backend> CustomCall<B> {
    /// The name for error messages.
    pub(crate) fn name(&self) -> &str {
        self.func.name()
    }

    /// The body re-run with recording on, from differentiable handles of the saved inputs (continuing
    /// their graphs when they are tracked); returns the handles and the output.
    fn rerun(&self, inputs: &[Tensor<B>]) -> Result<Rerun<B>> {
        with_grad(|| self.rerun_recording(inputs))
    }

    fn rerun_recording(&self, inputs: &[Tensor<B>]) -> Result<Rerun<B>> {
        let marks: Vec<Option<Tensor<B>>> = inputs[..self.num_inputs]
            .iter()
            .map(|x| x.mark_input("custom function").ok())
            .collect();
        let args: Vec<Tensor<B>> = marks
            .iter()
            .zip(inputs)
            .map(|(m, x)| m.clone().unwrap_or_else(|| x.clone()))
            .collect();
        let out = random_replay::replay(&self.draws, || (self.func.body)(&args))?;
        Ok((marks, out))
    }

    /// The differentiable handle of node input `i`: the re-run's mark, or a captured tensor.
    fn handle<'a>(&'a self, marks: &'a [Option<Tensor<B>>], i: usize) -> Option<&'a Tensor<B>> {
        match marks.get(i) {
            Some(m) => m.as_ref(),
            None => self.captured.get(i - marks.len()),
        }
    }

    /// Cotangents of the node's inputs given the output cotangent `g`.
    pub(crate) fn vjp(
        &self,
        inputs: &[Tensor<B>],
        output: &Tensor<B>,
        g: &Tensor<B>,
        needs: &[bool],
        overrides: Option<&ExtensionRules<B>>,
    ) -> Result<Vec<Option<Tensor<B>>>> {
        if let Some(rule) = &self.func.reverse {
            let args = CustomArgs { inputs, output };
            let grads = check_len(self.name(), rule(&args, g)?, inputs.len())?;
            for (x, grad) in inputs.iter().zip(&grads) {
                self.check_shape("reverse", x, grad.as_ref())?;
            }
            return Ok(grads);
        }
        let create = g.requires_grad() || inputs.iter().any(Tensor::requires_grad);
        let (marks, out) = self.rerun(inputs)?;
        let wanted: Vec<usize> = (0..inputs.len())
            .filter(|&i| needs.get(i).copied().unwrap_or(false))
            .filter(|&i| self.handle(&marks, i).is_some_and(Tensor::requires_grad))
            .collect();
        let mut grads = vec![None; inputs.len()];
        if wanted.is_empty() || !out.requires_grad() {
            return Ok(grads);
        }
        let wrt: Vec<&Tensor<B>> = wanted
            .iter()
            .filter_map(|&i| self.handle(&marks, i))
            .collect();
        let ctx = context(create, overrides);
        for (&i, gi) in wanted.iter().zip(ctx.vjp_n(&out, &wrt, g)?) {
            grads[i] = Some(gi);
        }
        Ok(grads)
    }

    /// The output tangent given each node input's tangent.
    pub(crate) fn jvp(
        &self,
        inputs: &[Tensor<B>],
        output: &Tensor<B>,
        tangents: &[Option<Tensor<B>>],
        overrides: Option<&ExtensionRules<B>>,
    ) -> Result<Option<Tensor<B>>> {
        if let Some(rule) = &self.func.forward {
            let args = CustomArgs { inputs, output };
            let t = rule(&args, &tangents[..self.num_inputs.min(tangents.len())])?;
            self.check_shape("forward", output, t.as_ref())?;
            return Ok(t);
        }
        let create = inputs.iter().any(Tensor::requires_grad)
            || tangents.iter().flatten().any(Tensor::requires_grad);
        let (marks, out) = self.rerun(inputs)?;
        let mut wrt = Vec::new();
        let mut ts = Vec::new();
        for (i, t) in tangents.iter().enumerate() {
            if let (Some(t), Some(x)) = (t, self.handle(&marks, i))
                && x.requires_grad()
            {
                wrt.push(x);
                ts.push(t);
            }
        }
        if wrt.is_empty() || !out.requires_grad() {
            return Ok(None);
        }
        let ctx = context(create, overrides);
        ctx.jvp_n(&out, &wrt, &ts).map(Some)
    }

    /// An error naming the function when a `mode` rule returned a value not of `like`'s shape.
    fn check_shape(&self, mode: &str, like: &Tensor<B>, got: Option<&Tensor<B>>) -> Result<()> {
        match got {
            Some(t) if t.shape() != like.shape() => Err(Error::autodiff(
                "custom function",
                format!(
                    "{}: the {mode} rule returned shape {:?} where {:?} was expected",
                    self.name(),
                    t.shape(),
                    like.shape()
                ),
            )),
            _ => Ok(()),
        }
    }
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
