//! ReLU as one pass each way (what PyTorch's `relu` and `threshold_backward` are): `fused.relu`
//! computes `x <= 0 ? 0 : x` without the boolean mask the composite `where(x <= 0, 0, x)`
//! materialises, and `fused.relu_vjp(y, g) = y <= 0 ? 0 : g` gives the cotangent from the output
//! `y` (`y <= 0` exactly where `x <= 0`).
//!
//! The values are those of the composite bit for bit (a NaN input gives NaN, as in PyTorch and
//! JAX: `NaN <= 0` is false), and so are the derivatives:
//! - both rules of `relu` are `relu_vjp(y, ·)` (its Jacobian is the diagonal 0/1 mask);
//! - `relu_vjp(y, g)` is linear in `g` with the same mask, and piecewise constant in `y` (derivative
//!   0, as the composite's comparison has none), so every order composes.
//!
//! [`Tensor::relu`] uses them on the CPU backend for `f32` and `f64` (where the row ops of
//! [`crate::fused_rows`] apply); other backends, traced programs and vmap keep the composite.

use crate::Tensor;
use crate::autograd::{ExtensionFamily, ExtensionRules};
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use rayon::prelude::*;
use std::mem::MaybeUninit;
use std::sync::Arc;

/// The two ops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ReluOp {
    /// `x -> x <= 0 ? 0 : x`.
    Relu,
    /// `(y, g) -> y <= 0 ? 0 : g`.
    ReluVjp,
}

/// The family binding the rules.
struct FusedRelu;

impl ExtensionFamily for FusedRelu {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.relu", |a, g, _| {
                Ok(vec![Some(relu_vjp(a.output, g)?)])
            })
            .forward("fused.relu", |a, t| {
                t[0].as_ref().map(|t| relu_vjp(a.output, t)).transpose()
            })
            // Linear in the cotangent; the output's part is zero (no gradient through the mask).
            .reverse("fused.relu_vjp", |a, g, _| {
                Ok(vec![None, Some(relu_vjp(&a.inputs[0], g)?)])
            })
            .forward("fused.relu_vjp", |a, t| {
                t[1].as_ref().map(|t| relu_vjp(&a.inputs[0], t)).transpose()
            })
    }
}

/// `relu(x)` in one pass (see the module documentation).
pub(crate) fn relu<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<FusedRelu>(Arc::new(ReluOp::Relu), &[x])
}

/// `y <= 0 ? 0 : g`.
fn relu_vjp<B: Backend>(y: &Tensor<B>, g: &Tensor<B>) -> Result<Tensor<B>> {
    Tensor::apply_family_op::<FusedRelu>(Arc::new(ReluOp::ReluVjp), &[y, g])
}

impl ReluOp {
    fn op_name(self) -> &'static str {
        match self {
            ReluOp::Relu => "fused.relu",
            ReluOp::ReluVjp => "fused.relu_vjp",
        }
    }

    fn arity(self) -> usize {
        match self {
            ReluOp::Relu => 1,
            ReluOp::ReluVjp => 2,
        }
    }
}

