//! Transformer encoder and decoder layers, pre-norm or post-norm, with PyTorch's sub-module names.

use crate::layers::attention::{AttentionArgs, MultiheadAttention, MultiheadAttentionConfig};
use crate::layers::dropout::Dropout;
use crate::layers::layer_norm::LayerNorm;
use crate::layers::linear::Linear;
use crate::module::{Forward, Module};
use crate::param::Param;
use nabla_core::{Backend, DType, Generator, Result};
use nabla_tensor::Tensor;

/// The feed-forward activation of a transformer layer (PyTorch's `activation="relu"` or `"gelu"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TransformerActivation {
    /// ReLU (PyTorch's default).
    #[default]
    Relu,
    /// Exact GELU.
    Gelu,
}

impl<B: Backend> Module<B> for TransformerActivation {
    fn visit(&self, _prefix: &str, _visitor: &mut dyn FnMut(&str, &Param<B>)) {}
    fn set_training(&mut self, _training: bool) {}
}

impl<B: Backend> Forward<B> for TransformerActivation {
    fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        match self {
            TransformerActivation::Relu => x.relu(),
            TransformerActivation::Gelu => x.gelu(),
        }
    }
}

/// The settings of [`TransformerEncoderLayer`] and [`TransformerDecoderLayer`], with PyTorch's
/// argument names; [`TransformerLayerConfig::new`] gives PyTorch's defaults.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TransformerLayerConfig {
    /// Model width.
    pub d_model: usize,
    /// Attention heads; must divide `d_model`.
    pub nhead: usize,
    /// Width of the feed-forward block (default 2048).
    pub dim_feedforward: usize,
    /// Dropout probability everywhere (default 0.1).
    pub dropout: f64,
    /// Feed-forward activation (default ReLU).
    pub activation: TransformerActivation,
    /// Epsilon of the layer norms (default 1e-5).
    pub layer_norm_eps: f64,
    /// Inputs are `[N, L, E]` instead of `[L, N, E]` (default false).
    pub batch_first: bool,
    /// Normalise before each block (pre-norm) instead of after the residual sum (default false).
    pub norm_first: bool,
    /// Biases in the linear layers, attention and layer norms (default true).
    pub bias: bool,
}

impl TransformerLayerConfig {
    /// PyTorch's defaults for `d_model` and `nhead`.
    pub fn new(d_model: usize, nhead: usize) -> Self {
        TransformerLayerConfig {
            d_model,
            nhead,
            dim_feedforward: 2048,
            dropout: 0.1,
            activation: TransformerActivation::Relu,
            layer_norm_eps: 1e-5,
            batch_first: false,
            norm_first: false,
            bias: true,
        }
    }
}

/// The pieces both layers share, built from one config.
struct Builder<'a, B: Backend> {
    config: &'a TransformerLayerConfig,
    dtype: DType,
    backend: &'a B,
}

impl<B: Backend> Builder<'_, B> {
    fn attention(&self, rng: &mut Generator) -> Result<MultiheadAttention<B>> {
        let c = self.config;
        let config = MultiheadAttentionConfig {
            dropout: c.dropout,
            bias: c.bias,
            batch_first: c.batch_first,
            ..MultiheadAttentionConfig::new(c.d_model, c.nhead)
        };
        MultiheadAttention::new(config, self.dtype, rng, self.backend)
    }

    fn linear(&self, i: usize, o: usize, rng: &mut Generator) -> Result<Linear<B>> {
        Linear::new(i, o, self.config.bias, self.dtype, rng, self.backend)
    }

    fn norm(&self) -> Result<LayerNorm<B>> {
        let c = self.config;
        LayerNorm::new(
            vec![c.d_model],
            c.layer_norm_eps,
            true,
            c.bias,
            self.dtype,
            self.backend,
        )
    }

    fn dropout(&self, rng: &mut Generator) -> Result<Dropout> {
        Dropout::new(self.config.dropout, rng)
    }
}

/// `x + f(norm(x))` (pre-norm) or `norm(x + f(x))` (post-norm).
fn residual<B: Backend>(
    x: &Tensor<B>,
    norm: &LayerNorm<B>,
    norm_first: bool,
    f: impl FnOnce(&Tensor<B>) -> Result<Tensor<B>>,
) -> Result<Tensor<B>> {
    if norm_first {
        x.add(f(&norm.forward(x)?)?)
    } else {
        norm.forward(&x.add(f(x)?)?)
    }
}

/// The attention block's output (after its dropout).
fn attend<B: Backend>(
    attn: &MultiheadAttention<B>,
    drop: &Dropout,
    x: &Tensor<B>,
    kv: &Tensor<B>,
    attn_mask: Option<&Tensor<B>>,
    key_padding_mask: Option<&Tensor<B>>,
    is_causal: bool,
) -> Result<Tensor<B>> {
    let args = AttentionArgs {
        key_padding_mask,
        need_weights: false,
        attn_mask,
        average_attn_weights: true,
        is_causal,
    };
    drop.forward(&attn.forward(x, kv, kv, args)?.0)
}

