//! The factorisation ops: names, parameters, shape and dtype rules, and the packing of their results.

use super::kernels;
use crate::common::{Packing, extension_op};
use crate::ops::{float, matrices, one, square, system};
use nabla_core::{DType, OutputSpec, Result};

/// The Cholesky factor `L` (lower triangular, `A = L Lᴴ`) of Hermitian positive definite matrices
/// `[..., n, n]`; only the lower triangle of `A` is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cholesky;

/// `X = op(T)⁻¹ B` for the triangle `T` of `A` of shape `[..., n, n]` and `B` of shape `[..., n, k]`;
/// only the triangle of `A` named by `lower` is read, and not its diagonal when `unit_diagonal`
/// (taken as ones). `op(T) = Tᵀ` when `transpose` (else `T`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TriangularSolve {
    /// `A` is lower (else upper) triangular.
    pub lower: bool,
    /// `A` has a unit diagonal, which is not read.
    pub unit_diagonal: bool,
    /// Solve with the transpose of the triangle (read in place, without copying `A`).
    pub transpose: bool,
}

impl TriangularSolve {
    /// Solve with the lower triangle (diagonal read, not transposed).
    pub const LOWER: Self = TriangularSolve {
        lower: true,
        unit_diagonal: false,
        transpose: false,
    };
    /// Solve with the upper triangle (diagonal read, not transposed).
    pub const UPPER: Self = TriangularSolve {
        lower: false,
        ..Self::LOWER
    };

    /// The same solve with a unit diagonal (not read).
    pub const fn unit(self) -> Self {
        TriangularSolve {
            unit_diagonal: true,
            ..self
        }
    }

    /// The same triangle, solved with its transpose instead (or back).
    pub const fn transposed(self) -> Self {
        TriangularSolve {
            transpose: !self.transpose,
            ..self
        }
    }
}

/// `det A` for `A` of shape `[..., n, n]`; the output has the batch shape `[...]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Det;

/// `(sign, log |det A|)` packed as `[..., 2]` for `A` of shape `[..., n, n]`, in `A`'s dtype; the sign
/// is `±1` (the phase `det A / |det A|` for complex `A`), and `(0, -inf)` for a singular matrix.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SlogDet;

/// The LU factorisation with partial pivoting `A = P L U` of `A` `[..., m, n]`, `k = min(m, n)`:
/// the permutation matrix `P` `[m, m]`, unit lower `L` `[m, k]` and upper `U` `[k, n]` packed per
/// matrix as `[..., m² + m k + k n]` in `A`'s dtype.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Lu;

/// The QR factorisation `A = Q R` of `A` `[..., m, n]`, `k = min(m, n)`: reduced (`Q` `[m, k]`, `R`
/// `[k, n]`) or, when `full`, complete (`Q` `[m, m]`, `R` `[m, n]`), packed per matrix as
/// `[..., |Q| + |R|]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Qr {
    /// Complete (square `Q`) rather than reduced factorisation.
    pub full: bool,
}

/// Op names, under which the rules are registered.
pub(crate) const CHOLESKY: &str = "linalg.cholesky";
pub(crate) const TRIANGULAR_SOLVE: &str = "linalg.triangular_solve";
pub(crate) const DET: &str = "linalg.det";
pub(crate) const SLOGDET: &str = "linalg.slogdet";
pub(crate) const LU: &str = "linalg.lu";
pub(crate) const QR: &str = "linalg.qr";

/// slogdet's results per matrix: sign, log |det|.
pub(crate) fn slogdet_packing() -> Packing {
    Packing::new(vec![vec![], vec![]])
}

/// LU's results per `m x n` matrix: `P`, `L`, `U`.
pub(crate) fn lu_packing(m: usize, n: usize) -> Packing {
    let k = m.min(n);
    Packing::new(vec![vec![m, m], vec![m, k], vec![k, n]])
}

/// QR's results per `m x n` matrix: `Q`, `R`.
pub(crate) fn qr_packing(m: usize, n: usize, full: bool) -> Packing {
    let q = if full { m } else { m.min(n) };
    Packing::new(vec![vec![m, q], vec![q, n]])
}

/// One float input of shape `[..., n, n]`; returns its dtype, shape and `n`.
fn square_input<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize])> {
    let (dtype, shape) = one(op, inputs)?;
    float(op, dtype)?;
    square(op, shape)?;
    Ok((dtype, shape))
}

/// One float input of shape `[..., m, n]`; returns its dtype, batch shape, `m` and `n`.
fn matrix_input<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize], usize, usize)> {
    let (dtype, shape) = one(op, inputs)?;
    float(op, dtype)?;
    let (m, n) = matrices(op, shape)?;
    Ok((dtype, &shape[..shape.len() - 2], m, n))
}

extension_op!(
    Cholesky,
    CHOLESKY,
    |_op, inputs| {
        let (dtype, shape) = square_input(CHOLESKY, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: shape.to_vec(),
        })
    },
    |_op, views, alloc| kernels::cholesky(&views[0], alloc)
);

extension_op!(
    TriangularSolve,
    TRIANGULAR_SOLVE,
    |_op, inputs| {
        let (dtype, sb) = system(TRIANGULAR_SOLVE, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: sb.to_vec(),
        })
    },
    |op, views, alloc| kernels::triangular_solve(&views[0], &views[1], *op, alloc)
);

extension_op!(
    Det,
    DET,
    |_op, inputs| {
        let (dtype, shape) = square_input(DET, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: shape[..shape.len() - 2].to_vec(),
        })
    },
    |_op, views, alloc| kernels::det(&views[0], alloc)
);

extension_op!(
    SlogDet,
    SLOGDET,
    |_op, inputs| {
        let (dtype, shape) = square_input(SLOGDET, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: slogdet_packing().output_shape(&shape[..shape.len() - 2]),
        })
    },
    |_op, views, alloc| kernels::slogdet(&views[0], alloc)
);

extension_op!(
    Lu,
    LU,
    |_op, inputs| {
        let (dtype, batch, m, n) = matrix_input(LU, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: lu_packing(m, n).output_shape(batch),
        })
    },
    |_op, views, alloc| kernels::lu(&views[0], alloc)
);

extension_op!(
    Qr,
    QR,
    |op, inputs| {
        let (dtype, batch, m, n) = matrix_input(QR, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: qr_packing(m, n, op.full).output_shape(batch),
        })
    },
    |op, views, alloc| kernels::qr(&views[0], op.full, alloc)
);
