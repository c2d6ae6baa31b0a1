//! The transformer language models of the benchmarks (GPT-2 small and a BERT-base-sized encoder),
//! shared by `bench_scale` and `bench_generate` (included with `#[path]`, not an example itself).

use nabla::nn::{
    Embedding, Forward, LayerNorm, Module, Strictness, TransformerActivation,
    TransformerEncoderLayer, TransformerLayerConfig, load_module,
};
use nabla::prelude::*;
use std::path::Path;

/// The transformer width, depth and heads (GPT-2 small's and BERT-base's).
pub const WIDTH: usize = 768;
pub const LAYERS: usize = 12;
pub const HEADS: usize = 12;

/// A transformer language model's shape: GPT-2 small or a BERT-base-sized encoder.
#[derive(Clone, Copy)]
pub struct Spec {
    pub vocab: usize,
    /// Rows of the position table.
    pub positions: usize,
    /// Sequence length and batch size of the fixed batch.
    pub context: usize,
    pub batch: usize,
    /// Pre-norm layers with a final norm, causal (GPT-2), or post-norm layers after an embedding
    /// norm, bidirectional (BERT).
    pub gpt: bool,
}

/// GPT-2 small: vocabulary 50,257, 256 positions, batch 4 of 256.
pub const GPT2: Spec = Spec {
    vocab: 50_257,
    positions: 256,
    context: 256,
    batch: 4,
    gpt: true,
};

/// A BERT-base-sized encoder: vocabulary 30,522, 512 positions, batch 8 of 128.
pub const BERT: Spec = Spec {
    vocab: 30_522,
    positions: 512,
    context: 128,
    batch: 8,
    gpt: false,
};

/// A transformer with its head tied to the token embedding: GPT-2 (`norm` after the layers) or
/// BERT (`emb_norm` before them).
#[derive(Module)]
pub struct LanguageModel<B: Backend> {
    pub tok: Embedding<B>,
    pub pos: Embedding<B>,
    pub emb_norm: Option<LayerNorm<B>>,
    pub layers: Vec<TransformerEncoderLayer<B>>,
    pub norm: Option<LayerNorm<B>>,
}

impl LanguageModel<CpuBackend> {
    /// The model of `spec` with its weights from the safetensors file at `weights`.
    pub fn load(spec: Spec, weights: &Path, cpu: &CpuBackend) -> Result<Self> {
        let config = TransformerLayerConfig {
            dim_feedforward: 4 * WIDTH,
            dropout: 0.0,
            activation: TransformerActivation::Gelu,
            batch_first: true,
            norm_first: spec.gpt,
            ..TransformerLayerConfig::new(WIDTH, HEADS)
        };
        let (f32, rng) = (DType::F32, &mut Generator::new(0));
        let norm = || LayerNorm::new(vec![WIDTH], 1e-5, true, true, f32, cpu);
        let model = LanguageModel {
            tok: Embedding::new(spec.vocab, WIDTH, None, f32, rng, cpu)?,
            pos: Embedding::new(spec.positions, WIDTH, None, f32, rng, cpu)?,
            emb_norm: (!spec.gpt).then(norm).transpose()?,
            layers: (0..LAYERS)
                .map(|_| TransformerEncoderLayer::new(config, f32, rng, cpu))
                .collect::<Result<_>>()?,
            norm: spec.gpt.then(norm).transpose()?,
        };
        load_module(&model, weights, cpu, Strictness::Strict)?;
        Ok(model)
    }

    /// Logits `[N * T, vocab]` for ids `[N, T]` (`positions` `[T]`); causal when `causal`.
    pub fn logits(
        &self,
        ids: &CpuTensor,
        positions: &CpuTensor,
        causal: bool,
    ) -> Result<CpuTensor> {
        let mut x = self.tok.forward(ids)?.add(&self.pos.forward(positions)?)?;
        if let Some(norm) = &self.emb_norm {
            x = norm.forward(&x)?;
        }
        for layer in &self.layers {
            x = layer.forward(&x, None, None, causal)?;
        }
        if let Some(norm) = &self.norm {
            x = norm.forward(&x)?;
        }
        let h = x.reshape([ids.numel(), WIDTH])?;
        h.matmul(&self.tok.weight.data().transpose(0, 1)?)
    }
}
