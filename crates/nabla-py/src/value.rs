//! The Rust value behind a Python tensor: an eager tensor on a device, or a symbolic tensor being
//! recorded by `jit` or `vmap`. Every op runs on either; [`pair`] and [`unify`] bring operands to
//! one kind (an eager tensor used inside a trace becomes a constant of the program).

use nabla_any::AnyBackend;
use nabla_core::{Error, Result};
use nabla_tensor::{Tensor, TracedTensor};

/// An eager tensor on a device chosen at run time.
pub type Eager = Tensor<AnyBackend>;

/// A Python tensor's value.
#[derive(Clone, Debug)]
pub enum Value {
    /// Computed now, on a device.
    Eager(Eager),
    /// A value of a program being recorded.
    Traced(TracedTensor),
}

/// Runs `$body` with `$t` bound to the tensor of either kind; `$body` gives a `Result<Tensor<_>>`
/// and the macro a `Result<Value>` of the same kind.
#[macro_export]
macro_rules! map_value {
    ($value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::value::Value::Eager($t) => $body.map($crate::value::Value::Eager),
            $crate::value::Value::Traced($t) => $body.map($crate::value::Value::Traced),
        }
    };
}

/// Runs `$body` with `$t` bound to the tensor of either kind, for results that are not tensors.
#[macro_export]
macro_rules! with_value {
    ($value:expr, $t:ident => $body:expr) => {
        match $value {
            $crate::value::Value::Eager($t) => $body,
            $crate::value::Value::Traced($t) => $body,
        }
    };
}

/// Operands brought to one kind.
pub enum Pair {
    /// Both eager.
    Eager(Eager, Eager),
    /// Both symbolic, in one program.
    Traced(TracedTensor, TracedTensor),
}

/// Runs `$body` with `$a` and `$b` bound to a [`Pair`]'s tensors, giving a `Result<Value>`.
#[macro_export]
macro_rules! map_pair {
    ($pair:expr, $a:ident, $b:ident => $body:expr) => {
        match $pair {
            $crate::value::Pair::Eager($a, $b) => $body.map($crate::value::Value::Eager),
            $crate::value::Pair::Traced($a, $b) => $body.map($crate::value::Value::Traced),
        }
    };
}

/// `a` and `b` as one kind: an eager operand of a traced op is recorded as a constant.
pub fn pair(a: &Value, b: &Value) -> Result<Pair> {
    Ok(match (a, b) {
        (Value::Eager(a), Value::Eager(b)) => Pair::Eager(a.clone(), b.clone()),
        (Value::Traced(a), Value::Traced(b)) => Pair::Traced(a.clone(), b.clone()),
        (Value::Eager(a), Value::Traced(b)) => Pair::Traced(constant_of(a, b)?, b.clone()),
        (Value::Traced(a), Value::Eager(b)) => Pair::Traced(a.clone(), constant_of(b, a)?),
    })
}

/// Several values as one kind.
pub enum Group {
    /// All eager.
    Eager(Vec<Eager>),
    /// All symbolic, in one program.
    Traced(Vec<TracedTensor>),
}

/// Runs `$body` with `$ts` bound to a [`Group`]'s tensors (`Vec<Tensor<_>>`) for either kind; `$body`
/// gives a `Result<Tensor<_>>` and the macro a `Result<Value>` of the same kind.
#[macro_export]
macro_rules! on_group {
    ($group:expr, $ts:ident => $body:expr) => {
        match $group {
            $crate::value::Group::Eager($ts) => $body.map($crate::value::Value::Eager),
            $crate::value::Group::Traced($ts) => $body.map($crate::value::Value::Traced),
        }
    };
}

/// `values` as one kind (traced when any is), for ops of many operands.
pub fn unify(values: &[Value]) -> Result<Group> {
    let eager: Option<Vec<Eager>> = values
        .iter()
        .map(|v| match v {
            Value::Eager(e) => Some(e.clone()),
            Value::Traced(_) => None,
        })
        .collect();
    if let Some(all) = eager {
        return Ok(Group::Eager(all));
    }
    let anchor = values.iter().find_map(|v| match v {
        Value::Traced(t) => Some(t),
        Value::Eager(_) => None,
    });
    let Some(anchor) = anchor else {
        return Ok(Group::Eager(Vec::new()));
    };
    values
        .iter()
        .map(|v| match v {
            Value::Traced(t) => Ok(t.clone()),
            Value::Eager(e) => constant_of(e, anchor),
        })
        .collect::<Result<Vec<_>>>()
        .map(Group::Traced)
}

/// The eager tensor `e` as a constant of the program that records `anchor`.
fn constant_of(e: &Eager, anchor: &TracedTensor) -> Result<TracedTensor> {
    e.to_backend(anchor.backend())
}

impl Value {
    /// The shape.
    pub fn shape(&self) -> &[usize] {
        with_value!(self, t => t.shape())
    }

    /// The dtype.
    pub fn dtype(&self) -> nabla_core::DType {
        with_value!(self, t => t.dtype())
    }

    /// `true` when gradients flow back from this value.
    pub fn requires_grad(&self) -> bool {
        with_value!(self, t => t.requires_grad())
    }

    /// The eager tensor, or an error naming `op` for a value that exists only in a program.
    pub fn eager(&self, op: &'static str) -> Result<&Eager> {
        match self {
            Value::Eager(e) => Ok(e),
            Value::Traced(t) => Err(Error::invalid(
                op,
                format!(
                    "this tensor (shape {:?}, {}) is a value inside a function being traced by \
                     jit or vmap and has no data yet; return it from the function instead",
                    t.shape(),
                    t.dtype()
                ),
            )),
        }
    }
}

/// Python functions of one tensor giving one tensor, from `name, x => body;` rows (`body` is
/// generic over the eager and traced tensor kinds).
#[macro_export]
macro_rules! one_to_one {
    ($($(#[$doc:meta])* $name:ident, $x:ident => $body:expr;)*) => {$(
        $(#[$doc])*
        #[pyo3::pyfunction]
        fn $name(
            py: pyo3::Python<'_>,
            a: &pyo3::Bound<'_, pyo3::PyAny>,
        ) -> pyo3::PyResult<$crate::tensor::PyTensor> {
            let v = $crate::convert::to_value(a, None)?;
            $crate::tensor::compute(py, move || $crate::map_value!(&v, $x => $body))
        }
    )*};
}

/// Python functions of two tensors giving one tensor, from `name, x, y => body;` rows.
#[macro_export]
macro_rules! two_to_one {
    ($($(#[$doc:meta])* $name:ident, $x:ident, $y:ident => $body:expr;)*) => {$(
        $(#[$doc])*
        #[pyo3::pyfunction]
        fn $name(
            py: pyo3::Python<'_>,
            a: &pyo3::Bound<'_, pyo3::PyAny>,
            b: &pyo3::Bound<'_, pyo3::PyAny>,
        ) -> pyo3::PyResult<$crate::tensor::PyTensor> {
            let (l, r) = ($crate::convert::to_value(a, None)?, $crate::convert::to_value(b, None)?);
            $crate::tensor::compute(
                py,
                move || $crate::map_pair!($crate::value::pair(&l, &r)?, $x, $y => $body),
            )
        }
    )*};
}
