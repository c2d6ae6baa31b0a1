//! Forward and reverse rules of eigh, svd, svdvals, matrix_exp and eigvals, written with
//! differentiable tensor ops and the family's own ops, so derivatives of every order exist (eigvals:
//! first order; its rules use `linalg.eig`, which has no rules yet).
//!
//! Complex convention (JAX's): the forward rule is the usual derivative, with `ᴴ` where the math has
//! it; the reverse rule is the *linear* transpose of the forward rule under the pairing `Re Σ uᵢvᵢ`
//! (the bilinear `Σ uᵢvᵢ` for the holomorphic matrix_exp and eigvals): plain `ᵀ` from transposition,
//! `conj` only where the forward rule conjugates (the transpose of `conj` is `conj`, of `real` the
//! embedding). Below, `X̄ = conj(X)`; for real types every `conj` is the identity.
//!
//! Degenerate spectra: the gap matrices `1/(λⱼ − λᵢ)` (eigh) and `1/(sⱼ² − sᵢ²)` (svd) are set to 0
//! where `|λⱼ − λᵢ| ≤ tol = n·ε·max|λ|` (`ε` the dtype's machine epsilon, `n` the number of values),
//! and `1/s` to 0 where `s ≤ tol`; the derivatives stay finite, and are exact for functions that do
//! not depend on the choice of basis inside a degenerate subspace.

use super::ops::{
    EIG, EIGH, EIGVALS, MATRIX_EXP, SVD, SVDVALS, Svd, eigh_packing, split_shape, svd_packing,
};
use crate::common::FullProduct;
use crate::common::{Packing, h, hermitian_part};
use nabla_core::{Backend, DType, Error, Result};
use nabla_tensor::{ExtensionRules, RuleArgs, Tensor};

type Grads<B> = Result<Vec<Option<Tensor<B>>>>;

/// `x` conjugated if it is complex (no op for real types).
fn conj<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    if x.dtype().is_complex() {
        x.conj()
    } else {
        Ok(x.clone())
    }
}

/// `real(x)` kept in `x`'s dtype (a complex `x` gets a zero imaginary part).
fn real_part<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    if x.dtype().is_complex() {
        x.real()?.cast(x.dtype())
    } else {
        Ok(x.clone())
    }
}

/// `diag(v)`: `[..., n]` to `[..., n, n]`.
fn diag_embed<B: Backend>(v: &Tensor<B>) -> Result<Tensor<B>> {
    v.diag_embed(0)
}

/// The diagonal of a batch of square matrices: `[..., n, n]` to `[..., n]`.
fn diagonal<B: Backend>(m: &Tensor<B>) -> Result<Tensor<B>> {
    m.diagonal(0, -2, -1)
}

/// The machine epsilon of a (real or complex) float dtype.
fn machine_eps(dtype: DType) -> f64 {
    match dtype.real() {
        DType::F32 => f32::EPSILON as f64,
        _ => f64::EPSILON,
    }
}

/// `where(mask, 1 / x, 0)`, with no infinity on either branch (so no NaN in its derivative).
fn masked_recip<B: Backend>(mask: &Tensor<B>, x: &Tensor<B>) -> Result<Tensor<B>> {
    mask.where_(mask.where_(x, 1.0)?.recip()?, 0.0)
}

/// The degeneracy tolerance `n·ε·max|λ|` of a batch of spectra `[..., n]`, shaped `[..., 1]`.
fn tolerance<B: Backend>(values: &Tensor<B>) -> Result<Tensor<B>> {
    let n = values.dim(-1)?;
    let magnitude = values.abs()?;
    if n == 0 {
        // An empty spectrum (a zero-size matrix) has nothing to compare: zeros of the right shape.
        return magnitude.sum(&[-1], true);
    }
    magnitude
        .max(&[-1], true)?
        .mul(n as f64 * machine_eps(values.dtype()))
}

