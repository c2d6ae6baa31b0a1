//! Custom derivative rules and checkpointing over Python callables: the Rust half of
//! `nabla_rs.custom_vjp`, `custom_jvp` and `checkpoint`. Each call builds a nabla `CustomFn` whose
//! body and rules call back into Python (re-taking the GIL when a backward pass runs without it).

use crate::error::{IntoPyResult, stash};
use crate::tensor::PyTensor;
use crate::transforms::{Kind, anchor_of, call_many, read_values, tensors_of};
use crate::value::{Group, Value, unify};
use nabla_core::{Error, Result};
use nabla_tensor::{CustomFn, Tensor};
use pyo3::prelude::*;
use std::sync::Arc;

/// Calls `f(list_of_tensors)` with the GIL, expecting one tensor.
fn call_python<B: Kind>(f: &Py<PyAny>, xs: &[Tensor<B>]) -> Result<Tensor<B>> {
    let anchor = anchor_of(xs)?;
    Python::attach(|py| {
        let mut out = call_many(py, f.bind(py), xs, &anchor)?;
        if out.len() != 1 {
            return Err(Error::invalid(
                "custom function",
                format!("the function must return one tensor, got {}", out.len()),
            ));
        }
        Ok(out.remove(0))
    })
}

/// Reads a rule's result: a tensor or `None` per input.
fn optional_tensors<B: Kind>(
    out: &Bound<'_, PyAny>,
    anchor: &Tensor<B>,
    n: usize,
) -> Result<Vec<Option<Tensor<B>>>> {
    let items: Vec<Bound<'_, PyAny>> = out.try_iter().and_then(|it| it.collect()).map_err(stash)?;
    if items.len() != n {
        return Err(Error::invalid(
            "custom_vjp",
            format!(
                "the backward rule gave {} cotangents for {n} inputs",
                items.len()
            ),
        ));
    }
    items
        .iter()
        .map(|item| {
            if item.is_none() {
                return Ok(None);
            }
            let v = crate::convert::to_value(item, None).map_err(stash)?;
            B::unwrap(v, anchor).map(Some)
        })
        .collect()
}

fn build<B: Kind>(
    name: &str,
    body: Py<PyAny>,
    reverse: Option<Py<PyAny>>,
    forward: Option<Py<PyAny>>,
) -> CustomFn<B> {
    let body = Arc::new(body);
    let mut f = CustomFn::<B>::new(name, move |xs: &[Tensor<B>]| call_python(&body, xs));
    if let Some(rule) = reverse {
        f = f.reverse(move |args, g| {
            let n = args.inputs.len();
            Python::attach(|py| {
                let inputs = tensors_of(py, args.inputs).map_err(stash)?;
                let output = PyTensor::new(B::wrap(args.output.clone()));
                let ct = PyTensor::new(B::wrap(g.clone()));
                let out = rule.bind(py).call1((inputs, output, ct)).map_err(stash)?;
                optional_tensors(&out, g, n)
            })
        });
    }
    if let Some(rule) = forward {
        f = f.forward(move |args, tangents| {
            Python::attach(|py| {
                let inputs = tensors_of(py, args.inputs).map_err(stash)?;
                let output = PyTensor::new(B::wrap(args.output.clone()));
                let ts: Vec<Option<PyTensor>> = tangents
                    .iter()
                    .map(|t| t.clone().map(|t| PyTensor::new(B::wrap(t))))
                    .collect();
                let out = rule.bind(py).call1((inputs, output, ts)).map_err(stash)?;
                if out.is_none() {
                    return Ok(None);
                }
                let v = crate::convert::to_value(&out, None).map_err(stash)?;
                B::unwrap(v, args.output).map(Some)
            })
        });
    }
    f
}

/// `_custom_call(name, body, reverse, forward, inputs)`: `body(inputs) -> tensor` recorded as one
/// op whose reverse rule is `reverse(inputs, output, cotangent) -> [cotangent or None per input]`
/// and forward rule `forward(inputs, output, tangents) -> tangent or None` (either may be `None`:
/// that mode then differentiates `body`).
#[pyfunction]
#[pyo3(signature = (name, body, reverse, forward, inputs))]
pub fn _custom_call(
    name: &str,
    body: Py<PyAny>,
    reverse: Option<Py<PyAny>>,
    forward: Option<Py<PyAny>>,
    inputs: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let value = match unify(&read_values(inputs)?).py()? {
        Group::Eager(xs) => {
            let f = build::<nabla_any::AnyBackend>(name, body, reverse, forward);
            f.apply(&xs.iter().collect::<Vec<_>>()).map(Value::Eager)
        }
        Group::Traced(xs) => {
            let f = build::<nabla_tensor::TracingBackend>(name, body, reverse, forward);
            f.apply(&xs.iter().collect::<Vec<_>>()).map(Value::Traced)
        }
    };
    value.py().map(PyTensor::new)
}

/// `_checkpoint(f, inputs, captured)`: `f(inputs)` without keeping its intermediate values; the
/// backward pass runs `f` again. `captured` lists the tracked tensors `f` reads besides its inputs
/// (a block's parameters), which get gradients too.
#[pyfunction]
pub fn _checkpoint(
    f: Py<PyAny>,
    inputs: &Bound<'_, PyAny>,
    captured: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let mut all = read_values(inputs)?;
    let n = all.len();
    all.extend(read_values(captured)?);
    let f = Arc::new(f);
    let value = match unify(&all).py()? {
        Group::Eager(mut xs) => {
            let caps = xs.split_off(n);
            nabla_tensor::checkpoint(
                &xs.iter().collect::<Vec<_>>(),
                &caps.iter().collect::<Vec<_>>(),
                move |v| call_python(&f, v),
            )
            .map(Value::Eager)
        }
        Group::Traced(mut xs) => {
            let caps = xs.split_off(n);
            nabla_tensor::checkpoint(
                &xs.iter().collect::<Vec<_>>(),
                &caps.iter().collect::<Vec<_>>(),
                move |v| call_python(&f, v),
            )
            .map(Value::Traced)
        }
    };
    value.py().map(PyTensor::new)
}
