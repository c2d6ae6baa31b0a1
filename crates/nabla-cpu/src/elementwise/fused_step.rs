//! Evaluation of one step of a fused kernel over a block, for [`super::fused`]: the element functions
//! of the op-by-op kernels ([`real_unary_fn`], [`real_binary_fn`], [`bool_binary_fn`],
//! [`ordered_compare_fn`], the SIMD slice kernels, casts) run in the same multiversioned loops
//! ([`apply1`], [`apply2`]) over block slices, with fast paths for one-value (broadcast or constant)
//! operands; plus the gathers that load a block of a strided view.

use super::binary::{bool_binary_fn, ordered_compare_fn, real_binary_fn};
use super::traits::Real;
use super::unary::{real_predicate_fn, real_unary_fn};
use crate::strided::{apply1, apply2};
use nabla_core::CastFrom;
use nabla_core::{DType, Element, Error, FusedOp, Result, UnaryOp};
use std::mem::MaybeUninit;

const OP: &str = "fused";

/// Values of one step over a block: a slice, or one value for every element.
#[derive(Clone, Copy)]
pub(super) enum Val<'b, X> {
    /// One value per element.
    Slice(&'b [X]),
    /// One value for every element.
    Splat(X),
}

/// Block values of a step of either lane type.
pub(super) enum AnyVal<'b, T> {
    /// Values of the float type.
    Real(Val<'b, T>),
    /// Bools.
    Bool(Val<'b, bool>),
}

/// Where a step writes a block.
pub(super) enum Dst<'b, T> {
    /// Values of the float type.
    Real(&'b mut [MaybeUninit<T>]),
    /// Bools.
    Bool(&'b mut [MaybeUninit<bool>]),
}

/// A coalesced strided view, for gathering a block at any element.
pub(super) struct Walk {
    pub(super) dims: Vec<usize>,
    pub(super) strides: Vec<isize>,
    pub(super) offset: isize,
}

impl<T> Dst<'_, T> {
    /// Number of elements.
    pub(super) fn len(&self) -> usize {
        match self {
            Dst::Real(d) => d.len(),
            Dst::Bool(d) => d.len(),
        }
    }

    /// Elements `off..off + len`, as a destination of its own.
    pub(super) fn block(&mut self, off: usize, len: usize) -> Dst<'_, T> {
        match self {
            Dst::Real(d) => Dst::Real(&mut d[off..off + len]),
            Dst::Bool(d) => Dst::Bool(&mut d[off..off + len]),
        }
    }
}

/// Views `s` as possibly-uninitialised memory, for the loops that write outputs.
pub(super) fn as_uninit<X: Copy>(s: &mut [X]) -> &mut [MaybeUninit<X>] {
    // SAFETY: `MaybeUninit<X>` has the layout of `X`, and every writer in this module stores
    // initialised values, so the slice stays initialised.
    unsafe { &mut *(s as *mut [X] as *mut [MaybeUninit<X>]) }
}

pub(super) fn mismatch() -> Error {
    Error::invalid(OP, "a step's operands do not have the dtypes its op needs")
}

/// Copies the donated input's values of a block (the output buffer's current contents) into a slot.
pub(super) fn load<X: Copy>(out: &[MaybeUninit<X>], dst: &mut [X]) {
    for (d, o) in dst.iter_mut().zip(out) {
        // SAFETY: the donated output buffer starts initialised (it holds the donated input) and is only
        // ever overwritten with initialised values, after this block's load.
        *d = unsafe { o.assume_init() };
    }
}

/// Gathers the elements `start..start + dst.len()` (row-major) of a walked view into `dst`.
pub(super) fn gather<X: Copy>(x: &[X], w: &Walk, start: usize, dst: &mut [X]) {
    let nd = w.dims.len();
    if nd == 0 {
        dst.fill(x[w.offset as usize]);
        return;
    }
    let (inner, s) = (w.dims[nd - 1], w.strides[nd - 1]);
    let mut index = vec![0usize; nd];
    let (mut rem, mut pos) = (start, w.offset);
    for ax in (0..nd).rev() {
        index[ax] = rem % w.dims[ax];
        rem /= w.dims[ax];
        pos += index[ax] as isize * w.strides[ax];
    }
    let mut done = 0;
    while done < dst.len() {
        let run = (inner - index[nd - 1]).min(dst.len() - done);
        let out = &mut dst[done..done + run];
        match s {
            1 => out.copy_from_slice(&x[pos as usize..pos as usize + run]),
            0 => out.fill(x[pos as usize]),
            _ => {
                for (j, o) in out.iter_mut().enumerate() {
                    *o = x[(pos + j as isize * s) as usize];
                }
            }
        }
        done += run;
        index[nd - 1] += run;
        pos += run as isize * s;
        if index[nd - 1] == inner {
            index[nd - 1] = 0;
            pos -= inner as isize * s;
            for ax in (0..nd - 1).rev() {
                index[ax] += 1;
                pos += w.strides[ax];
                if index[ax] < w.dims[ax] {
                    break;
                }
                pos -= w.dims[ax] as isize * w.strides[ax];
                index[ax] = 0;
            }
        }
    }
}

/// `dst[i] = f(x[i])`.
pub(super) fn map_val<X: Copy, U>(x: Val<'_, X>, dst: &mut [MaybeUninit<U>], f: &impl Fn(X) -> U) {
    match x {
        Val::Slice(s) => apply1(s, dst, f),
        Val::Splat(v) => dst.iter_mut().for_each(|o| {
            o.write(f(v));
        }),
    }
}

