//! DLPack 1.0 exchange (`__dlpack__`, `__dlpack_device__`, `from_dlpack`), without copies, for CPU
//! tensors; the legacy unversioned capsule is made and read too. The structs follow `dlpack.h`.

use crate::convert::{host_view, strided_foreign};
use crate::error::IntoPyResult;
use crate::value::Eager;
use nabla_core::{DType, Error};
use pyo3::exceptions::{PyBufferError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{CStr, c_void};
use std::os::raw::c_char;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

const KDL_CPU: i32 = 1;
const FLAG_READ_ONLY: u64 = 1;
const VERSIONED: &CStr = c"dltensor_versioned";
const USED_VERSIONED: &CStr = c"used_dltensor_versioned";
const LEGACY: &CStr = c"dltensor";
const USED_LEGACY: &CStr = c"used_dltensor";

/// DLPack's (code, bits) of each dtype: int 0, uint 1, float 2, bfloat 4, complex 5, bool 6.
fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::U8 => (1, 8),
        DType::U16 => (1, 16),
        DType::U32 => (1, 32),
        DType::U64 => (1, 64),
        DType::F16 => (2, 16),
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::BF16 => (4, 16),
        DType::C64 => (5, 64),
        DType::C128 => (5, 128),
        DType::Bool => (6, 8),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

fn dtype_of(dl: DLDataType) -> PyResult<DType> {
    let found = DType::ALL
        .into_iter()
        .find(|d| {
            let e = dl_dtype(*d);
            e.code == dl.code && e.bits == dl.bits
        })
        .filter(|_| dl.lanes == 1);
    found.ok_or_else(|| {
        PyTypeError::new_err(format!(
            "DLPack dtype (code {}, {} bits, {} lanes) has no nabla dtype",
            dl.code, dl.bits, dl.lanes
        ))
    })
}

/// What an exported capsule owns: the buffer (kept alive) and the shape and strides it points to.
struct Export {
    _storage: nabla_cpu::CpuStorage,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

/// Fills a `DLTensor` describing `t`'s elements; `export` owns the arrays it points to.
fn describe(t: &Eager) -> PyResult<(Box<Export>, DLTensor)> {
    let (storage, layout) = host_view(t).py()?;
    let dtype = storage.dtype();
    let data = storage
        .as_ptr()
        .wrapping_add(layout.offset() * dtype.size_in_bytes()) as *mut c_void;
    let mut export = Box::new(Export {
        shape: layout.shape().iter().map(|&d| d as i64).collect(),
        strides: layout.strides().iter().map(|&s| s as i64).collect(),
        _storage: storage,
    });
    let tensor = DLTensor {
        data,
        device: DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        ndim: export.shape.len() as i32,
        dtype: dl_dtype(dtype),
        shape: export.shape.as_mut_ptr(),
        strides: export.strides.as_mut_ptr(),
        byte_offset: 0,
    };
    Ok((export, tensor))
}

unsafe extern "C" fn delete_versioned(managed: *mut DLManagedTensorVersioned) {
    // SAFETY: `managed` and its context were made by `Box::into_raw` in `to_capsule`.
    unsafe {
        drop(Box::from_raw((*managed).manager_ctx as *mut Export));
        drop(Box::from_raw(managed));
    }
}

unsafe extern "C" fn delete_legacy(managed: *mut DLManagedTensor) {
    // SAFETY: as in `delete_versioned`.
    unsafe {
        drop(Box::from_raw((*managed).manager_ctx as *mut Export));
        drop(Box::from_raw(managed));
    }
}

/// Frees an exported tensor that no consumer took (the capsule still has its original name).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with a live capsule; the pointer is read only under its own name.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, VERSIONED.as_ptr());
            delete_versioned(m as *mut DLManagedTensorVersioned);
        } else if ffi::PyCapsule_IsValid(capsule, LEGACY.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, LEGACY.as_ptr());
            delete_legacy(m as *mut DLManagedTensor);
        } else {
            ffi::PyErr_Clear();
        }
    }
}

/// The capsule `__dlpack__` returns: DLPack 1.0 (`dltensor_versioned`, marked read-only since
/// nabla's buffers are immutable) when the consumer asks for version 1, the legacy one otherwise
/// (the caller passes a copy then, since the legacy format cannot say read-only).
pub fn to_capsule<'py>(py: Python<'py>, t: &Eager, versioned: bool) -> PyResult<Bound<'py, PyAny>> {
    let (export, dl_tensor) = describe(t)?;
    let ctx = Box::into_raw(export) as *mut c_void;
    let (ptr, name): (*mut c_void, *const c_char) = if versioned {
        let managed = Box::new(DLManagedTensorVersioned {
            version: DLPackVersion { major: 1, minor: 0 },
            manager_ctx: ctx,
            deleter: Some(delete_versioned),
            flags: FLAG_READ_ONLY,
            dl_tensor,
        });
        (Box::into_raw(managed) as *mut c_void, VERSIONED.as_ptr())
    } else {
        let managed = Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx: ctx,
            deleter: Some(delete_legacy),
        });
        (Box::into_raw(managed) as *mut c_void, LEGACY.as_ptr())
    };
    // SAFETY: `ptr` is a live managed tensor that the destructor frees unless a consumer renames
    // the capsule, taking ownership.
    unsafe {
        let capsule = ffi::PyCapsule_New(ptr, name, Some(capsule_destructor));
        if capsule.is_null() {
            capsule_destructor_on_failure(ptr, versioned);
        }
        Bound::from_owned_ptr_or_err(py, capsule)
    }
}

