//! Time per training step (forward + backward + Adam update) of a small CNN and an MLP: nabla's side of
//! `scripts/bench_training.py`, which runs the same workloads in PyTorch and JAX in the same run and
//! prints the ratios and peak memory.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_training -- --workload cnn [--steps 20] [--warmup 3] [--profile] [--separate]
//! ```
//!
//! Workloads (f32, one fixed random batch, class-index labels, mean cross-entropy, Adam lr 1e-3):
//! - `cnn`: conv3x3(1->32)-relu-maxpool2-conv3x3(32->64)-relu-maxpool2-flatten-linear(1600->128)-relu-
//!   linear(128->10), batch 64, 1x28x28 input (no padding: 28 -> 26 -> 13 -> 11 -> 5);
//! - `mlp`: linear(784->512)-relu-linear(512->512)-relu-linear(512->10), batch 128.
//!
//! Prints one JSON object to stdout: the median and the best step time over `--steps` steps after
//! `--warmup` steps, the medians of its three phases (forward with the loss, backward, optimizer
//! update), and the MiB of freed buffers that the CPU backend keeps cached for reuse. With
//! `--profile`, also the forward and backward time of each layer alone (on the activations of a real
//! forward pass, the backward fed a fixed random output gradient), human-readable on stderr.
//!
//! The step updates each parameter as soon as its gradient is complete (`Optimizer::backward_step`,
//! what `nabla train` does), so the backward phase includes the optimizer and the optimizer phase is
//! zero; `--separate` runs `loss.backward()` and then `opt.step(&grads)` to time them apart.

use nabla::nn::activation::{Flatten, ReLU};
use nabla::nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla::nn::optim::{Adam, AdamConfig, Optimizer};
use nabla::nn::{Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module, Sequential};
use nabla::prelude::*;
use std::time::{Duration, Instant};

/// Which network to time.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    Cnn,
    Mlp,
}

/// Command-line options.
struct Args {
    workload: Workload,
    steps: usize,
    warmup: usize,
    profile: bool,
    /// Run backward and the optimizer one after the other (`loss.backward()` then `opt.step`)
    /// instead of fused (`opt.backward_step`), to time them apart.
    separate: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        workload: Workload::Cnn,
        steps: 20,
        warmup: 3,
        profile: false,
        separate: false,
    };
    let bad = |msg: String| Error::invalid("bench_training", msg);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| bad(format!("{flag} needs a value")))
        };
        let count = |v: String| {
            v.parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(format!("expected a positive integer, got {v:?}")))
        };
        match flag.as_str() {
            "--workload" => {
                args.workload = match value()?.as_str() {
                    "cnn" => Workload::Cnn,
                    "mlp" => Workload::Mlp,
                    other => return Err(bad(format!("unknown workload {other:?} (cnn or mlp)"))),
                }
            }
            "--steps" => args.steps = count(value()?)?,
            "--warmup" => args.warmup = count(value()?)?,
            "--profile" => args.profile = true,
            "--separate" => args.separate = true,
            other => {
                return Err(bad(format!(
                    "unknown argument {other:?}; usage: bench_training [--workload cnn|mlp] \
                     [--steps N] [--warmup N] [--profile] [--separate]"
                )));
            }
        }
    }
    Ok(args)
}

/// A [`Sequential`] being built, with a name for each layer (for the profile).
struct Named {
    model: Sequential<CpuBackend>,
    names: Vec<String>,
}

impl Named {
    fn add(mut self, name: &str, layer: impl Forward<CpuBackend> + Send + Sync + 'static) -> Self {
        self.names.push(name.to_string());
        self.model = self.model.push(layer);
        self
    }
}

/// The network and the name of each layer.
fn build(workload: Workload, cpu: &CpuBackend) -> Result<Named> {
    let rng = &mut Generator::new(0);
    let (f32, conv) = (DType::F32, ConvOptions::default());
    let net = Named {
        model: Sequential::new(),
        names: Vec::new(),
    };
    Ok(match workload {
        Workload::Cnn => {
            let pool = MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?;
            net.add(
                "conv1 3x3 1->32",
                Conv2d::new(1, 32, (3, 3), conv, f32, rng, cpu)?,
            )
            .add("relu", ReLU)
            .add("maxpool2", pool)
            .add(
                "conv2 3x3 32->64",
                Conv2d::new(32, 64, (3, 3), conv, f32, rng, cpu)?,
            )
            .add("relu", ReLU)
            .add("maxpool2", pool)
            .add("flatten", Flatten::default())
            .add(
                "linear 1600->128",
                Linear::new(1600, 128, true, f32, rng, cpu)?,
            )
            .add("relu", ReLU)
            .add("linear 128->10", Linear::new(128, 10, true, f32, rng, cpu)?)
        }
        Workload::Mlp => net
            .add(
                "linear 784->512",
                Linear::new(784, 512, true, f32, rng, cpu)?,
            )
            .add("relu", ReLU)
            .add(
                "linear 512->512",
                Linear::new(512, 512, true, f32, rng, cpu)?,
            )
            .add("relu", ReLU)
            .add("linear 512->10", Linear::new(512, 10, true, f32, rng, cpu)?),
    })
}

