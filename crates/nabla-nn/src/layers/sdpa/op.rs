//! The fused attention as extension ops, with their derivative rules.
//!
//! `fused.attention` maps `q` `[..., L, E]`, `k` `[..., S, E]` and `v` `[..., S, Ev]` (one leading
//! shape) to `[..., L, Ev + 1]`: each query's output row, then its log-sum-exp, which the backward
//! kernel reads to recompute the probabilities without a second softmax. `fused.attention_vjp`
//! maps the three inputs, that packed output and its cotangent to the cotangents of `q`, `k` and
//! `v`, flattened one after the other.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is
//! tracked (plain `backward`, the training case); when the pass builds a graph (`create_graph`,
//! higher order) and for forward mode, it differentiates the composite formula of the packed
//! output ([`super::composite_packed`]), which has the same values up to rounding but keeps the
//! `[L, S]` probabilities.

use super::composite_packed;
use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
pub(super) use nabla_core::fast_path::AttentionOp;
use nabla_core::{Backend, Error, FastKernels, FastPathOp, Result};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

/// The family binding the fused attention's rules.
pub(super) struct FusedAttention;

impl ExtensionFamily for FusedAttention {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.attention", attention_reverse)
            .forward("fused.attention", |args, t| {
                let (scale, causal) = forward_of(args)?.op.params();
                composite_jvp(args, t, |v| composite_packed(v, scale, causal))
            })
    }
}

/// The recorded forward op.
fn forward_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<FastPathOp<AttentionOp>> {
    recorded_op(args, "fused.attention", |op| {
        matches!(op, AttentionOp::Forward { .. })
    })
}

/// Runs the fused attention on `q`, `k` and `v` (validated, one leading shape) with `kernels`: the
/// packed output.
pub(super) fn apply<B: Backend>(
    kernels: FastKernels,
    q: &Tensor<B>,
    k: &Tensor<B>,
    v: &Tensor<B>,
    scale: f64,
    causal: bool,
) -> Result<Tensor<B>> {
    let op = FastPathOp {
        op: AttentionOp::Forward {
            scale: scale.to_bits(),
            causal,
        },
        kernels,
    };
    Tensor::apply_family_op::<FusedAttention>(Arc::new(op), &[q, k, v])
}

/// The forward op's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn attention_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let recorded = forward_of(args)?;
    let (scale, causal) = recorded.op.params();
    if let Some(grads) = composite_vjp_if_tracked(args, g, |v| composite_packed(v, scale, causal))?
    {
        return Ok(grads);
    }
    let [q, k, v] = args.inputs else {
        return Err(Error::invalid("fused.attention", "expected three inputs"));
    };
    let op = Arc::new(recorded.with(AttentionOp::Vjp {
        scale: scale.to_bits(),
        causal,
    }));
    let flat = Tensor::apply_family_op::<FusedAttention>(op, &[q, k, v, args.output, g])?;
    split_flat(&flat, &[Some(q), Some(k), Some(v)])
}