/// The feed-forward block `dropout_out(linear2(dropout(activation(linear1(x)))))`.
fn feed_forward<B: Backend>(
    linear1: &Linear<B>,
    activation: TransformerActivation,
    dropout: &Dropout,
    linear2: &Linear<B>,
    dropout_out: &Dropout,
    x: &Tensor<B>,
) -> Result<Tensor<B>> {
    let h = dropout.forward(&activation.forward(&linear1.forward(x)?)?)?;
    dropout_out.forward(&linear2.forward(&h)?)
}

/// A transformer encoder layer (PyTorch's `nn.TransformerEncoderLayer`): self-attention and a
/// feed-forward block, each with a residual connection and a layer norm, before (`norm_first`) or
/// after the sum. Sub-modules are named as in PyTorch (`self_attn`, `linear1`, `dropout`,
/// `linear2`, `norm1`, `norm2`, `dropout1`, `dropout2`), so PyTorch state dicts load by name. Starts
/// in training mode; call `eval()` to turn dropout off.
///
/// ```
/// use nabla_nn::{Module, TransformerEncoderLayer, TransformerLayerConfig};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = TransformerLayerConfig { dim_feedforward: 16, ..TransformerLayerConfig::new(8, 2) };
/// let mut layer = TransformerEncoderLayer::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// layer.eval();
/// let y = layer.forward(&Tensor::ones([5, 2, 8], DType::F32, &cpu)?, None, None, false)?;
/// assert_eq!(y.shape(), &[5, 2, 8]);
/// assert!(layer.named_parameters().iter().any(|(n, _)| n == "self_attn.in_proj_weight"));
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct TransformerEncoderLayer<B: Backend> {
    /// Self-attention.
    pub self_attn: MultiheadAttention<B>,
    /// `d_model -> dim_feedforward`.
    pub linear1: Linear<B>,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// `dim_feedforward -> d_model`.
    pub linear2: Linear<B>,
    /// Norm of the attention block.
    pub norm1: LayerNorm<B>,
    /// Norm of the feed-forward block.
    pub norm2: LayerNorm<B>,
    /// Dropout on the attention block's output.
    pub dropout1: Dropout,
    /// Dropout on the feed-forward block's output.
    pub dropout2: Dropout,
    #[module(skip)]
    config: TransformerLayerConfig,
}

