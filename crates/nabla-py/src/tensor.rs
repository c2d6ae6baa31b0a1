//! `nabla_rs.Tensor`: the Python tensor class, its data, printing and autograd state. Operators,
//! reductions and shape methods are in `methods.rs`, indexing in `index.rs`.

use crate::convert::{opt_dtype, to_numpy, to_value};
use crate::dtype::PyDType;
use crate::error::IntoPyResult;
use crate::grads::{self, GradSlot};
use crate::value::{Eager, Value};
use crate::{map_value, with_value};
use nabla_core::{Result, Scalar};
use nabla_tensor::{BackwardOptions, PrintOptions};
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::Arc;

/// A tensor: an n-dimensional array of one dtype on a device, tracked for gradients when it
/// requires them.
#[pyclass(name = "Tensor", module = "nabla_rs", weakref, subclass)]
pub struct PyTensor {
    pub(crate) value: Value,
    /// Where `.grad` accumulates, for a leaf that requires gradients.
    slot: Option<Arc<GradSlot>>,
}

impl PyTensor {
    /// Wraps a value.
    pub fn new(value: Value) -> Self {
        let slot = match &value {
            Value::Eager(e) => grads::slot_for(e),
            Value::Traced(_) => None,
        };
        PyTensor { value, slot }
    }

    /// `true` for a leaf variable (made with `requires_grad`), whose `.grad` accumulates.
    pub fn is_leaf_var(&self) -> bool {
        self.slot.is_some()
    }

    /// Wraps an eager tensor.
    pub fn eager(t: Eager) -> Self {
        PyTensor::new(Value::Eager(t))
    }

    /// The accumulated `.grad`, for a leaf that has one.
    pub(crate) fn grad_value(&self) -> Option<Eager> {
        self.slot.as_ref()?.get()
    }

    /// Sets or clears the accumulated `.grad` of a leaf that has one.
    pub(crate) fn set_grad_value(&self, grad: Option<Eager>) {
        if let Some(slot) = &self.slot {
            slot.set(grad);
        }
    }

    /// Makes the graph leaf `leaf` (of this tensor's shape and dtype) this tensor's values, in
    /// place: a leaf that requires gradients keeps its `.grad`, which later backward passes
    /// accumulate into through `leaf`. An untracked `leaf` replaces the values of any tensor.
    pub(crate) fn adopt(&mut self, leaf: Eager) {
        if let Some(slot) = &self.slot
            && leaf.is_leaf()
            && leaf.requires_grad()
        {
            grads::rebind(&leaf, slot);
            self.value = Value::Eager(leaf);
        } else {
            self.value = Value::Eager(leaf.detach());
        }
    }
}

/// Runs `f` with the GIL released (so other Python threads run meanwhile) and wraps its tensor.
pub fn compute(py: Python<'_>, f: impl FnOnce() -> Result<Value> + Send) -> PyResult<PyTensor> {
    py.detach(f).py().map(PyTensor::new)
}

#[pymethods]
impl PyTensor {
    /// `Tensor(data, dtype=None, requires_grad=False)`: as `nabla_rs.tensor`.
    #[new]
    #[pyo3(signature = (data, dtype = None, requires_grad = false))]
    pub(crate) fn from_data(
        data: &Bound<'_, PyAny>,
        dtype: Option<&Bound<'_, PyAny>>,
        requires_grad: bool,
    ) -> PyResult<Self> {
        let value = to_value(data, opt_dtype(dtype)?)?;
        let value = if requires_grad {
            map_value!(&value, t => t.detach().leaf()).py()?
        } else {
            value
        };
        Ok(PyTensor::new(value))
    }

