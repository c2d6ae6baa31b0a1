//! The fused attention as extension ops, with their derivative rules.
//!
//! `fused.attention` maps `q` `[..., L, E]`, `k` `[..., S, E]` and `v` `[..., S, Ev]` (one leading
//! shape) to `[..., L, Ev + 1]`: each query's output row, then its log-sum-exp, which the backward
//! kernel reads to recompute the probabilities without a second softmax. `fused.attention_vjp`
//! maps the three inputs, that packed output and its cotangent to the cotangents of `q`, `k` and
//! `v`, flattened one after the other.
//!
//! Derivatives of any order: the reverse rule runs the fused vjp op when nothing it returns is
//! tracked (plain `backward`, the training case); when the pass builds a graph (`create_graph`,
//! higher order) and for forward mode, it differentiates the composite formula of the packed
//! output ([`super::composite_packed`]), which has the same values up to rounding but keeps the
//! `[L, S]` probabilities.

use super::composite_packed;
use super::kernel::{self, AttentionFloat, Problem};
use crate::layers::fused::{composite_jvp, composite_vjp_if_tracked, recorded_op, split_flat};
use nabla_core::{
    Backend, DType, Error, ExtensionOp, HostAllocator, HostData, HostView, OutputSpec, Result,
};
use nabla_tensor::{ExtensionFamily, ExtensionRules, RuleArgs, Tensor};
use std::sync::Arc;

/// The sizes of one attention: batch entries (the leading axes, flattened), queries, keys, the
/// query and key width and the value width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Dims {
    pub batch: usize,
    pub l: usize,
    pub s: usize,
    pub e: usize,
    pub ev: usize,
}

impl Dims {
    /// Elements of the forward op's output, `B L (Ev + 1)`, if that fits a `usize`.
    fn forward_len(self) -> Option<usize> {
        self.batch
            .checked_mul(self.l)?
            .checked_mul(self.ev.checked_add(1)?)
    }

    /// Elements of the vjp op's output, `B (L E + S E + S Ev)`, if that fits a `usize`.
    fn vjp_len(self) -> Option<usize> {
        let per_entry = self
            .l
            .checked_mul(self.e)?
            .checked_add(self.s.checked_mul(self.e)?)?
            .checked_add(self.s.checked_mul(self.ev)?)?;
        self.batch.checked_mul(per_entry)
    }
}

/// The fused attention and its vector-Jacobian product; `scale` is the factor of the scores as the
/// bits of an `f64` (so that the op is `Eq + Hash`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum AttentionOp {
    /// `(q, k, v) -> [..., L, Ev + 1]`.
    Forward { scale: u64, causal: bool },
    /// `(q, k, v, packed, cotangent) -> [B L E + B S E + B S Ev]`.
    Vjp { scale: u64, causal: bool },
}

impl AttentionOp {
    fn op_name(self) -> &'static str {
        match self {
            AttentionOp::Forward { .. } => "fused.attention",
            AttentionOp::Vjp { .. } => "fused.attention_vjp",
        }
    }

    /// The scale and the causal flag.
    fn params(self) -> (f64, bool) {
        match self {
            AttentionOp::Forward { scale, causal } | AttentionOp::Vjp { scale, causal } => {
                (f64::from_bits(scale), causal)
            }
        }
    }

    /// The dtype and sizes from the input shapes, or an error naming the op and what it expects.
    fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, Dims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.op_name(),
                format!(
                    "expected f32 or f64 inputs of one dtype: q [..., L, E], k [..., S, E] and \
                     v [..., S, Ev] with one leading shape, then for the vjp the output and its \
                     cotangent [..., L, Ev + 1]; got {shapes:?}"
                ),
            )
        };
        let arity = match self {
            AttentionOp::Forward { .. } => 3,
            AttentionOp::Vjp { .. } => 5,
        };
        if inputs.len() != arity {
            return Err(bad());
        }
        let (dtype, q) = inputs[0];
        let (k, v) = (inputs[1].1, inputs[2].1);
        let rank = q.len();
        if rank < 2 || k.len() != rank || v.len() != rank {
            return Err(bad());
        }
        let lead = &q[..rank - 2];
        let (l, e, s, ev) = (q[rank - 2], q[rank - 1], k[rank - 2], v[rank - 1]);
        let batch = lead.iter().try_fold(1usize, |p, &d| p.checked_mul(d));
        let packed: Vec<usize> = lead.iter().copied().chain([l, ev + 1]).collect();
        let ok = matches!(dtype, DType::F32 | DType::F64)
            && inputs.iter().all(|(d, _)| *d == dtype)
            && &k[..rank - 2] == lead
            && &v[..rank - 2] == lead
            && k[rank - 1] == e
            && v[rank - 2] == s
            && inputs[3..]
                .iter()
                .all(|(_, shape)| *shape == packed.as_slice());
        let Some(batch) = batch.filter(|_| ok) else {
            return Err(bad());
        };
        let dims = Dims { batch, l, s, e, ev };
        // Every size the kernels work out fits a usize (a zero-size input may have huge axes).
        if dims.forward_len().is_none() || dims.vjp_len().is_none() {
            return Err(bad());
        }
        Ok((dtype, dims))
    }

    /// The output shape for inputs of `dims` whose queries have the shape `q`.
    fn output_shape(self, q: &[usize], dims: Dims) -> Vec<usize> {
        match self {
            AttentionOp::Forward { .. } => {
                let lead = &q[..q.len() - 2];
                lead.iter().copied().chain([dims.l, dims.ev + 1]).collect()
            }
            AttentionOp::Vjp { .. } => vec![dims.vjp_len().unwrap_or(0)],
        }
    }

    /// Runs the kernel of `self` in `T` on inputs of `dims` and `dtype`.
    fn run<T: AttentionFloat>(
        self,
        dims: Dims,
        views: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<Vec<T>> {
        let data: Vec<&[T]> = views
            .iter()
            .map(|v| {
                T::slice_of(v.data).ok_or_else(|| Error::dtype(self.op_name(), v.data.dtype()))
            })
            .collect::<Result<_>>()?;
        let (scale, causal) = self.params();
        let problem = Problem {
            dims,
            scale: T::from_f64(scale),
            causal,
        };
        let len = match self {
            AttentionOp::Forward { .. } => dims.forward_len(),
            AttentionOp::Vjp { .. } => dims.vjp_len(),
        };
        let len = len.ok_or_else(|| Error::invalid(self.op_name(), "sizes overflow"))?;
        let mut out: Vec<T> = alloc.vec(len);
        out.resize(len, T::ZERO);
        match (self, data.as_slice()) {
            (AttentionOp::Forward { .. }, &[q, k, v]) => {
                kernel::forward(&problem, q, k, v, &mut out)
            }
            (AttentionOp::Vjp { .. }, &[q, k, v, packed, cot]) => {
                kernel::backward(&problem, [q, k, v, packed, cot], &mut out)
            }
            _ => return Err(Error::invalid(self.op_name(), "wrong number of inputs")),
        }
        Ok(out)
    }
}

