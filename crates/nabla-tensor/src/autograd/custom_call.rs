//! A custom function and the record of one call ([`CustomCall`]) with its derivative rules: the
//! function's own rules, or its body run again from the saved inputs and differentiated by the nested
//! passes the call was recorded with. Recording a call, and checkpointing, are in the module `custom`.

use super::extension_rules::ExtensionRules;
use super::grad_mode::with_grad;
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
    pub(super) name: Arc<str>,
    pub(super) body: Body<B>,
    pub(super) reverse: Option<CustomReverseRule<B>>,
    pub(super) forward: Option<CustomForwardRule<B>>,
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
}

/// A recorded call of a custom function: the function, how many of the node's inputs are its inputs
/// (the rest are captured tensors), and the captured tensors as the body reads them (tracked: the node's
/// saved copies may be detached). Holding them keeps their buffers alive while the graph lives, so an
/// optimizer updating a captured parameter during backward writes a new buffer instead of the old one.
#[derive(Clone)]
pub(crate) struct CustomCall<B: Backend> {
    pub(super) func: CustomFn<B>,
    pub(super) num_inputs: usize,
    pub(super) captured: Vec<Tensor<B>>,
    /// The random draws of the first run, repeated by every re-run.
    pub(super) draws: DrawnKeys,
    /// The passes that differentiate the re-run body for a mode without a rule.
    pub(super) nested: NestedPasses<B>,
}

/// The passes a custom call differentiates its re-run body with, for a mode without a rule of its
/// own: the context's `vjp_n` and `jvp_n`, with graph creation as the enclosing pass has it
/// (`create`) and the enclosing context's extension-rule overrides. They are handed over when the
/// call is recorded (by the module `custom`), so the record and the rules that run it depend on nothing
/// above them (the transforms that run the rules are above them).
pub(crate) struct NestedPasses<B: Backend> {
    /// The cotangents of `wrt` given `out`'s cotangent `g`.
    pub(super) vjp: NestedVjp<B>,
    /// The tangent of `out` given a tangent per `wrt`.
    pub(super) jvp: NestedJvp<B>,
}

/// `(create, overrides, out, wrt, g)` to the cotangents of `wrt` (see [`NestedPasses`]).
pub(super) type NestedVjp<B> = fn(
    bool,
    Option<&ExtensionRules<B>>,
    &Tensor<B>,
    &[&Tensor<B>],
    &Tensor<B>,
) -> Result<Vec<Tensor<B>>>;

/// `(create, overrides, out, wrt, tangents)` to the tangent of `out` (see [`NestedPasses`]).
pub(super) type NestedJvp<B> = fn(
    bool,
    Option<&ExtensionRules<B>>,
    &Tensor<B>,
    &[&Tensor<B>],
    &[&Tensor<B>],
) -> Result<Tensor<B>>;

impl<B: Backend> Clone for NestedPasses<B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<B: Backend> Copy for NestedPasses<B> {}

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
        let nested = (self.nested.vjp)(create, overrides, &out, &wrt, g)?;
        for (&i, gi) in wanted.iter().zip(nested) {
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
        (self.nested.jvp)(create, overrides, &out, &wrt, &ts).map(Some)
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
