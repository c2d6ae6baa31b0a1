//! The user functions of the factorisation ops: each applies its op once and returns views of the
//! packed output.

use super::ops::{
    Cholesky, Det, Lu, Qr, SlogDet, TriangularSolve, lu_packing, qr_packing, slogdet_packing,
};
use super::rules::{tri_solve, tri_solve_right};
use crate::common::FullProduct;
use crate::common::{Packing, h, hermitian_part};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;
use std::sync::Arc;

/// Applies a packed op to `a` and splits its output by `packing`.
fn unpacked<B: Backend, const N: usize>(
    op: Arc<dyn nabla_core::ExtensionOp>,
    a: &Tensor<B>,
    packing: impl FnOnce(usize, usize) -> Packing,
) -> Result<[Tensor<B>; N]> {
    let name = op.name().to_string();
    let shape = a.shape();
    // The op validates the shape; this only picks the packing for a valid one.
    let (m, n) = match shape {
        [.., m, n] => (*m, *n),
        _ => (0, 0),
    };
    let packed = Tensor::apply_family_op::<crate::Linalg>(op, &[a])?;
    let parts = packing(m, n).unpack(&packed)?;
    <[Tensor<B>; N]>::try_from(parts)
        .map_err(|_| Error::invalid("linalg", format!("{name}: unexpected number of results")))
}

/// The Cholesky factor `L` (lower triangular, `A = L Lᴴ`) of Hermitian positive definite `a`
/// `[..., n, n]`.
///
/// Like `jax.numpy.linalg.cholesky`, the input is symmetrised first (`(A + Aᴴ) / 2`), so derivatives
/// are symmetric. A matrix that is not positive definite is an error naming the matrix of the batch
/// and the failing pivot.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![4.0f64, 2.0, 2.0, 5.0], [2, 2], &cpu)?;
/// assert_eq!(nabla_linalg::cholesky(&a)?.to_vec::<f64>()?, vec![2.0, 0.0, 1.0, 2.0]);
/// let bad = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 1.0], [2, 2], &cpu)?;
/// assert!(nabla_linalg::cholesky(&bad).unwrap_err().to_string().contains("not positive definite"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn cholesky<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    // Shape errors come from the op.
    let sym = hermitian_part(a)?;
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(Cholesky), &[&sym])
}

/// Options of [`triangular_solve`]: which triangle of `A` is read, on which side it multiplies the
/// unknown, and whether it is taken as unit-diagonal or (conjugate-)transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Triangular {
    /// `A` is lower (else upper) triangular. Default `true`.
    pub lower: bool,
    /// Solve `op(A) X = B` (else `X op(A) = B`). Default `true`.
    pub left: bool,
    /// Take `A`'s diagonal as ones (it is not read). Default `false`.
    pub unit_diagonal: bool,
    /// `op(A) = Aᴴ` (else `A`); `lower` still describes `A`. Default `false`.
    pub adjoint: bool,
}

impl Default for Triangular {
    fn default() -> Self {
        Self {
            lower: true,
            left: true,
            unit_diagonal: false,
            adjoint: false,
        }
    }
}

/// Solves `op(A) X = B` (or `X op(A) = B` when `!opts.left`) for triangular `a` `[..., n, n]` and `b`
/// `[..., n, k]` (`[..., k, n]` on the right), like `jax.scipy.linalg.solve_triangular`; only the
/// triangle of `A` named by `opts.lower` is read. A zero on the diagonal is an error.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_linalg::Triangular;
/// let cpu = CpuBackend::new();
/// let l = Tensor::from_vec(vec![2.0f64, 0.0, 1.0, 4.0], [2, 2], &cpu)?;
/// let b = Tensor::from_vec(vec![2.0f64, 9.0], [2, 1], &cpu)?;
/// let x = nabla_linalg::triangular_solve(&l, &b, Triangular::default())?;
/// assert_eq!(x.to_vec::<f64>()?, vec![1.0, 2.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn triangular_solve<B: Backend>(
    a: &Tensor<B>,
    b: &Tensor<B>,
    opts: Triangular,
) -> Result<Tensor<B>> {
    // op(A) = Aᴴ is the transpose of conj(A): the kernel reads it transposed, in place.
    let a = if opts.adjoint { a.conj()? } else { a.clone() };
    let op = TriangularSolve {
        lower: opts.lower,
        unit_diagonal: opts.unit_diagonal,
        transpose: opts.adjoint,
    };
    if opts.left {
        tri_solve(&a, b, op)
    } else {
        tri_solve_right(&a, b, op)
    }
}

