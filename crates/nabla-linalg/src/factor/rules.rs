//! Forward and reverse rules of the factorisation ops, written with differentiable tensor ops and the
//! family's own ops (so derivatives of every order exist). The formulas are in the module doc of
//! `factor`. Complex types follow JAX's convention: the reverse rule is the linear transpose of the
//! forward rule under the bilinear pairing `Σ uᵢvᵢ`.

use super::ops::{Qr, TriangularSolve, lu_packing, qr_packing, slogdet_packing};

const LOWER: TriangularSolve = TriangularSolve::LOWER;
const UPPER: TriangularSolve = TriangularSolve::UPPER;
use crate::common::FullProduct;
use crate::common::{batch_shape, h, masked};
use crate::inv;
use crate::rules::{add_opt, as_matrices};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{RuleArgs, Tensor};
use std::sync::Arc;

/// Rule outputs: one optional tensor per input.
type Grads<B> = Result<Vec<Option<Tensor<B>>>>;

/// `op(T)⁻¹ B` for the triangle `T` of `A` that `op` names (`op(T) = Tᵀ` when `op.transpose`, read
/// in place); the family's op, so it has rules itself.
pub(crate) fn tri_solve<B: Backend>(
    a: &Tensor<B>,
    b: &Tensor<B>,
    op: TriangularSolve,
) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(op), &[a, b])
}

/// `B op(T)⁻¹` for the triangle `T` of `A`: `(op(T)⁻ᵀ Bᵀ)ᵀ`.
pub(crate) fn tri_solve_right<B: Backend>(
    a: &Tensor<B>,
    b: &Tensor<B>,
    op: TriangularSolve,
) -> Result<Tensor<B>> {
    tri_solve(a, &b.t()?, op.transposed())?.t()
}

/// The entries of a triangular solve's `A` that the op reads.
fn read_part<B: Backend>(x: &Tensor<B>, lower: bool, unit: bool) -> Result<Tensor<B>> {
    let k = isize::from(unit);
    if lower { x.tril(-k) } else { x.triu(k) }
}

/// `Φ(X)`: the lower triangle with the diagonal halved.
fn phi<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    masked(x, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Greater => 1.0,
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Less => 0.0,
    })
}

/// The op's parameters, read back from the rule's arguments.
fn params<'a, T: 'static, B: Backend>(
    args: &'a RuleArgs<'_, B>,
    name: &'static str,
) -> Result<&'a T> {
    args.op
        .as_any()
        .downcast_ref::<T>()
        .ok_or_else(|| Error::invalid(name, "rule called with another op"))
}

// --- cholesky: A = L Lᴴ ---

pub(crate) fn cholesky_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else { return Ok(None) };
    let l = args.output;
    // L⁻¹ dA L⁻ᴴ = (L⁻¹ (L⁻¹ dA)ᴴ)ᴴ
    let x = tri_solve(l, da, LOWER)?;
    let s = h(&tri_solve(l, &h(&x)?, LOWER)?)?;
    Ok(Some(l.matmul_full(&phi(&s)?)?))
}

pub(crate) fn cholesky_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    let l = args.output;
    // gA = L⁻ᵀ Φ(Lᵀ G) conj(L)⁻¹
    let p = phi(&l.t()?.matmul_full(g)?)?;
    let y = tri_solve(l, &p, LOWER.transposed())?;
    Ok(vec![Some(tri_solve_right(&l.conj()?, &y, LOWER)?)])
}

// --- triangular_solve: X = A⁻¹ B ---

pub(crate) fn triangular_solve_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op = params::<TriangularSolve, B>(args, "linalg.triangular_solve")?;
    let (a, x) = (&args.inputs[0], args.output);
    let from_a = t[0]
        .as_ref()
        .map(|da| {
            let dt = read_part(da, op.lower, op.unit_diagonal)?;
            let dt = if op.transpose { dt.t()? } else { dt };
            dt.matmul_full(x)?.neg()
        })
        .transpose()?;
    add_opt(from_a, t[1].clone())?
        .map(|rhs| tri_solve(a, &rhs, *op))
        .transpose()
}

