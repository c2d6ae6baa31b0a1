//! The Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words") as Hugging Face
//! `transformers` builds `ViTForImageClassification`, with the names its files carry
//! (`vit.embeddings.cls_token`, `vit.embeddings.patch_embeddings.projection`,
//! `vit.encoder.layer.0.attention.attention.query`, `vit.encoder.layer.0.layernorm_before`,
//! `vit.layernorm`, `classifier`): a convolution cutting the image into patches, a class token and
//! learned positions, pre-norm blocks with the exact (erf) GELU, and a linear classifier on the
//! class token's final state. DeiT's checkpoints (`deit-tiny`, `deit-small`) share the layout.
//! [`Vit::load`] reads `model.safetensors` or `pytorch_model.bin`.

use crate::encoder::{SelfAttention, WeightInit, check_sizes, layer_norm};
use crate::load_renamed;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::{Conv2d, ConvOptions, Dropout, Forward, LayerNorm, Linear, Module, Param};
use nabla_tensor::Tensor;
use std::path::Path;

/// The model's name for the tensor `name` of a `transformers` ViT state dict. Files written by
/// `save_pretrained`, and the published checkpoints, carry the model's names already; the module
/// names of `transformers` 5 (what `torch.save(model.state_dict())` writes there:
/// `vit.layers.0.attention.q_proj`, `attention.o_proj`, `mlp.fc1`, `mlp.fc2`) are mapped to them;
/// a backbone's (`ViTModel`'s) names gain the `vit.` prefix and its `pooler` is left out.
///
/// ```
/// use nabla_models::vit::hf_name;
/// assert_eq!(
///     hf_name("vit.layers.3.attention.k_proj.bias").as_deref(),
///     Some("vit.encoder.layer.3.attention.attention.key.bias")
/// );
/// assert_eq!(
///     hf_name("vit.layers.0.mlp.fc2.weight").as_deref(),
///     Some("vit.encoder.layer.0.output.dense.weight")
/// );
/// assert_eq!(hf_name("embeddings.cls_token").as_deref(), Some("vit.embeddings.cls_token"));
/// assert_eq!(hf_name("pooler.dense.weight"), None);
/// ```
pub fn hf_name(name: &str) -> Option<String> {
    if name.starts_with("pooler.") || name.starts_with("vit.pooler.") {
        return None;
    }
    let name = match name.strip_prefix("vit.") {
        Some(rest) => rest,
        None if name.starts_with("classifier.") => return Some(name.to_string()),
        None => name,
    };
    let Some(rest) = name.strip_prefix("layers.") else {
        return Some(format!("vit.{name}"));
    };
    const MODULES: [(&str, &str); 6] = [
        ("attention.q_proj.", "attention.attention.query."),
        ("attention.k_proj.", "attention.attention.key."),
        ("attention.v_proj.", "attention.attention.value."),
        ("attention.o_proj.", "attention.output.dense."),
        ("mlp.fc1.", "intermediate.dense."),
        ("mlp.fc2.", "output.dense."),
    ];
    let (index, tail) = rest.split_once('.')?;
    let tail = MODULES
        .iter()
        .find_map(|(new, old)| tail.strip_prefix(new).map(|t| format!("{old}{t}")))
        .unwrap_or_else(|| tail.to_string());
    Some(format!("vit.encoder.layer.{index}.{tail}"))
}

/// The ViT's shape (the fields of `transformers.ViTConfig` that set it) and its classes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VitConfig {
    /// The side of the square images the position table is made for.
    pub image_size: usize,
    /// The side of the square patches (dividing `image_size`).
    pub patch_size: usize,
    /// Image channels.
    pub num_channels: usize,
    /// The width of the hidden states.
    pub hidden_size: usize,
    /// Transformer blocks.
    pub num_hidden_layers: usize,
    /// Attention heads (dividing `hidden_size`).
    pub num_attention_heads: usize,
    /// The width of the feed-forward block.
    pub intermediate_size: usize,
    /// The layer norms' epsilon.
    pub layer_norm_eps: f64,
    /// Dropout on the embeddings and the blocks' outputs, in training.
    pub hidden_dropout_prob: f64,
    /// Dropout on the attention weights, in training.
    pub attention_probs_dropout_prob: f64,
    /// Classes of the classifier.
    pub num_labels: usize,
}

impl VitConfig {
    /// The published sizes, at 224x224 with 16x16 patches: `vit-tiny` (DeiT-Ti, 5.7M parameters),
    /// `vit-small` (DeiT-S, 22M), `vit-base` (ViT-B/16, 86M) and `vit-large` (ViT-L/16, 304M), with
    /// `num_labels` classes; `None` for another name.
    pub fn from_name(name: &str, num_labels: usize) -> Option<Self> {
        let (hidden_size, num_hidden_layers, num_attention_heads) = match name {
            "vit-tiny" => (192, 12, 3),
            "vit-small" => (384, 12, 6),
            "vit-base" => (768, 12, 12),
            "vit-large" => (1024, 24, 16),
            _ => return None,
        };
        Some(VitConfig {
            image_size: 224,
            patch_size: 16,
            num_channels: 3,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size: 4 * hidden_size,
            layer_norm_eps: 1e-12,
            hidden_dropout_prob: 0.0,
            attention_probs_dropout_prob: 0.0,
            num_labels,
        })
    }

