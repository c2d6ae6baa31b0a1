//! Dtypes from Python: `nabla_rs.float32` objects, names, NumPy dtypes and Python's number types.

use crate::error::IntoPyResult;
use nabla_core::{DType, Error};
use pyo3::prelude::*;
use pyo3::types::{PyString, PyType};

/// The floating-point dtype Python floats and the creation functions default to
/// (`set_default_dtype`; float32 at start), as a `DType::F32`/`F64`/`F16`/`BF16` code.
static DEFAULT_FLOAT: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

const DEFAULT_FLOATS: [DType; 4] = [DType::F32, DType::F64, DType::F16, DType::BF16];

/// The default floating-point dtype (PyTorch's `get_default_dtype()`).
pub fn default_float() -> DType {
    DEFAULT_FLOATS[usize::from(DEFAULT_FLOAT.load(std::sync::atomic::Ordering::Relaxed)) % 4]
}

/// The default complex dtype: complex128 when the default float is float64, else complex64.
pub fn default_complex() -> DType {
    if default_float() == DType::F64 {
        DType::C128
    } else {
        DType::C64
    }
}

/// `_set_default_dtype(dtype)`: makes `dtype` (a floating-point dtype) the default of Python
/// floats and of the creation functions, as `torch.set_default_dtype`.
#[pyfunction]
pub fn _set_default_dtype(dtype: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = parse_dtype(dtype)?;
    let Some(code) = DEFAULT_FLOATS.iter().position(|f| *f == d) else {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "set_default_dtype: only floating-point dtypes can be the default, got {}",
            d.name()
        )));
    };
    DEFAULT_FLOAT.store(code as u8, std::sync::atomic::Ordering::Relaxed);
    Ok(())
}

/// `_default_dtype()`: the default floating-point dtype.
#[pyfunction]
pub fn _default_dtype() -> PyDType {
    PyDType {
        dtype: default_float(),
    }
}

/// A dtype as Python sees it: `nabla_rs.float32`, ... Equal to its name and to NumPy's dtype.
#[pyclass(name = "dtype", module = "nabla_rs", frozen, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub(crate) dtype: DType,
}

#[pymethods]
impl PyDType {
    #[new]
    fn py_new(spec: &Bound<'_, PyAny>) -> PyResult<Self> {
        Ok(PyDType {
            dtype: parse_dtype(spec)?,
        })
    }

    /// NumPy's name: `float32`, `complex64`, `bool`, ...
    #[getter]
    fn name(&self) -> &'static str {
        self.dtype.name()
    }

    /// Bytes per element.
    #[getter]
    fn itemsize(&self) -> usize {
        self.dtype.size_in_bytes()
    }

    /// `True` for floating-point dtypes (half precision included).
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.dtype.is_float()
    }

    /// `True` for complex dtypes.
    #[getter]
    fn is_complex(&self) -> bool {
        self.dtype.is_complex()
    }

    /// The dtype this and `other` promote to, by nabla's rule (PyTorch's: bool, then integers,
    /// floats and complex numbers, then the width), the one every op with two operands applies.
    fn promote(&self, other: &Bound<'_, PyAny>) -> PyResult<PyDType> {
        Ok(PyDType {
            dtype: self.dtype.promote(parse_dtype(other)?),
        })
    }

    fn __repr__(&self) -> String {
        format!("nabla_rs.{}", self.dtype.name())
    }

    fn __str__(&self) -> &'static str {
        self.dtype.name()
    }

    /// Equal to the same dtype in any spelling [`parse_dtype`] reads (`"float32"`,
    /// `np.dtype("float32")`, `np.float32`), as NumPy's dtypes are; anything else (`None` included)
    /// is unequal.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        // `None` is no dtype here, although NumPy reads it as float64.
        !other.is_none() && parse_dtype(other).is_ok_and(|d| d == self.dtype)
    }

    fn __ne__(&self, other: &Bound<'_, PyAny>) -> bool {
        !self.__eq__(other)
    }

    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.dtype.hash(&mut h);
        h.finish()
    }
}

/// Every dtype, for the module's `float32`, `int64`, ... attributes.
pub fn all_dtypes() -> impl Iterator<Item = PyDType> {
    DType::ALL.into_iter().map(|dtype| PyDType { dtype })
}

/// Reads a dtype from a `nabla_rs.dtype`, a name (`"float32"`, `"f32"`), a NumPy dtype or scalar type
/// (`np.float32`), or Python's `bool`, `int`, `float` and `complex` (as NumPy reads them: int64,
/// float64, complex128).
pub fn parse_dtype(spec: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = spec.extract::<PyDType>() {
        return Ok(d.dtype);
    }
    if let Ok(name) = spec.cast::<PyString>() {
        return dtype_named(&name.to_cow()?);
    }
    if let Ok(ty) = spec.cast::<PyType>() {
        let py = spec.py();
        let builtins = py.import("builtins")?;
        for (name, dtype) in [
            ("bool", DType::Bool),
            ("int", DType::I64),
            ("float", DType::F64),
            ("complex", DType::C128),
        ] {
            if ty.is(&builtins.getattr(name)?) {
                return Ok(dtype);
            }
        }
    }
    // NumPy dtypes and scalar types (np.float32, np.dtype("f4")) and anything else with a name.
    let numpy_name = spec
        .py()
        .import("numpy")
        .and_then(|np| np.getattr("dtype")?.call1((spec,)))
        .and_then(|d| d.getattr("name")?.extract::<String>());
    match numpy_name {
        Ok(name) => dtype_named(&name),
        Err(_) => Err(Error::invalid(
            "dtype",
            format!(
                "cannot read a dtype from {}; give a nabla_rs dtype, a name such as \"float32\" \
                 or a NumPy dtype",
                spec.repr().map_or_else(|_| "?".into(), |r| r.to_string())
            ),
        ))
        .py(),
    }
}

fn dtype_named(name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "unknown dtype {name:?}; nabla has {}",
            DType::ALL.map(DType::name).join(", ")
        ))
    })
}
