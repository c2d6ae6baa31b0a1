//! `nabla_rs.nn.functional`, the parameter initialisers and safetensors files: the Rust half of
//! `nabla_rs.nn` (the modules and optimizers are Python classes over these, in python/nabla_rs/nn).

use crate::convert::{cpu, to_value};
use crate::error::IntoPyResult;
use crate::ops::with_generator;
use crate::tensor::{PyTensor, compute};
use crate::value::{Group, Value, unify};
use crate::{map_value, on_group};
use nabla_core::{Conv2dParams, Error, Pool2dParams, Result};
use nabla_tensor::Tensor;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Reads an int or a pair of ints (PyTorch's `_pair`).
fn pair_arg(obj: &Bound<'_, PyAny>) -> PyResult<(usize, usize)> {
    match obj.extract::<usize>() {
        Ok(v) => Ok((v, v)),
        Err(_) => obj.extract::<(usize, usize)>(),
    }
}

/// Values of one kind: `(input, rest...)`, optional entries dropped.
pub(crate) fn group(values: Vec<Option<Value>>) -> Result<(Group, Vec<bool>)> {
    let present: Vec<bool> = values.iter().map(Option::is_some).collect();
    let vs: Vec<Value> = values.into_iter().flatten().collect();
    Ok((unify(&vs)?, present))
}

pub(crate) fn opt_value(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    match obj {
        Some(o) if !o.is_none() => to_value(o, None).map(Some),
        _ => Ok(None),
    }
}

/// `conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)`, as PyTorch's
/// (input `[N, C, H, W]`, weight `[O, C/groups, kH, kW]`).
#[pyfunction]
#[pyo3(signature = (input, weight, bias = None, stride = None, padding = None, dilation = None, groups = 1))]
#[allow(clippy::too_many_arguments)]
fn conv2d(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    groups: usize,
) -> PyResult<PyTensor> {
    let get = |o: Option<&Bound<'_, PyAny>>, d: usize| o.map_or(Ok((d, d)), pair_arg);
    let params = Conv2dParams {
        stride: get(stride, 1)?,
        padding: get(padding, 0)?,
        dilation: get(dilation, 1)?,
        groups,
        precision: Default::default(),
    };
    let (g, present) = group(vec![
        Some(to_value(input, None)?),
        Some(to_value(weight, None)?),
        opt_value(bias)?,
    ])
    .py()?;
    compute(py, move || {
        on_group!(g, ts => {
            let y = ts[0].conv2d(&ts[1], &params)?;
            if present[2] { y.add(ts[2].reshape([1, -1, 1, 1].as_slice())?) } else { Ok(y) }
        })
    })
}

/// `max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False)` (the stride
/// defaults to the kernel size).
#[pyfunction]
#[pyo3(signature = (input, kernel_size, stride = None, padding = None, dilation = None, ceil_mode = false))]
fn max_pool2d(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    kernel_size: &Bound<'_, PyAny>,
    stride: Option<&Bound<'_, PyAny>>,
    padding: Option<&Bound<'_, PyAny>>,
    dilation: Option<&Bound<'_, PyAny>>,
    ceil_mode: bool,
) -> PyResult<PyTensor> {
    let kernel = pair_arg(kernel_size)?;
    let pick = |o: Option<&Bound<'_, PyAny>>, d: (usize, usize)| match o {
        Some(v) if !v.is_none() => pair_arg(v),
        _ => Ok(d),
    };
    let params = Pool2dParams {
        kernel,
        stride: pick(stride, kernel)?,
        padding: pick(padding, (0, 0))?,
        dilation: pick(dilation, (1, 1))?,
        ceil_mode,
    };
    let v = to_value(input, None)?;
    compute(
        py,
        move || map_value!(&v, t => t.max_pool2d(&params).map(|(values, _)| values)),
    )
}

/// `linear(input, weight, bias=None)`: `input @ weight.T + bias`.
#[pyfunction]
#[pyo3(signature = (input, weight, bias = None))]
fn linear(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    weight: &Bound<'_, PyAny>,
    bias: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (g, present) = group(vec![
        Some(to_value(input, None)?),
        Some(to_value(weight, None)?),
        opt_value(bias)?,
    ])
    .py()?;
    compute(py, move || {
        on_group!(g, ts => {
            let y = ts[0].matmul(&ts[1].t()?)?;
            if present[2] { y.add(&ts[2]) } else { Ok(y) }
        })
    })
}

