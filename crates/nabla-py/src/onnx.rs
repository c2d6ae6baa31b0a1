//! `nabla_rs._nabla.onnx`: ONNX export of a Python callable, traced as `jit` traces it (tensors it
//! closes over, such as a module's parameters, become the model's initialisers), through
//! `nabla_onnx::export_traced`.

use crate::dtype::PyDType;
use crate::error::IntoPyResult;
use crate::transforms::call_many;
use nabla_onnx::{ExportOptions, InputSpec};
use nabla_tensor::TracingBackend;
use pyo3::prelude::*;

/// `_export(f, specs, path, input_names, output_names, dynamic_batch)`: traces `f` (a list of
/// tensors to a list of tensors) on placeholders of `specs` (`(shape, dtype)` pairs) and writes the
/// ONNX model to `path`; with `dynamic_batch`, axis 0 of every input has any size.
#[pyfunction]
fn _export(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    specs: Vec<(Vec<usize>, PyDType)>,
    path: std::path::PathBuf,
    input_names: Vec<String>,
    output_names: Vec<String>,
    dynamic_batch: bool,
) -> PyResult<()> {
    let tb = TracingBackend::new();
    let inputs: Vec<InputSpec> = specs
        .into_iter()
        .map(|(shape, d)| InputSpec::new(shape, d.dtype))
        .collect();
    let options = ExportOptions {
        input_names,
        output_names,
        dynamic_batch,
    };
    let trace = |xs: &[nabla_tensor::Tensor<TracingBackend>]| {
        let anchor = match xs.first() {
            Some(x) => x.clone(),
            None => nabla_tensor::Tensor::scalar(0.0, nabla_core::DType::F32, &tb)?,
        };
        call_many(py, f, xs, &anchor)
    };
    nabla_onnx::export_traced(&tb, &inputs, trace, &path, &options).py()
}

/// The `onnx` extension submodule.
pub fn onnx_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    let m = PyModule::new(py, "onnx")?;
    m.add_function(wrap_pyfunction!(_export, &m)?)?;
    m.add("OPSET", nabla_onnx::OPSET)?;
    Ok(m)
}
