//! `nabla_rs.special`: the special functions of `nabla-special` (`torch.special`'s and
//! `scipy.special`'s names), differentiable to any order, eagerly and under `jit` and `vmap`. The
//! Python module adds the ones composed of ordinary ops.

use crate::tensor::{PyTensor, compute};
use crate::{map_value, one_to_one, two_to_one};
use pyo3::prelude::*;

one_to_one! {
    /// `gammaln(x)`: `ln |Γ(x)|` (`torch.special.gammaln`, `torch.lgamma`).
    gammaln, t => nabla_special::lgamma(t);
    /// `digamma(x)`: `ψ(x)`, the derivative of `ln Γ` (`psi`).
    digamma, t => nabla_special::digamma(t);
    /// `erfinv(x)`: the inverse of `erf` on (-1, 1).
    erfinv, t => nabla_special::erfinv(t);
    /// `i0(x)`: the modified Bessel function of the first kind of order 0.
    i0, t => nabla_special::i0(t);
    /// `i0e(x)`: `exp(-|x|) i0(x)`.
    i0e, t => nabla_special::i0e(t);
    /// `i1(x)`: the modified Bessel function of the first kind of order 1.
    i1, t => nabla_special::i1(t);
    /// `i1e(x)`: `exp(-|x|) i1(x)`.
    i1e, t => nabla_special::i1e(t);
    /// `log_sigmoid(x)`: `ln σ(x)`, stable for large `|x|` (`torch.nn.functional.logsigmoid`).
    log_sigmoid, t => nabla_special::log_sigmoid(t);
    /// `erfc(x)`: `1 - erf(x)`, accurate where it is tiny.
    erfc, t => nabla_special::erfc(t);
    /// `ndtr(x)`: the standard normal CDF.
    ndtr, t => nabla_special::ndtr(t);
    /// `ndtri(p)`: the inverse of `ndtr` on (0, 1).
    ndtri, t => nabla_special::ndtri(t);
    /// `log_ndtr(x)`: `ln ndtr(x)`, accurate far into both tails.
    log_ndtr, t => nabla_special::log_ndtr(t);
}

two_to_one! {
    /// `xlogy(x, y)`: `x ln y`, 0 where `x` is 0.
    xlogy, x, y => nabla_special::xlogy(&x, &y);
    /// `betaln(a, b)`: `ln |B(a, b)|`, accurate for large arguments.
    betaln, a, b => nabla_special::betaln(&a, &b);
}

/// `polygamma(n, x)`: `ψ⁽ⁿ⁾(x)`, the `n`-th derivative of `digamma` (`n = 0` is digamma).
#[pyfunction]
fn polygamma(py: Python<'_>, n: u32, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let v = crate::convert::to_value(x, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_special::polygamma(n, t)),
    )
}

/// `logit(p, eps=None)`: `ln(p / (1 - p))`, with `p` clamped to `[eps, 1 - eps]` when given.
#[pyfunction]
#[pyo3(signature = (p, eps = None))]
fn logit(py: Python<'_>, p: &Bound<'_, PyAny>, eps: Option<f64>) -> PyResult<PyTensor> {
    let v = crate::convert::to_value(p, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_special::logit(t, eps)),
    )
}

/// The `nabla_rs._nabla.special` submodule.
pub fn special_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "special")?;
    for f in [
        wrap_pyfunction!(gammaln, &m)?,
        wrap_pyfunction!(digamma, &m)?,
        wrap_pyfunction!(erfinv, &m)?,
        wrap_pyfunction!(i0, &m)?,
        wrap_pyfunction!(i0e, &m)?,
        wrap_pyfunction!(i1, &m)?,
        wrap_pyfunction!(i1e, &m)?,
        wrap_pyfunction!(log_sigmoid, &m)?,
        wrap_pyfunction!(erfc, &m)?,
        wrap_pyfunction!(ndtr, &m)?,
        wrap_pyfunction!(ndtri, &m)?,
        wrap_pyfunction!(log_ndtr, &m)?,
        wrap_pyfunction!(xlogy, &m)?,
        wrap_pyfunction!(betaln, &m)?,
        wrap_pyfunction!(polygamma, &m)?,
        wrap_pyfunction!(logit, &m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(m)
}
