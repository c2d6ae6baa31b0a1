//! Scaled dot-product attention, PyTorch's `torch.nn.functional.scaled_dot_product_attention`:
//! `softmax(Q Kᵀ · scale + mask) V`, fused where the backend has fast-path kernels (memory linear
//! in the sequence length, the causal mask never built) and the composite formula elsewhere.

mod op;
#[cfg(test)]
mod tests;

use crate::layers::dropout::dropout;
use nabla_core::{Backend, DType, Error, Generator, Result, Shape};
use nabla_tensor::Tensor;

const OP: &str = "scaled_dot_product_attention";

/// The optional arguments of [`scaled_dot_product_attention`], with PyTorch's names and defaults
/// (no mask, no dropout, not causal, scale `1 / √E`, no grouped-query attention).
pub struct SdpaArgs<'a, B: Backend> {
    /// A mask broadcastable to `[..., L, S]`: bool, where `true` means the query may attend to
    /// that key (PyTorch's convention for this function, the opposite of
    /// [`crate::MultiheadAttention`]'s masks), or float, added to the scores.
    pub attn_mask: Option<&'a Tensor<B>>,
    /// Dropout on the attention weights (default 0). Above 0 it needs `rng`: this function is
    /// applied in training, as PyTorch's is; pass 0 for evaluation.
    pub dropout_p: f64,
    /// Query `i` attends only to keys `j <= i` (PyTorch's top-left aligned causal mask). Cannot be
    /// combined with `attn_mask`.
    pub is_causal: bool,
    /// The factor of the scores; `None` gives `1 / √E` (1 when `E = 0`).
    pub scale: Option<f64>,
    /// Grouped-query attention: `key` and `value` may have fewer heads (axis -3) than `query`, a
    /// divisor of its count; each key head serves consecutive query heads.
    pub enable_gqa: bool,
    /// The random stream of the dropout.
    pub rng: Option<&'a mut Generator>,
}

impl<B: Backend> Default for SdpaArgs<'_, B> {
    fn default() -> Self {
        SdpaArgs {
            attn_mask: None,
            dropout_p: 0.0,
            is_causal: false,
            scale: None,
            enable_gqa: false,
            rng: None,
        }
    }
}

/// Scaled dot-product attention (`torch.nn.functional.scaled_dot_product_attention`): for `query`
/// `[..., L, E]`, `key` `[..., S, E]` and `value` `[..., S, Ev]` (leading axes broadcast), the
/// `[..., L, Ev]` output `softmax(query keyᵀ · scale + mask) value`. A query that may attend to no
/// key gets NaN, as in PyTorch; with no keys at all (`S = 0`) the output is zero.
///
/// On a backend with fast-path kernels (the CPU), for `f32` and `f64`, without `attn_mask` and
/// dropout (the causal mask included), it runs as one fused op: an online softmax over blocks of keys, which never holds the
/// `[L, S]` scores, and a fused backward that recomputes them block by block from each query's
/// saved log-sum-exp. Every transform differentiates it to any order; higher orders and forward
/// mode differentiate the composite formula (which does hold the scores). Elsewhere (masks,
/// dropout, other backends and dtypes, traced programs) the function is that composite.
///
/// ```
/// use nabla_nn::{SdpaArgs, scaled_dot_product_attention};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let (cpu, rng) = (CpuBackend::new(), &mut Generator::new(0));
/// // Batch 2, 4 heads, 16 queries and keys of width 8.
/// let q = Tensor::randn([2, 4, 16, 8], DType::F32, rng, &cpu)?;
/// let k = Tensor::randn([2, 4, 16, 8], DType::F32, rng, &cpu)?;
/// let v = Tensor::randn([2, 4, 16, 8], DType::F32, rng, &cpu)?;
/// let causal = SdpaArgs { is_causal: true, ..SdpaArgs::default() };
/// let out = scaled_dot_product_attention(&q, &k, &v, causal)?;
/// assert_eq!(out.shape(), &[2, 4, 16, 8]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub fn scaled_dot_product_attention<B: Backend>(
    query: &Tensor<B>,
    key: &Tensor<B>,
    value: &Tensor<B>,
    args: SdpaArgs<'_, B>,
) -> Result<Tensor<B>> {
    let dtype = check_dtypes(query, key, value)?;
    let (key, value) = grouped(query, key, value, args.enable_gqa)?;
    let lead = leading_shape(query, &key, &value)?;
    let (l, e) = (
        query.shape()[query.rank() - 2],
        query.shape()[query.rank() - 1],
    );
    let (s, ev) = (key.shape()[key.rank() - 2], value.shape()[value.rank() - 1]);
    let out_shape: Vec<usize> = lead.iter().copied().chain([l, ev]).collect();
    let bias = args
        .attn_mask
        .map(|m| mask_bias(m, dtype, &lead, l, s))
        .transpose()?;
    if args.is_causal && bias.is_some() {
        return Err(Error::invalid(
            OP,
            "attn_mask cannot be given with is_causal = true (PyTorch's rule)",
        ));
    }
    if !(0.0..=1.0).contains(&args.dropout_p) {
        return Err(Error::invalid(
            OP,
            format!("dropout_p must lie in [0, 1], got {}", args.dropout_p),
        ));
    }
    // The dropout's generator, checked before any work.
    let dropout_rng = match (args.dropout_p > 0.0, args.rng) {
        (true, None) => {
            return Err(Error::invalid(
                OP,
                "dropout_p > 0 needs a random generator (SdpaArgs::rng); pass dropout_p = 0 to \
                 evaluate",
            ));
        }
        (true, rng) => rng,
        (false, _) => None,
    };
    let scale = args
        .scale
        .unwrap_or(if e == 0 { 1.0 } else { 1.0 / (e as f64).sqrt() });
    if s == 0 {
        return Tensor::zeros(out_shape, dtype, query.backend());
    }
    let dropout_p = args.dropout_p;
    let fusable =
        matches!(dtype, DType::F32 | DType::F64) && bias.is_none() && dropout_rng.is_none();
    if let Some(kernels) = query.backend().fast_path_kernels().filter(|_| fusable) {
        let expand = |t: &Tensor<B>| -> Result<Tensor<B>> {
            let r = t.rank();
            let shape: Vec<usize> = lead.iter().chain(&t.shape()[r - 2..]).copied().collect();
            if t.shape() == shape.as_slice() {
                Ok(t.clone())
            } else {
                t.broadcast_to(shape)
            }
        };
        let (q, k, v) = (expand(query)?, expand(&key)?, expand(&value)?);
        let packed = op::apply(kernels, &q, &k, &v, scale, args.is_causal)?;
        return packed.narrow(-1, 0, ev);
    }
    // The query is scaled, not the scores: L E elements rather than L S (E <= S in most layers).
    let mut scores = query.mul(scale)?.matmul(&key.transpose(-2, -1)?)?;
    if args.is_causal {
        scores = scores.add(causal_mask(l, s, dtype, query.backend())?)?;
    }
    if let Some(bias) = &bias {
        scores = scores.add(bias)?;
    }
    let mut weights = scores.softmax(-1)?;
    if let Some(rng) = dropout_rng {
        weights = dropout(&weights, dropout_p, true, rng)?;
    }
    weights.matmul(&value)
}

