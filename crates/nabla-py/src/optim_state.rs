//! Optimizer states between nabla-nn's form (tensors named `state.{index}.{name}` and a JSON
//! document) and PyTorch's dict (`{"state": {index: {name: value}}, "param_groups": [...]}`).

use crate::error::IntoPyResult;
use crate::json::{to_json, to_py, to_py_tuples};
use crate::tensor::PyTensor;
use nabla_any::AnyBackend;
use nabla_nn::optim::OptimizerState;
use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde_json::{Map, Value as Json, json};

/// `saved` as PyTorch's dict: per-parameter entries keyed by int index, `params` as lists.
pub fn to_python<'py>(
    py: Python<'py>,
    saved: OptimizerState<AnyBackend>,
) -> PyResult<Bound<'py, PyDict>> {
    let state = PyDict::new(py);
    let entry = |index: i64| -> PyResult<Bound<'py, PyDict>> {
        if let Some(d) = state.get_item(index)? {
            return Ok(d.cast_into::<PyDict>()?);
        }
        let d = PyDict::new(py);
        state.set_item(index, &d)?;
        Ok(d)
    };
    for (key, values) in saved.meta["state"].as_object().into_iter().flatten() {
        let d = entry(key.parse().unwrap_or(0))?;
        for (name, v) in values.as_object().into_iter().flatten() {
            d.set_item(name, to_py(py, v)?)?;
        }
    }
    for (name, t) in saved.tensors {
        let rest = name.strip_prefix("state.").unwrap_or(&name);
        let (index, field) = rest.split_once('.').unwrap_or(("0", rest));
        entry(index.parse().unwrap_or(0))?.set_item(field, PyTensor::eager(t))?;
    }
    let groups = PyList::empty(py);
    for g in saved.meta["param_groups"].as_array().into_iter().flatten() {
        let d = PyDict::new(py);
        for (k, v) in g.as_object().into_iter().flatten() {
            match (k.as_str(), v) {
                ("initial_lr", Json::Null) => {}
                ("params", Json::Array(ids)) => {
                    let ids: Vec<i64> = ids.iter().filter_map(Json::as_i64).collect();
                    d.set_item(k, ids)?;
                }
                _ => d.set_item(k, to_py_tuples(py, v)?)?,
            }
        }
        groups.append(d)?;
    }
    let out = PyDict::new(py);
    out.set_item("state", state)?;
    out.set_item("param_groups", groups)?;
    Ok(out)
}

/// PyTorch's dict as nabla-nn's state of optimizer `name`: tensors become `state.{index}.{name}`,
/// every other value a JSON entry.
pub fn from_python(
    _py: Python<'_>,
    dict: &Bound<'_, PyDict>,
    name: &str,
) -> PyResult<OptimizerState<AnyBackend>> {
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        dict.get_item(key)?
            .ok_or_else(|| PyKeyError::new_err(format!("the optimizer state has no {key:?} entry")))
    };
    let groups = to_json(&get("param_groups")?, "param_groups")?;
    let mut per_param = Map::new();
    let mut tensors = Vec::new();
    let state = get("state")?;
    let state = state
        .cast::<PyDict>()
        .map_err(|_| PyValueError::new_err("the optimizer state's \"state\" is not a dict"))?;
    for (index, entry) in state.iter() {
        let index: i64 = index.extract()?;
        let entry = entry.cast::<PyDict>().map_err(|_| {
            PyValueError::new_err(format!(
                "the optimizer state of parameter {index} is not a dict"
            ))
        })?;
        let mut scalars = Map::new();
        for (k, v) in entry.iter() {
            let k: String = k.extract()?;
            if let Ok(t) = v.cast::<PyTensor>() {
                let t = t.borrow().value.eager("load_state_dict").py()?.detach();
                tensors.push((format!("state.{index}.{k}"), t));
            } else {
                scalars.insert(k.clone(), to_json(&v, &format!("state {index} {k}"))?);
            }
        }
        per_param.insert(index.to_string(), Json::Object(scalars));
    }
    Ok(OptimizerState {
        tensors,
        meta: json!({"optimizer": name, "param_groups": groups, "state": per_param}),
    })
}
