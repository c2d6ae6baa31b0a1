//! Training steps at the sizes people train: nabla's side of `scripts/bench_scale.py`, which runs the
//! same models in PyTorch (eager, `torch.compile`, bf16 autocast) and JAX in the same run, from the
//! same weights.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_scale -- --workload gpt2 --weights W.safetensors [--steps 5] [--warmup 2] [--autocast bf16]
//! cargo run --release -p nabla --example bench_scale -- --workload resnet18 --weights W.safetensors
//! cargo run --release -p nabla --example bench_scale -- --workload peak
//! ```
//!
//! Workloads (f32):
//! - `gpt2`: GPT-2 small, 124M parameters: token (50,257) and learned position (256) embeddings of
//!   width 768, 12 pre-norm transformer layers (12 heads, feed-forward 3,072 with GELU, causal, no
//!   dropout), a final layer norm and a head tied to the token embedding; batch 4 of context 256,
//!   next-token mean cross-entropy, AdamW (PyTorch's defaults: lr 1e-3, weight decay 0.01). The
//!   weights come from `--weights`, a safetensors file whose names are the model's (`tok.weight`,
//!   `layers.0.self_attn.in_proj_weight`, ...), written by the script from PyTorch, so that every
//!   framework starts from the same model and the first losses agree.
//! - `gpt2-hf`: GPT-2 small as the model zoo's `Gpt2` (Hugging Face's names and layout: 1,024
//!   positions, the tanh GELU), loaded from `--weights` written from `transformers`'
//!   `GPT2LMHeadModel`; the batch, loss and optimizer of `gpt2`.
//! - `bert`: a BERT-base-sized encoder, 110M parameters: token (30,522) and learned position (512)
//!   embeddings of width 768 and a layer norm, 12 post-norm transformer layers (12 heads,
//!   feed-forward 3,072 with GELU, bidirectional, no dropout), a head tied to the token embedding;
//!   batch 8 of 128, mean cross-entropy against fixed ids (as a masked-language-model head predicts
//!   ids), AdamW as GPT-2's; weights as GPT-2's (`emb_norm.weight`, `layers.0.norm1.weight`, ...).
//! - `resnet18`: the model zoo's ResNet-18 (`nabla::models`, torchvision's layout and names) in the
//!   CIFAR layout (a 3x3 stem of 64 channels, no max-pool, four stages of two residual blocks with
//!   batch norm, 64 to 512 channels, global average pooling, 10 classes), batch 32 of 3 x 32 x 32
//!   fixed images, mean cross-entropy, SGD with momentum 0.9 and lr 0.01; the weights come from
//!   `--weights` like GPT-2's, by torchvision's names (`conv1.weight`, `layer1.0.conv1.weight`, ...).
//! - `resnet50`: ResNet-50 in ImageNet's layout (a 7x7 stride-2 stem and a 3x3 stride-2 max-pool,
//!   stages of 3, 4, 6 and 3 bottleneck blocks of widths 64 to 512 with four times the width out,
//!   stride on the 3x3 convolutions, 1,000 classes), batch 8 of 3 x 224 x 224 fixed images,
//!   otherwise as ResNet-18.
//! - `peak`: the f32 matrix-product rate at 2048 x 2048 x 2048, the reference for the achieved rates.
//!
//! Prints one JSON object to stdout: the first step's loss and every step's, the median and best step time over
//! `--steps` steps after `--warmup`, the median forward (with the loss) and backward (with the fused
//! update) phases, the process's peak resident memory, and the CPU buffer cache's statistics (with
//! the fresh memory a timed step asked for: 0 once the cache holds the step's working set).

use nabla::models::{Gpt2, Gpt2Config, ResNet, ResNetConfig};
use nabla::nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla::nn::optim::{AdamConfig, AdamW, Optimizer, Sgd, SgdConfig};
use nabla::nn::{Forward, Module};
use nabla::prelude::*;
#[allow(dead_code)]
#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::{median, peak_rss_mib};
#[path = "bench_support/language_model.rs"]
mod language_model;
use language_model::{BERT, GPT2, LanguageModel, Spec};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// A ResNet workload: the zoo's model (torchvision's layout and names), batch and image size.
#[derive(Clone, Copy)]
struct ResNetSpec {
    name: &'static str,
    classes: usize,
    /// ResNet-18 in the CIFAR layout (a 3x3 stem, no max-pool) or ResNet-50 in ImageNet's.
    small_images: bool,
    images: usize,
    size: usize,
}

/// ResNet-18 in the CIFAR layout, batch 32 of 3 x 32 x 32.
const RESNET18: ResNetSpec = ResNetSpec {
    name: "resnet18",
    classes: 10,
    small_images: true,
    images: 32,
    size: 32,
};

/// ResNet-50 in ImageNet's layout, batch 8 of 3 x 224 x 224.
const RESNET50: ResNetSpec = ResNetSpec {
    name: "resnet50",
    classes: 1000,
    small_images: false,
    images: 8,
    size: 224,
};

