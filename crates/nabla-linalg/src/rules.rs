//! Forward and reverse rules of the family, written with the family's own ops and core tensor ops so
//! that derivatives of every order exist (the rule of a rule is looked up in the same context).
//!
//! With `X = A⁻¹B`, `Y = A⁻¹` and `l = log|det A|` (`ᵀ` swaps the last two axes):
//!
//! | op | forward (tangent) | reverse (cotangent) |
//! |---|---|---|
//! | solve | `dX = A⁻¹(dB - dA X)` | `gB = A⁻ᵀ G`, `gA = -gB Xᵀ` |
//! | lu_solve (`Y = op(A)⁻¹ B`) | `dY = op(A)⁻¹(dB - op(dA) Y)` | `gB = op(A)⁻ᵀ G`, `gA = -gB Yᵀ` (`-Y gBᵀ` for `op(A) = Aᵀ`) |
//! | inv | `dY = -Y dA Y` | `gA = -Yᵀ G Yᵀ` |
//! | logabsdet | `dl = Re Σ (A⁻ᵀ ⊙ dA)` | `gA = g A⁻ᵀ` |
//!
//! The solves in solve's rules (and in lu_solve's) are `linalg.lu_solve`s with the LU factors that
//! `linalg.solve` saved in its packed output: no rule factors `A` again, and since `lu_solve` has
//! rules itself, derivatives of every order exist (its result does not depend on the factors as
//! long as they are `A`'s, so they get no derivative).
//!
//! For complex types the rules follow JAX's convention: the reverse rule is the linear transpose of the
//! forward rule under the bilinear pairing `Σ uᵢvᵢ` (plain `ᵀ`, no conjugation).

use crate::common::FullProduct;
use crate::common::{Packing, batch_shape};
use crate::inv;
use crate::ops::{INVERSE, LOGABSDET, LU_SOLVE, LuSolve, SOLVE, solve_packing};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

/// `x` with two trailing unit axes, to broadcast a batch of scalars against a batch of matrices.
pub(crate) fn as_matrices<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.unsqueeze(-1)?.unsqueeze(-1)
}

/// `a + b`, where either may be absent (zero).
pub(crate) fn add_opt<B: Backend>(
    a: Option<Tensor<B>>,
    b: Option<Tensor<B>>,
) -> Result<Option<Tensor<B>>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(a.add(&b)?),
        (a, b) => a.or(b),
    })
}

/// `op(A)⁻¹ B` (`op(A) = Aᵀ` when `transpose`) from `A`'s factors saved by `linalg.solve`.
fn lu_solve<B: Backend>(
    a: &Tensor<B>,
    factors: &Tensor<B>,
    b: &Tensor<B>,
    transpose: bool,
) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<crate::Linalg>(Arc::new(LuSolve { transpose }), &[a, factors, b])
}

/// The packing of a solve's output, `X` and `A`'s factors (views of it).
fn solve_parts<B: Backend>(args: &RuleArgs<'_, B>) -> Result<(Packing, Tensor<B>, Tensor<B>)> {
    let packing = solve_packing(args.inputs[1].shape());
    let mut parts = packing.unpack(args.output)?.into_iter();
    match (parts.next(), parts.next()) {
        (Some(x), Some(factors)) => Ok((packing, x, factors)),
        _ => Err(Error::invalid(SOLVE, "expected X and the factors")),
    }
}

fn solve_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let a = &args.inputs[0];
    let (packing, x, factors) = solve_parts(args)?;
    let g = packing.unpack(g)?.remove(0);
    let gb = lu_solve(a, &factors, &g, true)?;
    let ga = if needs[0] {
        Some(gb.matmul_full(&x.t()?)?.neg()?)
    } else {
        None
    };
    Ok(vec![ga, Some(gb)])
}

fn solve_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let a = &args.inputs[0];
    let (packing, x, factors) = solve_parts(args)?;
    let from_a = t[0]
        .as_ref()
        .map(|da| da.matmul_full(&x)?.neg())
        .transpose()?;
    match add_opt(from_a, t[1].clone())? {
        Some(rhs) => {
            let dx = lu_solve(a, &factors, &rhs, false)?;
            packing.pack(&[Some(dx), None], batch_shape(a))
        }
        None => Ok(None),
    }
}

