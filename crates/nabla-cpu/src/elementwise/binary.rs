//! Binary, comparison and select kernels, one generic function per element family.

use super::complex;
use super::traits::{Cplx, Int, Real};
use crate::CpuStorage;
use crate::strided::{map2, map3};
use nabla_core::{BinaryOp as B, CompareOp, Element, Error, Layout, Result};

/// Maps two views through the closure into a new buffer.
macro_rules! zip {
    ($a:expr, $la:expr, $b:expr, $lb:expr, |$x:ident: $t:ty, $y:ident| $body:expr) => {
        CpuStorage::from_vec(map2($a, $la, $b, $lb, |$x: $t, $y: $t| $body))
    };
}

fn unsupported<T: Element>(op: B) -> Result<CpuStorage> {
    Err(Error::dtype(op.name(), T::DTYPE))
}

/// The larger of `x` and `y`, NaN when either is (the `maximum` of real operands).
#[inline(always)]
pub(super) fn maximum_real<T: Real>(x: T, y: T) -> T {
    if x >= y || x.is_nan() { x } else { y }
}

/// NumPy's floating-point `%`: `fmod`, then moved into the divisor's sign; a zero result takes the sign of
/// the divisor, and `x % 0` is NaN.
#[inline]
pub(super) fn rem_real<T: Real>(a: T, b: T) -> T {
    let m = a % b;
    if m == T::ZERO {
        T::ZERO.copysign(b)
    } else if (b < T::ZERO) != (m < T::ZERO) {
        m + b
    } else {
        m
    }
}

/// Floor division (NumPy's `//`) for integers; division by zero gives 0 and `MIN // -1` wraps to `MIN`.
#[inline]
pub(super) fn floor_div<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let q = a.wrapping_div(b);
    let r = a.wrapping_rem(b);
    if r != T::ZERO && r.is_negative() != b.is_negative() {
        q.wrapping_sub(T::ONE)
    } else {
        q
    }
}

/// Remainder with the sign of the divisor (NumPy's `%`) for integers; remainder by zero gives 0.
#[inline]
pub(super) fn rem_int<T: Int>(a: T, b: T) -> T {
    if b == T::ZERO {
        return T::ZERO;
    }
    let r = a.wrapping_rem(b);
    if r != T::ZERO && r.is_negative() != b.is_negative() {
        r.wrapping_add(b)
    } else {
        r
    }
}

/// `base ^ e` by repeated squaring with wrapping; negative exponents give 0, except for bases 1 (giving
/// 1) and -1 (giving ±1).
#[inline]
pub(super) fn pow_int<T: Int>(base: T, e: T) -> T {
    if e.is_negative() {
        let minus_one = T::ZERO.wrapping_sub(T::ONE);
        return if base == T::ONE {
            T::ONE
        } else if base == minus_one {
            if e.is_odd() { minus_one } else { T::ONE }
        } else {
            T::ZERO
        };
    }
    let mut e = e.as_u64();
    let (mut acc, mut b) = (T::ONE, base);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(b);
        }
        e >>= 1;
        if e > 0 {
            b = b.wrapping_mul(b);
        }
    }
    acc
}

/// `Some($body)` with `$f` bound to the element function `(T, T) -> T` of the real (`f32`, `f64`) binary
/// op `$op` (IEEE arithmetic; maximum and minimum propagate NaN), or `None` for the bool-only ops.
/// Shared by the op-by-op kernels and the fused kernel.
macro_rules! real_binary_fn {
    (@arm $T:ty, $f:ident, $body:expr, |$x:ident, $y:ident| $e:expr) => {{
        let $f = |$x: $T, $y: $T| -> $T { $e };
        Some($body)
    }};
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        use $crate::elementwise::binary::{maximum_real, rem_real};
                use nabla_core::BinaryOp as B;
        match $op {
            B::Add => real_binary_fn!(@arm $T, $f, $body, |x, y| x + y),
            B::Sub => real_binary_fn!(@arm $T, $f, $body, |x, y| x - y),
            B::Mul => real_binary_fn!(@arm $T, $f, $body, |x, y| x * y),
            B::Div => real_binary_fn!(@arm $T, $f, $body, |x, y| x / y),
            B::Rem => real_binary_fn!(@arm $T, $f, $body, |x, y| rem_real(x, y)),
            B::Pow => real_binary_fn!(@arm $T, $f, $body, |x, y| x.powf(y)),
            B::Maximum => real_binary_fn!(@arm $T, $f, $body, |x, y| maximum_real(x, y)),
            B::Minimum => real_binary_fn!(@arm $T, $f, $body, |x, y| if x <= y || x.is_nan() {
                x
            } else {
                y
            }),
            B::Atan2 => real_binary_fn!(@arm $T, $f, $body, |x, y| x.atan2(y)),
            B::NextAfter => real_binary_fn!(@arm $T, $f, $body, |x, y| x.next_after(y)),
            B::And
            | B::Or
            | B::Xor
            | B::BitAnd
            | B::BitOr
            | B::BitXor
            | B::ShiftLeft
            | B::ShiftRight => None,
        }
    }};
}
pub(super) use real_binary_fn;