/// The common float dtype of the three inputs, or an error naming the op.
fn check_dtypes<B: Backend>(q: &Tensor<B>, k: &Tensor<B>, v: &Tensor<B>) -> Result<DType> {
    let dtype = q.dtype();
    if !dtype.is_float() {
        return Err(Error::dtype(OP, dtype).with_hint("query, key and value must be real floats"));
    }
    for t in [k, v] {
        if t.dtype() != dtype {
            return Err(Error::DTypeMismatch {
                op: OP,
                lhs: dtype,
                rhs: t.dtype(),
            });
        }
    }
    Ok(dtype)
}

/// `key` and `value`, with their heads (axis -3) repeated to the query's count for grouped-query
/// attention, after checking that every input is at least a matrix.
fn grouped<B: Backend>(
    q: &Tensor<B>,
    k: &Tensor<B>,
    v: &Tensor<B>,
    enable_gqa: bool,
) -> Result<(Tensor<B>, Tensor<B>)> {
    if q.rank() < 2 || k.rank() < 2 || v.rank() < 2 {
        return Err(Error::invalid(
            OP,
            format!(
                "query, key and value must be at least [L, E], [S, E] and [S, Ev]; got {:?}, {:?} \
                 and {:?}",
                q.shape(),
                k.shape(),
                v.shape()
            ),
        ));
    }
    let heads = |t: &Tensor<B>| (t.rank() >= 3).then(|| t.shape()[t.rank() - 3]);
    let (hq, hk, hv) = (heads(q), heads(k), heads(v));
    if !enable_gqa || (hq == hk && hq == hv) {
        return Ok((k.clone(), v.clone()));
    }
    let (Some(hq), Some(hk)) = (hq, hk) else {
        return Err(Error::invalid(
            OP,
            "enable_gqa needs query, key and value with a head axis ([..., H, L, E])",
        ));
    };
    if hk == 0 || hv != Some(hk) || hq % hk != 0 {
        return Err(Error::invalid(
            OP,
            format!(
                "with enable_gqa, key and value need one head count that divides the query's; got \
                 {hq} query, {hk} key and {} value heads",
                hv.unwrap_or(0)
            ),
        ));
    }
    let repeat = |t: &Tensor<B>| -> Result<Tensor<B>> {
        let r = t.rank();
        let mut expanded = t.shape().to_vec();
        expanded.insert(r - 2, hq / hk);
        let mut merged = t.shape().to_vec();
        merged[r - 3] = hq;
        t.unsqueeze(r as isize - 2)?
            .broadcast_to(expanded)?
            .reshape(merged)
    };
    Ok((repeat(k)?, repeat(v)?))
}

