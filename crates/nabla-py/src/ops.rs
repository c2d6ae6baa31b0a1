//! Module-level functions: creation, random numbers, the op catalogue's elementwise functions (one
//! callable per `UnaryOp`, `BinaryOp` and `CompareOp`, so no op is listed here), joins and selection.

use crate::convert::{cpu, default_dtype, opt_dtype, python_scalar, to_value};
use crate::error::IntoPyResult;
use crate::methods::{binary, operand, shape_args};
use crate::tensor::{PyTensor, compute};
use crate::value::{Value, pair, unify};
use crate::{map_pair, map_value, on_group};
use nabla_core::{BinaryOp, CompareOp, DType, Generator, ReduceOp, Scalar, UnaryOp};
use nabla_tensor::{NoGradGuard, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::{LazyLock, Mutex};

/// An elementwise function of one tensor from the op catalogue (`nabla_rs.exp`, ...).
#[pyclass(module = "nabla_rs", frozen)]
pub struct UnaryFn {
    op: UnaryOp,
}

#[pymethods]
impl UnaryFn {
    fn __call__(&self, py: Python<'_>, x: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let v = to_value(x, None)?;
        let op = self.op;
        compute(py, move || map_value!(&v, t => t.unary(op)))
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.op.name()
    }

    fn __repr__(&self) -> String {
        format!("<nabla_rs function {}>", self.op.name())
    }
}

/// An elementwise function of two operands from the op catalogue (`nabla_rs.maximum`, ...).
#[pyclass(module = "nabla_rs", frozen)]
pub struct BinaryFn {
    op: BinaryOp,
}

#[pymethods]
impl BinaryFn {
    fn __call__(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        match operand(a)? {
            crate::methods::Operand::Tensor(v) => binary(py, &v, self.op, operand(b)?, false),
            crate::methods::Operand::Number(_) => {
                let rhs = to_value(b, None)?;
                binary(py, &rhs, self.op, operand(a)?, true)
            }
        }
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.op.name()
    }
}

/// An elementwise comparison from the op catalogue (`nabla_rs.lt`, ...).
#[pyclass(module = "nabla_rs", frozen)]
pub struct CompareFn {
    op: CompareOp,
}

#[pymethods]
impl CompareFn {
    fn __call__(
        &self,
        py: Python<'_>,
        a: &Bound<'_, PyAny>,
        b: &Bound<'_, PyAny>,
    ) -> PyResult<PyTensor> {
        let (x, y) = (to_value(a, None)?, to_value(b, None)?);
        let op = self.op;
        compute(
            py,
            move || map_pair!(pair(&x, &y)?, l, r => l.compare(op, &r)),
        )
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.op.name()
    }
}

/// A reduction from the op catalogue (`nabla_rs.sum`, ...): over `axis` (every axis when `None`).
#[pyclass(module = "nabla_rs", frozen)]
pub struct ReduceFn {
    op: ReduceOp,
}

#[pymethods]
impl ReduceFn {
    #[pyo3(signature = (x, axis = None, keepdims = false))]
    fn __call__(
        &self,
        py: Python<'_>,
        x: &Bound<'_, PyAny>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<PyTensor> {
        let v = to_value(x, None)?;
        let axes = crate::methods::axes_of(axis, v.shape().len())?;
        let op = self.op;
        compute(
            py,
            move || map_value!(&v, t => t.reduce(op, &axes, keepdims)),
        )
    }

    #[getter]
    fn __name__(&self) -> &'static str {
        self.op.name()
    }
}

/// Adds one function per catalogue op to the module, under the op's own name.
pub fn add_catalogue(m: &Bound<'_, PyModule>) -> PyResult<()> {
    for op in UnaryOp::ALL {
        m.add(op.name(), UnaryFn { op })?;
    }
    for op in BinaryOp::ALL {
        m.add(op.name(), BinaryFn { op })?;
    }
    for op in CompareOp::ALL {
        m.add(op.name(), CompareFn { op })?;
    }
    for op in ReduceOp::ALL {
        m.add(op.name(), ReduceFn { op })?;
    }
    let names = |it: &mut dyn Iterator<Item = &'static str>| it.collect::<Vec<_>>();
    m.add(
        "_unary_ops",
        names(&mut UnaryOp::ALL.iter().map(|o| o.name())),
    )?;
    m.add(
        "_binary_ops",
        names(&mut BinaryOp::ALL.iter().map(|o| o.name())),
    )?;
    m.add(
        "_compare_ops",
        names(&mut CompareOp::ALL.iter().map(|o| o.name())),
    )?;
    m.add(
        "_reduce_ops",
        names(&mut ReduceOp::ALL.iter().map(|o| o.name())),
    )?;
    Ok(())
}

