//! `nabla_rs.nn.functional`'s losses: nabla-nn's loss functions (`nabla::nn::loss`) with PyTorch's
//! signatures, on eager or traced tensors.

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::nn::{group, opt_value};
use crate::on_group;
use crate::tensor::{PyTensor, compute};
use crate::value::Group;
use nabla_core::Error;
use nabla_nn::loss::{
    BceWithLogitsOptions, CrossEntropyOptions, KlDivReduction, NllLossOptions, Reduction,
    TripletMarginOptions,
};
use pyo3::prelude::*;

/// The loss's tensors as one kind: the `required` ones, then the `optional` ones that are given
/// (`present` says which of all were).
fn operands(
    required: &[&Bound<'_, PyAny>],
    optional: &[Option<&Bound<'_, PyAny>>],
) -> PyResult<(Group, Vec<bool>)> {
    let mut values = required
        .iter()
        .map(|x| to_value(x, None).map(Some))
        .collect::<PyResult<Vec<_>>>()?;
    for x in optional {
        values.push(opt_value(*x)?);
    }
    group(values).py()
}

fn reduction(name: &str) -> PyResult<Reduction> {
    match name {
        "mean" => Ok(Reduction::Mean),
        "sum" => Ok(Reduction::Sum),
        "none" => Ok(Reduction::None),
        other => Err(Error::invalid(
            "loss",
            format!("reduction {other:?}: use 'mean', 'sum' or 'none'"),
        ))
        .py(),
    }
}

/// `cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean',
/// label_smoothing=0.0)`: class-index or probability targets, as PyTorch's.
#[pyfunction]
#[pyo3(signature = (input, target, weight = None, ignore_index = -100, reduction = "mean", label_smoothing = 0.0))]
fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
    label_smoothing: f64,
) -> PyResult<PyTensor> {
    let red = self::reduction(reduction)?;
    let (g, present) = operands(&[input, target], &[weight])?;
    compute(py, move || {
        on_group!(g, ts => {
            let opts = CrossEntropyOptions { weight: present[2].then(|| ts[2].clone()), ignore_index, reduction: red, label_smoothing };
            nabla_nn::loss::cross_entropy(&ts[0], &ts[1], &opts)
        })
    })
}

/// `nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean')`.
#[pyfunction]
#[pyo3(signature = (input, target, weight = None, ignore_index = -100, reduction = "mean"))]
fn nll_loss(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    ignore_index: i64,
    reduction: &str,
) -> PyResult<PyTensor> {
    let red = self::reduction(reduction)?;
    let (g, present) = operands(&[input, target], &[weight])?;
    compute(py, move || {
        on_group!(g, ts => {
            let opts = NllLossOptions { weight: present[2].then(|| ts[2].clone()), ignore_index, reduction: red };
            nabla_nn::loss::nll_loss(&ts[0], &ts[1], &opts)
        })
    })
}

/// A loss of `(input, target)` with a reduction.
macro_rules! pointwise_loss {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, target, reduction = "mean"))]
        fn $name(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, reduction: &str) -> PyResult<PyTensor> {
            let red = self::reduction(reduction)?;
            let (g, _) = operands(&[input, target], &[])?;
            compute(py, move || on_group!(g, ts => nabla_nn::loss::$name(&ts[0], &ts[1], red)))
        }
    )*};
}

pointwise_loss! {
    /// `mse_loss(input, target, reduction='mean')`.
    mse_loss;
    /// `l1_loss(input, target, reduction='mean')`.
    l1_loss;
}

/// A loss of `(input, target)` with a reduction and one float option.
macro_rules! pointwise_loss_with {
    ($($(#[$doc:meta])* $name:ident($opt:ident = $default:expr);)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input, target, reduction = "mean", $opt = $default))]
        fn $name(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, reduction: &str, $opt: f64) -> PyResult<PyTensor> {
            let red = self::reduction(reduction)?;
            let (g, _) = operands(&[input, target], &[])?;
            compute(py, move || on_group!(g, ts => nabla_nn::loss::$name(&ts[0], &ts[1], red, $opt)))
        }
    )*};
}

pointwise_loss_with! {
    /// `smooth_l1_loss(input, target, reduction='mean', beta=1.0)`.
    smooth_l1_loss(beta = 1.0);
    /// `huber_loss(input, target, reduction='mean', delta=1.0)`.
    huber_loss(delta = 1.0);
}

/// `binary_cross_entropy(input, target, weight=None, reduction='mean')`: on probabilities.
#[pyfunction]
#[pyo3(signature = (input, target, weight = None, reduction = "mean"))]
fn binary_cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
) -> PyResult<PyTensor> {
    let red = self::reduction(reduction)?;
    let (g, present) = operands(&[input, target], &[weight])?;
    compute(
        py,
        move || on_group!(g, ts => nabla_nn::loss::binary_cross_entropy(&ts[0], &ts[1], present[2].then(|| &ts[2]), red)),
    )
}

