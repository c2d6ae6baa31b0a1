//! Sorting, selection, splitting, padding and device moves of tensors.

use crate::convert::to_value;
use crate::error::IntoPyResult;
use crate::tensor::{PyTensor, compute, tensor_list};
use crate::value::{Value, pair, unify};
use crate::{map_pair, map_value, on_group};
use nabla_any::AnyBackend;
use nabla_core::{DType, Result};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// Two tensors of one kind as a Python tuple.
fn two<'py>(
    py: Python<'py>,
    v: &Value,
    f: impl FnOnce(&Value) -> Result<(Value, Value)> + Send,
) -> PyResult<Bound<'py, PyTuple>> {
    let (a, b) = py.detach(|| f(v)).py()?;
    PyTuple::new(py, [PyTensor::new(a), PyTensor::new(b)])
}

/// Splits a pair of tensors of either kind into two values.
macro_rules! pair_of {
    ($v:expr, $t:ident => $body:expr) => {
        match $v {
            Value::Eager($t) => $body.map(|(a, b)| (Value::Eager(a), Value::Eager(b))),
            Value::Traced($t) => $body.map(|(a, b)| (Value::Traced(a), Value::Traced(b))),
        }
    };
}

/// A list of tensors of either kind.
macro_rules! list_of {
    ($v:expr, $t:ident => $body:expr) => {
        match $v {
            Value::Eager($t) => $body.map(|l| l.into_iter().map(Value::Eager).collect::<Vec<_>>()),
            Value::Traced($t) => {
                $body.map(|l| l.into_iter().map(Value::Traced).collect::<Vec<_>>())
            }
        }
    };
}

#[pymethods]
impl PyTensor {
    /// The values sorted along `axis` (stable; NaN last).
    #[pyo3(signature = (axis = -1, descending = false))]
    fn sort(&self, py: Python<'_>, axis: isize, descending: bool) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(
            py,
            move || map_value!(&v, t => t.sort(axis, descending).map(|(s, _)| s)),
        )
    }

    /// The indices that sort the values along `axis`.
    #[pyo3(signature = (axis = -1, descending = false))]
    fn argsort(&self, py: Python<'_>, axis: isize, descending: bool) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.argsort(axis, descending)))
    }

    /// `(values, indices)` of the `k` largest (or smallest) entries along `axis`, as `torch.topk`.
    #[pyo3(signature = (k, axis = -1, largest = true))]
    fn topk<'py>(
        &self,
        py: Python<'py>,
        k: usize,
        axis: isize,
        largest: bool,
    ) -> PyResult<Bound<'py, PyTuple>> {
        two(
            py,
            &self.value,
            move |v| pair_of!(v, t => t.topk(k, axis, largest)),
        )
    }

    /// Entries picked along `axis` by an index tensor of the same rank, as `torch.gather`.
    fn gather(&self, py: Python<'_>, axis: isize, index: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, i) = (self.value.clone(), to_value(index, None)?);
        compute(
            py,
            move || map_pair!(pair(&a, &i)?, x, idx => x.gather(axis, &idx)),
        )
    }

    /// `self` with `source`'s slices added at positions `index` (1-D) along `axis`, as
    /// `torch.index_add` (repeated indices accumulate).
    fn index_add(
        &self,
        py: Python<'_>,
        axis: isize,
        index: &Bound<'_, PyAny>,
        source: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let vs = vec![
            self.value.clone(),
            to_value(index, None)?,
            to_value(source, None)?,
        ];
        compute(
            py,
            move || on_group!(unify(&vs)?, t => t[0].index_add(axis, &t[1], &t[2])),
        )
    }

    /// Pieces of `size` entries along `axis` (the last may be shorter).
    #[pyo3(signature = (size, axis = 0))]
    fn split<'py>(
        &self,
        py: Python<'py>,
        size: usize,
        axis: isize,
    ) -> PyResult<Bound<'py, PyList>> {
        let v = self.value.clone();
        let parts = py
            .detach(move || list_of!(&v, t => t.split(size, axis)))
            .py()?;
        tensor_list(py, parts)
    }

    /// `chunks` pieces of (nearly) equal size along `axis`.
    #[pyo3(signature = (chunks, axis = 0))]
    fn chunk<'py>(
        &self,
        py: Python<'py>,
        chunks: usize,
        axis: isize,
    ) -> PyResult<Bound<'py, PyList>> {
        let v = self.value.clone();
        let parts = py
            .detach(move || list_of!(&v, t => t.chunk(chunks, axis)))
            .py()?;
        tensor_list(py, parts)
    }

    /// One-hot vectors of `num_classes` for an integer tensor (int64, or `dtype`).
    #[pyo3(signature = (num_classes, dtype = None))]
    fn one_hot(
        &self,
        py: Python<'_>,
        num_classes: usize,
        dtype: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let d = crate::convert::opt_dtype(dtype)?.unwrap_or(DType::I64);
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.one_hot(num_classes, d)))
    }

    /// Padded with `value`: `pad_width` gives `(before, after)` per axis, as `np.pad`'s constant mode.
    #[pyo3(signature = (pad_width, value = 0.0))]
    fn pad(
        &self,
        py: Python<'_>,
        pad_width: Vec<(usize, usize)>,
        value: f64,
    ) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.pad(&pad_width, value)))
    }

    /// The tensor on `device` (`"cpu"`, or `"wgpu"` / `"cuda"` in a build with that feature), or
    /// converted to a dtype; moves between devices are differentiable.
    fn to(&self, py: Python<'_>, target: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        if let Ok(name) = target.extract::<String>()
            && crate::dtype::parse_dtype(target).is_err()
        {
            let backend = AnyBackend::from_name(&name).py()?;
            let t = self.value.eager("to").py()?.clone();
            return compute(py, move || t.to_backend(&backend).map(Value::Eager));
        }
        self.astype(py, target)
    }

    /// The tensor on the CPU.
    fn cpu(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let t = self.value.eager("cpu").py()?.clone();
        compute(py, move || {
            t.to_backend(crate::convert::cpu()).map(Value::Eager)
        })
    }
}
