//! The transforms over Python callables, on flat lists of tensors: the Python package handles
//! pytrees and `argnums` and calls these. Each runs on eager tensors, or records into the enclosing
//! program when an input is traced (inside `jit` or `vmap`), so transforms nest in any order.

use crate::convert::cpu;
use crate::error::{IntoPyResult, stash};
use crate::tensor::PyTensor;
use crate::value::{Group, Value, unify};
use nabla_any::AnyBackend;
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{
    GraphCompiler, GraphExecutor, Program, Pullback, Tensor, TracedTensor, TracingBackend,
};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// A tensor kind the transforms run on: eager (on a device) or traced.
pub trait Kind: Backend {
    /// `t` as a Python-visible value.
    fn wrap(t: Tensor<Self>) -> Value;
    /// A value returned by Python code as a tensor of this kind; `anchor` is any tensor of the
    /// same kind (an eager result inside a trace becomes a constant of its program).
    fn unwrap(v: Value, anchor: &Tensor<Self>) -> Result<Tensor<Self>>;
}

impl Kind for AnyBackend {
    fn wrap(t: Tensor<Self>) -> Value {
        Value::Eager(t)
    }
    fn unwrap(v: Value, _anchor: &Tensor<Self>) -> Result<Tensor<Self>> {
        match v {
            Value::Eager(e) => Ok(e),
            Value::Traced(_) => Err(Error::invalid(
                "transform",
                "the function returned a traced value while running eagerly (a value that \
                 escaped from jit or vmap)",
            )),
        }
    }
}

impl Kind for TracingBackend {
    fn wrap(t: Tensor<Self>) -> Value {
        Value::Traced(t)
    }
    fn unwrap(v: Value, anchor: &Tensor<Self>) -> Result<Tensor<Self>> {
        match v {
            Value::Traced(t) => Ok(t),
            Value::Eager(e) => e.to_backend(anchor.backend()),
        }
    }
}

pub fn tensors_of<'py, B: Kind>(py: Python<'py>, xs: &[Tensor<B>]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, xs.iter().map(|x| PyTensor::new(B::wrap(x.clone()))))
}

/// Calls Python's `f(list_of_tensors)` and reads back a list of tensors (a single tensor is a
/// list of one). Python exceptions travel through Rust stashed and come out unchanged.
pub fn call_many<B: Kind>(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    xs: &[Tensor<B>],
    anchor: &Tensor<B>,
) -> Result<Vec<Tensor<B>>> {
    let args = tensors_of(py, xs).map_err(stash)?;
    let out = f.call1((args,)).map_err(stash)?;
    let items: Vec<Bound<'_, PyAny>> = match out.cast::<PyTensor>() {
        Ok(_) => vec![out],
        Err(_) => out
            .try_iter()
            .and_then(|it| it.collect::<PyResult<Vec<_>>>())
            .map_err(stash)?,
    };
    items
        .iter()
        .map(|item| {
            let v = crate::convert::to_value(item, None).map_err(stash)?;
            B::unwrap(v, anchor)
        })
        .collect()
}

fn call_one<B: Kind>(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    xs: &[Tensor<B>],
    anchor: &Tensor<B>,
) -> Result<Tensor<B>> {
    let mut out = call_many(py, f, xs, anchor)?;
    if out.len() != 1 {
        return Err(Error::invalid(
            "transform",
            format!(
                "the function must return one tensor here, got {}",
                out.len()
            ),
        ));
    }
    Ok(out.remove(0))
}

pub fn anchor_of<B: Backend>(xs: &[Tensor<B>]) -> Result<Tensor<B>> {
    xs.first()
        .cloned()
        .ok_or_else(|| Error::invalid("transform", "the function needs at least one input"))
}

pub fn read_values(xs: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    xs.try_iter()?
        .map(|x| crate::convert::to_value(&x?, None))
        .collect()
}

/// A pullback kept for `vjp`: call it with a cotangent (or `None` for a scalar output).
#[pyclass(module = "nabla_rs", unsendable)]
pub struct PyPullback {
    inner: PullbackKind,
}

enum PullbackKind {
    Eager(Pullback<AnyBackend>),
    Traced(Pullback<TracingBackend>, TracedTensor),
}

