//! GPT-2 (Radford et al., "Language Models are Unsupervised Multitask Learners") as Hugging Face
//! `transformers` builds it (`GPT2Model` with the head of `GPT2LMHeadModel` tied to the token
//! embedding): the same names (`wte`, `wpe`, `h.0.ln_1`, `h.0.attn.c_attn`, `h.0.mlp.c_proj`,
//! `ln_f`), the same `Conv1D` layout (weights `[in, out]`, so a checkpoint's tensors load as they
//! are), the tanh-approximated GELU (`gelu_new`), pre-norm blocks and the same initialisation.
//! [`Gpt2::load`] reads `model.safetensors` or `pytorch_model.bin`, with or without the
//! `transformer.` prefix of `GPT2LMHeadModel`, leaving out the tied `lm_head.weight` and the causal
//! mask buffers of older files (`attn.bias`, `attn.masked_bias`). [`Gpt2::generate`] samples a
//! continuation with temperature and top-k over a key-value cache ([`KvCache`]).

use crate::load_renamed;
use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_nn::{
    Embedding, Forward, LayerNorm, Module, Param, SdpaArgs, init, scaled_dot_product_attention,
};
use nabla_tensor::Tensor;
use nabla_tensor::no_grad;
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

    /// The configuration of a checkpoint from its tensors' names (the model's, see [`hf_name`]) and
    /// shapes: the vocabulary and width from `wte.weight`, the context from `wpe.weight`, the blocks
    /// from `h.N`; the heads are `n_head`, or GPT-2's 64 features per head when `None` (every
    /// published size has them).
    pub fn from_weights(shapes: &[(&str, &[usize])], n_head: Option<usize>) -> Result<Self> {
        let shape = |name: &str| {
            shapes
                .iter()
                .find(|(n, _)| *n == name)
                .and_then(|(_, s)| match **s {
                    [rows, width] => Some((rows, width)),
                    _ => None,
                })
                .ok_or_else(|| {
                    Error::invalid(
                        "Gpt2",
                        format!("the weights have no 2-D `{name}`: not GPT-2's"),
                    )
                })
        };
        let (vocab_size, n_embd) = shape("wte.weight")?;
        let (n_positions, _) = shape("wpe.weight")?;
        let n_layer = shapes
            .iter()
            .filter_map(|(n, _)| {
                n.strip_prefix("h.")?
                    .split_once('.')?
                    .0
                    .parse::<usize>()
                    .ok()
            })
            .max()
            .map_or(0, |last| last + 1);
        let n_head = match n_head {
            Some(h) => h,
            None if n_embd % 64 == 0 => n_embd / 64,
            None => {
                return Err(Error::invalid(
                    "Gpt2",
                    format!("a width of {n_embd} is not 64 features per head: give n_head"),
                ));
            }
        };
        Ok(Gpt2Config {
            vocab_size,
            n_positions,
            n_embd,
            n_layer,
            n_head,
            layer_norm_epsilon: 1e-5,
        })
    }
}

/// How [`Gpt2::generate`] samples (the arguments of `transformers`' `generate` of that name).
#[derive(Clone, Debug, PartialEq)]
pub struct GenerateOptions {
    /// Tokens to sample (fewer when `eos_token_id` is drawn or the context is full).
    pub max_new_tokens: usize,
    /// Divides the logits: below 1 sharper, above 1 flatter; 0 takes the most likely token.
    pub temperature: f64,
    /// Sample among the `k` most likely tokens only.
    pub top_k: Option<usize>,
    /// Stop after this token.
    pub eos_token_id: Option<i64>,
    /// The seed of the draws.
    pub seed: u64,
}

impl Default for GenerateOptions {
    /// `transformers`' defaults: 20 tokens, temperature 1, the 50 most likely.
    fn default() -> Self {
        GenerateOptions {
            max_new_tokens: 20,
            temperature: 1.0,
            top_k: Some(50),
            eos_token_id: None,
            seed: 0,
        }
    }
}

