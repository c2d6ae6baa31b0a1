//! ReLU as one pass each way (what PyTorch's `relu` and `threshold_backward` are): `x <= 0 ? 0 : x`
//! without the boolean mask the composite materialises, and `y <= 0 ? 0 : g` for the cotangent from
//! the output `y`. A NaN passes through (`NaN <= 0` is false), as in PyTorch and JAX.

use nabla_core::fast_path::ReluOp;
use nabla_core::{Error, FastPath, HostAllocator, HostData, HostView, Result};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// Runs `op` on its one (`relu`) or two (`relu_vjp`: the output, the cotangent) inputs.
pub(super) fn run_op(
    op: ReluOp,
    views: &[HostView<'_>],
    alloc: &dyn HostAllocator,
) -> Result<HostData> {
    let data: Vec<&HostData> = views.iter().map(|v| v.data).collect();
    match (op, &data[..]) {
        (ReluOp::Relu, [HostData::F32(x)]) => Ok(HostData::F32(run(x, x, alloc))),
        (ReluOp::Relu, [HostData::F64(x)]) => Ok(HostData::F64(run(x, x, alloc))),
        (ReluOp::ReluVjp, [HostData::F32(y), HostData::F32(g)]) if y.len() == g.len() => {
            Ok(HostData::F32(run(y, g, alloc)))
        }
        (ReluOp::ReluVjp, [HostData::F64(y), HostData::F64(g)]) if y.len() == g.len() => {
            Ok(HostData::F64(run(y, g, alloc)))
        }
        (_, other) => Err(Error::invalid(
            op.name(),
            format!(
                "unsupported inputs {:?}",
                other
                    .iter()
                    .map(|d| (d.dtype(), d.len()))
                    .collect::<Vec<_>>()
            ),
        )),
    }
}

/// Elements per parallel task: a memory-bound pass, worth splitting from a few tens of thousands.
const CHUNK: usize = 1 << 15;

/// `mask <= 0 ? 0 : value` elementwise (`mask` and `value` are one slice for `relu` itself).
fn run<T: Gate>(mask: &[T], value: &[T], alloc: &dyn HostAllocator) -> Vec<T> {
    let n = mask.len();
    let mut out: Vec<T> = alloc.vec(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    if crate::splits(n, 2 * CHUNK) {
        dst.par_chunks_mut(CHUNK).enumerate().for_each(|(t, o)| {
            let r = t * CHUNK..t * CHUNK + o.len();
            gate(&mask[r.clone()], &value[r], o);
        });
    } else {
        gate(mask, value, dst);
    }
    // SAFETY: `gate` wrote all `n` elements.
    unsafe { out.set_len(n) };
    out
}

/// The float types the kernel runs on.
trait Gate: Copy + PartialOrd + Default + Send + Sync {}
impl Gate for f32 {}
impl Gate for f64 {}

crate::simd_kernel! {
    /// `out[i] = mask[i] <= 0 ? 0 : value[i]`, vectorised (a compare and a select per lane); a NaN
    /// mask lets the value through.
    fn gate<T: Gate>(mask: &[T], value: &[T], out: &mut [MaybeUninit<T>]) {
        let zero = T::default();
        for ((o, &m), &v) in out.iter_mut().zip(mask).zip(value) {
            o.write(if m <= zero { zero } else { v });
        }
    }
}
