//! Forward and reverse rules of the family, written with the family's own ops and core tensor ops so
//! that derivatives of every order exist (the rule of a rule is looked up in the same context).
//!
//! With `X = A⁻¹B`, `Y = A⁻¹` and `l = log|det A|` (`ᵀ` swaps the last two axes):
//!
//! | op | forward (tangent) | reverse (cotangent) |
//! |---|---|---|
//! | solve | `dX = A⁻¹(dB - dA X)` | `gB = A⁻ᵀ G`, `gA = -gB Xᵀ` |
//! | inv | `dY = -Y dA Y` | `gA = -Yᵀ G Yᵀ` |
//! | logabsdet | `dl = Re Σ (A⁻ᵀ ⊙ dA)` | `gA = g A⁻ᵀ` |
//!
//! For complex types the rules follow JAX's convention: the reverse rule is the linear transpose of the
//! forward rule under the bilinear pairing `Σ uᵢvᵢ` (plain `ᵀ`, no conjugation).

use crate::ops::{INVERSE, LOGABSDET, SOLVE};
use crate::{inv, solve};
use nabla_core::{Backend, Result};
use nabla_tensor::{ExtensionRules, RuleArgs, Tensor};

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

fn solve_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (a, x) = (&args.inputs[0], args.output);
    let gb = solve(&a.t()?, g)?;
    let ga = if needs[0] {
        Some(gb.matmul(&x.t()?)?.neg()?)
    } else {
        None
    };
    Ok(vec![ga, Some(gb)])
}

fn solve_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let (a, x) = (&args.inputs[0], args.output);
    let from_a = t[0].as_ref().map(|da| da.matmul(x)?.neg()).transpose()?;
    match add_opt(from_a, t[1].clone())? {
        Some(rhs) => Ok(Some(solve(a, &rhs)?)),
        None => Ok(None),
    }
}

fn inverse_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let yt = args.output.t()?;
    Ok(vec![Some(yt.matmul(g)?.matmul(&yt)?.neg()?)])
}

fn inverse_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let y = args.output;
    t[0].as_ref()
        .map(|da| y.matmul(da)?.matmul(y)?.neg())
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

/// The forward and reverse rules of `linalg.solve`, `linalg.inv` and `linalg.logabsdet`, for
/// registration with [`nabla_tensor::AdContextBuilder::with_extension_rules`].
pub fn rules<B: Backend>() -> ExtensionRules<B> {
    let core = ExtensionRules::new()
        .reverse(SOLVE, solve_reverse::<B>)
        .forward(SOLVE, solve_forward::<B>)
        .reverse(INVERSE, inverse_reverse::<B>)
        .forward(INVERSE, inverse_forward::<B>)
        .reverse(LOGABSDET, logabsdet_reverse::<B>)
        .forward(LOGABSDET, logabsdet_forward::<B>);
    crate::spectral::register(crate::factor::register(core))
}