impl ExtensionOp for AttentionOp {
    fn name(&self) -> &str {
        self.op_name()
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, dims) = self.dims(inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: self.output_shape(inputs[0].1, dims),
        })
    }

    fn host_kernel(&self, views: &[HostView<'_>], alloc: &dyn HostAllocator) -> Result<HostData> {
        let specs: Vec<_> = views.iter().map(|v| (v.data.dtype(), v.shape)).collect();
        let (dtype, dims) = self.dims(&specs)?;
        match dtype {
            DType::F32 => Ok(HostData::F32(self.run::<f32>(dims, views, alloc)?)),
            DType::F64 => Ok(HostData::F64(self.run::<f64>(dims, views, alloc)?)),
            other => Err(Error::dtype(self.op_name(), other)),
        }
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn maps_leading_dims(&self) -> bool {
        matches!(self, AttentionOp::Forward { .. })
    }
}

/// The family binding the fused attention's rules.
pub(super) struct FusedAttention;

impl ExtensionFamily for FusedAttention {
    fn rules<B: Backend>() -> ExtensionRules<B> {
        ExtensionRules::new()
            .reverse("fused.attention", attention_reverse)
            .forward("fused.attention", |args, t| {
                let (scale, causal) = forward_of(args)?.params();
                composite_jvp(args, t, |v| composite_packed(v, scale, causal))
            })
    }
}

/// The recorded forward op.
fn forward_of<B: Backend>(args: &RuleArgs<'_, B>) -> Result<AttentionOp> {
    recorded_op(args, "fused.attention", |op| {
        matches!(op, AttentionOp::Forward { .. })
    })
}

/// Runs the fused attention on `q`, `k` and `v` (validated, one leading shape): the packed output.
pub(super) fn apply<B: Backend>(
    q: &Tensor<B>,
    k: &Tensor<B>,
    v: &Tensor<B>,
    scale: f64,
    causal: bool,
) -> Result<Tensor<B>> {
    let op = AttentionOp::Forward {
        scale: scale.to_bits(),
        causal,
    };
    Tensor::apply_family_op::<FusedAttention>(Arc::new(op), &[q, k, v])
}

/// The forward op's reverse rule: the fused vjp where no graph is built, the composite's otherwise.
fn attention_reverse<B: Backend>(
    args: &RuleArgs<'_, B>,
    g: &Tensor<B>,
    _needs: &[bool],
) -> Result<Vec<Option<Tensor<B>>>> {
    let (scale, causal) = forward_of(args)?.params();
    if let Some(grads) = composite_vjp_if_tracked(args, g, |v| composite_packed(v, scale, causal))?
    {
        return Ok(grads);
    }
    let [q, k, v] = args.inputs else {
        return Err(Error::invalid("fused.attention", "expected three inputs"));
    };
    let op = Arc::new(AttentionOp::Vjp {
        scale: scale.to_bits(),
        causal,
    });
    let flat = Tensor::apply_family_op::<FusedAttention>(op, &[q, k, v, args.output, g])?;
    split_flat(&flat, &[Some(q), Some(k), Some(v)])
}