/// The gap matrix `F` of a spectrum `w` `[..., n]`: `Fᵢⱼ = 1 / ((wⱼ − wᵢ)(wⱼ + wᵢ))` when `squares`
/// (SVD), else `1 / (wⱼ − wᵢ)` (eigh); 0 where `|wⱼ − wᵢ| ≤ tol` (the diagonal included).
fn gaps<B: Backend>(w: &Tensor<B>, squares: bool) -> Result<Tensor<B>> {
    let (row, col) = (w.unsqueeze(-2)?, w.unsqueeze(-1)?);
    let diff = row.sub(&col)?;
    let tol = tolerance(w)?.unsqueeze(-1)?;
    let mask = diff.abs()?.gt(&tol)?;
    let den = if squares {
        diff.mul(&row.add(&col)?)?
    } else {
        diff
    };
    masked_recip(&mask, &den)
}

/// `1/s` for singular values `[..., k]`, 0 where `s ≤ tol`.
fn safe_inverse<B: Backend>(s: &Tensor<B>) -> Result<Tensor<B>> {
    let mask = s.abs()?.gt(&tolerance(s)?)?;
    masked_recip(&mask, s)
}

/// The batch dims of the op's input.
fn batch_of<'a, B: Backend>(args: &'a RuleArgs<'_, B>) -> &'a [usize] {
    split_shape(args.inputs[0].shape()).0
}

/// `w`, `V` and the packing of an eigh node.
fn eigh_parts<B: Backend>(args: &RuleArgs<'_, B>) -> Result<(Packing, Tensor<B>, Tensor<B>)> {
    spectrum_parts(args, EIGH)
}

/// The packing and the eigenvalues and eigenvectors `[w, V]` of an eigh or eig node.
fn spectrum_parts<B: Backend>(
    args: &RuleArgs<'_, B>,
    op: &'static str,
) -> Result<(Packing, Tensor<B>, Tensor<B>)> {
    let n = args.inputs[0].dim(-1)?;
    let packing = eigh_packing(n);
    let mut parts = packing.unpack(args.output)?.into_iter();
    match (parts.next(), parts.next()) {
        (Some(w), Some(v)) => Ok((packing, w, v)),
        _ => Err(Error::invalid(op, "the packed output lacks w or V")),
    }
}

/// `dw = real(diag(Vᴴ dA V))`, `dV = V (F ⊙ Vᴴ dA V)` with `dA` replaced by its Hermitian part.
fn eigh_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let (packing, w, v) = eigh_parts(args)?;
    let m = h(&v)?.matmul_full(&hermitian_part(da)?)?.matmul_full(&v)?;
    let dv = v.matmul_full(&gaps(&w, false)?.mul(&m)?)?;
    let dw = real_part(&diagonal(&m)?)?;
    packing.pack(&[Some(dw), Some(dv)], batch_of(args))
}

/// `gA = herm(V̄ (diag(real g_w) + F ⊙ Vᵀ g_V) Vᵀ)`.
fn eigh_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let (packing, w, v) = eigh_parts(args)?;
    let gs = packing.unpack(g)?;
    let vt = v.t()?;
    let inner =
        diag_embed(&real_part(&gs[0])?)?.add(&gaps(&w, false)?.mul(&vt.matmul_full(&gs[1])?)?)?;
    let ga = conj(&v)?.matmul_full(&inner)?.matmul_full(&vt)?;
    Ok(vec![Some(hermitian_part(&ga)?)])
}

/// What the SVD rules need of a node: the factors, the gap matrix and `1/s`.
struct SvdParts<B: Backend> {
    packing: Packing,
    m: usize,
    n: usize,
    u: Tensor<B>,
    s: Tensor<B>,
    vh: Tensor<B>,
    f: Tensor<B>,
    s_inv: Tensor<B>,
}