/// `tensor(data, dtype=None, requires_grad=False)`: a tensor from a NumPy array (a writable array
/// is copied, as by `torch.tensor`; a read-only one is shared; `from_numpy` always shares), a
/// nested sequence or a number (Python floats become float32, as in PyTorch).
#[pyfunction]
#[pyo3(signature = (data, dtype = None, requires_grad = false))]
pub fn tensor(
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    requires_grad: bool,
) -> PyResult<PyTensor> {
    PyTensor::from_data(data, dtype, requires_grad)
}

/// `from_numpy(array)`: a CPU tensor sharing the array's memory (the tensor keeps the array alive).
#[pyfunction]
pub fn from_numpy(array: &Bound<'_, numpy::PyUntypedArray>) -> PyResult<PyTensor> {
    crate::convert::from_numpy(array).map(PyTensor::eager)
}

/// `from_dlpack(obj)`: a tensor sharing the memory of any DLPack producer (CPU memory).
#[pyfunction]
pub fn from_dlpack(obj: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    crate::dlpack::from_dlpack(obj).map(PyTensor::eager)
}

fn dtype_or(dtype: Option<&Bound<'_, PyAny>>, default: DType) -> PyResult<DType> {
    Ok(opt_dtype(dtype)?.unwrap_or(default))
}

fn dims(shape: &Bound<'_, PyTuple>) -> PyResult<Vec<usize>> {
    shape_args(shape)?
        .into_iter()
        .map(|d| {
            usize::try_from(d).map_err(|_| {
                pyo3::exceptions::PyValueError::new_err(format!("negative dimension {d}"))
            })
        })
        .collect()
}

/// `zeros(*shape, dtype=float32)`.
#[pyfunction]
#[pyo3(signature = (*shape, dtype = None))]
pub fn zeros(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    filled(py, shape, dtype, 0.0)
}

/// `ones(*shape, dtype=float32)`.
#[pyfunction]
#[pyo3(signature = (*shape, dtype = None))]
pub fn ones(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    filled(py, shape, dtype, 1.0)
}

fn filled(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
    value: f64,
) -> PyResult<PyTensor> {
    let (d, dt) = (
        dims(shape)?,
        dtype_or(dtype, crate::dtype::default_float())?,
    );
    compute(py, move || {
        Tensor::full(d, value, dt, cpu()).map(Value::Eager)
    })
}

/// `full(shape, value, dtype=None)`: the dtype defaults to the value's (float32 for a float).
#[pyfunction]
#[pyo3(signature = (shape, value, dtype = None))]
pub fn full(
    py: Python<'_>,
    shape: &Bound<'_, PyAny>,
    value: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let d: Vec<usize> = match shape.extract::<usize>() {
        Ok(n) => vec![n],
        Err(_) => shape.extract()?,
    };
    let s = number(value)?;
    let dt = dtype_or(dtype, default_dtype(s))?;
    compute(py, move || Tensor::full(d, s, dt, cpu()).map(Value::Eager))
}

fn number(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    python_scalar(obj)?.ok_or_else(|| {
        pyo3::exceptions::PyTypeError::new_err(format!("expected a number, got {obj}"))
    })
}

/// `zeros_like(x, dtype=None)`.
#[pyfunction]
#[pyo3(signature = (x, dtype = None))]
pub fn zeros_like(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    like(py, x, dtype, 0.0)
}

/// `ones_like(x, dtype=None)`.
#[pyfunction]
#[pyo3(signature = (x, dtype = None))]
pub fn ones_like(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    like(py, x, dtype, 1.0)
}

