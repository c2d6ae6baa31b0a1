//! The user functions of the spectral ops, re-exported at the crate root.

use super::ops::{
    Eig, EigVals, Eigh, MatrixExp, Svd, SvdVals, eigh_packing, split_shape, svd_packing,
};
use crate::common::FullProduct;
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::Tensor;
use std::str::FromStr;
use std::sync::Arc;

/// `x` as a real tensor: its real part if it is complex (where the imaginary part is zero by
/// construction), else itself.
fn real_values<B: Backend>(x: Tensor<B>) -> Result<Tensor<B>> {
    if x.dtype().is_complex() {
        x.real()
    } else {
        Ok(x)
    }
}

/// Takes the `N` results of a packed output.
fn take<B: Backend, const N: usize>(
    op: &'static str,
    parts: Vec<Tensor<B>>,
) -> Result<[Tensor<B>; N]> {
    parts
        .try_into()
        .map_err(|_| Error::invalid(op, "unexpected number of packed results"))
}

/// Eigenvalues `w` (ascending, `[..., n]`, real) and eigenvectors `V` (columns, `[..., n, n]`) of
/// Hermitian (real symmetric) matrices `a` `[..., n, n]`: `A = V diag(w) Vᴴ`.
///
/// Like `jnp.linalg.eigh` (its default `symmetrize_input=True`) and [`crate::cholesky`], the input is
/// symmetrised first: the result is that of `(A + Aᴴ)/2`, so value and derivatives describe the same
/// function for any square input (for Hermitian input it is `A` itself), and gradients are Hermitian.
/// Eigenvectors are defined up to sign (phase); derivatives of functions that do not depend on that
/// choice are exact. With repeated eigenvalues (within `n·ε·max|w|`) the derivative is finite:
/// those gaps are dropped, exact for losses invariant to the basis of a degenerate subspace.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![2.0f64, 1.0, 1.0, 2.0], [2, 2], &CpuBackend::new())?;
/// let (w, v) = nabla_linalg::eigh(&a)?;
/// let w = w.to_vec::<f64>()?;
/// assert!((w[0] - 1.0).abs() < 1e-12 && (w[1] - 3.0).abs() < 1e-12);
/// assert_eq!(v.shape(), &[2, 2]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn eigh<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    // Shape errors come from the op.
    let sym = crate::common::hermitian_part(a)?;
    let packed = Tensor::apply_family_op::<crate::Linalg>(Arc::new(Eigh), &[&sym])?;
    let [w, v] = take("linalg.eigh", eigh_packing(a.dim(-1)?).unpack(&packed)?)?;
    Ok((real_values(w)?, v))
}

/// The singular value decomposition `A = U diag(S) Vh` of `a` `[..., m, n]`, with `k = min(m, n)`
/// singular values `S` `[..., k]` (descending, real). Reduced (`full_matrices = false`): `U`
/// `[..., m, k]`, `Vh` `[..., k, n]`; full: `U` `[..., m, m]`, `Vh` `[..., n, n]`.
///
/// Derivatives: those of the reduced SVD (and of the full one for square matrices, where both
/// agree). For a non-square full SVD, reverse mode follows PyTorch: the extra columns of `U` (rows
/// of `Vh`) are an arbitrary basis of the complement, so their cotangents are ignored; forward mode
/// is an error naming the op and the fix (use the reduced one). Singular vectors are defined up to sign (phase); repeated singular values (within
/// `k·ε·max S`) drop their gaps and singular values below that tolerance get `1/s = 0`, so
/// derivatives stay finite.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![3.0f64, 0.0, 0.0, 0.0, -2.0, 0.0], [2, 3], &CpuBackend::new())?;
/// let (u, s, vh) = nabla_linalg::svd(&a, false)?;
/// assert_eq!((u.shape(), vh.shape()), (&[2usize, 2][..], &[2usize, 3][..]));
/// let s = s.to_vec::<f64>()?;
/// assert!((s[0] - 3.0).abs() < 1e-12 && (s[1] - 2.0).abs() < 1e-12);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn svd<B: Backend>(
    a: &Tensor<B>,
    full_matrices: bool,
) -> Result<(Tensor<B>, Tensor<B>, Tensor<B>)> {
    let packed = Tensor::apply_family_op::<crate::Linalg>(Arc::new(Svd { full_matrices }), &[a])?;
    let (_, m, n) = split_shape(a.shape());
    let [u, s, vh] = take(
        "linalg.svd",
        svd_packing(m, n, full_matrices).unpack(&packed)?,
    )?;
    Ok((u, real_values(s)?, vh))
}

/// From this many singular values on, an eager `svdvals` that gradients flow back to computes the
/// full SVD once (see [`svdvals`]). Below it, a second decomposition in the rule costs less than the
/// full SVD rule's extra elementwise ops (one thread, f64: the two ways cross between 16 and 24).
const SHARED_SVD_FROM: usize = 24;