impl ResNetSpec {
    /// The zoo's model with the weights at `path` (torchvision's names).
    fn load(self, path: &PathBuf, cpu: &CpuBackend) -> Result<ResNet<CpuBackend>> {
        let config = ResNetConfig {
            small_images: self.small_images,
            ..ResNetConfig::from_name(self.name, self.classes).expect("a zoo name")
        };
        let model = ResNet::new(config, DType::F32, &mut Generator::new(0), cpu)?;
        model.load(path, cpu)?;
        Ok(model)
    }
}

/// The fixed images `[images, 3, size, size]` (the script makes the same) and labels `n mod 10`.
fn images(spec: ResNetSpec, cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let (n, size) = (spec.images, spec.size);
    let plane = size * size;
    let pixel = |i: usize| {
        let (n, c, h, w) = (i / (3 * plane), i / plane % 3, i / size % size, i % size);
        ((n * 131 + c * 31 + h * 7 + w * 3) % 17) as f32 / 17.0 - 0.5
    };
    let labels = (0..n as i64).map(|i| i % 10).collect();
    Ok((
        Tensor::from_vec(
            (0..n * 3 * plane).map(pixel).collect(),
            [n, 3, size, size],
            cpu,
        )?,
        Tensor::from_vec(labels, [n], cpu)?,
    ))
}

/// Token `j` of sequence `i` of the fixed batch over `vocab` ids (the script makes the same ids).
fn token(vocab: usize, i: usize, j: usize) -> i64 {
    ((7919 * i + 104_729 * j + 13) % vocab) as i64
}

/// Fixed ids `[batch, context]` and targets `[batch * context]`: the next token for GPT-2, a
/// token of another sequence for BERT (as a masked-language-model head predicts other ids).
fn batch(spec: Spec, cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let (n, t, v) = (spec.batch, spec.context, spec.vocab);
    let ids = (0..n).flat_map(|i| (0..t).map(move |j| token(v, i, j)));
    let shift = if spec.gpt { (0, 1) } else { (n, 0) };
    let targets = (0..n).flat_map(|i| (0..t).map(move |j| token(v, i + shift.0, j + shift.1)));
    Ok((
        Tensor::from_vec(ids.collect(), [n, t], cpu)?,
        Tensor::from_vec(targets.collect(), [n * t], cpu)?,
    ))
}

/// Command-line options.
struct Args {
    workload: String,
    weights: Option<PathBuf>,
    steps: usize,
    warmup: usize,
    /// `--autocast bf16`: the forward pass runs in a bf16 autocast scope.
    autocast: bool,
}

fn parse_args() -> Result<Args> {
    let bad = |msg: String| Error::invalid("bench_scale", msg);
    let mut args = Args {
        workload: "gpt2".into(),
        weights: None,
        steps: 5,
        warmup: 2,
        autocast: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it
            .next()
            .ok_or_else(|| bad(format!("{flag} needs a value")))?;
        let count = || {
            value
                .parse::<usize>()
                .map_err(|e| bad(format!("{flag}: {e}")))
        };
        match flag.as_str() {
            "--workload"
                if ["gpt2", "gpt2-hf", "bert", "resnet18", "resnet50", "peak"]
                    .contains(&value.as_str()) =>
            {
                args.workload = value.clone()
            }
            "--weights" => args.weights = Some(PathBuf::from(&value)),
            "--steps" => args.steps = count()?.max(1),
            "--warmup" => args.warmup = count()?,
            "--autocast" if value == "bf16" => args.autocast = true,
            _ => return Err(bad(format!("unknown argument {flag} {value}"))),
        }
    }
    Ok(args)
}

/// The f32 matrix-product rate at 2048³ in GFLOP/s (median of 10 after 3 warm-up products).
fn peak(cpu: &CpuBackend) -> Result<()> {
    let n = 2048;
    let rng = &mut Generator::new(0);
    let a = Tensor::rand([n, n], DType::F32, rng, cpu)?;
    let b = Tensor::rand([n, n], DType::F32, rng, cpu)?;
    let mut runs = Vec::new();
    for i in 0..13 {
        let t = Instant::now();
        drop(a.matmul(&b)?);
        if i >= 3 {
            runs.push(t.elapsed());
        }
    }
    let gflops = 2.0 * (n as f64).powi(3) / median(runs) / 1e9;
    println!("{{\"matmul_f32_gflops\": {gflops}}}");
    Ok(())
}