/// `binary_cross_entropy_with_logits(input, target, weight=None, reduction='mean',
/// pos_weight=None)`.
#[pyfunction]
#[pyo3(signature = (input, target, weight = None, reduction = "mean", pos_weight = None))]
fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction: &str,
    pos_weight: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let red = self::reduction(reduction)?;
    let (g, present) = operands(&[input, target], &[weight, pos_weight])?;
    compute(py, move || {
        on_group!(g, ts => {
            // The optional tensors follow input and target, in order, where given.
            let mut rest = ts[2..].iter().cloned();
            let weight = if present[2] { rest.next() } else { None };
            let pos_weight = if present[3] { rest.next() } else { None };
            let opts = BceWithLogitsOptions { weight, pos_weight, reduction: red };
            nabla_nn::loss::binary_cross_entropy_with_logits(&ts[0], &ts[1], &opts)
        })
    })
}

/// `kl_div(input, target, reduction='mean', log_target=False)`: `input` holds log-probabilities;
/// `reduction='batchmean'` divides the sum by the batch size.
#[pyfunction]
#[pyo3(signature = (input, target, reduction = "mean", log_target = false))]
fn kl_div(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    reduction: &str,
    log_target: bool,
) -> PyResult<PyTensor> {
    let red = match reduction {
        "batchmean" => KlDivReduction::BatchMean,
        other => KlDivReduction::from(self::reduction(other)?),
    };
    let (g, _) = operands(&[input, target], &[])?;
    compute(
        py,
        move || on_group!(g, ts => nabla_nn::loss::kl_div(&ts[0], &ts[1], red, log_target)),
    )
}

/// A loss of `(input1, input2, target)` with a margin and a reduction.
macro_rules! pair_loss {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input1, input2, target, margin = 0.0, reduction = "mean"))]
        fn $name(py: Python<'_>, input1: &Bound<'_, PyAny>, input2: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, margin: f64, reduction: &str) -> PyResult<PyTensor> {
            let red = self::reduction(reduction)?;
            let (g, _) = operands(&[input1, input2, target], &[])?;
            compute(py, move || on_group!(g, ts => nabla_nn::loss::$name(&ts[0], &ts[1], &ts[2], margin, red)))
        }
    )*};
}

pair_loss! {
    /// `cosine_embedding_loss(input1, input2, target, margin=0.0, reduction='mean')`: targets ±1.
    cosine_embedding_loss;
    /// `margin_ranking_loss(input1, input2, target, margin=0.0, reduction='mean')`: targets ±1.
    margin_ranking_loss;
}

/// `triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
/// reduction='mean')`.
#[pyfunction]
#[pyo3(signature = (anchor, positive, negative, margin = 1.0, p = 2.0, eps = 1e-6, swap = false, reduction = "mean"))]
#[allow(clippy::too_many_arguments)]
fn triplet_margin_loss(
    py: Python<'_>,
    anchor: &Bound<'_, PyAny>,
    positive: &Bound<'_, PyAny>,
    negative: &Bound<'_, PyAny>,
    margin: f64,
    p: f64,
    eps: f64,
    swap: bool,
    reduction: &str,
) -> PyResult<PyTensor> {
    let opts = TripletMarginOptions {
        margin,
        p,
        eps,
        swap,
        reduction: self::reduction(reduction)?,
    };
    let (g, _) = operands(&[anchor, positive, negative], &[])?;
    compute(
        py,
        move || on_group!(g, ts => nabla_nn::loss::triplet_margin_loss(&ts[0], &ts[1], &ts[2], &opts)),
    )
}

/// Adds the losses to `nabla_rs._nabla.nn`.
pub fn add_losses(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for f in [
        wrap_pyfunction!(cross_entropy, m)?,
        wrap_pyfunction!(nll_loss, m)?,
        wrap_pyfunction!(mse_loss, m)?,
        wrap_pyfunction!(l1_loss, m)?,
        wrap_pyfunction!(smooth_l1_loss, m)?,
        wrap_pyfunction!(huber_loss, m)?,
        wrap_pyfunction!(binary_cross_entropy, m)?,
        wrap_pyfunction!(binary_cross_entropy_with_logits, m)?,
        wrap_pyfunction!(kl_div, m)?,
        wrap_pyfunction!(cosine_embedding_loss, m)?,
        wrap_pyfunction!(margin_ranking_loss, m)?,
        wrap_pyfunction!(triplet_margin_loss, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
