//! Data between Python and nabla: NumPy arrays in and out without copies, Python numbers and nested
//! sequences in, and the default CPU device.

use crate::dtype::parse_dtype;
use crate::error::IntoPyResult;
use crate::tensor::PyTensor;
use crate::value::{Eager, Value};
use nabla_any::{AnyBackend, AnyStorage};
use nabla_core::{DType, Error, Layout, Scalar};
use nabla_cpu::CpuStorage;
use nabla_tensor::Tensor;
use num_complex::{Complex32, Complex64};
use numpy::npyffi::{self, NPY_ARRAY_ALIGNED, PY_ARRAY_API, npy_intp};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt};
use std::sync::OnceLock;

/// The CPU device every tensor made from Python data lives on.
pub fn cpu() -> &'static AnyBackend {
    static CPU: OnceLock<AnyBackend> = OnceLock::new();
    CPU.get_or_init(AnyBackend::cpu)
}

/// A Python number as a nabla scalar, or `None` for anything else.
pub fn python_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Option<Scalar>> {
    if obj.is_instance_of::<PyBool>() {
        return Ok(Some(Scalar::Bool(obj.extract()?)));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            return Ok(Some(Scalar::I64(v)));
        }
        // Between int64's and uint64's maxima, as NumPy, the number is a uint64.
        let v: u64 = obj.extract().map_err(|_| {
            pyo3::exceptions::PyOverflowError::new_err(format!(
                "the integer {obj} does not fit in int64 or uint64, nabla's widest integers"
            ))
        })?;
        return Ok(Some(Scalar::U64(v)));
    }
    if obj.is_instance_of::<PyFloat>() {
        return Ok(Some(Scalar::F64(obj.extract()?)));
    }
    if obj.is_instance_of::<PyComplex>() {
        let c: Complex64 = obj.extract()?;
        return Ok(Some(Scalar::C128(c)));
    }
    Ok(None)
}

/// PyTorch's default dtype for a Python number: bool, int64 (uint64 above int64's range, as
/// NumPy), the default float (float32 unless
/// `set_default_dtype` changed it) or its complex dtype.
pub fn default_dtype(s: Scalar) -> DType {
    match s {
        Scalar::Bool(_) => DType::Bool,
        Scalar::I64(_) => DType::I64,
        Scalar::U64(_) => DType::U64,
        Scalar::F64(_) => crate::dtype::default_float(),
        Scalar::C128(_) => crate::dtype::default_complex(),
    }
}

/// Any Python value as a tensor value: a `Tensor` as it is, a NumPy array copied unless it is
/// read-only (then shared), and numbers and nested sequences as `torch.tensor` reads them (Python
/// floats become the default float, float32, and complex numbers its complex dtype, unless `dtype`
/// says otherwise).
pub fn to_value(obj: &Bound<'_, PyAny>, dtype: Option<DType>) -> PyResult<Value> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        let v = t.borrow().value.clone();
        return match dtype {
            Some(d) if d != v.dtype() => crate::map_value!(&v, t => t.cast(d)).py(),
            _ => Ok(v),
        };
    }
    if let Some(s) = python_scalar(obj)? {
        let d = dtype.unwrap_or(default_dtype(s));
        return Tensor::scalar(s, d, cpu()).map(Value::Eager).py();
    }
    let py = obj.py();
    let from_array = obj.is_instance_of::<PyUntypedArray>();
    let np = py.import("numpy")?;
    let array = if from_array {
        obj.clone()
    } else if obj.hasattr("__dlpack__")? && !obj.hasattr("__array__")? {
        return Ok(Value::Eager(crate::dlpack::from_dlpack(obj)?));
    } else {
        np.call_method1("asarray", (obj,))?
    };
    let array = array.cast_into::<PyUntypedArray>()?;
    if !from_array && array.dtype().kind() == b'O' {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "cannot make a tensor of this data: it holds values no tensor dtype has (an integer \
             past uint64's range, or a value that is not a number)",
        ));
    }
    // Like `torch.tensor`, a writable array is copied: nabla's buffers must not change under a
    // tensor. `from_numpy` shares memory on request, as `torch.from_numpy`.
    let array = if from_array && array.getattr("flags")?.getattr("writeable")?.is_truthy()? {
        np.call_method1("array", (&array,))?
            .cast_into::<PyUntypedArray>()?
    } else {
        array
    };
    let mut t = from_numpy(&array)?;
    let target = match dtype {
        Some(d) => Some(d),
        None if !from_array && t.dtype() == DType::F64 => Some(crate::dtype::default_float()),
        None if !from_array && t.dtype() == DType::C128 => Some(crate::dtype::default_complex()),
        None => None,
    };
    if let Some(d) = target.filter(|d| *d != t.dtype()) {
        t = t.cast(d).py()?;
    }
    Ok(Value::Eager(t))
}