/// The broadcast leading shape of the three inputs, after checking their matrix sizes.
fn leading_shape<B: Backend>(q: &Tensor<B>, k: &Tensor<B>, v: &Tensor<B>) -> Result<Vec<usize>> {
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let (rq, rk, rv) = (q.rank(), k.rank(), v.rank());
    if ks[rk - 1] != qs[rq - 1] || vs[rv - 2] != ks[rk - 2] {
        return Err(Error::invalid(
            OP,
            format!(
                "query [..., L, E], key [..., S, E] and value [..., S, Ev] disagree: {qs:?}, \
                 {ks:?}, {vs:?}"
            ),
        ));
    }
    let lead = Shape::broadcast(OP, &qs[..rq - 2], &ks[..rk - 2])
        .and_then(|s| Shape::broadcast(OP, s.dims(), &vs[..rv - 2]))
        .map_err(|_| {
            Error::invalid(
                OP,
                format!(
                    "the leading (batch and head) axes of query {qs:?}, key {ks:?} and value \
                     {vs:?} do not broadcast"
                ),
            )
        })?;
    Ok(lead.dims().to_vec())
}

/// The mask as a float bias of `dtype` added to the scores (see [`mask_to_bias`]; bool `true`
/// attends). Errors on shapes that do not broadcast to `[..., L, S]`.
fn mask_bias<B: Backend>(
    mask: &Tensor<B>,
    dtype: DType,
    lead: &[usize],
    l: usize,
    s: usize,
) -> Result<Tensor<B>> {
    let scores: Vec<usize> = lead.iter().copied().chain([l, s]).collect();
    let fits = mask.rank() <= scores.len()
        && Shape::broadcast(OP, mask.shape(), &scores).is_ok_and(|b| b.dims() == scores.as_slice());
    if !fits {
        return Err(Error::shapes(OP, mask.shape(), &scores)
            .with_hint("attn_mask must broadcast to the scores' shape [..., L, S]"));
    }
    mask_to_bias(OP, mask, dtype, true)
}

/// The float bias a mask adds to attention scores: a float mask of `dtype` as it is; a bool mask
/// as 0 where the query may attend and `-inf` elsewhere, `true` meaning "may attend" when
/// `true_attends` (this function's convention, PyTorch's for `scaled_dot_product_attention`) and
/// "masked" otherwise (`MultiheadAttention`'s). Other dtypes are an error naming `op`.
pub(crate) fn mask_to_bias<B: Backend>(
    op: &'static str,
    mask: &Tensor<B>,
    dtype: DType,
    true_attends: bool,
) -> Result<Tensor<B>> {
    if mask.dtype().is_bool() {
        let backend = mask.backend();
        let zero = Tensor::zeros([], dtype, backend)?;
        let neg = Tensor::full([], f64::NEG_INFINITY, dtype, backend)?;
        let (on_true, on_false) = if true_attends {
            (&zero, &neg)
        } else {
            (&neg, &zero)
        };
        mask.where_(on_true, on_false)
    } else if mask.dtype() == dtype {
        Ok(mask.clone())
    } else {
        Err(Error::invalid(
            op,
            format!(
                "a mask must be bool or have the query's dtype {dtype:?}, got {:?}",
                mask.dtype()
            ),
        ))
    }
}

/// PyTorch's causal mask for `L` queries and `S` keys as a float `[L, S]` bias: `-inf` where key
/// `j > i`, 0 elsewhere.
pub(crate) fn causal_mask<B: Backend>(
    l: usize,
    s: usize,
    dtype: DType,
    backend: &B,
) -> Result<Tensor<B>> {
    crate::generate_square_subsequent_mask(l.max(s), dtype, backend)?
        .narrow(0, 0, l)?
        .narrow(1, 0, s)
}

/// The fused op's packed output `[..., L, Ev + 1]` (the attention output, then each query's
/// log-sum-exp) from its formula, for `v = [q, k, v]` with one leading shape: what the fused op's
/// rules differentiate for higher orders and forward mode.
pub(super) fn composite_packed<B: Backend>(
    v: &[Tensor<B>],
    scale: f64,
    causal: bool,
) -> Result<Tensor<B>> {
    let [q, k, v] = v else {
        return Err(Error::invalid("fused.attention", "expected three inputs"));
    };
    let mut scores = q.mul(scale)?.matmul(&k.transpose(-2, -1)?)?;
    if causal {
        let (l, s) = (q.shape()[q.rank() - 2], k.shape()[k.rank() - 2]);
        scores = scores.add(causal_mask(l, s, q.dtype(), q.backend())?)?;
    }
    let lse = scores.logsumexp(&[-1], true)?;
    let out = scores.sub(&lse)?.exp()?.matmul(v)?;
    Tensor::cat(&[&out, &lse], -1)
}
