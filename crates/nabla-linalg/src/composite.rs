//! Functions composed of the family's ops and core tensor ops, as `torch.linalg` and `jnp.linalg`
//! name them: norms of vectors, cross and dot products, matrix powers and chains, condition numbers,
//! Hermitian eigenvalues and pseudo-inverses, tensor solves, and the broadcasting of right-hand sides.
//! They have no rules of their own: their pieces' rules differentiate them to any order.

use crate::common::FullProduct;
use crate::common::h;
use crate::spectral::NormOrd;
use nabla_core::{Backend, DType, Error, Result, Shape};
use nabla_tensor::Tensor;

/// `a` `[..., m, n]` and `b` (a vector `[m]` or matrices `[..., m, k]`) with their batch dimensions
/// broadcast against each other, `b` as matrices, and whether `b` was a vector. `b` is a vector only
/// when it has one dimension: NumPy 2's rule (`numpy.linalg.solve`), which `jnp.linalg.solve` and
/// `torch.linalg.solve` also follow where they agree; a batch of vectors is written `b[..., None]`.
pub(crate) fn broadcast_rhs<B: Backend>(
    op: &'static str,
    a: &Tensor<B>,
    b: &Tensor<B>,
) -> Result<(Tensor<B>, Tensor<B>, bool)> {
    if a.rank() < 2 || b.rank() == 0 {
        return Err(Error::shapes(op, a.shape(), b.shape())
            .with_hint("A must be [..., m, n] and B [m] or [..., m, k]"));
    }
    let vector = b.rank() == 1;
    let b = if vector { b.unsqueeze(-1)? } else { b.clone() };
    let (ra, rb) = (a.rank(), b.rank());
    if a.shape()[ra - 2] != b.shape()[rb - 2] {
        return Err(Error::shapes(op, a.shape(), b.shape()).with_hint(format!(
            "B must be [{m}] or [..., {m}, k] for A of {m} rows (b is a vector only when it is \
             1-D; for a batch of vectors [..., {m}] pass b.unsqueeze(-1) and squeeze the result)",
            m = a.shape()[ra - 2]
        )));
    }
    let batch = Shape::broadcast(op, &a.shape()[..ra - 2], &b.shape()[..rb - 2]).map_err(|_| {
        Error::shapes(op, a.shape(), b.shape()).with_hint(format!(
            "the batch dimensions {:?} and {:?} do not broadcast",
            &a.shape()[..ra - 2],
            &b.shape()[..rb - 2]
        ))
    })?;
    let with = |t: &Tensor<B>, r: usize| -> Result<Tensor<B>> {
        let mut dims = batch.dims().to_vec();
        dims.extend_from_slice(&t.shape()[r - 2..]);
        if dims == t.shape() {
            Ok(t.clone())
        } else {
            t.broadcast_to(dims)
        }
    };
    Ok((with(a, ra)?, with(&b, rb)?, vector))
}

/// The vector norm of `x` over `axes` (all when empty): `(Σ |xᵢ|^ord)^(1/ord)`; `ord = ∞` the largest
/// `|xᵢ|`, `−∞` the smallest, `0` the number of non-zero entries (`torch.linalg.vector_norm`). Real
/// result (the real dtype for complex input). Like `sqrt`, the 2-norm of a zero vector has no
/// derivative.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let x = Tensor::from_vec(vec![3.0f64, -4.0], [2], &CpuBackend::new())?;
/// assert_eq!(nabla_linalg::vector_norm(&x, 2.0, &[], false)?.item::<f64>()?, 5.0);
/// assert_eq!(nabla_linalg::vector_norm(&x, 1.0, &[], false)?.item::<f64>()?, 7.0);
/// assert_eq!(nabla_linalg::vector_norm(&x, f64::INFINITY, &[], false)?.item::<f64>()?, 4.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn vector_norm<B: Backend>(
    x: &Tensor<B>,
    ord: f64,
    axes: &[isize],
    keepdims: bool,
) -> Result<Tensor<B>> {
    const OP: &str = "linalg.vector_norm";
    if ord.is_nan() {
        return Err(Error::invalid(OP, "ord must not be NaN"));
    }
    if !(x.dtype().is_float() || x.dtype().is_complex()) {
        return Err(Error::dtype(OP, x.dtype())
            .with_hint("vector_norm takes float or complex tensors; cast integers first"));
    }
    let abs = x.abs()?;
    if ord == f64::INFINITY {
        abs.max(axes, keepdims)
    } else if ord == f64::NEG_INFINITY {
        abs.min(axes, keepdims)
    } else if ord == 0.0 {
        abs.ne(0.0)?.cast(abs.dtype())?.sum(axes, keepdims)
    } else if ord == 1.0 {
        abs.sum(axes, keepdims)
    } else if ord == 2.0 {
        abs.square()?.sum(axes, keepdims)?.sqrt()
    } else {
        abs.pow(ord)?.sum(axes, keepdims)?.pow(1.0 / ord)
    }
}

