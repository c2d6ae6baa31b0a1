//! The one error type of nabla.

use crate::DType;
use std::fmt;

/// Every fallible call in nabla returns this error. Messages name the op, the shapes or values involved,
/// and, where there is one, the fix.
///
/// ```
/// use nabla_core::Error;
/// let e = Error::ShapeMismatch { op: "add", lhs: vec![2, 3], rhs: vec![4], hint: None };
/// assert_eq!(e.to_string(), "add: shape mismatch between [2, 3] and [4]");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Error {
    /// Two operands have shapes the op cannot combine.
    ShapeMismatch {
        /// The op that failed.
        op: &'static str,
        /// Shape of the left operand.
        lhs: Vec<usize>,
        /// Shape of the right operand.
        rhs: Vec<usize>,
        /// Optional extra explanation.
        hint: Option<String>,
    },
    /// Two operands have different dtypes where the op needs equal ones.
    DTypeMismatch {
        /// The op that failed.
        op: &'static str,
        /// Dtype of the left operand.
        lhs: DType,
        /// Dtype of the right operand.
        rhs: DType,
    },
    /// Operands live on different devices.
    DeviceMismatch {
        /// The op that failed.
        op: &'static str,
        /// Device of the left operand.
        lhs: String,
        /// Device of the right operand.
        rhs: String,
    },
    /// An axis is out of range for the tensor's rank.
    InvalidAxis {
        /// The op that failed.
        op: &'static str,
        /// The axis as the user gave it.
        axis: isize,
        /// Rank of the tensor.
        rank: usize,
    },
    /// An argument has a value the op cannot accept.
    InvalidArgument {
        /// The op that failed.
        op: &'static str,
        /// What is wrong.
        message: String,
    },
    /// The op is not defined for this dtype.
    UnsupportedDType {
        /// The op that failed.
        op: &'static str,
        /// The dtype given.
        dtype: DType,
        /// Optional suggestion.
        hint: Option<String>,
    },
    /// The op is not supported by this backend.
    UnsupportedOp {
        /// The op that failed.
        op: &'static str,
        /// Backend name.
        backend: String,
    },
    /// An index is outside the valid range.
    IndexOutOfBounds {
        /// The op that failed.
        op: &'static str,
        /// The bad index.
        index: i64,
        /// The size of the indexed dimension.
        size: usize,
    },
    /// Data length does not match the shape.
    DataLength {
        /// The op that failed.
        op: &'static str,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        got: usize,
        /// The shape.
        shape: Vec<usize>,
    },
    /// A file or stream failed.
    Io {
        /// What was being done.
        context: String,
        /// The underlying error message.
        message: String,
    },
    /// Automatic differentiation cannot proceed: a value that cannot be differentiated (integer, bool),
    /// a graph whose saved values were already released, or an op without a derivative rule.
    Autodiff {
        /// The op or transform that failed.
        op: &'static str,
        /// What is wrong, and the fix where there is one.
        message: String,
    },
    /// An op produced a NaN or an infinity from finite inputs while anomaly detection was on.
    NonFinite {
        /// The op.
        op: &'static str,
        /// What was produced, from which inputs, and where the op was recorded.
        message: String,
    },
    /// A backend (device driver, allocator, ...) failed.
    Backend {
        /// Backend name.
        backend: String,
        /// What failed.
        message: String,
    },
}

