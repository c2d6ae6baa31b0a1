//! nabla's errors as Python exceptions, and Python exceptions carried through Rust code.

use nabla_core::Error;
use pyo3::PyErr;
use pyo3::exceptions::{
    PyFloatingPointError, PyIndexError, PyMemoryError, PyNotImplementedError, PyOSError,
    PyRuntimeError, PyTypeError, PyValueError,
};
use std::cell::RefCell;
use std::collections::HashMap;

/// The Python exception for a nabla error, with nabla's message: `TypeError` for dtypes,
/// `IndexError` for axes and indices, `MemoryError` for sizes over the allocation limit, `OSError`
/// for files, `FloatingPointError` for anomalies, `NotImplementedError` for ops a device lacks,
/// `RuntimeError` for autodiff and backend failures and `ValueError` for everything else.
pub fn to_py_err(err: Error) -> PyErr {
    if let Some(py_err) = take_stashed(&err) {
        return py_err;
    }
    let message = python_words(err.to_string());
    match err {
        Error::DTypeMismatch { .. } | Error::UnsupportedDType { .. } => {
            PyTypeError::new_err(message)
        }
        Error::InvalidAxis { .. } | Error::IndexOutOfBounds { .. } => {
            PyIndexError::new_err(message)
        }
        Error::InvalidArgument { .. } if nabla_core::is_allocation_limit_error(&err) => {
            PyMemoryError::new_err(message)
        }
        Error::ShapeMismatch { .. }
        | Error::DeviceMismatch { .. }
        | Error::InvalidArgument { .. }
        | Error::DataLength { .. } => PyValueError::new_err(message),
        Error::UnsupportedOp { .. } => PyNotImplementedError::new_err(message),
        Error::Io { .. } => PyOSError::new_err(message),
        Error::NonFinite { .. } => PyFloatingPointError::new_err(message),
        Error::Autodiff { .. } | Error::Backend { .. } => PyRuntimeError::new_err(message),
        // `Error` is non-exhaustive: a kind added later is a RuntimeError until mapped here.
        _ => PyRuntimeError::new_err(message),
    }
}

/// Rust op names that Python spells otherwise, as the message's leading `op:`.
const PYTHON_OP_NAMES: &[(&str, &str)] = &[
    ("variance", "var"),
    ("std_dev", "std"),
    ("to_scalar", "item"),
    ("sum_all", "sum"),
    ("mean_all", "mean"),
];

/// `message` with the Rust name of its op replaced by the Python one.
fn python_words(message: String) -> String {
    for (rust, python) in PYTHON_OP_NAMES {
        if let Some(rest) = message.strip_prefix(rust)
            && rest.starts_with(':')
        {
            let rest = rest.replacen(&format!("{rust} needs"), &format!("{python} needs"), 1);
            return format!("{python}{rest}");
        }
    }
    message
}

/// `Result<T, nabla::Error>` to `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Maps the error with [`to_py_err`].
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for nabla_core::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py_err)
    }
}

const STASHED_OP: &str = "python callback";
const STASHED_TAG: &str = " [python exception #";

thread_local! {
    /// Python exceptions raised by a callable that Rust code called (a function under `grad`,
    /// `vmap`, ...), kept by number until the Rust code returns, so that the original exception,
    /// traceback included, reaches the caller instead of a nabla error describing it.
    static STASHED: RefCell<(u64, HashMap<u64, PyErr>)> = RefCell::new((0, HashMap::new()));
}

/// A nabla error that stands for `err` while Rust code unwinds; [`to_py_err`] gives `err` back.
pub fn stash(err: PyErr) -> Error {
    let summary = err.to_string();
    let id = STASHED.with(|s| {
        let (next, map) = &mut *s.borrow_mut();
        *next += 1;
        map.insert(*next, err);
        *next
    });
    Error::invalid(STASHED_OP, format!("{summary}{STASHED_TAG}{id}]"))
}

fn take_stashed(err: &Error) -> Option<PyErr> {
    let Error::InvalidArgument { op, message } = err else {
        return None;
    };
    if *op != STASHED_OP {
        return None;
    }
    let id: u64 = message
        .rsplit_once(STASHED_TAG)?
        .1
        .strip_suffix(']')?
        .parse()
        .ok()?;
    STASHED.with(|s| s.borrow_mut().1.remove(&id))
}
