//! Losses on pairs and triplets of embeddings or scores: cosine embedding, margin ranking and
//! triplet margin.

use super::{Reduction, abs_sign_grad, check_float, check_like, clamp_min_zero};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

/// PyTorch's epsilon added to the squared magnitudes in [`cosine_embedding_loss`].
const COSINE_EPS: f64 = 1e-12;

/// Fails unless the `±1` target is numeric with the given shape.
fn check_target<B: Backend>(
    op: &'static str,
    input: &Tensor<B>,
    target: &Tensor<B>,
    expected: &[usize],
) -> Result<()> {
    if target.dtype().is_bool() || target.dtype().is_complex() {
        return Err(Error::dtype(op, target.dtype()).with_hint(format!(
            "{op}: the target holds 1 or -1 and must be numeric"
        )));
    }
    if target.shape() != expected {
        return Err(
            Error::shapes(op, input.shape(), target.shape()).with_hint(format!(
                "the target for inputs {:?} must have shape {expected:?}",
                input.shape()
            )),
        );
    }
    Ok(())
}

/// Fails unless `x1` is a float tensor and `x2` matches it in shape and dtype.
fn check_pair<B: Backend>(op: &'static str, x1: &Tensor<B>, x2: &Tensor<B>) -> Result<()> {
    check_float(op, "input1", x1)?;
    check_like(op, "input2", x1, x2)
}

/// Cosine embedding loss (`F.cosine_embedding_loss(x1, x2, y, margin=..., reduction=...)`): with
/// `cos` the cosine similarity of `x1` and `x2` along their last axis, `1 - cos` where `y == 1`,
/// `max(0, cos - margin)` where `y == -1` (0 for other targets). PyTorch's default margin is 0.
///
/// `x1` and `x2` have one shape, `[N, D]` with target `[N]` or `[D]` with a scalar target. The
/// cosine is `x1·x2 / sqrt((|x1|² + 1e-12)(|x2|² + 1e-12))`, as in PyTorch, so zero vectors are
/// finite.
pub fn cosine_embedding_loss<B: Backend>(
    x1: &Tensor<B>,
    x2: &Tensor<B>,
    target: &Tensor<B>,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor<B>> {
    const OP: &str = "cosine_embedding_loss";
    check_pair(OP, x1, x2)?;
    if !matches!(x1.rank(), 1 | 2) {
        return Err(Error::invalid(
            OP,
            format!(
                "the inputs must be [N, D] (with a [N] target) or [D] (with a scalar target), got {:?}",
                x1.shape()
            ),
        ));
    }
    check_target(OP, x1, target, &x1.shape()[..x1.rank() - 1])?;
    let axis = [-1isize];
    let dot = x1.mul(x2)?.sum(&axis, false)?;
    let mag1 = x1.square()?.sum(&axis, false)?.add(COSINE_EPS)?;
    let mag2 = x2.square()?.sum(&axis, false)?.add(COSINE_EPS)?;
    let cos = dot.div(mag1.mul(&mag2)?.sqrt()?)?;
    let pos = target.eq(1)?.where_(cos.neg()?.add(1.0)?, 0.0)?;
    let neg = target
        .eq(-1)?
        .where_(clamp_min_zero(&cos.sub(margin)?)?, 0.0)?;
    reduction.apply(&pos.add(&neg)?)
}

/// Margin ranking loss (`F.margin_ranking_loss(x1, x2, y, margin=..., reduction=...)`):
/// `max(0, -y (x1 - x2) + margin)`, where `y = 1` means `x1` should rank higher. PyTorch's default
/// margin is 0. `x1`, `x2` and `y` must share a shape and a float dtype; the gradient reaches all
/// three, as in PyTorch.
pub fn margin_ranking_loss<B: Backend>(
    x1: &Tensor<B>,
    x2: &Tensor<B>,
    target: &Tensor<B>,
    margin: f64,
    reduction: Reduction,
) -> Result<Tensor<B>> {
    const OP: &str = "margin_ranking_loss";
    check_pair(OP, x1, x2)?;
    check_like(OP, "target", x1, target)?;
    let loss = target.neg()?.mul(x1.sub(x2)?)?.add(margin)?;
    reduction.apply(&clamp_min_zero(&loss)?)
}

/// Options of [`triplet_margin_loss`], with PyTorch's defaults (`margin = 1`, `p = 2`,
/// `eps = 1e-6`, no swap, mean reduction).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TripletMarginOptions {
    /// The margin between the positive and the negative distance.
    pub margin: f64,
    /// The order of the norm of the distances: positive, or `f64::INFINITY`.
    pub p: f64,
    /// Added to every difference before its norm is taken (PyTorch's `pairwise_distance`), which
    /// keeps the norm away from its non-differentiable point at 0.
    pub eps: f64,
    /// Uses the smaller of `d(anchor, negative)` and `d(positive, negative)` as the negative
    /// distance (the distance swap of Balntas et al.).
    pub swap: bool,
    /// How the per-triplet losses are combined.
    pub reduction: Reduction,
}

