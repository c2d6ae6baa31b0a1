//! (being written)

use crate::CpuStorage;
#[allow(unused_imports)]
use nabla_core::*;

fn pending(op: &'static str) -> Error {
    Error::UnsupportedOp {
        op,
        backend: "cpu (kernel being written)".into(),
    }
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn copy(x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
    let _ = (x, layout);
    Err(pending("copy"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn unary(op: UnaryOp, x: &CpuStorage, layout: &Layout) -> Result<CpuStorage> {
    let _ = (op, x, layout);
    Err(pending("unary"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn binary(
    op: BinaryOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let _ = (op, a, la, b, lb);
    Err(pending("binary"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn compare(
    op: CompareOp,
    a: &CpuStorage,
    la: &Layout,
    b: &CpuStorage,
    lb: &Layout,
) -> Result<CpuStorage> {
    let _ = (op, a, la, b, lb);
    Err(pending("compare"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn select(
    cond: &CpuStorage,
    lc: &Layout,
    on_true: &CpuStorage,
    lt: &Layout,
    on_false: &CpuStorage,
    lf: &Layout,
) -> Result<CpuStorage> {
    let _ = (cond, lc, on_true, lt, on_false, lf);
    Err(pending("select"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn cast(x: &CpuStorage, layout: &Layout, dtype: DType) -> Result<CpuStorage> {
    let _ = (x, layout, dtype);
    Err(pending("cast"))
}
