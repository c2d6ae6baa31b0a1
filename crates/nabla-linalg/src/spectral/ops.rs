//! The spectral op values: names, shape and dtype rules, and the packing of several results into
//! one output.

use super::kernels;
use crate::common::{Packing, extension_op};
use nabla_core::{DType, Error, OutputSpec, Result};

pub(crate) const EIGH: &str = "linalg.eigh";
pub(crate) const SVD: &str = "linalg.svd";
pub(crate) const SVDVALS: &str = "linalg.svdvals";
pub(crate) const MATRIX_EXP: &str = "linalg.matrix_exp";
pub(crate) const EIGVALS: &str = "linalg.eigvals";
pub(crate) const EIG: &str = "linalg.eig";

/// Eigenvalues (ascending) and eigenvectors of Hermitian matrices `[..., n, n]`, reading the lower
/// triangle; output packed `[..., n + n²]` per matrix as `[w, V]` (`w` real, stored in the input's
/// dtype).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Eigh;

/// The SVD `A = U diag(S) Vh` of `[..., m, n]` matrices, packed per matrix as `[U, S, Vh]`: with
/// `k = min(m, n)`, `U` is `m x k` and `Vh` `k x n` (reduced), or `m x m` and `n x n` (full).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Svd {
    /// Square `U` and `Vh` (`m x m`, `n x n`) instead of the reduced `m x k`, `k x n`.
    pub full_matrices: bool,
}

/// The singular values (descending) of `[..., m, n]` matrices: `[..., min(m, n)]`, in the real dtype.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SvdVals;

/// The matrix exponential of `[..., n, n]` matrices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatrixExp;

/// The eigenvalues of general `[..., n, n]` matrices: `[..., n]` in the complex dtype (`complex64`
/// for `f32` and `complex64` input, `complex128` for `f64` and `complex128`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EigVals;

/// Eigenvalues and right eigenvectors of general `[..., n, n]` matrices, packed `[..., n + n²]` per
/// matrix as `[w, V]` in the complex dtype; the columns of `V` have unit 2-norm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Eig;

/// The single input of a one-input op, checked to be a batch of float or complex matrices.
fn matrices<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize])> {
    let [(dtype, shape)] = inputs else {
        return Err(Error::invalid(
            op,
            format!("takes one input, got {}", inputs.len()),
        ));
    };
    if !matches!(dtype, DType::F32 | DType::F64 | DType::C64 | DType::C128) {
        return Err(Error::UnsupportedDType {
            op,
            dtype: *dtype,
            hint: Some(
                "spectral linalg ops support float32, float64, complex64 and complex128".into(),
            ),
        });
    }
    if shape.len() < 2 {
        return Err(Error::invalid(
            op,
            format!("expects matrices of shape [..., m, n], got {shape:?}"),
        ));
    }
    Ok((*dtype, shape))
}

/// [`matrices`], and square.
fn square<'a>(
    op: &'static str,
    inputs: &'a [(DType, &'a [usize])],
) -> Result<(DType, &'a [usize], usize)> {
    let (dtype, shape) = matrices(op, inputs)?;
    match shape {
        [.., r, c] if r == c => Ok((dtype, shape, *r)),
        _ => Err(Error::invalid(
            op,
            format!("expects square matrices of shape [..., n, n], got {shape:?}"),
        )),
    }
}

/// `(batch dims, m, n)` of a `[..., m, n]` shape of rank 2 or more.
pub(crate) fn split_shape(shape: &[usize]) -> (&[usize], usize, usize) {
    let r = shape.len();
    (&shape[..r - 2], shape[r - 2], shape[r - 1])
}

/// The packing `[w (n), V (n x n)]` of eigh.
pub(crate) fn eigh_packing(n: usize) -> Packing {
    Packing::new(vec![vec![n], vec![n, n]])
}

/// The packing `[U, S, Vh]` of the SVD of an `m x n` matrix.
pub(crate) fn svd_packing(m: usize, n: usize, full_matrices: bool) -> Packing {
    let k = m.min(n);
    let (ku, kv) = if full_matrices { (m, n) } else { (k, k) };
    Packing::new(vec![vec![m, ku], vec![k], vec![kv, n]])
}

extension_op!(
    Eigh,
    EIGH,
    |_op, inputs| {
        let (dtype, shape, n) = square(EIGH, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: eigh_packing(n).output_shape(split_shape(shape).0),
        })
    },
    |_s, views, alloc| kernels::eigh(&views[0], alloc)
);

extension_op!(
    Svd,
    SVD,
    |op, inputs| {
        let (dtype, shape) = matrices(SVD, inputs)?;
        let (batch, m, n) = split_shape(shape);
        Ok(OutputSpec {
            dtype,
            shape: svd_packing(m, n, op.full_matrices).output_shape(batch),
        })
    },
    |s, views, alloc| kernels::svd(&views[0], s.full_matrices, alloc)
);

extension_op!(
    SvdVals,
    SVDVALS,
    |_op, inputs| {
        let (dtype, shape) = matrices(SVDVALS, inputs)?;
        let (batch, m, n) = split_shape(shape);
        let mut out = batch.to_vec();
        out.push(m.min(n));
        Ok(OutputSpec {
            dtype: dtype.real(),
            shape: out,
        })
    },
    |_s, views, alloc| kernels::svdvals(&views[0], alloc)
);

extension_op!(
    MatrixExp,
    MATRIX_EXP,
    |_op, inputs| {
        let (dtype, shape, _) = square(MATRIX_EXP, inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: shape.to_vec(),
        })
    },
    |_s, views, alloc| kernels::matrix_exp(&views[0], alloc)
);

extension_op!(
    EigVals,
    EIGVALS,
    |_op, inputs| {
        let (dtype, shape, _) = square(EIGVALS, inputs)?;
        let complex = dtype
            .complex()
            .ok_or_else(|| Error::dtype(EIGVALS, dtype))?;
        Ok(OutputSpec {
            dtype: complex,
            shape: shape[..shape.len() - 1].to_vec(),
        })
    },
    |_s, views, alloc| kernels::eigvals(&views[0], alloc)
);

extension_op!(
    Eig,
    EIG,
    |_op, inputs| {
        let (dtype, shape, n) = square(EIG, inputs)?;
        let complex = dtype.complex().ok_or_else(|| Error::dtype(EIG, dtype))?;
        Ok(OutputSpec {
            dtype: complex,
            shape: eigh_packing(n).output_shape(split_shape(shape).0),
        })
    },
    |_s, views, alloc| kernels::eig(&views[0], alloc)
);