fn like(
    py: Python<'_>,
    x: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    fill: f64,
) -> PyResult<PyTensor> {
    let v = to_value(x, None)?;
    let dt = dtype_or(dtype, v.dtype())?;
    compute(
        py,
        move || map_value!(&v, t => Tensor::full(t.shape().to_vec(), fill, dt, t.backend())),
    )
}

/// `arange(start, stop=None, step=1, dtype=None)`, as NumPy (int64 for integer arguments).
#[pyfunction]
#[pyo3(signature = (start, stop = None, step = None, dtype = None))]
pub fn arange(
    py: Python<'_>,
    start: &Bound<'_, PyAny>,
    stop: Option<&Bound<'_, PyAny>>,
    step: Option<&Bound<'_, PyAny>>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (lo, hi) = match stop {
        Some(s) if !s.is_none() => (number(start)?, number(s)?),
        _ => (Scalar::I64(0), number(start)?),
    };
    let st = match step {
        Some(s) if !s.is_none() => number(s)?,
        _ => Scalar::I64(1),
    };
    let all_int = [lo, hi, st]
        .iter()
        .all(|s| matches!(s, Scalar::I64(_) | Scalar::U64(_)));
    let dt = dtype_or(
        dtype,
        if all_int {
            DType::I64
        } else {
            crate::dtype::default_float()
        },
    )?;
    compute(py, move || {
        Tensor::arange(lo, hi, st, dt, cpu()).map(Value::Eager)
    })
}

/// `linspace(start, stop, num=50, dtype=float32)`.
#[pyfunction]
#[pyo3(signature = (start, stop, num = 50, dtype = None))]
pub fn linspace(
    py: Python<'_>,
    start: f64,
    stop: f64,
    num: usize,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let dt = dtype_or(dtype, crate::dtype::default_float())?;
    compute(py, move || {
        Tensor::linspace(start, stop, num, dt, cpu()).map(Value::Eager)
    })
}

/// `eye(n, dtype=float32)`: the identity matrix.
#[pyfunction]
#[pyo3(signature = (n, dtype = None))]
pub fn eye(py: Python<'_>, n: usize, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
    let dt = dtype_or(dtype, crate::dtype::default_float())?;
    compute(py, move || Tensor::eye(n, dt, cpu()).map(Value::Eager))
}

static GENERATOR: LazyLock<Mutex<Generator>> = LazyLock::new(|| Mutex::new(Generator::new(0)));

pub fn with_generator<R>(f: impl FnOnce(&mut Generator) -> R) -> R {
    let mut g = GENERATOR.lock().unwrap_or_else(|p| p.into_inner());
    f(&mut g)
}

/// `manual_seed(seed)`: reseeds the global generator `rand` and `randn` draw from.
#[pyfunction]
pub fn manual_seed(seed: u64) {
    with_generator(|g| *g = Generator::new(seed));
}

/// `get_rng_state()`: the global generator's state as 16 bytes (its seed and its counter, little
/// endian), a uint8 tensor as `torch.get_rng_state()` gives; `set_rng_state` restores it.
#[pyfunction]
pub fn get_rng_state(py: Python<'_>) -> PyResult<PyTensor> {
    let (seed, counter) = with_generator(|g| (g.seed(), g.counter()));
    let bytes: Vec<u8> = seed
        .to_le_bytes()
        .into_iter()
        .chain(counter.to_le_bytes())
        .collect();
    compute(py, move || {
        Tensor::from_host(nabla_core::HostData::U8(bytes), vec![16], cpu()).map(Value::Eager)
    })
}

/// `set_rng_state(state)`: makes the global generator continue from a state `get_rng_state` gave.
#[pyfunction]
pub fn set_rng_state(state: &Bound<'_, PyAny>) -> PyResult<()> {
    let value = crate::convert::to_value(state, None)?;
    let t = value.eager("set_rng_state").py()?;
    let bytes: Vec<u8> = match (t.dtype(), t.shape()) {
        (DType::U8, [16]) => t.to_vec::<u8>().py()?,
        (dtype, shape) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "set_rng_state: expects the 16-byte uint8 tensor get_rng_state gives, got {} of shape {shape:?}",
                dtype.name()
            )));
        }
    };
    let word = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    with_generator(|g| *g = Generator::from_state(word(0), word(8)));
    Ok(())
}

