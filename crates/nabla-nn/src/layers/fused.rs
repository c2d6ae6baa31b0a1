//! What the fused layer ops (the LSTM layer, scaled dot-product attention, batch norm) share: their
//! derivative rules run the fused vector-Jacobian product op where nothing is tracked, and otherwise
//! (higher orders, forward mode) differentiate the composite formula of the same output; their vjp
//! ops return the input cotangents flattened one after another.

use nabla_core::{Error, FastPath, FastPathOp, Result};
use nabla_tensor::{RuleArgs, Tensor, jvp_n, vjp_n};

/// The op a rule runs for, when it is a fast path `O` that `is_forward` accepts (the family's
/// forward op; its vjp op has no rules), or an error naming `name`.
pub(crate) fn recorded_op<B: nabla_core::Backend, O: FastPath>(
    args: &RuleArgs<'_, B>,
    name: &'static str,
    is_forward: impl Fn(&O) -> bool,
) -> Result<FastPathOp<O>> {
    match args.op.as_any().downcast_ref::<FastPathOp<O>>() {
        Some(op) if is_forward(&op.op) => Ok(*op),
        _ => Err(Error::invalid(
            name,
            format!("the rule was bound to another op ({})", args.op.name()),
        )),
    }
}

/// The forward rule of a fused op whose output `composite` computes from the op's inputs: the
/// composite's Jacobian-vector product with the tangents (zero where `None`).
pub(crate) fn composite_jvp<B: nabla_core::Backend>(
    args: &RuleArgs<'_, B>,
    tangents: &[Option<Tensor<B>>],
    composite: impl FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
) -> Result<Option<Tensor<B>>> {
    let (inputs, tangents): (Vec<Tensor<B>>, Vec<Tensor<B>>) = args
        .inputs
        .iter()
        .zip(tangents)
        .map(|(x, t)| Ok((x.clone(), t.clone().map_or_else(|| x.zeros_like(), Ok)?)))
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    let (_, tangent) = jvp_n(composite, &inputs, &tangents)?;
    Ok(Some(tangent))
}

/// The cotangents of the op's inputs by the composite's vector-Jacobian product with `g`, when the
/// pass builds a graph (`g` or an input is tracked: a higher-order derivative will differentiate
/// them again); `None` when the fused vjp op should run instead.
pub(crate) fn composite_vjp_if_tracked<B: nabla_core::Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    composite: impl FnOnce(&[Tensor<B>]) -> Result<Tensor<B>>,
) -> Result<Option<Vec<Option<Tensor<B>>>>> {
    let tracked = g.requires_grad() || args.inputs.iter().any(Tensor::requires_grad);
    if !tracked {
        return Ok(None);
    }
    let (_, grads) = vjp_n(composite, args.inputs, g)?;
    Ok(Some(grads.into_iter().map(Some).collect()))
}

/// Cuts the flat output of a vjp op into consecutive pieces shaped like `likes` (each `None` in
/// `likes` takes no elements and gives `None`).
pub(crate) fn split_flat<B: nabla_core::Backend>(
    flat: &Tensor<B>,
    likes: &[Option<&Tensor<B>>],
) -> Result<Vec<Option<Tensor<B>>>> {
    let mut start = 0;
    likes
        .iter()
        .map(|like| {
            like.map(|like| {
                let piece = flat
                    .narrow(0, start, like.numel())?
                    .reshape(like.shape().to_vec())?;
                start += like.numel();
                Ok(piece)
            })
            .transpose()
        })
        .collect()
}

/// Helpers of the fused ops' unit tests.
#[cfg(test)]
pub(crate) mod test_support {
    use nabla_core::{Backend, DType, FastKernels, FastPath, FastPathOp};
    use nabla_cpu::CpuBackend;
    use nabla_tensor::Tensor;

    /// The CPU backend's fast-path kernels.
    pub(crate) fn on_cpu_kernels() -> FastKernels {
        CpuBackend::new()
            .fast_path_kernels()
            .expect("the CPU backend has fast-path kernels")
    }

    /// `op` run by the CPU backend's fast-path kernels.
    pub(crate) fn on_cpu<O: FastPath>(op: O) -> FastPathOp<O> {
        FastPathOp {
            op,
            kernels: on_cpu_kernels(),
        }
    }

    /// The elements of `t` (any layout) as `f64`.
    pub(crate) fn vals(t: &Tensor<CpuBackend>) -> Vec<f64> {
        t.contiguous().unwrap().to_vec::<f64>().unwrap()
    }

    /// Asserts `a` and `b` agree to `tol` relative to `1 + |b|` (NaN matching NaN).
    #[track_caller]
    pub(crate) fn near(a: &[f64], b: &[f64], tol: f64) {
        assert_eq!(a.len(), b.len());
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let ok = (x - y).abs() <= tol * (1.0 + y.abs()) || (x.is_nan() && y.is_nan());
            assert!(ok, "element {i}: {x} vs {y}");
        }
    }

    /// The scalar 1 in `f64`, a loss's cotangent.
    pub(crate) fn one() -> Tensor<CpuBackend> {
        Tensor::ones([], DType::F64, &CpuBackend::new()).unwrap()
    }

    /// Asserts that `<jvp(f)(x; t), 1> = <t, vjp(f)(x; 1)>` for a scalar `f`: forward mode agrees with
    /// reverse mode.
    #[track_caller]
    pub(crate) fn assert_adjoint(
        f: impl Fn(&[Tensor<CpuBackend>]) -> nabla_core::Result<Tensor<CpuBackend>>,
        x: &[Tensor<CpuBackend>],
        t: &[Tensor<CpuBackend>],
    ) {
        let (_, jv) = nabla_tensor::jvp_n(&f, x, t).unwrap();
        let (_, gs) = nabla_tensor::vjp_n(&f, x, &one()).unwrap();
        let dot = |a: &Tensor<CpuBackend>, b: &Tensor<CpuBackend>| {
            a.mul(b).unwrap().sum_all().unwrap().item::<f64>().unwrap()
        };
        let rhs: f64 = gs.iter().zip(t).map(|(g, t)| dot(g, t)).sum();
        let lhs = jv.item::<f64>().unwrap();
        assert!(
            (lhs - rhs).abs() < 1e-10 * (1.0 + rhs.abs()),
            "{lhs} vs {rhs}"
        );
    }
}
