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
pub(crate) fn reduce(
    op: ReduceOp,
    x: &CpuStorage,
    layout: &Layout,
    axes: &[usize],
) -> Result<CpuStorage> {
    let _ = (op, x, layout, axes);
    Err(pending("reduce"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn arg_reduce(
    op: ArgReduceOp,
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
) -> Result<CpuStorage> {
    let _ = (op, x, layout, axis);
    Err(pending("arg_reduce"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn cumsum(x: &CpuStorage, layout: &Layout, axis: usize) -> Result<CpuStorage> {
    let _ = (x, layout, axis);
    Err(pending("cumsum"))
}