#[pymethods]
impl PyPullback {
    #[pyo3(signature = (cotangent = None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        cotangent: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let ct = match cotangent {
            Some(c) if !c.is_none() => Some(crate::convert::to_value(c, None)?),
            _ => None,
        };
        let grads = match &self.inner {
            PullbackKind::Eager(p) => {
                let ct = ct
                    .map(|c| {
                        AnyBackend::unwrap(c, &Tensor::scalar(0.0, nabla_core::DType::F32, cpu())?)
                    })
                    .transpose()
                    .py()?;
                p.apply(ct.as_ref())
                    .py()?
                    .into_iter()
                    .map(Value::Eager)
                    .collect::<Vec<_>>()
            }
            PullbackKind::Traced(p, anchor) => {
                let ct = ct
                    .map(|c| TracingBackend::unwrap(c, anchor))
                    .transpose()
                    .py()?;
                p.apply(ct.as_ref())
                    .py()?
                    .into_iter()
                    .map(Value::Traced)
                    .collect()
            }
        };
        crate::tensor::tensor_list(py, grads)
    }
}

/// `_vjp(f, primals) -> (output, pullback)`: `f` maps a list of tensors to one tensor.
#[pyfunction]
pub fn _vjp<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    primals: &Bound<'py, PyAny>,
) -> PyResult<(PyTensor, PyPullback)> {
    match unify(&read_values(primals)?).py()? {
        Group::Eager(xs) => {
            let anchor = anchor_of(&xs).py()?;
            let (y, p) = nabla_tensor::vjp_fn_n(|v| call_one(py, f, v, &anchor), &xs).py()?;
            Ok((
                PyTensor::new(Value::Eager(y)),
                PyPullback {
                    inner: PullbackKind::Eager(p),
                },
            ))
        }
        Group::Traced(xs) => {
            let anchor = anchor_of(&xs).py()?;
            let (y, p) = nabla_tensor::vjp_fn_n(|v| call_one(py, f, v, &anchor), &xs).py()?;
            Ok((
                PyTensor::new(Value::Traced(y)),
                PyPullback {
                    inner: PullbackKind::Traced(p, anchor),
                },
            ))
        }
    }
}

/// `_jvp(f, primals, tangents) -> (output, tangent_out)`: forward mode, `f` gives one tensor.
#[pyfunction]
pub fn _jvp<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    primals: &Bound<'py, PyAny>,
    tangents: &Bound<'py, PyAny>,
) -> PyResult<(PyTensor, PyTensor)> {
    let mut all = read_values(primals)?;
    let n = all.len();
    all.extend(read_values(tangents)?);
    match unify(&all).py()? {
        Group::Eager(mut xs) => {
            let ts = xs.split_off(n);
            let anchor = anchor_of(&xs).py()?;
            let (y, t) = nabla_tensor::jvp_n(|v| call_one(py, f, v, &anchor), &xs, &ts).py()?;
            Ok((
                PyTensor::new(Value::Eager(y)),
                PyTensor::new(Value::Eager(t)),
            ))
        }
        Group::Traced(mut xs) => {
            let ts = xs.split_off(n);
            let anchor = anchor_of(&xs).py()?;
            let (y, t) = nabla_tensor::jvp_n(|v| call_one(py, f, v, &anchor), &xs, &ts).py()?;
            Ok((
                PyTensor::new(Value::Traced(y)),
                PyTensor::new(Value::Traced(t)),
            ))
        }
    }
}

fn blocks_to_py<'py, B: Kind>(
    py: Python<'py>,
    blocks: Vec<Vec<Tensor<B>>>,
) -> PyResult<Bound<'py, PyList>> {
    let rows = blocks
        .into_iter()
        .map(|row| crate::tensor::tensor_list(py, row.into_iter().map(B::wrap).collect()))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, rows)
}

/// `_jacobian(f, primals, forward) -> blocks`: `blocks[i][j] = ∂outᵢ/∂xⱼ` for `f` returning a
/// list of tensors, by forward mode (one JVP per input element) or reverse mode.
#[pyfunction]
pub fn _jacobian<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    primals: &Bound<'py, PyAny>,
    forward: bool,
) -> PyResult<Bound<'py, PyList>> {
    match unify(&read_values(primals)?).py()? {
        Group::Eager(xs) => {
            let anchor = anchor_of(&xs).py()?;
            let call = |v: &[Tensor<AnyBackend>]| call_many(py, f, v, &anchor);
            let blocks = if forward {
                nabla_tensor::jacfwd_n(call)(&xs)
            } else {
                nabla_tensor::jacrev_n(call)(&xs)
            };
            blocks_to_py(py, blocks.py()?)
        }
        Group::Traced(xs) => {
            let anchor = anchor_of(&xs).py()?;
            let call = |v: &[Tensor<TracingBackend>]| call_many(py, f, v, &anchor);
            let blocks = if forward {
                nabla_tensor::jacfwd_n(call)(&xs)
            } else {
                nabla_tensor::jacrev_n(call)(&xs)
            };
            blocks_to_py(py, blocks.py()?)
        }
    }
}

