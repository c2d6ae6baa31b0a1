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
pub(crate) fn conv2d(
    x: &CpuStorage,
    lx: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    params: &Conv2dParams,
) -> Result<CpuStorage> {
    let _ = (x, lx, w, lw, params);
    Err(pending("conv2d"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv2d_input_grad(
    dy: &CpuStorage,
    ldy: &Layout,
    w: &CpuStorage,
    lw: &Layout,
    input_hw: (usize, usize),
    params: &Conv2dParams,
) -> Result<CpuStorage> {
    let _ = (dy, ldy, w, lw, input_hw, params);
    Err(pending("conv2d_input_grad"))
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn conv2d_weight_grad(
    x: &CpuStorage,
    lx: &Layout,
    dy: &CpuStorage,
    ldy: &Layout,
    kernel_hw: (usize, usize),
    params: &Conv2dParams,
) -> Result<CpuStorage> {
    let _ = (x, lx, dy, ldy, kernel_hw, params);
    Err(pending("conv2d_weight_grad"))
}