/// `_keyed_draw(kind, n, seed, offset)`: `n` float64 draws (`"uniform"` on [0, 1) or standard
/// `"normal"`) whose element `i` is the generator stream `(seed, offset + i)`'s: the concrete-key
/// path of `nabla_rs.random`, which computes the same stream with tensor ops for traced keys.
#[pyfunction]
pub fn _keyed_draw(
    py: Python<'_>,
    kind: &str,
    n: usize,
    seed: u64,
    offset: u64,
) -> PyResult<PyTensor> {
    let dist = match kind {
        "uniform" => nabla_core::Distribution::Uniform {
            low: 0.0,
            high: 1.0,
        },
        "normal" => nabla_core::Distribution::Normal {
            mean: 0.0,
            std: 1.0,
        },
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "_keyed_draw: unknown kind {other:?} (uniform or normal)"
            )));
        }
    };
    compute(py, move || {
        let mut g = Generator::from_state(seed, offset);
        Tensor::random([n], dist, DType::F64, &mut g, cpu()).map(Value::Eager)
    })
}

/// `rand(*shape, dtype=float32)`: uniform samples on [0, 1).
#[pyfunction]
#[pyo3(signature = (*shape, dtype = None))]
pub fn rand(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (d, dt) = (
        dims(shape)?,
        dtype_or(dtype, crate::dtype::default_float())?,
    );
    compute(py, move || {
        with_generator(|g| Tensor::rand(d, dt, g, cpu())).map(Value::Eager)
    })
}

