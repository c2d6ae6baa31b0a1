//! The CUDA backend's benchmark, the nabla half of `scripts/bench_cuda.py` (which runs PyTorch on the
//! same GPU in the same run and prints the table): matrix products at 8192³ (bf16 on the tensor
//! cores; f32 with and without TF32) in TFLOP/s, and a GPT-2-small training step (12 layers of width
//! 768, context 1024, batch 8, AdamW) under bf16 autocast, with the weights PyTorch wrote
//! (`--weights FILE`, a safetensors file with PyTorch's names), so that both report the same first
//! loss. Prints one JSON object per workload.
//!
//! `cargo run --release -p nabla-cuda --example bench_cuda -- [--weights FILE] [--steps N]`

use nabla_core::{Backend, DType, Generator, Result};
use nabla_cuda::CudaBackend;
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::optim::{AdamConfig, AdamW, Optimizer};
use nabla_nn::{
    Embedding, Forward, LayerNorm, Linear, Module, Param, Strictness, TransformerActivation,
    TransformerEncoderLayer, TransformerLayerConfig, generate_square_subsequent_mask, join_name,
};
use nabla_tensor::Tensor;
use std::time::Instant;

const VOCAB: usize = 50257;
const CONTEXT: usize = 1024;
const WIDTH: usize = 768;
const LAYERS: usize = 12;
const HEADS: usize = 12;
const BATCH: usize = 8;

/// GPT-2 small, with PyTorch's module names (`tok`, `pos`, `layers.N.…`, `norm`, `head`).
struct Gpt<B: Backend> {
    tok: Embedding<B>,
    pos: Embedding<B>,
    layers: Vec<TransformerEncoderLayer<B>>,
    norm: LayerNorm<B>,
    head: Linear<B>,
}

impl<B: Backend> Module<B> for Gpt<B> {
    fn visit(&self, prefix: &str, visitor: &mut dyn FnMut(&str, &Param<B>)) {
        self.tok.visit(&join_name(prefix, "tok"), visitor);
        self.pos.visit(&join_name(prefix, "pos"), visitor);
        self.layers.visit(&join_name(prefix, "layers"), visitor);
        self.norm.visit(&join_name(prefix, "norm"), visitor);
        self.head.visit(&join_name(prefix, "head"), visitor);
    }

    fn set_training(&mut self, training: bool) {
        self.layers.set_training(training);
    }
}

impl<B: Backend> Gpt<B> {
    fn new(rng: &mut Generator, b: &B) -> Result<Self> {
        let config = TransformerLayerConfig {
            dim_feedforward: 4 * WIDTH,
            dropout: 0.0,
            activation: TransformerActivation::Gelu,
            batch_first: true,
            norm_first: true,
            ..TransformerLayerConfig::new(WIDTH, HEADS)
        };
        let f32 = DType::F32;
        Ok(Gpt {
            tok: Embedding::new(VOCAB, WIDTH, None, f32, rng, b)?,
            pos: Embedding::new(CONTEXT, WIDTH, None, f32, rng, b)?,
            layers: (0..LAYERS)
                .map(|_| TransformerEncoderLayer::new(config, f32, rng, b))
                .collect::<Result<_>>()?,
            norm: LayerNorm::new(vec![WIDTH], 1e-5, true, true, f32, b)?,
            head: Linear::new(WIDTH, VOCAB, true, f32, rng, b)?,
        })
    }

    fn loss(
        &self,
        ids: &Tensor<B>,
        targets: &Tensor<B>,
        pos: &Tensor<B>,
        mask: &Tensor<B>,
    ) -> Result<Tensor<B>> {
        let mut x = self.tok.forward(ids)?.add(&self.pos.forward(pos)?)?;
        for layer in &self.layers {
            x = layer.forward(&x, Some(mask), None, true)?;
        }
        let logits = self.head.forward(&self.norm.forward(&x)?)?;
        let logits = logits.reshape([BATCH * CONTEXT, VOCAB])?;
        cross_entropy(&logits, targets, &CrossEntropyOptions::default())
    }
}

