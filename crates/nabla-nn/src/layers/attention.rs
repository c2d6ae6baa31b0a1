//! Multi-head attention with PyTorch's packed input projection and mask conventions.

use crate::init;
use crate::layers::dropout::Dropout;
use crate::layers::linear::Linear;
use crate::layers::sdpa::{SdpaArgs, causal_mask, mask_to_bias, scaled_dot_product_attention};
use crate::module::Forward;
use crate::param::Param;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::Tensor;

/// The settings of a [`MultiheadAttention`], with PyTorch's argument names; [`MultiheadAttentionConfig::new`]
/// gives PyTorch's defaults. (`kdim` and `vdim` are always `embed_dim`; `add_bias_kv` and
/// `add_zero_attn` are not supported.)
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MultiheadAttentionConfig {
    /// Model width `E`.
    pub embed_dim: usize,
    /// Heads; must divide `embed_dim`.
    pub num_heads: usize,
    /// Dropout on the attention weights, in training only (default 0).
    pub dropout: f64,
    /// Whether the input and output projections have biases (default true).
    pub bias: bool,
    /// Inputs and output are `[N, L, E]` instead of `[L, N, E]` (default false).
    pub batch_first: bool,
}

impl MultiheadAttentionConfig {
    /// PyTorch's defaults: no dropout, biases, sequence first.
    pub fn new(embed_dim: usize, num_heads: usize) -> Self {
        MultiheadAttentionConfig {
            embed_dim,
            num_heads,
            dropout: 0.0,
            bias: true,
            batch_first: false,
        }
    }
}

/// The optional arguments of [`MultiheadAttention::forward`], named and defaulted as in PyTorch
/// (`need_weights` and `average_attn_weights` true, the rest off).
pub struct AttentionArgs<'a, B: Backend> {
    /// `[N, S]` (or `[S]` unbatched): bool, `true` = that key is ignored, or float, added to the
    /// scores.
    pub key_padding_mask: Option<&'a Tensor<B>>,
    /// Return the attention weights.
    pub need_weights: bool,
    /// `[L, S]` or `[N * num_heads, L, S]`: bool, `true` = not allowed to attend, or float, added to
    /// the scores.
    pub attn_mask: Option<&'a Tensor<B>>,
    /// Average the returned weights over heads (`[N, L, S]`) instead of `[N, num_heads, L, S]`.
    pub average_attn_weights: bool,
    /// Causal attention. As in PyTorch, an `attn_mask` given alongside is used as is (it is assumed
    /// to be the causal mask); unlike PyTorch, which then requires a mask, without `attn_mask` the
    /// causal mask is built here.
    pub is_causal: bool,
}

impl<B: Backend> Default for AttentionArgs<'_, B> {
    fn default() -> Self {
        AttentionArgs {
            key_padding_mask: None,
            need_weights: true,
            attn_mask: None,
            average_attn_weights: true,
            is_causal: false,
        }
    }
}

/// PyTorch's `nn.Transformer.generate_square_subsequent_mask(sz)`: a float `[sz, sz]` mask with
/// `-inf` above the diagonal and 0 elsewhere, to add to attention scores.
pub fn generate_square_subsequent_mask<B: Backend>(
    sz: usize,
    dtype: DType,
    backend: &B,
) -> Result<Tensor<B>> {
    let rows = Tensor::arange(0, sz as i64, 1, DType::I64, backend)?.unsqueeze(1)?;
    let cols = Tensor::arange(0, sz as i64, 1, DType::I64, backend)?.unsqueeze(0)?;
    let neg = Tensor::full([], f64::NEG_INFINITY, dtype, backend)?;
    cols.gt(&rows)?.where_(&neg, 0.0)
}

/// Multi-head attention (PyTorch's `nn.MultiheadAttention`):
/// `softmax(Q Kᵀ / √d + mask) V` per head, with `Q, K, V` projected by the packed `in_proj_weight`
/// `[3E, E]` (query, key, value rows in that order) and `in_proj_bias` `[3E]`, heads concatenated and
/// projected by `out_proj`. Initialisation as PyTorch: `in_proj_weight` Xavier-uniform, biases zero,
/// `out_proj.weight` as a `Linear`'s.
///
/// A query row whose keys are all masked gets NaN output (and weights), as in PyTorch.
///
/// ```
/// use nabla_nn::{AttentionArgs, MultiheadAttention, MultiheadAttentionConfig};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = MultiheadAttentionConfig { batch_first: true, ..MultiheadAttentionConfig::new(8, 2) };
/// let mha = MultiheadAttention::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// let x = Tensor::ones([3, 5, 8], DType::F32, &cpu)?;
/// let (y, weights) = mha.forward(&x, &x, &x, AttentionArgs::default())?;
/// assert_eq!(y.shape(), &[3, 5, 8]);
/// assert_eq!(weights.unwrap().shape(), &[3, 5, 5]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct MultiheadAttention<B: Backend> {
    /// Packed query, key and value projection weights, `[3E, E]`.
    pub in_proj_weight: Param<B>,
    /// Packed projection biases, `[3E]`, when `bias`.
    pub in_proj_bias: Option<Param<B>>,
    /// The output projection, `E -> E`.
    pub out_proj: Linear<B>,
    /// Dropout on the attention weights.
    dropout: Dropout,
    #[module(skip)]
    config: MultiheadAttentionConfig,
}

