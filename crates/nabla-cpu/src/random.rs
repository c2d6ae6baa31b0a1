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
pub(crate) fn random(
    dist: Distribution,
    len: usize,
    dtype: DType,
    key: RngKey,
) -> Result<CpuStorage> {
    let _ = (dist, len, dtype, key);
    Err(pending("random"))
}
