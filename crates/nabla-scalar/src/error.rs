//! The crate's error type.

use core::fmt;

/// What can go wrong in this crate: the fallible operations are the linear solves of static-shape
/// matrices.
#[derive(Clone, Debug, PartialEq)]
pub enum Error {
    /// A square matrix is singular to working precision: LU elimination met a pivot no larger than
    /// `tolerance`.
    Singular {
        /// The operation (`"lu"`, `"solve"`, `"inverse"`).
        op: &'static str,
        /// The matrix size (`n x n`).
        n: usize,
        /// The elimination column whose best pivot was too small.
        column: usize,
        /// That pivot's magnitude.
        pivot: f64,
        /// The threshold: `n * f64::EPSILON * max |a_ij|`.
        tolerance: f64,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Singular {
                op,
                n,
                column,
                pivot,
                tolerance,
            } => write!(
                f,
                "{op}: the {n}x{n} matrix is singular to working precision \
                 (pivot {pivot:e} in column {column} is below the tolerance {tolerance:e}); \
                 check for dependent rows or columns"
            ),
        }
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = core::result::Result<T, Error>;