/// An activation of one tensor with a float parameter.
macro_rules! activation {
    ($($(#[$doc:meta])* $name:ident($($arg:ident: $ty:ty = $default:expr),*), $t:ident => $body:expr;)*) => {$(
        $(#[$doc])*
        #[pyfunction]
        #[pyo3(signature = (input $(, $arg = $default)*))]
        fn $name(py: Python<'_>, input: &Bound<'_, PyAny> $(, $arg: $ty)*) -> PyResult<PyTensor> {
            let v = to_value(input, None)?;
            compute(py, move || map_value!(&v, $t => $body))
        }
    )*};
}

activation! {
    /// `relu(x) = max(x, 0)`.
    relu(), t => t.relu();
    /// `gelu(x, approximate='none')`: the exact GELU, or the tanh approximation.
    gelu(approximate: &str = "none"), t => if approximate == "tanh" { t.gelu_tanh() } else { t.gelu() };
    /// `silu(x) = x sigmoid(x)`.
    silu(), t => t.silu();
    /// `leaky_relu(x, negative_slope=0.01)`.
    leaky_relu(negative_slope: f64 = 0.01), t => t.leaky_relu(negative_slope);
    /// `elu(x, alpha=1.0)`.
    elu(alpha: f64 = 1.0), t => t.elu(alpha);
    /// `softplus(x) = log(1 + e^x)`.
    softplus(), t => t.softplus();
    /// `softmax(x, dim=-1)`.
    softmax(dim: isize = -1), t => t.softmax(dim);
    /// `log_softmax(x, dim=-1)`.
    log_softmax(dim: isize = -1), t => t.log_softmax(dim);
}

/// `layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5)`.
#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight = None, bias = None, eps = 1e-5))]
fn layer_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: Vec<usize>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<PyTensor> {
    let axes: Vec<isize> = (0..normalized_shape.len())
        .map(|i| -(i as isize) - 1)
        .collect();
    let (g, present) = group(vec![
        Some(to_value(input, None)?),
        opt_value(weight)?,
        opt_value(bias)?,
    ])
    .py()?;
    compute(py, move || {
        on_group!(g, ts => {
            let mut y = ts[0].layer_norm(&axes, eps)?;
            let mut next = 1;
            if present[1] { y = y.mul(&ts[next])?; next += 1; }
            if present[2] { y = y.add(&ts[next])?; }
            Ok::<_, Error>(y)
        })
    })
}

/// `dropout(input, p=0.5, training=True)`: zeroes elements with probability `p` and scales the rest
/// by `1/(1-p)` (the identity when not training).
#[pyfunction]
#[pyo3(signature = (input, p = 0.5, training = true))]
fn dropout(py: Python<'_>, input: &Bound<'_, PyAny>, p: f64, training: bool) -> PyResult<PyTensor> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::invalid(
            "dropout",
            format!("p must be in [0, 1], got {p}"),
        ))
        .py();
    }
    let v = to_value(input, None)?;
    if !training || p == 0.0 {
        return Ok(PyTensor::new(v));
    }
    compute(py, move || {
        map_value!(&v, t => {
            let keep = with_generator(|g| Tensor::bernoulli(t.shape().to_vec(), 1.0 - p, t.dtype(), g, t.backend()))?;
            if p == 1.0 { t.mul(&keep) } else { t.mul(&keep)?.mul(1.0 / (1.0 - p)) }
        })
    })
}

/// `scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
/// scale=None, enable_gqa=False)`, as PyTorch's: `softmax(query keyᵀ scale + mask) value` over
/// `[..., L, E]`, `[..., S, E]` and `[..., S, Ev]` (a bool mask is `True` where a query may attend).
/// On the CPU without a mask or dropout it is nabla's fused attention.
#[pyfunction]
#[pyo3(signature = (query, key, value, attn_mask = None, dropout_p = 0.0, is_causal = false, scale = None, enable_gqa = false))]
#[allow(clippy::too_many_arguments)]
fn scaled_dot_product_attention(
    py: Python<'_>,
    query: &Bound<'_, PyAny>,
    key: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    attn_mask: Option<&Bound<'_, PyAny>>,
    dropout_p: f64,
    is_causal: bool,
    scale: Option<f64>,
    enable_gqa: bool,
) -> PyResult<PyTensor> {
    let (g, present) = group(vec![
        Some(to_value(query, None)?),
        Some(to_value(key, None)?),
        Some(to_value(value, None)?),
        opt_value(attn_mask)?,
    ])
    .py()?;
    compute(py, move || {
        on_group!(g, ts => {
            let mask = present[3].then(|| &ts[3]);
            let attend = |rng: Option<&mut nabla_core::Generator>| {
                let args = nabla_nn::SdpaArgs {
                    attn_mask: mask,
                    dropout_p,
                    is_causal,
                    scale,
                    enable_gqa,
                    rng,
                };
                nabla_nn::scaled_dot_product_attention(&ts[0], &ts[1], &ts[2], args)
            };
            if dropout_p > 0.0 {
                with_generator(|g| attend(Some(g)))
            } else {
                attend(None)
            }
        })
    })
}