impl<B: Backend> MultiheadAttention<B> {
    /// Attention with PyTorch's initialisation; `embed_dim` must be divisible by `num_heads`.
    pub fn new(
        config: MultiheadAttentionConfig,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        const OP: &str = "MultiheadAttention";
        let (e, h) = (config.embed_dim, config.num_heads);
        if e == 0 || h == 0 || e % h != 0 {
            return Err(Error::invalid(
                OP,
                format!(
                    "embed_dim must be positive and divisible by num_heads, got embed_dim {e} and \
                     num_heads {h}"
                ),
            ));
        }
        let dropout = Dropout::new(config.dropout, rng)?;
        let in_proj_weight =
            Param::new(init::xavier_uniform([3 * e, e], 1.0, dtype, rng, backend)?)?;
        let in_proj_bias = config
            .bias
            .then(|| Param::new(Tensor::zeros([3 * e], dtype, backend)?))
            .transpose()?;
        let out_proj = Linear::new(e, e, config.bias, dtype, rng, backend)?;
        if let Some(b) = &out_proj.bias {
            b.set(Tensor::zeros([e], dtype, backend)?)?;
        }
        Ok(MultiheadAttention {
            in_proj_weight,
            in_proj_bias,
            out_proj,
            dropout,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &MultiheadAttentionConfig {
        &self.config
    }

    /// Projects `x` (`[N, T, E]`) with rows `part * E .. (part + 1) * E` of the packed projection and
    /// splits the heads: `[N, heads, T, E / heads]`.
    fn project(&self, x: &Tensor<B>, part: usize) -> Result<Tensor<B>> {
        let (e, h) = (self.config.embed_dim, self.config.num_heads);
        let w = self.in_proj_weight.value().narrow(0, part * e, e)?;
        let mut y = x.matmul(&w.t()?)?;
        if let Some(b) = &self.in_proj_bias {
            y = y.add(b.value().narrow(0, part * e, e)?)?;
        }
        let (n, t) = (x.shape()[0], x.shape()[1]);
        y.reshape([n, t, h, e / h])?.permute(&[0, 2, 1, 3])
    }

    /// Attends from `query` (`[L, N, E]`, `[N, L, E]` when `batch_first`, or unbatched `[L, E]`) to
    /// `key` and `value` (`[S, N, E]` likewise). Returns the output, shaped like `query`, and, when
    /// `args.need_weights`, the attention weights `[N, L, S]` (averaged over heads) or
    /// `[N, num_heads, L, S]` (without `N` when unbatched).
    pub fn forward(
        &self,
        query: &Tensor<B>,
        key: &Tensor<B>,
        value: &Tensor<B>,
        args: AttentionArgs<'_, B>,
    ) -> Result<(Tensor<B>, Option<Tensor<B>>)> {
        const OP: &str = "MultiheadAttention";
        let (e, heads) = (self.config.embed_dim, self.config.num_heads);
        let batched = query.rank() == 3;
        let layout = match (batched, self.config.batch_first) {
            (false, _) => "[L, E] (unbatched)",
            (true, true) => "[N, L, E]",
            (true, false) => "[L, N, E]",
        };
        for (what, t) in [("query", query), ("key", key), ("value", value)] {
            let rank_ok = t.rank() == query.rank() && (t.rank() == 2 || t.rank() == 3);
            if !rank_ok || t.shape()[t.rank() - 1] != e {
                return Err(Error::invalid(
                    OP,
                    format!(
                        "{what} must be {layout} with E = embed_dim = {e} (query, key and value \
                         all batched or all unbatched), got query {:?}, key {:?}, value {:?}",
                        query.shape(),
                        key.shape(),
                        value.shape()
                    ),
                ));
            }
        }
        // Internally batch first: [N, T, E].
        let to_internal = |t: &Tensor<B>| -> Result<Tensor<B>> {
            match (batched, self.config.batch_first) {
                (false, _) => t.unsqueeze(0),
                (true, true) => Ok(t.clone()),
                (true, false) => t.transpose(0, 1),
            }
        };
        let (q, k, v) = (to_internal(query)?, to_internal(key)?, to_internal(value)?);
        let (n, l, s) = (q.shape()[0], q.shape()[1], k.shape()[1]);
        if k.shape() != v.shape() || k.shape()[0] != n {
            return Err(Error::invalid(
                OP,
                format!(
                    "key and value must have the same shape, with query's batch size; got query \
                     {:?}, key {:?}, value {:?}",
                    query.shape(),
                    key.shape(),
                    value.shape()
                ),
            ));
        }
        let dtype = q.dtype();
        let d = e / heads;
        let (qh, kh, vh) = (
            self.project(&q, 0)?,
            self.project(&k, 1)?,
            self.project(&v, 2)?,
        );
        let sizes = MaskSizes {
            n,
            heads,
            l,
            s,
            batched,
        };
        let (bias, causal_only) = mask_bias(&args, sizes, dtype, q.backend())?;
        let dropout_active = self.dropout.is_training() && self.dropout.p() > 0.0;
        let (out, attn) = if args.need_weights || dropout_active {
            let mut scores = qh
                .mul(1.0 / (d as f64).sqrt())?
                .matmul(&kh.transpose(-2, -1)?)?;
            if causal_only {
                scores = scores.add(causal_mask(l, s, dtype, q.backend())?)?;
            }
            if let Some(b) = &bias {
                scores = scores.add(b)?;
            }
            // As PyTorch, the returned weights are those used, after dropout.
            let attn = self.dropout.forward(&scores.softmax(-1)?)?;
            (attn.matmul(&vh)?, Some(attn))
        } else {
            let sdpa = SdpaArgs {
                attn_mask: bias.as_ref(),
                is_causal: causal_only,
                ..SdpaArgs::default()
            };
            (scaled_dot_product_attention(&qh, &kh, &vh, sdpa)?, None)
        };
        // [N, heads, L, d] -> [N, L, E] -> out_proj.
        let out = out.permute(&[0, 2, 1, 3])?.reshape([n, l, e])?;
        let out = self.out_proj.forward(&out)?;
        let out = match (batched, self.config.batch_first) {
            (false, _) => out.squeeze(0)?,
            (true, true) => out,
            (true, false) => out.transpose(0, 1)?,
        };
        let weights = match attn {
            Some(attn) if args.need_weights => {
                let w = if args.average_attn_weights {
                    attn.mean(&[1], false)?
                } else {
                    attn
                };
                Some(if batched { w } else { w.squeeze(0)? })
            }
            _ => None,
        };
        Ok((out, weights))
    }
}

/// The sizes the masks of one [`MultiheadAttention::forward`] call are checked against.
#[derive(Clone, Copy)]
struct MaskSizes {
    n: usize,
    heads: usize,
    l: usize,
    s: usize,
    batched: bool,
}

/// The masks of `args` as one additive float bias broadcastable to `[N, heads, L, S]` (`None` for
/// none), and whether the causal mask is left to the attention itself (`is_causal` with no other
/// mask). Errors on mask shapes and dtypes that do not fit.
fn mask_bias<B: Backend>(
    args: &AttentionArgs<'_, B>,
    z: MaskSizes,
    dtype: DType,
    backend: &B,
) -> Result<(Option<Tensor<B>>, bool)> {
    const OP: &str = "MultiheadAttention";
    let MaskSizes {
        n,
        heads,
        l,
        s,
        batched,
    } = z;
    let causal_only = args.is_causal && args.attn_mask.is_none() && args.key_padding_mask.is_none();
    let causal;
    let attn_mask = match (args.attn_mask, args.is_causal && !causal_only) {
        (Some(m), _) => Some(m),
        (None, true) => {
            causal = causal_mask(l, s, dtype, backend)?;
            Some(&causal)
        }
        (None, false) => None,
    };
    let mut bias = None;
    if let Some(m) = attn_mask {
        // [L, S] or [N * heads, L, S], broadcast to [N, heads, L, S].
        let m4 = match m.shape() {
            [a, b] if (*a, *b) == (l, s) => m.reshape([1, 1, l, s])?,
            [c, a, b] if (*c, *a, *b) == (n * heads, l, s) => m.reshape([n, heads, l, s])?,
            _ => {
                return Err(Error::shapes(OP, m.shape(), &[l, s]).with_hint(format!(
                    "attn_mask must be [L, S] = [{l}, {s}] or [N * num_heads, L, S] = \
                     [{}, {l}, {s}]",
                    n * heads
                )));
            }
        };
        bias = Some(mask_to_bias(OP, &m4, dtype, false)?);
    }
    if let Some(m) = args.key_padding_mask {
        let expected: Vec<usize> = if batched { vec![n, s] } else { vec![s] };
        if m.shape() != expected.as_slice() {
            return Err(Error::shapes(OP, m.shape(), &expected)
                .with_hint("key_padding_mask must be [N, S] ([S] unbatched)"));
        }
        let padding = mask_to_bias(OP, &m.reshape([n, 1, 1, s])?, dtype, false)?;
        bias = Some(match bias {
            Some(b) => b.add(&padding)?,
            None => padding,
        });
    }
    Ok((bias, causal_only))
}
