//! Derivative rules of the fused row ops, in the family's own ops and differentiable tensor ops.
//!
//! Notation, per row of `D` elements: `⟨a, b⟩` sums over the row (kept as a size-1 axis), `mean(a)`
//! is `⟨a, 1⟩ / D`.
//! - Softmax `y = softmax(x)` has the symmetric Jacobian `diag(y) - y yᵀ`, so its forward and reverse
//!   rules are both `softmax_vjp(y, v) = y ⊙ (v - ⟨v, y⟩)`.
//! - `f = softmax_vjp(y, g)` is linear in `g` with the same symmetric matrix; in `y`,
//!   `∂f/∂y · ẏ = ẏ ⊙ (g - ⟨g, y⟩) - y ⟨g, ẏ⟩`, whose transpose maps `u` to
//!   `u ⊙ (g - ⟨g, y⟩) - ⟨u, y⟩ g`.
//! - Log-softmax `y = x - log Σ e^x` has the Jacobian `I - 1 (e^y)ᵀ`: its reverse rule is
//!   `log_softmax_vjp(y, g) = g - e^y Σ g`, its forward rule `log_softmax_jvp(y, t) = t - ⟨e^y, t⟩`,
//!   each linear in its second argument and the other's transpose. In `y`, the vjp's derivative
//!   `ẏ ↦ -e^y ⊙ ẏ Σ g` is diagonal (its own transpose), and the jvp's is `ẏ ↦ -⟨e^y ⊙ ẏ, t⟩`, whose
//!   transpose maps `u` to `-(Σ u) e^y ⊙ t`.
//! - Layer norm `y = x̂ = (x - mean(x)) r` with `r = (var(x) + eps)^(-1/2)` has the symmetric Jacobian
//!   `r P`, `P v = v - mean(v) - x̂ mean(v ⊙ x̂)`, so both its rules are `layer_norm_vjp(x, v) = r P v`.
//! - `f = layer_norm_vjp(x, g) = r P g` is linear in `g` (the same symmetric map). In `x`, with
//!   `a = mean(g ⊙ x̂)`, `δr = -r² mean(x̂ ⊙ δx)` and `δx̂ = r P δx`:
//!   `δf = δr P g - r a δx̂ - r x̂ mean(g ⊙ δx̂)`, whose transpose maps `u` to
//!   `-r² (mean(u ⊙ P g) x̂ + mean(u ⊙ x̂) P g) - r² a P u`.

use super::apply;
use crate::Tensor;
use crate::autograd::{ExtensionRules, RuleArgs};
use nabla_core::FastPathOp;
use nabla_core::fast_path::{RowKernel, RowOp};
use nabla_core::{Backend, Error, Result};

/// The family's rules.
pub(super) fn rules<B: Backend>() -> ExtensionRules<B> {
    ExtensionRules::new()
        .reverse("fused.softmax", |a, g, _| {
            Ok(vec![Some(apply_with(
                a,
                RowKernel::SoftmaxVjp,
                &[a.output, g],
            )?)])
        })
        .forward("fused.softmax", |a, t| {
            t[0].as_ref()
                .map(|t| apply_with(a, RowKernel::SoftmaxVjp, &[a.output, t]))
                .transpose()
        })
        .reverse("fused.softmax_vjp", softmax_vjp_reverse)
        .forward("fused.softmax_vjp", softmax_vjp_forward)
        .reverse("fused.log_softmax", |a, g, _| {
            Ok(vec![Some(apply_with(
                a,
                RowKernel::LogSoftmaxVjp,
                &[a.output, g],
            )?)])
        })
        .forward("fused.log_softmax", |a, t| {
            t[0].as_ref()
                .map(|t| apply_with(a, RowKernel::LogSoftmaxJvp, &[a.output, t]))
                .transpose()
        })
        .reverse("fused.log_softmax_vjp", |a, u, needs| {
            log_softmax_linear_reverse(a, u, needs, RowKernel::LogSoftmaxJvp, false)
        })
        .forward("fused.log_softmax_vjp", log_softmax_vjp_forward)
        .reverse("fused.log_softmax_jvp", |a, u, needs| {
            log_softmax_linear_reverse(a, u, needs, RowKernel::LogSoftmaxVjp, true)
        })
        .forward("fused.log_softmax_jvp", log_softmax_jvp_forward)
        .reverse("fused.layer_norm", |a, g, _| {
            let vjp = RowKernel::LayerNormVjp { eps: eps_bits(a)? };
            Ok(vec![Some(apply_with(a, vjp, &[&a.inputs[0], g])?)])
        })
        .forward("fused.layer_norm", |a, t| {
            let vjp = RowKernel::LayerNormVjp { eps: eps_bits(a)? };
            t[0].as_ref()
                .map(|t| apply_with(a, vjp, &[&a.inputs[0], t]))
                .transpose()
        })
        .reverse("fused.layer_norm_vjp", layer_norm_vjp_reverse)
        .forward("fused.layer_norm_vjp", layer_norm_vjp_forward)
}

