//! Elementwise unary and binary math and `where`: what each op saves, its reverse rule and its forward
//! rule. Their batching rule is the op itself (an unbatched operand broadcasts along the batch
//! dimension), written in the batching table.
//!
//! Complex inputs follow JAX's convention (see the crate docs): a holomorphic op multiplies the
//! cotangent by `f'(z)` with no conjugation, exactly as the real rule does, so those rules serve both;
//! the non-holomorphic ops (`conj`, `abs`, `real`, `imag`) have rules of their own, the transposes of
//! their real-linear tangent maps under the pairing `Re Σ u·v`.

use super::{SavedValues, Saves, sum_terms};
use crate::Tensor;
use nabla_core::{Backend, BinaryOp, Error, Result, UnaryOp};
use num_complex::Complex64;

/// `2 / sqrt(pi)`, the scale of the derivative of `erf`.
const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

pub(super) fn unary<B: Backend>(
    op: UnaryOp,
    s: &SavedValues<B>,
    g: &Tensor<B>,
) -> Result<Tensor<B>> {
    use UnaryOp as U;
    let x = || s.input(0);
    let y = || s.output();
    match op {
        U::Neg => g.neg(),
        U::Abs if x()?.dtype().is_complex() => complex_abs(x()?, g),
        // The derivative at 0 is taken as 1, as JAX does (PyTorch uses sign(0) = 0).
        U::Abs => x()?.ge(0.0)?.where_(g, g.neg()?),
        U::Sign if g.dtype().is_complex() => Err(not_for_complex(op.name(), g)),
        // Piecewise constant: zero derivative almost everywhere (as JAX).
        U::Sign | U::Floor | U::Ceil | U::Round | U::Trunc => g.zeros_like(),
        U::Recip => g.mul(y()?.square()?)?.neg(),
        U::Square => g.mul(x()?.mul(2.0)?),
        U::Sqrt => g.div(y()?.mul(2.0)?),
        // d/dx x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
        U::Rsqrt => g.mul(y()?.square()?.mul(y()?)?.mul(-0.5)?),
        U::Exp => g.mul(y()?),
        U::Expm1 => g.mul(y()?.add(1.0)?),
        U::Log => g.div(x()?),
        U::Log1p => g.div(x()?.add(1.0)?),
        U::Sin => g.mul(x()?.cos()?),
        U::Cos => g.mul(x()?.sin()?)?.neg(),
        U::Tan => g.mul(y()?.square()?.add(1.0)?),
        U::Asin => g.mul(one_minus_square(x()?)?.rsqrt()?),
        U::Acos => g.mul(one_minus_square(x()?)?.rsqrt()?)?.neg(),
        U::Atan => g.div(x()?.square()?.add(1.0)?),
        U::Sinh => g.mul(x()?.cosh()?),
        U::Cosh => g.mul(x()?.sinh()?),
        U::Tanh => g.mul(one_minus_square(y()?)?),
        U::Asinh => g.mul(x()?.square()?.add(1.0)?.rsqrt()?),
        // 1 / (sqrt(x - 1) sqrt(x + 1)): the principal derivative off the real line too.
        U::Acosh => {
            let x = x()?;
            g.div(&x.sub(1.0)?.sqrt()?.mul(&x.add(1.0)?.sqrt()?)?)
        }
        U::Atanh => g.div(&one_minus_square(x()?)?),
        U::Sigmoid => {
            let y = y()?;
            g.mul(y.mul(y.neg()?.add(1.0)?)?)
        }
        U::Erf => g.mul(x()?.square()?.neg()?.exp()?.mul(TWO_OVER_SQRT_PI)?),
        // The transpose of conj is conj (the identity on real values).
        U::Conj => g.conj(),
        // `real` embeds the real cotangent into the complex plane (JAX: `complex(g, 0)`); on real
        // input it is the identity.
        U::Real => g.cast(x()?.dtype()),
        // `imag` transposes to `-i g` (JAX: `complex(0, -g)`), since `Re(-i g · v) = g Im(v)`; on real
        // input it is the constant 0.
        U::Imag if x()?.dtype().is_complex() => {
            g.cast(x()?.dtype())?.mul(Complex64::new(0.0, -1.0))
        }
        U::Imag => g.zeros_like(),
        // Bool results are never tracked; a node of these ops cannot be reached by a cotangent.
        U::Not | U::IsNan | U::IsFinite | U::SignBit | U::BitNot => Err(Error::autodiff(
            op.name(),
            format!(
                "has no derivative for {} values (it works on bool values or has none)",
                g.dtype()
            ),
        )),
    }
}

