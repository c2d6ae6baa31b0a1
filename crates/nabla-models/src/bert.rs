//! BERT (Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
//! Understanding") as Hugging Face `transformers` builds `BertModel`: the same names
//! (`embeddings.word_embeddings`, `encoder.layer.0.attention.self.query`,
//! `encoder.layer.0.output.LayerNorm`, `pooler.dense`), post-norm blocks with the exact (erf) GELU,
//! token-type embeddings, a padding mask, dropout in training, and the same initialisation.
//! [`Bert::load`] reads `model.safetensors` or `pytorch_model.bin`, with or without the `bert.`
//! prefix of the task models (`BertForPreTraining`, `BertForSequenceClassification`, ...), leaving
//! out their heads (`cls.*`, `classifier.*`) and the index buffers of older files.

use crate::encoder::{SelfAttention, WeightInit, check_sizes, layer_norm, padding_bias};
use crate::load_renamed;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::{Dropout, Embedding, Forward, LayerNorm, Linear, Module};
use nabla_tensor::Tensor;
use std::path::Path;

/// The model's name for the tensor `name` of a `transformers` BERT state dict: the task models'
/// `bert.` prefix dropped; `None` for their heads (`cls.*`, `classifier.*`, `qa_outputs.*`) and the
/// index buffers older files hold (`embeddings.position_ids`, `embeddings.token_type_ids`).
///
/// ```
/// use nabla_models::bert::hf_name;
/// assert_eq!(hf_name("bert.pooler.dense.bias").as_deref(), Some("pooler.dense.bias"));
/// assert_eq!(hf_name("cls.predictions.bias"), None);
/// assert_eq!(hf_name("embeddings.position_ids"), None);
/// ```
pub fn hf_name(name: &str) -> Option<String> {
    const HEADS: [&str; 3] = ["cls.", "classifier.", "qa_outputs."];
    if HEADS.iter().any(|h| name.starts_with(h)) {
        return None;
    }
    let name = name.strip_prefix("bert.").unwrap_or(name);
    let index_buffer = name == "embeddings.position_ids" || name == "embeddings.token_type_ids";
    (!index_buffer).then(|| name.to_string())
}

/// BERT's shape and rates (the fields of `transformers.BertConfig` that set them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BertConfig {
    /// Tokens in the vocabulary (30,522 for the uncased WordPiece vocabulary).
    pub vocab_size: usize,
    /// The width of the hidden states.
    pub hidden_size: usize,
    /// Transformer blocks.
    pub num_hidden_layers: usize,
    /// Attention heads (dividing `hidden_size`).
    pub num_attention_heads: usize,
    /// The width of the feed-forward block.
    pub intermediate_size: usize,
    /// The longest input (rows of the position table).
    pub max_position_embeddings: usize,
    /// Segment types (2: sentence A and B).
    pub type_vocab_size: usize,
    /// The layer norms' epsilon.
    pub layer_norm_eps: f64,
    /// Dropout on the embeddings and the blocks' outputs, in training.
    pub hidden_dropout_prob: f64,
    /// Dropout on the attention weights, in training.
    pub attention_probs_dropout_prob: f64,
    /// The padding token, whose embedding row gets no gradient (`padding_idx`).
    pub pad_token_id: usize,
}

impl BertConfig {
    /// The published sizes: `bert-base-uncased` (110M parameters), `bert-base-cased`,
    /// `bert-large-uncased` (340M) and `bert-large-cased`; `None` for another name.
    pub fn from_name(name: &str) -> Option<Self> {
        let (size, cased) = name.strip_prefix("bert-")?.split_once('-')?;
        let (hidden_size, num_hidden_layers, num_attention_heads) = match size {
            "base" => (768, 12, 12),
            "large" => (1024, 24, 16),
            _ => return None,
        };
        let vocab_size = match cased {
            "uncased" => 30_522,
            "cased" => 28_996,
            _ => return None,
        };
        Some(BertConfig {
            vocab_size,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size: 4 * hidden_size,
            max_position_embeddings: 512,
            type_vocab_size: 2,
            layer_norm_eps: 1e-12,
            hidden_dropout_prob: 0.1,
            attention_probs_dropout_prob: 0.1,
            pad_token_id: 0,
        })
    }

    /// The names [`BertConfig::from_name`] knows.
    pub const NAMES: [&'static str; 4] = [
        "bert-base-uncased",
        "bert-base-cased",
        "bert-large-uncased",
        "bert-large-cased",
    ];
}

/// Word, position and token-type embeddings, summed, normalised and dropped out.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertEmbeddings<B: Backend> {
    pub word_embeddings: Embedding<B>,
    pub position_embeddings: Embedding<B>,
    pub token_type_embeddings: Embedding<B>,
    #[module(rename = "LayerNorm")]
    pub layer_norm: LayerNorm<B>,
    pub dropout: Dropout,
}

