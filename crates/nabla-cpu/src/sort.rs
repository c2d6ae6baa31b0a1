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
pub(crate) fn sort(
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
    descending: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    let _ = (x, layout, axis, descending);
    Err(pending("sort"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn topk(
    x: &CpuStorage,
    layout: &Layout,
    axis: usize,
    k: usize,
    largest: bool,
) -> Result<(CpuStorage, CpuStorage)> {
    let _ = (x, layout, axis, k, largest);
    Err(pending("topk"))
}