pub(crate) fn triangular_solve_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Grads<B> {
    let op = params::<TriangularSolve, B>(args, "linalg.triangular_solve")?;
    let (a, x) = (&args.inputs[0], args.output);
    let gb = tri_solve(a, g, op.transposed())?;
    let ga = if needs[0] {
        // The cotangent of op(T) is -gB Xᵀ; that of T is its transpose when op(T) = Tᵀ.
        let full = if op.transpose {
            x.matmul_full(&gb.t()?)?.neg()?
        } else {
            gb.matmul_full(&x.t()?)?.neg()?
        };
        Some(read_part(&full, op.lower, op.unit_diagonal)?)
    } else {
        None
    };
    Ok(vec![ga, Some(gb)])
}

// --- det, slogdet: tr(A⁻¹ dA) = Σ A⁻ᵀ ⊙ dA ---

/// `tr(A⁻¹ dA)` per matrix of the batch.
fn trace_inv_times<B: Backend>(a: &Tensor<B>, da: &Tensor<B>) -> Result<Tensor<B>> {
    inv(a)?.t()?.mul(da)?.sum(&[-2, -1], false)
}

pub(crate) fn det_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else { return Ok(None) };
    Ok(Some(
        args.output.mul(&trace_inv_times(&args.inputs[0], da)?)?,
    ))
}

pub(crate) fn det_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    let scale = as_matrices(&g.mul(args.output)?)?;
    Ok(vec![Some(inv(&args.inputs[0])?.t()?.mul(&scale)?)])
}

/// `x - Re x` in `x`'s dtype (zero for real types).
fn imaginary_part<B: Backend>(x: &Tensor<B>) -> Result<Option<Tensor<B>>> {
    if x.dtype().is_complex() {
        Ok(Some(x.sub(&x.real()?.cast(x.dtype())?)?))
    } else {
        Ok(None)
    }
}

pub(crate) fn slogdet_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else { return Ok(None) };
    let a = &args.inputs[0];
    let parts = slogdet_packing().unpack(args.output)?;
    let tr = trace_inv_times(a, da)?;
    // d log|det| = Re tr(A⁻¹ dA); d sign = sign · i Im tr(A⁻¹ dA) (zero for real A).
    let (dsign, dlog) = match imaginary_part(&tr)? {
        Some(im) => (Some(parts[0].mul(&im)?), tr.sub(&im)?),
        None => (None, tr),
    };
    slogdet_packing().pack(&[dsign, Some(dlog)], batch_shape(a))
}

pub(crate) fn slogdet_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    let a = &args.inputs[0];
    let gs = slogdet_packing().unpack(g)?;
    let coeff = if a.dtype().is_complex() {
        // Transpose of t ↦ (sign (t - Re t), Re t): c = s gs + Re(gl - s gs).
        let sg = gs[0].mul(&slogdet_packing().unpack(args.output)?[0])?;
        sg.add(&gs[1].sub(&sg)?.real()?.cast(a.dtype())?)?
    } else {
        gs[1].clone()
    };
    Ok(vec![Some(inv(a)?.t()?.mul(&as_matrices(&coeff)?)?)])
}

// --- lu: A = P L U (any shape) ---

/// What the LU rules need of a node: the packing, `P`, and `L` and `U` completed to square unit
/// lower `L̃` (`m x m`, identity columns appended) and upper `Ũ` (`n x n`, identity rows appended),
/// as JAX's rule does for non-square matrices; for a square matrix they are `L` and `U`.
struct LuParts<B: Backend> {
    packing: crate::common::Packing,
    p: Tensor<B>,
    l: Tensor<B>,
    u: Tensor<B>,
    k: usize,
}

