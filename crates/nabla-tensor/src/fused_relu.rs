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
//! [`Tensor::relu`] uses them for `f32` and `f64` on a backend with fast-path kernels
//! ([`Backend::fast_path_kernels`], which runs [`ReluOp`]); other backends, traced programs and vmap
//! keep the composite.

use crate::Tensor;
use crate::autograd::{ExtensionFamily, ExtensionRules, RuleArgs};
use nabla_core::fast_path::ReluOp;
use nabla_core::{Backend, Error, FastKernels, FastPathOp, Result};
use std::sync::Arc;

/// The family binding the rules.
struct FusedRelu;

impl ExtensionFamily for FusedRelu {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.relu", |a, g, _| {
                Ok(vec![Some(relu_vjp(kernels_of(a)?, a.output, g)?)])
            })
            .forward("fused.relu", |a, t| {
                let kernels = kernels_of(a)?;
                t[0].as_ref()
                    .map(|t| relu_vjp(kernels, a.output, t))
                    .transpose()
            })
            // Linear in the cotangent; the output's part is zero (no gradient through the mask).
            .reverse("fused.relu_vjp", |a, g, _| {
                Ok(vec![None, Some(relu_vjp(kernels_of(a)?, &a.inputs[0], g)?)])
            })
            .forward("fused.relu_vjp", |a, t| {
                let kernels = kernels_of(a)?;
                t[1].as_ref()
                    .map(|t| relu_vjp(kernels, &a.inputs[0], t))
                    .transpose()
            })
    }
}

/// The kernels that ran the rule's node.
fn kernels_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<FastKernels> {
    args.op
        .as_any()
        .downcast_ref::<FastPathOp<ReluOp>>()
        .map(|op| op.kernels)
        .ok_or_else(|| Error::invalid("fused.relu", "rule called with another op"))
}

/// `relu(x)` in one pass by `kernels` (see the module documentation).
pub(crate) fn relu<B: Backend>(kernels: FastKernels, x: &Tensor<B>) -> Result<Tensor<B>> {
    let op = FastPathOp {
        op: ReluOp::Relu,
        kernels,
    };
    Tensor::apply_family_op::<FusedRelu>(Arc::new(op), &[x])
}

/// `y <= 0 ? 0 : g`.
fn relu_vjp<B: Backend>(kernels: FastKernels, y: &Tensor<B>, g: &Tensor<B>) -> Result<Tensor<B>> {
    let op = FastPathOp {
        op: ReluOp::ReluVjp,
        kernels,
    };
    Tensor::apply_family_op::<FusedRelu>(Arc::new(op), &[y, g])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{grad, hessian, jvp};
    use nabla_core::DType;
    use nabla_cpu::CpuBackend;

    fn kernels() -> FastKernels {
        CpuBackend::new()
            .fast_path_kernels()
            .expect("the CPU backend has fast-path kernels")
    }

    fn fused_relu(x: &Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>> {
        relu(kernels(), x)
    }

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
            for y in [relu(kernels(), &x)?, composite(&x)?, x.relu()?] {
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
        // Empty, lane tails, and sizes split across the CPU kernel's tasks (of 2^15 elements).
        for n in [0, 1, 7, 33, 2 * (1 << 15) + 5] {
            for dtype in [DType::F32, DType::F64] {
                let x = Tensor::from_vec(awkward(n), [n], &cpu)?.cast(dtype)?;
                assert_eq!(
                    bits(&relu(kernels(), &x)?),
                    bits(&composite(&x)?),
                    "relu {n} {dtype:?}"
                );
                let g = Tensor::from_vec(awkward(n + 3)[3..].to_vec(), [n], &cpu)?.cast(dtype)?;
                let sum_g = |f: fn(&Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>>| {
                    let g = g.clone();
                    move |x: &Tensor<CpuBackend>| f(x)?.mul(&g)?.sum_all()
                };
                let fused = grad(sum_g(fused_relu))(&x)?;
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
        assert_eq!(bits(&relu(kernels(), &x)?), bits(&composite(&x)?));
        // Second order through the vjp op: a smooth factor makes the Hessian non-zero.
        let f = |r: fn(&Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>>| {
            move |x: &Tensor<CpuBackend>| r(&x.mul(x)?.sub(1.0)?)?.mul(x)?.sum_all()
        };
        let (h_fused, h_ref) = (hessian(f(fused_relu))(&x)?, hessian(f(composite))(&x)?);
        assert_eq!(bits(&h_fused), bits(&h_ref));
        // Forward mode, and reverse over forward.
        let t = x.ones_like()?;
        let (_, jf) = jvp(|v: &Tensor<CpuBackend>| relu(kernels(), v), &x, &t)?;
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
            bits(&grad(rof(fused_relu))(&x)?),
            bits(&grad(rof(composite))(&x)?)
        );
        Ok(())
    }

    #[test]
    fn bad_inputs_are_errors() -> Result<()> {
        let cpu = CpuBackend::new();
        let y = Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?;
        let g = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], &cpu)?;
        assert!(relu_vjp(kernels(), &y, &g).is_err());
        assert!(relu_vjp(kernels(), &y, &y.cast(DType::F64)?).is_err());
        let i = Tensor::from_vec(vec![1i64, 2], [2], &cpu)?;
        assert!(relu(kernels(), &i).is_err());
        Ok(())
    }
}