/// One fixed batch: inputs and class labels.
fn batch(workload: Workload, cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let mut rng = Generator::new(1);
    let (x, n) = match workload {
        Workload::Cnn => (
            Tensor::rand([64, 1, 28, 28], DType::F32, &mut rng, cpu)?,
            64,
        ),
        Workload::Mlp => (Tensor::rand([128, 784], DType::F32, &mut rng, cpu)?, 128),
    };
    let labels: Vec<i64> = (0..n as i64).map(|i| (i * 7) % 10).collect();
    Ok((x, Tensor::from_vec(labels, [n], cpu)?))
}

/// Seconds of each phase of one training step: `[forward + loss, backward, optimizer]`; with the
/// optimizer fused into backward (not `separate`), the second phase is both and the third is zero.
fn step(
    model: &Sequential<CpuBackend>,
    opt: &mut Adam<CpuBackend>,
    (x, y): (&CpuTensor, &CpuTensor),
    separate: bool,
) -> Result<[Duration; 3]> {
    let t0 = Instant::now();
    let loss = cross_entropy(&model.forward(x)?, y, &CrossEntropyOptions::default())?;
    let t1 = Instant::now();
    if !separate {
        opt.backward_step(&loss)?;
        return Ok([t1 - t0, t1.elapsed(), Duration::ZERO]);
    }
    let grads = loss.backward()?;
    let t2 = Instant::now();
    opt.step(&grads)?;
    Ok([t1 - t0, t2 - t1, t2.elapsed()])
}

fn median_s(mut runs: Vec<Duration>) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_secs_f64()
}

/// Times each layer alone: forward on its real input, and backward of `sum(output * g)` for a fixed
/// random `g` (so the backward includes that small product's gradient).
fn profile(
    model: &Sequential<CpuBackend>,
    names: &[String],
    x: &CpuTensor,
    repeats: usize,
) -> Result<()> {
    let mut rng = Generator::new(2);
    let mut h = x.clone();
    let (mut fwd_total, mut bwd_total) = (0.0, 0.0);
    eprintln!(
        "{:<20} {:>18} {:>18} {:>10} {:>10}",
        "layer", "input", "output", "fwd ms", "bwd ms"
    );
    for (i, name) in names.iter().enumerate() {
        let layer = model
            .get(i)
            .ok_or_else(|| Error::invalid("bench_training", format!("no layer {i}")))?;
        // The first layer's input is data (no gradient); later ones need their input's gradient too.
        let input = if i == 0 {
            h.clone()
        } else {
            Tensor::var("h", h.detach())?
        };
        let out = layer.forward(&input)?.detach();
        let g = Tensor::randn(out.shape().to_vec(), DType::F32, &mut rng, x.backend())?;
        let (mut fwd, mut bwd) = (Vec::new(), Vec::new());
        for _ in 0..repeats + 2 {
            let t0 = Instant::now();
            let y = layer.forward(&input)?;
            let t1 = Instant::now();
            y.mul(&g)?.sum_all()?.backward()?;
            fwd.push(t1 - t0);
            bwd.push(t1.elapsed());
        }
        let (f, b) = (median_s(fwd) * 1e3, median_s(bwd) * 1e3);
        fwd_total += f;
        bwd_total += b;
        eprintln!(
            "{name:<20} {:>18} {:>18} {f:>10.3} {b:>10.3}",
            format!("{:?}", input.shape()),
            format!("{:?}", out.shape())
        );
        h = out;
    }
    eprintln!(
        "{:<20} {:>18} {:>18} {fwd_total:>10.3} {bwd_total:>10.3}",
        "total", "", ""
    );
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    // As `nabla train` does: this thread joins the CPU thread pool.
    nabla::cpu::init_thread_pool(None)?;
    let cpu = CpuBackend::new();
    let Named { model, names } = build(args.workload, &cpu)?;
    let (x, y) = batch(args.workload, &cpu)?;
    let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
    for _ in 0..args.warmup {
        step(&model, &mut opt, (&x, &y), args.separate)?;
    }
    let mut phases: [Vec<Duration>; 3] = Default::default();
    let mut total = Vec::with_capacity(args.steps);
    for _ in 0..args.steps {
        let t = step(&model, &mut opt, (&x, &y), args.separate)?;
        total.push(t.iter().sum());
        for (p, d) in phases.iter_mut().zip(t) {
            p.push(d);
        }
    }
    let [fwd, bwd, opt_s] = phases.map(median_s);
    let name = if args.workload == Workload::Cnn {
        "cnn"
    } else {
        "mlp"
    };
    // Freed large buffers that nabla's CPU backend keeps for reuse (part of the peak RSS).
    let cached = nabla::cpu::cached_bytes() as f64 / (1 << 20) as f64;
    let best_s = total.iter().min().map_or(0.0, Duration::as_secs_f64);
    let step_s = median_s(total);
    let phases = if args.separate {
        format!("backward {:.2}, adam {:.2}", bwd * 1e3, opt_s * 1e3)
    } else {
        format!("backward with fused adam {:.2}", bwd * 1e3)
    };
    eprintln!(
        "nabla {name}: step {:.2} ms (forward+loss {:.2}, {phases}); {} parameters",
        step_s * 1e3,
        fwd * 1e3,
        model.num_parameters()
    );
    if args.profile {
        profile(&model, &names, &x, args.steps.min(10))?;
    }
    println!(
        "{{\"step_s\": {step_s}, \"best_s\": {best_s}, \"forward_s\": {fwd}, \"backward_s\": {bwd}, \"optimizer_s\": {opt_s}, \"cached_mib\": {cached}}}"
    );
    Ok(())
}
