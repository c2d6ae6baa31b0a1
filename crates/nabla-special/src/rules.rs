//! The derivatives of the family's functions, written with the family's own ops so that every order
//! exists:
//!
//! | function | derivative |
//! |---|---|
//! | `lgamma` | `digamma` |
//! | `digamma`, `polygamma(n)` | `polygamma(1)`, `polygamma(n + 1)` |
//! | `erfinv` | `(√π / 2) e^{y²}` with `y = erfinv(x)` |
//! | `i0`, `i0e` | `i1`, `i1e − sign(x) i0e` |
//! | `i1`, `i1e` | `i0 − i1/x`, `i0e − i1e (sign(x) + 1/x)` (both `1/2` at 0) |
//! | `erfc` | `−(2/√π) e^{−x²}` |
//! | `ndtr` | `φ(x) = e^{−x²/2}/√(2π)` |
//! | `ndtri` | `√(2π) e^{y²/2}` with `y = ndtri(p)` |
//! | `log_ndtr` | `φ(x)/Φ(x)`: `e^{−x²/2 − y}/√(2π)` with `y = log_ndtr(x)`, and `−x / S(x)` with the asymptotic series below −20 |
//! | `betaln(a, b)` | `ψ(a) − ψ(a + b)`, `ψ(b) − ψ(a + b)` |
//!
//! Forward rules multiply the tangent by the derivative, reverse rules the cotangent.

use crate::ops::{BETALN, Betaln, Special, SpecialFn};
use crate::scalar::{LOG_NDTR_TAIL, LOG_NDTR_TERMS};
use nabla_core::{Backend, Error, Result};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::f64::consts::PI;
use std::sync::Arc;

/// The special-function extension family: its ops are recorded with these rules bound, so every
/// transform differentiates them with no setup.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpecialFamily;

impl ExtensionFamily for SpecialFamily {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        rules()
    }
}

/// `f(x)` recorded with the family's rules.
pub(crate) fn apply<B: Backend>(f: SpecialFn, x: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<SpecialFamily>(Arc::new(Special(f)), &[x])
}

/// `num / x` where `x ≠ 0`, `at_zero` where `x = 0` (no infinity on either branch).
fn over_x<B: Backend>(num: &Tensor<B>, x: &Tensor<B>, at_zero: f64) -> Result<Tensor<B>> {
    let zero = x.eq(0.0)?;
    let safe = zero.where_(1.0, x)?;
    zero.where_(at_zero, num.div(&safe)?)
}

/// `φ(x)/Φ(x)`: `e^{−x²/2 − y}/√(2π)` above [`LOG_NDTR_TAIL`], `−x / S(x)` below, with the scalar
/// module's asymptotic series `S` (there `e^{−x²/2 − y}` would subtract two numbers near `x²/2` and
/// keep only about `1e-16 x²` of absolute precision); both are ordinary ops, so every order
/// differentiates.
fn log_ndtr_derivative<B: Backend>(x: &Tensor<B>, y: &Tensor<B>) -> Result<Tensor<B>> {
    let tail = x.lt(LOG_NDTR_TAIL)?;
    let central = x
        .square()?
        .mul(-0.5)?
        .sub(y)?
        .exp()?
        .mul(1.0 / (2.0 * PI).sqrt())?;
    // The tail branch sees only tail points (others read LOG_NDTR_TAIL), so no 1/0 reaches it.
    let xt = tail.where_(x, LOG_NDTR_TAIL)?;
    let inv2 = xt.square()?.recip()?;
    let (mut term, mut series) = (inv2.ones_like()?, inv2.ones_like()?);
    for k in 1..=LOG_NDTR_TERMS {
        term = term.mul(&inv2)?.mul(-f64::from(2 * k - 1))?;
        series = series.add(&term)?;
    }
    tail.where_(&xt.neg()?.div(&series)?, &central)
}