/// With `reverse`, the full SVD of a non-square matrix is reduced to its first `k` singular vectors
/// (PyTorch's rule: the extra ones are an arbitrary basis, their cotangents are ignored); in forward
/// mode it is an error, as in PyTorch.
fn svd_parts<B: Backend>(args: &RuleArgs<'_, B>, reverse: bool) -> Result<SvdParts<B>> {
    let full = args
        .op
        .as_any()
        .downcast_ref::<Svd>()
        .is_some_and(|op| op.full_matrices);
    let (_, m, n) = split_shape(args.inputs[0].shape());
    if full && m != n && !reverse {
        return Err(Error::autodiff(
            SVD,
            format!(
                "forward-mode derivatives of the full SVD of a non-square {m}x{n} matrix are not \
                 defined (the extra columns of U or rows of Vh are not unique); use svd(a, false) \
                 (reduced), whose derivatives exist"
            ),
        ));
    }
    let packing = svd_packing(m, n, full);
    let mut parts = packing.unpack(args.output)?.into_iter();
    let (Some(u), Some(s), Some(vh)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(Error::invalid(SVD, "the packed output lacks U, S or Vh"));
    };
    let k = m.min(n);
    let (u, vh) = (u.narrow(-1, 0, k)?, vh.narrow(-2, 0, k)?);
    Ok(SvdParts {
        packing,
        m,
        n,
        f: gaps(&s, true)?,
        s_inv: safe_inverse(&s)?,
        u,
        s,
        vh,
    })
}

/// JAX's SVD JVP: with `dS = Uᴴ dA V`, `ds = real(diag dS)`,
/// `dU = U (F ⊙ (dS S + S dSᴴ) + ½(dS − dSᴴ) ⊙ diag(1/s)) + (I − U Uᴴ) dA V S⁻¹` (last term when
/// m > n), `dV = V (F ⊙ (S dS + dSᴴ S)) + (I − V Vᴴ) dAᴴ U S⁻¹` (when n > m), `dVh = dVᴴ`.
fn svd_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let p = svd_parts(args, false)?;
    let k = p.m.min(p.n);
    let (s_row, s_col) = (p.s.unsqueeze(-2)?, p.s.unsqueeze(-1)?);
    let (uh, v) = (h(&p.u)?, h(&p.vh)?);
    let ds_mat = uh.matmul_full(da)?.matmul_full(&v)?;
    let ds = real_part(&diagonal(&ds_mat)?)?;
    let dss = ds_mat.mul(&s_row)?;
    let sds = s_col.mul(&ds_mat)?;
    let mut du_inner = p.f.mul(&dss.add(&h(&dss)?)?)?;
    if da.dtype().is_complex() {
        let skew = ds_mat.sub(&h(&ds_mat)?)?.mul(0.5)?;
        du_inner = du_inner.add(&skew.mul(&diag_embed(&p.s_inv)?)?)?;
    }
    let mut du = p.u.matmul_full(&du_inner)?;
    let mut dv = v.matmul_full(&p.f.mul(&sds.add(&h(&sds)?)?)?)?;
    let s_inv_row = p.s_inv.unsqueeze(-2)?;
    if p.m > k {
        let dav = da.matmul_full(&v)?;
        let outside = dav.sub(&p.u.matmul_full(&uh.matmul_full(&dav)?)?)?;
        du = du.add(&outside.mul(&s_inv_row)?)?;
    }
    if p.n > k {
        let dahu = h(da)?.matmul_full(&p.u)?;
        let outside = dahu.sub(&v.matmul_full(&p.vh.matmul_full(&dahu)?)?)?;
        dv = dv.add(&outside.mul(&s_inv_row)?)?;
    }
    p.packing
        .pack(&[Some(du), Some(ds), Some(h(&dv)?)], batch_of(args))
}

