//! The reverse pass on one thread and on two (`BackwardOptions::parallel`), on models with independent
//! branches and on two controls without them: backward time, peak memory during backward, and a check
//! that the gradients are bitwise the same.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_parallel_backward -- [--repeats R] [--rounds N] [--workload W]
//! ```
//!
//! Workloads (f32):
//! - `heads`: attention with a projection per head, x `[128, 256]`, 8 heads of width 32 (scores
//!   `[128, 128]`), softmax, values, concatenation and an output projection: 24 products of `x` whose
//!   reverse rules are independent of each other.
//! - `inception`: an Inception block on `[16, 32, 16, 16]`: 1×1, 3×3 and 5×5 convolutions and a max
//!   pool followed by a 1×1 convolution, concatenated along channels, then ReLU.
//! - `mlp` (control): 784-512-512-10, batch 128, ReLU: a chain of layers.
//! - `chain` (control): 10,000 additions of a 4-element tensor, the tape-overhead workload.
//!
//! The process joins the CPU pool as training does (`init_thread_pool`). Rounds alternate the two
//! settings; the reported speedup is the median of the per-round ratios of median backward times
//! (one thread / two). Peak memory is the most held during backward above what the forward pass left,
//! measured once per setting with a `MemoryTracked` backend. Prints one JSON line per workload.

// Only `median` is used here; the rest serves the other benchmarks.
#[allow(dead_code)]
#[path = "bench_support/mod.rs"]
mod bench_support;

use bench_support::median;
use nabla::core::MemoryTracked;
use nabla::prelude::*;
use nabla::{Conv2dParams, ParallelBackward};
use nabla_core::Pool2dParams;
use std::time::{Duration, Instant};

const WORKLOADS: [&str; 4] = ["heads", "inception", "mlp", "chain"];

/// The variables of a workload and its loss as a function of them.
struct Workload<B: Backend> {
    vars: Vec<Tensor<B>>,
    loss: fn(&[Tensor<B>]) -> Result<Tensor<B>>,
}

/// A variable of normal values times `scale`, named by a counter (names must differ).
fn randn<B: Backend>(shape: &[usize], scale: f64, rng: &mut Generator, b: &B) -> Result<Tensor<B>> {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let id = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let t = Tensor::randn(shape.to_vec(), DType::F32, rng, b)?.mul(scale)?;
    Tensor::var(format!("v{id}"), t)
}

const HEADS: usize = 8;

fn heads<B: Backend>(b: &B, rng: &mut Generator) -> Result<Workload<B>> {
    let mut vars = vec![randn(&[128, 256], 1.0, rng, b)?];
    for _ in 0..3 * HEADS {
        vars.push(randn(&[256, 32], 0.0625, rng, b)?);
    }
    vars.push(randn(&[256, 256], 0.0625, rng, b)?);
    let loss = |v: &[Tensor<B>]| -> Result<Tensor<B>> {
        let x = &v[0];
        let mut outs = Vec::with_capacity(HEADS);
        for h in 0..HEADS {
            let [wq, wk, wv] = [&v[1 + 3 * h], &v[2 + 3 * h], &v[3 + 3 * h]];
            let scores = x.matmul(wq)?.matmul(&x.matmul(wk)?.t()?)?.mul(0.176)?;
            outs.push(scores.softmax(-1)?.matmul(&x.matmul(wv)?)?);
        }
        let joined = Tensor::cat(&outs.iter().collect::<Vec<_>>(), 1)?;
        joined.matmul(&v[1 + 3 * HEADS])?.square()?.mean_all()
    };
    Ok(Workload { vars, loss })
}

