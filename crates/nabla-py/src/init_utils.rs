//! `nabla_rs.nn.init` and `nabla_rs.nn.utils`' gradient clipping: nabla-nn's initialisers and
//! clipping (`nabla::nn::init`, `nabla::nn::optim::clip_grad_*`) over Python tensors.

use crate::error::IntoPyResult;
use crate::json::{Args, to_json};
use crate::ops::with_generator;
use crate::tensor::PyTensor;
use crate::value::Eager;
use nabla_any::AnyBackend;
use nabla_core::{DType, Error, Result};
use nabla_nn::init::{self, FanMode, Nonlinearity};
use nabla_nn::optim::{clip_grad_norm_tensors, clip_grad_value_tensors};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// PyTorch's nonlinearity names (`param`: leaky ReLU's negative slope, default 0.01).
fn nonlinearity(name: &str, param: Option<f64>) -> Result<Nonlinearity> {
    Ok(match name {
        "linear" | "identity" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d"
        | "conv_transpose2d" | "conv_transpose3d" => Nonlinearity::Linear,
        "sigmoid" => Nonlinearity::Sigmoid,
        "tanh" => Nonlinearity::Tanh,
        "relu" => Nonlinearity::Relu,
        "leaky_relu" => Nonlinearity::LeakyRelu(param.unwrap_or(0.01)),
        "selu" => Nonlinearity::Selu,
        other => {
            return Err(Error::invalid(
                "nn.init",
                format!("unsupported nonlinearity {other:?}"),
            ));
        }
    })
}

fn fan_mode(a: &Args<'_>) -> Result<FanMode> {
    match a.text("mode")? {
        "fan_in" => Ok(FanMode::FanIn),
        "fan_out" => Ok(FanMode::FanOut),
        _ => Err(a.bad("mode", "'fan_in' or 'fan_out'")),
    }
}

/// `calculate_gain(nonlinearity, param=None)`.
#[pyfunction]
#[pyo3(signature = (nonlinearity, param = None))]
fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> PyResult<f64> {
    self::nonlinearity(nonlinearity, param)
        .map(init::calculate_gain)
        .py()
}

/// `_init(kind, shape, dtype, args)`: values of initialiser `kind` (`uniform`, `normal`,
/// `constant`, `xavier_uniform`, `xavier_normal`, `kaiming_uniform`, `kaiming_normal`,
/// `trunc_normal`, `orthogonal`) with PyTorch's arguments, drawn from the global generator.
#[pyfunction]
fn _init(
    kind: &str,
    shape: Vec<usize>,
    dtype: &Bound<'_, PyAny>,
    args: &Bound<'_, PyDict>,
) -> PyResult<PyTensor> {
    let dtype: DType = crate::dtype::parse_dtype(dtype)?;
    let a = Args {
        op: "nn.init",
        kind,
        json: to_json(args, kind)?,
    };
    let cpu = AnyBackend::cpu();
    let gain = |a: &Args<'_>| a.real("gain");
    let t = with_generator(|rng| -> Result<_> {
        match kind {
            "uniform" => init::uniform(shape, a.real("a")?, a.real("b")?, dtype, rng, &cpu),
            "normal" => init::normal(shape, a.real("mean")?, a.real("std")?, dtype, rng, &cpu),
            "constant" => init::constant(shape, a.real("val")?, dtype, &cpu),
            "xavier_uniform" => init::xavier_uniform(shape, gain(&a)?, dtype, rng, &cpu),
            "xavier_normal" => init::xavier_normal(shape, gain(&a)?, dtype, rng, &cpu),
            "kaiming_uniform" | "kaiming_normal" => {
                let slope = a.real("a")?;
                let nl = nonlinearity(a.text("nonlinearity")?, Some(slope))?;
                let mode = fan_mode(&a)?;
                if kind == "kaiming_uniform" {
                    init::kaiming_uniform(shape, slope, mode, nl, dtype, rng, &cpu)
                } else {
                    init::kaiming_normal(shape, slope, mode, nl, dtype, rng, &cpu)
                }
            }
            "trunc_normal" => {
                let bounds = (a.real("a")?, a.real("b")?);
                init::trunc_normal(
                    shape,
                    a.real("mean")?,
                    a.real("std")?,
                    bounds,
                    dtype,
                    rng,
                    &cpu,
                )
            }
            "orthogonal" => init::orthogonal(shape, gain(&a)?, dtype, rng, &cpu),
            other => Err(Error::invalid(
                "nn.init",
                format!("unknown initialiser {other:?}"),
            )),
        }
    })
    .py()?;
    Ok(PyTensor::eager(t))
}

/// The `.grad` of each of `params` that has one, with the tensor it belongs to.
fn grads_of(py: Python<'_>, params: &[Py<PyTensor>]) -> (Vec<usize>, Vec<Eager>) {
    params
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.borrow(py).grad_value().map(|g| (i, g.detach())))
        .unzip()
}

/// Writes the clipped gradients back into their tensors' `.grad`.
fn write_back(py: Python<'_>, params: &[Py<PyTensor>], owners: &[usize], grads: Vec<Eager>) {
    for (&i, g) in owners.iter().zip(grads) {
        params[i].borrow(py).set_grad_value(Some(g));
    }
}

/// `clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False)`: scales the
/// gradients so that their total norm is at most `max_norm`; returns the norm before clipping.
#[pyfunction]
#[pyo3(signature = (parameters, max_norm, norm_type = 2.0, error_if_nonfinite = false))]
fn clip_grad_norm_(
    py: Python<'_>,
    parameters: Vec<Py<PyTensor>>,
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> PyResult<f64> {
    let (owners, mut grads) = grads_of(py, &parameters);
    let norm = clip_grad_norm_tensors(&mut grads, max_norm, norm_type, error_if_nonfinite).py()?;
    write_back(py, &parameters, &owners, grads);
    Ok(norm)
}

/// `clip_grad_value_(parameters, clip_value)`: clamps every gradient element to
/// `[-clip_value, clip_value]`.
#[pyfunction]
fn clip_grad_value_(
    py: Python<'_>,
    parameters: Vec<Py<PyTensor>>,
    clip_value: f64,
) -> PyResult<()> {
    let (owners, mut grads) = grads_of(py, &parameters);
    clip_grad_value_tensors(&mut grads, clip_value).py()?;
    write_back(py, &parameters, &owners, grads);
    Ok(())
}

/// Adds the initialisers and clipping to `nabla_rs._nabla.nn`.
pub fn add_init_utils(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for f in [
        wrap_pyfunction!(calculate_gain, m)?,
        wrap_pyfunction!(_init, m)?,
        wrap_pyfunction!(clip_grad_norm_, m)?,
        wrap_pyfunction!(clip_grad_value_, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}