impl Error {
    /// Shorthand for [`Error::InvalidArgument`].
    pub fn invalid(op: &'static str, message: impl Into<String>) -> Self {
        Error::InvalidArgument {
            op,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::Autodiff`].
    pub fn autodiff(op: &'static str, message: impl Into<String>) -> Self {
        Error::Autodiff {
            op,
            message: message.into(),
        }
    }

    /// Shorthand for [`Error::ShapeMismatch`] without a hint.
    pub fn shapes(op: &'static str, lhs: &[usize], rhs: &[usize]) -> Self {
        Error::ShapeMismatch {
            op,
            lhs: lhs.to_vec(),
            rhs: rhs.to_vec(),
            hint: None,
        }
    }

    /// Shorthand for [`Error::UnsupportedDType`] without a hint.
    pub fn dtype(op: &'static str, dtype: DType) -> Self {
        let hint = if dtype.is_half() {
            Some("half-precision types are for storage; cast to float32 first".to_string())
        } else {
            None
        };
        Error::UnsupportedDType { op, dtype, hint }
    }

    /// Adds or replaces the hint of a shape mismatch; other variants are returned unchanged.
    pub fn with_hint(self, text: impl Into<String>) -> Self {
        match self {
            Error::ShapeMismatch { op, lhs, rhs, .. } => Error::ShapeMismatch {
                op,
                lhs,
                rhs,
                hint: Some(text.into()),
            },
            Error::UnsupportedDType { op, dtype, .. } => Error::UnsupportedDType {
                op,
                dtype,
                hint: Some(text.into()),
            },
            other => other,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::ShapeMismatch { op, lhs, rhs, hint } => {
                write!(f, "{op}: shape mismatch between {lhs:?} and {rhs:?}")?;
                if let Some(h) = hint {
                    write!(f, " ({h})")?;
                }
                Ok(())
            }
            Error::DTypeMismatch { op, lhs, rhs } => write!(
                f,
                "{op}: dtype mismatch between {lhs} and {rhs} (cast one operand with .cast(...))"
            ),
            Error::DeviceMismatch { op, lhs, rhs } => write!(
                f,
                "{op}: device mismatch between {lhs} and {rhs} (move one operand with .to_backend(...))"
            ),
            Error::InvalidAxis { op, axis, rank } => {
                let lo = -(*rank as isize);
                let hi = *rank as isize - 1;
                if *rank == 0 {
                    write!(
                        f,
                        "{op}: axis {axis} is out of range for a tensor of rank 0"
                    )
                } else {
                    write!(
                        f,
                        "{op}: axis {axis} is out of range for a tensor of rank {rank} (expected {lo}..={hi})"
                    )
                }
            }
            Error::InvalidArgument { op, message } => write!(f, "{op}: {message}"),
            Error::UnsupportedDType { op, dtype, hint } => {
                write!(f, "{op}: not supported for dtype {dtype}")?;
                if let Some(h) = hint {
                    write!(f, " ({h})")?;
                }
                Ok(())
            }
            Error::UnsupportedOp { op, backend } => {
                write!(f, "{op}: not supported by the {backend} backend")
            }
            Error::IndexOutOfBounds { op, index, size } => {
                write!(
                    f,
                    "{op}: index {index} is out of bounds for a dimension of size {size}"
                )
            }
            Error::DataLength {
                op,
                expected,
                got,
                shape,
            } => write!(
                f,
                "{op}: shape {shape:?} needs {expected} elements but {got} were given"
            ),
            Error::Io { context, message } => write!(f, "I/O error while {context}: {message}"),
            Error::Autodiff { op, message } => write!(f, "{op}: {message}"),
            Error::NonFinite { op, message } => write!(f, "{op}: {message}"),
            Error::Backend { backend, message } => write!(f, "{backend} backend error: {message}"),
        }
    }
}

impl std::error::Error for Error {}

/// Result alias used throughout nabla.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_op_and_values() {
        let e = Error::InvalidAxis {
            op: "sum",
            axis: 3,
            rank: 2,
        };
        assert_eq!(
            e.to_string(),
            "sum: axis 3 is out of range for a tensor of rank 2 (expected -2..=1)"
        );
        let e = Error::dtype("exp", DType::F16);
        assert_eq!(
            e.to_string(),
            "exp: not supported for dtype float16 (half-precision types are for storage; cast to float32 first)"
        );
        let e = Error::DTypeMismatch {
            op: "add",
            lhs: DType::F32,
            rhs: DType::F64,
        };
        assert!(
            e.to_string()
                .starts_with("add: dtype mismatch between float32 and float64")
        );
        let e = Error::DataLength {
            op: "from_vec",
            expected: 6,
            got: 5,
            shape: vec![2, 3],
        };
        assert_eq!(
            e.to_string(),
            "from_vec: shape [2, 3] needs 6 elements but 5 were given"
        );
        let e =
            Error::shapes("matmul", &[2, 3], &[4, 5]).with_hint("inner dimensions 3 and 4 differ");
        assert_eq!(
            e.to_string(),
            "matmul: shape mismatch between [2, 3] and [4, 5] (inner dimensions 3 and 4 differ)"
        );
        let e = Error::IndexOutOfBounds {
            op: "gather",
            index: 7,
            size: 3,
        };
        assert_eq!(
            e.to_string(),
            "gather: index 7 is out of bounds for a dimension of size 3"
        );
    }
}