/// The cross product of 3-vectors along `axis` of `a` and `b` (broadcast against each other).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let x = Tensor::from_vec(vec![1.0f64, 0.0, 0.0], [3], &cpu)?;
/// let y = Tensor::from_vec(vec![0.0f64, 1.0, 0.0], [3], &cpu)?;
/// assert_eq!(nabla_linalg::cross(&x, &y, -1)?.to_vec::<f64>()?, vec![0.0, 0.0, 1.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn cross<B: Backend>(a: &Tensor<B>, b: &Tensor<B>, axis: isize) -> Result<Tensor<B>> {
    const OP: &str = "linalg.cross";
    let shape = Shape::broadcast(OP, a.shape(), b.shape())?;
    let (a, b) = (a.broadcast_to(shape.clone())?, b.broadcast_to(shape)?);
    if a.dim(axis)? != 3 {
        return Err(Error::invalid(
            OP,
            format!(
                "needs 3-vectors along axis {axis}, got shape {:?}",
                a.shape()
            ),
        ));
    }
    let part = |t: &Tensor<B>, i: usize| t.narrow(axis, i, 1);
    let term = |i: usize, j: usize| -> Result<Tensor<B>> {
        part(&a, i)?
            .mul(&part(&b, j)?)?
            .sub(&part(&a, j)?.mul(&part(&b, i)?)?)
    };
    Tensor::cat(&[&term(1, 2)?, &term(2, 0)?, &term(0, 1)?], axis)
}

/// `Σ conj(aᵢ) bᵢ` along `axis` (`torch.linalg.vecdot`; the plain dot product for real input), with
/// broadcasting.
pub fn vecdot<B: Backend>(a: &Tensor<B>, b: &Tensor<B>, axis: isize) -> Result<Tensor<B>> {
    a.conj()?.mul(b)?.sum(&[axis], false)
}

/// `Aⁿ` for square matrices `a` `[..., n, n]` and any integer `n` (`A⁰ = I`; negative powers of
/// `A⁻¹`), by repeated squaring.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![1.0f64, 1.0, 0.0, 1.0], [2, 2], &CpuBackend::new())?;
/// assert_eq!(nabla_linalg::matrix_power(&a, 5)?.to_vec::<f64>()?, vec![1.0, 5.0, 0.0, 1.0]);
/// assert_eq!(nabla_linalg::matrix_power(&a, -2)?.to_vec::<f64>()?, vec![1.0, -2.0, 0.0, 1.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn matrix_power<B: Backend>(a: &Tensor<B>, n: i64) -> Result<Tensor<B>> {
    let size = crate::ops::square("linalg.matrix_power", a.shape())?;
    let mut base = if n < 0 { crate::inv(a)? } else { a.clone() };
    let mut result: Option<Tensor<B>> = None;
    let mut e = n.unsigned_abs();
    while e > 0 {
        if e & 1 == 1 {
            result = Some(match result {
                Some(r) => r.matmul_full(&base)?,
                None => base.clone(),
            });
        }
        e >>= 1;
        if e > 0 {
            base = base.matmul_full(&base)?;
        }
    }
    match result {
        Some(r) => Ok(r),
        None => Tensor::eye(size, a.dtype(), a.backend())?.broadcast_to(a.shape().to_vec()),
    }
}