/// A projection, dropout, and a residual connection followed by a layer norm:
/// `LayerNorm(dropout(dense(x)) + residual)` (`BertSelfOutput` and `BertOutput`).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertResidualOutput<B: Backend> {
    pub dense: Linear<B>,
    #[module(rename = "LayerNorm")]
    pub layer_norm: LayerNorm<B>,
    pub dropout: Dropout,
}

impl<B: Backend> BertResidualOutput<B> {
    /// `LayerNorm(dropout(dense(x)) + residual)`.
    pub fn forward(&self, x: &Tensor<B>, residual: &Tensor<B>) -> Result<Tensor<B>> {
        let y = self.dropout.forward(&self.dense.forward(x)?)?;
        self.layer_norm.forward(&y.add(residual)?)
    }
}

/// Self-attention (`self`) and its output block (`output`).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertAttention<B: Backend> {
    #[module(rename = "self")]
    pub self_attention: SelfAttention<B>,
    pub output: BertResidualOutput<B>,
}

/// The first projection of the feed-forward block, followed by the exact GELU.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertIntermediate<B: Backend> {
    pub dense: Linear<B>,
}

/// A post-norm block: attention, then the feed-forward block, each with its residual and norm.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertLayer<B: Backend> {
    pub attention: BertAttention<B>,
    pub intermediate: BertIntermediate<B>,
    pub output: BertResidualOutput<B>,
}

impl<B: Backend> BertLayer<B> {
    /// The block on `x` `[N, T, hidden]` with the attention bias of [`padding_bias`], if any.
    pub fn forward(&self, x: &Tensor<B>, bias: Option<&Tensor<B>>) -> Result<Tensor<B>> {
        let attended = self.attention.self_attention.forward(x, bias)?;
        let x = self.attention.output.forward(&attended, x)?;
        let inner = self.intermediate.dense.forward(&x)?.gelu()?;
        self.output.forward(&inner, &x)
    }
}

/// The blocks, `layer.0` to `layer.{n-1}`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertEncoder<B: Backend> {
    pub layer: Vec<BertLayer<B>>,
}

/// `tanh(dense(h₀))` of the first token's hidden state (the `[CLS]` summary).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct BertPooler<B: Backend> {
    pub dense: Linear<B>,
}

/// What [`Bert::run`] returns: the final hidden states and the pooled `[CLS]` summary.
#[derive(Clone, Debug)]
pub struct BertOutput<B: Backend> {
    /// `[N, T, hidden]`.
    pub last_hidden_state: Tensor<B>,
    /// `[N, hidden]`.
    pub pooler_output: Tensor<B>,
}

/// BERT's encoder (`transformers`' `BertModel`) with its names: `embeddings`, `encoder.layer.N`,
/// `pooler`.
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_core::{DType, Generator};
/// use nabla_models::{Bert, BertConfig};
/// use nabla_nn::{Forward, Module};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = BertConfig {
///     vocab_size: 64, hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4,
///     intermediate_size: 48, max_position_embeddings: 16,
///     ..BertConfig::from_name("bert-base-uncased").unwrap()
/// };
/// let model = Bert::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(model.named_parameters()[3].0, "embeddings.LayerNorm.weight");
/// let ids = Tensor::from_vec(vec![2i64, 5, 9, 3, 7, 0], [2, 3], &cpu)?;
/// let mask = Tensor::from_vec(vec![1i64, 1, 1, 1, 1, 0], [2, 3], &cpu)?;
/// let out = model.run(&ids, None, Some(&mask))?;
/// assert_eq!(out.last_hidden_state.shape(), &[2, 3, 32]);
/// assert_eq!(out.pooler_output.shape(), &[2, 32]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Bert<B: Backend> {
    pub embeddings: BertEmbeddings<B>,
    pub encoder: BertEncoder<B>,
    pub pooler: BertPooler<B>,
    #[module(skip)]
    config: BertConfig,
}

