//! `nabla_rs.linalg` and `nabla_rs.fft`: NumPy's names over nabla's differentiable linear algebra
//! and Fourier transforms (every function works eagerly, under `jit` and `vmap`, to any order).

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::tensor::{PyTensor, compute};
use crate::value::{Value, unify};
use crate::{map_value, on_group, one_to_one, two_to_one};
use nabla_core::{Error, Result};
use nabla_fft::Norm;
use nabla_linalg::NormOrd;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// A function of one tensor giving a tuple of tensors.
macro_rules! one_to_many {
    ($($(#[$doc:meta])* $name:ident, $x:ident => $body:expr;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        fn $name<'py>(py: Python<'py>, a: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyTuple>> {
            let v = to_value(a, None)?;
            let parts: Vec<Value> = py.detach(|| -> Result<Vec<Value>> {
                Ok(match &v {
                    Value::Eager($x) => $body.into_iter().map(Value::Eager).collect(),
                    Value::Traced($x) => $body.into_iter().map(Value::Traced).collect(),
                })
            }).py()?;
            PyTuple::new(py, parts.into_iter().map(PyTensor::new))
        }
    )*};
}

one_to_one! {
    /// `inv(a)`: the inverse of square matrices `[..., n, n]`.
    inv, t => nabla_linalg::inv(t);
    /// `det(a)`.
    det, t => nabla_linalg::det(t);
    /// `cholesky(a)`: the lower Cholesky factor of Hermitian positive-definite matrices.
    cholesky, t => nabla_linalg::cholesky(t);
    /// `eigvalsh(a)`: eigenvalues of Hermitian matrices, ascending.
    eigvalsh, t => nabla_linalg::eigvalsh(t);
    /// `eigvals(a)`: eigenvalues of general square matrices (complex).
    eigvals, t => nabla_linalg::eigvals(t);
    /// `svdvals(a)`: singular values, descending.
    svdvals, t => nabla_linalg::svdvals(t);
    /// `matrix_exp(a)`: the matrix exponential.
    matrix_exp, t => nabla_linalg::matrix_exp(t);
}

one_to_many! {
    /// `slogdet(a) -> (sign, logabsdet)`.
    slogdet, t => { let (s, l) = nabla_linalg::slogdet(t)?; [s, l] };
    /// `eigh(a) -> (eigenvalues, eigenvectors)` of Hermitian matrices (the input is symmetrised).
    eigh, t => { let (w, v) = nabla_linalg::eigh(t)?; [w, v] };
    /// `eig(a) -> (eigenvalues, eigenvectors)` of general square matrices (complex).
    eig, t => { let (w, v) = nabla_linalg::eig(t)?; [w, v] };
    /// `lu(a) -> (P, L, U)` with `A = P L U`.
    lu, t => { let (p, l, u) = nabla_linalg::lu(t)?; [p, l, u] };
}

two_to_one! {
    /// `solve(a, b)`: `A⁻¹ b` (vector or matrix `b`, batch dimensions broadcast).
    solve, a, b => nabla_linalg::solve(&a, &b);
    /// `lstsq(a, b)`: the least-squares solution of `A x = b`.
    lstsq, a, b => nabla_linalg::lstsq(&a, &b);
    /// `cross(a, b)` along the last axis.
    cross, a, b => nabla_linalg::cross(&a, &b, -1);
    /// `vecdot(a, b)` along the last axis (conjugating `a`).
    vecdot, a, b => nabla_linalg::vecdot(&a, &b, -1);
}

/// `qr(a, mode="reduced") -> (Q, R)`; `mode="complete"` gives the square `Q`.
#[pyfunction]
#[pyo3(signature = (a, mode = "reduced"))]
fn qr<'py>(py: Python<'py>, a: &Bound<'py, PyAny>, mode: &str) -> PyResult<Bound<'py, PyTuple>> {
    let full = match mode {
        "reduced" => false,
        "complete" => true,
        other => {
            return Err(Error::invalid(
                "linalg.qr",
                format!("mode {other:?}: use \"reduced\" or \"complete\""),
            ))
            .py();
        }
    };
    let v = to_value(a, None)?;
    let parts = py
        .detach(|| -> Result<Vec<Value>> {
            Ok(match &v {
                Value::Eager(t) => {
                    let (q, r) = if full {
                        nabla_linalg::qr_full(t)?
                    } else {
                        nabla_linalg::qr(t)?
                    };
                    vec![Value::Eager(q), Value::Eager(r)]
                }
                Value::Traced(t) => {
                    let (q, r) = if full {
                        nabla_linalg::qr_full(t)?
                    } else {
                        nabla_linalg::qr(t)?
                    };
                    vec![Value::Traced(q), Value::Traced(r)]
                }
            })
        })
        .py()?;
    PyTuple::new(py, parts.into_iter().map(PyTensor::new))
}