/// `|z|` of complex `z` with a real cotangent `g`: the tangent map is `t ↦ Re(conj(z) t) / |z|`, whose
/// transpose is `g conj(z) / |z|`. At `z = 0` the derivative is taken as 0, as JAX does.
fn complex_abs<B: Backend>(z: &Tensor<B>, g: &Tensor<B>) -> Result<Tensor<B>> {
    let r = z.abs()?;
    let safe = r.eq(0.0)?.where_(1.0, &r)?;
    // (g / |z|) conj(z), in the order JAX uses, so that exact cases stay exact (|3+4i|² gives 6-8i).
    let dtype = z.dtype();
    g.cast(dtype)?.div(safe.cast(dtype)?)?.mul(z.conj()?)
}

/// The error of an op with no derivative rule for complex values: ordering ops (`maximum`, `max`, ...)
/// and `sign` (whose complex derivative is not implemented; JAX's zero would be wrong there).
pub(super) fn not_for_complex<B: Backend>(op: &'static str, t: &Tensor<B>) -> Error {
    Error::autodiff(
        op,
        format!(
            "has no derivative rule for {} values (shape {:?}): complex numbers have no order, and \
             sign of a complex number is not differentiated; work on .real(), .imag() or .abs() \
             instead",
            t.dtype(),
            t.shape()
        ),
    )
}

fn one_minus_square<B: Backend>(t: &Tensor<B>) -> Result<Tensor<B>> {
    t.square()?.neg()?.add(1.0)
}

pub(super) fn binary<B: Backend>(
    op: BinaryOp,
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    use BinaryOp as O;
    let (need_a, need_b) = (needs[0], needs[1]);
    let a = || s.input(0);
    let b = || s.input(1);
    let (da, db) = match op {
        O::Add => (Some(g.clone()), Some(g.clone())),
        O::Sub => (Some(g.clone()), need_b.then(|| g.neg()).transpose()?),
        O::Mul => (
            need_a.then(|| g.mul(b()?)).transpose()?,
            need_b.then(|| g.mul(a()?)).transpose()?,
        ),
        O::Div => (
            need_a.then(|| g.div(b()?)).transpose()?,
            // -g a / b^2
            need_b
                .then(|| g.mul(a()?)?.div(b()?.square()?)?.neg())
                .transpose()?,
        ),
        // a mod b = a - b floor(a / b) for the floored remainder.
        O::Rem => (
            Some(g.clone()),
            need_b
                .then(|| g.mul(a()?.div(b()?)?.floor()?)?.neg())
                .transpose()?,
        ),
        O::Pow => {
            let (a, b, y) = (a()?, b()?, s.output()?);
            // d/da = b a^(b-1), taken as 0 where a == b == 0 (so 0^0 has derivative 0, as JAX, instead
            // of 0 * inf; the base is made safe there too so that no NaN reaches second order).
            // Elsewhere with b == 0 the product is 0 already, and keeping it unmasked keeps its
            // derivative in b (1/a) for second order.
            let da = need_a
                .then(|| {
                    let both_zero = a.eq(0.0)?.logical_and(&b.eq(0.0)?)?;
                    let base = both_zero.where_(1.0, a)?;
                    let d = b.mul(base.pow(b.sub(1.0)?)?)?;
                    both_zero.where_(0.0, &d)?.mul(g)
                })
                .transpose()?;
            // d/db = a^b ln a, taken as 0 where a == 0.
            let db = need_b
                .then(|| {
                    let safe = a.eq(0.0)?.where_(1.0, a)?;
                    g.mul(y.mul(safe.log()?)?)
                })
                .transpose()?;
            (da, db)
        }
        O::Maximum | O::Minimum if g.dtype().is_complex() => {
            return Err(not_for_complex(op.name(), g));
        }
        // Ties split the gradient evenly between the operands, as JAX does.
        O::Maximum | O::Minimum => {
            let (a, b, y) = (a()?, b()?, s.output()?);
            let share = |this: &Tensor<B>, other: &Tensor<B>| -> Result<Tensor<B>> {
                let half_on_tie = other.eq(y)?.where_(0.5, 1.0)?.cast(g.dtype())?;
                let w = this.eq(y)?.where_(&half_on_tie, 0.0)?;
                g.mul(w)
            };
            (
                need_a.then(|| share(a, b)).transpose()?,
                need_b.then(|| share(b, a)).transpose()?,
            )
        }
        O::Atan2 => {
            let (a, b) = (a()?, b()?);
            let denom = a.square()?.add(b.square()?)?;
            (
                need_a.then(|| g.mul(b)?.div(&denom)).transpose()?,
                need_b.then(|| g.mul(a)?.div(&denom)?.neg()).transpose()?,
            )
        }
        O::And
        | O::Or
        | O::Xor
        | O::BitAnd
        | O::BitOr
        | O::BitXor
        | O::ShiftLeft
        | O::ShiftRight => {
            return Err(Error::autodiff(
                op.name(),
                "logical and bitwise ops on bool and integer tensors have no derivative",
            ));
        }
        O::NextAfter => {
            return Err(Error::autodiff(
                op.name(),
                "has no derivative (it steps to a neighbouring float); detach its operands",
            ));
        }
    };
    Ok(vec![da, db])
}