impl ExtensionOp for ReluOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        crate::fused_rows::same_float_inputs(self.op_name(), self.arity(), inputs)
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let op = self.op_name();
        let data: Vec<&HostData> = views.iter().map(|v| v.data).collect();
        match (self, &data[..]) {
            (ReluOp::Relu, [HostData::F32(x)]) => Ok(HostData::F32(run(x, x, alloc))),
            (ReluOp::Relu, [HostData::F64(x)]) => Ok(HostData::F64(run(x, x, alloc))),
            (ReluOp::ReluVjp, [HostData::F32(y), HostData::F32(g)]) if y.len() == g.len() => {
                Ok(HostData::F32(run(y, g, alloc)))
            }
            (ReluOp::ReluVjp, [HostData::F64(y), HostData::F64(g)]) if y.len() == g.len() => {
                Ok(HostData::F64(run(y, g, alloc)))
            }
            (_, other) => Err(Error::invalid(
                op,
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

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        true
    }
}

/// Elements per parallel task: a memory-bound pass, worth splitting from a few tens of thousands.
const CHUNK: usize = 1 << 15;

/// `mask <= 0 ? 0 : value` elementwise (`mask` and `value` are one slice for `relu` itself).
fn run<T: Gate>(mask: &[T], value: &[T], alloc: &dyn HostAllocator) -> Vec<T> {
    let n = mask.len();
    let mut out: Vec<T> = alloc.vec(n);
    let dst = &mut out.spare_capacity_mut()[..n];
    if n >= 2 * CHUNK {
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

nabla_core::simd_kernel! {
    /// `out[i] = mask[i] <= 0 ? 0 : value[i]`, vectorised (a compare and a select per lane); a NaN
    /// mask lets the value through.
    fn gate<T: Gate>(mask: &[T], value: &[T], out: &mut [MaybeUninit<T>]) {
        let zero = T::default();
        for ((o, &m), &v) in out.iter_mut().zip(mask).zip(value) {
            o.write(if m <= zero { zero } else { v });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{grad, hessian, jvp};
    use nabla_cpu::CpuBackend;

    fn composite(x: &Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>> {
        x.le(0.0)?.where_(0.0, x)
    }

    /// NaN propagates (as in PyTorch and JAX), infinities and signed zeros clamp as `max(x, 0)`,
    /// on the fused path and the composite alike.
    #[test]
    fn nan_propagates_and_the_rest_clamps() -> Result<()> {
        let cpu = CpuBackend::new();
        let v = [
            f64::NAN,
            f64::NEG_INFINITY,
            -0.0,
            -2.0,
            0.0,
            1e-310,
            f64::INFINITY,
        ];
        for dtype in [DType::F32, DType::F64] {
            let x = Tensor::from_vec(v.to_vec(), [v.len()], &cpu)?.cast(dtype)?;
            for y in [relu(&x)?, composite(&x)?, x.relu()?] {
                let y = y.cast(DType::F64)?.to_vec::<f64>()?;
                assert!(y[0].is_nan(), "{dtype:?}: {y:?}");
                let tiny = if dtype == DType::F32 { 0.0 } else { 1e-310 };
                assert_eq!(y[1..], [0.0, 0.0, 0.0, 0.0, tiny, f64::INFINITY]);
                assert!(y[1..5].iter().all(|z| z.is_sign_positive()), "{y:?}");
            }
        }
        Ok(())
    }

    fn bits(t: &Tensor<CpuBackend>) -> Vec<u64> {
        match t.dtype() {
            DType::F32 => t
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| u64::from(v.to_bits()))
                .collect(),
            _ => t
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
        }
    }

    /// Awkward values: signed zeros, NaN, infinities, tiny and ordinary numbers.
    fn awkward(n: usize) -> Vec<f64> {
        let special = [
            0.0,
            -0.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            1e-310,
            -1e-310,
        ];
        (0..n)
            .map(|i| {
                special
                    .get(i % 11)
                    .copied()
                    .unwrap_or((i as f64 * 0.37).sin() * 3.0)
            })
            .collect()
    }

    #[test]
    fn values_and_gradients_are_the_composites_bit_for_bit() -> Result<()> {
        let cpu = CpuBackend::new();
        // Empty, lane tails, and sizes split across tasks.
        for n in [0, 1, 7, 33, 2 * CHUNK + 5] {
            for dtype in [DType::F32, DType::F64] {
                let x = Tensor::from_vec(awkward(n), [n], &cpu)?.cast(dtype)?;
                assert_eq!(
                    bits(&relu(&x)?),
                    bits(&composite(&x)?),
                    "relu {n} {dtype:?}"
                );
                let g = Tensor::from_vec(awkward(n + 3)[3..].to_vec(), [n], &cpu)?.cast(dtype)?;
                let sum_g = |f: fn(&Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>>| {
                    let g = g.clone();
                    move |x: &Tensor<CpuBackend>| f(x)?.mul(&g)?.sum_all()
                };
                let fused = grad(sum_g(relu))(&x)?;
                let reference = grad(sum_g(composite))(&x)?;
                // NaN cotangents where the mask is 0 give 0 in both: compare the bits.
                assert_eq!(bits(&fused), bits(&reference), "grad {n} {dtype:?}");
            }
        }
        Ok(())
    }

    #[test]
    fn strided_inputs_and_every_order_match_the_composite() -> Result<()> {
        let cpu = CpuBackend::new();
        let vals: Vec<f64> = (0..24).map(|i| (i as f64 * 0.71).cos() * 2.0).collect();
        let x = Tensor::from_vec(vals, [4, 6], &cpu)?.t()?;
        assert_eq!(bits(&relu(&x)?), bits(&composite(&x)?));
        // Second order through the vjp op: a smooth factor makes the Hessian non-zero.
        let f = |r: fn(&Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>>| {
            move |x: &Tensor<CpuBackend>| r(&x.mul(x)?.sub(1.0)?)?.mul(x)?.sum_all()
        };
        let (h_fused, h_ref) = (hessian(f(relu))(&x)?, hessian(f(composite))(&x)?);
        assert_eq!(bits(&h_fused), bits(&h_ref));
        // Forward mode, and reverse over forward.
        let t = x.ones_like()?;
        let (_, jf) = jvp(|v: &Tensor<CpuBackend>| relu(v), &x, &t)?;
        let (_, jc) = jvp(|v: &Tensor<CpuBackend>| composite(v), &x, &t)?;
        assert_eq!(bits(&jf), bits(&jc));
        let rof = |r: fn(&Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>>| {
            let t = t.clone();
            move |x: &Tensor<CpuBackend>| {
                let (_, d) = jvp(|v: &Tensor<CpuBackend>| r(&v.mul(v)?)?.mul(v), x, &t)?;
                d.sum_all()
            }
        };
        assert_eq!(
            bits(&grad(rof(relu))(&x)?),
            bits(&grad(rof(composite))(&x)?)
        );
        Ok(())
    }

    #[test]
    fn bad_inputs_are_errors() -> Result<()> {
        let cpu = CpuBackend::new();
        let y = Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?;
        let g = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], &cpu)?;
        assert!(relu_vjp(&y, &g).is_err());
        assert!(relu_vjp(&y, &y.cast(DType::F64)?).is_err());
        let i = Tensor::from_vec(vec![1i64, 2], [2], &cpu)?;
        assert!(relu(&i).is_err());
        Ok(())
    }
}
