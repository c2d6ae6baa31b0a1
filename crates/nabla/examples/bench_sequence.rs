//! Time per training step (forward + backward + Adam update) of a GPT-style character model and a
//! 2-layer LSTM: nabla's side of the `gpt` and `lstm` workloads of `scripts/bench_training.py`,
//! which runs the same models in PyTorch and JAX in the same run.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_sequence -- --workload gpt [--steps 20] [--warmup 3]
//! ```
//!
//! Workloads (f32, one fixed batch of character ids, next-character mean cross-entropy over every
//! position, Adam lr 1e-3):
//! - `gpt`: token and learned position embeddings (vocabulary 65, context 64, d_model 128), 2
//!   pre-norm transformer layers (4 heads, causal mask, feed-forward 512 with ReLU, no dropout),
//!   a final layer norm and a linear head; batch 32;
//! - `lstm`: an embedding (65 -> 64), a 2-layer LSTM (hidden 256), a linear head; sequence 50,
//!   batch 32.
//!
//! Prints one JSON object to stdout in `bench_training`'s format: the median and best step time
//! over `--steps` steps after `--warmup` steps, and the median forward and backward phases (the
//! update is fused into backward, as `nabla train` runs it).

use nabla::nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla::nn::optim::{Adam, AdamConfig, Optimizer};
use nabla::nn::{
    Embedding, Forward, LSTM, LayerNorm, Linear, Module, RnnConfig, TransformerEncoderLayer,
    TransformerLayerConfig, generate_square_subsequent_mask,
};
use nabla::prelude::*;
use std::time::{Duration, Instant};

/// Characters in the vocabulary.
const VOCAB: usize = 65;
/// Sequences per batch.
const BATCH: usize = 32;

/// The GPT-style model.
#[derive(Module)]
struct Gpt<B: Backend> {
    tok: Embedding<B>,
    pos: Embedding<B>,
    layers: Vec<TransformerEncoderLayer<B>>,
    norm: LayerNorm<B>,
    head: Linear<B>,
}

/// GPT: context and width.
const CONTEXT: usize = 64;
const D_MODEL: usize = 128;

impl Gpt<CpuBackend> {
    fn new(rng: &mut Generator, cpu: &CpuBackend) -> Result<Self> {
        let config = TransformerLayerConfig {
            dim_feedforward: 4 * D_MODEL,
            dropout: 0.0,
            batch_first: true,
            norm_first: true,
            ..TransformerLayerConfig::new(D_MODEL, 4)
        };
        let f32 = DType::F32;
        Ok(Gpt {
            tok: Embedding::new(VOCAB, D_MODEL, None, f32, rng, cpu)?,
            pos: Embedding::new(CONTEXT, D_MODEL, None, f32, rng, cpu)?,
            layers: (0..2)
                .map(|_| TransformerEncoderLayer::new(config, f32, rng, cpu))
                .collect::<Result<_>>()?,
            norm: LayerNorm::new(vec![D_MODEL], 1e-5, true, true, f32, cpu)?,
            head: Linear::new(D_MODEL, VOCAB, true, f32, rng, cpu)?,
        })
    }

    /// Logits `[N * T, vocab]` for ids `[N, T]`.
    fn logits(
        &self,
        ids: &CpuTensor,
        positions: &CpuTensor,
        mask: &CpuTensor,
    ) -> Result<CpuTensor> {
        let mut x = self.tok.forward(ids)?.add(&self.pos.forward(positions)?)?;
        for layer in &self.layers {
            x = layer.forward(&x, Some(mask), None, true)?;
        }
        self.head
            .forward(&self.norm.forward(&x)?)?
            .reshape([ids.numel(), VOCAB])
    }
}

/// The LSTM model.
#[derive(Module)]
struct CharLstm<B: Backend> {
    embed: Embedding<B>,
    lstm: LSTM<B>,
    head: Linear<B>,
}

/// LSTM: sequence length and sizes.
const SEQUENCE: usize = 50;
const EMBED: usize = 64;
const HIDDEN: usize = 256;

impl CharLstm<CpuBackend> {
    fn new(rng: &mut Generator, cpu: &CpuBackend) -> Result<Self> {
        let config = RnnConfig {
            num_layers: 2,
            batch_first: true,
            ..RnnConfig::new(EMBED, HIDDEN)
        };
        Ok(CharLstm {
            embed: Embedding::new(VOCAB, EMBED, None, DType::F32, rng, cpu)?,
            lstm: LSTM::new(config, DType::F32, rng, cpu)?,
            head: Linear::new(HIDDEN, VOCAB, true, DType::F32, rng, cpu)?,
        })
    }

