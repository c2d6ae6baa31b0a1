//! Extension ops on tensors and their derivative rules: a family ([`ExtensionFamily`]) binds its rules
//! to each op when the op is recorded, so every transform (`backward`, `grad`, `jvp`, `hessian`,
//! `jacrev`, an [`AdContext`](crate::AdContext)...) differentiates it, eager or traced; an `AdContext`
//! may override them. The rule types and the record are in [`super::extension_rules`].

use super::extension_rules::{
    BoundExtension, ExtensionFamily, ExtensionRules, Mode, RuleArgs, family_rules,
};
use super::op::Op;
use crate::Tensor;
use nabla_core::{Backend, Error, ExtensionOp, Result};
use std::sync::Arc;

/// Fails, naming the op and the mode, when `op` is an extension op without a rule for `mode` (neither
/// in `overrides` nor bound); checked before a node's saved values are taken, so a missing rule leaves
/// the graph intact.
pub(crate) fn ensure_rule<B: Backend>(
    op: &Op<B>,
    overrides: Option<&ExtensionRules<B>>,
    mode: Mode,
) -> Result<()> {
    let Op::Extension(e) = op else {
        return Ok(());
    };
    match mode {
        Mode::Forward => e.forward_rule(overrides).map(drop),
        Mode::Reverse => e.reverse_rule(overrides).map(drop),
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

/// Runs the reverse rule of `ext` (from `overrides`, else bound), or fails naming the op and the mode.
pub(crate) fn vjp<B: Backend>(
    ext: &BoundExtension<B>,
    overrides: Option<&ExtensionRules<B>>,
    inputs: &[Tensor<B>],
    output: &Tensor<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let op = &ext.op;
    let grads = ext.reverse_rule(overrides)?(&args(op, inputs, output), g, needs)?;
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

/// Runs the forward rule of `ext` (from `overrides`, else bound), or fails naming the op and the mode.
pub(crate) fn jvp<B: Backend>(
    ext: &BoundExtension<B>,
    overrides: Option<&ExtensionRules<B>>,
    inputs: &[Tensor<B>],
    output: &Tensor<B>,
    tangents: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op = &ext.op;
    let t = ext.forward_rule(overrides)?(&args(op, inputs, output), tangents)?;
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
    /// Applies the extension op `op` of family `F` to `inputs` (all on one backend) and binds the
    /// family's derivative rules to the recorded node, so `backward`, `grad`, `jvp`, `hessian` and every
    /// other transform differentiate it (see [`ExtensionFamily`]). Otherwise as
    /// [`Tensor::apply_extension`].
    pub fn apply_family_op<F: ExtensionFamily>(
        op: Arc<dyn ExtensionOp>,
        inputs: &[&Tensor<B>],
    ) -> Result<Tensor<B>> {
        let out = Self::run_extension(&op, inputs)?;
        out.record_checked(
            || {
                Op::Extension(BoundExtension {
                    op,
                    rules: Some(family_rules::<F, B>()),
                })
            },
            inputs,
        )
    }

    /// Applies the extension op `op` to `inputs` (all on one backend): validates them with
    /// [`ExtensionOp::output_spec`], runs the backend's kernel and, when an input is tracked, records the
    /// op without rules: only an [`AdContext`](crate::AdContext) given rules for it can differentiate it
    /// (use [`Tensor::apply_family_op`] to bind a family's rules). On a
    /// [`TracingBackend`](crate::TracingBackend) it records a program node instead of computing.
    pub fn apply_extension(op: Arc<dyn ExtensionOp>, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
        let out = Self::run_extension(&op, inputs)?;
        out.record_checked(|| Op::Extension(BoundExtension { op, rules: None }), inputs)
    }

    /// Validates `inputs` for `op`, runs the backend's kernel and checks its output against the spec.
    fn run_extension(op: &Arc<dyn ExtensionOp>, inputs: &[&Tensor<B>]) -> Result<Tensor<B>> {
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
        let backend = first.backend();
        let storage = backend.extension(op, &parts)?;
        let len = backend.storage_len(&storage);
        if backend.storage_dtype(&storage) != spec.dtype
            || len != spec.shape.iter().product::<usize>()
        {
            return Err(Error::Backend {
                backend: backend.name().to_string(),
                message: format!(
                    "extension op '{}' produced {} x{len} where its spec says {}{:?}",
                    op.name(),
                    backend.storage_dtype(&storage),
                    spec.dtype,
                    spec.shape
                ),
            });
        }
        Ok(Tensor::from_output_dims(storage, &spec.shape, backend))
    }
}