impl Default for TripletMarginOptions {
    fn default() -> Self {
        TripletMarginOptions {
            margin: 1.0,
            p: 2.0,
            eps: 1e-6,
            swap: false,
            reduction: Reduction::Mean,
        }
    }
}

/// PyTorch's `pairwise_distance`: `||x1 - x2 + eps||_p` along the last axis.
fn pairwise_distance<B: Backend>(
    x1: &Tensor<B>,
    x2: &Tensor<B>,
    p: f64,
    eps: f64,
) -> Result<Tensor<B>> {
    let d = x1.sub(x2)?.add(eps)?;
    let axis = [-1isize];
    if p == f64::INFINITY {
        abs_sign_grad(&d)?.max(&axis, false)
    } else if p == 2.0 {
        d.square()?.sum(&axis, false)?.sqrt()
    } else if p == 1.0 {
        abs_sign_grad(&d)?.sum(&axis, false)
    } else {
        abs_sign_grad(&d)?.pow(p)?.sum(&axis, false)?.pow(1.0 / p)
    }
}

/// Triplet margin loss (`F.triplet_margin_loss`): `max(0, margin + d(a, p) - d(a, n))` with
/// `d(x, y) = ||x - y + eps||_p` along the last axis (PyTorch's `pairwise_distance`); with `swap`,
/// `d(a, n)` is replaced by `min(d(a, n), d(p, n))`.
///
/// `anchor`, `positive` and `negative` share one shape, `[N, D]` or `[D]`.
///
/// ```
/// # use nabla_nn::loss::{triplet_margin_loss, TripletMarginOptions}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![0.0f64, 0.0], [1, 2], &cpu)?;
/// let p = Tensor::from_vec(vec![0.0f64, 1.0], [1, 2], &cpu)?;
/// let n = Tensor::from_vec(vec![3.0f64, 0.0], [1, 2], &cpu)?;
/// let opts = TripletMarginOptions { margin: 1.0, eps: 0.0, ..Default::default() };
/// assert_eq!(triplet_margin_loss(&a, &p, &n, &opts)?.item::<f64>()?, 0.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn triplet_margin_loss<B: Backend>(
    anchor: &Tensor<B>,
    positive: &Tensor<B>,
    negative: &Tensor<B>,
    options: &TripletMarginOptions,
) -> Result<Tensor<B>> {
    const OP: &str = "triplet_margin_loss";
    check_float(OP, "anchor", anchor)?;
    check_like(OP, "positive", anchor, positive)?;
    check_like(OP, "negative", anchor, negative)?;
    if anchor.rank() == 0 {
        return Err(Error::invalid(
            OP,
            "the inputs must be [N, D] or [D], got scalars",
        ));
    }
    let p = options.p;
    if p.is_nan() || p <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("the norm order p must be positive (or infinite), got {p}"),
        ));
    }
    let eps = options.eps;
    let d_pos = pairwise_distance(anchor, positive, p, eps)?;
    let mut d_neg = pairwise_distance(anchor, negative, p, eps)?;
    if options.swap {
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps)?)?;
    }
    let loss = d_pos.sub(&d_neg)?.add(options.margin)?;
    options.reduction.apply(&clamp_min_zero(&loss)?)
}