/// The singular values `[..., min(m, n)]` (descending, in the real dtype) of `a` `[..., m, n]`,
/// cheaper than [`svd`] when no derivative is taken.
///
/// Derivatives need the singular vectors (`ds = real(diag(Uᴴ dA V))`). An eager `a` of at least
/// 24 singular values that gradients flow back to therefore gets its values from [`svd`], whose
/// vectors the rules then reuse, rather than computing the decomposition twice (values now, vectors
/// in the rule; 1.3x faster at 256 x 256). A traced `a` keeps the values-only op, whose rules
/// compute the vectors: when a program uses only the derivative, the compiler drops the
/// values-only forward.
pub fn svdvals<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    let large = matches!(a.shape(), [.., m, n] if (*m).min(*n) >= SHARED_SVD_FROM);
    if large && a.requires_grad() && !a.backend().is_symbolic() {
        return Ok(svd(a, false)?.1);
    }
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(SvdVals), &[a])
}

/// The matrix exponential `exp(A) = Σ Aᵏ/k!` of `a` `[..., n, n]` (Padé approximant with scaling and
/// squaring). Its derivative along `E` is the top-right block of `exp([[A, E], [0, A]])`, computed
/// with this op, so derivatives of every order exist; the reverse rule applies the same to `Aᵀ`.
/// A result that overflows is an error naming the matrix of the batch.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![0.0f64, 1.0, 0.0, 0.0], [2, 2], &CpuBackend::new())?;
/// // A is nilpotent: exp(A) = I + A.
/// assert_eq!(nabla_linalg::matrix_exp(&a)?.to_vec::<f64>()?, vec![1.0, 1.0, 0.0, 1.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn matrix_exp<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(MatrixExp), &[a])
}

/// The eigenvalues `[..., n]` of general (not necessarily symmetric) matrices `a` `[..., n, n]`,
/// complex (`complex64` for `f32`/`complex64` input, `complex128` for `f64`/`complex128`).
///
/// Order: as faer's Schur decomposition produces them (not sorted, like NumPy and LAPACK's `geev`);
/// for real input, complex conjugate pairs are adjacent. Sort them to compare with other libraries.
/// Derivatives (forward `dλ = diag(V⁻¹ dA V)`, reverse `V⁻ᵀ diag(g) Vᵀ`, its real part for real
/// input; `V` the right eigenvectors from [`eig`]) exist to any order for distinct eigenvalues.
pub fn eigvals<B: Backend>(a: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(EigVals), &[a])
}

/// Eigenvalues `w` `[..., n]` and right eigenvectors `V` `[..., n, n]` (columns, unit 2-norm,
/// arbitrary phase) of general matrices `a` `[..., n, n]`: `A V = V diag(w)`, both complex
/// (`complex64` for `f32`/`complex64` input, `complex128` otherwise). The eigenvalues are in the
/// order of [`eigvals`].
///
/// Derivatives, to any order, are PyTorch's: with `M = V⁻¹ dA V` and `Fᵢⱼ = 1/(λⱼ − λᵢ)`,
/// `dλ = diag(M)` and `dV = V (F ⊙ M)` corrected to keep the columns at unit norm. The phase of each
/// column is arbitrary, so only functions that do not depend on it (`|V|`, `V diag(c) V⁻¹`, ...)
/// have meaningful derivatives; repeated eigenvalues drop their `1/gap` terms.
pub fn eig<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    let packed = Tensor::apply_family_op::<crate::Linalg>(Arc::new(Eig), &[a])?;
    let [w, v] = take("linalg.eig", eigh_packing(a.dim(-1)?).unpack(&packed)?)?;
    Ok((w, v))
}

/// The pseudo-inverse `A⁺ = V diag(s⁺) Uᴴ` of `a` `[..., m, n]` (`[..., n, m]`), from the reduced
/// SVD, so its derivatives come from [`svd`]'s rules. Singular values `s ≤ rcond · max(s)` count as
/// zero (`s⁺ = 0`); the default `rcond` is JAX's and NumPy's `10 · max(m, n) · ε` (`ε` the dtype's
/// machine epsilon). The cutoff itself is not differentiated.
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// let a = Tensor::from_vec(vec![2.0f64, 0.0, 0.0, 0.0], [2, 2], &CpuBackend::new())?;
/// assert_eq!(nabla_linalg::pinv(&a, None)?.to_vec::<f64>()?, vec![0.5, 0.0, 0.0, 0.0]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn pinv<B: Backend>(a: &Tensor<B>, rcond: Option<f64>) -> Result<Tensor<B>> {
    let (u, s, vh) = svd(a, false)?;
    let (_, m, n) = split_shape(a.shape());
    let eps = if a.dtype().real() == DType::F32 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let rcond = rcond.unwrap_or(10.0 * m.max(n) as f64 * eps);
    if !(rcond.is_finite() && rcond >= 0.0) {
        return Err(Error::invalid(
            "linalg.pinv",
            format!("rcond must be finite and non-negative, got {rcond}"),
        ));
    }
    let cutoff = if s.dim(-1)? == 0 {
        // No singular values (a zero-size matrix): the result is empty, any cutoff will do.
        s.sum(&[-1], true)?
    } else {
        s.max(&[-1], true)?.mul(rcond)?
    };
    let keep = s.gt(&cutoff)?;
    let s_inv = keep
        .where_(keep.where_(&s, 1.0)?.recip()?, 0.0)?
        .cast(a.dtype())?;
    crate::common::h(&vh)?
        .mul(&s_inv.unsqueeze(-2)?)?
        .matmul_full(&crate::common::h(&u)?)
}