/// The linear transpose of [`svd_forward`]: with `P = F ⊙ Uᵀ g_U`, `Q = F ⊙ Vᵀ g_V` (`g_V = g_Vhᴴ`),
/// `gA = Ū (diag(g_s) + (P + Pᴴ) S + S (Q + Qᴴ)) Vᵀ` plus the terms of the complex diagonal and of the
/// rectangular complements.
fn svd_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let p = svd_parts(args, true)?;
    let k = p.m.min(p.n);
    let gs = p.packing.unpack(g)?;
    // A full SVD's extra singular vectors get no derivative (their cotangents are dropped).
    let (gu, gvh) = (gs[0].narrow(-1, 0, k)?, gs[2].narrow(-2, 0, k)?);
    let (gu, gsv, gvh) = (&gu, real_part(&gs[1])?, &gvh);
    let (s_row, s_col) = (p.s.unsqueeze(-2)?, p.s.unsqueeze(-1)?);
    let (uc, ut, vt) = (conj(&p.u)?, p.u.t()?, conj(&p.vh)?);
    let ut_gu = ut.matmul_full(gu)?;
    let pu = p.f.mul(&ut_gu)?;
    let pv = p.f.mul(&vt.matmul_full(&h(gvh)?)?)?;
    let mut gds = diag_embed(&gsv)?
        .add(&pu.add(&h(&pu)?)?.mul(&s_row)?)?
        .add(&s_col.mul(&pv.add(&h(&pv)?)?)?)?;
    if g.dtype().is_complex() {
        let r = ut_gu.mul(&diag_embed(&p.s_inv)?)?;
        gds = gds.add(&r.sub(&h(&r)?)?.mul(0.5)?)?;
    }
    let mut ga = uc.matmul_full(&gds)?.matmul_full(&vt)?;
    if p.m > k {
        let outside = gu.sub(&uc.matmul_full(&ut_gu)?)?;
        ga = ga.add(&outside.mul(&p.s_inv.unsqueeze(-2)?)?.matmul_full(&vt)?)?;
    }
    if p.n > k {
        let outside = gvh.sub(&gvh.matmul_full(&p.vh.t()?)?.matmul_full(&vt)?)?;
        ga = ga.add(&uc.matmul_full(&outside.mul(&p.s_inv.unsqueeze(-1)?)?)?)?;
    }
    Ok(vec![Some(ga)])
}

/// `U` and `Vh` of the reduced SVD of `a` (the singular vectors svdvals' rules need).
fn singular_vectors<B: Backend>(a: &Tensor<B>) -> Result<(Tensor<B>, Tensor<B>)> {
    let (u, _, vh) = super::api::svd(a, false)?;
    Ok((u, vh))
}

/// `ds = real(Σ_rows Ū ⊙ (dA V))` (the diagonal of `Uᴴ dA V` without forming it).
fn svdvals_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let (u, vh) = singular_vectors(&args.inputs[0])?;
    let ds = conj(&u)?
        .mul(&da.matmul_full(&h(&vh)?)?)?
        .sum(&[-2], false)?;
    Ok(Some(if ds.dtype().is_complex() {
        ds.real()?
    } else {
        ds
    }))
}

/// `gA = Ū diag(g) V̄h`.
fn svdvals_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let a = &args.inputs[0];
    let (u, vh) = singular_vectors(a)?;
    let g = g.cast(a.dtype())?.unsqueeze(-2)?;
    Ok(vec![Some(conj(&u)?.mul(&g)?.matmul_full(&conj(&vh)?)?)])
}

/// The top-right block of `exp([[X, E], [0, X]])`: the Fréchet derivative of `exp` at `X` along `E`.
fn frechet_exp<B: Backend>(x: &Tensor<B>, e: &Tensor<B>) -> Result<Tensor<B>> {
    let n = x.dim(-1)?;
    let zeros = Tensor::zeros(x.shape().to_vec(), x.dtype(), x.backend())?;
    let top = Tensor::cat(&[x, e], -1)?;
    let bottom = Tensor::cat(&[&zeros, x], -1)?;
    let block = Tensor::cat(&[&top, &bottom], -2)?;
    super::api::matrix_exp(&block)?
        .narrow(-2, 0, n)?
        .narrow(-1, n, n)
}

fn matrix_exp_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    t[0].as_ref()
        .map(|e| frechet_exp(&args.inputs[0], e))
        .transpose()
}

/// `gA = L(Aᵀ, G)`: the Fréchet derivative at the plain transpose.
fn matrix_exp_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    Ok(vec![Some(frechet_exp(&args.inputs[0].t()?, g)?)])
}

/// `dλ = diag(V⁻¹ dA V)` with `V` the right eigenvectors (JAX's rule; `dA` cast to complex).
fn eigvals_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let (_, v) = super::api::eig(&args.inputs[0])?;
    let da = da.cast(v.dtype())?;
    Ok(Some(diagonal(&crate::solve(&v, &da.matmul_full(&v)?)?)?))
}

