//! Classification losses over class scores: negative log-likelihood and cross-entropy.

use super::{Reduction, check_float, check_like};
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;

/// Options of [`nll_loss`], with PyTorch's defaults (no class weights, `ignore_index = -100`,
/// mean reduction).
#[derive(Clone, Debug)]
pub struct NllLossOptions<B: Backend> {
    /// A weight per class, shape `[C]` (PyTorch's `weight`).
    pub weight: Option<Tensor<B>>,
    /// Targets equal to this index contribute nothing, neither to the loss nor to the mean's
    /// denominator.
    pub ignore_index: i64,
    /// How the per-sample losses are combined. [`Reduction::Mean`] divides by the summed weights of
    /// the targets that are not ignored.
    pub reduction: Reduction,
}

impl<B: Backend> Default for NllLossOptions<B> {
    fn default() -> Self {
        NllLossOptions {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
        }
    }
}

/// Options of [`cross_entropy`], with PyTorch's defaults (no class weights, `ignore_index = -100`,
/// mean reduction, no label smoothing).
#[derive(Clone, Debug)]
pub struct CrossEntropyOptions<B: Backend> {
    /// A weight per class, shape `[C]` (PyTorch's `weight`).
    pub weight: Option<Tensor<B>>,
    /// Class-index targets equal to this index contribute nothing (not used with probability
    /// targets, as in PyTorch).
    pub ignore_index: i64,
    /// How the per-sample losses are combined (see [`cross_entropy`] for the means).
    pub reduction: Reduction,
    /// Label smoothing in `[0, 1]`: the target becomes a mix of the given one (weight
    /// `1 - label_smoothing`) and the uniform distribution over the `C` classes.
    pub label_smoothing: f64,
}

impl<B: Backend> Default for CrossEntropyOptions<B> {
    fn default() -> Self {
        CrossEntropyOptions {
            weight: None,
            ignore_index: -100,
            reduction: Reduction::Mean,
            label_smoothing: 0.0,
        }
    }
}

/// The position of the class axis: 0 for an unbatched `[C]` input, otherwise 1 (`[N, C, d1, ...]`).
fn class_axis(rank: usize) -> usize {
    usize::from(rank >= 2)
}

/// Checks the input scores and returns `(class axis, number of classes)`.
fn check_scores<B: Backend>(op: &'static str, input: &Tensor<B>) -> Result<(usize, usize)> {
    check_float(op, "input", input)?;
    if input.rank() == 0 {
        return Err(Error::invalid(
            op,
            "the input must have a class axis: shape [C], [N, C] or [N, C, d1, ...], got a scalar",
        ));
    }
    let axis = class_axis(input.rank());
    let classes = input.shape()[axis];
    if classes == 0 {
        return Err(Error::invalid(
            op,
            format!("the input {:?} has no classes", input.shape()),
        ));
    }
    Ok((axis, classes))
}

/// Checks the class weights: a float `[C]` tensor of the input's dtype.
fn check_class_weight<B: Backend>(
    op: &'static str,
    input: &Tensor<B>,
    classes: usize,
    weight: Option<&Tensor<B>>,
) -> Result<()> {
    let Some(w) = weight else { return Ok(()) };
    check_float(op, "class weight", w)?;
    if w.shape() != [classes] {
        return Err(Error::shapes(op, input.shape(), w.shape())
            .with_hint(format!("the class weight must have shape [{classes}]")));
    }
    if w.dtype() != input.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: input.dtype(),
            rhs: w.dtype(),
        });
    }
    Ok(())
}

/// Validated class-index targets.
struct IndexTargets<B: Backend> {
    /// `true` where the target is not `ignore_index` (target shape).
    keep: Tensor<B>,
    /// The targets as `I64`, with ignored ones replaced by class 0 (target shape).
    safe: Tensor<B>,
}

