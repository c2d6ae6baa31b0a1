//! Python values to and from JSON: the hyper-parameters of optimizers and the arguments and states
//! of schedulers, which nabla-nn keeps as JSON.

use nabla_core::{Error, Result};
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

/// The arguments of a layer or scheduler `kind`, as JSON from its Python keywords, read with errors
/// that name it (`op` is the family: `"nn"`, `"lr_scheduler"`).
pub struct Args<'a> {
    /// The family, for errors.
    pub op: &'static str,
    /// The class name, for errors.
    pub kind: &'a str,
    /// The arguments.
    pub json: Value,
}

impl Args<'_> {
    fn get(&self, key: &str) -> Result<&Value> {
        match &self.json[key] {
            Value::Null => Err(Error::invalid(
                self.op,
                format!("{} needs the argument {key}", self.kind),
            )),
            v => Ok(v),
        }
    }

    /// `true` when `key` is missing or `None`.
    pub fn is_none(&self, key: &str) -> bool {
        self.json[key].is_null()
    }

    /// An integer.
    pub fn int(&self, key: &str) -> Result<i64> {
        self.get(key)?
            .as_i64()
            .ok_or_else(|| self.bad(key, "an integer"))
    }

    /// A non-negative integer.
    pub fn count(&self, key: &str) -> Result<usize> {
        usize::try_from(self.int(key)?).map_err(|_| self.bad(key, "a non-negative integer"))
    }

    /// A number.
    pub fn real(&self, key: &str) -> Result<f64> {
        self.get(key)?
            .as_f64()
            .ok_or_else(|| self.bad(key, "a number"))
    }

    /// A number, or `None`.
    pub fn opt_real(&self, key: &str) -> Result<Option<f64>> {
        if self.is_none(key) {
            Ok(None)
        } else {
            self.real(key).map(Some)
        }
    }

    /// A bool.
    pub fn flag(&self, key: &str) -> Result<bool> {
        self.get(key)?
            .as_bool()
            .ok_or_else(|| self.bad(key, "a bool"))
    }

    /// A string.
    pub fn text(&self, key: &str) -> Result<&str> {
        self.get(key)?
            .as_str()
            .ok_or_else(|| self.bad(key, "a string"))
    }

    /// A number or a list of numbers.
    pub fn reals(&self, key: &str) -> Result<Vec<f64>> {
        let v = self.get(key)?;
        match v.as_array() {
            Some(items) => items
                .iter()
                .map(|x| x.as_f64().ok_or_else(|| self.bad(key, "a list of numbers")))
                .collect(),
            None => Ok(vec![v.as_f64().ok_or_else(|| self.bad(key, "a number"))?]),
        }
    }

    /// A list of integers.
    pub fn ints(&self, key: &str) -> Result<Vec<i64>> {
        self.get(key)?
            .as_array()
            .ok_or_else(|| self.bad(key, "a list of integers"))?
            .iter()
            .map(|x| {
                x.as_i64()
                    .ok_or_else(|| self.bad(key, "a list of integers"))
            })
            .collect()
    }

    /// A non-negative integer or a list of them (a shape).
    pub fn counts(&self, key: &str) -> Result<Vec<usize>> {
        let v = self.get(key)?;
        let items = match v.as_array() {
            Some(items) => items.clone(),
            None => vec![v.clone()],
        };
        items
            .iter()
            .map(|x| {
                x.as_u64()
                    .map(|n| n as usize)
                    .ok_or_else(|| self.bad(key, "a non-negative integer or a list of them"))
            })
            .collect()
    }

    /// A non-negative integer for both dimensions, or a pair of them (PyTorch's `_pair`).
    pub fn pair(&self, key: &str) -> Result<(usize, usize)> {
        match self.counts(key)?.as_slice() {
            [n] => Ok((*n, *n)),
            [a, b] => Ok((*a, *b)),
            _ => Err(self.bad(key, "an integer or a pair of integers")),
        }
    }

    /// An error saying that `key` must be `what`.
    pub fn bad(&self, key: &str, what: &str) -> Error {
        Error::invalid(
            self.op,
            format!(
                "{}'s {key} must be {what}, got {}",
                self.kind, self.json[key]
            ),
        )
    }
}