fn inception<B: Backend>(b: &B, rng: &mut Generator) -> Result<Workload<B>> {
    let vars = vec![
        randn(&[16, 32, 16, 16], 1.0, rng, b)?,
        randn(&[16, 32, 1, 1], 0.17, rng, b)?,
        randn(&[16, 32, 3, 3], 0.06, rng, b)?,
        randn(&[8, 32, 5, 5], 0.035, rng, b)?,
        randn(&[8, 32, 1, 1], 0.17, rng, b)?,
    ];
    let loss = |v: &[Tensor<B>]| -> Result<Tensor<B>> {
        let x = &v[0];
        let conv = |w: &Tensor<B>, pad: usize| {
            let params = Conv2dParams {
                padding: (pad, pad),
                ..Default::default()
            };
            x.conv2d(w, &params)
        };
        let pool = Pool2dParams {
            kernel: (3, 3),
            stride: (1, 1),
            padding: (1, 1),
            dilation: (1, 1),
            ceil_mode: false,
        };
        let pooled = x
            .max_pool2d(&pool)?
            .0
            .conv2d(&v[4], &Conv2dParams::default())?;
        let branches = [conv(&v[1], 0)?, conv(&v[2], 1)?, conv(&v[3], 2)?, pooled];
        let joined = Tensor::cat(&branches.iter().collect::<Vec<_>>(), 1)?;
        joined.relu()?.square()?.mean_all()
    };
    Ok(Workload { vars, loss })
}

fn mlp<B: Backend>(b: &B, rng: &mut Generator) -> Result<Workload<B>> {
    let vars = vec![
        randn(&[128, 784], 1.0, rng, b)?,
        randn(&[784, 512], 0.036, rng, b)?,
        randn(&[512], 0.01, rng, b)?,
        randn(&[512, 512], 0.044, rng, b)?,
        randn(&[512], 0.01, rng, b)?,
        randn(&[512, 10], 0.044, rng, b)?,
        randn(&[10], 0.01, rng, b)?,
    ];
    let loss = |v: &[Tensor<B>]| -> Result<Tensor<B>> {
        let h = v[0].matmul(&v[1])?.add(&v[2])?.relu()?;
        let h = h.matmul(&v[3])?.add(&v[4])?.relu()?;
        h.matmul(&v[5])?.add(&v[6])?.square()?.mean_all()
    };
    Ok(Workload { vars, loss })
}

fn chain<B: Backend>(b: &B, rng: &mut Generator) -> Result<Workload<B>> {
    let vars = vec![randn(&[4], 1.0, rng, b)?];
    let loss = |v: &[Tensor<B>]| -> Result<Tensor<B>> {
        let mut y = v[0].clone();
        for _ in 0..10_000 {
            y = y.add(&v[0])?;
        }
        y.sum_all()
    };
    Ok(Workload { vars, loss })
}

fn build<B: Backend>(name: &str, b: &B) -> Result<Workload<B>> {
    let mut rng = Generator::new(7);
    match name {
        "heads" => heads(b, &mut rng),
        "inception" => inception(b, &mut rng),
        "mlp" => mlp(b, &mut rng),
        _ => chain(b, &mut rng),
    }
}

fn options(parallel: ParallelBackward) -> BackwardOptions {
    BackwardOptions {
        parallel,
        ..Default::default()
    }
}

/// The median backward time over `repeats` passes (after two warm-up passes); the forward passes
/// are not timed.
fn time_backward(w: &Workload<CpuBackend>, opts: BackwardOptions, repeats: usize) -> Result<f64> {
    let mut runs = Vec::with_capacity(repeats);
    for k in 0..repeats + 2 {
        let loss = (w.loss)(&w.vars)?;
        let start = Instant::now();
        std::hint::black_box(loss.backward_opts(None, opts)?);
        if k >= 2 {
            runs.push(start.elapsed());
        }
    }
    Ok(median(runs))
}

/// The bits of every gradient under `opts`.
fn gradient_bits(w: &Workload<CpuBackend>, opts: BackwardOptions) -> Result<Vec<Vec<u32>>> {
    let grads = (w.loss)(&w.vars)?.backward_opts(None, opts)?;
    w.vars
        .iter()
        .map(|v| {
            let g = grads.get_or_zeros(v)?.to_vec::<f32>()?;
            Ok(g.into_iter().map(f32::to_bits).collect())
        })
        .collect()
}

