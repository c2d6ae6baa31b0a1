//! The tensor's operators (`+`, `@`, `<`, ...), reductions and shape methods. Elementwise functions
//! without an operator (`exp`, `sin`, ...) come from the op catalogue in `ops.rs`.

use crate::convert::{python_scalar, to_value};
use crate::error::IntoPyResult;
use crate::tensor::{PyTensor, compute};
use crate::value::{Value, pair};
use crate::{map_pair, map_value};
use nabla_core::{BinaryOp, CompareOp, DType, Result, Scalar, UnaryOp};
use nabla_tensor::Tensor;
use pyo3::basic::CompareOp as PyCompareOp;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The other operand of a binary op: a tensor, or a Python number (weakly typed, as in PyTorch).
pub enum Operand {
    /// A tensor (or data made into one).
    Tensor(Value),
    /// A Python number.
    Number(Scalar),
}

/// Reads a binary op's other operand.
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(Operand::Tensor(t.borrow().value.clone()));
    }
    match python_scalar(obj)? {
        Some(s) => Ok(Operand::Number(s)),
        None => to_value(obj, None).map(Operand::Tensor),
    }
}

/// `lhs op rhs` (or `rhs op lhs` when `reflected`), broadcasting, with NumPy's type promotion.
pub fn binary(
    py: Python<'_>,
    lhs: &Value,
    op: BinaryOp,
    rhs: Operand,
    reflected: bool,
) -> PyResult<PyTensor> {
    match rhs {
        Operand::Number(s) if !reflected => {
            let v = lhs.clone();
            compute(py, move || map_value!(&v, t => t.binary(op, s)))
        }
        Operand::Number(s) => {
            let v = lhs.clone();
            compute(
                py,
                move || map_value!(&v, t => number_like(s, t).and_then(|n| n.binary(op, t))),
            )
        }
        Operand::Tensor(r) => {
            let (a, b) = if reflected {
                (r, lhs.clone())
            } else {
                (lhs.clone(), r)
            };
            compute(
                py,
                move || map_pair!(pair(&a, &b)?, x, y => x.binary(op, &y)),
            )
        }
    }
}

/// A weakly typed number as a 0-d tensor next to `t` (its dtype is the pair's result type).
fn number_like<B: nabla_core::Backend>(s: Scalar, t: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::scalar(s, s.result_type(t.dtype()), t.backend())
}

fn compare(py: Python<'_>, lhs: &Value, op: CompareOp, rhs: Operand) -> PyResult<PyTensor> {
    match rhs {
        Operand::Number(s) => {
            let v = lhs.clone();
            compute(py, move || map_value!(&v, t => t.compare(op, s)))
        }
        Operand::Tensor(r) => {
            let l = lhs.clone();
            compute(
                py,
                move || map_pair!(pair(&l, &r)?, x, y => x.compare(op, &y)),
            )
        }
    }
}

/// Reads `axis`: `None` (every axis), an int, or a tuple of ints.
pub fn axes_of(axis: Option<&Bound<'_, PyAny>>, rank: usize) -> PyResult<Vec<isize>> {
    match axis {
        None => Ok((0..rank as isize).collect()),
        Some(a) if a.is_none() => Ok((0..rank as isize).collect()),
        Some(a) => match a.extract::<isize>() {
            Ok(one) => Ok(vec![one]),
            Err(_) => a.extract::<Vec<isize>>(),
        },
    }
}

/// Reads a shape given as `f(2, 3)` or `f((2, 3))`.
pub fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<i64>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if let Ok(v) = first.extract::<Vec<i64>>() {
            return Ok(v);
        }
    }
    args.extract::<Vec<i64>>()
}

#[pymethods]
impl PyTensor {
    fn __add__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Add, operand(other)?, false)
    }

    fn __radd__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Add, operand(other)?, true)
    }

    fn __sub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Sub, operand(other)?, false)
    }

    fn __rsub__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Sub, operand(other)?, true)
    }

    fn __mul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Mul, operand(other)?, false)
    }

    fn __rmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Mul, operand(other)?, true)
    }

    fn __truediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        true_div(py, &self.value, operand(other)?, false)
    }

    fn __rtruediv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        true_div(py, &self.value, operand(other)?, true)
    }

    fn __mod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Rem, operand(other)?, false)
    }

    fn __rmod__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::Rem, operand(other)?, true)
    }

    fn __and__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitAnd, operand(other)?, false)
    }

    fn __rand__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitAnd, operand(other)?, true)
    }

    fn __or__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitOr, operand(other)?, false)
    }

    fn __ror__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitOr, operand(other)?, true)
    }

    fn __xor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitXor, operand(other)?, false)
    }

    fn __rxor__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::BitXor, operand(other)?, true)
    }

    fn __lshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::ShiftLeft, operand(other)?, false)
    }

    fn __rlshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::ShiftLeft, operand(other)?, true)
    }

    fn __rshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(
            py,
            &self.value,
            BinaryOp::ShiftRight,
            operand(other)?,
            false,
        )
    }

    fn __rrshift__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        binary(py, &self.value, BinaryOp::ShiftRight, operand(other)?, true)
    }
}

