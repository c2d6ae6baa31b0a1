//! Loss functions in the style of `torch.nn.functional`: the same names, arguments, defaults,
//! reductions and numerics.
//!
//! Every loss is built from differentiable tensor ops, so `loss.backward()` gives the gradients
//! with respect to the inputs (and targets, where PyTorch differentiates them too). Losses that take
//! logits or logarithms are evaluated in numerically stable forms (log-sum-exp, log-sigmoid through
//! softplus, logs clamped at -100 as PyTorch's `binary_cross_entropy`), so inputs such as ±1e4
//! give finite values and gradients in float32 and float64.
//!
//! Inputs must be float32 or float64; where PyTorch would silently broadcast an input against its
//! target (with a warning), these functions return a shape error instead, naming the loss and both
//! shapes.
//!
//! ```
//! use nabla_nn::loss::{self, CrossEntropyOptions, Reduction};
//! use nabla_tensor::Tensor;
//! use nabla_cpu::CpuBackend;
//! let cpu = CpuBackend::new();
//! let logits = Tensor::var("logits", Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 1.0], [2, 2], &cpu)?)?;
//! let target = Tensor::from_vec(vec![0i64, 1], [2], &cpu)?;
//! let ce = loss::cross_entropy(&logits, &target, &CrossEntropyOptions::default())?;
//! let expected = ((1.0 + (-2.0f64).exp()).ln() + (1.0 + (-1.0f64).exp()).ln()) / 2.0;
//! assert!((ce.item::<f64>()? - expected).abs() < 1e-12);
//! let grads = ce.backward()?;
//! assert_eq!(grads.get(&logits).unwrap().shape(), &[2, 2]);
//!
//! let mse = loss::mse_loss(&logits, &Tensor::zeros([2, 2], nabla_core::DType::F64, &cpu)?, Reduction::Sum)?;
//! assert_eq!(mse.item::<f64>()?, 5.0);
//! # Ok::<(), nabla_core::Error>(())
//! ```

mod binary;
mod classification;
mod embedding;

pub use binary::{
    BceWithLogitsOptions, KlDivReduction, binary_cross_entropy, binary_cross_entropy_with_logits,
    kl_div,
};
pub use classification::{CrossEntropyOptions, NllLossOptions, cross_entropy, nll_loss};
pub use embedding::{
    TripletMarginOptions, cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss,
};

use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// How the per-element losses are combined, as PyTorch's `reduction` argument.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// No reduction (`'none'`): one loss per element (or per sample).
    None,
    /// The mean (`'mean'`, the default); some losses divide by a total weight instead of the count,
    /// as documented on each.
    #[default]
    Mean,
    /// The sum (`'sum'`).
    Sum,
}

impl Reduction {
    /// Applies the reduction to per-element losses: as is, their mean or their sum (rank 0). The mean
    /// of no elements is NaN, as in PyTorch.
    pub fn apply<B: Backend>(self, loss: &Tensor<B>) -> Result<Tensor<B>> {
        match self {
            Reduction::None => Ok(loss.clone()),
            Reduction::Mean => loss.mean_all(),
            Reduction::Sum => loss.sum_all(),
        }
    }
}

/// Fails unless `t` holds float32 or float64 values.
pub(crate) fn check_float<B: Backend>(op: &'static str, what: &str, t: &Tensor<B>) -> Result<()> {
    match t.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        other => Err(Error::dtype(op, other).with_hint(format!(
            "{op}: the {what} must be a float32 or float64 tensor, got {other}"
        ))),
    }
}

/// Fails unless `t` is a float tensor with `input`'s dtype and shape.
pub(crate) fn check_like<B: Backend>(
    op: &'static str,
    what: &str,
    input: &Tensor<B>,
    t: &Tensor<B>,
) -> Result<()> {
    check_float(op, what, t)?;
    if t.shape() != input.shape() {
        return Err(Error::shapes(op, input.shape(), t.shape())
            .with_hint(format!("the {what} must have the input's shape")));
    }
    if t.dtype() != input.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: input.dtype(),
            rhs: t.dtype(),
        });
    }
    Ok(())
}