/// The product of a chain of matrices in the cheapest order (`numpy.linalg.multi_dot`): the first
/// may be a vector `[k]` (a row) and the last a vector `[k]` (a column); the others are matrices.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![1.0f64, 2.0], [2], &cpu)?;
/// let m = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 2.0], [2, 2], &cpu)?;
/// assert_eq!(nabla_linalg::multi_dot(&[&a, &m, &a])?.item::<f64>()?, 9.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn multi_dot<B: Backend>(matrices: &[&Tensor<B>]) -> Result<Tensor<B>> {
    const OP: &str = "linalg.multi_dot";
    let last = matrices
        .len()
        .checked_sub(1)
        .ok_or_else(|| Error::invalid(OP, "needs at least one matrix"))?;
    // Letters a, b, c, ... label the shared dimensions of the chain.
    let letter = |i: usize| char::from(b'a' + (i % 26) as u8);
    if matrices.len() > 25 {
        return Err(Error::invalid(
            OP,
            format!("at most 25 matrices, got {}", matrices.len()),
        ));
    }
    let mut terms = Vec::with_capacity(matrices.len());
    for (i, m) in matrices.iter().enumerate() {
        let term = match m.rank() {
            1 if i == 0 && i != last => format!("{}", letter(1)),
            1 if i == last && i != 0 => format!("{}", letter(i)),
            2 => format!("{}{}", letter(i), letter(i + 1)),
            _ => {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "matrix {i} has shape {:?}: only the first and last may be vectors, the others must be 2-D",
                        m.shape()
                    ),
                ));
            }
        };
        terms.push(term);
    }
    let output: String = [
        (matrices[0].rank() == 2).then(|| letter(0)),
        (matrices[last].rank() == 2).then(|| letter(last + 1)),
    ]
    .into_iter()
    .flatten()
    .collect();
    Tensor::einsum(&format!("{}->{output}", terms.join(",")), matrices)
}

/// The condition number of `a` `[..., m, n]` in the norm `ord` (`torch.linalg.cond`): `σ_max/σ_min`
/// for `Two` (any shape), `σ_min/σ_max` for `NegTwo`, else `‖A‖ ‖A⁻¹‖` (square, invertible).
pub fn cond<B: Backend>(a: &Tensor<B>, ord: NormOrd) -> Result<Tensor<B>> {
    match ord {
        NormOrd::Two | NormOrd::NegTwo => {
            let s = crate::svdvals(a)?;
            let k = s.dim(-1)?;
            if k == 0 {
                return Err(Error::invalid(
                    "linalg.cond",
                    format!("needs a non-empty matrix, got {:?}", a.shape()),
                ));
            }
            let (largest, smallest) = (s.narrow(-1, 0, 1)?, s.narrow(-1, k - 1, 1)?);
            let ratio = if ord == NormOrd::Two {
                largest.div(&smallest)?
            } else {
                smallest.div(&largest)?
            };
            ratio.squeeze(-1)
        }
        _ => crate::matrix_norm(a, ord)?.mul(&crate::matrix_norm(&crate::inv(a)?, ord)?),
    }
}

/// The eigenvalues (ascending, real) of Hermitian matrices `a` `[..., n, n]`, symmetrised as
/// [`crate::eigh`] does.
pub fn eigvalsh<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Ok(crate::eigh(a)?.0)
}

/// The upper Cholesky factor `U = Lᴴ` (`A = Uᴴ U`) of Hermitian positive definite `a` (`torch`'s
/// `cholesky(upper=True)`).
pub fn cholesky_upper<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    h(&crate::cholesky(a)?)
}