/// The token drawn from `logits` (one position's) with `temperature` and `top_k`, by inverting the
/// cumulative distribution at `u` in `[0, 1)`: the most likely token (the first of equals) at
/// temperature 0.
pub fn sample_token(
    logits: &[f64],
    temperature: f64,
    top_k: Option<usize>,
    u: f64,
) -> Result<usize> {
    if logits.is_empty() || logits.iter().any(|l| l.is_nan()) {
        return Err(Error::invalid("generate", "the logits are empty or NaN"));
    }
    if !(temperature.is_finite() && temperature >= 0.0) || top_k == Some(0) {
        return Err(Error::invalid(
            "generate",
            format!(
                "needs a finite temperature >= 0 and top_k >= 1, got {temperature} and {top_k:?}"
            ),
        ));
    }
    let mut order: Vec<usize> = (0..logits.len()).collect();
    // Stable: equal logits keep the lower token first.
    order.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
    if temperature == 0.0 {
        return Ok(order[0]);
    }
    order.truncate(top_k.unwrap_or(order.len()));
    let top = logits[order[0]];
    let weights: Vec<f64> = order
        .iter()
        .map(|&i| ((logits[i] - top) / temperature).exp())
        .collect();
    let target = u * weights.iter().sum::<f64>();
    let mut sum = 0.0;
    for (&i, w) in order.iter().zip(&weights) {
        sum += w;
        if sum > target {
            return Ok(i);
        }
    }
    Ok(order[weights.len() - 1])
}

/// The keys and values of the tokens a [`Gpt2`] has seen, per block (`[N, heads, T, head_dim]`
/// each), so that a new token attends to them without recomputing them (`transformers`'
/// `past_key_values`).
#[derive(Clone, Debug)]
pub struct KvCache<B: Backend> {
    blocks: Vec<Option<(Tensor<B>, Tensor<B>)>>,
    len: usize,
}

impl<B: Backend> Default for KvCache<B> {
    fn default() -> Self {
        KvCache {
            blocks: Vec::new(),
            len: 0,
        }
    }
}

impl<B: Backend> KvCache<B> {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The number of tokens seen.
    pub fn len(&self) -> usize {
        self.len
    }

