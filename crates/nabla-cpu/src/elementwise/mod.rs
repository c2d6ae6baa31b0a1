//! Elementwise kernels: copy, cast, unary and binary math, comparisons and select.
//!
//! Each entry point checks its operands (dtype support, equal dtypes, equal shapes), dispatches once on
//! the runtime dtype to a kernel generic over an element family ([`traits`]), and walks the strided views
//! with the shared walkers of [`crate::strided`], whose contiguous and broadcast-scalar inner loops
//! vectorise and whose large outputs are split across threads.

mod binary;
mod cast;
mod complex;
mod complex_edge;
mod complex_inverse;
mod erf;
mod fused;
mod fused_step;
mod traits;
mod unary;
mod vector;

#[cfg(test)]
mod fused_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_cases;

pub(crate) use fused::{fast_dtype, fused, fused_many};
pub(crate) use traits::Real;

use crate::CpuStorage;
use crate::strided::gather_view;
use nabla_core::{BinaryOp, CompareOp, DType, Error, Layout, Result, UnaryOp, dispatch_dtype};

/// Checks that two operands have one dtype and one shape.
fn check_pair(
    op: &'static str,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<()> {
    if a.dtype() != b.dtype() {
        return Err(Error::DTypeMismatch {
            op,
            lhs: a.dtype(),
            rhs: b.dtype(),
        });
    }
    if la.shape() != lb.shape() {
        return Err(Error::shapes(op, la.shape(), lb.shape()));
    }
    Ok(())
}

/// Materialises a view of any dtype into a new contiguous buffer.
pub(crate) fn copy(x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
    Ok(dispatch_dtype!(x.dtype(), T => {
        CpuStorage::from_vec(gather_view(x.typed::<T>("copy")?, layout))
    }))
}

/// Elementwise unary `op`; the result dtype follows [`UnaryOp::output_dtype`].
pub(crate) fn unary(op: UnaryOp, x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
    let name = op.name();
    let dt = x.dtype();
    if op.output_dtype(dt).is_none() {
        return Err(Error::dtype(name, dt));
    }
    dispatch_dtype!(dt, T, {
        real => unary::real::<T>(op, x.typed(name)?, layout),
        complex => unary::complex::<T>(op, x.typed(name)?, layout),
        int => unary::int::<T>(op, x.typed(name)?, layout),
        bool => unary::boolean(op, x.typed(name)?, layout),
        half => Err(Error::dtype(name, dt)),
    })
}

/// Elementwise binary `op` on two views of one shape and dtype.
pub(crate) fn binary(
    op: BinaryOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let name = op.name();
    check_pair(name, a, la, b, lb)?;
    let dt = a.dtype();
    if !op.supports(dt) {
        return Err(Error::dtype(name, dt));
    }
    dispatch_dtype!(dt, T, {
        real => binary::real::<T>(op, a.typed(name)?, la, b.typed(name)?, lb),
        complex => binary::complex::<T>(op, a.typed(name)?, la, b.typed(name)?, lb),
        int => binary::int::<T>(op, a.typed(name)?, la, b.typed(name)?, lb),
        bool => binary::boolean(op, a.typed(name)?, la, b.typed(name)?, lb),
        half => Err(Error::dtype(name, dt)),
    })
}

/// Elementwise comparison of two views of one shape and dtype, giving bool.
pub(crate) fn compare(
    op: CompareOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let name = op.name();
    check_pair(name, a, la, b, lb)?;
    let dt = a.dtype();
    if !op.supports(dt) {
        return Err(Error::dtype(name, dt));
    }
    dispatch_dtype!(dt, T, {
        real | int | bool => {
            Ok(binary::compare_ordered::<T>(op, a.typed(name)?, la, b.typed(name)?, lb))
        },
        complex => binary::compare_complex::<T>(op, a.typed(name)?, la, b.typed(name)?, lb),
        half => Err(Error::dtype(name, dt)),
    })
}

/// `cond ? on_true : on_false` elementwise; `cond` is bool, the branches share a dtype (any dtype).
pub(crate) fn select(
    cond: &CpuStorage,
    lc: &Layout,
    on_true: &CpuStorage,
    lt: &Layout,
    on_false: &CpuStorage,
    lf: &Layout,
) -> Result<CpuStorage> {
    const OP: &str = "where";
    if cond.dtype() != DType::Bool {
        return Err(Error::dtype(OP, cond.dtype())
            .with_hint("the condition must be bool; compare or cast it first"));
    }
    check_pair(OP, on_true, lt, on_false, lf)?;
    if lc.shape() != lt.shape() {
        return Err(Error::shapes(OP, lc.shape(), lt.shape())
            .with_hint("the condition and the branches must have one shape"));
    }
    let c = cond.typed::<bool>(OP)?;
    Ok(dispatch_dtype!(on_true.dtype(), T => {
        binary::select::<T>(c, lc, on_true.typed(OP)?, lt, on_false.typed(OP)?, lf)
    }))
}

/// Converts every element to `dtype` with NumPy `astype` semantics (see [`cast`]).
pub(crate) fn cast(x: &CpuStorage, layout: &Layout, dtype: DType) -> Result<CpuStorage> {
    if x.dtype() == dtype {
        return copy(x, layout);
    }
    Ok(dispatch_dtype!(x.dtype(), S => {
        let src = x.typed::<S>("cast")?;
        dispatch_dtype!(dtype, D => cast::cast_view::<S, D>(src, layout))
    }))
}