/// `dst[i] = f(x[i], y[i])`, with scalar fast paths.
pub(super) fn zip_val<A: Copy, B: Copy, U>(
    x: Val<'_, A>,
    y: Val<'_, B>,
    dst: &mut [MaybeUninit<U>],
    f: &impl Fn(A, B) -> U,
) {
    match (x, y) {
        (Val::Slice(a), Val::Slice(b)) => apply2(a, b, dst, f),
        (Val::Slice(a), Val::Splat(v)) => apply1(a, dst, &|u| f(u, v)),
        (Val::Splat(u), y) => map_val(y, dst, &|v| f(u, v)),
    }
}

/// Evaluates one op step over a block, reading operands through `get`.
pub(super) fn eval<'b, T: Real + CastFrom>(
    op: FusedOp,
    get: &dyn Fn(usize) -> AnyVal<'b, T>,
    dst: Dst<'_, T>,
) -> Result<()> {
    use AnyVal as A;
    match (op, dst) {
        (FusedOp::Unary(u, a), Dst::Real(d)) => {
            let A::Real(x) = get(a) else {
                return Err(mismatch());
            };
            match (T::slice_kernel(u), x) {
                (Some(k), Val::Slice(x)) => k(x, d),
                _ => real_unary_fn!(u, T, |f| map_val(x, d, &f))
                    .ok_or_else(|| Error::dtype(u.name(), T::DTYPE))?,
            }
        }
        (FusedOp::Unary(u, a), Dst::Bool(d)) => match get(a) {
            A::Real(x) => real_predicate_fn!(u, T, |f| map_val(x, d, &f))
                .ok_or_else(|| Error::dtype(u.name(), T::DTYPE))?,
            A::Bool(x) if u == UnaryOp::Not => map_val(x, d, &|v: bool| !v),
            A::Bool(_) => return Err(Error::dtype(u.name(), DType::Bool)),
        },
        (FusedOp::Binary(op, a, b), Dst::Real(d)) => match (get(a), get(b)) {
            (A::Real(x), A::Real(y)) => real_binary_fn!(op, T, |f| zip_val(x, y, d, &f))
                .ok_or_else(|| Error::dtype(op.name(), T::DTYPE))?,
            _ => return Err(mismatch()),
        },
        (FusedOp::Binary(op, a, b), Dst::Bool(d)) => match (get(a), get(b)) {
            (A::Bool(x), A::Bool(y)) => bool_binary_fn!(op, |f| zip_val(x, y, d, &f))
                .ok_or_else(|| Error::dtype(op.name(), DType::Bool))?,
            _ => return Err(mismatch()),
        },
        (FusedOp::Compare(op, a, b), Dst::Bool(d)) => match (get(a), get(b)) {
            (A::Real(x), A::Real(y)) => ordered_compare_fn!(op, T, |f| zip_val(x, y, d, &f)),
            (A::Bool(x), A::Bool(y)) => ordered_compare_fn!(op, bool, |f| zip_val(x, y, d, &f)),
            _ => return Err(mismatch()),
        },
        (FusedOp::Select(c, t, e), dst) => {
            let A::Bool(c) = get(c) else {
                return Err(mismatch());
            };
            match (get(t), get(e), dst) {
                (A::Real(t), A::Real(e), Dst::Real(d)) => select(c, t, e, d),
                (A::Bool(t), A::Bool(e), Dst::Bool(d)) => select(c, t, e, d),
                _ => return Err(mismatch()),
            }
        }
        (FusedOp::Cast(_, a), Dst::Real(d)) => match get(a) {
            A::Real(x) => map_val(x, d, &|v: T| T::cast_from(v.to_scalar())),
            A::Bool(x) => map_val(x, d, &|v: bool| T::cast_from(v.to_scalar())),
        },
        (FusedOp::Cast(_, a), Dst::Bool(d)) => match get(a) {
            A::Real(x) => map_val(x, d, &|v: T| bool::cast_from(v.to_scalar())),
            A::Bool(x) => map_val(x, d, &|v: bool| v),
        },
        _ => return Err(mismatch()),
    }
    Ok(())
}

/// `dst[i] = c[i] ? t[i] : e[i]`, one loop per combination of slices and splats, so that each loop
/// is a branch-free blend the compiler vectorises (a per-element branch on random signs, as in
/// ReLU's `where(x <= 0, 0, x)`, mispredicts half the time).
pub(super) fn select<X: Copy>(
    c: Val<'_, bool>,
    t: Val<'_, X>,
    e: Val<'_, X>,
    dst: &mut [MaybeUninit<X>],
) {
    let c = match c {
        Val::Splat(true) => return map_val(t, dst, &|v| v),
        Val::Splat(false) => return map_val(e, dst, &|v| v),
        Val::Slice(c) => &c[..dst.len()],
    };
    match (t, e) {
        (Val::Slice(t), Val::Slice(e)) => {
            let (t, e) = (&t[..dst.len()], &e[..dst.len()]);
            for (((o, &c), &t), &e) in dst.iter_mut().zip(c).zip(t).zip(e) {
                o.write(if c { t } else { e });
            }
        }
        (Val::Splat(t), Val::Slice(e)) => {
            for ((o, &c), &e) in dst.iter_mut().zip(c).zip(&e[..c.len()]) {
                o.write(if c { t } else { e });
            }
        }
        (Val::Slice(t), Val::Splat(e)) => {
            for ((o, &c), &t) in dst.iter_mut().zip(c).zip(&t[..c.len()]) {
                o.write(if c { t } else { e });
            }
        }
        (Val::Splat(t), Val::Splat(e)) => {
            for (o, &c) in dst.iter_mut().zip(c) {
                o.write(if c { t } else { e });
            }
        }
    }
}
