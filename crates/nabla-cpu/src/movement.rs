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
pub(crate) fn pad(
    x: &CpuStorage,
    layout: &Layout,
    pads: &[(usize, usize)],
    value: Scalar,
) -> Result<CpuStorage> {
    let _ = (x, layout, pads, value);
    Err(pending("pad"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn concat(parts: &[(&CpuStorage, &Layout)], axis: usize) -> Result<CpuStorage> {
    let _ = (parts, axis);
    Err(pending("concat"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn gather(
    x: &CpuStorage,
    lx: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
) -> Result<CpuStorage> {
    let _ = (x, lx, axis, index, li);
    Err(pending("gather"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn index_select(
    x: &CpuStorage,
    lx: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
) -> Result<CpuStorage> {
    let _ = (x, lx, axis, index, li);
    Err(pending("index_select"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn scatter_add(
    dst: &CpuStorage,
    ld: &Layout,
    axis: usize,
    index: &CpuStorage,
    li: &Layout,
    src: &CpuStorage,
    ls: &Layout,
) -> Result<CpuStorage> {
    let _ = (dst, ld, axis, index, li, src, ls);
    Err(pending("scatter_add"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn one_hot(
    index: &CpuStorage,
    layout: &Layout,
    classes: usize,
    dtype: DType,
) -> Result<CpuStorage> {
    let _ = (index, layout, classes, dtype);
    Err(pending("one_hot"))
}