fn lu_parts<B: Backend>(args: &RuleArgs<'_, B>) -> Result<LuParts<B>> {
    let a = &args.inputs[0];
    let (m, n) = match a.shape() {
        [.., m, n] => (*m, *n),
        _ => return Err(Error::invalid("linalg.lu", "expects matrices")),
    };
    let k = m.min(n);
    let packing = lu_packing(m, n);
    let [p, l, u] = <[Tensor<B>; 3]>::try_from(packing.unpack(args.output)?)
        .map_err(|_| Error::invalid("linalg.lu", "expected three results"))?;
    let batch = batch_shape(a).to_vec();
    let identity_part =
        |rows: usize, cols: usize, axis: isize, start: usize| -> Result<Tensor<B>> {
            let eye = Tensor::eye(rows.max(cols), a.dtype(), a.backend())?;
            let part = eye.narrow(axis, start, if axis == -1 { cols } else { rows })?;
            let mut shape = batch.clone();
            shape.extend_from_slice(part.shape());
            part.broadcast_to(shape)
        };
    let l = if m > k {
        Tensor::cat(&[&l, &identity_part(m, m - k, -1, k)?], -1)?
    } else {
        l
    };
    let u = if n > k {
        Tensor::cat(&[&u, &identity_part(n - k, n, -2, k)?], -2)?
    } else {
        u
    };
    Ok(LuParts {
        packing,
        p,
        l,
        u,
        k,
    })
}

/// The row each row of the permutation matrix `p` picks, `[..., m, 1]` (`I64`): `(P X)ᵢ = X_{perm i}`.
fn permutation_rows<B: Backend>(p: &Tensor<B>) -> Result<Tensor<B>> {
    let p = if p.dtype().is_complex() {
        p.real()?
    } else {
        p.clone()
    };
    p.argmax(-1, true)
}

/// `P X` for a permutation matrix `P`, as a gather of `X`'s rows: `O(m n)` instead of a product's
/// `O(m² n)` (at 512 x 512 the product cost more than the rest of the rule's products together).
fn permute_rows<B: Backend>(p: &Tensor<B>, x: &Tensor<B>) -> Result<Tensor<B>> {
    if p.dim(-1)? == 0 {
        // No rows to permute (and no maximum of an empty row to take).
        return Ok(x.clone());
    }
    x.gather(-2, &permutation_rows(p)?)
}

pub(crate) fn lu_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else { return Ok(None) };
    let LuParts {
        packing,
        p,
        l,
        u,
        k,
    } = lu_parts(args)?;
    // F = L̃⁻¹ Pᵀ dA Ũ⁻¹ (m x n); dL = (L̃ tril(F, -1))[:, :k], dU = (triu(F) Ũ)[:k, :].
    let y = tri_solve(&l, &permute_rows(&p.t()?, da)?, LOWER.unit())?;
    let f = tri_solve_right(&u, &y, UPPER)?;
    let dl = l.matmul_full(&f.tril(-1)?)?.narrow(-1, 0, k)?;
    let du = f.triu(0)?.matmul_full(&u)?.narrow(-2, 0, k)?;
    packing.pack(&[None, Some(dl), Some(du)], batch_shape(&args.inputs[0]))
}

pub(crate) fn lu_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    let LuParts {
        packing,
        p,
        l,
        u,
        k,
    } = lu_parts(args)?;
    let gs = packing.unpack(g)?;
    let (m, n) = (l.dim(-1)?, u.dim(-1)?);
    // The cotangents of the completed products: G_L padded with zero columns, G_U with zero rows.
    let pad = |x: &Tensor<B>, axis: usize, extra: usize| -> Result<Tensor<B>> {
        let mut pads = vec![(0, 0); x.rank()];
        pads[x.rank() - axis] = (0, extra);
        x.pad(&pads, 0.0)
    };
    let gl = pad(&gs[1], 1, n - k)?;
    let gu = pad(&gs[2], 2, m - k)?;
    // gA = P L̃⁻ᵀ (tril(L̃ᵀ G_L, -1) + triu(G_U Ũᵀ)) Ũ⁻ᵀ
    let mid = l
        .t()?
        .matmul_full(&gl)?
        .tril(-1)?
        .add(&gu.matmul_full(&u.t()?)?.triu(0)?)?;
    let z = tri_solve(&l, &mid, LOWER.unit().transposed())?;
    let w = tri_solve_right(&u, &z, UPPER.transposed())?;
    Ok(vec![Some(permute_rows(&p, &w)?)])
}