/// `_vmap(f, inputs, in_axes, out_axes) -> outputs`: `f` of one example's tensors (a list) to a
/// list of tensors, mapped over the batch axes `in_axes` (`None`: shared by every example).
#[pyfunction]
pub fn _vmap<'py>(
    py: Python<'py>,
    f: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    in_axes: Vec<Option<isize>>,
    out_axes: Vec<Option<isize>>,
) -> PyResult<Bound<'py, PyList>> {
    let body = |xs: &[TracedTensor]| -> Result<Vec<TracedTensor>> {
        let anchor = anchor_of(xs)?;
        call_many(py, f, xs, &anchor)
    };
    let mapped = nabla_tensor::vmap(body)
        .in_axes(&in_axes)
        .out_axes(&out_axes);
    let values = match unify(&read_values(inputs)?).py()? {
        Group::Eager(xs) => mapped
            .call(&xs.iter().collect::<Vec<_>>())
            .py()?
            .into_iter()
            .map(Value::Eager)
            .collect(),
        Group::Traced(xs) => mapped
            .call(&xs.iter().collect::<Vec<_>>())
            .py()?
            .into_iter()
            .map(Value::Traced)
            .collect(),
    };
    crate::tensor::tensor_list(py, values)
}

/// A program traced from a Python function and compiled for the CPU (`jit`): run it on tensors of
/// the shapes and dtypes it was traced with.
#[pyclass(module = "nabla_rs", frozen)]
pub struct CompiledProgram {
    program: Program,
    executor: GraphExecutor<AnyBackend>,
    /// Nodes before and after compilation.
    #[pyo3(get)]
    nodes: (usize, usize),
}

#[pymethods]
impl CompiledProgram {
    /// Runs the program (the GIL is released while it runs).
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let xs = read_values(inputs)?
            .into_iter()
            .map(|v| v.eager("jit").cloned())
            .collect::<Result<Vec<_>>>()
            .py()?;
        let out = py.detach(|| self.executor.run(&self.program, &xs)).py()?;
        crate::tensor::tensor_list(py, out.into_iter().map(Value::Eager).collect())
    }

    /// Runs the program and returns `(outputs, seconds)`: the wall time of each node in program
    /// order (waiting for the device after every node), to find where a program spends its time.
    fn run_profiled<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyList>, Vec<f64>)> {
        let xs = read_values(inputs)?
            .into_iter()
            .map(|v| v.eager("jit").cloned())
            .collect::<Result<Vec<_>>>()
            .py()?;
        let (out, times) = py
            .detach(|| self.executor.run_profiled(&self.program, &xs))
            .py()?;
        let outputs = crate::tensor::tensor_list(py, out.into_iter().map(Value::Eager).collect())?;
        Ok((outputs, times.iter().map(|t| t.as_secs_f64()).collect()))
    }

    /// The compiled program as text.
    fn __str__(&self) -> String {
        format!("{}", self.program)
    }
}

/// `_compile(f, specs) -> CompiledProgram`: traces `f` (a list of tensors to a list of tensors) on
/// placeholders of `specs` (`(shape, dtype)` pairs) and compiles the program.
#[pyfunction]
pub fn _compile(
    py: Python<'_>,
    f: &Bound<'_, PyAny>,
    specs: Vec<(Vec<usize>, crate::dtype::PyDType)>,
) -> PyResult<CompiledProgram> {
    let tb = TracingBackend::new();
    let placeholders = specs
        .into_iter()
        .map(|(shape, d)| tb.placeholder(shape, d.dtype))
        .collect::<Result<Vec<_>>>()
        .py()?;
    let anchor = match placeholders.first() {
        Some(p) => p.clone(),
        None => Tensor::scalar(0.0, nabla_core::DType::F32, &tb).py()?,
    };
    let outputs = call_many(py, f, &placeholders, &anchor).py()?;
    let program = tb.program(&outputs.iter().collect::<Vec<_>>()).py()?;
    let before = program.nodes().len();
    let compiled = GraphCompiler::for_backend(cpu()).compile(program).py()?;
    Ok(CompiledProgram {
        nodes: (before, compiled.nodes().len()),
        program: compiled,
        executor: GraphExecutor::new(cpu()),
    })
}
