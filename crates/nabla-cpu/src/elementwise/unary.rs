//! Unary kernels, one generic function per element family.

use super::complex;
use super::traits::{Cplx, Int, Real};
use super::vector::map_slices;
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

/// Unary ops on `f32` and `f64`.
pub(super) fn real<T: Real>(op: U, x: &[T], l: &Layout) -> Result<CpuStorage> {
    if let Some(kernel) = T::slice_kernel(op) {
        return Ok(CpuStorage::from_vec(map_slices(x, l, kernel)));
    }
    let (zero, one) = (T::ZERO, T::ONE);
    Ok(match op {
        U::Neg => map!(x, l, |v: T| -v),
        U::Abs => map!(x, l, |v: T| v.abs()),
        // NumPy's sign: 0 for both zeros, NaN for NaN.
        U::Sign => map!(x, l, |v: T| if v > zero {
            one
        } else if v < zero {
            -one
        } else if v == zero {
            zero
        } else {
            v
        }),
        U::Recip => map!(x, l, |v: T| one / v),
        U::Square => map!(x, l, |v: T| v * v),
        U::Sqrt => map!(x, l, |v: T| v.sqrt()),
        U::Rsqrt => map!(x, l, |v: T| one / v.sqrt()),
        U::Exp => map!(x, l, |v: T| v.exp()),
        U::Expm1 => map!(x, l, |v: T| v.exp_m1()),
        U::Log => map!(x, l, |v: T| v.ln()),
        U::Log1p => map!(x, l, |v: T| v.ln_1p()),
        U::Sin => map!(x, l, |v: T| v.sin()),
        U::Cos => map!(x, l, |v: T| v.cos()),
        U::Tan => map!(x, l, |v: T| v.tan()),
        U::Asin => map!(x, l, |v: T| v.asin()),
        U::Acos => map!(x, l, |v: T| v.acos()),
        U::Atan => map!(x, l, |v: T| v.atan()),
        U::Sinh => map!(x, l, |v: T| v.sinh()),
        U::Cosh => map!(x, l, |v: T| v.cosh()),
        U::Tanh => map!(x, l, |v: T| v.tanh()),
        U::Sigmoid => map!(x, l, |v: T| v.sigmoid()),
        U::Erf => map!(x, l, |v: T| v.erf()),
        U::Floor => map!(x, l, |v: T| v.floor()),
        U::Ceil => map!(x, l, |v: T| v.ceil()),
        U::Round => map!(x, l, |v: T| v.round_ties_even()),
        U::Trunc => map!(x, l, |v: T| v.trunc()),
        U::Conj | U::Real => CpuStorage::from_vec(gather_view(x, l)),
        U::Imag => CpuStorage::from_vec(vec![zero; l.numel()]),
        U::IsNan => map!(x, l, |v: T| v.is_nan()),
        U::IsFinite => map!(x, l, |v: T| v.is_finite()),
        U::Not => return unsupported::<T>(op),
    })
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
        _ => return unsupported::<T>(op),
    })
}

/// Unary ops on `bool` (only logical not).
pub(super) fn boolean(op: U, x: &[bool], l: &Layout) -> Result<CpuStorage> {
    match op {
        U::Not => Ok(map!(x, l, |v: bool| !v)),
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
        U::Sqrt => map!(x, l, |z: C| z.sqrt()),
        U::Rsqrt => map!(x, l, |z: C| complex::recip(z.sqrt())),
        U::Exp => map!(x, l, |z: C| z.exp()),
        U::Expm1 => map!(x, l, |z: C| complex::expm1(z)),
        U::Log => map!(x, l, |z: C| z.ln()),
        U::Log1p => map!(x, l, |z: C| complex::log1p(z)),
        U::Sin => map!(x, l, |z: C| z.sin()),
        U::Cos => map!(x, l, |z: C| z.cos()),
        U::Tan => map!(x, l, |z: C| z.tan()),
        U::Sinh => map!(x, l, |z: C| z.sinh()),
        U::Cosh => map!(x, l, |z: C| z.cosh()),
        U::Tanh => map!(x, l, |z: C| z.tanh()),
        U::Sigmoid => map!(x, l, |z: C| complex::sigmoid(z)),
        U::Conj => map!(x, l, |z: C| z.conj()),
        U::Real => map!(x, l, |z: C| z.re()),
        U::Imag => map!(x, l, |z: C| z.im()),
        U::IsNan => map!(x, l, |z: C| complex::is_nan(z)),
        U::IsFinite => map!(x, l, |z: C| z.re().is_finite() && z.im().is_finite()),
        U::Erf
        | U::Asin
        | U::Acos
        | U::Atan
        | U::Floor
        | U::Ceil
        | U::Round
        | U::Trunc
        | U::Not => return unsupported::<C>(op),
    })
}
