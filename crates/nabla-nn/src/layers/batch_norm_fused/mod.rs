//! Batch normalisation in training mode, optionally followed by a ReLU, as one fused op (what PyTorch's `native_batch_norm` and
//! `native_batch_norm_backward` are): from `x` (`[N, C, *]`), the scale `w` and the shift `b`
//! (`[C]`), one op computes each channel's batch mean and biased variance and `y = (x - mean) /
//! sqrt(var + eps) w + b`, reading `x` three times and writing `y` once, where the composite
//! formula makes about six passes forward and more backward. Its output is flat: `y` (in `x`'s
//! layout), then the `C` means, then the `C` variances (which the layer folds into its running
//! statistics). The vector-Jacobian product is one op too: one pass for each channel's two sums and
//! one pass writing the input's cotangent.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is
//! tracked (plain `backward`, the training case); when the pass builds a graph (higher order) and
//! for forward mode, it differentiates the composite formula of the same flat output. The fused op
//! ([`BatchNormOp`]) runs for `f32` and `f64` on a backend with fast-path kernels
//! ([`Backend::fast_path_kernels`]); elsewhere the layer is the composite.

#[cfg(test)]
mod tests;

use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
use nabla_core::fast_path::{BatchNormOp, BatchNormSettings as Settings};
use nabla_core::{Backend, DType, Error, FastKernels, FastPathOp, Result};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

/// The normalised input and the batch statistics, `[1, C, 1, ...]` each.
pub(crate) struct Normalized<B: Backend> {
    pub y: Tensor<B>,
    pub mean: Tensor<B>,
    pub var: Tensor<B>,
}

/// The backend's kernels when the fused op runs `x` with the layer's parameters `params`: on a
/// backend with fast-path kernels, in `f32` or `f64`, one dtype.
pub(crate) fn applies<'a, B: Backend>(
    x: &Tensor<B>,
    params: impl IntoIterator<Item = &'a Tensor<B>>,
) -> Option<FastKernels> {
    let one_float_dtype = matches!(x.dtype(), DType::F32 | DType::F64)
        && params.into_iter().all(|p| p.dtype() == x.dtype());
    x.backend().fast_path_kernels().filter(|_| one_float_dtype)
}

/// Batch normalisation of `x` (`[N, C, *]`, at least one value per channel) with the batch
/// statistics, scale `w` and shift `b` (`[C]`), as one fused op run by `kernels`.
pub(crate) fn batch_norm<B: Backend>(
    kernels: FastKernels,
    x: &Tensor<B>,
    w: &Tensor<B>,
    b: &Tensor<B>,
    eps: f64,
    relu: bool,
) -> Result<Normalized<B>> {
    let op = FastPathOp {
        op: BatchNormOp::Forward(Settings {
            eps: eps.to_bits(),
            relu,
        }),
        kernels,
    };
    let flat = Tensor::apply_family_op::<FusedBatchNorm>(Arc::new(op), &[x, w, b])?;
    unpack(&flat, x)
}

/// The parts of the forward op's flat output for the input `x`.
fn unpack<B: Backend>(flat: &Tensor<B>, x: &Tensor<B>) -> Result<Normalized<B>> {
    let (numel, c) = (x.numel(), x.shape()[1]);
    let mut stat_shape = vec![1; x.rank()];
    stat_shape[1] = c;
    Ok(Normalized {
        y: flat.narrow(0, 0, numel)?.reshape(x.shape().to_vec())?,
        mean: flat.narrow(0, numel, c)?.reshape(stat_shape.clone())?,
        var: flat.narrow(0, numel + c, c)?.reshape(stat_shape)?,
    })
}

/// The forward op's flat output by the composite formula, for `v = [x, w, b]`: what the rules
/// differentiate for higher orders and forward mode.
fn composite_flat<B: Backend>(v: &[Tensor<B>], settings: Settings) -> Result<Tensor<B>> {
    let eps = settings.eps();
    let [x, w, b] = v else {
        return Err(Error::invalid("fused.batch_norm", "expected three inputs"));
    };
    let axes: Vec<isize> = (0..x.rank() as isize).filter(|&a| a != 1).collect();
    let mut stat_shape = vec![1; x.rank()];
    stat_shape[1] = x.shape()[1];
    let mean = x.mean(&axes, true)?;
    let centered = x.sub(&mean)?;
    let var = centered.square()?.mean(&axes, true)?;
    let mut y = centered
        .mul(var.add(eps)?.rsqrt()?)?
        .mul(w.reshape(stat_shape.clone())?)?
        .add(b.reshape(stat_shape)?)?;
    if settings.relu {
        y = y.relu()?;
    }
    Tensor::cat(
        &[&y.flatten_all()?, &mean.flatten_all()?, &var.flatten_all()?],
        0,
    )
}

/// The family binding the fused batch norm's rules.
struct FusedBatchNorm;

impl ExtensionFamily for FusedBatchNorm {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.batch_norm", batch_norm_reverse)
            .forward("fused.batch_norm", |args, t| {
                let settings = forward_of(args)?.op.settings();
                composite_jvp(args, t, |v| composite_flat(v, settings))
            })
    }
}

/// The recorded forward op.
fn forward_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<FastPathOp<BatchNormOp>> {
    recorded_op(args, "fused.batch_norm", |op| {
        matches!(op, BatchNormOp::Forward(_))
    })
}

/// The forward op's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn batch_norm_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let recorded = forward_of(args)?;
    let settings = recorded.op.settings();
    if let Some(grads) = composite_vjp_if_tracked(args, g, |v| composite_flat(v, settings))? {
        return Ok(grads);
    }
    let [x, w, b] = args.inputs else {
        return Err(Error::invalid("fused.batch_norm", "expected three inputs"));
    };
    let op = Arc::new(recorded.with(BatchNormOp::Vjp(settings)));
    let flat = Tensor::apply_family_op::<FusedBatchNorm>(op, &[x, w, args.output, g])?;
    split_flat(&flat, &[Some(x), Some(w), Some(b)])
}