/// The most bytes held during backward beyond what the forward pass left.
fn backward_peak(name: &str, opts: BackwardOptions) -> Result<usize> {
    let mem = MemoryTracked::new(CpuBackend::new());
    let w = build(name, &mem)?;
    let loss = (w.loss)(&w.vars)?;
    let before = mem.stats().live_bytes;
    mem.reset_peak();
    drop(loss.backward_opts(None, opts)?);
    Ok(mem.stats().peak_bytes.saturating_sub(before))
}

fn report(name: &str, repeats: usize, rounds: usize, paired: ParallelBackward) -> Result<()> {
    let settings = [ParallelBackward::Off, paired];
    let w = build(name, &CpuBackend::new())?;
    let same = gradient_bits(&w, options(settings[0]))? == gradient_bits(&w, options(settings[1]))?;
    if !same {
        return Err(Error::invalid(
            "bench_parallel_backward",
            format!("{name}: the two settings gave different gradients"),
        ));
    }
    let (mut times, mut ratios) = ([Vec::new(), Vec::new()], Vec::new());
    for _ in 0..rounds {
        let one = time_backward(&w, options(settings[0]), repeats)?;
        let two = time_backward(&w, options(settings[1]), repeats)?;
        times[0].push(Duration::from_secs_f64(one));
        times[1].push(Duration::from_secs_f64(two));
        ratios.push(one / two);
    }
    let peaks = [
        backward_peak(name, options(settings[0]))?,
        backward_peak(name, options(settings[1]))?,
    ];
    let [off, parallel] = times.map(median);
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    let speedup = sorted[sorted.len() / 2];
    let mib = |b: usize| b as f64 / 1048576.0;
    eprintln!(
        "{name:>9}: backward one thread {:.3} ms, two {:.3} ms, speedup {speedup:.2} (rounds \
         {:.2}..{:.2}); peak {:.1} / {:.1} MiB; gradients bitwise equal",
        off * 1e3,
        parallel * 1e3,
        sorted[0],
        sorted[sorted.len() - 1],
        mib(peaks[0]),
        mib(peaks[1]),
    );
    println!(
        "{{\"workload\": \"{name}\", \"off_s\": {off}, \"parallel_s\": {parallel}, \"speedup\": {speedup}, \
         \"peak_off\": {}, \"peak_parallel\": {}, \"bitwise_equal\": true}}",
        peaks[0], peaks[1]
    );
    Ok(())
}

/// `--repeats R` (default 20), `--rounds N` (default 5), `--workload all|NAME` and `--min-elements E`
/// (pair nodes of at least E elements instead of `Auto`'s threshold); a usage line and status 2 on
/// anything else.
fn arguments() -> (usize, usize, String, ParallelBackward) {
    let usage = || -> ! {
        eprintln!(
            "usage: bench_parallel_backward [--repeats R] [--rounds N] [--workload all|{}] [--min-elements E]",
            WORKLOADS.join("|")
        );
        std::process::exit(2);
    };
    let (mut repeats, mut rounds, mut workload) = (20usize, 5usize, "all".to_string());
    let mut paired = ParallelBackward::Auto;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        let count = || value.parse().ok().filter(|&n: &usize| n > 0);
        match arg.as_str() {
            "--repeats" => repeats = count().unwrap_or_else(|| usage()),
            "--rounds" => rounds = count().unwrap_or_else(|| usage()),
            "--min-elements" => {
                paired = ParallelBackward::MinElements(count().unwrap_or_else(|| usage()))
            }
            "--workload" if value == "all" || WORKLOADS.contains(&value.as_str()) => {
                workload = value
            }
            _ => usage(),
        }
    }
    (repeats, rounds, workload, paired)
}

fn main() -> Result<()> {
    let (repeats, rounds, workload, paired) = arguments();
    nabla::cpu::init_thread_pool(None)?;
    for name in WORKLOADS {
        if workload == "all" || workload == name {
            report(name, repeats, rounds, paired)?;
        }
    }
    Ok(())
}
