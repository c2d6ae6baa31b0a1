//! The op values of the family: names, shape and dtype rules, and their host kernels.

use crate::common::Packing;
use crate::kernels;
use nabla_core::{
    DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use std::any::Any;

/// `X = A⁻¹ B` for `A` of shape `[..., n, n]` and `B` of shape `[..., n, k]` (same batch dims).
///
/// Its output is packed per matrix as `[..., n k + n² + n]`: `X` (row-major), then the LU factors
/// of `Aᵀ` (column-major) and their row permutation, which the derivative rules reuse instead of
/// factoring `A` again; [`crate::solve`] returns the view of `X`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Solve;

/// `op(A)⁻¹ B` (`op(A) = Aᵀ` when `transpose`) from `A`'s factors saved by [`Solve`]: inputs `A`
/// `[..., n, n]` (whose values are not read: it is an input for the derivatives), the factors
/// `[..., n² + n]` and `B` `[..., n, k]`. The result does not depend on the factors as long as they
/// are `A`'s, so the rules give them no derivative.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct LuSolve {
    /// Solve with `Aᵀ` (else `A`).
    pub(crate) transpose: bool,
}

/// `A⁻¹` for `A` of shape `[..., n, n]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Inverse;

/// `log |det A|` for `A` of shape `[..., n, n]`; the output has the batch shape `[...]` and the real
/// counterpart of `A`'s dtype.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LogAbsDet;

/// Op names, under which the rules are registered.
pub(crate) const SOLVE: &str = "linalg.solve";
pub(crate) const LU_SOLVE: &str = "linalg.lu_solve";
pub(crate) const INVERSE: &str = "linalg.inv";
pub(crate) const LOGABSDET: &str = "linalg.logabsdet";

/// The results per matrix of a solve's packed output for `B` of shape `b_shape` (`[..., n, k]`): `X`
/// `[n, k]`, then `A`'s factors `[n² + n]`.
pub(crate) fn solve_packing(b_shape: &[usize]) -> Packing {
    let (n, k) = match b_shape {
        [.., n, k] => (*n, *k),
        _ => (0, 0),
    };
    Packing::new(vec![vec![n, k], vec![n * n + n]])
}

/// Checks that `shape` is a batch of square matrices; returns `n`.
pub(crate) fn square(op: &'static str, shape: &[usize]) -> Result<usize> {
    match shape {
        [.., r, c] if r == c => Ok(*r),
        _ => Err(Error::invalid(
            op,
            format!("expects square matrices of shape [..., n, n], got {shape:?}"),
        )),
    }
}

/// Checks that `shape` is a batch of matrices `[..., m, n]`; returns `(m, n)`.
pub(crate) fn matrices(op: &'static str, shape: &[usize]) -> Result<(usize, usize)> {
    match shape {
        [.., m, n] => Ok((*m, *n)),
        _ => Err(Error::invalid(
            op,
            format!("expects matrices of shape [..., m, n], got {shape:?}"),
        )),
    }
}

/// Checks that `dtype` is f32, f64, complex64 or complex128.
pub(crate) fn float(op: &'static str, dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F64 | DType::C64 | DType::C128 => Ok(()),
        other => Err(Error::UnsupportedDType {
            op,
            dtype: other,
            hint: Some("linalg ops support float32, float64, complex64 and complex128".into()),
        }),
    }
}

/// The single input of a one-input op.
pub(crate) fn one<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize])> {
    match inputs {
        [x] => Ok(*x),
        _ => Err(Error::invalid(
            op,
            format!("takes one input, got {}", inputs.len()),
        )),
    }
}

/// The two inputs `(A, B)` of a solve-like op, with one dtype and `B` of shape `[..., n, k]` with
/// `A`'s batch dims for `A` of shape `[..., n, n]`.
pub(crate) fn system<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize])> {
    let [(da, sa), (db, sb)] = inputs else {
        return Err(Error::invalid(
            op,
            format!("takes two inputs (A, B), got {}", inputs.len()),
        ));
    };
    float(op, *da)?;
    if da != db {
        return Err(Error::DTypeMismatch {
            op,
            lhs: *da,
            rhs: *db,
        });
    }
    let n = square(op, sa)?;
    let ok =
        sb.len() == sa.len() && sb[..sb.len() - 2] == sa[..sa.len() - 2] && sb[sb.len() - 2] == n;
    if !ok {
        return Err(Error::shapes(op, sa, sb).with_hint(
            "B must be [..., n, k] with A's batch dims; for a vector b use b.unsqueeze(-1)",
        ));
    }
    Ok((*da, sb))
}

impl ExtensionOp for Solve {
    fn name(&self) -> &str {
        SOLVE
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, sb) = system(SOLVE, inputs)?;
        let (n, k) = (sb[sb.len() - 2], sb[sb.len() - 1]);
        let mut shape = sb[..sb.len() - 2].to_vec();
        shape.push(kernels::solve_len(n, k));
        Ok(OutputSpec { dtype, shape })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::solve(&inputs[0], &inputs[1], alloc)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

impl ExtensionOp for LuSolve {
    fn name(&self) -> &str {
        LU_SOLVE
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let [a, (df, sf), b] = inputs else {
            return Err(Error::invalid(
                LU_SOLVE,
                format!("takes three inputs (A, factors, B), got {}", inputs.len()),
            ));
        };
        let system_inputs = [*a, *b];
        let (dtype, sb) = system(LU_SOLVE, &system_inputs)?;
        let n = sb[sb.len() - 2];
        let mut want = sb[..sb.len() - 2].to_vec();
        want.push(n * n + n);
        if *df != dtype || *sf != want.as_slice() {
            return Err(Error::invalid(
                LU_SOLVE,
                format!("expects {dtype:?} factors of shape {want:?}, got {df:?} {sf:?}"),
            ));
        }
        Ok(OutputSpec {
            dtype,
            shape: sb.to_vec(),
        })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::lu_solve(&inputs[1], &inputs[2], self.transpose, alloc)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

impl ExtensionOp for Inverse {
    fn name(&self) -> &str {
        INVERSE
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, shape) = one(INVERSE, inputs)?;
        float(INVERSE, dtype)?;
        square(INVERSE, shape)?;
        Ok(OutputSpec {
            dtype,
            shape: shape.to_vec(),
        })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::inverse(&inputs[0], alloc)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

impl ExtensionOp for LogAbsDet {
    fn name(&self) -> &str {
        LOGABSDET
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, shape) = one(LOGABSDET, inputs)?;
        float(LOGABSDET, dtype)?;
        square(LOGABSDET, shape)?;
        Ok(OutputSpec {
            dtype: dtype.real(),
            shape: shape[..shape.len() - 2].to_vec(),
        })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        kernels::logabsdet(&inputs[0], alloc)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}