/// Runs `--warmup` then `--steps` training steps of `loss` with `opt` (the update fused into the
/// backward pass, as `nabla train` runs it) and prints the JSON line.
fn run_steps(
    args: &Args,
    mut loss: impl FnMut() -> Result<CpuTensor>,
    opt: &mut dyn Optimizer<CpuBackend>,
) -> Result<()> {
    let (mut total, mut fwd, mut bwd) = (Vec::new(), Vec::new(), Vec::new());
    let mut losses = Vec::new();
    let mut before_timed = nabla::cpu::buffer_cache_stats();
    for i in 0..args.warmup + args.steps {
        if i == args.warmup {
            before_timed = nabla::cpu::buffer_cache_stats();
        }
        let t0 = Instant::now();
        let value = match args.autocast {
            true => nabla::autocast(DType::BF16, &mut loss)??,
            false => loss()?,
        };
        let t1 = Instant::now();
        losses.push(f64::from(value.item::<f32>()?));
        opt.backward_step(&value)?;
        if i >= args.warmup {
            fwd.push(t1 - t0);
            bwd.push(t1.elapsed());
            total.push(t0.elapsed());
        }
    }
    let best_s = total.iter().min().map_or(0.0, Duration::as_secs_f64);
    let (step_s, fwd_s, bwd_s) = (median(total), median(fwd), median(bwd));
    let cache = nabla::cpu::buffer_cache_stats();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    let fresh_per_step = mib(cache.fresh_bytes - before_timed.fresh_bytes) / args.steps as f64;
    println!(
        "{{\"first_loss\": {}, \"losses\": {losses:?}, \"step_s\": {step_s}, \"best_s\": {best_s}, \
         \"forward_s\": {fwd_s}, \"backward_s\": {bwd_s}, \"peak_rss_mib\": {}, \
         \"cache_capacity_mib\": {}, \"cache_high_water_mib\": {}, \"cache_hit_rate\": {}, \
         \"fresh_mib\": {}, \"fresh_mib_per_timed_step\": {fresh_per_step}}}",
        losses[0],
        peak_rss_mib(),
        mib(cache.capacity_bytes as u64),
        mib(cache.high_water_bytes as u64),
        cache.hit_rate(),
        mib(cache.fresh_bytes),
    );
    Ok(())
}

/// The `--weights` file.
fn weights(args: &Args) -> Result<&PathBuf> {
    args.weights.as_ref().ok_or_else(|| {
        Error::invalid(
            "bench_scale",
            format!("{} needs --weights FILE", args.workload),
        )
    })
}

/// Training steps of the language model `spec` (AdamW with PyTorch's defaults).
fn language_model(spec: Spec, args: &Args, cpu: &CpuBackend) -> Result<()> {
    let model = LanguageModel::load(spec, weights(args)?, cpu)?;
    let (ids, targets) = batch(spec, cpu)?;
    let positions = Tensor::arange(0, spec.context as i64, 1, DType::I64, cpu)?;
    let options = CrossEntropyOptions::default();
    let mut opt = AdamW::new(model.parameters(), AdamConfig::adamw())?;
    let loss = || {
        let logits = model.logits(&ids, &positions, spec.gpt)?;
        cross_entropy(&logits, &targets, &options)
    };
    run_steps(args, loss, &mut opt)
}

/// Training steps of the model zoo's GPT-2 small on `gpt2`'s batch (AdamW with PyTorch's defaults).
fn zoo_gpt2(args: &Args, cpu: &CpuBackend) -> Result<()> {
    let config = Gpt2Config::from_name("gpt2").expect("a published size");
    let model = Gpt2::new(config, DType::F32, &mut Generator::new(0), cpu)?;
    model.load(weights(args)?, cpu)?;
    let (ids, targets) = batch(GPT2, cpu)?;
    let rows = GPT2.batch * GPT2.context;
    let options = CrossEntropyOptions::default();
    let mut opt = AdamW::new(model.parameters(), AdamConfig::adamw())?;
    let loss = || {
        let logits = model.forward(&ids)?.reshape([rows, config.vocab_size])?;
        cross_entropy(&logits, &targets, &options)
    };
    run_steps(args, loss, &mut opt)
}

/// Training steps of the ResNet `spec` (SGD with momentum 0.9, lr 0.01).
fn resnet(spec: ResNetSpec, args: &Args, cpu: &CpuBackend) -> Result<()> {
    let model = spec.load(weights(args)?, cpu)?;
    let (x, labels) = images(spec, cpu)?;
    let options = CrossEntropyOptions::default();
    let config = SgdConfig {
        lr: 0.01,
        momentum: 0.9,
        ..SgdConfig::default()
    };
    let mut opt = Sgd::new(model.parameters(), config)?;
    let loss = || cross_entropy(&model.forward(&x)?, &labels, &options);
    run_steps(args, loss, &mut opt)
}

fn main() -> Result<()> {
    let args = parse_args()?;
    let cpu = CpuBackend::new();
    match args.workload.as_str() {
        "peak" => peak(&cpu),
        "resnet18" => resnet(RESNET18, &args, &cpu),
        "resnet50" => resnet(RESNET50, &args, &cpu),
        "bert" => language_model(BERT, &args, &cpu),
        "gpt2-hf" => zoo_gpt2(&args, &cpu),
        _ => language_model(GPT2, &args, &cpu),
    }
}