/// Reads an optional dtype argument.
pub fn opt_dtype(spec: Option<&Bound<'_, PyAny>>) -> PyResult<Option<DType>> {
    match spec {
        Some(s) if !s.is_none() => parse_dtype(s).map(Some),
        _ => Ok(None),
    }
}

/// The nabla dtype of a NumPy dtype, or a `TypeError`.
fn dtype_of_descr(descr: &Bound<'_, PyArrayDescr>) -> PyResult<DType> {
    let name: String = descr.getattr("name")?.extract()?;
    DType::from_name(&name).ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "NumPy arrays of dtype {name} cannot become tensors; nabla has {}",
            DType::ALL.map(DType::name).join(", ")
        ))
    })
}

/// A NumPy array as a CPU tensor sharing its memory (the tensor holds the array alive). Arrays
/// that are misaligned, byte-swapped or strided by a non-multiple of the item size are copied
/// first, and bool arrays are normalised to 0 and 1. As with `torch.from_numpy`, writing to the
/// array while the tensor is in use is a data race: the tensor's values would change under it.
pub fn from_numpy(array: &Bound<'_, PyUntypedArray>) -> PyResult<Eager> {
    let py = array.py();
    let np = py.import("numpy")?;
    let descr = array.dtype();
    let dtype = dtype_of_descr(&descr)?;
    let item = dtype.size_in_bytes() as isize;
    let needs_copy = !array.is_aligned()
        || descr.is_native_byteorder() == Some(false)
        || array.strides().iter().any(|s| s % item != 0)
        || dtype == DType::Bool;
    let array = if needs_copy {
        let fixed = if dtype == DType::Bool {
            // `asarray`: `not_equal` of a 0-d array is a NumPy scalar, not an array.
            np.call_method1("asarray", (np.call_method1("not_equal", (array, false))?,))?
        } else {
            let native = descr.call_method1("newbyteorder", ("=",))?;
            np.call_method1("ascontiguousarray", (array, native))?
        };
        fixed.cast_into::<PyUntypedArray>()?
    } else {
        array.clone()
    };
    let shape = array.shape().to_vec();
    let strides: Vec<isize> = array.strides().iter().map(|s| s / item).collect();
    // SAFETY: `as_array_ptr` is a live array object; its data pointer is read once here.
    let data = unsafe { (*npyffi::_PyArray_GET_ITEM_DATA(array.as_array_ptr())).data } as *const u8;
    let owner: Py<PyAny> = array.into_any().unbind();
    // SAFETY: NumPy guarantees `shape`, `strides` and `data` describe valid, aligned elements of
    // `dtype` that live as long as the array object, which the storage keeps as its owner.
    unsafe { strided_foreign(dtype, data, shape, strides, Box::new(owner)) }.py()
}

/// A CPU tensor viewing foreign memory: `data` points at element `[0, ..., 0]` and `strides` count
/// elements (negative ones included).
///
/// # Safety
/// Every element the shape and strides reach must be a valid, aligned element of `dtype` that stays
/// alive while `owner` does.
pub unsafe fn strided_foreign(
    dtype: DType,
    data: *const u8,
    shape: Vec<usize>,
    strides: Vec<isize>,
    owner: Box<dyn std::any::Any + Send + Sync>,
) -> nabla_core::Result<Eager> {
    let empty = shape.contains(&0);
    let overflow = || {
        Error::invalid(
            "from_numpy",
            format!("the view of shape {shape:?} and strides {strides:?} overflows"),
        )
    };
    let (mut low, mut high) = (0isize, 0isize);
    if !empty {
        for (&d, &s) in shape.iter().zip(&strides) {
            let last = isize::try_from(d - 1).map_err(|_| overflow())?;
            let reach = s.checked_mul(last).ok_or_else(overflow)?;
            if reach < 0 {
                low = low.checked_add(reach).ok_or_else(overflow)?;
            } else {
                high = high.checked_add(reach).ok_or_else(overflow)?;
            }
        }
    }
    let len = if empty {
        0
    } else {
        let span = high
            .checked_sub(low)
            .and_then(|v| v.checked_add(1))
            .ok_or_else(overflow)?;
        usize::try_from(span).map_err(|_| overflow())?
    };
    let base = if empty {
        std::ptr::null()
    } else {
        let bytes = low
            .checked_mul(dtype.size_in_bytes() as isize)
            .ok_or_else(overflow)?;
        data.wrapping_offset(bytes)
    };
    // SAFETY: forwarded from the caller; `base` is the lowest element the view reaches.
    let storage = unsafe { CpuStorage::from_foreign(dtype, base, len, owner) }?;
    let strides = if empty {
        Layout::contiguous(shape.clone()).strides().to_vec()
    } else {
        strides
    };
    let layout = Layout::from_parts(shape, strides, (-low) as usize)?;
    Tensor::from_storage(AnyStorage::Cpu(storage), layout, cpu())
}