pub(super) fn select<B: Backend>(
    s: &SavedValues<B>,
    g: &Tensor<B>,
    needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let cond = s.input(0)?;
    Ok(vec![
        None,
        needs[1].then(|| cond.where_(g, 0.0)).transpose()?,
        needs[2].then(|| cond.where_(0.0, g)).transpose()?,
    ])
}

/// What the rules of unary `op` read: the input, the output, both or neither.
pub(super) fn unary_saves(op: UnaryOp) -> Saves {
    use UnaryOp as U;
    match op {
        U::Exp | U::Expm1 | U::Sqrt | U::Rsqrt | U::Recip | U::Tanh | U::Sigmoid | U::Tan => {
            Saves::OUTPUT
        }
        U::Neg | U::Sign | U::Floor | U::Ceil | U::Round | U::Trunc | U::Conj => Saves::NOTHING,
        // No derivative: their rules only refuse, so keeping the operand alive would waste memory.
        U::Not | U::IsNan | U::IsFinite | U::SignBit | U::BitNot => Saves::NOTHING,
        U::Abs
        | U::Square
        | U::Log
        | U::Log1p
        | U::Sin
        | U::Cos
        | U::Asin
        | U::Acos
        | U::Atan
        | U::Sinh
        | U::Cosh
        | U::Asinh
        | U::Acosh
        | U::Atanh
        | U::Erf
        | U::Real
        | U::Imag => Saves::inputs(0b1),
    }
}

/// What the rules of binary `op` read: both operands (and the output for `pow`, `maximum`, `minimum`),
/// or nothing for the linear ones and for those without a derivative.
pub(super) fn binary_saves(op: BinaryOp) -> Saves {
    use BinaryOp as O;
    match op {
        O::Add | O::Sub => Saves::NOTHING,
        O::And
        | O::Or
        | O::Xor
        | O::BitAnd
        | O::BitOr
        | O::BitXor
        | O::ShiftLeft
        | O::ShiftRight
        | O::NextAfter => Saves::NOTHING,
        O::Pow | O::Maximum | O::Minimum => Saves::inputs(0b11).and_output(),
        O::Mul | O::Div | O::Rem | O::Atan2 => Saves::inputs(0b11),
    }
}

/// The tangent of a unary op: the reverse rule applied to the tangent. A complex-to-real op (abs,
/// real, imag) has the tangent map `t ↦ Re(c t)` when its reverse rule is `u ↦ u c`: the reverse rule
/// applied to the tangent, then the real part.
pub(super) fn unary_jvp<B: Backend>(
    op: UnaryOp,
    s: &SavedValues<B>,
    t: &Tensor<B>,
) -> Result<Tensor<B>> {
    let d = unary(op, s, t)?;
    match op {
        UnaryOp::Abs | UnaryOp::Real | UnaryOp::Imag if d.dtype().is_complex() => d.real(),
        _ => Ok(d),
    }
}

/// The tangent of a binary op: each operand's tangent through its reverse factor, summed.
pub(super) fn binary_jvp<B: Backend>(
    op: BinaryOp,
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let da = match &t[0] {
        Some(ta) => binary(op, s, ta, &[true, false])?.swap_remove(0),
        None => None,
    };
    let db = match &t[1] {
        Some(tb) => binary(op, s, tb, &[false, true])?.swap_remove(1),
        None => None,
    };
    sum_terms([da, db])
}

/// The tangent of `where(cond, a, b)`: each branch's tangent where it is chosen.
pub(super) fn select_jvp<B: Backend>(
    s: &SavedValues<B>,
    t: &[Option<Tensor<B>>],
) -> Result<Option<Tensor<B>>> {
    let cond = s.input(0)?;
    let on_true = t[1].as_ref().map(|tt| cond.where_(tt, 0.0)).transpose()?;
    let on_false = t[2].as_ref().map(|tf| cond.where_(0.0, tf)).transpose()?;
    sum_terms([on_true, on_false])
}