    /// The names [`VitConfig::from_name`] knows.
    pub const NAMES: [&'static str; 4] = ["vit-tiny", "vit-small", "vit-base", "vit-large"];

    /// Patches per image side.
    fn patches_per_side(&self) -> usize {
        self.image_size / self.patch_size
    }
}

/// The patch embedding: a convolution with kernel and stride `patch_size`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitPatchEmbeddings<B: Backend> {
    pub projection: Conv2d<B>,
}

/// The class token, the patches' embeddings and the learned positions (`[1, 1 + patches, hidden]`).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitEmbeddings<B: Backend> {
    /// `[1, 1, hidden]`.
    pub cls_token: Param<B>,
    /// `[1, 1 + patches, hidden]`.
    pub position_embeddings: Param<B>,
    pub patch_embeddings: VitPatchEmbeddings<B>,
    pub dropout: Dropout,
}

/// A projection followed by dropout (`ViTSelfOutput`, `ViTOutput`); the first projection of the
/// feed-forward block (`ViTIntermediate`) has no dropout but the same names.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitDense<B: Backend> {
    pub dense: Linear<B>,
    pub dropout: Dropout,
}

impl<B: Backend> VitDense<B> {
    /// `dropout(dense(x))`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        self.dropout.forward(&self.dense.forward(x)?)
    }
}

/// Self-attention (`attention`) and its output projection (`output`).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitAttention<B: Backend> {
    pub attention: SelfAttention<B>,
    pub output: VitDense<B>,
}

/// A pre-norm block: `x + attention(layernorm_before(x))`, then
/// `x + output(gelu(intermediate(layernorm_after(x))))`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitLayer<B: Backend> {
    pub attention: VitAttention<B>,
    pub intermediate: VitDense<B>,
    pub output: VitDense<B>,
    pub layernorm_before: LayerNorm<B>,
    pub layernorm_after: LayerNorm<B>,
}

impl<B: Backend> VitLayer<B> {
    /// The block on `x` `[N, T, hidden]`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let a = &self.attention;
        let attended = a
            .attention
            .forward(&self.layernorm_before.forward(x)?, None)?;
        let x = x.add(&a.output.forward(&attended)?)?;
        let inner = self
            .intermediate
            .dense
            .forward(&self.layernorm_after.forward(&x)?)?;
        x.add(&self.output.forward(&inner.gelu()?)?)
    }
}

/// The blocks, `layer.0` to `layer.{n-1}`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitEncoder<B: Backend> {
    pub layer: Vec<VitLayer<B>>,
}

/// The backbone (`transformers`' `ViTModel` without its pooler): embeddings, blocks, final norm.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct VitModel<B: Backend> {
    pub embeddings: VitEmbeddings<B>,
    pub encoder: VitEncoder<B>,
    pub layernorm: LayerNorm<B>,
}

/// The Vision Transformer classifier (`ViTForImageClassification`): the backbone `vit` and a linear
/// `classifier` on the class token's final state.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_core::{DType, Generator};
/// use nabla_models::{Vit, VitConfig};
/// use nabla_nn::{Forward, Module};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = VitConfig {
///     image_size: 8, patch_size: 4, hidden_size: 16, num_hidden_layers: 1,
///     num_attention_heads: 2, intermediate_size: 32,
///     ..VitConfig::from_name("vit-tiny", 10).unwrap()
/// };
/// let model = Vit::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(model.named_parameters()[0].0, "vit.embeddings.cls_token");
/// let logits = model.forward(&Tensor::zeros([2, 3, 8, 8], DType::F32, &cpu)?)?;
/// assert_eq!(logits.shape(), &[2, 10]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Vit<B: Backend> {
    pub vit: VitModel<B>,
    pub classifier: Linear<B>,
    #[module(skip)]
    config: VitConfig,
}