// --- qr: A = Q R (m >= n, reduced) ---

/// The packing of a differentiable QR, or an error when its derivative is not unique.
fn qr_rule_packing<B: Backend>(args: &RuleArgs<'_, B>) -> Result<crate::common::Packing> {
    let op = params::<Qr, B>(args, "linalg.qr")?;
    let shape = args.inputs[0].shape();
    let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
    if m < n || (op.full && m != n) {
        return Err(Error::invalid(
            "linalg.qr",
            format!(
                "derivatives need m >= n and the reduced factorisation (or a square matrix), got \
                 shape {shape:?} with full = {}",
                op.full
            ),
        ));
    }
    Ok(qr_packing(m, n, op.full))
}

/// `base + I ⊙ (x - Re x)` (`base` for real types).
fn with_imaginary_diagonal<B: Backend>(base: Tensor<B>, x: &Tensor<B>) -> Result<Tensor<B>> {
    match imaginary_part(x)? {
        Some(im) => base.add(&masked(&im, |i, j| f64::from(u8::from(i == j)))?),
        None => Ok(base),
    }
}

/// `Ω(C) = tril(C, -1) - tril(C, -1)ᴴ + I ⊙ (C - Re C)` (the last term only for complex types).
fn qr_omega<B: Backend>(c: &Tensor<B>) -> Result<Tensor<B>> {
    let low = c.tril(-1)?;
    let skew = low.sub(&h(&low)?)?;
    with_imaginary_diagonal(skew, c)
}

/// The transpose of `Ω`: `tril(M - Mᴴ, -1) + I ⊙ (M - Re M)`.
fn qr_omega_transpose<B: Backend>(m: &Tensor<B>) -> Result<Tensor<B>> {
    let low = m.sub(&h(m)?)?.tril(-1)?;
    with_imaginary_diagonal(low, m)
}

pub(crate) fn qr_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else { return Ok(None) };
    let packing = qr_rule_packing(args)?;
    let out = packing.unpack(args.output)?;
    let (q, r) = (&out[0], &out[1]);
    // S = dA R⁻¹, C = Qᴴ S; dQ = Q (Ω - C) + S, dR = (C - Ω) R.
    let s = tri_solve_right(r, da, UPPER)?;
    let c = h(q)?.matmul_full(&s)?;
    let omega = qr_omega(&c)?;
    let dq = q.matmul_full(&omega.sub(&c)?)?.add(&s)?;
    let dr = c.sub(&omega)?.matmul_full(r)?;
    packing.pack(&[Some(dq), Some(dr)], batch_shape(&args.inputs[0]))
}

pub(crate) fn qr_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Grads<B> {
    let packing = qr_rule_packing(args)?;
    let out = packing.unpack(args.output)?;
    let gs = packing.unpack(g)?;
    let (q, r) = (&out[0], &out[1]);
    // M = Qᵀ G_Q - G_R Rᵀ; G_C = tril(M - Mᴴ, -1) + I ⊙ (M - Re M) - M;
    // G_S = conj(Q) G_C + G_Q; gA = G_S R⁻ᵀ.
    let m = q
        .t()?
        .matmul_full(&gs[0])?
        .sub(&gs[1].matmul_full(&r.t()?)?)?;
    let gc = qr_omega_transpose(&m)?.sub(&m)?;
    let g_s = q.conj()?.matmul_full(&gc)?.add(&gs[0])?;
    Ok(vec![Some(tri_solve_right(r, &g_s, UPPER.transposed())?)])
}