impl<B: Backend> Bert<B> {
    /// A model of `config` in `dtype` (a real float type) initialised as `transformers` does:
    /// weights and embeddings `N(0, 0.02²)` (the padding row zero), biases zero, norms one and zero.
    pub fn new(config: BertConfig, dtype: DType, rng: &mut Generator, backend: &B) -> Result<Self> {
        let c = config.hidden_size;
        check_sizes("Bert", c, config.num_attention_heads)?;
        let positive = [
            config.vocab_size,
            config.max_position_embeddings,
            config.type_vocab_size,
            config.intermediate_size,
        ];
        if positive.contains(&0) || config.pad_token_id >= config.vocab_size {
            return Err(Error::invalid(
                "Bert",
                format!("the sizes must be positive and pad_token_id below vocab_size: {config:?}"),
            ));
        }
        let weights = WeightInit::Normal(0.02);
        let eps = config.layer_norm_eps;
        // `N(0, 1)` scaled to `N(0, 0.02²)`, which keeps the zero row of the padding token.
        let embedding = |rows: usize, pad: Option<usize>, rng: &mut Generator| {
            let table = Embedding::new(rows, c, pad.map(|p| p as i64), dtype, rng, backend)?;
            table.weight.set(table.weight.value().mul(0.02)?)?;
            Ok::<_, Error>(table)
        };
        let dropout = |rng: &mut Generator| Dropout::new(config.hidden_dropout_prob, rng);
        let residual_output = |from: usize, rng: &mut Generator| -> Result<BertResidualOutput<B>> {
            Ok(BertResidualOutput {
                dense: weights.linear(from, c, dtype, rng, backend)?,
                layer_norm: layer_norm(c, eps, dtype, backend)?,
                dropout: dropout(rng)?,
            })
        };
        let embeddings = BertEmbeddings {
            word_embeddings: embedding(config.vocab_size, Some(config.pad_token_id), rng)?,
            position_embeddings: embedding(config.max_position_embeddings, None, rng)?,
            token_type_embeddings: embedding(config.type_vocab_size, None, rng)?,
            layer_norm: layer_norm(c, eps, dtype, backend)?,
            dropout: dropout(rng)?,
        };
        let mut layer = Vec::with_capacity(config.num_hidden_layers);
        for _ in 0..config.num_hidden_layers {
            let heads = config.num_attention_heads;
            let p = config.attention_probs_dropout_prob;
            layer.push(BertLayer {
                attention: BertAttention {
                    self_attention: SelfAttention::new(c, heads, p, weights, dtype, rng, backend)?,
                    output: residual_output(c, rng)?,
                },
                intermediate: BertIntermediate {
                    dense: weights.linear(c, config.intermediate_size, dtype, rng, backend)?,
                },
                output: residual_output(config.intermediate_size, rng)?,
            });
        }
        Ok(Bert {
            embeddings,
            encoder: BertEncoder { layer },
            pooler: BertPooler {
                dense: weights.linear(c, c, dtype, rng, backend)?,
            },
            config,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> BertConfig {
        self.config
    }

    /// Loads weights by `transformers`' names from `model.safetensors` or `pytorch_model.bin`
    /// (`BertModel`'s names, or a task model's with the `bert.` prefix, whose heads are left out).
    pub fn load(&self, path: impl AsRef<Path>, backend: &B) -> Result<()> {
        load_renamed(self, path.as_ref(), backend, hf_name)
    }

    /// The encoder on token ids `[N, T]` (integers, `T` at most `max_position_embeddings`), with
    /// optional segment ids `token_type_ids` `[N, T]` (zeros when `None`) and `attention_mask`
    /// `[N, T]` (1 for tokens, 0 for padding; every token attends when `None`).
    pub fn run(
        &self,
        ids: &Tensor<B>,
        token_type_ids: Option<&Tensor<B>>,
        attention_mask: Option<&Tensor<B>>,
    ) -> Result<BertOutput<B>> {
        let (n, t) = match ids.shape() {
            &[n, t] if ids.dtype().is_int() && t <= self.config.max_position_embeddings => (n, t),
            shape => {
                return Err(Error::invalid(
                    "Bert",
                    format!(
                        "token ids must be an integer tensor [batch, T] with T <= \
                         max_position_embeddings = {}, got {:?} {shape:?}",
                        self.config.max_position_embeddings,
                        ids.dtype()
                    ),
                ));
            }
        };
        let e = &self.embeddings;
        let positions = Tensor::arange(0i64, t as i64, 1i64, DType::I64, ids.backend())?;
        let types = match token_type_ids {
            Some(tt) if tt.shape() == [n, t] => e.token_type_embeddings.forward(tt)?,
            Some(tt) => {
                return Err(Error::shapes("Bert token_type_ids", &[n, t], tt.shape())
                    .with_hint("segment ids must be [batch, tokens], as the token ids"));
            }
            None => e.token_type_embeddings.forward(&Tensor::zeros(
                [1, 1],
                DType::I64,
                ids.backend(),
            )?)?,
        };
        let x = e
            .word_embeddings
            .forward(ids)?
            .add(&e.position_embeddings.forward(&positions)?)?
            .add(&types)?;
        let mut x = e.dropout.forward(&e.layer_norm.forward(&x)?)?;
        let dtype = x.dtype();
        let bias = attention_mask
            .map(|m| padding_bias(m, n, t, dtype))
            .transpose()?;
        for block in &self.encoder.layer {
            x = block.forward(&x, bias.as_ref())?;
        }
        let first = x.narrow(1, 0, 1)?.squeeze(1)?;
        let pooled = self.pooler.dense.forward(&first)?.tanh()?;
        Ok(BertOutput {
            last_hidden_state: x,
            pooler_output: pooled,
        })
    }
}

impl<B: Backend> Forward<B> for Bert<B> {
    /// The final hidden states `[N, T, hidden]` for token ids `[N, T]`, every token attending and
    /// all of segment 0 (use [`Bert::run`] for masks, segments and the pooled output).
    fn forward(&self, ids: &Tensor<B>) -> Result<Tensor<B>> {
        Ok(self.run(ids, None, None)?.last_hidden_state)
    }
}