/// `save_safetensors(tensors, path, metadata=None)`: a dict of tensors to a safetensors file,
/// written atomically (readable by `safetensors.torch.load_file` as a PyTorch state dict).
#[pyfunction]
#[pyo3(signature = (tensors, path, metadata = None))]
fn save_safetensors(
    py: Python<'_>,
    tensors: &Bound<'_, PyDict>,
    path: std::path::PathBuf,
    metadata: Option<std::collections::HashMap<String, String>>,
) -> PyResult<()> {
    let mut named = Vec::with_capacity(tensors.len());
    for (k, v) in tensors.iter() {
        let name: String = k.extract()?;
        let t = to_value(&v, None)?.eager("save_safetensors").py()?.detach();
        named.push((name, t));
    }
    let meta = metadata.unwrap_or_default();
    py.detach(|| nabla_nn::save_safetensors(&path, &named, &meta))
        .py()
}

/// `load_safetensors(path) -> dict`: every tensor of a safetensors file (written by nabla,
/// `safetensors.torch.save_file` or any other writer), by name.
#[pyfunction]
fn load_safetensors<'py>(
    py: Python<'py>,
    path: std::path::PathBuf,
) -> PyResult<Bound<'py, PyDict>> {
    let file = py
        .detach(|| nabla_nn::load_safetensors(&path, cpu()))
        .py()?;
    let out = PyDict::new(py);
    for (name, t) in file.tensors {
        out.set_item(name, PyTensor::eager(t))?;
    }
    Ok(out)
}

/// `load_torch(path) -> dict`: every tensor of a `torch.save` archive (`.pt`, `.pth`,
/// `pytorch_model.bin`) by its dotted path, read without running the file's pickle (only state
/// dicts' classes and functions are allowed, as `torch.load(weights_only=True)`).
#[pyfunction]
fn load_torch<'py>(py: Python<'py>, path: std::path::PathBuf) -> PyResult<Bound<'py, PyDict>> {
    let file = py.detach(|| nabla_nn::load_torch(&path, cpu())).py()?;
    let out = PyDict::new(py);
    for (name, t) in file.tensors {
        out.set_item(name, PyTensor::eager(t))?;
    }
    Ok(out)
}

/// `hf_state(model, state) -> dict`: a Hugging Face state dict (from `load_safetensors` or
/// `load_torch`) under the names of the zoo's `nn.GPT2`, `nn.BERT` or `nn.ViT` (`model` is
/// `"gpt2"`, `"bert"` or `"vit"`), renamed and filtered as the Rust models' `load` does: task
/// models' prefixes dropped (`transformer.`, `bert.`), heads, tied weights and index buffers left
/// out, `transformers` 5's ViT module names mapped to its files'.
#[pyfunction]
fn hf_state<'py>(
    py: Python<'py>,
    model: &str,
    state: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let rename: fn(&str) -> Option<String> = match model {
        "gpt2" => nabla_models::gpt2::hf_name,
        "bert" => nabla_models::bert::hf_name,
        "vit" => nabla_models::vit::hf_name,
        other => {
            return Err(PyValueError::new_err(format!(
                "hf_state: unknown model {other:?} (expected 'gpt2', 'bert' or 'vit')"
            )));
        }
    };
    let out = PyDict::new(py);
    for (k, v) in state.iter() {
        if let Some(name) = rename(&k.extract::<String>()?) {
            out.set_item(name, v)?;
        }
    }
    Ok(out)
}

/// `load_digits() -> (images, labels)`: the 1,797 8x8 handwritten digits embedded in nabla
/// (scikit-learn's set): images `[1797, 1, 8, 8]` float32 in [0, 1], labels int64.
#[pyfunction]
fn load_digits(py: Python<'_>) -> PyResult<(PyTensor, PyTensor)> {
    let d = py.detach(|| nabla_data::Digits::load(cpu())).py()?;
    Ok((PyTensor::eager(d.images), PyTensor::eager(d.labels)))
}

/// The `nn` extension submodule (`nabla_rs._nabla.nn`).
pub fn nn_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "nn")?;
    for f in [
        wrap_pyfunction!(conv2d, &m)?,
        wrap_pyfunction!(max_pool2d, &m)?,
        wrap_pyfunction!(linear, &m)?,
        wrap_pyfunction!(relu, &m)?,
        wrap_pyfunction!(gelu, &m)?,
        wrap_pyfunction!(silu, &m)?,
        wrap_pyfunction!(leaky_relu, &m)?,
        wrap_pyfunction!(elu, &m)?,
        wrap_pyfunction!(softplus, &m)?,
        wrap_pyfunction!(softmax, &m)?,
        wrap_pyfunction!(log_softmax, &m)?,
        wrap_pyfunction!(layer_norm, &m)?,
        wrap_pyfunction!(dropout, &m)?,
        wrap_pyfunction!(scaled_dot_product_attention, &m)?,
        wrap_pyfunction!(save_safetensors, &m)?,
        wrap_pyfunction!(load_safetensors, &m)?,
        wrap_pyfunction!(load_torch, &m)?,
        wrap_pyfunction!(hf_state, &m)?,
        wrap_pyfunction!(load_digits, &m)?,
    ] {
        m.add_function(f)?;
    }
    crate::layers::add_layers(&m)?;
    crate::losses::add_losses(&m)?;
    crate::init_utils::add_init_utils(&m)?;
    Ok(m)
}