/// `det A` for `a` `[..., n, n]`, of shape `[...]` (zero for a singular matrix).
///
/// Its derivatives use `A⁻¹` and are an error at a singular matrix.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
/// assert!((nabla_linalg::det(&a)?.item::<f64>()? + 2.0).abs() < 1e-14);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn det<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(Det), &[a])
}

/// `(sign, log |det A|)` for `a` `[..., n, n]`, each of shape `[...]`: `det A = sign · exp(logabsdet)`.
/// The sign is `±1` for real `A` and the phase `det A / |det A|` for complex `A` (whose logabsdet is
/// real-typed); a singular matrix gives `(0, -inf)`.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
/// let (sign, logabsdet) = nabla_linalg::slogdet(&a)?;
/// assert_eq!(sign.item::<f64>()?, -1.0);
/// assert!((logabsdet.item::<f64>()? - 2f64.ln()).abs() < 1e-14);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn slogdet<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    let [sign, log] = unpacked(Arc::new(SlogDet), a, |_, _| slogdet_packing())?;
    let log = if a.dtype().is_complex() {
        log.real()?
    } else {
        log
    };
    Ok((sign, log))
}

/// The LU factorisation with partial pivoting `A = P L U` of `a` `[..., m, n]`, like
/// `jax.scipy.linalg.lu`: the permutation matrix `P` `[..., m, m]` (in `a`'s dtype), unit lower `L`
/// `[..., m, k]` and upper `U` `[..., k, n]`, `k = min(m, n)`. Singular matrices are factored too.
/// Derivatives (for `L` and `U`; `P` is piecewise constant) exist for every shape: for non-square
/// matrices the rules complete `L` and `U` to square triangular factors, as JAX's rule does.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
/// let (p, l, u) = nabla_linalg::lu(&a)?;
/// assert_eq!(p.matmul(&l)?.matmul(&u)?.to_vec::<f64>()?, vec![1.0, 2.0, 3.0, 4.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn lu<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>, Tensor<B>)> {
    let [p, l, u] = unpacked(Arc::new(Lu), a, lu_packing)?;
    Ok((p, l, u))
}

/// The reduced QR factorisation `A = Q R` of `a` `[..., m, n]`: `Q` `[..., m, k]` with orthonormal
/// columns and upper triangular `R` `[..., k, n]`, `k = min(m, n)`. The signs of `R`'s diagonal are
/// those of the Householder factorisation (not normalised). Derivatives exist for every shape: for a
/// wide matrix (`m < n`) the factorisation is composed, as JAX's rule is, of the QR of the leading
/// square block `X = Q R_X` and `R_Y = Qᴴ Y` for the remaining columns, so its derivatives come from
/// the square rule and `matmul`.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![3.0f64, 1.0, 4.0, 2.0, 0.0, 5.0], [3, 2], &CpuBackend::new())?;
/// let (q, r) = nabla_linalg::qr(&a)?;
/// assert_eq!((q.shape(), r.shape()), (&[3usize, 2][..], &[2usize, 2][..]));
/// let back = q.matmul(&r)?.to_vec::<f64>()?;
/// assert!(back.iter().zip(a.to_vec::<f64>()?).all(|(x, y)| (x - y).abs() < 1e-12));
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn qr<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    if let Some(wide) = wide_qr(a)? {
        return Ok(wide);
    }
    let [q, r] = unpacked(Arc::new(Qr { full: false }), a, |m, n| {
        qr_packing(m, n, false)
    })?;
    Ok((q, r))
}