/// `svd(a, full_matrices=True) -> (U, S, Vh)` with `A = U diag(S) Vh`.
#[pyfunction]
#[pyo3(signature = (a, full_matrices = true))]
fn svd<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    full_matrices: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let v = to_value(a, None)?;
    let parts = py
        .detach(|| -> Result<Vec<Value>> {
            Ok(match &v {
                Value::Eager(t) => {
                    let (u, s, vh) = nabla_linalg::svd(t, full_matrices)?;
                    vec![Value::Eager(u), Value::Eager(s), Value::Eager(vh)]
                }
                Value::Traced(t) => {
                    let (u, s, vh) = nabla_linalg::svd(t, full_matrices)?;
                    vec![Value::Traced(u), Value::Traced(s), Value::Traced(vh)]
                }
            })
        })
        .py()?;
    PyTuple::new(py, parts.into_iter().map(PyTensor::new))
}

/// Reads NumPy's `ord` for matrices: `"fro"`, `"nuc"`, `±1`, `±2`, `±inf`.
fn matrix_ord(ord: Option<&Bound<'_, PyAny>>) -> PyResult<NormOrd> {
    let Some(ord) = ord.filter(|o| !o.is_none()) else {
        return Ok(NormOrd::Fro);
    };
    let text = match ord.extract::<String>() {
        Ok(s) => s,
        Err(_) => {
            let x: f64 = ord.extract()?;
            if x.is_infinite() {
                if x > 0.0 { "inf".into() } else { "-inf".into() }
            } else {
                format!("{x}")
            }
        }
    };
    text.parse::<NormOrd>().py()
}

/// `norm(x, ord=None, axis=None, keepdims=False)` as `np.linalg.norm`: a vector norm over one
/// axis (or the whole flattened tensor), a matrix norm over two.
#[pyfunction]
#[pyo3(signature = (x, ord = None, axis = None, keepdims = false))]
fn norm(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    ord: Option<&Bound<'_, PyAny>>,
    axis: Option<&Bound<'_, PyAny>>,
    keepdims: bool,
) -> PyResult<PyTensor> {
    let v = to_value(x, None)?;
    let axes = match axis.filter(|a| !a.is_none()) {
        Some(a) => Some(crate::methods::axes_of(Some(a), v.shape().len())?),
        None => None,
    };
    let matrix = axes.as_ref().is_some_and(|a| a.len() == 2)
        || (axes.is_none() && v.shape().len() == 2 && ord.is_some_and(|o| !o.is_none()));
    if matrix {
        let ord = matrix_ord(ord)?;
        let axes = axes.unwrap_or(vec![-2, -1]);
        return compute(py, move || {
            map_value!(&v, t => {
                let moved = t.permute(&move_last(t.rank(), &axes))?;
                let n = nabla_linalg::matrix_norm(&moved, ord)?;
                if keepdims { keep(&n, t.rank(), &axes) } else { Ok(n) }
            })
        });
    }
    let p = match ord.filter(|o| !o.is_none()) {
        Some(o) => o.extract::<f64>()?,
        None => 2.0,
    };
    let axes = axes.unwrap_or_else(|| (0..v.shape().len() as isize).collect());
    compute(
        py,
        move || map_value!(&v, t => nabla_linalg::vector_norm(t, p, &axes, keepdims)),
    )
}

/// The permutation moving `axes` to the end.
fn move_last(rank: usize, axes: &[isize]) -> Vec<isize> {
    let norm: Vec<isize> = axes
        .iter()
        .map(|&a| if a < 0 { a + rank as isize } else { a })
        .collect();
    let mut perm: Vec<isize> = (0..rank as isize).filter(|a| !norm.contains(a)).collect();
    perm.extend(norm);
    perm
}

