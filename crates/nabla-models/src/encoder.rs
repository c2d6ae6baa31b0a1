//! The parts the zoo's transformer encoders share: multi-head self-attention with separate
//! `query`, `key` and `value` projections as `transformers` names them (BERT's `attention.self`,
//! ViT's `attention.attention`), a padding mask turned into the scores' additive bias, and the
//! initialisation of their linear layers.

use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::{
    Dropout, Forward, LayerNorm, Linear, Module, Param, SdpaArgs, init,
    scaled_dot_product_attention,
};
use nabla_tensor::Tensor;

/// How a weight is drawn: `transformers` uses `N(0, std²)` for BERT and the normal truncated to
/// ±2 (absolute, as `nn.init.trunc_normal_`'s defaults) for ViT.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum WeightInit {
    /// `N(0, std²)`.
    Normal(f64),
    /// `N(0, std²)` truncated to `[-2, 2]`.
    TruncatedNormal(f64),
}

impl WeightInit {
    /// A tensor of `shape` drawn this way.
    pub(crate) fn draw<B: Backend>(
        self,
        shape: &[usize],
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Tensor<B>> {
        match self {
            WeightInit::Normal(std) => init::normal(shape.to_vec(), 0.0, std, dtype, rng, backend),
            WeightInit::TruncatedNormal(std) => {
                init::trunc_normal(shape.to_vec(), 0.0, std, (-2.0, 2.0), dtype, rng, backend)
            }
        }
    }

    /// A linear layer from `inputs` to `outputs` features with these weights and a zero bias.
    pub(crate) fn linear<B: Backend>(
        self,
        inputs: usize,
        outputs: usize,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Linear<B>> {
        Linear::from_tensors(
            self.draw(&[outputs, inputs], dtype, rng, backend)?,
            Some(Tensor::zeros([outputs], dtype, backend)?),
        )
    }

    /// A trainable tensor of `shape` drawn this way.
    pub(crate) fn param<B: Backend>(
        self,
        shape: &[usize],
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Param<B>> {
        Param::new(self.draw(shape, dtype, rng, backend)?)
    }
}

/// A layer norm over `width` features with weight one and bias zero.
pub(crate) fn layer_norm<B: Backend>(
    width: usize,
    eps: f64,
    dtype: DType,
    backend: &B,
) -> Result<LayerNorm<B>> {
    LayerNorm::new(vec![width], eps, true, true, dtype, backend)
}

/// Checks an encoder's width and head count; `model` names it in the error.
pub(crate) fn check_sizes(model: &'static str, hidden: usize, heads: usize) -> Result<()> {
    if heads == 0 || hidden == 0 || !hidden.is_multiple_of(heads) {
        return Err(Error::invalid(
            model,
            format!(
                "the number of attention heads ({heads}) must divide the hidden size ({hidden}), \
                 and both must be positive"
            ),
        ));
    }
    Ok(())
}

/// Multi-head self-attention with separate projections (`transformers`' `BertSelfAttention` and
/// `ViTSelfAttention`): the scores `q kᵀ / √d` per head, an optional additive bias (see
/// [`padding_bias`]), softmax, dropout on the weights in training, and the heads concatenated. The
/// output projection belongs to the enclosing block, as in `transformers`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct SelfAttention<B: Backend> {
    /// `[hidden, hidden]`.
    pub query: Linear<B>,
    /// `[hidden, hidden]`.
    pub key: Linear<B>,
    /// `[hidden, hidden]`.
    pub value: Linear<B>,
    /// Dropout on the attention weights.
    pub dropout: Dropout,
    #[module(skip)]
    heads: usize,
}

impl<B: Backend> SelfAttention<B> {
    /// Attention over `hidden` features in `heads` heads (a divisor of `hidden`).
    pub(crate) fn new(
        hidden: usize,
        heads: usize,
        dropout: f64,
        weights: WeightInit,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Ok(SelfAttention {
            query: weights.linear(hidden, hidden, dtype, rng, backend)?,
            key: weights.linear(hidden, hidden, dtype, rng, backend)?,
            value: weights.linear(hidden, hidden, dtype, rng, backend)?,
            dropout: Dropout::new(dropout, rng)?,
            heads,
        })
    }

    /// The heads' outputs, concatenated, `[N, T, hidden]` for `x` `[N, T, hidden]`; `bias`, when
    /// given, is added to every head's scores (`[N, 1, 1, T]` from [`padding_bias`]).
    pub fn forward(&self, x: &Tensor<B>, bias: Option<&Tensor<B>>) -> Result<Tensor<B>> {
        let &[n, t, c] = x.shape() else {
            return Err(Error::invalid(
                "SelfAttention",
                format!("expects [batch, tokens, features], got {:?}", x.shape()),
            ));
        };
        let (h, d) = (self.heads, c / self.heads);
        let split = |proj: &Linear<B>| -> Result<Tensor<B>> {
            proj.forward(x)?.reshape([n, t, h, d])?.transpose(1, 2)
        };
        let (q, k, v) = (split(&self.query)?, split(&self.key)?, split(&self.value)?);
        let y = if self.dropout.is_training() && self.dropout.p() > 0.0 {
            let mut scores = q
                .mul(1.0 / (d as f64).sqrt())?
                .matmul(&k.transpose(-2, -1)?)?;
            if let Some(b) = bias {
                scores = scores.add(b)?;
            }
            self.dropout.forward(&scores.softmax(-1)?)?.matmul(&v)?
        } else {
            let args = SdpaArgs {
                attn_mask: bias,
                ..SdpaArgs::default()
            };
            scaled_dot_product_attention(&q, &k, &v, args)?
        };
        y.transpose(1, 2)?.reshape([n, t, c])
    }
}

/// The additive bias of a padding mask `[N, T]` (1 or `true` for tokens to attend to, 0 for
/// padding), `[N, 1, 1, T]` in `dtype`: 0 where a key may be attended to and the type's lowest
/// value where not, as `transformers` builds it, so padded keys get no weight.
pub fn padding_bias<B: Backend>(
    mask: &Tensor<B>,
    n: usize,
    t: usize,
    dtype: DType,
) -> Result<Tensor<B>> {
    if mask.shape() != [n, t] {
        return Err(Error::shapes("attention_mask", &[n, t], mask.shape())
            .with_hint("the attention mask must be [batch, tokens], as the token ids"));
    }
    // The lowest finite value of each real float type (bf16's is (2 - 2⁻⁷) 2¹²⁷).
    let lowest = match dtype {
        DType::F64 => f64::MIN,
        DType::F32 => f64::from(f32::MIN),
        DType::F16 => -65504.0,
        DType::BF16 => -3.389_531_389_251_535_5e38,
        other => {
            return Err(Error::invalid(
                "attention_mask",
                format!("the model's dtype must be a real float type, got {other:?}"),
            ));
        }
    };
    let keep = mask.cast(dtype)?;
    keep.neg()?.add(1.0)?.mul(lowest)?.reshape([n, 1, 1, t])
}