impl<B: Backend> TransformerEncoderLayer<B> {
    /// A layer with PyTorch's initialisation.
    pub fn new(
        config: TransformerLayerConfig,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let b = Builder {
            config: &config,
            dtype,
            backend,
        };
        let (d, ff) = (config.d_model, config.dim_feedforward);
        Ok(TransformerEncoderLayer {
            self_attn: b.attention(rng)?,
            linear1: b.linear(d, ff, rng)?,
            dropout: b.dropout(rng)?,
            linear2: b.linear(ff, d, rng)?,
            norm1: b.norm()?,
            norm2: b.norm()?,
            dropout1: b.dropout(rng)?,
            dropout2: b.dropout(rng)?,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &TransformerLayerConfig {
        &self.config
    }

    /// Encodes `src` (`[S, N, E]`, `[N, S, E]` when `batch_first`, or `[S, E]`). `src_mask` is an
    /// attention mask and `src_key_padding_mask` a key padding mask as in
    /// [`MultiheadAttention::forward`]; `is_causal` applies a causal mask when `src_mask` is `None`.
    pub fn forward(
        &self,
        src: &Tensor<B>,
        src_mask: Option<&Tensor<B>>,
        src_key_padding_mask: Option<&Tensor<B>>,
        is_causal: bool,
    ) -> Result<Tensor<B>> {
        let nf = self.config.norm_first;
        let x = residual(src, &self.norm1, nf, |x| {
            attend(
                &self.self_attn,
                &self.dropout1,
                x,
                x,
                src_mask,
                src_key_padding_mask,
                is_causal,
            )
        })?;
        residual(&x, &self.norm2, nf, |x| {
            feed_forward(
                &self.linear1,
                self.config.activation,
                &self.dropout,
                &self.linear2,
                &self.dropout2,
                x,
            )
        })
    }
}

/// A transformer decoder layer (PyTorch's `nn.TransformerDecoderLayer`): self-attention over the
/// target, attention to the encoder's `memory`, and a feed-forward block, each with a residual
/// connection and a layer norm (before the block when `norm_first`). Sub-modules are named as in
/// PyTorch (`self_attn`, `multihead_attn`, `linear1`, `dropout`, `linear2`, `norm1`..`norm3`,
/// `dropout1`..`dropout3`). Starts in training mode; call `eval()` to turn dropout off.
///
/// ```
/// use nabla_nn::{Module, TransformerDecoderLayer, TransformerLayerConfig, generate_square_subsequent_mask};
/// use nabla_core::{DType, Generator};
/// use nabla_cpu::CpuBackend;
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = TransformerLayerConfig { dim_feedforward: 16, norm_first: true, ..TransformerLayerConfig::new(8, 2) };
/// let mut layer = TransformerDecoderLayer::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// layer.eval();
/// let tgt = Tensor::ones([4, 2, 8], DType::F32, &cpu)?;
/// let memory = Tensor::ones([6, 2, 8], DType::F32, &cpu)?;
/// let causal = generate_square_subsequent_mask(4, DType::F32, &cpu)?;
/// let y = layer.forward(&tgt, &memory, Some(&causal), None, None, None)?;
/// assert_eq!(y.shape(), &[4, 2, 8]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Debug, Clone, nabla_derive::Module)]
#[module(crate = crate)]
pub struct TransformerDecoderLayer<B: Backend> {
    /// Self-attention over the target.
    pub self_attn: MultiheadAttention<B>,
    /// Attention from the target to the memory.
    pub multihead_attn: MultiheadAttention<B>,
    /// `d_model -> dim_feedforward`.
    pub linear1: Linear<B>,
    /// Dropout inside the feed-forward block.
    pub dropout: Dropout,
    /// `dim_feedforward -> d_model`.
    pub linear2: Linear<B>,
    /// Norm of the self-attention block.
    pub norm1: LayerNorm<B>,
    /// Norm of the memory-attention block.
    pub norm2: LayerNorm<B>,
    /// Norm of the feed-forward block.
    pub norm3: LayerNorm<B>,
    /// Dropout on the self-attention block's output.
    pub dropout1: Dropout,
    /// Dropout on the memory-attention block's output.
    pub dropout2: Dropout,
    /// Dropout on the feed-forward block's output.
    pub dropout3: Dropout,
    #[module(skip)]
    config: TransformerLayerConfig,
}

impl<B: Backend> TransformerDecoderLayer<B> {
    /// A layer with PyTorch's initialisation.
    pub fn new(
        config: TransformerLayerConfig,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        let b = Builder {
            config: &config,
            dtype,
            backend,
        };
        let (d, ff) = (config.d_model, config.dim_feedforward);
        Ok(TransformerDecoderLayer {
            self_attn: b.attention(rng)?,
            multihead_attn: b.attention(rng)?,
            linear1: b.linear(d, ff, rng)?,
            dropout: b.dropout(rng)?,
            linear2: b.linear(ff, d, rng)?,
            norm1: b.norm()?,
            norm2: b.norm()?,
            norm3: b.norm()?,
            dropout1: b.dropout(rng)?,
            dropout2: b.dropout(rng)?,
            dropout3: b.dropout(rng)?,
            config,
        })
    }

    /// The settings.
    pub fn config(&self) -> &TransformerLayerConfig {
        &self.config
    }

    /// Decodes `tgt` (`[T, N, E]`, `[N, T, E]` when `batch_first`, or `[T, E]`) attending to `memory`
    /// (`[S, N, E]` likewise). Masks as in [`MultiheadAttention::forward`]: `tgt_mask` `[T, T]` and
    /// `tgt_key_padding_mask` `[N, T]` for the self-attention (pass
    /// [`crate::generate_square_subsequent_mask`] for causal decoding), `memory_mask` `[T, S]` and
    /// `memory_key_padding_mask` `[N, S]` for the memory attention.
    pub fn forward(
        &self,
        tgt: &Tensor<B>,
        memory: &Tensor<B>,
        tgt_mask: Option<&Tensor<B>>,
        memory_mask: Option<&Tensor<B>>,
        tgt_key_padding_mask: Option<&Tensor<B>>,
        memory_key_padding_mask: Option<&Tensor<B>>,
    ) -> Result<Tensor<B>> {
        let nf = self.config.norm_first;
        let x = residual(tgt, &self.norm1, nf, |x| {
            attend(
                &self.self_attn,
                &self.dropout1,
                x,
                x,
                tgt_mask,
                tgt_key_padding_mask,
                false,
            )
        })?;
        let x = residual(&x, &self.norm2, nf, |x| {
            attend(
                &self.multihead_attn,
                &self.dropout2,
                x,
                memory,
                memory_mask,
                memory_key_padding_mask,
                false,
            )
        })?;
        residual(&x, &self.norm3, nf, |x| {
            feed_forward(
                &self.linear1,
                self.config.activation,
                &self.dropout,
                &self.linear2,
                &self.dropout3,
                x,
            )
        })
    }
}
