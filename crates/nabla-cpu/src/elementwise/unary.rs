//! Unary kernels, one generic function per element family.

use super::traits::{Cplx, Int, Real};
use super::vector::map_slices;
use super::{complex, complex_edge};
use crate::CpuStorage;
use crate::strided::{gather_view, map1};
use nabla_core::{Element, Error, Layout, Result, UnaryOp as U};

/// Maps `x` through the closure into a new buffer.
macro_rules! map {
    ($x:expr, $l:expr, |$v:ident: $t:ty| $body:expr) => {
        CpuStorage::from_vec(map1($x, $l, |$v: $t| $body))
    };
}

fn unsupported<T: Element>(op: U) -> Result<CpuStorage> {
    Err(Error::dtype(op.name(), T::DTYPE))
}

/// `Some($body)` with `$f` bound to the element function `T -> T` of the real (`f32`, `f64`) unary op
/// `$op`, or `None` for the ops without one (`IsNan` and `IsFinite` give bool, see [`real_predicate_fn`];
/// `Not` is bool-only). Shared by the op-by-op kernels and the fused kernel.
macro_rules! real_unary_fn {
    (@arm $T:ty, $f:ident, $body:expr, |$v:ident| $e:expr) => {{
        let $f = |$v: $T| -> $T { $e };
        Some($body)
    }};
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        use $crate::elementwise::traits::Real;
        use nabla_core::UnaryOp as U;
        let (zero, one) = (<$T as Real>::ZERO, <$T as Real>::ONE);
        match $op {
            U::Neg => real_unary_fn!(@arm $T, $f, $body, |v| -v),
            U::Abs => real_unary_fn!(@arm $T, $f, $body, |v| v.abs()),
            // NumPy's sign: 0 for both zeros, NaN for NaN.
            U::Sign => real_unary_fn!(@arm $T, $f, $body, |v| if v > zero {
                one
            } else if v < zero {
                -one
            } else if v == zero {
                zero
            } else {
                v
            }),
            U::Recip => real_unary_fn!(@arm $T, $f, $body, |v| one / v),
            U::Square => real_unary_fn!(@arm $T, $f, $body, |v| v * v),
            U::Sqrt => real_unary_fn!(@arm $T, $f, $body, |v| v.sqrt()),
            U::Rsqrt => real_unary_fn!(@arm $T, $f, $body, |v| one / v.sqrt()),
            U::Exp => real_unary_fn!(@arm $T, $f, $body, |v| v.exp()),
            U::Expm1 => real_unary_fn!(@arm $T, $f, $body, |v| v.exp_m1()),
            U::Log => real_unary_fn!(@arm $T, $f, $body, |v| v.ln()),
            U::Log1p => real_unary_fn!(@arm $T, $f, $body, |v| v.ln_1p()),
            U::Sin => real_unary_fn!(@arm $T, $f, $body, |v| v.sin()),
            U::Cos => real_unary_fn!(@arm $T, $f, $body, |v| v.cos()),
            U::Tan => real_unary_fn!(@arm $T, $f, $body, |v| v.tan()),
            U::Asin => real_unary_fn!(@arm $T, $f, $body, |v| v.asin()),
            U::Acos => real_unary_fn!(@arm $T, $f, $body, |v| v.acos()),
            U::Atan => real_unary_fn!(@arm $T, $f, $body, |v| v.atan()),
            U::Sinh => real_unary_fn!(@arm $T, $f, $body, |v| v.sinh()),
            U::Cosh => real_unary_fn!(@arm $T, $f, $body, |v| v.cosh()),
            U::Tanh => real_unary_fn!(@arm $T, $f, $body, |v| v.tanh()),
            U::Asinh => real_unary_fn!(@arm $T, $f, $body, |v| v.asinh()),
            U::Acosh => real_unary_fn!(@arm $T, $f, $body, |v| v.acosh()),
            U::Atanh => real_unary_fn!(@arm $T, $f, $body, |v| v.atanh()),
            U::Sigmoid => real_unary_fn!(@arm $T, $f, $body, |v| v.sigmoid()),
            U::Erf => real_unary_fn!(@arm $T, $f, $body, |v| v.erf()),
            U::Floor => real_unary_fn!(@arm $T, $f, $body, |v| v.floor()),
            U::Ceil => real_unary_fn!(@arm $T, $f, $body, |v| v.ceil()),
            U::Round => real_unary_fn!(@arm $T, $f, $body, |v| v.round_ties_even()),
            U::Trunc => real_unary_fn!(@arm $T, $f, $body, |v| v.trunc()),
            U::Conj | U::Real => real_unary_fn!(@arm $T, $f, $body, |v| v),
            U::Imag => real_unary_fn!(@arm $T, $f, $body, |_v| zero),
            U::IsNan | U::IsFinite | U::SignBit | U::Not | U::BitNot => None,
        }
    }};
}
pub(super) use real_unary_fn;

/// `Some($body)` with `$f` bound to the element predicate `T -> bool` of the real unary op `$op`
/// (`IsNan`, `IsFinite`, `SignBit`), or `None` for the other ops.
macro_rules! real_predicate_fn {
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        use nabla_core::UnaryOp as U;
        match $op {
            U::IsNan => {
                let $f = |v: $T| -> bool { v.is_nan() };
                Some($body)
            }
            U::IsFinite => {
                let $f = |v: $T| -> bool { v.is_finite() };
                Some($body)
            }
            U::SignBit => {
                let $f = |v: $T| -> bool { v.is_sign_negative() };
                Some($body)
            }
            _ => None,
        }
    }};
}
pub(super) use real_predicate_fn;