/// The pseudo-inverse of Hermitian matrices `a` `[..., n, n]` from their eigendecomposition
/// (`jnp.linalg.pinv(hermitian=True)`): `V diag(w⁺) Vᴴ`, with eigenvalues `|w| ≤ rcond · max |w|`
/// counting as zero (default `rcond` as [`crate::pinv`]). Cheaper than the SVD-based [`crate::pinv`].
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 0.0], [2, 2], &CpuBackend::new())?;
/// assert_eq!(nabla_linalg::pinvh(&a, None)?.to_vec::<f64>()?, vec![0.5, 0.0, 0.0, 0.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn pinvh<B: Backend>(a: &Tensor<B>, rcond: Option<f64>) -> Result<Tensor<B>> {
    const OP: &str = "linalg.pinvh";
    let n = crate::ops::square(OP, a.shape())?;
    let (w, v) = crate::eigh(a)?;
    let eps = if a.dtype().real() == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let rcond = rcond.unwrap_or(10.0 * n as f64 * eps);
    if !(rcond.is_finite() && rcond >= 0.0) {
        return Err(Error::invalid(
            OP,
            format!("rcond must be finite and non-negative, got {rcond}"),
        ));
    }
    let magnitude = w.abs()?;
    let cutoff = if n == 0 {
        magnitude.sum(&[-1], true)?
    } else {
        magnitude.max(&[-1], true)?.mul(rcond)?
    };
    let keep = magnitude.gt(&cutoff)?;
    let w_inv = keep
        .where_(keep.where_(&w, 1.0)?.recip()?, 0.0)?
        .cast(a.dtype())?;
    v.mul(&w_inv.unsqueeze(-2)?)?.matmul_full(&h(&v)?)
}

/// The product of the trailing `dims` lengths of `shape`, and of the others.
fn split_len(shape: &[usize], dims: usize) -> (usize, usize) {
    let cut = shape.len() - dims;
    (shape[..cut].iter().product(), shape[cut..].iter().product())
}

/// `X` with `tensordot(A, X, X.ndim) = B` (`numpy.linalg.tensorsolve`): `a` has shape
/// `b.shape + x.shape` with `prod(b.shape) = prod(x.shape)`.
pub fn tensorsolve<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    const OP: &str = "linalg.tensorsolve";
    let (sa, sb) = (a.shape(), b.shape());
    if sa.len() < sb.len() || sa[..sb.len()] != *sb {
        return Err(Error::shapes(OP, sa, sb).with_hint("A's leading dimensions must be B's shape"));
    }
    let x_shape = sa[sb.len()..].to_vec();
    let (rows, cols) = split_len(sa, x_shape.len());
    if rows != cols {
        return Err(
            Error::shapes(OP, sa, sb).with_hint("B and X must have the same number of elements")
        );
    }
    let x = crate::solve(&a.reshape([rows, cols])?, &b.reshape([rows])?)?;
    x.reshape(x_shape)
}

/// The inverse of `a` with respect to `tensordot(A, X, ndim − ind)` (`numpy.linalg.tensorinv`): the
/// result has shape `a.shape[ind..] + a.shape[..ind]`.
pub fn tensorinv<B: Backend>(a: &Tensor<B>, ind: usize) -> Result<Tensor<B>> {
    const OP: &str = "linalg.tensorinv";
    let s = a.shape();
    if ind == 0 || ind > s.len() {
        return Err(Error::invalid(
            OP,
            format!("ind must be in 1..={}, got {ind}", s.len()),
        ));
    }
    let (rows, cols) = split_len(s, s.len() - ind);
    if rows != cols {
        return Err(Error::invalid(
            OP,
            format!("the first {ind} dimensions of {s:?} must hold as many elements as the rest"),
        ));
    }
    let inv = crate::inv(&a.reshape([rows, cols])?)?;
    let out: Vec<usize> = s[ind..].iter().chain(&s[..ind]).copied().collect();
    inv.reshape(out)
}