/// The derivative of the node's function at its input.
fn derivative<B: Backend>(args: &RuleArgs<'_, B>) -> Result<Tensor<B>> {
    let Some(Special(f)) = args.op.as_any().downcast_ref::<Special>().copied() else {
        return Err(Error::invalid("special", "rule called with another op"));
    };
    let (x, y) = (&args.inputs[0], args.output);
    match f {
        SpecialFn::Lgamma => apply(SpecialFn::Digamma, x),
        SpecialFn::Digamma => apply(SpecialFn::Polygamma(1), x),
        SpecialFn::Polygamma(n) => apply(SpecialFn::Polygamma(n + 1), x),
        SpecialFn::Erfinv => y.square()?.exp()?.mul(PI.sqrt() / 2.0),
        SpecialFn::I0 => apply(SpecialFn::I1, x),
        SpecialFn::I0e => apply(SpecialFn::I1e, x)?.sub(&x.sign()?.mul(y)?),
        SpecialFn::I1 => {
            let i0 = apply(SpecialFn::I0, x)?;
            let ratio = over_x(y, x, 0.0)?;
            x.eq(0.0)?.where_(0.5, i0.sub(&ratio)?)
        }
        SpecialFn::I1e => {
            let i0e = apply(SpecialFn::I0e, x)?;
            let ratio = over_x(y, x, 0.0)?;
            let d = i0e.sub(&y.mul(&x.sign()?)?)?.sub(&ratio)?;
            x.eq(0.0)?.where_(0.5, d)
        }
        SpecialFn::Erfc => x.square()?.neg()?.exp()?.mul(-2.0 / PI.sqrt()),
        SpecialFn::Ndtr => x.square()?.mul(-0.5)?.exp()?.mul(1.0 / (2.0 * PI).sqrt()),
        SpecialFn::Ndtri => y.square()?.mul(0.5)?.exp()?.mul((2.0 * PI).sqrt()),
        SpecialFn::LogNdtr => log_ndtr_derivative(x, y),
    }
}

fn forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    t[0].as_ref().map(|t| t.mul(&derivative(args)?)).transpose()
}

fn reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    Ok(vec![Some(g.mul(&derivative(args)?)?)])
}

/// `betaln(a, b)` of two tensors of one shape, recorded with the family's rules.
pub(crate) fn apply_betaln<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<SpecialFamily>(Arc::new(Betaln), &[a, b])
}

/// The partial derivatives of `betaln` at the node's inputs: `ψ(a) − ψ(a + b)` and `ψ(b) − ψ(a + b)`.
fn betaln_partials<B: Backend>(args: &RuleArgs<'_, B>) -> Result<[Tensor<B>; 2]> {
    let (a, b) = (&args.inputs[0], &args.inputs[1]);
    let both = apply(SpecialFn::Digamma, &a.add(b)?)?;
    Ok([
        apply(SpecialFn::Digamma, a)?.sub(&both)?,
        apply(SpecialFn::Digamma, b)?.sub(&both)?,
    ])
}

fn betaln_forward<B: Backend>(
    args: &RuleArgs<'_, B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let partials = betaln_partials(args)?;
    let mut sum: Option<Tensor<B>> = None;
    for (t, d) in t.iter().zip(&partials) {
        if let Some(t) = t {
            let term = t.mul(d)?;
            sum = Some(match sum {
                Some(s) => s.add(&term)?,
                None => term,
            });
        }
    }
    Ok(sum)
}

fn betaln_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let partials = betaln_partials(args)?;
    partials
        .iter()
        .zip(needs)
        .map(|(d, &need)| need.then(|| g.mul(d)).transpose())
        .collect()
}

/// The forward and reverse rules of every op of the family.
pub fn rules<B: Backend>() -> ExtensionRules<B> {
    SpecialFn::ALL
        .iter()
        .fold(ExtensionRules::new(), |r, f| {
            r.forward(f.name(), forward::<B>)
                .reverse(f.name(), reverse::<B>)
        })
        .forward(BETALN, betaln_forward::<B>)
        .reverse(BETALN, betaln_reverse::<B>)
}