/// Unary ops on `f32` and `f64`.
pub(super) fn real<T: Real>(op: U, x: &[T], l: &Layout) -> Result<CpuStorage> {
    if let Some(kernel) = T::slice_kernel(op) {
        return Ok(CpuStorage::from_vec(map_slices(x, l, kernel)));
    }
    match op {
        U::Conj | U::Real => return Ok(CpuStorage::from_vec(gather_view(x, l))),
        U::Imag => return Ok(CpuStorage::from_vec(vec![T::ZERO; l.numel()])),
        _ => {}
    }
    if let Some(out) = real_unary_fn!(op, T, |f| CpuStorage::from_vec(map1(x, l, f))) {
        return Ok(out);
    }
    real_predicate_fn!(op, T, |f| CpuStorage::from_vec(map1(x, l, f)))
        .map_or_else(|| unsupported::<T>(op), Ok)
}

/// Unary ops on `i32`, `i64` and `u8` (exact, wrapping).
pub(super) fn int<T: Int>(op: U, x: &[T], l: &Layout) -> Result<CpuStorage> {
    Ok(match op {
        U::Neg => map!(x, l, |v: T| v.wrapping_neg()),
        U::Abs => map!(x, l, |v: T| v.wrapping_abs()),
        U::Sign => map!(x, l, |v: T| v.signum()),
        U::Square => map!(x, l, |v: T| v.wrapping_mul(v)),
        U::Floor | U::Ceil | U::Round | U::Trunc | U::Conj | U::Real => {
            CpuStorage::from_vec(gather_view(x, l))
        }
        U::Imag => CpuStorage::from_vec(vec![T::ZERO; l.numel()]),
        U::IsNan => CpuStorage::from_vec(vec![false; l.numel()]),
        U::IsFinite => CpuStorage::from_vec(vec![true; l.numel()]),
        U::SignBit => map!(x, l, |v: T| v.is_negative()),
        U::BitNot => map!(x, l, |v: T| !v),
        _ => return unsupported::<T>(op),
    })
}

/// Unary ops on `bool` (only logical not, under both its names).
pub(super) fn boolean(op: U, x: &[bool], l: &Layout) -> Result<CpuStorage> {
    match op {
        U::Not | U::BitNot => Ok(map!(x, l, |v: bool| !v)),
        _ => unsupported::<bool>(op),
    }
}

/// Unary ops on `Complex32` and `Complex64`.
pub(super) fn complex<C: Cplx>(op: U, x: &[C], l: &Layout) -> Result<CpuStorage> {
    Ok(match op {
        U::Neg => map!(x, l, |z: C| -z),
        U::Abs => map!(x, l, |z: C| complex::abs(z)),
        U::Sign => map!(x, l, |z: C| complex::sign(z)),
        U::Recip => map!(x, l, |z: C| complex::recip(z)),
        U::Square => map!(x, l, |z: C| z * z),
        U::Sqrt => map!(x, l, |z: C| complex_edge::sqrt(z)),
        U::Rsqrt => map!(x, l, |z: C| complex::recip(complex_edge::sqrt(z))),
        U::Exp => map!(x, l, |z: C| z.exp()),
        U::Expm1 => map!(x, l, |z: C| complex_edge::expm1(z)),
        U::Log => map!(x, l, |z: C| z.ln()),
        U::Log1p => map!(x, l, |z: C| complex::log1p(z)),
        U::Sin => map!(x, l, |z: C| complex_edge::sin(z)),
        U::Cos => map!(x, l, |z: C| complex_edge::cos(z)),
        U::Tan => map!(x, l, |z: C| complex_edge::tan(z)),
        U::Sinh => map!(x, l, |z: C| complex_edge::sinh(z)),
        U::Cosh => map!(x, l, |z: C| complex_edge::cosh(z)),
        U::Tanh => map!(x, l, |z: C| complex_edge::tanh(z)),
        U::Asin => map!(x, l, |z: C| complex_edge::asin(z)),
        U::Acos => map!(x, l, |z: C| complex_edge::acos(z)),
        U::Atan => map!(x, l, |z: C| complex_edge::atan(z)),
        U::Asinh => map!(x, l, |z: C| complex_edge::asinh(z)),
        U::Acosh => map!(x, l, |z: C| complex_edge::acosh(z)),
        U::Atanh => map!(x, l, |z: C| complex_edge::atanh(z)),
        U::Sigmoid => map!(x, l, |z: C| complex::sigmoid(z)),
        U::Conj => map!(x, l, |z: C| z.conj()),
        U::Real => map!(x, l, |z: C| z.re()),
        U::Imag => map!(x, l, |z: C| z.im()),
        U::IsNan => map!(x, l, |z: C| complex::is_nan(z)),
        U::IsFinite => map!(x, l, |z: C| z.re().is_finite() && z.im().is_finite()),
        U::Erf | U::Floor | U::Ceil | U::Round | U::Trunc | U::Not | U::SignBit | U::BitNot => {
            return unsupported::<C>(op);
        }
    })
}
