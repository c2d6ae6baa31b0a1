//! The op values of the family: names, shape and dtype rules, and their host kernels.

use crate::kernels;
use nabla_core::{DType, Error, ExtensionOp, HostData, HostView, OutputSpec, Result};
use std::any::Any;

/// `X = A⁻¹ B` for `A` of shape `[..., n, n]` and `B` of shape `[..., n, k]` (same batch dims).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Solve;

/// `A⁻¹` for `A` of shape `[..., n, n]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Inverse;

/// `log |det A|` for `A` of shape `[..., n, n]`; the output has the batch shape `[...]` and the real
/// counterpart of `A`'s dtype.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogAbsDet;

/// Op names, under which the rules are registered.
pub(crate) const SOLVE: &str = "linalg.solve";
pub(crate) const INVERSE: &str = "linalg.inv";
pub(crate) const LOGABSDET: &str = "linalg.logabsdet";

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
            hint: Some("linalg ops support f32, f64, complex64 and complex128".into()),
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
        Ok(OutputSpec {
            dtype,
            shape: sb.to_vec(),
        })
    }

    fn host_kernel(&self, inputs: &[HostView<'_>]) -> Result<HostData> {
        kernels::solve(&inputs[0], &inputs[1])
    }

    fn as_any(&self) -> &dyn Any {
        self
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

    fn host_kernel(&self, inputs: &[HostView<'_>]) -> Result<HostData> {
        kernels::inverse(&inputs[0])
    }

    fn as_any(&self) -> &dyn Any {
        self
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

    fn host_kernel(&self, inputs: &[HostView<'_>]) -> Result<HostData> {
        kernels::logabsdet(&inputs[0])
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
