//! Data-parallel training step and all-reduce timings, run under `mpirun`: nabla's side of
//! `scripts/bench_distributed.py`, which runs it on 1 and 2 ranks in alternating rounds and models
//! the scaling to more ranks.
//!
//! ```sh
//! cargo build --release -p nabla-distributed --example bench_data_parallel
//! mpirun -np 2 target/release/examples/bench_data_parallel --workload cnn [--steps 20] [--warmup 3]
//! mpirun -np 2 target/release/examples/bench_data_parallel --probe
//! ```
//!
//! Workloads (f32, a fixed random batch per rank, mean cross-entropy, Adam lr 1e-3, wrapped in
//! `DataParallel`; `--batch` examples per rank, default 32; `--threads` per rank, default 1):
//! - `cnn`: conv3x3(1->32)-relu-maxpool2-conv3x3(32->64)-relu-maxpool2-linear(1600->128)-relu-
//!   linear(128->10) on 1x28x28 (225k parameters, 0.9 MB of gradients);
//! - `wide`: linear(784->2048)-relu-linear(2048->2048)-relu-linear(2048->10) (5.8M parameters,
//!   23 MB of gradients): communication-heavy.
//!
//! Rank 0 prints one JSON object: medians over `--steps` steps of the step time and of its parts
//! ([`StepTimings`]: backward, all-reduce time, the part of it not hidden behind backward, update).
//! With `--probe`, instead the median time of one all-reduce of f32 buffers from 4 B to 64 MiB.

use nabla_core::{DType, Error, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_distributed::{Communicator, DataParallel, HostBuffer, StepTimings, from_environment};
use nabla_nn::activation::{Flatten, ReLU};
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer};
use nabla_nn::{Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module, Sequential};
use nabla_tensor::Tensor;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Command-line options.
struct Args {
    workload: String,
    steps: usize,
    warmup: usize,
    batch: usize,
    threads: usize,
    bucket_mib: f64,
    probe: bool,
}

fn parse_args() -> Result<Args> {
    let mut args = Args {
        workload: "cnn".into(),
        steps: 20,
        warmup: 3,
        batch: 32,
        threads: 1,
        bucket_mib: 25.0,
        probe: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--probe" {
            args.probe = true;
            continue;
        }
        let value = it.next().ok_or_else(|| {
            Error::invalid("bench_data_parallel", format!("{flag} needs a value"))
        })?;
        let bad = |_| Error::invalid("bench_data_parallel", format!("bad value for {flag}"));
        match flag.as_str() {
            "--workload" => args.workload = value,
            "--steps" => args.steps = value.parse().map_err(bad)?,
            "--warmup" => args.warmup = value.parse().map_err(bad)?,
            "--batch" => args.batch = value.parse().map_err(bad)?,
            "--threads" => args.threads = value.parse().map_err(bad)?,
            "--bucket-mib" => {
                args.bucket_mib = value
                    .parse()
                    .map_err(|_| Error::invalid("bench_data_parallel", "bad --bucket-mib"))?
            }
            other => {
                return Err(Error::invalid(
                    "bench_data_parallel",
                    format!("unknown option {other}"),
                ));
            }
        }
    }
    if args.steps == 0 {
        return Err(Error::invalid(
            "bench_data_parallel",
            "--steps must be at least 1",
        ));
    }
    Ok(args)
}