/// The QR factorisation of a wide matrix `A = [X | Y]` (`m < n`, where reduced and complete agree)
/// as `Q R_X = X` and `R_Y = Qᴴ Y`; `None` for any other shape.
fn wide_qr<B: Backend>(a: &Tensor<B>) -> Result<Option<(Tensor<B>, Tensor<B>)>> {
    let (m, n) = match a.shape() {
        [.., m, n] if m < n => (*m, *n),
        _ => return Ok(None),
    };
    if m == 0 {
        // No rows: Q is 0 x 0 and R is A itself (both empty), as views that keep the graph.
        return Ok(Some((a.narrow(-1, 0, 0)?, a.clone())));
    }
    let (x, y) = (a.narrow(-1, 0, m)?, a.narrow(-1, m, n - m)?);
    let (q, rx) = qr(&x)?;
    let ry = h(&q)?.matmul_full(&y)?;
    Ok(Some((q.clone(), Tensor::cat(&[&rx, &ry], -1)?)))
}

/// The complete QR factorisation `A = Q R` of `a` `[..., m, n]`: unitary `Q` `[..., m, m]` and upper
/// trapezoidal `R` `[..., m, n]`. Derivatives exist for square and wide (`m < n`, the same as [`qr`])
/// matrices; for tall ones the extra columns of `Q` are not unique and differentiating is an error.
pub fn qr_full<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    if let Some(wide) = wide_qr(a)? {
        return Ok(wide);
    }
    let [q, r] = unpacked(Arc::new(Qr { full: true }), a, |m, n| {
        qr_packing(m, n, true)
    })?;
    Ok((q, r))
}

/// The least-squares solution `X = argmin ‖A X - B‖` for full-column-rank `a` `[..., m, n]`, `m >= n`,
/// and `b` `[..., m, k]` or one vector `[m]` (batch dimensions broadcast; `b` is a vector only when it
/// is 1-D, as in [`crate::solve`]), computed as `R⁻¹ Qᴴ B` from the reduced QR factorisation (so its
/// derivatives come from those of [`qr`] and [`triangular_solve`]). A rank-deficient `A` (a zero on
/// `R`'s diagonal) is an error; a nearly rank-deficient one gives large values.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let cpu = CpuBackend::new();
/// let a = Tensor::from_vec(vec![1.0f64, 0.0, 0.0, 1.0, 1.0, 1.0], [3, 2], &cpu)?;
/// let b = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3, 1], &cpu)?;
/// let x = nabla_linalg::lstsq(&a, &b)?.to_vec::<f64>()?;
/// assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn lstsq<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    const OP: &str = "linalg.lstsq";
    let (a, b, vector) = crate::composite::broadcast_rhs(OP, a, b)?;
    let x = lstsq_matrices(&a, &b)?;
    if vector { x.squeeze(-1) } else { Ok(x) }
}

/// [`lstsq`] with matrices `b` and equal batch dimensions.
fn lstsq_matrices<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    const OP: &str = "linalg.lstsq";
    let (sa, sb) = (a.shape(), b.shape());
    let ok = match (sa, sb) {
        ([ba @ .., m, n], [bb @ .., mb, _]) => ba == bb && m == mb && m >= n,
        _ => false,
    };
    if !ok {
        return Err(Error::shapes(OP, sa, sb).with_hint(
            "A must be [..., m, n] with m >= n and B [m] or [..., m, k] with broadcastable batch \
             dims",
        ));
    }
    let (q, r) = qr(a)?;
    let qhb = h(&q)?.matmul_full(b)?;
    tri_solve(&r, &qhb, TriangularSolve::UPPER).map_err(|e| {
        let msg = e.to_string();
        if msg.contains("singular") || msg.contains("ill-conditioned") {
            Error::invalid(
                OP,
                format!("A {sa:?} does not have full column rank: R of its QR factorisation has a zero diagonal entry ({msg})"),
            )
        } else {
            e
        }
    })
}