/// Seconds per call of `f` (median of `reps` after `warm` calls), synchronising the device.
fn time(
    gpu: &CudaBackend,
    warm: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Vec<f64>> {
    for _ in 0..warm {
        f()?;
    }
    gpu.synchronize()?;
    let mut out = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t0 = Instant::now();
        f()?;
        gpu.synchronize()?;
        out.push(t0.elapsed().as_secs_f64());
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// How a product of two 8192² matrices is asked for.
#[derive(Clone, Copy, PartialEq)]
enum Product {
    /// The backend's product of two buffers of the dtype (bf16: the tensor cores).
    Backend,
    /// `Tensor::matmul` of f32 tensors inside a bf16 autocast scope (the operands are rounded by
    /// casts, then multiplied on the tensor cores).
    Autocast,
}

fn matmul(gpu: &CudaBackend, dtype: DType, tf32: bool, how: Product) -> Result<()> {
    let n = 8192;
    let rng = &mut Generator::new(1);
    let a = Tensor::randn([n, n], DType::F32, rng, gpu)?.cast(dtype)?;
    let b = Tensor::randn([n, n], DType::F32, rng, gpu)?.cast(dtype)?;
    gpu.set_allow_tf32(tf32);
    let runs = time(gpu, 3, 10, || match how {
        Product::Backend => gpu
            .matmul(a.storage(), a.layout(), b.storage(), b.layout())
            .map(drop),
        Product::Autocast => nabla_tensor::autocast(DType::BF16, || a.matmul(&b))?.map(drop),
    })?;
    gpu.set_allow_tf32(false);
    let median = runs[runs.len() / 2];
    let tflops = 2.0 * (n as f64).powi(3) / median / 1e12;
    let name = match how {
        Product::Backend => format!("matmul_{dtype}{}_8192", if tf32 { "_tf32" } else { "" }),
        Product::Autocast => "matmul_autocast_bfloat16_8192".to_string(),
    };
    println!(
        "{{\"workload\": \"{name}\", \"median_ms\": {:.4}, \"min_ms\": {:.4}, \"max_ms\": {:.4}, \"tflops\": {tflops:.1}}}",
        median * 1e3,
        runs[0] * 1e3,
        runs[runs.len() - 1] * 1e3
    );
    Ok(())
}

fn gpt_step(gpu: &CudaBackend, weights: Option<&str>, steps: usize) -> Result<()> {
    let model = Gpt::new(&mut Generator::new(0), gpu)?;
    if let Some(path) = weights {
        nabla_nn::load_module(&model, path, gpu, Strictness::Strict)?;
    }
    let id = |i: usize, j: usize| ((7 * i + 3 * j) % VOCAB) as i64;
    let ids: Vec<i64> = (0..BATCH)
        .flat_map(|i| (0..CONTEXT).map(move |j| id(i, j)))
        .collect();
    let targets: Vec<i64> = (0..BATCH)
        .flat_map(|i| (0..CONTEXT).map(move |j| id(i, j + 1)))
        .collect();
    let ids = Tensor::from_vec(ids, [BATCH, CONTEXT], gpu)?;
    let targets = Tensor::from_vec(targets, [BATCH * CONTEXT], gpu)?;
    let pos = Tensor::arange(0.0, CONTEXT as f64, 1.0, DType::I64, gpu)?;
    let mask = generate_square_subsequent_mask(CONTEXT, DType::F32, gpu)?;
    let mut opt = AdamW::new(model.parameters(), AdamConfig::adamw())?;
    let mut first_loss = None;
    gpu.reset_peak_memory();
    let runs = time(gpu, 2, steps, || {
        let loss =
            nabla_tensor::autocast(DType::BF16, || model.loss(&ids, &targets, &pos, &mask))??;
        if first_loss.is_none() {
            first_loss = Some(loss.item::<f32>()?);
        }
        opt.backward_step(&loss)
    })?;
    let stats = gpu.memory_stats();
    // One step as the host sees it: until its last kernel is queued, and then until the device is
    // done; what it compiled and how often it waited.
    let (compiled, waits) = (gpu.kernels_compiled(), gpu.device_waits());
    let t0 = Instant::now();
    let loss = nabla_tensor::autocast(DType::BF16, || model.loss(&ids, &targets, &pos, &mask))??;
    opt.backward_step(&loss)?;
    let queued = t0.elapsed().as_secs_f64();
    gpu.synchronize()?;
    eprintln!(
        "one step: queued in {:.1} ms, done in {:.1} ms; {} kernels compiled, {} waits for the device",
        queued * 1e3,
        t0.elapsed().as_secs_f64() * 1e3,
        gpu.kernels_compiled() - compiled,
        gpu.device_waits() - waits - 1
    );
    let launches_before = gpu.kernel_launches();
    gpu.set_profiling(true);
    let loss = nabla_tensor::autocast(DType::BF16, || model.loss(&ids, &targets, &pos, &mask))??;
    opt.backward_step(&loss)?;
    gpu.synchronize()?;
    let rows = gpu.profile();
    gpu.set_profiling(false);
    eprint!(
        "one profiled step, {} launches:\n{}",
        gpu.kernel_launches() - launches_before,
        nabla_core::format_profile(&rows)
    );
    println!(
        "{{\"workload\": \"gpt2_small_step_bf16\", \"median_ms\": {:.3}, \"min_ms\": {:.3}, \"max_ms\": {:.3}, \"first_loss\": {:.6}, \"peak_gib\": {:.3}, \"cache_hit_rate\": {:.4}}}",
        runs[runs.len() / 2] * 1e3,
        runs[0] * 1e3,
        runs[runs.len() - 1] * 1e3,
        first_loss.unwrap_or(f32::NAN),
        stats.peak_bytes as f64 / (1u64 << 30) as f64,
        stats.hit_rate()
    );
    Ok(())
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let weights = value("--weights");
    let steps = value("--steps")
        .map_or(Ok(5), |s| s.parse::<usize>())
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            nabla_core::Error::invalid("bench_cuda", "--steps takes a positive integer")
        })?;
    let only = value("--only");
    let gpu = CudaBackend::new(0)?;
    eprintln!("device: {}", gpu.device_name());
    let run = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if run("matmul") {
        matmul(&gpu, DType::BF16, false, Product::Backend)?;
        matmul(&gpu, DType::F32, false, Product::Autocast)?;
        matmul(&gpu, DType::F32, false, Product::Backend)?;
        matmul(&gpu, DType::F32, true, Product::Backend)?;
    }
    if run("gpt") {
        gpt_step(&gpu, weights.as_deref(), steps)?;
    }
    Ok(())
}