/// The network of `workload` and its input shape (without the batch).
fn build(workload: &str, cpu: &CpuBackend) -> Result<(Sequential<CpuBackend>, Vec<usize>)> {
    let rng = &mut Generator::new(0);
    let f32 = DType::F32;
    match workload {
        "cnn" => {
            let pool = MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?;
            let conv = ConvOptions::default();
            let model = Sequential::new()
                .push(Conv2d::new(1, 32, (3, 3), conv, f32, rng, cpu)?)
                .push(ReLU)
                .push(pool)
                .push(Conv2d::new(32, 64, (3, 3), conv, f32, rng, cpu)?)
                .push(ReLU)
                .push(pool)
                .push(Flatten::default())
                .push(Linear::new(1600, 128, true, f32, rng, cpu)?)
                .push(ReLU)
                .push(Linear::new(128, 10, true, f32, rng, cpu)?);
            Ok((model, vec![1, 28, 28]))
        }
        "wide" => {
            let model = Sequential::new()
                .push(Linear::new(784, 2048, true, f32, rng, cpu)?)
                .push(ReLU)
                .push(Linear::new(2048, 2048, true, f32, rng, cpu)?)
                .push(ReLU)
                .push(Linear::new(2048, 10, true, f32, rng, cpu)?);
            Ok((model, vec![784]))
        }
        other => Err(Error::invalid(
            "bench_data_parallel",
            format!("unknown workload {other} (cnn or wide)"),
        )),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Times `args.steps` data-parallel steps and prints the medians (rank 0).
fn time_steps(args: &Args, comm: Arc<dyn Communicator>) -> Result<()> {
    let cpu = CpuBackend::new();
    let (model, input) = build(&args.workload, &cpu)?;
    let adam = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 1e-3,
            ..Default::default()
        },
    )?;
    let bucket_bytes = (args.bucket_mib * (1u64 << 20) as f64) as usize;
    let mut opt = DataParallel::new(Box::new(adam), Arc::clone(&comm), &[], bucket_bytes)?;
    let mut rng = Generator::new(1 + comm.rank() as u64);
    let mut shape = vec![args.batch];
    shape.extend(&input);
    let x = Tensor::rand(shape, DType::F32, &mut rng, &cpu)?;
    let labels: Vec<i64> = (0..args.batch as i64).map(|i| (i * 7) % 10).collect();
    let y = Tensor::from_vec(labels, [args.batch], &cpu)?;
    let options = CrossEntropyOptions::default();
    let mut runs: Vec<(f64, StepTimings)> = Vec::new();
    for i in 0..args.warmup + args.steps {
        comm.barrier()?;
        let t0 = Instant::now();
        let loss = cross_entropy(&model.forward(&x)?, &y, &options)?;
        opt.backward_step(&loss)?;
        let step = ms(t0.elapsed());
        if i >= args.warmup {
            runs.push((step, opt.last_step()));
        }
    }
    if comm.rank() != 0 {
        return Ok(());
    }
    let pick = |f: &dyn Fn(&(f64, StepTimings)) -> f64| median(runs.iter().map(f).collect());
    let steps: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let params: usize = model.parameters().iter().map(|p| p.numel()).sum();
    println!(
        "{{\"ranks\": {}, \"workload\": \"{}\", \"params\": {params}, \"batch_per_rank\": {}, \
         \"threads\": {}, \"buckets\": {}, \"bytes\": {}, \"step_ms\": {:.4}, \"step_ms_best\": {:.4}, \
         \"backward_ms\": {:.4}, \"allreduce_ms\": {:.4}, \"exposed_ms\": {:.4}, \"update_ms\": {:.4}, \
         \"overlap\": {:.4}}}",
        comm.world_size(),
        args.workload,
        args.batch,
        args.threads,
        opt.num_buckets(),
        opt.last_step().bytes,
        median(steps.clone()),
        steps.iter().copied().fold(f64::INFINITY, f64::min),
        pick(&|r| ms(r.1.backward)),
        pick(&|r| ms(r.1.communication)),
        pick(&|r| ms(r.1.exposed_communication)),
        pick(&|r| ms(r.1.update)),
        pick(&|r| r.1.overlap()),
    );
    Ok(())
}

/// Times one all-reduce of f32 buffers of growing size and prints the medians (rank 0).
fn probe(comm: &dyn Communicator) -> Result<()> {
    let mut rows = Vec::new();
    for elements in [1usize, 256, 16 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20] {
        let repeats = if elements >= 1 << 20 { 7 } else { 50 };
        let mut times = Vec::new();
        for _ in 0..repeats {
            let buffer = HostBuffer::F32(vec![1.0; elements]);
            comm.barrier()?;
            let t0 = Instant::now();
            comm.all_reduce_sum(buffer)?.wait()?;
            times.push(t0.elapsed().as_secs_f64() * 1e6);
        }
        rows.push(format!(
            "{{\"bytes\": {}, \"us\": {:.3}}}",
            4 * elements,
            median(times)
        ));
    }
    if comm.rank() == 0 {
        println!(
            "{{\"ranks\": {}, \"probe\": [{}]}}",
            comm.world_size(),
            rows.join(", ")
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = parse_args()?;
    nabla_cpu::init_thread_pool(Some(args.threads))?;
    let comm = from_environment()?;
    if args.probe {
        probe(comm.as_ref())
    } else {
        time_steps(&args, comm)
    }
}