unsafe fn capsule_destructor_on_failure(ptr: *mut c_void, versioned: bool) {
    // SAFETY: the capsule was not made, so nothing else owns `ptr`.
    unsafe {
        if versioned {
            delete_versioned(ptr as *mut DLManagedTensorVersioned);
        } else {
            delete_legacy(ptr as *mut DLManagedTensor);
        }
    }
}

/// Calls a consumed tensor's deleter when the last nabla handle to its memory goes.
struct Imported {
    managed: *mut c_void,
    versioned: bool,
}

// SAFETY: DLPack producers' deleters may be called from any thread (the standard requires it).
unsafe impl Send for Imported {}
// SAFETY: nothing is read through `Imported`; it only calls the deleter once, on drop.
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: `managed` is the pointer taken from the capsule, owned by this value alone.
        unsafe {
            if self.versioned {
                let m = self.managed as *mut DLManagedTensorVersioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed as *mut DLManagedTensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

/// A tensor sharing the memory of any object with `__dlpack__` (NumPy, PyTorch, JAX, ...) or of a
/// DLPack capsule: `from_dlpack` of the DLPack standard. CPU memory only.
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<Eager> {
    let capsule = if obj.hasattr("__dlpack__")? {
        let kwargs = pyo3::types::PyDict::new(obj.py());
        kwargs.set_item("max_version", (1, 0))?;
        match obj.call_method("__dlpack__", (), Some(&kwargs)) {
            Ok(c) => c,
            Err(e) if e.is_instance_of::<PyTypeError>(obj.py()) => {
                obj.call_method0("__dlpack__")?
            }
            Err(e) => return Err(e),
        }
    } else {
        obj.clone()
    };
    let raw = capsule.as_ptr();
    // SAFETY: capsule calls on a live object; a name check precedes every pointer read.
    unsafe {
        let (managed, versioned) = if ffi::PyCapsule_IsValid(raw, VERSIONED.as_ptr()) == 1 {
            (ffi::PyCapsule_GetPointer(raw, VERSIONED.as_ptr()), true)
        } else if ffi::PyCapsule_IsValid(raw, LEGACY.as_ptr()) == 1 {
            (ffi::PyCapsule_GetPointer(raw, LEGACY.as_ptr()), false)
        } else {
            return Err(PyTypeError::new_err(
                "from_dlpack expects an object with __dlpack__ or an unused DLPack capsule",
            ));
        };
        let tensor: &DLTensor = if versioned {
            let m = &*(managed as *const DLManagedTensorVersioned);
            if m.version.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "DLPack version {}.{} is not supported (nabla reads 1.x)",
                    m.version.major, m.version.minor
                )));
            }
            &m.dl_tensor
        } else {
            &(*(managed as *const DLManagedTensor)).dl_tensor
        };
        let view = read_tensor(tensor)?;
        let used = if versioned {
            USED_VERSIONED
        } else {
            USED_LEGACY
        };
        if ffi::PyCapsule_SetName(raw, used.as_ptr()) != 0 {
            return Err(PyErr::fetch(obj.py()));
        }
        let owner = Box::new(Imported { managed, versioned });
        if view.dtype == DType::Bool {
            // A producer's bool bytes may hold values other than 0 and 1: read them as bytes and
            // normalise (a copy).
            let bytes =
                strided_foreign(DType::U8, view.data, view.shape, view.strides, owner).py()?;
            return bytes.compare(nabla_core::CompareOp::Ne, 0i64).py();
        }
        strided_foreign(view.dtype, view.data, view.shape, view.strides, owner).py()
    }
}

struct View {
    dtype: DType,
    data: *const u8,
    shape: Vec<usize>,
    strides: Vec<isize>,
}

/// Checks and reads a `DLTensor`'s description.
///
/// # Safety
/// `t` must be a valid `DLTensor` whose shape and strides arrays hold `ndim` entries.
unsafe fn read_tensor(t: &DLTensor) -> PyResult<View> {
    if t.device.device_type != KDL_CPU {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: the tensor is on DLPack device type {} (device {}); nabla imports CPU \
             memory (type 1) only: move it to the CPU first",
            t.device.device_type, t.device.device_id
        )));
    }
    let dtype = dtype_of(t.dtype)?;
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| PyValueError::new_err(format!("from_dlpack: ndim {} < 0", t.ndim)))?;
    if ndim > 0 && t.shape.is_null() {
        return Err(PyValueError::new_err("from_dlpack: null shape pointer"));
    }
    // SAFETY: forwarded from the caller; a 0-d tensor may have a null shape.
    let shape_i64: &[i64] = if ndim == 0 {
        &[]
    } else {
        unsafe { std::slice::from_raw_parts(t.shape, ndim) }
    };
    let shape = shape_i64
        .iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| PyValueError::new_err(format!("from_dlpack: bad shape {shape_i64:?}")))?;
    let strides = if t.strides.is_null() || ndim == 0 {
        nabla_core::Layout::contiguous(shape.clone())
            .strides()
            .to_vec()
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { std::slice::from_raw_parts(t.strides, ndim) }
            .iter()
            .map(|&s| s as isize)
            .collect()
    };
    let data = (t.data as *const u8).wrapping_add(t.byte_offset as usize);
    if data.is_null() && !shape.contains(&0) {
        return Err(Error::invalid("from_dlpack", "null data pointer")).py();
    }
    Ok(View {
        dtype,
        data,
        shape,
        strides,
    })
}
