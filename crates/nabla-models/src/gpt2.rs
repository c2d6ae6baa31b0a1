//! GPT-2 (Radford et al., "Language Models are Unsupervised Multitask Learners") as Hugging Face
//! `transformers` builds it (`GPT2Model` with the head of `GPT2LMHeadModel` tied to the token
//! embedding): the same names (`wte`, `wpe`, `h.0.ln_1`, `h.0.attn.c_attn`, `h.0.mlp.c_proj`,
//! `ln_f`), the same `Conv1D` layout (weights `[in, out]`, so a checkpoint's tensors load as they
//! are), the tanh-approximated GELU (`gelu_new`), pre-norm blocks and the same initialisation.
//! [`Gpt2::load`] reads `model.safetensors` or `pytorch_model.bin`, with or without the
//! `transformer.` prefix of `GPT2LMHeadModel`, leaving out the tied `lm_head.weight` and the causal
//! mask buffers of older files (`attn.bias`, `attn.masked_bias`).

use crate::load_renamed;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::{
    Embedding, Forward, LayerNorm, Module, Param, SdpaArgs, init, scaled_dot_product_attention,
};
use nabla_tensor::Tensor;
use std::path::Path;

/// The model's name for the tensor `name` of a `transformers` GPT-2 state dict: `GPT2LMHeadModel`'s
/// `transformer.` prefix dropped; `None` for the tied `lm_head.weight` and the causal-mask buffers
/// of older files (`h.N.attn.bias`, `h.N.attn.masked_bias`), which the model does not hold.
///
/// ```
/// use nabla_models::gpt2::hf_name;
/// assert_eq!(hf_name("transformer.h.0.attn.c_attn.bias").as_deref(), Some("h.0.attn.c_attn.bias"));
/// assert_eq!(hf_name("h.3.attn.bias"), None);
/// assert_eq!(hf_name("lm_head.weight"), None);
/// ```
pub fn hf_name(name: &str) -> Option<String> {
    let name = name.strip_prefix("transformer.").unwrap_or(name);
    let mask_buffer = name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
    (name != "lm_head.weight" && !mask_buffer).then(|| name.to_string())
}

/// GPT-2's shape (the fields of `transformers.GPT2Config` that set it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gpt2Config {
    /// Tokens in the vocabulary (50,257 for GPT-2's byte-pair encoding).
    pub vocab_size: usize,
    /// The longest context (rows of the position table).
    pub n_positions: usize,
    /// The width of the residual stream.
    pub n_embd: usize,
    /// Transformer blocks.
    pub n_layer: usize,
    /// Attention heads (dividing `n_embd`).
    pub n_head: usize,
    /// The layer norms' epsilon.
    pub layer_norm_epsilon: f64,
}

impl Gpt2Config {
    /// The published sizes: `gpt2` (124M parameters), `gpt2-medium` (355M), `gpt2-large` (774M)
    /// and `gpt2-xl` (1.5B); `None` for another name.
    pub fn from_name(name: &str) -> Option<Self> {
        let (n_embd, n_layer, n_head) = match name {
            "gpt2" => (768, 12, 12),
            "gpt2-medium" => (1024, 24, 16),
            "gpt2-large" => (1280, 36, 20),
            "gpt2-xl" => (1600, 48, 25),
            _ => return None,
        };
        Some(Gpt2Config {
            vocab_size: 50_257,
            n_positions: 1024,
            n_embd,
            n_layer,
            n_head,
            layer_norm_epsilon: 1e-5,
        })
    }

    /// The names [`Gpt2Config::from_name`] knows.
    pub const NAMES: [&'static str; 4] = ["gpt2", "gpt2-medium", "gpt2-large", "gpt2-xl"];
}

/// `transformers`' `Conv1D`: `y = x W + b` with `weight` `[in, out]` (the transpose of
/// `nn.Linear`'s layout).
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Conv1D<B: Backend> {
    /// `[in, out]`.
    pub weight: Param<B>,
    /// `[out]`.
    pub bias: Param<B>,
}

impl<B: Backend> Conv1D<B> {
    /// A layer from `nx` to `nf` features: weights `N(0, std²)`, bias zero.
    fn new(
        nx: usize,
        nf: usize,
        std: f64,
        dtype: DType,
        rng: &mut Generator,
        backend: &B,
    ) -> Result<Self> {
        Ok(Conv1D {
            weight: Param::new(init::normal([nx, nf], 0.0, std, dtype, rng, backend)?)?,
            bias: Param::new(Tensor::zeros([nf], dtype, backend)?)?,
        })
    }