/// Binary ops on `f32` and `f64` (IEEE arithmetic; maximum and minimum propagate NaN).
pub(super) fn real<T: Real>(
    op: B,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
) -> Result<CpuStorage> {
    real_binary_fn!(op, T, |f| CpuStorage::from_vec(map2(a, la, b, lb, f)))
        .map_or_else(|| unsupported::<T>(op), Ok)
}

/// Binary ops on `i32`, `i64` and `u8` (wrapping; NumPy's floor division and remainder).
pub(super) fn int<T: Int>(op: B, a: &[T], la: &Layout, b: &[T], lb: &Layout) -> Result<CpuStorage> {
    Ok(match op {
        B::Add => zip!(a, la, b, lb, |x: T, y| x.wrapping_add(y)),
        B::Sub => zip!(a, la, b, lb, |x: T, y| x.wrapping_sub(y)),
        B::Mul => zip!(a, la, b, lb, |x: T, y| x.wrapping_mul(y)),
        B::Div => zip!(a, la, b, lb, |x: T, y| floor_div(x, y)),
        B::Rem => zip!(a, la, b, lb, |x: T, y| rem_int(x, y)),
        B::Pow => zip!(a, la, b, lb, |x: T, y| pow_int(x, y)),
        B::Maximum => zip!(a, la, b, lb, |x: T, y| x.max(y)),
        B::Minimum => zip!(a, la, b, lb, |x: T, y| x.min(y)),
        B::BitAnd => zip!(a, la, b, lb, |x: T, y| x & y),
        B::BitOr => zip!(a, la, b, lb, |x: T, y| x | y),
        B::BitXor => zip!(a, la, b, lb, |x: T, y| x ^ y),
        B::ShiftLeft => zip!(a, la, b, lb, |x: T, y| x.shift_left(y)),
        B::ShiftRight => zip!(a, la, b, lb, |x: T, y| x.shift_right(y)),
        B::Atan2 | B::And | B::Or | B::Xor | B::NextAfter => return unsupported::<T>(op),
    })
}

/// `Some($body)` with `$f` bound to the element function `(bool, bool) -> bool` of `$op` on bools
/// (`Add`, `Maximum` and `Or` are logical or; `Mul`, `Minimum` and `And` logical and), or `None` for the
/// ops bools do not support.
macro_rules! bool_binary_fn {
    (@arm $f:ident, $body:expr, |$x:ident, $y:ident| $e:expr) => {{
        let $f = |$x: bool, $y: bool| -> bool { $e };
        Some($body)
    }};
    ($op:expr, |$f:ident| $body:expr) => {{
        use nabla_core::BinaryOp as B;
        match $op {
            B::Add | B::Maximum | B::Or | B::BitOr => {
                bool_binary_fn!(@arm $f, $body, |x, y| x | y)
            }
            B::Mul | B::Minimum | B::And | B::BitAnd => {
                bool_binary_fn!(@arm $f, $body, |x, y| x & y)
            }
            B::Xor | B::BitXor => bool_binary_fn!(@arm $f, $body, |x, y| x ^ y),
            B::Sub
            | B::Div
            | B::Rem
            | B::Pow
            | B::Atan2
            | B::ShiftLeft
            | B::ShiftRight
            | B::NextAfter => None,
        }
    }};
}
pub(super) use bool_binary_fn;