/// `n` with size-1 axes where `axes` were reduced.
fn keep<B: nabla_core::Backend>(
    n: &nabla_tensor::Tensor<B>,
    rank: usize,
    axes: &[isize],
) -> Result<nabla_tensor::Tensor<B>> {
    let mut norm: Vec<usize> = axes
        .iter()
        .map(|&a| {
            if a < 0 {
                (a + rank as isize) as usize
            } else {
                a as usize
            }
        })
        .collect();
    norm.sort_unstable();
    let mut out = n.clone();
    for a in norm {
        out = out.unsqueeze(a as isize)?;
    }
    Ok(out)
}

/// `pinv(a, rcond=None)`: the Moore-Penrose pseudo-inverse.
#[pyfunction]
#[pyo3(signature = (a, rcond = None))]
fn pinv(py: Python<'_>, a: &Bound<'_, PyAny>, rcond: Option<f64>) -> PyResult<PyTensor> {
    let v = to_value(a, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_linalg::pinv(t, rcond)),
    )
}

/// `matrix_power(a, n)` (negative `n` inverts).
#[pyfunction]
fn matrix_power(py: Python<'_>, a: &Bound<'_, PyAny>, n: i64) -> PyResult<PyTensor> {
    let v = to_value(a, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_linalg::matrix_power(t, n)),
    )
}

/// `cond(a, p=None)`: the condition number (2-norm by default).
#[pyfunction]
#[pyo3(signature = (a, p = None))]
fn cond(py: Python<'_>, a: &Bound<'_, PyAny>, p: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let ord = match p.filter(|o| !o.is_none()) {
        Some(_) => matrix_ord(p)?,
        None => NormOrd::Two,
    };
    let v = to_value(a, None)?;
    compute(py, move || map_value!(&v, t => nabla_linalg::cond(t, ord)))
}

/// `multi_dot(arrays)`: a chain of matrix products in the cheapest order.
#[pyfunction]
fn multi_dot(py: Python<'_>, arrays: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let vs = arrays
        .try_iter()?
        .map(|a| to_value(&a?, None))
        .collect::<PyResult<Vec<_>>>()?;
    compute(
        py,
        move || on_group!(unify(&vs)?, ts => nabla_linalg::multi_dot(&ts.iter().collect::<Vec<_>>())),
    )
}

fn fft_norm(norm: Option<&str>) -> PyResult<Norm> {
    norm.unwrap_or("backward").parse::<Norm>().py()
}

/// A 1-D transform: `fft(a, n=None, axis=-1, norm=None)`.
macro_rules! fft_1d {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, n = None, axis = -1, norm = None))]
        fn $name(py: Python<'_>, a: &Bound<'_, PyAny>, n: Option<usize>, axis: isize, norm: Option<&str>) -> PyResult<PyTensor> {
            let (v, norm) = (to_value(a, None)?, fft_norm(norm)?);
            compute(py, move || map_value!(&v, t => nabla_fft::$name(&t, n, axis, norm)))
        }
    )*};
}

fft_1d! {
    /// The discrete Fourier transform along one axis, as `np.fft.fft`.
    fft;
    /// The inverse transform, as `np.fft.ifft`.
    ifft;
    /// The transform of real input (the non-negative frequencies), as `np.fft.rfft`.
    rfft;
    /// The inverse of `rfft` (real output of `n` points), as `np.fft.irfft`.
    irfft;
}

/// An n-D transform: `fftn(a, s=None, axes=None, norm=None)`.
macro_rules! fft_nd {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (a, s = None, axes = None, norm = None))]
        fn $name(py: Python<'_>, a: &Bound<'_, PyAny>, s: Option<Vec<usize>>, axes: Option<Vec<isize>>, norm: Option<&str>) -> PyResult<PyTensor> {
            let (v, norm) = (to_value(a, None)?, fft_norm(norm)?);
            compute(py, move || map_value!(&v, t => nabla_fft::$name(&t, s.as_deref(), axes.as_deref(), norm)))
        }
    )*};
}

