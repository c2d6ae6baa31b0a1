//! Binary cross-entropy (on probabilities and on logits) and the Kullback-Leibler divergence.

use super::{Reduction, check_broadcastable, check_float, check_like};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;

/// PyTorch's floor for the logarithms of [`binary_cross_entropy`].
const LOG_FLOOR: f64 = -100.0;

/// Fails unless every element of `t` lies in `[0, 1]` (NaN included), naming the first one that
/// does not.
fn check_unit_interval<B: Backend>(op: &'static str, what: &str, t: &Tensor<B>) -> Result<()> {
    let values = t.to_f64_vec()?;
    match values.into_iter().find(|v| !(0.0..=1.0).contains(v)) {
        Some(v) => Err(Error::invalid(
            op,
            format!("all elements of the {what} should be between 0 and 1, found {v}"),
        )),
        None => Ok(()),
    }
}

/// `max(log_fn(z), -100)`, with `log_fn` evaluated only where its argument `arg` is positive (so
/// that a logarithm of 0 sends no NaN through the reverse pass). Where the floor applies the value
/// is constant and its derivative 0.
fn floored_log<B: Backend>(
    arg: &Tensor<B>,
    z: &Tensor<B>,
    log_fn: impl Fn(&Tensor<B>) -> Result<Tensor<B>>,
    neutral: f64,
) -> Result<Tensor<B>> {
    let positive = arg.gt(0.0)?;
    let l = log_fn(&positive.where_(z, neutral)?)?;
    positive
        .logical_and(&l.gt(LOG_FLOOR)?)?
        .where_(&l, LOG_FLOOR)
}

/// Binary cross-entropy between probabilities `input` and targets in `[0, 1]`
/// (`F.binary_cross_entropy(input, target, weight, reduction=...)`):
/// `-weight * (t log(x) + (1 - t) log(1 - x))` with both logarithms clamped below at -100 as in
/// PyTorch, so probabilities of exactly 0 or 1 give finite losses.
///
/// `weight` must broadcast to the input's shape. Inputs or targets outside `[0, 1]` are an error,
/// as in PyTorch. The gradient is the derivative of the formula: where a logarithm is clamped (a
/// probability within `e^-100` of 0 or 1, or exactly 0 or 1) that term is constant and contributes
/// no gradient, whereas PyTorch's hand-written backward uses `(x - t) / max(x (1 - x), 1e-12)`
/// there; everywhere else they agree. Prefer [`binary_cross_entropy_with_logits`], which never
/// saturates.
pub fn binary_cross_entropy<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    weight: Option<&Tensor<B>>,
    reduction: Reduction,
) -> Result<Tensor<B>> {
    const OP: &str = "binary_cross_entropy";
    check_float(OP, "input", input)?;
    check_like(OP, "target", input, target)?;
    check_broadcastable(OP, "weight", input, weight)?;
    check_unit_interval(OP, "input", input)?;
    check_unit_interval(OP, "target", target)?;
    let log_x = floored_log(input, input, |z| z.log(), 1.0)?;
    let one_minus = input.neg()?.add(1.0)?;
    let log_1mx = floored_log(&one_minus, input, |z| z.neg()?.log1p(), 0.0)?;
    let mut loss = target.sub(1.0)?.mul(&log_1mx)?.sub(target.mul(&log_x)?)?;
    if let Some(w) = weight {
        loss = loss.mul(w)?;
    }
    reduction.apply(&loss)
}

/// Options of [`binary_cross_entropy_with_logits`], with PyTorch's defaults (no weights, mean
/// reduction).
#[derive(Clone, Debug)]
pub struct BceWithLogitsOptions<B: Backend> {
    /// A weight per element, broadcast to the input's shape (PyTorch's `weight`).
    pub weight: Option<Tensor<B>>,
    /// The weight of the positive term, broadcast along the trailing (class) axis, e.g. shape `[C]`
    /// for input `[N, C]` (PyTorch's `pos_weight`).
    pub pos_weight: Option<Tensor<B>>,
    /// How the per-element losses are combined.
    pub reduction: Reduction,
}

impl<B: Backend> Default for BceWithLogitsOptions<B> {
    fn default() -> Self {
        BceWithLogitsOptions {
            weight: None,
            pos_weight: None,
            reduction: Reduction::Mean,
        }
    }
}

