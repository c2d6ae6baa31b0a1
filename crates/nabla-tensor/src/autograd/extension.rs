//! Extension ops on tensors and the derivative rules their families register with an
//! [`AdContext`](crate::AdContext).

use super::op::Op;
use crate::Tensor;
use nabla_core::{Backend, Error, ExtensionOp, Result};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// What a derivative rule of an extension op sees: the op (with its parameters), its inputs and its
/// output. When the derivative is itself differentiated (higher order), these tensors are tracked, so
/// rules must be written in differentiable tensor ops (extension ops included).
pub struct RuleArgs<'a, B: Backend> {
    /// The op that ran; downcast with [`ExtensionOp::as_any`] to read its parameters.
    pub op: &'a dyn ExtensionOp,
    /// Its inputs, in call order.
    pub inputs: &'a [Tensor<B>],
    /// Its output.
    pub output: &'a Tensor<B>,
}

/// A reverse (vector-Jacobian product) rule: given the output cotangent, the cotangent of each input
/// (`None` for an input that gets none). `needs[i]` is false for inputs nobody asked about; the rule
/// may return `None` for them.
pub type ReverseRule<B> = Arc<
    dyn Fn(&RuleArgs<'_, B>, &Tensor<B>, &[bool]) -> Result<Vec<Option<Tensor<B>>>> + Send + Sync,
>;

/// A forward (Jacobian-vector product) rule: given the tangent of each input (`None` where it is zero),
/// the tangent of the output (`None` when it is zero).
pub type ForwardRule<B> =
    Arc<dyn Fn(&RuleArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>> + Send + Sync>;

/// The derivative rules of one or more extension op families, keyed by op name. A family crate builds
/// one (`nabla_linalg::rules()`, say) and users register it explicitly with
/// [`AdContextBuilder::with_extension_rules`](crate::AdContextBuilder::with_extension_rules); there is
/// no global registry.
///
/// ```
/// use nabla_tensor::{ExtensionRules, Tensor};
/// use nabla_cpu::CpuBackend;
/// // d/dx of an elementwise "demo.double" op is 2 in both modes.
/// let rules = ExtensionRules::<CpuBackend>::new()
///     .reverse("demo.double", |_args, g, _needs| Ok(vec![Some(g.mul(2.0)?)]))
///     .forward("demo.double", |_args, t| t[0].as_ref().map(|t| t.mul(2.0)).transpose());
/// assert!(rules.has_reverse("demo.double") && rules.has_forward("demo.double"));
/// assert!(!rules.has_reverse("demo.other"));
/// ```
pub struct ExtensionRules<B: Backend> {
    reverse: HashMap<String, ReverseRule<B>>,
    forward: HashMap<String, ForwardRule<B>>,
}

impl<B: Backend> Clone for ExtensionRules<B> {
    fn clone(&self) -> Self {
        ExtensionRules {
            reverse: self.reverse.clone(),
            forward: self.forward.clone(),
        }
    }
}

impl<B: Backend> Default for ExtensionRules<B> {
    fn default() -> Self {
        ExtensionRules {
            reverse: HashMap::new(),
            forward: HashMap::new(),
        }
    }
}

impl<B: Backend> fmt::Debug for ExtensionRules<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rev: Vec<&str> = self.reverse.keys().map(String::as_str).collect();
        let mut fwd: Vec<&str> = self.forward.keys().map(String::as_str).collect();
        rev.sort_unstable();
        fwd.sort_unstable();
        f.debug_struct("ExtensionRules")
            .field("reverse", &rev)
            .field("forward", &fwd)
            .finish()
    }
}

impl<B: Backend> ExtensionRules<B> {
    /// An empty rule set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the reverse rule of op `name` (replacing any earlier one).
    pub fn reverse(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&RuleArgs<'_, B>, &Tensor<B>, &[bool]) -> Result<Vec<Option<Tensor<B>>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.reverse.insert(name.into(), Arc::new(rule));
        self
    }

    /// Registers the forward rule of op `name` (replacing any earlier one).
    pub fn forward(
        mut self,
        name: impl Into<String>,
        rule: impl Fn(&RuleArgs<'_, B>, &[Option<Tensor<B>>]) -> Result<Option<Tensor<B>>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.forward.insert(name.into(), Arc::new(rule));
        self
    }

    /// Adds every rule of `other` (its rules win on a name registered in both).
    pub fn merge(mut self, other: &ExtensionRules<B>) -> Self {
        self.reverse
            .extend(other.reverse.iter().map(|(k, v)| (k.clone(), v.clone())));
        self.forward
            .extend(other.forward.iter().map(|(k, v)| (k.clone(), v.clone())));
        self
    }

    /// `true` when a reverse rule is registered for op `name`.
    pub fn has_reverse(&self, name: &str) -> bool {
        self.reverse.contains_key(name)
    }

    /// `true` when a forward rule is registered for op `name`.
    pub fn has_forward(&self, name: &str) -> bool {
        self.forward.contains_key(name)
    }
}

/// Which derivative rule of an extension op is wanted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A Jacobian-vector product (tangents pushed forward).
    Forward,
    /// A vector-Jacobian product (cotangents pulled back).
    Reverse,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Forward => "forward",
            Mode::Reverse => "reverse",
        }
    }

    /// The transform an error about this mode names.
    fn op(self) -> &'static str {
        match self {
            Mode::Forward => "jvp",
            Mode::Reverse => "backward",
        }
    }
}