/// Binary ops on `bool`: `Add`, `Maximum` and `Or` are logical or; `Mul`, `Minimum` and `And` logical and.
pub(super) fn boolean(
    op: B,
    a: &[bool],
    la: &Layout,
    b: &[bool],
    lb: &Layout,
) -> Result<CpuStorage> {
    bool_binary_fn!(op, |f| CpuStorage::from_vec(map2(a, la, b, lb, f)))
        .map_or_else(|| unsupported::<bool>(op), Ok)
}

/// Binary ops on `Complex32` and `Complex64`.
pub(super) fn complex<C: Cplx>(
    op: B,
    a: &[C],
    la: &Layout,
    b: &[C],
    lb: &Layout,
) -> Result<CpuStorage> {
    Ok(match op {
        B::Add => zip!(a, la, b, lb, |x: C, y| x + y),
        B::Sub => zip!(a, la, b, lb, |x: C, y| x - y),
        B::Mul => zip!(a, la, b, lb, |x: C, y| x * y),
        B::Div => zip!(a, la, b, lb, |x: C, y| complex::div(x, y)),
        B::Pow => zip!(a, la, b, lb, |x: C, y| complex::pow(x, y)),
        B::Maximum => zip!(a, la, b, lb, |x: C, y| complex::maximum(x, y)),
        B::Minimum => zip!(a, la, b, lb, |x: C, y| complex::minimum(x, y)),
        B::Rem
        | B::Atan2
        | B::And
        | B::Or
        | B::Xor
        | B::BitAnd
        | B::BitOr
        | B::BitXor
        | B::ShiftLeft
        | B::ShiftRight
        | B::NextAfter => return unsupported::<C>(op),
    })
}

/// `$body` with `$f` bound to the element function `(T, T) -> bool` of the comparison `$op` on an
/// ordered type (IEEE semantics for floats; `false < true`).
macro_rules! ordered_compare_fn {
    (@arm $T:ty, $f:ident, $body:expr, |$x:ident, $y:ident| $e:expr) => {{
        let $f = |$x: $T, $y: $T| -> bool { $e };
        $body
    }};
    ($op:expr, $T:ty, |$f:ident| $body:expr) => {{
        use nabla_core::CompareOp as C;
        match $op {
            C::Eq => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x == y),
            C::Ne => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x != y),
            C::Lt => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x < y),
            C::Le => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x <= y),
            C::Gt => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x > y),
            C::Ge => ordered_compare_fn!(@arm $T, $f, $body, |x, y| x >= y),
        }
    }};
}
pub(super) use ordered_compare_fn;

/// Comparisons of ordered types (real floats with IEEE semantics, integers, bool with `false < true`).
pub(super) fn compare_ordered<T: Element + PartialOrd>(
    op: CompareOp,
    a: &[T],
    la: &Layout,
    b: &[T],
    lb: &Layout,
) -> CpuStorage {
    let out: Vec<bool> = ordered_compare_fn!(op, T, |f| map2(a, la, b, lb, f));
    CpuStorage::from_vec(out)
}

/// Equality comparisons of complex numbers (both parts equal; NaN parts are unequal).
pub(super) fn compare_complex<C: Cplx>(
    op: CompareOp,
    a: &[C],
    la: &Layout,
    b: &[C],
    lb: &Layout,
) -> Result<CpuStorage> {
    let out: Vec<bool> = match op {
        CompareOp::Eq => map2(a, la, b, lb, |x: C, y: C| x == y),
        CompareOp::Ne => map2(a, la, b, lb, |x: C, y: C| x != y),
        _ => return Err(Error::dtype(op.name(), C::DTYPE)),
    };
    Ok(CpuStorage::from_vec(out))
}

/// `cond ? t : f` over three views of one shape.
pub(super) fn select<T: Element>(
    cond: &[bool],
    lc: &Layout,
    t: &[T],
    lt: &Layout,
    f: &[T],
    lf: &Layout,
) -> CpuStorage {
    CpuStorage::from_vec(map3(
        cond,
        lc,
        t,
        lt,
        f,
        lf,
        |c: bool, x: T, y: T| {
            if c { x } else { y }
        },
    ))
}
