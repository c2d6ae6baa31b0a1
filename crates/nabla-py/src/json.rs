//! Python values to and from JSON: the hyper-parameters of optimizers and the arguments and states
//! of schedulers, which nabla-nn keeps as JSON.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// `obj` as JSON: `None`, booleans, ints, finite floats, strings, lists and tuples (as arrays) and
/// dicts with string keys. `what` names the value in errors.
pub fn to_json(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<i64>() {
            Ok(i) => Ok(Value::Number(i.into())),
            Err(_) => Err(PyTypeError::new_err(format!(
                "{what}: the integer {obj} is out of range"
            ))),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        let x: f64 = obj.extract()?;
        return Number::from_f64(x).map(Value::Number).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{what} must be finite, got {x}"))
        });
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(s.to_str()?.to_string()));
    }
    if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        return obj
            .try_iter()?
            .map(|item| to_json(&item?, what))
            .collect::<PyResult<Vec<_>>>()
            .map(Value::Array);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::new();
        for (k, v) in d.iter() {
            let key: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!("{what}: dict keys must be strings, got {k}"))
            })?;
            map.insert(key, to_json(&v, what)?);
        }
        return Ok(Value::Object(map));
    }
    // Numbers of other types (NumPy scalars, one-element tensors) by their float value.
    if let Ok(x) = obj
        .call_method0("__float__")
        .and_then(|f| f.extract::<f64>())
    {
        return Number::from_f64(x).map(Value::Number).ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err(format!("{what} must be finite, got {x}"))
        });
    }
    Err(PyTypeError::new_err(format!(
        "{what}: expected a number, bool, string, None or a list of them, got {}",
        obj.get_type().name()?
    )))
}

/// JSON as Python: integers become ints, arrays lists (tuples with [`to_py_tuples`]).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    convert(py, v, false)
}

/// [`to_py`] with arrays as tuples (PyTorch's hyper-parameters: `betas=(0.9, 0.999)`).
pub fn to_py_tuples<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    convert(py, v, true)
}

fn convert<'py>(py: Python<'py>, v: &Value, tuples: bool) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(x)) => x.into_pyobject(py)?.into_any(),
            (None, None) => py.None().into_bound(py),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let items = items
                .iter()
                .map(|x| convert(py, x, tuples))
                .collect::<PyResult<Vec<_>>>()?;
            if tuples {
                PyTuple::new(py, items)?.into_any()
            } else {
                PyList::new(py, items)?.into_any()
            }
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, x) in map {
                d.set_item(k, convert(py, x, tuples)?)?;
            }
            d.into_any()
        }
    })
}
