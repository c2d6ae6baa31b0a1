//! Time training steps of the command line's default CNN on the wgpu backend, and where they go.
//!
//! One step is what `nabla train` does per batch: move a batch from the CPU, forward, cross-entropy,
//! backward, an Adam update, read the loss. The model is the CLI's `cnn` on the digits (8x8: conv 3x3
//! 1->16, ReLU, conv 3x3 16->32, ReLU, 2x2 max-pool, linear 512->64, ReLU, linear 64->10) or with
//! `--mnist` on 28x28 images (a max-pool after the first convolution too and 128 hidden units), on
//! random data. After the timed steps, one more step runs with per-kernel profiling and its table is
//! printed.
//!
//! ```sh
//! cargo run --release -p nabla-wgpu --example cnn_step                 # batch 32, 8x8
//! cargo run --release -p nabla-wgpu --example cnn_step -- --mnist 64   # batch 64, 28x28
//! ```

use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::{Flatten, ReLU};
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer};
use nabla_nn::{Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module, Sequential};
use nabla_tensor::Tensor;
use nabla_wgpu::{WgpuBackend, format_profile};
use std::time::Instant;

/// The CLI's CNN for `side x side` single-channel images and 10 classes.
fn model<B: Backend>(side: usize, rng: &mut Generator, b: &B) -> Result<Sequential<B>> {
    let conv = |cin, cout, rng: &mut Generator| {
        let options = ConvOptions {
            padding: (1, 1),
            ..ConvOptions::default()
        };
        Conv2d::new(cin, cout, (3, 3), options, DType::F32, rng, b)
    };
    let pool = || MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false);
    let big = side >= 16;
    let mut m = Sequential::new().push(conv(1, 16, rng)?).push(ReLU);
    let mut s = side;
    if big {
        m = m.push(pool()?);
        s /= 2;
    }
    let hidden = if big { 128 } else { 64 };
    let features = 32 * (s / 2) * (s / 2);
    Ok(m.push(conv(16, 32, rng)?)
        .push(ReLU)
        .push(pool()?)
        .push(Flatten {
            start_dim: 1,
            end_dim: -1,
        })
        .push(Linear::new(features, hidden, true, DType::F32, rng, b)?)
        .push(ReLU)
        .push(Linear::new(hidden, 10, true, DType::F32, rng, b)?))
}

fn main() -> Result<()> {
    let mut side = 8;
    let mut batch = 32;
    for a in std::env::args().skip(1) {
        if a == "--mnist" {
            side = 28;
        } else {
            batch = a
                .parse()
                .map_err(|e| Error::invalid("cnn_step", format!("batch size {a:?}: {e}")))?;
        }
    }
    let gpu = WgpuBackend::new()?;
    let cpu = CpuBackend::new();
    println!(
        "adapter: {} (flushes f32 subnormals: {})",
        gpu.adapter_name(),
        gpu.flushes_subnormals()?
    );
    let mut rng = Generator::new(0);
    let net = model(side, &mut rng, &gpu)?;
    let mut opt = Adam::new(net.parameters(), AdamConfig::default())?;
    let options = CrossEntropyOptions::default();
    let x = Tensor::randn([batch, 1, side, side], DType::F32, &mut rng, &cpu)?;
    let labels: Vec<i64> = (0..batch as i64).map(|i| i % 10).collect();
    let y = Tensor::from_vec(labels, [batch], &cpu)?;
    let mut step = || -> Result<f32> {
        let loss = cross_entropy(
            &net.forward(&x.to_backend(&gpu)?)?,
            &y.to_backend(&gpu)?,
            &options,
        )?;
        let grads = loss.backward()?;
        opt.step(&grads)?;
        loss.detach().item::<f32>()
    };
    let t = Instant::now();
    step()?;
    println!(
        "first step (compiles the pipelines): {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let reps = 5;
    let t = Instant::now();
    let mut loss = 0.0;
    for _ in 0..reps {
        loss = step()?;
    }
    println!(
        "{side}x{side}, batch {batch}: {:.1} ms per step (mean of {reps}; loss {loss:.4})",
        t.elapsed().as_secs_f64() * 1e3 / reps as f64
    );
    gpu.set_profiling(true);
    step()?;
    print!("one profiled step:\n{}", format_profile(&gpu.profile()));
    gpu.set_profiling(false);
    Ok(())
}