/// `randn(*shape, dtype=float32)`: standard normal samples.
#[pyfunction]
#[pyo3(signature = (*shape, dtype = None))]
pub fn randn(
    py: Python<'_>,
    shape: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<PyTensor> {
    let (d, dt) = (
        dims(shape)?,
        dtype_or(dtype, crate::dtype::default_float())?,
    );
    compute(py, move || {
        with_generator(|g| Tensor::randn(d, dt, g, cpu())).map(Value::Eager)
    })
}

fn values(tensors: &Bound<'_, PyAny>) -> PyResult<Vec<Value>> {
    tensors.try_iter()?.map(|t| to_value(&t?, None)).collect()
}

/// `concatenate(tensors, axis=0)` (also `cat`).
#[pyfunction]
#[pyo3(signature = (tensors, axis = 0))]
pub fn concatenate(py: Python<'_>, tensors: &Bound<'_, PyAny>, axis: isize) -> PyResult<PyTensor> {
    let vs = values(tensors)?;
    compute(
        py,
        move || on_group!(unify(&vs)?, ts => Tensor::cat(&ts.iter().collect::<Vec<_>>(), axis)),
    )
}

/// `stack(tensors, axis=0)`.
#[pyfunction]
#[pyo3(signature = (tensors, axis = 0))]
pub fn stack(py: Python<'_>, tensors: &Bound<'_, PyAny>, axis: isize) -> PyResult<PyTensor> {
    let vs = values(tensors)?;
    compute(
        py,
        move || on_group!(unify(&vs)?, ts => Tensor::stack(&ts.iter().collect::<Vec<_>>(), axis)),
    )
}

/// `where(condition, x, y)`: `x` where the condition holds, `y` elsewhere (broadcast, promoted).
#[pyfunction]
#[pyo3(name = "where")]
pub fn where_(
    py: Python<'_>,
    condition: &Bound<'_, PyAny>,
    x: &Bound<'_, PyAny>,
    y: &Bound<'_, PyAny>,
) -> PyResult<PyTensor> {
    let vs = vec![
        to_value(condition, None)?,
        to_value(x, None)?,
        to_value(y, None)?,
    ];
    compute(
        py,
        move || on_group!(unify(&vs)?, t => t[0].where_(&t[1], &t[2])),
    )
}

/// `matmul(a, b)`, as NumPy's `@` (batched, broadcast).
#[pyfunction]
pub fn matmul(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
    let (x, y) = (to_value(a, None)?, to_value(b, None)?);
    compute(py, move || map_pair!(pair(&x, &y)?, l, r => l.matmul(&r)))
}

/// `einsum(equation, *operands)`, NumPy's subscripts with ellipses; the contraction order is
/// planned as `np.einsum_path` with `optimize=True`.
#[pyfunction]
#[pyo3(signature = (equation, *operands))]
pub fn einsum(
    py: Python<'_>,
    equation: String,
    operands: &Bound<'_, PyTuple>,
) -> PyResult<PyTensor> {
    let vs = values(operands.as_any())?;
    compute(
        py,
        move || on_group!(unify(&vs)?, ts => Tensor::einsum(&equation, &ts.iter().collect::<Vec<_>>())),
    )
}

/// `with GradMode(enabled):` records for autodiff inside the block when `enabled`, and nothing
/// when not (`no_grad`, `enable_grad` and `set_grad_enabled` in Python).
#[pyclass(module = "nabla_rs", unsendable)]
pub struct GradMode {
    enabled: bool,
    guards: Vec<NoGradGuard>,
}

#[pymethods]
impl GradMode {
    #[new]
    fn py_new(enabled: bool) -> Self {
        GradMode {
            enabled,
            guards: Vec::new(),
        }
    }

    fn __enter__(&mut self) {
        self.guards.push(NoGradGuard::set(self.enabled));
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> bool {
        self.guards.pop();
        false
    }
}

/// `with nabla_rs.autocast(dtype=nabla_rs.bfloat16):` F32 matrix products inside the block multiply in
/// bf16 with f32 sums, and so do their derivatives (`enabled=False` turns autocast off instead).
#[pyclass(module = "nabla_rs", unsendable)]
pub struct Autocast {
    dtype: Option<nabla_core::DType>,
    guards: Vec<nabla_tensor::AutocastGuard>,
}

#[pymethods]
impl Autocast {
    #[new]
    #[pyo3(signature = (dtype, enabled = true))]
    fn py_new(dtype: &Bound<'_, PyAny>, enabled: bool) -> PyResult<Self> {
        let dtype = crate::dtype::parse_dtype(dtype)?;
        // Checked here, so that a wrong dtype fails at construction rather than at `with`.
        nabla_tensor::check_autocast_dtype(dtype).py()?;
        Ok(Autocast {
            dtype: enabled.then_some(dtype),
            guards: Vec::new(),
        })
    }

    fn __enter__(&mut self) -> PyResult<()> {
        let guard = match self.dtype {
            Some(dtype) => nabla_tensor::AutocastGuard::new(dtype).py()?,
            None => nabla_tensor::AutocastGuard::disabled(),
        };
        self.guards.push(guard);
        Ok(())
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&mut self, _args: &Bound<'_, PyTuple>) -> bool {
        self.guards.pop();
        false
    }
}

/// `is_autocast_enabled()`: `True` inside an enabled `autocast` block.
#[pyfunction]
pub fn is_autocast_enabled() -> bool {
    nabla_tensor::autocast_dtype().is_some()
}

/// `_set_grad_enabled(mode) -> previous`: sets recording on this thread until set again
/// (`set_grad_enabled` called as a function).
#[pyfunction]
pub fn _set_grad_enabled(mode: bool) -> bool {
    nabla_tensor::set_grad_enabled(mode)
}

/// `_init_thread_pool(threads=None)`: sets up the CPU kernels' thread pool with the calling thread
/// as one of its threads (see `nabla_cpu::init_thread_pool`), so that an op called from it starts
/// its parallel work itself instead of handing it over and sleeping until it is done. The package
/// calls it on import from the main thread; it fails once the pool exists.
#[pyfunction]
#[pyo3(signature = (threads = None))]
pub fn _init_thread_pool(threads: Option<usize>) -> PyResult<()> {
    nabla_cpu::init_thread_pool(threads).py()
}

/// `is_grad_enabled()`: `False` inside `no_grad`.
#[pyfunction]
pub fn is_grad_enabled() -> bool {
    nabla_tensor::is_grad_enabled()
}