    /// `x W + b` for `x` `[..., in]`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let shape = x.shape().to_vec();
        let (nx, nf) = (self.weight.shape()[0], self.weight.shape()[1]);
        let rows = x.reshape([x.numel() / nx.max(1), nx])?;
        let y = rows.matmul(&self.weight.value())?.add(self.bias.value())?;
        let mut out = shape;
        *out.last_mut().expect("checked by the reshape") = nf;
        y.reshape(out)
    }
}

/// Causal multi-head self-attention: the query, key and value projections in one `c_attn`, the
/// output projection `c_proj`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Gpt2Attention<B: Backend> {
    pub c_attn: Conv1D<B>,
    pub c_proj: Conv1D<B>,
    #[module(skip)]
    n_head: usize,
}

impl<B: Backend> Gpt2Attention<B> {
    /// Attention over `x` `[N, T, C]`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let (n, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let h = self.n_head;
        let heads = |part: usize, qkv: &Tensor<B>| -> Result<Tensor<B>> {
            qkv.narrow(2, part * c, c)?
                .reshape([n, t, h, c / h])?
                .transpose(1, 2)
        };
        let qkv = self.c_attn.forward(x)?;
        let (q, k, v) = (heads(0, &qkv)?, heads(1, &qkv)?, heads(2, &qkv)?);
        let causal = SdpaArgs {
            is_causal: true,
            ..SdpaArgs::default()
        };
        let y = scaled_dot_product_attention(&q, &k, &v, causal)?;
        self.c_proj.forward(&y.transpose(1, 2)?.reshape([n, t, c])?)
    }
}

/// The feed-forward block: `c_fc` to four times the width, GELU (tanh approximation), `c_proj`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Gpt2Mlp<B: Backend> {
    pub c_fc: Conv1D<B>,
    pub c_proj: Conv1D<B>,
}

impl<B: Backend> Gpt2Mlp<B> {
    /// `c_proj(gelu_tanh(c_fc(x)))` for `x` `[..., n_embd]`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        self.c_proj.forward(&self.c_fc.forward(x)?.gelu_tanh()?)
    }
}

/// A pre-norm transformer block: `x + attn(ln_1(x))`, then `x + mlp(ln_2(x))`.
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Gpt2Block<B: Backend> {
    pub ln_1: LayerNorm<B>,
    pub attn: Gpt2Attention<B>,
    pub ln_2: LayerNorm<B>,
    pub mlp: Gpt2Mlp<B>,
}

impl<B: Backend> Gpt2Block<B> {
    /// The block on `x` `[N, T, C]`.
    pub fn forward(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let x = x.add(&self.attn.forward(&self.ln_1.forward(x)?)?)?;
        x.add(&self.mlp.forward(&self.ln_2.forward(&x)?)?)
    }
}

/// GPT-2 with `transformers`' names: token and position embeddings `wte` and `wpe`, the blocks
/// `h`, the final norm `ln_f`, and logits from the token embedding (the tied head).
///
/// ```
/// use nabla_cpu::CpuBackend;
/// use nabla_core::{DType, Generator};
/// use nabla_models::{Gpt2, Gpt2Config};
/// use nabla_nn::{Forward, Module};
/// use nabla_tensor::Tensor;
/// let cpu = CpuBackend::new();
/// let config = Gpt2Config { vocab_size: 64, n_positions: 16, n_embd: 32, n_layer: 2, n_head: 4, layer_norm_epsilon: 1e-5 };
/// let model = Gpt2::new(config, DType::F32, &mut Generator::new(0), &cpu)?;
/// assert_eq!(model.named_parameters()[2].0, "h.0.ln_1.weight");
/// let ids = Tensor::from_vec(vec![1i64, 5, 9, 2, 7, 3], [2, 3], &cpu)?;
/// assert_eq!(model.forward(&ids)?.shape(), &[2, 3, 64]);
/// # Ok::<(), nabla_core::Error>(())
/// ```
#[derive(Module)]
#[module(crate = nabla_nn)]
pub struct Gpt2<B: Backend> {
    pub wte: Embedding<B>,
    pub wpe: Embedding<B>,
    pub h: Vec<Gpt2Block<B>>,
    pub ln_f: LayerNorm<B>,
    #[module(skip)]
    config: Gpt2Config,
}