impl<B: Backend> IndexTargets<B> {
    /// Checks that `target` holds integer class indices of the shape `input` needs (`input`'s shape
    /// without its class axis), each in `[0, C)` or equal to `ignore_index`.
    fn new(
        op: &'static str,
        input: &Tensor<B>,
        target: &Tensor<B>,
        ignore_index: i64,
    ) -> Result<Self> {
        let (axis, classes) = check_scores(op, input)?;
        if !target.dtype().is_int() {
            return Err(Error::dtype(op, target.dtype()).with_hint(format!(
                "{op}: class-index targets must be an integer tensor (int64), got {}",
                target.dtype()
            )));
        }
        let mut expected = input.shape().to_vec();
        expected.remove(axis);
        if target.shape() != expected.as_slice() {
            return Err(
                Error::shapes(op, input.shape(), target.shape()).with_hint(format!(
                    "class-index targets for input {:?} must have shape {expected:?}",
                    input.shape()
                )),
            );
        }
        let target = target.cast(DType::I64)?;
        // Traced targets have no values yet: the gather kernels check the range when the program runs.
        let bad = if target.backend().is_symbolic() {
            None
        } else {
            target
                .to_vec::<i64>()?
                .into_iter()
                .find(|&t| t != ignore_index && !(0..classes as i64).contains(&t))
        };
        if let Some(index) = bad {
            return Err(Error::IndexOutOfBounds {
                op,
                index,
                size: classes,
            });
        }
        let keep = target.ne(ignore_index)?;
        let safe = keep.where_(&target, 0i64)?;
        Ok(IndexTargets { keep, safe })
    }

    /// The class weight of each target (target shape).
    fn weights(&self, weight: &Tensor<B>) -> Result<Tensor<B>> {
        weight
            .index_select(0, &self.safe.flatten_all()?)?
            .reshape(self.safe.shape().to_vec())
    }

    /// The denominator of a weighted mean: the summed weights of the kept targets (their count
    /// without weights).
    fn total_weight(&self, target_weights: Option<&Tensor<B>>, dtype: DType) -> Result<Tensor<B>> {
        match target_weights {
            Some(w) => self.keep.where_(w, 0.0)?.sum_all(),
            None => self.keep.cast(dtype)?.sum_all(),
        }
    }

    /// The negative log-likelihood of log-probabilities `logp` at the targets, reduced.
    fn nll(
        &self,
        logp: &Tensor<B>,
        weight: Option<&Tensor<B>>,
        reduction: Reduction,
    ) -> Result<Tensor<B>> {
        let axis = class_axis(logp.rank()) as isize;
        let picked = logp
            .gather(axis, &self.safe.unsqueeze(axis)?)?
            .squeeze(axis)?
            .neg()?;
        let target_weights = weight.map(|w| self.weights(w)).transpose()?;
        let weighted = match &target_weights {
            Some(w) => picked.mul(w)?,
            None => picked,
        };
        let loss = self.keep.where_(&weighted, 0.0)?;
        match reduction {
            Reduction::Mean => loss
                .sum_all()?
                .div(self.total_weight(target_weights.as_ref(), logp.dtype())?),
            other => other.apply(&loss),
        }
    }
}

/// `weight` (shape `[C]`) shaped to broadcast along the class axis of a rank-`rank` input.
fn class_view<B: Backend>(weight: &Tensor<B>, rank: usize) -> Result<Tensor<B>> {
    let mut dims = vec![1usize; rank];
    dims[class_axis(rank)] = weight.numel();
    weight.reshape(dims)
}

/// Negative log-likelihood loss (`F.nll_loss`) of log-probabilities `input` (shape `[C]`, `[N, C]`
/// or `[N, C, d1, ...]`) at integer class-index targets (shape `[]`, `[N]` or `[N, d1, ...]`):
/// `-weight[t] * input[n, t]` per sample.
///
/// With [`Reduction::Mean`] the sum is divided by the summed class weights of the targets that are
/// not `ignore_index` (their count without weights). When every target is ignored that is 0 / 0 and
/// the loss is NaN, exactly as in PyTorch.
///
/// Errors: a float (non-integer) target, a target of the wrong shape, a class index outside `[0, C)`
/// that is not `ignore_index` (the error names it), class weights that are not `[C]`.
///
/// ```
/// # use nabla_nn::loss::{nll_loss, NllLossOptions}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let logp = Tensor::from_vec(vec![-0.5f64, -1.0, -2.0, -0.25], [2, 2], &cpu)?;
/// let target = Tensor::from_vec(vec![1i64, -100], [2], &cpu)?;
/// assert_eq!(nll_loss(&logp, &target, &NllLossOptions::default())?.item::<f64>()?, 1.0);
/// assert!(nll_loss(&logp, &Tensor::from_vec(vec![2i64, 0], [2], &cpu)?, &NllLossOptions::default()).is_err());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn nll_loss<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    options: &NllLossOptions<B>,
) -> Result<Tensor<B>> {
    const OP: &str = "nll_loss";
    let targets = IndexTargets::new(OP, input, target, options.ignore_index)?;
    let classes = input.shape()[class_axis(input.rank())];
    check_class_weight(OP, input, classes, options.weight.as_ref())?;
    targets.nll(input, options.weight.as_ref(), options.reduction)
}