/// The error for an extension op without a rule in the active rule set.
fn missing_rule(op: &dyn ExtensionOp, mode: Mode, registered: bool) -> Error {
    let why = if registered {
        "the AdContext's extension rules have none"
    } else {
        "extension rules are only available through an AdContext: build one with \
         AdContext::builder().with_extension_rules(..) and differentiate with it"
    };
    Error::autodiff(
        mode.op(),
        format!(
            "no {}-mode derivative rule for extension op '{}' ({why})",
            mode.name(),
            op.name()
        ),
    )
}

/// The reverse rule of `op` in `rules`, or the error naming the op and the mode.
fn reverse_rule<'r, B: Backend>(
    op: &dyn ExtensionOp,
    rules: Option<&'r ExtensionRules<B>>,
) -> Result<&'r ReverseRule<B>> {
    rules
        .and_then(|r| r.reverse.get(op.name()))
        .ok_or_else(|| missing_rule(op, Mode::Reverse, rules.is_some()))
}

/// The forward rule of `op` in `rules`, or the error naming the op and the mode.
fn forward_rule<'r, B: Backend>(
    op: &dyn ExtensionOp,
    rules: Option<&'r ExtensionRules<B>>,
) -> Result<&'r ForwardRule<B>> {
    rules
        .and_then(|r| r.forward.get(op.name()))
        .ok_or_else(|| missing_rule(op, Mode::Forward, rules.is_some()))
}

/// Fails, naming the op and the mode, when `op` is an extension op without a rule for `mode` in
/// `rules`; checked before a node's saved values are taken, so a missing rule leaves the graph intact.
pub(crate) fn ensure_rule<B: Backend>(
    op: &Op,
    rules: Option<&ExtensionRules<B>>,
    mode: Mode,
) -> Result<()> {
    let Op::Extension(e) = op else {
        return Ok(());
    };
    match mode {
        Mode::Forward => forward_rule(e.as_ref(), rules).map(drop),
        Mode::Reverse => reverse_rule(e.as_ref(), rules).map(drop),
    }
}

/// The saved inputs and output of an extension node, which saves them all.
fn args<'a, B: Backend>(
    op: &'a Arc<dyn ExtensionOp>,
    inputs: &'a [Tensor<B>],
    output: &'a Tensor<B>,
) -> RuleArgs<'a, B> {
    RuleArgs {
        op: op.as_ref(),
        inputs,
        output,
    }
}

/// Runs the reverse rule of `op` from `rules`, or fails naming the op and the mode.
pub(crate) fn vjp<B: Backend>(
    op: &Arc<dyn ExtensionOp>,
    rules: Option<&ExtensionRules<B>>,
    inputs: &[Tensor<B>],
    output: &Tensor<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let grads = reverse_rule(op.as_ref(), rules)?(&args(op, inputs, output), g, needs)?;
    if grads.len() != inputs.len() {
        return Err(Error::autodiff(
            "backward",
            format!(
                "the reverse rule of '{}' returned {} gradients for {} inputs",
                op.name(),
                grads.len(),
                inputs.len()
            ),
        ));
    }
    for (x, dx) in inputs.iter().zip(&grads) {
        if let Some(dx) = dx
            && dx.shape() != x.shape()
        {
            return Err(Error::shapes("backward", x.shape(), dx.shape()).with_hint(
                "an extension's reverse rule returned a gradient whose shape differs from its input's",
            ));
        }
    }
    Ok(grads)
}

/// Runs the forward rule of `op` from `rules`, or fails naming the op and the mode.
pub(crate) fn jvp<B: Backend>(
    op: &Arc<dyn ExtensionOp>,
    rules: Option<&ExtensionRules<B>>,
    inputs: &[Tensor<B>],
    output: &Tensor<B>,
    tangents: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let t = forward_rule(op.as_ref(), rules)?(&args(op, inputs, output), tangents)?;
    if let Some(t) = &t
        && t.shape() != output.shape()
    {
        return Err(Error::shapes("jvp", output.shape(), t.shape()).with_hint(
            "an extension's forward rule returned a tangent whose shape differs from its output's",
        ));
    }
    Ok(t)
}

impl<B: Backend> Tensor<B> {
    /// Applies the extension op `op` to `inputs` (all on one backend): validates them with
    /// [`ExtensionOp::output_spec`], runs the backend's kernel and, when an input is tracked, records the
    /// op so an [`AdContext`](crate::AdContext) with the family's rules can differentiate it. On a
    /// [`TracingBackend`](crate::TracingBackend) it records a program node instead of computing.
    pub fn apply_extension(op: Arc<dyn ExtensionOp>, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
        let first = inputs.first().ok_or_else(|| {
            Error::invalid(
                "apply_extension",
                format!("extension op '{}' needs at least one input", op.name()),
            )
        })?;
        for t in &inputs[1..] {
            first.check_device("apply_extension", t)?;
        }
        let specs: Vec<_> = inputs.iter().map(|t| (t.dtype(), t.shape())).collect();
        let spec = op.output_spec(&specs)?;
        let parts: Vec<_> = inputs.iter().map(|t| (t.storage(), t.layout())).collect();
        let storage = first.backend().extension(&op, &parts)?;
        let backend = first.backend();
        let len = backend.storage_len(&storage);
        if backend.storage_dtype(&storage) != spec.dtype || len != spec.shape.iter().product() {
            return Err(Error::Backend {
                backend: first.backend().name().to_string(),
                message: format!(
                    "extension op '{}' produced {} x{len} where its spec says {}{:?}",
                    op.name(),
                    backend.storage_dtype(&storage),
                    spec.dtype,
                    spec.shape
                ),
            });
        }
        let out = Tensor::from_output_dims(storage, &spec.shape, backend);
        Ok(out.record(|| Op::Extension(op), inputs))
    }
}