/// Binary cross-entropy on logits (`F.binary_cross_entropy_with_logits`):
/// `weight * ((1 - t) x - (1 + (pos_weight - 1) t) log_sigmoid(x))`, with `log_sigmoid(x) =
/// -softplus(-x)` evaluated stably, so logits of ±1e4 give finite losses and gradients.
///
/// `target` must have the input's shape; `weight` and `pos_weight` must broadcast to it.
///
/// ```
/// # use nabla_nn::loss::{binary_cross_entropy_with_logits, BceWithLogitsOptions}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1e4f32, -1e4], [2], &cpu)?;
/// let t = Tensor::from_vec(vec![0.0f32, 0.0], [2], &cpu)?;
/// let loss = binary_cross_entropy_with_logits(&x, &t, &BceWithLogitsOptions::default())?;
/// assert_eq!(loss.item::<f32>()?, 5e3);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn binary_cross_entropy_with_logits<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    options: &BceWithLogitsOptions<B>,
) -> Result<Tensor<B>> {
    const OP: &str = "binary_cross_entropy_with_logits";
    check_float(OP, "input", input)?;
    check_like(OP, "target", input, target)?;
    check_broadcastable(OP, "weight", input, options.weight.as_ref())?;
    check_broadcastable(OP, "pos_weight", input, options.pos_weight.as_ref())?;
    // -log_sigmoid(x) = softplus(-x).
    let mut neg_log_sigmoid = input.neg()?.softplus()?;
    if let Some(pw) = &options.pos_weight {
        neg_log_sigmoid = neg_log_sigmoid.mul(pw.sub(1.0)?.mul(target)?.add(1.0)?)?;
    }
    let mut loss = target.neg()?.add(1.0)?.mul(input)?.add(&neg_log_sigmoid)?;
    if let Some(w) = &options.weight {
        loss = loss.mul(w)?;
    }
    options.reduction.apply(&loss)
}

/// The reductions of [`kl_div`]: PyTorch's `reduction` argument, which there also accepts
/// `'batchmean'`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KlDivReduction {
    /// One loss per element.
    None,
    /// The mean over all elements (PyTorch's default, though not the divergence's definition).
    #[default]
    Mean,
    /// The sum.
    Sum,
    /// The sum divided by the batch size (the input's first dimension; the sum for a scalar
    /// input): the true KL divergence per sample.
    BatchMean,
}

impl From<Reduction> for KlDivReduction {
    fn from(r: Reduction) -> Self {
        match r {
            Reduction::None => KlDivReduction::None,
            Reduction::Mean => KlDivReduction::Mean,
            Reduction::Sum => KlDivReduction::Sum,
        }
    }
}

/// Kullback-Leibler divergence (`F.kl_div(input, target, reduction=..., log_target=...)`) with
/// `input` the log-probabilities of the model: per element `t (log t - input)`, taken as
/// `-t input` where `t == 0`, or `e^t (t - input)` when `log_target` (the target given as
/// log-probabilities). `target` must have the input's shape.
///
/// ```
/// # use nabla_nn::loss::{kl_div, KlDivReduction}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let logq = Tensor::from_vec(vec![0.5f64.ln(), 0.5f64.ln()], [1, 2], &cpu)?;
/// let p = Tensor::from_vec(vec![1.0f64, 0.0], [1, 2], &cpu)?;
/// let kl = kl_div(&logq, &p, KlDivReduction::BatchMean, false)?.item::<f64>()?;
/// assert!((kl - std::f64::consts::LN_2).abs() < 1e-12);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn kl_div<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    reduction: KlDivReduction,
    log_target: bool,
) -> Result<Tensor<B>> {
    const OP: &str = "kl_div";
    check_float(OP, "input", input)?;
    check_like(OP, "target", input, target)?;
    let loss = if log_target {
        target.exp()?.mul(target.sub(input)?)?
    } else {
        // xlogy(t, t): 0 where t == 0, with the logarithm kept away from 0 so no NaN flows back.
        let zero = target.eq(0.0)?;
        let t_log_t = zero.where_(0.0, target.mul(zero.where_(1.0, target)?.log()?)?)?;
        t_log_t.sub(target.mul(input)?)?
    };
    match reduction {
        KlDivReduction::None => Ok(loss),
        KlDivReduction::Mean => loss.mean_all(),
        KlDivReduction::Sum => loss.sum_all(),
        KlDivReduction::BatchMean => match input.shape().first() {
            Some(&n) => loss.sum_all()?.div(n as f64),
            None => loss.sum_all(),
        },
    }
}