    /// `true` before the first token.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
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
        self.forward_cached(x, None)
    }

    /// Attention over `x` `[N, T, C]` and, with `past`, the keys and values it holds (which
    /// then gain `x`'s): query `i` attends to every earlier position and itself.
    fn forward_cached(
        &self,
        x: &Tensor<B>,
        past: Option<&mut Option<(Tensor<B>, Tensor<B>)>>,
    ) -> Result<Tensor<B>> {
        let (n, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let h = self.n_head;
        let heads = |part: usize, qkv: &Tensor<B>| -> Result<Tensor<B>> {
            qkv.narrow(2, part * c, c)?
                .reshape([n, t, h, c / h])?
                .transpose(1, 2)
        };
        let qkv = self.c_attn.forward(x)?;
        let (q, mut k, mut v) = (heads(0, &qkv)?, heads(1, &qkv)?, heads(2, &qkv)?);
        let mut offset = 0;
        if let Some(slot) = past {
            if let Some((pk, pv)) = slot.take() {
                offset = pk.shape()[2];
                k = Tensor::cat(&[&pk, &k], 2)?;
                v = Tensor::cat(&[&pv, &v], 2)?;
            }
            *slot = Some((k.clone(), v.clone()));
        }
        // Query i sits at position offset + i and sees keys 0..=offset + i.
        let s = offset + t;
        let mask;
        let args = match (offset, t) {
            (0, _) => SdpaArgs {
                is_causal: true,
                ..SdpaArgs::default()
            },
            (_, 1) => SdpaArgs::default(),
            _ => {
                let allowed = (0..t * s).map(|i| i % s <= offset + i / s).collect();
                mask = Tensor::from_vec(allowed, [t, s], x.backend())?;
                SdpaArgs {
                    attn_mask: Some(&mask),
                    ..SdpaArgs::default()
                }
            }
        };
        let y = scaled_dot_product_attention(&q, &k, &v, args)?;
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
        self.forward_cached(x, None)
    }

    /// The block on `x`, its attention over the cached keys and values `past` as well.
    fn forward_cached(
        &self,
        x: &Tensor<B>,
        past: Option<&mut Option<(Tensor<B>, Tensor<B>)>>,
    ) -> Result<Tensor<B>> {
        let x = x.add(&self.attn.forward_cached(&self.ln_1.forward(x)?, past)?)?;
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
        self.run(ids, None)
    }

    /// Next-token logits `[N, T, vocab_size]` for token ids `[N, T]` that follow the tokens of
    /// `cache` (which then holds these too): the logits of the whole sequence, computed one part
    /// at a time.
    pub fn logits_cached(&self, ids: &Tensor<B>, cache: &mut KvCache<B>) -> Result<Tensor<B>> {
        let hidden = self.run(ids, Some(cache))?;
        self.head(&hidden)
    }

    /// A continuation of `prompt` (token ids) sampled as `options` say, without recording
    /// gradients: each step runs the new token only, over the cache of the earlier ones. Returns
    /// the new tokens.
    pub fn generate(&self, prompt: &[i64], options: &GenerateOptions) -> Result<Vec<i64>> {
        if prompt.is_empty() {
            return Err(Error::invalid("generate", "the prompt is empty"));
        }
        let backend = self.wte.weight.value().backend().clone();
        let mut rng = Generator::new(options.seed);
        let mut cache = KvCache::new();
        no_grad(|| {
            let ids = Tensor::from_vec(prompt.to_vec(), [1, prompt.len()], &backend)?;
            let mut logits = self.logits_cached(&ids, &mut cache)?;
            let mut out = Vec::new();
            while out.len() < options.max_new_tokens {
                let last = logits.narrow(1, logits.shape()[1] - 1, 1)?.to_f64_vec()?;
                let u = rng.next_key(1).uniform_f64(0);
                let token = sample_token(&last, options.temperature, options.top_k, u)? as i64;
                out.push(token);
                let full = cache.len() >= self.config.n_positions;
                if Some(token) == options.eos_token_id
                    || full
                    || out.len() == options.max_new_tokens
                {
                    break;
                }
                let next = Tensor::from_vec(vec![token], [1, 1], &backend)?;
                logits = self.logits_cached(&next, &mut cache)?;
            }
            Ok(out)
        })
    }

    /// The logits of hidden states `[N, T, C]`: the products with the token embedding (the tied
    /// head).
    fn head(&self, x: &Tensor<B>) -> Result<Tensor<B>> {
        let (n, t, c) = (x.shape()[0], x.shape()[1], x.shape()[2]);
        let logits = x
            .reshape([n * t, c])?
            .matmul(&self.wte.weight.value().transpose(0, 1)?)?;
        logits.reshape([n, t, self.config.vocab_size])
    }

    /// The final hidden states of `ids`, after the tokens of `cache` when given.
    fn run(&self, ids: &Tensor<B>, cache: Option<&mut KvCache<B>>) -> Result<Tensor<B>> {
        let start = cache.as_ref().map_or(0, |c| c.len);
        let t = match ids.shape() {
            &[_, t] if ids.dtype().is_int() && start + t <= self.config.n_positions => t,
            shape => {
                return Err(Error::invalid(
                    "Gpt2",
                    format!(
                        "token ids must be an integer tensor [batch, T] with T <= n_positions = {} \
                         (less the {start} cached), got {:?} {shape:?}",
                        self.config.n_positions,
                        ids.dtype()
                    ),
                ));
            }
        };
        let (first, last) = (start as i64, (start + t) as i64);
        let positions = Tensor::arange(first, last, 1i64, DType::I64, ids.backend())?;
        let mut x = self.wte.forward(ids)?.add(&self.wpe.forward(&positions)?)?;
        match cache {
            Some(cache) => {
                cache.blocks.resize(self.h.len(), None);
                for (block, past) in self.h.iter().zip(&mut cache.blocks) {
                    x = block.forward_cached(&x, Some(past))?;
                }
                cache.len += t;
            }
            None => {
                for block in &self.h {
                    x = block.forward(&x)?;
                }
            }
        }
        self.ln_f.forward(&x)
    }
}

impl<B: Backend> Forward<B> for Gpt2<B> {
    /// Next-token logits `[N, T, vocab_size]` for token ids `[N, T]`: the hidden states times the
    /// token embedding's transpose (the tied head).
    fn forward(&self, ids: &Tensor<B>) -> Result<Tensor<B>> {
        self.head(&self.hidden_states(ids)?)
    }
}