/// `gA = V⁻ᵀ diag(g) Vᵀ`, its real part for real input (the transpose of the cast to complex).
fn eigvals_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let a = &args.inputs[0];
    let (_, v) = super::api::eig(a)?;
    let vt = v.t()?;
    let ga = crate::solve(&vt, &diag_embed(g)?.matmul_full(&vt)?)?;
    Ok(vec![Some(if a.dtype().is_complex() {
        ga
    } else {
        ga.real()?
    })])
}

/// `Fᵢⱼ = 1 / (λⱼ − λᵢ)` of a complex spectrum, 0 on the diagonal and where `|λⱼ − λᵢ| ≤ tol`.
fn complex_gaps<B: Backend>(w: &Tensor<B>) -> Result<Tensor<B>> {
    let diff = w.unsqueeze(-2)?.sub(&w.unsqueeze(-1)?)?;
    let tol = tolerance(w)?.unsqueeze(-1)?;
    masked_recip(&diff.abs()?.gt(&tol)?, &diff)
}

/// `dλ = diag(M)`, `dV = V (F ⊙ M) − V diag(Re diag(Vᴴ V (F ⊙ M)))` with `M = V⁻¹ dA V`: the
/// eigenvector tangent that keeps the columns at unit norm (their phase is not fixed, so only
/// phase-invariant functions of `V` have meaningful derivatives, as in PyTorch).
fn eig_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let (packing, w, v) = spectrum_parts(args, EIG)?;
    let m = crate::solve(&v, &da.cast(v.dtype())?.matmul_full(&v)?)?;
    let vy = v.matmul_full(&complex_gaps(&w)?.mul(&m)?)?;
    let norm_fix = real_part(&diagonal(&h(&v)?.matmul_full(&vy)?)?)?;
    let dv = vy.sub(&v.mul(&norm_fix.unsqueeze(-2)?)?)?;
    packing.pack(&[Some(diagonal(&m)?), Some(dv)], batch_of(args))
}

/// The transpose of [`eig_forward`]: `G_Y = Vᵀ G_V − (VᴴV)ᵀ diag(Re diag(Vᵀ G_V))`,
/// `G_M = diag(g_λ) + F ⊙ G_Y`, `gA = V⁻ᵀ G_M Vᵀ` (its real part for real input).
fn eig_reverse<B: Backend>(args: &RuleArgs<'_, B>, g: &Tensor<B>, _needs: &[bool]) -> Grads<B> {
    let a = &args.inputs[0];
    let (packing, w, v) = spectrum_parts(args, EIG)?;
    let gs = packing.unpack(&g.cast(v.dtype())?)?;
    let vt = v.t()?;
    let vt_gv = vt.matmul_full(&gs[1])?;
    let g_norm = real_part(&diagonal(&vt_gv)?)?.neg()?;
    let gram_t = h(&v)?.matmul_full(&v)?.t()?;
    let gy = vt_gv.add(&gram_t.matmul_full(&diag_embed(&g_norm)?)?)?;
    let gm = diag_embed(&gs[0])?.add(&complex_gaps(&w)?.mul(&gy)?)?;
    let ga = crate::solve(&vt, &gm.matmul_full(&vt)?)?;
    Ok(vec![Some(if a.dtype().is_complex() {
        ga
    } else {
        ga.real()?
    })])
}

/// Adds the rules of eigh, svd, svdvals, matrix_exp, eigvals and eig to `rules`.
pub(super) fn register<B: Backend>(rules: ExtensionRules<B>) -> ExtensionRules<B> {
    rules
        .forward(EIGH, eigh_forward::<B>)
        .reverse(EIGH, eigh_reverse::<B>)
        .forward(SVD, svd_forward::<B>)
        .reverse(SVD, svd_reverse::<B>)
        .forward(SVDVALS, svdvals_forward::<B>)
        .reverse(SVDVALS, svdvals_reverse::<B>)
        .forward(MATRIX_EXP, matrix_exp_forward::<B>)
        .reverse(MATRIX_EXP, matrix_exp_reverse::<B>)
        .forward(EIGVALS, eigvals_forward::<B>)
        .reverse(EIGVALS, eigvals_reverse::<B>)
        .forward(EIG, eig_forward::<B>)
        .reverse(EIG, eig_reverse::<B>)
}