    /// The shape, as a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.value.shape())
    }

    /// The number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.value.shape().len()
    }

    /// The number of elements.
    #[getter]
    fn size(&self) -> usize {
        self.value.shape().iter().product()
    }

    /// The number of elements (PyTorch's spelling).
    fn numel(&self) -> usize {
        self.size()
    }

    /// The dtype.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType {
            dtype: self.value.dtype(),
        }
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.value.dtype().size_in_bytes()
    }

    /// The device: `"cpu"`, `"wgpu"`, or `"traced"` inside `jit` and `vmap`.
    #[getter]
    fn device(&self) -> String {
        match &self.value {
            Value::Eager(e) => nabla_core::Backend::name(e.backend()).to_string(),
            Value::Traced(_) => "traced".to_string(),
        }
    }

    /// `True` when gradients flow back from this tensor.
    #[getter]
    fn requires_grad(&self) -> bool {
        self.value.requires_grad()
    }

    /// `t.requires_grad = True` makes `t` a leaf that gradients accumulate in (as
    /// `requires_grad_`); `False` detaches it.
    #[setter(requires_grad)]
    fn set_requires_grad(&mut self, flag: bool) -> PyResult<()> {
        let value = if flag {
            if self.is_leaf() && self.value.requires_grad() {
                return Ok(());
            }
            map_value!(&self.value, t => t.detach().leaf()).py()?
        } else {
            map_value!(&self.value, t => Ok::<_, nabla_core::Error>(t.detach())).py()?
        };
        *self = PyTensor::new(value);
        Ok(())
    }

    /// Makes this tensor a leaf that requires gradients (in place, as PyTorch) and returns it.
    #[pyo3(signature = (requires_grad = true))]
    fn requires_grad_(
        mut slf: PyRefMut<'_, Self>,
        requires_grad: bool,
    ) -> PyResult<PyRefMut<'_, Self>> {
        slf.set_requires_grad(requires_grad)?;
        Ok(slf)
    }

    /// `True` for a tensor that is not the result of a tracked op: untracked tensors and
    /// variables made with `requires_grad`.
    #[getter]
    fn is_leaf(&self) -> bool {
        with_value!(&self.value, t => t.is_leaf() || !t.requires_grad())
    }

    /// The gradient accumulated by `backward()` (leaves only), or `None`.
    #[getter]
    fn grad(&self) -> Option<PyTensor> {
        let g = self.slot.as_ref()?.get()?;
        Some(PyTensor::eager(g))
    }

    /// Sets or clears (`None`) the accumulated gradient.
    #[setter(grad)]
    fn set_grad(&self, grad: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let Some(slot) = &self.slot else {
            return Err(PyRuntimeError::new_err(
                "only a leaf tensor that requires grad has a .grad to set",
            ));
        };
        let value = match grad {
            Some(g) if !g.is_none() => Some(
                to_value(g, Some(self.value.dtype()))?
                    .eager("grad")
                    .py()?
                    .clone(),
            ),
            _ => None,
        };
        if let Some(g) = &value
            && g.shape() != self.value.shape()
        {
            // PyTorch refuses it here too, rather than when an optimizer first uses it.
            return Err(PyRuntimeError::new_err(format!(
                "assigned grad has shape {:?}, the tensor {:?}",
                g.shape(),
                self.value.shape()
            )));
        }
        slot.set(value);
        Ok(())
    }

    /// `_add_grad_hook(hook, post=False) -> handle`: runs `hook(grad)` on each gradient of this
    /// leaf before it is added to `.grad` (PyTorch's `register_hook` on a leaf), or with `post`,
    /// `hook()` after it was added (`register_post_accumulate_grad_hook`).
    #[pyo3(signature = (hook, post = false))]
    fn _add_grad_hook(&self, hook: Py<PyAny>, post: bool) -> PyResult<u64> {
        match &self.slot {
            Some(slot) => Ok(slot.add_hook(hook, post)),
            None => Err(PyRuntimeError::new_err(
                "register_hook: only a leaf tensor that requires grad takes a leaf hook",
            )),
        }
    }

    /// `_remove_grad_hook(handle)`: removes a hook `_add_grad_hook` added.
    fn _remove_grad_hook(&self, handle: u64) {
        if let Some(slot) = &self.slot {
            slot.remove_hook(handle);
        }
    }

    /// The values without gradient tracking (PyTorch's `.data`).
    #[getter]
    fn data(&self) -> PyResult<PyTensor> {
        self.detach()
    }

    /// Replaces the values in place, as PyTorch's `p.data = values` (the optimizers use it): a leaf
    /// that requires gradients stays one and keeps its accumulated `.grad`. The shape must match.
    #[setter(data)]
    fn set_data(&mut self, values: &Bound<'_, PyAny>) -> PyResult<()> {
        let fresh = to_value(values, Some(self.value.dtype()))?
            .eager("data")
            .py()?
            .detach();
        if fresh.shape() != self.value.shape() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "data of shape {:?} cannot replace a tensor of shape {:?}",
                fresh.shape(),
                self.value.shape()
            )));
        }
        let fresh = match &self.slot {
            Some(_) => fresh.leaf().py()?,
            None => fresh,
        };
        self.adopt(fresh);
        Ok(())
    }

    /// `_convert_in_place(dtype)`: this tensor's values converted to `dtype`, in place (what
    /// `nn.Module.to(dtype)` does to parameters and buffers): a leaf that requires gradients stays
    /// one, with its `.grad` converted too.
    fn _convert_in_place(&mut self, dtype: &Bound<'_, PyAny>) -> PyResult<()> {
        let d = crate::dtype::parse_dtype(dtype)?;
        let fresh = self.value.eager("to").py()?.detach().cast(d).py()?;
        let Some(slot) = self.slot.clone() else {
            self.value = Value::Eager(fresh);
            return Ok(());
        };
        let grad = match slot.get() {
            Some(g) => Some(g.cast(d).py()?),
            None => None,
        };
        self.adopt(fresh.leaf().py()?);
        slot.set(grad);
        Ok(())
    }

    /// Computes the gradients of this tensor (a scalar, or any shape with `gradient` as the seed)
    /// and adds them to the `.grad` of every leaf that requires them, as PyTorch's `backward`.
    /// `create_graph=True` records the backward pass so the gradients can be differentiated.
    #[pyo3(signature = (gradient = None, retain_graph = None, create_graph = false))]
    fn backward(
        &self,
        py: Python<'_>,
        gradient: Option<&Bound<'_, PyAny>>,
        retain_graph: Option<bool>,
        create_graph: bool,
    ) -> PyResult<()> {
        let y = self.value.eager("backward").py()?.clone();
        let seed = match gradient {
            Some(g) if !g.is_none() => Some(
                to_value(g, Some(y.dtype()))?
                    .eager("backward")
                    .py()?
                    .clone(),
            ),
            _ => None,
        };
        let opts = BackwardOptions {
            create_graph,
            retain_graph: retain_graph.unwrap_or(create_graph),
            ..Default::default()
        };
        let grads = py.detach(|| y.backward_opts(seed.as_ref(), opts)).py()?;
        grads::accumulate(py, &grads)
    }

    /// The same values, cut from the graph.
    fn detach(&self) -> PyResult<PyTensor> {
        map_value!(&self.value, t => Ok::<_, nabla_core::Error>(t.detach()))
            .py()
            .map(PyTensor::new)
    }

    /// A read-only NumPy array sharing this tensor's memory (no copy for CPU tensors).
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_numpy(py, &self.value)
    }

    /// NumPy's array protocol: `np.asarray(t)` shares memory; `np.array(t)` copies.
    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut array = to_numpy(py, &self.value)?;
        if let Some(d) = dtype.filter(|d| !d.is_none()) {
            array = array.call_method1("astype", (d,))?;
        }
        if copy == Some(true) {
            array = array.call_method0("copy")?;
        }
        Ok(array)
    }

    /// The values as nested Python lists (a number for a 0-d tensor).
    fn tolist<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.numpy(py)?.call_method0("tolist")
    }

    /// The value of a one-element tensor as a Python number.
    fn item<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let t = self.value.eager("item").py()?;
        let s = t.to_scalar().py()?;
        scalar_to_py(py, s)
    }

    fn __float__(&self, py: Python<'_>) -> PyResult<f64> {
        self.item(py)?.extract()
    }

    /// The one element as a Python int (of any size: a uint64 above int64's range included).
    fn __int__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.item(py)?;
        py.import("builtins")?.getattr("int")?.call1((v,))
    }

    fn __index__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if self.value.dtype().is_float() || self.value.dtype().is_complex() {
            return Err(PyTypeError::new_err(
                "only integer tensors of one element can be used as an index",
            ));
        }
        self.__int__(py)
    }

    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let v = self.item(py)?;
        py.import("builtins")?.getattr("complex")?.call1((v,))
    }

    fn __bool__(&self, py: Python<'_>) -> PyResult<bool> {
        if self.size() != 1 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "the truth value of a tensor with {} elements is ambiguous; use .any() or .all()",
                self.size()
            )));
        }
        self.item(py)?.is_truthy()
    }

    /// Iterates over the first axis, as NumPy and PyTorch do; a 0-d tensor is not iterable.
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
        let n = slf.borrow().__len__().map_err(|_| {
            PyTypeError::new_err("iteration over a 0-d tensor; use .item() for its value")
        })?;
        let rows = (0..n)
            .map(|i| slf.get_item(i))
            .collect::<PyResult<Vec<_>>>()?;
        pyo3::types::PyList::new(slf.py(), rows)?.try_iter()
    }

    fn __len__(&self) -> PyResult<usize> {
        self.value
            .shape()
            .first()
            .copied()
            .ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }

    fn __repr__(&self) -> PyResult<String> {
        match &self.value {
            Value::Eager(t) => {
                let text = t.format_with(&PrintOptions::default()).py()?;
                Ok(
                    if t.requires_grad() && !text.ends_with("requires_grad=True)") {
                        format!("{}, requires_grad=True)", text.trim_end_matches(')'))
                    } else {
                        text
                    },
                )
            }
            Value::Traced(t) => Ok(format!(
                "Traced(shape={:?}, dtype={})",
                t.shape(),
                t.dtype()
            )),
        }
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    /// The DLPack capsule of this tensor's memory (DLPack 1.0 when `max_version` allows it).
    #[pyo3(signature = (*, stream = None, max_version = None, dl_device = None, copy = None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = stream;
        if let Some((kind, _)) = dl_device
            && kind != 1
        {
            return Err(pyo3::exceptions::PyBufferError::new_err(
                "nabla exports DLPack tensors on the CPU (device type 1) only",
            ));
        }
        let t = self.value.eager("__dlpack__").py()?;
        let versioned = max_version.is_some_and(|(major, _)| major >= 1);
        // The legacy capsule has no read-only flag: its consumers get a copy they may write.
        let t = if copy == Some(true) || !versioned {
            nabla_tensor::Tensor::from_host(t.to_host().py()?, t.shape().to_vec(), t.backend())
                .py()?
        } else {
            t.clone()
        };
        crate::dlpack::to_capsule(py, &t, versioned)
    }

    /// `(device_type, device_id)` of DLPack: `(1, 0)`, the CPU.
    fn __dlpack_device__(&self) -> (i32, i32) {
        (1, 0)
    }

    /// The tensor converted to `dtype`.
    pub(crate) fn astype(&self, py: Python<'_>, dtype: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let d = crate::dtype::parse_dtype(dtype)?;
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.cast(d)))
    }
}

/// A nabla scalar as a Python number.
pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<Bound<'_, PyAny>> {
    Ok(match s {
        Scalar::F64(v) => v.into_pyobject(py)?.into_any(),
        Scalar::I64(v) => v.into_pyobject(py)?.into_any(),
        Scalar::U64(v) => v.into_pyobject(py)?.into_any(),
        Scalar::Bool(v) => pyo3::types::PyBool::new(py, v).to_owned().into_any(),
        Scalar::C128(v) => v.into_pyobject(py)?.into_any(),
    })
}

/// A list of tensors as a Python list.
pub fn tensor_list<'py>(py: Python<'py>, values: Vec<Value>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, values.into_iter().map(PyTensor::new))
}