/// Which matrix norm [`matrix_norm`] computes (NumPy's `ord`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NormOrd {
    /// Frobenius: `sqrt(Σ |aᵢⱼ|²)` (`"fro"`).
    Fro,
    /// Nuclear: the sum of the singular values (`"nuc"`).
    Nuc,
    /// Spectral: the largest singular value (`2`).
    Two,
    /// The smallest singular value (`-2`).
    NegTwo,
    /// The largest absolute column sum (`1`).
    One,
    /// The smallest absolute column sum (`-1`).
    NegOne,
    /// The largest absolute row sum (`inf`).
    Inf,
    /// The smallest absolute row sum (`-inf`).
    NegInf,
}

impl FromStr for NormOrd {
    type Err = Error;

    /// Parses NumPy's spellings: `fro`, `nuc`, `2`, `-2`, `1`, `-1`, `inf`, `-inf`.
    fn from_str(s: &str) -> Result<Self> {
        Ok(match s {
            "fro" => NormOrd::Fro,
            "nuc" => NormOrd::Nuc,
            "2" => NormOrd::Two,
            "-2" => NormOrd::NegTwo,
            "1" => NormOrd::One,
            "-1" => NormOrd::NegOne,
            "inf" => NormOrd::Inf,
            "-inf" => NormOrd::NegInf,
            other => {
                return Err(Error::invalid(
                    "linalg.matrix_norm",
                    format!("unknown ord {other:?}; expected fro, nuc, 2, -2, 1, -1, inf or -inf"),
                ));
            }
        })
    }
}

/// The matrix norm of `a` `[..., m, n]`: `[...]`, real (the real dtype for complex input). Composed
/// of core ops and [`svdvals`], so it is differentiable wherever its pieces are (the Frobenius norm
/// of a zero matrix, like `sqrt` at 0, is not; ties in max/min share the gradient).
///
/// ```
/// # use nabla_tensor::Tensor; use nabla_cpu::CpuBackend;
/// use nabla_linalg::NormOrd;
/// let a = Tensor::from_vec(vec![1.0f64, -2.0, 3.0, 4.0], [2, 2], &CpuBackend::new())?;
/// assert_eq!(nabla_linalg::matrix_norm(&a, NormOrd::One)?.item::<f64>()?, 6.0);
/// assert_eq!(nabla_linalg::matrix_norm(&a, "inf".parse()?)?.item::<f64>()?, 7.0);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn matrix_norm<B: Backend>(a: &Tensor<B>, ord: NormOrd) -> Result<Tensor<B>> {
    if a.rank() < 2 {
        return Err(Error::invalid(
            "linalg.matrix_norm",
            format!("expects matrices of shape [..., m, n], got {:?}", a.shape()),
        ));
    }
    let singular = |largest: bool| -> Result<Tensor<B>> {
        let s = svdvals(a)?;
        let k = s.dim(-1)?;
        if k == 0 {
            return Err(Error::invalid(
                "linalg.matrix_norm",
                format!("ord 2 and -2 need a non-empty matrix, got {:?}", a.shape()),
            ));
        }
        s.narrow(-1, if largest { 0 } else { k - 1 }, 1)?
            .squeeze(-1)
    };
    match ord {
        NormOrd::Fro => a.abs()?.square()?.sum(&[-2, -1], false)?.sqrt(),
        NormOrd::Nuc => svdvals(a)?.sum(&[-1], false),
        NormOrd::Two => singular(true),
        NormOrd::NegTwo => singular(false),
        NormOrd::One => a.abs()?.sum(&[-2], false)?.max(&[-1], false),
        NormOrd::NegOne => a.abs()?.sum(&[-2], false)?.min(&[-1], false),
        NormOrd::Inf => a.abs()?.sum(&[-1], false)?.max(&[-1], false),
        NormOrd::NegInf => a.abs()?.sum(&[-1], false)?.min(&[-1], false),
    }
}
