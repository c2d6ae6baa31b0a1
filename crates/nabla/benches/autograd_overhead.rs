//! Criterion benchmarks of the per-op overhead of the eager autodiff tape on tiny tensors: a chain of
//! 10,000 additions of a 4-element f32 tensor, untracked, recorded (forward only) and forward + backward.
//!
//! `cargo bench -p nabla --bench autograd_overhead` runs them; throughput is reported in elements per
//! second where one element is one op of the chain, so `1 Melem/s` reads as 1 microsecond per op. For the
//! comparison with PyTorch eager run `python3 scripts/bench_autograd.py`.

#[path = "common/autograd_chain.rs"]
mod autograd_chain;

use autograd_chain::OPS;
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use nabla::prelude::*;
use std::hint::black_box;
use std::time::Duration;

fn bench_chain(c: &mut Criterion) {
    let cpu = CpuBackend::new();
    let plain = autograd_chain::input(&cpu, false).expect("input");
    let var = autograd_chain::input(&cpu, true).expect("variable");
    autograd_chain::check(&var, OPS).unwrap_or_else(|e| panic!("wrong gradient: {e}"));

    let mut group = c.benchmark_group("autograd_chain_add_4xf32");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .throughput(Throughput::Elements(OPS as u64));
    group.bench_function("untracked_forward", |b| {
        b.iter(|| black_box(autograd_chain::forward(&plain, OPS).expect("forward")))
    });
    group.bench_function("forward", |b| {
        b.iter(|| black_box(autograd_chain::forward(&var, OPS).expect("forward")))
    });
    group.bench_function("forward_backward", |b| {
        b.iter(|| black_box(autograd_chain::forward_backward(&var, OPS).expect("backward")))
    });
    group.finish();
}

criterion_group!(benches, bench_chain);
criterion_main!(benches);
