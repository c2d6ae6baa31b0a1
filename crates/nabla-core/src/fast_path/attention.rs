//! Scaled dot-product attention as one op (flash-attention's online softmax on the host), and its
//! vector-Jacobian product.
//!
//! `fused.attention` maps `q` `[..., L, E]`, `k` `[..., S, E]` and `v` `[..., S, Ev]` (one leading
//! shape) to `[..., L, Ev + 1]`: each query's output row, then its log-sum-exp, which the backward
//! kernel reads to recompute the probabilities without a second softmax. `fused.attention_vjp`
//! maps the three inputs, that packed output and its cotangent to the cotangents of `q`, `k` and
//! `v`, flattened one after the other.

use super::{FastPath, FastPathKernels, input_specs};
use crate::{DType, Error, HostAllocator, HostData, HostView, OutputSpec, Result};

/// The sizes of one attention: batch entries (the leading axes, flattened), queries, keys, the
/// query and key width and the value width.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttentionDims {
    /// Batch entries (the leading axes, flattened).
    pub batch: usize,
    /// Queries.
    pub l: usize,
    /// Keys.
    pub s: usize,
    /// Query and key width.
    pub e: usize,
    /// Value width.
    pub ev: usize,
}

impl AttentionDims {
    /// Elements of the forward op's output, `B L (Ev + 1)`, if that fits a `usize`.
    pub fn forward_len(self) -> Option<usize> {
        self.batch
            .checked_mul(self.l)?
            .checked_mul(self.ev.checked_add(1)?)
    }

    /// Elements of the vjp op's output, `B (L E + S E + S Ev)`, if that fits a `usize`.
    pub fn vjp_len(self) -> Option<usize> {
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
pub enum AttentionOp {
    /// `(q, k, v) -> [..., L, Ev + 1]`.
    Forward {
        /// The scores' factor, `f64::to_bits`.
        scale: u64,
        /// Query `i` sees keys `0..=i` only.
        causal: bool,
    },
    /// `(q, k, v, packed, cotangent) -> [B L E + B S E + B S Ev]`.
    Vjp {
        /// The scores' factor, `f64::to_bits`.
        scale: u64,
        /// Query `i` sees keys `0..=i` only.
        causal: bool,
    },
}

impl AttentionOp {
    /// The scale and the causal flag.
    pub fn params(self) -> (f64, bool) {
        match self {
            AttentionOp::Forward { scale, causal } | AttentionOp::Vjp { scale, causal } => {
                (f64::from_bits(scale), causal)
            }
        }
    }

    /// The dtype and sizes from the input shapes, or an error naming the op and what it expects.
    pub fn dims(self, inputs: &[(DType, &[usize])]) -> Result<(DType, AttentionDims)> {
        let bad = || {
            let shapes: Vec<_> = inputs.iter().map(|(d, s)| (*d, s.to_vec())).collect();
            Error::invalid(
                self.name(),
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
        let dims = AttentionDims { batch, l, s, e, ev };
        // Every size the kernels work out fits a usize (a zero-size input may have huge axes).
        if dims.forward_len().is_none() || dims.vjp_len().is_none() {
            return Err(bad());
        }
        Ok((dtype, dims))
    }

    /// The output shape for inputs of `dims` whose queries have the shape `q`.
    pub fn output_shape(self, q: &[usize], dims: AttentionDims) -> Vec<usize> {
        match self {
            AttentionOp::Forward { .. } => {
                let lead = &q[..q.len() - 2];
                lead.iter().copied().chain([dims.l, dims.ev + 1]).collect()
            }
            AttentionOp::Vjp { .. } => vec![dims.vjp_len().unwrap_or(0)],
        }
    }
}

impl FastPath for AttentionOp {
    fn name(&self) -> &'static str {
        match self {
            AttentionOp::Forward { .. } => "fused.attention",
            AttentionOp::Vjp { .. } => "fused.attention_vjp",
        }
    }

    fn output_spec(&self, inputs: &[(DType, &[usize])]) -> Result<OutputSpec> {
        let (dtype, dims) = self.dims(inputs)?;
        Ok(OutputSpec {
            dtype,
            shape: self.output_shape(inputs[0].1, dims),
        })
    }

    fn run(
        &self,
        kernels: &dyn FastPathKernels,
        inputs: &[HostView<'_>],
        alloc: &dyn HostAllocator,
    ) -> Result<HostData> {
        let (_, dims) = self.dims(&input_specs(inputs))?;
        kernels.attention(*self, dims, inputs, alloc)
    }

    fn maps_leading_dims(&self) -> bool {
        matches!(self, AttentionOp::Forward { .. })
    }
}