/// Keeps a CPU buffer alive for as long as a NumPy array (or DLPack consumer) views it.
#[pyclass(module = "nabla_rs", frozen)]
pub struct HostBuffer {
    _storage: CpuStorage,
}

/// The NumPy dtype of `dtype`, or a `TypeError` for bfloat16, which NumPy lacks.
fn numpy_descr(py: Python<'_>, dtype: DType) -> PyResult<Bound<'_, PyArrayDescr>> {
    Ok(match dtype {
        DType::F16 => PyArrayDescr::of::<half::f16>(py),
        DType::F32 => PyArrayDescr::of::<f32>(py),
        DType::F64 => PyArrayDescr::of::<f64>(py),
        DType::C64 => PyArrayDescr::of::<Complex32>(py),
        DType::C128 => PyArrayDescr::of::<Complex64>(py),
        DType::I8 => PyArrayDescr::of::<i8>(py),
        DType::I16 => PyArrayDescr::of::<i16>(py),
        DType::I32 => PyArrayDescr::of::<i32>(py),
        DType::I64 => PyArrayDescr::of::<i64>(py),
        DType::U8 => PyArrayDescr::of::<u8>(py),
        DType::U16 => PyArrayDescr::of::<u16>(py),
        DType::U32 => PyArrayDescr::of::<u32>(py),
        DType::U64 => PyArrayDescr::of::<u64>(py),
        DType::Bool => PyArrayDescr::of::<bool>(py),
        DType::BF16 => {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "NumPy has no bfloat16; convert with .astype(nabla_rs.float32) first",
            ));
        }
    })
}

/// The CPU storage and layout of an eager tensor (moved to the CPU first if it lives elsewhere).
pub fn host_view(t: &Eager) -> nabla_core::Result<(CpuStorage, Layout)> {
    let on_cpu;
    let t = match t.storage() {
        AnyStorage::Cpu(_) => t,
        #[allow(unreachable_patterns)]
        _ => {
            on_cpu = t.detach().to_backend(cpu())?;
            &on_cpu
        }
    };
    match t.storage() {
        AnyStorage::Cpu(s) => Ok((s.clone(), t.layout().clone())),
        #[allow(unreachable_patterns)]
        _ => Err(Error::invalid("numpy", "the tensor did not reach the CPU")),
    }
}

/// A read-only NumPy array viewing the tensor's buffer, without a copy (strided and broadcast
/// views included). Writes are refused because nabla's buffers are immutable: copy with
/// `np.array(t)` to get a writable array.
pub fn to_numpy<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    let t = value.eager("numpy").py()?;
    let (storage, layout) = host_view(t).py()?;
    let dtype = storage.dtype();
    let descr = numpy_descr(py, dtype)?;
    let item = dtype.size_in_bytes() as isize;
    let mut dims: Vec<npy_intp> = layout.shape().iter().map(|&d| d as npy_intp).collect();
    let mut strides: Vec<npy_intp> = layout.strides().iter().map(|&s| s * item).collect();
    let data = storage
        .as_ptr()
        .wrapping_add(layout.offset() * dtype.size_in_bytes());
    let owner = Bound::new(py, HostBuffer { _storage: storage })?;
    // SAFETY: the descriptor, dimensions and strides describe elements inside `storage`'s buffer
    // (the layout was checked against it when the tensor was made); the array is read-only and
    // its base object keeps the buffer alive.
    unsafe {
        let array = PY_ARRAY_API.PyArray_NewFromDescr(
            py,
            npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
            descr.into_dtype_ptr(),
            dims.len() as std::os::raw::c_int,
            dims.as_mut_ptr(),
            strides.as_mut_ptr(),
            data as *mut std::ffi::c_void,
            NPY_ARRAY_ALIGNED,
            std::ptr::null_mut(),
        );
        let array = Bound::from_owned_ptr_or_err(py, array)?;
        if PY_ARRAY_API.PyArray_SetBaseObject(
            py,
            array.as_ptr() as *mut npyffi::PyArrayObject,
            owner.into_ptr(),
        ) != 0
        {
            return Err(PyErr::fetch(py));
        }
        Ok(array)
    }
}