impl PyTensor {
    /// A unary op of the catalogue on this tensor.
    pub(crate) fn unary(&self, py: Python<'_>, op: UnaryOp) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.unary(op)))
    }

    fn reduce_with(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        f: impl FnOnce(&Value, &[isize]) -> Result<Value> + Send,
    ) -> PyResult<PyTensor> {
        let axes = axes_of(axis, self.value.shape().len())?;
        let v = self.value.clone();
        compute(py, move || f(&v, &axes))
    }
}

#[pymethods]
impl PyTensor {
    fn __neg__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, UnaryOp::Neg)
    }

    fn __pos__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __abs__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, UnaryOp::Abs)
    }

    fn __invert__(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.unary(py, UnaryOp::BitNot)
    }

    fn __pow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let exponent = operand(other)?;
        check_integer_power(&self.value, &exponent)?;
        binary(py, &self.value, BinaryOp::Pow, exponent, false)
    }

    fn __rpow__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyTensor> {
        let base = operand(other)?;
        if exact_operand(&base) && exact(self.value.dtype()) {
            check_nonnegative(&self.value)?;
        }
        binary(py, &self.value, BinaryOp::Pow, base, true)
    }

    fn __floordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        floor_div(py, &self.value, operand(other)?, false)
    }

    fn __rfloordiv__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        floor_div(py, &self.value, operand(other)?, true)
    }

    fn __matmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (self.value.clone(), to_value(other, None)?);
        compute(py, move || map_pair!(pair(&a, &b)?, x, y => x.matmul(&y)))
    }

    fn __rmatmul__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<PyTensor> {
        let (a, b) = (to_value(other, None)?, self.value.clone());
        compute(py, move || map_pair!(pair(&a, &b)?, x, y => x.matmul(&y)))
    }

    fn __richcmp__(
        &self,
        py: Python<'_>,
        other: &Bound<'_, PyAny>,
        op: PyCompareOp,
    ) -> PyResult<Py<PyAny>> {
        let rhs = match operand(other) {
            Ok(r) => r,
            Err(_) if matches!(op, PyCompareOp::Eq | PyCompareOp::Ne) => {
                return Ok(py.NotImplemented());
            }
            Err(e) => return Err(e),
        };
        let cmp = match op {
            PyCompareOp::Lt => CompareOp::Lt,
            PyCompareOp::Le => CompareOp::Le,
            PyCompareOp::Eq => CompareOp::Eq,
            PyCompareOp::Ne => CompareOp::Ne,
            PyCompareOp::Gt => CompareOp::Gt,
            PyCompareOp::Ge => CompareOp::Ge,
        };
        Ok(Py::new(py, compare(py, &self.value, cmp, rhs)?)?.into_any())
    }

    /// Mean over `axis`.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn mean(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.mean(axes, keepdims)),
        )
    }

    /// `True` where any element along `axis` is true.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn any(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.any(axes, keepdims)),
        )
    }

    /// `True` where every element along `axis` is true.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn all(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.all(axes, keepdims)),
        )
    }

    /// Variance over `axis` with `ddof` (NumPy's default 0).
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0))]
    fn var(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        ddof: usize,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.variance(axes, keepdims, ddof)),
        )
    }

    /// Standard deviation over `axis` with `ddof`.
    #[pyo3(signature = (axis = None, keepdims = false, ddof = 0))]
    fn std(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
        ddof: usize,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.std_dev(axes, keepdims, ddof)),
        )
    }

    /// `log(sum(exp(x)))` over `axis`, computed stably.
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn logsumexp(
        &self,
        py: Python<'_>,
        axis: Option<&Bound<'_, PyAny>>,
        keepdims: bool,
    ) -> PyResult<PyTensor> {
        self.reduce_with(
            py,
            axis,
            move |v, axes| map_value!(v, t => t.logsumexp(axes, keepdims)),
        )
    }

    /// Index of the maximum along `axis` (of the flattened tensor when `None`).
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn argmax(&self, py: Python<'_>, axis: Option<isize>, keepdims: bool) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || match axis {
            Some(a) => map_value!(&v, t => t.argmax(a, keepdims)),
            None => map_value!(&v, t => t.flatten_all()?.argmax(0, false)),
        })
    }

    /// Index of the minimum along `axis` (of the flattened tensor when `None`).
    #[pyo3(signature = (axis = None, keepdims = false))]
    fn argmin(&self, py: Python<'_>, axis: Option<isize>, keepdims: bool) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || match axis {
            Some(a) => map_value!(&v, t => t.argmin(a, keepdims)),
            None => map_value!(&v, t => t.flatten_all()?.argmin(0, false)),
        })
    }

    /// Cumulative sum along `axis`.
    fn cumsum(&self, py: Python<'_>, axis: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.cumsum(axis)))
    }

    /// The same elements in a new shape (`-1` infers one dimension); a view when possible.
    #[pyo3(signature = (*shape))]
    fn reshape(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let dims = shape_args(shape)?;
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.reshape(dims.as_slice())))
    }

    /// PyTorch's name for `reshape`.
    #[pyo3(signature = (*shape))]
    fn view(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.reshape(py, shape)
    }

    /// The axes reordered (reversed when none are given), as `np.transpose`.
    #[pyo3(signature = (*axes))]
    fn transpose(&self, py: Python<'_>, axes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        let rank = self.value.shape().len() as isize;
        let perm: Vec<isize> = if axes.is_empty() {
            (0..rank).rev().collect()
        } else {
            shape_args(axes)?.into_iter().map(|a| a as isize).collect()
        };
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.permute(&perm)))
    }

    /// PyTorch's name for `transpose` with all axes given.
    #[pyo3(signature = (*axes))]
    fn permute(&self, py: Python<'_>, axes: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.transpose(py, axes)
    }

    /// Axes `a` and `b` swapped.
    fn swapaxes(&self, py: Python<'_>, a: isize, b: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.transpose(a, b)))
    }

    /// The axes reversed.
    #[getter(T)]
    fn t_all(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.transpose(py, &PyTuple::empty(py))
    }

    /// The last two axes swapped (a batch of transposed matrices).
    #[getter(mT)]
    fn m_t(&self, py: Python<'_>) -> PyResult<PyTensor> {
        self.swapaxes(py, -2, -1)
    }

    /// Axes `start..=end` merged into one.
    #[pyo3(signature = (start = 0, end = -1))]
    fn flatten(&self, py: Python<'_>, start: isize, end: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.flatten(start, end)))
    }

    /// Size-1 axes removed (only `axis` when given).
    #[pyo3(signature = (axis = None))]
    fn squeeze(&self, py: Python<'_>, axis: Option<isize>) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || match axis {
            Some(a) => map_value!(&v, t => t.squeeze(a)),
            None => map_value!(&v, t => t.squeeze_all()),
        })
    }

    /// A size-1 axis inserted at `axis`.
    fn unsqueeze(&self, py: Python<'_>, axis: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.unsqueeze(axis)))
    }

    /// The tensor broadcast to `shape` (a view).
    #[pyo3(signature = (*shape))]
    fn broadcast_to(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        // -1 keeps a dimension, as PyTorch's `expand`.
        let current = self.value.shape().to_vec();
        let wanted = shape_args(shape)?;
        let lead = wanted.len().saturating_sub(current.len());
        let dims = wanted
            .iter()
            .enumerate()
            .map(
                |(i, &d)| match (d, i.checked_sub(lead).and_then(|j| current.get(j))) {
                    (-1, Some(&c)) => Ok(c),
                    _ => usize::try_from(d).map_err(|_| {
                        pyo3::exceptions::PyValueError::new_err(format!(
                            "invalid size {d} in broadcast_to({wanted:?})"
                        ))
                    }),
                },
            )
            .collect::<PyResult<Vec<usize>>>()?;
        let v = self.value.clone();
        compute(
            py,
            move || map_value!(&v, t => t.broadcast_to(dims.clone())),
        )
    }

    /// PyTorch's name for `broadcast_to`.
    #[pyo3(signature = (*shape))]
    fn expand(&self, py: Python<'_>, shape: &Bound<'_, PyTuple>) -> PyResult<PyTensor> {
        self.broadcast_to(py, shape)
    }

    /// The elements reversed along `axis` (every axis when `None`).
    #[pyo3(signature = (axis = None))]
    fn flip(&self, py: Python<'_>, axis: Option<&Bound<'_, PyAny>>) -> PyResult<PyTensor> {
        self.reduce_with(py, axis, |v, axes| map_value!(v, t => t.flip(axes)))
    }

    /// A contiguous copy when the tensor is a strided view; the tensor itself otherwise.
    fn contiguous(&self, py: Python<'_>) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.contiguous()))
    }

    /// Values clamped to `[min, max]` (either may be `None`).
    #[pyo3(signature = (min = None, max = None))]
    fn clip(&self, py: Python<'_>, min: Option<f64>, max: Option<f64>) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || {
            map_value!(&v, t => {
                let low = match min { Some(m) => t.maximum(m)?, None => t.clone() };
                match max { Some(m) => low.minimum(m), None => Ok(low) }
            })
        })
    }

    /// Softmax along `axis`.
    #[pyo3(signature = (axis = -1))]
    fn softmax(&self, py: Python<'_>, axis: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.softmax(axis)))
    }

    /// Log-softmax along `axis`.
    #[pyo3(signature = (axis = -1))]
    fn log_softmax(&self, py: Python<'_>, axis: isize) -> PyResult<PyTensor> {
        let v = self.value.clone();
        compute(py, move || map_value!(&v, t => t.log_softmax(axis)))
    }
}