impl<B: Backend> Gpt2<B> {
    /// A model of `config` in `dtype` (a real float type) initialised as `transformers` does:
    /// weights `N(0, 0.02²)` (the residual projections `N(0, 0.02² / (2 n_layer))`), biases zero,
    /// norms one and zero.
    pub fn new(config: Gpt2Config, dtype: DType, rng: &mut Generator, backend: &B) -> Result<Self> {
        let Gpt2Config {
            vocab_size,
            n_positions,
            n_embd: c,
            n_layer,
            n_head,
            layer_norm_epsilon,
        } = config;
        if n_head == 0 || c % n_head != 0 || vocab_size == 0 || n_positions == 0 {
            return Err(Error::invalid(
                "Gpt2",
                format!("n_head must divide n_embd, and the sizes must be positive: {config:?}"),
            ));
        }
        let std = 0.02;
        let residual_std = std / (2.0 * n_layer as f64).sqrt();
        let norm = || LayerNorm::new(vec![c], layer_norm_epsilon, true, true, dtype, backend);
        let embedding = |rows: usize, rng: &mut Generator| -> Result<Embedding<B>> {
            let e = Embedding::new(rows, c, None, dtype, rng, backend)?;
            e.weight
                .set(init::normal([rows, c], 0.0, std, dtype, rng, backend)?)?;
            Ok(e)
        };
        let wte = embedding(vocab_size, rng)?;
        let wpe = embedding(n_positions, rng)?;
        let mut h = Vec::with_capacity(n_layer);
        for _ in 0..n_layer {
            h.push(Gpt2Block {
                ln_1: norm()?,
                attn: Gpt2Attention {
                    c_attn: Conv1D::new(c, 3 * c, std, dtype, rng, backend)?,
                    c_proj: Conv1D::new(c, c, residual_std, dtype, rng, backend)?,
                    n_head,
                },
                ln_2: norm()?,
                mlp: Gpt2Mlp {
                    c_fc: Conv1D::new(c, 4 * c, std, dtype, rng, backend)?,
                    c_proj: Conv1D::new(4 * c, c, residual_std, dtype, rng, backend)?,
                },
            });
        }
        Ok(Gpt2 {
            wte,
            wpe,
            h,
            ln_f: norm()?,
            config,
        })
    }

    /// The model's configuration.
    pub fn config(&self) -> Gpt2Config {
        self.config
    }

    /// Loads weights by `transformers`' names from `model.safetensors` or `pytorch_model.bin`
    /// (`GPT2Model`'s names, or `GPT2LMHeadModel`'s with the `transformer.` prefix); the tied
    /// `lm_head.weight` and the causal-mask buffers `attn.bias` / `attn.masked_bias` are left out.
    pub fn load(&self, path: impl AsRef<Path>, backend: &B) -> Result<()> {
        load_renamed(self, path.as_ref(), backend, hf_name)
    }

    /// The final hidden states `[N, T, n_embd]` for token ids `[N, T]` (an integer tensor, `T` at
    /// most `n_positions`).
    pub fn hidden_states(&self, ids: &Tensor<B>) -> Result<Tensor<B>> {
        let t = match ids.shape() {
            &[_, t] if ids.dtype().is_int() && t <= self.config.n_positions => t,
            shape => {
                return Err(Error::invalid(
                    "Gpt2",
                    format!(
                        "token ids must be an integer tensor [batch, T] with T <= n_positions = {}, \
                         got {:?} {shape:?}",
                        self.config.n_positions,
                        ids.dtype()
                    ),
                ));
            }
        };
        let positions = Tensor::arange(0i64, t as i64, 1i64, DType::I64, ids.backend())?;
        let mut x = self.wte.forward(ids)?.add(&self.wpe.forward(&positions)?)?;
        for block in &self.h {
            x = block.forward(&x)?;
        }
        self.ln_f.forward(&x)
    }
}

impl<B: Backend> Forward<B> for Gpt2<B> {
    /// Next-token logits `[N, T, vocab_size]` for token ids `[N, T]`: the hidden states times the
    /// token embedding's transpose (the tied head).
    fn forward(&self, ids: &Tensor<B>) -> Result<Tensor<B>> {
        let x = self.hidden_states(ids)?;
        let (n, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let logits = x
            .reshape([n * t, c])?
            .matmul(&self.wte.weight.value().transpose(0, 1)?)?;
        logits.reshape([n, t, self.config.vocab_size])
    }
}
