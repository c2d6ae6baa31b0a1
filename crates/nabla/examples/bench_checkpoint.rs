//! The cost of activation checkpointing: one training step (forward + backward) of a 16-block MLP,
//! plain and with every block checkpointed (`Sequential::checkpoint_each`), time and peak memory.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_checkpoint -- [--repeats R] [--rounds N]
//! ```
//!
//! Each block is `tanh(Linear(64 -> 256))`, `tanh(Linear(256 -> 64))`, batch 1024, f32. Rounds alternate
//! the two variants; the time ratio (checkpointed / plain) is the median of the per-round ratios of
//! median step times. Peak memory is measured once per variant with a `MemoryTracked` backend.

use nabla::core::MemoryTracked;
use nabla::nn::activation::Tanh;
use nabla::nn::{Forward, Linear, Sequential};
use nabla::prelude::*;
use std::time::Instant;

const WIDTH: usize = 64;
const DEPTH: usize = 16;
const BATCH: usize = 1024;

fn chain<B: Backend>(backend: &B, checkpointed: bool) -> Result<Sequential<B>> {
    let mut rng = Generator::new(1);
    let mut model = Sequential::new();
    for _ in 0..DEPTH {
        model = model.push(
            Sequential::new()
                .push(Linear::new(
                    WIDTH,
                    4 * WIDTH,
                    true,
                    DType::F32,
                    &mut rng,
                    backend,
                )?)
                .push(Tanh)
                .push(Linear::new(
                    4 * WIDTH,
                    WIDTH,
                    true,
                    DType::F32,
                    &mut rng,
                    backend,
                )?)
                .push(Tanh),
        );
    }
    Ok(if checkpointed {
        model.checkpoint_each()
    } else {
        model
    })
}

fn step<B: Backend>(model: &Sequential<B>, x: &Tensor<B>) -> Result<()> {
    std::hint::black_box(model.forward(x)?.square()?.mean_all()?.backward()?);
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut repeats, mut rounds) = (20usize, 5usize);
    while let Some(arg) = args.next() {
        let value: usize = args.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        match (arg.as_str(), value) {
            ("--repeats", n) if n > 0 => repeats = n,
            ("--rounds", n) if n > 0 => rounds = n,
            _ => {
                eprintln!("usage: bench_checkpoint [--repeats R] [--rounds N]");
                std::process::exit(2);
            }
        }
    }
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(2);
    let x = Tensor::randn([BATCH, WIDTH], DType::F32, &mut rng, &cpu)?;
    let models = [chain(&cpu, false)?, chain(&cpu, true)?];
    let time = |model: &Sequential<CpuBackend>| -> Result<f64> {
        for _ in 0..3 {
            step(model, &x)?;
        }
        let mut runs = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            let start = Instant::now();
            step(model, &x)?;
            runs.push(start.elapsed().as_secs_f64());
        }
        Ok(median(runs))
    };
    let (mut plain, mut ckpt, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let (p, c) = (time(&models[0])?, time(&models[1])?);
        plain.push(p);
        ckpt.push(c);
        ratios.push(c / p);
    }
    let peak = |checkpointed: bool| -> Result<usize> {
        let mem = MemoryTracked::new(CpuBackend::new());
        let model = chain(&mem, checkpointed)?;
        let x = Tensor::from_host(x.to_host()?, [BATCH, WIDTH], &mem)?;
        mem.reset_peak();
        step(&model, &x)?;
        Ok(mem.stats().peak_bytes)
    };
    let (peak_plain, peak_ckpt) = (peak(false)?, peak(true)?);
    eprintln!(
        "16-block MLP step: plain {:.3} ms, checkpointed {:.3} ms, ratio {:.2} (per-round {:.2}..{:.2}); \
         peak {:.1} / {:.1} MiB ({:.0}%)",
        median(plain.clone()) * 1e3,
        median(ckpt.clone()) * 1e3,
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max),
        peak_plain as f64 / 1048576.0,
        peak_ckpt as f64 / 1048576.0,
        100.0 * peak_ckpt as f64 / peak_plain as f64
    );
    println!(
        "{{\"plain_s\": {}, \"checkpointed_s\": {}, \"ratio\": {}, \"peak_plain\": {peak_plain}, \"peak_checkpointed\": {peak_ckpt}}}",
        median(plain),
        median(ckpt),
        median(ratios)
    );
    Ok(())
}