/// Fails unless the optional `t` (a weight) has `input`'s dtype and broadcasts to `input`'s shape
/// without changing it.
pub(crate) fn check_broadcastable<B: Backend>(
    op: &'static str,
    what: &str,
    input: &Tensor<B>,
    t: Option<&Tensor<B>>,
) -> Result<()> {
    let Some(t) = t else { return Ok(()) };
    check_float(op, what, t)?;
    if t.dtype() != input.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: input.dtype(),
            rhs: t.dtype(),
        });
    }
    let (x, w) = (input.shape(), t.shape());
    let fits = w.len() <= x.len()
        && w.iter()
            .rev()
            .zip(x.iter().rev())
            .all(|(&wd, &xd)| wd == xd || wd == 1);
    if !fits {
        return Err(Error::shapes(op, x, w)
            .with_hint(format!("the {what} must broadcast to the input's shape")));
    }
    Ok(())
}

/// `|x|` with PyTorch's derivative `sign(x)` (0 at 0, where `Tensor::abs` gives 1).
pub(crate) fn abs_sign_grad<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.mul(x.sign()?.detach())
}

/// `max(x, 0)` with PyTorch's `clamp_min` derivative: 1 where `x >= 0`.
pub(crate) fn clamp_min_zero<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.ge(0.0)?.where_(x, 0.0)
}

/// Checks a pointwise regression loss's operands and returns `input - target`.
fn difference<B: Backend>(
    op: &'static str,
    input: &Tensor<B>,
    target: &Tensor<B>,
) -> Result<Tensor<B>> {
    check_float(op, "input", input)?;
    check_like(op, "target", input, target)?;
    input.sub(target)
}

/// Mean squared error `(input - target)^2` (`F.mse_loss`). `input` and `target` must have one
/// shape and dtype.
///
/// ```
/// # use nabla_nn::loss::{mse_loss, Reduction}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f32, 3.0], [2], &cpu)?;
/// let y = Tensor::from_vec(vec![0.0f32, 1.0], [2], &cpu)?;
/// assert_eq!(mse_loss(&x, &y, Reduction::Mean)?.item::<f32>()?, 2.5);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn mse_loss<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    reduction: Reduction,
) -> Result<Tensor<B>> {
    reduction.apply(&difference("mse_loss", input, target)?.square()?)
}

/// Mean absolute error `|input - target|` (`F.l1_loss`), with PyTorch's derivative `sign(input -
/// target)` (0 where they are equal).
pub fn l1_loss<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    reduction: Reduction,
) -> Result<Tensor<B>> {
    reduction.apply(&abs_sign_grad(&difference("l1_loss", input, target)?)?)
}

/// The quadratic-then-linear loss shared by smooth L1 and Huber: with `z = |d|`,
/// `quad_scale * d^2` where `z < threshold`, else `lin_scale * (z - threshold / 2)`.
fn quadratic_linear<B: Backend>(
    d: &Tensor<B>,
    threshold: f64,
    quad_scale: f64,
    lin_scale: f64,
) -> Result<Tensor<B>> {
    let z = abs_sign_grad(d)?;
    let quadratic = d.square()?.mul(quad_scale)?;
    let linear = z.sub(0.5 * threshold)?.mul(lin_scale)?;
    z.lt(threshold)?.where_(&quadratic, &linear)
}

/// Smooth L1 loss (`F.smooth_l1_loss(input, target, reduction=..., beta=...)`): with `z = |input -
/// target|`, `0.5 z^2 / beta` where `z < beta`, else `z - 0.5 beta`. PyTorch's default `beta` is
/// 1.0; `beta = 0` is the L1 loss. A negative (or NaN) `beta` is an error.
pub fn smooth_l1_loss<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    reduction: Reduction,
    beta: f64,
) -> Result<Tensor<B>> {
    const OP: &str = "smooth_l1_loss";
    if beta.is_nan() || beta < 0.0 {
        return Err(Error::invalid(
            OP,
            format!("beta must be non-negative, got {beta}"),
        ));
    }
    let d = difference(OP, input, target)?;
    if beta == 0.0 {
        return reduction.apply(&abs_sign_grad(&d)?);
    }
    reduction.apply(&quadratic_linear(&d, beta, 0.5 / beta, 1.0)?)
}

/// Huber loss (`F.huber_loss(input, target, reduction=..., delta=...)`): with `z = |input -
/// target|`, `0.5 z^2` where `z < delta`, else `delta (z - 0.5 delta)`. PyTorch's default `delta`
/// is 1.0; it must be positive.
pub fn huber_loss<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    reduction: Reduction,
    delta: f64,
) -> Result<Tensor<B>> {
    const OP: &str = "huber_loss";
    if delta.is_nan() || delta <= 0.0 {
        return Err(Error::invalid(
            OP,
            format!("delta must be positive, got {delta}"),
        ));
    }
    let d = difference(OP, input, target)?;
    reduction.apply(&quadratic_linear(&d, delta, 0.5, delta)?)
}