/// The parameters of a `linalg.lu_solve` rule's op.
fn lu_solve_op<B: Backend>(args: &RuleArgs<'_, B>) -> Result<LuSolve> {
    args.op
        .as_any()
        .downcast_ref::<LuSolve>()
        .copied()
        .ok_or_else(|| Error::invalid(LU_SOLVE, "rule called with another op"))
}

fn lu_solve_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let op = lu_solve_op(args)?;
    let (a, factors, y) = (&args.inputs[0], &args.inputs[1], args.output);
    let gb = lu_solve(a, factors, g, !op.transpose)?;
    let ga = match (needs[0], op.transpose) {
        (false, _) => None,
        (true, false) => Some(gb.matmul_full(&y.t()?)?.neg()?),
        (true, true) => Some(y.matmul_full(&gb.t()?)?.neg()?),
    };
    Ok(vec![ga, None, Some(gb)])
}

fn lu_solve_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let op = lu_solve_op(args)?;
    let (a, factors, y) = (&args.inputs[0], &args.inputs[1], args.output);
    let from_a = t[0]
        .as_ref()
        .map(|da| {
            let da = if op.transpose { da.t()? } else { da.clone() };
            da.matmul_full(y)?.neg()
        })
        .transpose()?;
    add_opt(from_a, t[2].clone())?
        .map(|rhs| lu_solve(a, factors, &rhs, op.transpose))
        .transpose()
}

fn inverse_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let yt = args.output.t()?;
    Ok(vec![Some(yt.matmul_full(g)?.matmul_full(&yt)?.neg()?)])
}

fn inverse_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let y = args.output;
    t[0].as_ref()
        .map(|da| y.matmul_full(da)?.matmul_full(y)?.neg())
        .transpose()
}

fn logabsdet_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let a = &args.inputs[0];
    let inv_t = inv(a)?.t()?;
    // For complex A the cotangent of the real output enters as a real number.
    let g = if a.dtype().is_complex() {
        g.cast(a.dtype())?
    } else {
        g.clone()
    };
    Ok(vec![Some(inv_t.mul(&as_matrices(&g)?)?)])
}

fn logabsdet_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let Some(da) = &t[0] else {
        return Ok(None);
    };
    let a = &args.inputs[0];
    let inv_t = inv(a)?.t()?;
    let dl = inv_t.mul(da)?.sum(&[-2, -1], false)?;
    // log|det A| is real: for complex A its tangent is the real part of tr(A⁻¹ dA).
    Ok(Some(if a.dtype().is_complex() {
        dl.real()?
    } else {
        dl
    }))
}

/// The linear-algebra extension family: every op of this crate is recorded with its rules bound, so
/// `backward`, `grad`, `jvp`, `hessian`, `jacrev` and every other transform differentiate it with no
/// setup, eager and traced.
#[derive(Clone, Copy, Debug, Default)]
pub struct Linalg;

impl ExtensionFamily for Linalg {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        rules()
    }
}

/// The forward and reverse rules of the family's ops (`linalg.solve`, `linalg.lu_solve`,
/// `linalg.inv`, `linalg.logabsdet` and the factorisation and spectral ops). They are bound to each op
/// when it is recorded ([`Linalg`]); this set is also a starting point for
/// [`nabla_tensor::AdContextBuilder::with_extension_rules`] overrides.
pub fn rules<B: Backend>() -> ExtensionRules<B> {
    let core = ExtensionRules::new()
        .reverse(SOLVE, solve_reverse::<B>)
        .forward(SOLVE, solve_forward::<B>)
        .reverse(LU_SOLVE, lu_solve_reverse::<B>)
        .forward(LU_SOLVE, lu_solve_forward::<B>)
        .reverse(INVERSE, inverse_reverse::<B>)
        .forward(INVERSE, inverse_forward::<B>)
        .reverse(LOGABSDET, logabsdet_reverse::<B>)
        .forward(LOGABSDET, logabsdet_forward::<B>);
    crate::spectral::register(crate::factor::register(core))
}