    /// Logits `[N * T, vocab]` for ids `[N, T]`.
    fn logits(&self, ids: &CpuTensor) -> Result<CpuTensor> {
        let (out, _) = self.lstm.forward(&self.embed.forward(ids)?, None)?;
        self.head.forward(&out)?.reshape([ids.numel(), VOCAB])
    }
}

/// Fixed ids `[BATCH, t]` and next-character targets, as `bench_training.py` makes them:
/// `(7 * i + 3 * j) mod 65`, the target the next id.
fn batch(t: usize, cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let id = |i: usize, j: usize| ((7 * i + 3 * j) % VOCAB) as i64;
    let ids: Vec<i64> = (0..BATCH)
        .flat_map(|i| (0..t).map(move |j| id(i, j)))
        .collect();
    let targets: Vec<i64> = (0..BATCH)
        .flat_map(|i| (0..t).map(move |j| id(i, j + 1)))
        .collect();
    Ok((
        Tensor::from_vec(ids, [BATCH, t], cpu)?,
        Tensor::from_vec(targets, [BATCH * t], cpu)?,
    ))
}

fn median_s(mut runs: Vec<Duration>) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_secs_f64()
}

fn parse_args() -> Result<(String, usize, usize)> {
    let (mut workload, mut steps, mut warmup) = ("gpt".to_string(), 20, 3);
    let bad = |msg: String| Error::invalid("bench_sequence", msg);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| bad(format!("{flag} needs a value")))?;
        let count = || {
            value
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(format!("expected a positive integer, got {value:?}")))
        };
        match flag.as_str() {
            "--workload" if value == "gpt" || value == "lstm" => workload = value.clone(),
            "--steps" => steps = count()?,
            "--warmup" => warmup = count()?,
            other => {
                return Err(bad(format!(
                    "bad argument {other:?} {value:?}; usage: bench_sequence [--workload gpt|lstm] \
                     [--steps N] [--warmup N]"
                )));
            }
        }
    }
    Ok((workload, steps, warmup))
}

fn main() -> Result<()> {
    let (workload, steps, warmup) = parse_args()?;
    nabla::cpu::init_thread_pool(None)?;
    let cpu = CpuBackend::new();
    let rng = &mut Generator::new(0);
    let options = CrossEntropyOptions::default();
    // The model's loss on the fixed batch, and its parameters.
    let (loss_fn, params): (Box<dyn Fn() -> Result<CpuTensor>>, _) = if workload == "gpt" {
        let model = Gpt::new(rng, &cpu)?;
        let params = model.parameters();
        let (ids, targets) = batch(CONTEXT, &cpu)?;
        let positions = Tensor::arange(0.0, CONTEXT as f64, 1.0, DType::I64, &cpu)?;
        let mask = generate_square_subsequent_mask(CONTEXT, DType::F32, &cpu)?;
        let f = move || cross_entropy(&model.logits(&ids, &positions, &mask)?, &targets, &options);
        (Box::new(f), params)
    } else {
        let model = CharLstm::new(rng, &cpu)?;
        let params = model.parameters();
        let (ids, targets) = batch(SEQUENCE, &cpu)?;
        let f = move || cross_entropy(&model.logits(&ids)?, &targets, &options);
        (Box::new(f), params)
    };
    let n_params: usize = params.iter().map(|p| p.numel()).sum();
    let mut opt = Adam::new(params, AdamConfig::default())?;
    let (mut total, mut fwd, mut bwd) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..warmup + steps {
        let t0 = Instant::now();
        let loss = loss_fn()?;
        let t1 = Instant::now();
        opt.backward_step(&loss)?;
        if i >= warmup {
            fwd.push(t1 - t0);
            bwd.push(t1.elapsed());
            total.push(t0.elapsed());
        }
    }
    let best_s = total.iter().min().map_or(0.0, Duration::as_secs_f64);
    let (step_s, fwd_s, bwd_s) = (median_s(total), median_s(fwd), median_s(bwd));
    eprintln!(
        "nabla {workload}: step {:.2} ms (forward+loss {:.2}, backward with fused adam {:.2}); \
         {n_params} parameters",
        step_s * 1e3,
        fwd_s * 1e3,
        bwd_s * 1e3
    );
    let cached = nabla::cpu::cached_bytes() as f64 / (1 << 20) as f64;
    println!(
        "{{\"step_s\": {step_s}, \"best_s\": {best_s}, \"forward_s\": {fwd_s}, \"backward_s\": {bwd_s}, \"optimizer_s\": 0.0, \"cached_mib\": {cached}}}"
    );
    Ok(())
}