/// Floor division: `floor(a / b)` for floats, the integer quotient rounded down for integers.
fn floor_div(py: Python<'_>, lhs: &Value, rhs: Operand, reflected: bool) -> PyResult<PyTensor> {
    let q = binary(py, lhs, BinaryOp::Div, rhs, reflected)?;
    if q.value.dtype().is_float() {
        q.unary(py, UnaryOp::Floor)
    } else {
        Ok(q)
    }
}

/// Integer or boolean: the dtypes whose quotients and negative powers are not exact.
fn exact(dtype: DType) -> bool {
    dtype.is_int() || dtype.is_bool()
}

/// An integer or boolean tensor or Python number.
fn exact_operand(operand: &Operand) -> bool {
    match operand {
        Operand::Tensor(t) => exact(t.dtype()),
        Operand::Number(s) => s.as_integer().is_some(),
    }
}

/// `/`: true division, as NumPy, PyTorch and JAX divide. When both operands are integers or
/// booleans they become float32 (PyTorch's default float type) first, so `tensor([1, 3]) / 2` is
/// `[0.5, 1.5]`; floor division is `//`.
fn true_div(py: Python<'_>, lhs: &Value, rhs: Operand, reflected: bool) -> PyResult<PyTensor> {
    if !(exact(lhs.dtype()) && exact_operand(&rhs)) {
        return binary(py, lhs, BinaryOp::Div, rhs, reflected);
    }
    let float = |v: &Value| -> PyResult<Value> {
        let v = v.clone();
        Ok(compute(py, move || map_value!(&v, t => t.cast(DType::F32)))?.value)
    };
    let rhs = match rhs {
        Operand::Tensor(r) => Operand::Tensor(float(&r)?),
        number => number,
    };
    binary(py, &float(lhs)?, BinaryOp::Div, rhs, reflected)
}

/// An integer base with an integer exponent must not meet a negative exponent: NumPy and PyTorch
/// refuse `tensor([2, 3]) ** -1` rather than truncate `1/2` to 0.
fn check_integer_power(base: &Value, exponent: &Operand) -> PyResult<()> {
    if !exact(base.dtype()) {
        return Ok(());
    }
    match exponent {
        Operand::Number(Scalar::I64(e)) if *e < 0 => Err(negative_power()),
        Operand::Tensor(e) if exact(e.dtype()) => check_nonnegative(e),
        _ => Ok(()),
    }
}

/// Refuses an integer exponent tensor with a negative entry (read when eager; a traced exponent's
/// values are not known).
fn check_nonnegative(exponent: &Value) -> PyResult<()> {
    let Value::Eager(e) = exponent else {
        return Ok(());
    };
    let values = e.cast(DType::I64).and_then(|t| t.to_vec::<i64>()).py()?;
    if values.iter().any(|&v| v < 0) {
        return Err(negative_power());
    }
    Ok(())
}

/// The error NumPy and PyTorch give for an integer to a negative integer power.
fn negative_power() -> PyErr {
    pyo3::exceptions::PyValueError::new_err(
        "integers to negative integer powers are not allowed; make the base a float tensor",
    )
}