/// The node's op.
fn row_op<B: Backend>(args: &RuleArgs<'_, B>) -> Result<FastPathOp<RowOp>> {
    args.op
        .as_any()
        .downcast_ref::<FastPathOp<RowOp>>()
        .copied()
        .ok_or_else(|| Error::invalid("fused row op", "rule called with another op"))
}

/// The node's `eps` (as bits), for the layer norm ops.
fn eps_bits<B: Backend>(args: &RuleArgs<'_, B>) -> Result<u64> {
    match row_op(args)?.op.kernel {
        RowKernel::LayerNorm { eps } | RowKernel::LayerNormVjp { eps } => Ok(eps),
        other => Err(Error::invalid(
            "fused row op",
            format!("{other:?} has no eps"),
        )),
    }
}

/// `kernel` over the node's rows, applied to `inputs`.
fn apply_with<B: Backend>(
    args: &RuleArgs<'_, B>,
    kernel: RowKernel,
    inputs: &[&Tensor<B>],
) -> Result<Tensor<B>> {
    let node = row_op(args)?;
    apply(node.with(node.op.with(kernel)), inputs)
}

/// The reverse rule of a two-input op for its second input, in which it is linear with the
/// symmetric or transposed map `kernel(first, ·)`: that map of the cotangent `u`, when needed.
fn linear_part<B: Backend>(
    args: &RuleArgs<'_, B>,
    needs: &[bool],
    kernel: RowKernel,
    first: &Tensor<B>,
    u: &Tensor<B>,
) -> Result<Option<Tensor<B>>> {
    needs[1]
        .then(|| apply_with(args, kernel, &[first, u]))
        .transpose()
}

/// `⟨a, b⟩` over the rows, kept as size-1 axes.
fn row_dot<B: Backend>(a: &Tensor<B>, b: &Tensor<B>, axes: &[isize]) -> Result<Tensor<B>> {
    a.mul(b)?.sum(axes, true)
}

fn softmax_vjp_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    u: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let axes = row_op(args)?.op.axes();
    let (y, g) = (&args.inputs[0], &args.inputs[1]);
    let dy = if needs[0] {
        let centered = g.sub(row_dot(g, y, &axes)?)?;
        Some(u.mul(&centered)?.sub(row_dot(u, y, &axes)?.mul(g)?)?)
    } else {
        None
    };
    Ok(vec![
        dy,
        linear_part(args, needs, RowKernel::SoftmaxVjp, y, u)?,
    ])
}

fn softmax_vjp_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let axes = row_op(args)?.op.axes();
    let (y, g) = (&args.inputs[0], &args.inputs[1]);
    let from_y = t[0]
        .as_ref()
        .map(|dy| {
            let centered = g.sub(row_dot(g, y, &axes)?)?;
            dy.mul(&centered)?.sub(y.mul(row_dot(g, dy, &axes)?)?)
        })
        .transpose()?;
    let from_g = t[1]
        .as_ref()
        .map(|dg| apply_with(args, RowKernel::SoftmaxVjp, &[y, dg]))
        .transpose()?;
    sum_parts(from_y, from_g)
}

/// The reverse rule of the two linear maps of the log-softmax, `log_softmax_vjp(y, g) = g - e^y Σ g`
/// and `log_softmax_jvp(y, t) = t - ⟨e^y, t⟩`, for cotangent `u`: in the second argument each is
/// the other's transpose (`transpose`); in `y`, the vjp's derivative `-(Σ g) e^y ⊙ ·` is diagonal,
/// and the jvp's `-⟨e^y ⊙ ·, t⟩` transposes to `u ↦ -(Σ u) e^y ⊙ t` (`sums_cotangent`).
fn log_softmax_linear_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    u: &Tensor<B>,
    needs: &[bool],
    transpose: RowKernel,
    sums_cotangent: bool,
) -> Result<Vec<Option<Tensor<B>>>> {
    let axes = row_op(args)?.op.axes();
    let (y, second) = (&args.inputs[0], &args.inputs[1]);
    let dy = if needs[0] {
        let (summed, scaled) = if sums_cotangent {
            (u, second)
        } else {
            (second, u)
        };
        Some(scaled.mul(y.exp()?)?.mul(summed.sum(&axes, true)?)?.neg()?)
    } else {
        None
    };
    Ok(vec![dy, linear_part(args, needs, transpose, y, u)?])
}