impl<B: Backend> Vit<B> {
    /// A model of `config` in `dtype` (a real float type) initialised as `transformers` does:
    /// weights, the class token and the positions from the normal of standard deviation 0.02
    /// truncated to ±2, biases zero, norms one and zero.
    pub fn new(config: VitConfig, dtype: DType, rng: &mut Generator, backend: &B) -> Result<Self> {
        let c = config.hidden_size;
        check_sizes("Vit", c, config.num_attention_heads)?;
        let (p, side) = (config.patch_size, config.image_size);
        let positive = [
            config.num_channels,
            config.intermediate_size,
            config.num_labels,
        ];
        if p == 0 || side == 0 || !side.is_multiple_of(p) || positive.contains(&0) {
            return Err(Error::invalid(
                "Vit",
                format!(
                    "patch_size must divide image_size, and the sizes must be positive: {config:?}"
                ),
            ));
        }
        let weights = WeightInit::TruncatedNormal(0.02);
        let eps = config.layer_norm_eps;
        let dense = |from: usize, to: usize, rate: f64, rng: &mut Generator| {
            Ok::<_, Error>(VitDense {
                dense: weights.linear(from, to, dtype, rng, backend)?,
                dropout: Dropout::new(rate, rng)?,
            })
        };
        let tokens = 1 + config.patches_per_side().pow(2);
        let projection = Conv2d::new(
            config.num_channels,
            c,
            (p, p),
            ConvOptions {
                stride: (p, p),
                ..ConvOptions::default()
            },
            dtype,
            rng,
            backend,
        )?;
        let k = &[c, config.num_channels, p, p];
        projection
            .weight
            .set(weights.draw(k, dtype, rng, backend)?)?;
        if let Some(b) = &projection.bias {
            b.set(Tensor::zeros([c], dtype, backend)?)?;
        }
        let embeddings = VitEmbeddings {
            cls_token: weights.param(&[1, 1, c], dtype, rng, backend)?,
            position_embeddings: weights.param(&[1, tokens, c], dtype, rng, backend)?,
            patch_embeddings: VitPatchEmbeddings { projection },
            dropout: Dropout::new(config.hidden_dropout_prob, rng)?,
        };
        let (hidden_rate, attention_rate) = (
            config.hidden_dropout_prob,
            config.attention_probs_dropout_prob,
        );
        let mut layer = Vec::with_capacity(config.num_hidden_layers);
        for _ in 0..config.num_hidden_layers {
            let heads = config.num_attention_heads;
            let attention =
                SelfAttention::new(c, heads, attention_rate, weights, dtype, rng, backend)?;
            layer.push(VitLayer {
                attention: VitAttention {
                    attention,
                    output: dense(c, c, hidden_rate, rng)?,
                },
                intermediate: dense(c, config.intermediate_size, 0.0, rng)?,
                output: dense(config.intermediate_size, c, hidden_rate, rng)?,
                layernorm_before: layer_norm(c, eps, dtype, backend)?,
                layernorm_after: layer_norm(c, eps, dtype, backend)?,
            });
        }
        Ok(Vit {
            vit: VitModel {
                embeddings,
                encoder: VitEncoder { layer },
                layernorm: layer_norm(c, eps, dtype, backend)?,
            },
            classifier: weights.linear(c, config.num_labels, dtype, rng, backend)?,
            config,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> VitConfig {
        self.config
    }

    /// Loads weights by `transformers`' names from `model.safetensors` or `pytorch_model.bin`
    /// (`ViTForImageClassification`'s, as `save_pretrained` writes them or as `transformers` 5
    /// names its modules; see [`hf_name`]).
    pub fn load(&self, path: impl AsRef<Path>, backend: &B) -> Result<()> {
        load_renamed(self, path.as_ref(), backend, hf_name)
    }

    /// The final, normalised hidden states `[N, 1 + patches, hidden]` of images `[N, C, H, W]`
    /// (`H` and `W` equal to `image_size`), the class token first.
    pub fn hidden_states(&self, images: &Tensor<B>) -> Result<Tensor<B>> {
        let VitConfig {
            image_size: side,
            num_channels,
            ..
        } = self.config;
        let n = match images.shape() {
            &[n, ch, h, w] if ch == num_channels && h == side && w == side => n,
            shape => {
                return Err(Error::invalid(
                    "Vit",
                    format!(
                        "images must be [batch, {num_channels}, {side}, {side}], got {shape:?}"
                    ),
                ));
            }
        };
        let e = &self.vit.embeddings;
        let c = self.config.hidden_size;
        let patches = e.patch_embeddings.projection.forward(images)?;
        // [N, C, h, w] -> [N, h·w, C], the patches in row-major order.
        let tokens = self.config.patches_per_side().pow(2);
        let patches = patches.reshape([n, c, tokens])?.transpose(1, 2)?;
        let cls = e.cls_token.value().broadcast_to([n, 1, c])?;
        let x = Tensor::cat(&[&cls, &patches], 1)?.add(e.position_embeddings.value())?;
        let mut x = e.dropout.forward(&x)?;
        for block in &self.vit.encoder.layer {
            x = block.forward(&x)?;
        }
        self.vit.layernorm.forward(&x)
    }
}

impl<B: Backend> Forward<B> for Vit<B> {
    /// Class scores `[N, num_labels]` of images `[N, C, H, W]`.
    fn forward(&self, images: &Tensor<B>) -> Result<Tensor<B>> {
        let x = self.hidden_states(images)?;
        self.classifier.forward(&x.narrow(1, 0, 1)?.squeeze(1)?)
    }
}