/// Cross-entropy between logits and targets (`F.cross_entropy`), evaluated as the negative
/// log-likelihood of `log_softmax(input)` along the class axis, so any finite logits (±1e4
/// included) give a finite loss and gradient.
///
/// `input` has shape `[C]`, `[N, C]` or `[N, C, d1, ...]`. The target is either
/// - class indices: an integer tensor of the input's shape without the class axis, with
///   `weight`, `ignore_index` and `label_smoothing` as in PyTorch. The mean divides both the
///   log-likelihood part and the label-smoothing part by the summed class weights of the targets
///   that are not ignored (their count without weights); when every target is ignored that is
///   0 / 0 and the loss is NaN, exactly as in PyTorch; or
/// - class probabilities: a float tensor of the input's shape (`ignore_index` unused); the mean
///   divides by the number of samples `numel / C`.
///
/// Errors: a target that is neither (a float target of another shape, an index outside `[0, C)`
/// that is not `ignore_index`), class weights that are not `[C]`, `label_smoothing` outside
/// `[0, 1]`.
///
/// ```
/// # use nabla_nn::loss::{cross_entropy, CrossEntropyOptions}; use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let logits = Tensor::from_vec(vec![1e4f32, 0.0, -1e4], [1, 3], &cpu)?;
/// let probs = Tensor::from_vec(vec![0.0f32, 0.0, 1.0], [1, 3], &cpu)?;
/// let opts = CrossEntropyOptions { label_smoothing: 0.1, ..Default::default() };
/// let loss = cross_entropy(&logits, &probs, &opts)?.item::<f32>()?;
/// assert!(loss.is_finite());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn cross_entropy<B: Backend>(
    input: &Tensor<B>,
    target: &Tensor<B>,
    options: &CrossEntropyOptions<B>,
) -> Result<Tensor<B>> {
    const OP: &str = "cross_entropy";
    let (axis, classes) = check_scores(OP, input)?;
    let weight = options.weight.as_ref();
    check_class_weight(OP, input, classes, weight)?;
    let smoothing = options.label_smoothing;
    if !(0.0..=1.0).contains(&smoothing) {
        return Err(Error::invalid(
            OP,
            format!("label_smoothing must be between 0.0 and 1.0, got {smoothing}"),
        ));
    }
    let logp = input.log_softmax(axis as isize)?;
    let weight_view = weight.map(|w| class_view(w, input.rank())).transpose()?;
    // -sum_c weight_c * target_c * logp_c over the class axis.
    let weighted_sum = |t: Option<&Tensor<B>>| -> Result<Tensor<B>> {
        let mut x = logp.clone();
        if let Some(t) = t {
            x = x.mul(t)?;
        }
        if let Some(w) = &weight_view {
            x = x.mul(w)?;
        }
        x.sum(&[axis as isize], false)?.neg()
    };
    if target.dtype().is_float() {
        check_like(OP, "target (class probabilities)", input, target).map_err(|e| {
            e.with_hint(format!(
                "probability targets must have the input's shape {:?}; class-index targets must be integers",
                input.shape()
            ))
        })?;
        let target = if smoothing > 0.0 {
            target
                .mul(1.0 - smoothing)?
                .add(smoothing / classes as f64)?
        } else {
            target.clone()
        };
        let loss = weighted_sum(Some(&target))?;
        return match options.reduction {
            Reduction::Mean => loss.sum_all()?.div((input.numel() / classes) as f64),
            other => other.apply(&loss),
        };
    }
    let targets = IndexTargets::new(OP, input, target, options.ignore_index)?;
    let nll = targets.nll(&logp, weight, options.reduction)?;
    if smoothing == 0.0 {
        return Ok(nll);
    }
    let smooth = targets.keep.where_(&weighted_sum(None)?, 0.0)?;
    let smooth = match options.reduction {
        Reduction::Mean => {
            let target_weights = weight.map(|w| targets.weights(w)).transpose()?;
            smooth
                .sum_all()?
                .div(targets.total_weight(target_weights.as_ref(), input.dtype())?)?
        }
        reduction => reduction.apply(&smooth)?,
    };
    nll.mul(1.0 - smoothing)?
        .add(smooth.mul(smoothing / classes as f64)?)
}