fn log_softmax_vjp_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let axes = row_op(args)?.op.axes();
    let (y, g) = (&args.inputs[0], &args.inputs[1]);
    let from_y = t[0]
        .as_ref()
        .map(|dy| dy.mul(y.exp()?)?.mul(g.sum(&axes, true)?)?.neg())
        .transpose()?;
    let from_g = t[1]
        .as_ref()
        .map(|dg| apply_with(args, RowKernel::LogSoftmaxVjp, &[y, dg]))
        .transpose()?;
    sum_parts(from_y, from_g)
}

fn log_softmax_jvp_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    tangents: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let axes = row_op(args)?.op.axes();
    let (y, t) = (&args.inputs[0], &args.inputs[1]);
    let from_y = tangents[0]
        .as_ref()
        .map(|dy| {
            row_dot(&y.exp()?.mul(dy)?, t, &axes)?
                .neg()?
                .broadcast_to(y.shape().to_vec())
        })
        .transpose()?;
    let from_t = tangents[1]
        .as_ref()
        .map(|dt| apply_with(args, RowKernel::LogSoftmaxJvp, &[y, dt]))
        .transpose()?;
    sum_parts(from_y, from_t)
}

/// `a + b` where both are present, else the one that is.
fn sum_parts<B: Backend>(a: Option<Tensor<B>>, b: Option<Tensor<B>>) -> Result<Option<Tensor<B>>> {
    Ok(match (a, b) {
        (Some(a), Some(b)) => Some(a.add(&b)?),
        (a, b) => a.or(b),
    })
}

/// A layer norm's row statistics as differentiable tensors of `x`: `r = (var + eps)^(-1/2)` and
/// `x̂ = (x - mean) r`, with the row axes.
struct Normalized<B: Backend> {
    axes: Vec<isize>,
    r: Tensor<B>,
    x_hat: Tensor<B>,
}

impl<B: Backend> Normalized<B> {
    fn new(args: &RuleArgs<'_, B>) -> Result<Self> {
        let axes = row_op(args)?.op.axes();
        let eps = f64::from_bits(eps_bits(args)?);
        let x = &args.inputs[0];
        let centered = x.sub(x.mean(&axes, true)?)?;
        let r = centered.square()?.mean(&axes, true)?.add(eps)?.rsqrt()?;
        let x_hat = centered.mul(&r)?;
        Ok(Normalized { axes, r, x_hat })
    }

    /// `mean(a ⊙ b)` over the rows.
    fn mean_of(&self, a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
        a.mul(b)?.mean(&self.axes, true)
    }

    /// `P v = v - mean(v) - x̂ mean(v ⊙ x̂)`.
    fn project(&self, v: &Tensor<B>) -> Result<Tensor<B>> {
        v.sub(v.mean(&self.axes, true)?)?
            .sub(self.x_hat.mul(self.mean_of(v, &self.x_hat)?)?)
    }
}

fn layer_norm_vjp_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    u: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (x, g) = (&args.inputs[0], &args.inputs[1]);
    let dx = if needs[0] {
        let s = Normalized::new(args)?;
        let pg = s.project(g)?;
        let a = s.mean_of(g, &s.x_hat)?;
        let r2 = s.r.square()?;
        let outer = s
            .x_hat
            .mul(s.mean_of(u, &pg)?)?
            .add(pg.mul(s.mean_of(u, &s.x_hat)?)?)?;
        Some(outer.add(s.project(u)?.mul(&a)?)?.mul(&r2)?.neg()?)
    } else {
        None
    };
    let vjp = RowKernel::LayerNormVjp {
        eps: eps_bits(args)?,
    };
    Ok(vec![dx, linear_part(args, needs, vjp, x, u)?])
}

fn layer_norm_vjp_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let (x, g) = (&args.inputs[0], &args.inputs[1]);
    let from_x = t[0]
        .as_ref()
        .map(|dx| {
            let s = Normalized::new(args)?;
            let dr = s.r.square()?.mul(s.mean_of(&s.x_hat, dx)?)?.neg()?;
            let dx_hat = s.project(dx)?.mul(&s.r)?;
            let a = s.mean_of(g, &s.x_hat)?;
            let da = s.mean_of(g, &dx_hat)?;
            let rest = dx_hat.mul(&a)?.add(s.x_hat.mul(&da)?)?.mul(&s.r)?;
            s.project(g)?.mul(&dr)?.sub(&rest)
        })
        .transpose()?;
    let from_g = t[1]
        .as_ref()
        .map(|dg| {
            let vjp = RowKernel::LayerNormVjp {
                eps: eps_bits(args)?,
            };
            apply_with(args, vjp, &[x, dg])
        })
        .transpose()?;
    sum_parts(from_x, from_g)
}