fft_nd! {
    /// The n-dimensional transform, as `np.fft.fftn`.
    fftn;
    /// The n-dimensional inverse, as `np.fft.ifftn`.
    ifftn;
    /// The n-dimensional transform of real input, as `np.fft.rfftn`.
    rfftn;
    /// The inverse of `rfftn`, as `np.fft.irfftn`.
    irfftn;
}

/// `fftfreq(n, d=1.0)`: the sample frequencies of `fft`.
#[pyfunction]
#[pyo3(signature = (n, d = 1.0))]
fn fftfreq(py: Python<'_>, n: usize, d: f64) -> PyResult<PyTensor> {
    compute(py, move || {
        nabla_fft::fftfreq(n, d, nabla_core::DType::F64, crate::convert::cpu()).map(Value::Eager)
    })
}

/// `rfftfreq(n, d=1.0)`: the sample frequencies of `rfft`.
#[pyfunction]
#[pyo3(signature = (n, d = 1.0))]
fn rfftfreq(py: Python<'_>, n: usize, d: f64) -> PyResult<PyTensor> {
    compute(py, move || {
        nabla_fft::rfftfreq(n, d, nabla_core::DType::F64, crate::convert::cpu()).map(Value::Eager)
    })
}

/// `fftshift(x, axes=None)`: the zero frequency moved to the centre.
#[pyfunction]
#[pyo3(signature = (x, axes = None))]
fn fftshift(py: Python<'_>, x: &Bound<'_, PyAny>, axes: Option<Vec<isize>>) -> PyResult<PyTensor> {
    let v = to_value(x, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_fft::fftshift(t, axes.as_deref())),
    )
}

/// `ifftshift(x, axes=None)`: the inverse of `fftshift`.
#[pyfunction]
#[pyo3(signature = (x, axes = None))]
fn ifftshift(py: Python<'_>, x: &Bound<'_, PyAny>, axes: Option<Vec<isize>>) -> PyResult<PyTensor> {
    let v = to_value(x, None)?;
    compute(
        py,
        move || map_value!(&v, t => nabla_fft::ifftshift(t, axes.as_deref())),
    )
}

/// The `linalg` submodule.
pub fn linalg_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "linalg")?;
    for f in [
        wrap_pyfunction!(inv, &m)?,
        wrap_pyfunction!(det, &m)?,
        wrap_pyfunction!(cholesky, &m)?,
        wrap_pyfunction!(eigvalsh, &m)?,
        wrap_pyfunction!(eigvals, &m)?,
        wrap_pyfunction!(svdvals, &m)?,
        wrap_pyfunction!(matrix_exp, &m)?,
        wrap_pyfunction!(slogdet, &m)?,
        wrap_pyfunction!(eigh, &m)?,
        wrap_pyfunction!(eig, &m)?,
        wrap_pyfunction!(lu, &m)?,
        wrap_pyfunction!(solve, &m)?,
        wrap_pyfunction!(lstsq, &m)?,
        wrap_pyfunction!(cross, &m)?,
        wrap_pyfunction!(vecdot, &m)?,
        wrap_pyfunction!(qr, &m)?,
        wrap_pyfunction!(svd, &m)?,
        wrap_pyfunction!(norm, &m)?,
        wrap_pyfunction!(pinv, &m)?,
        wrap_pyfunction!(matrix_power, &m)?,
        wrap_pyfunction!(cond, &m)?,
        wrap_pyfunction!(multi_dot, &m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(m)
}

/// The `fft` submodule.
pub fn fft_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "fft")?;
    for f in [
        wrap_pyfunction!(fft, &m)?,
        wrap_pyfunction!(ifft, &m)?,
        wrap_pyfunction!(rfft, &m)?,
        wrap_pyfunction!(irfft, &m)?,
        wrap_pyfunction!(fftn, &m)?,
        wrap_pyfunction!(ifftn, &m)?,
        wrap_pyfunction!(rfftn, &m)?,
        wrap_pyfunction!(irfftn, &m)?,
        wrap_pyfunction!(fftfreq, &m)?,
        wrap_pyfunction!(rfftfreq, &m)?,
        wrap_pyfunction!(fftshift, &m)?,
        wrap_pyfunction!(ifftshift, &m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(m)
}
