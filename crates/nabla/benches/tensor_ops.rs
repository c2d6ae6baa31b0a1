//! Criterion benchmarks of the tensor workloads of issue 2: f32 matmul 256-2048, f64 matmul 1024, batched
//! matmul [64, 128, 128], elementwise add and exp on 1M and 16M f32 elements, sums over each axis of a
//! [4096, 4096] f32 matrix and its transpose-copy.
//!
//! `cargo bench -p nabla` runs them all in a few minutes (flat sampling, 10 samples, short measurement
//! windows); `cargo bench -p nabla -- matmul` runs a subset. Matmul throughput is reported in elements per
//! second where one element is one floating-point operation (so `Gelem/s` reads as GFLOP/s); the other
//! groups report bytes moved per second. For the NumPy/JAX comparison run `python3 scripts/bench_compare.py`.

#[path = "common/workloads.rs"]
mod workloads;

use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};
use nabla::prelude::*;
use std::hint::black_box;
use std::time::Duration;

fn bench_workloads(c: &mut Criterion) {
    let cpu = CpuBackend::new();
    let all = workloads::all();
    let mut groups: Vec<&'static str> = all.iter().map(|w| w.group).collect();
    groups.dedup();
    for group_name in groups {
        let mut group = c.benchmark_group(group_name);
        group
            .sampling_mode(SamplingMode::Flat)
            .sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        for w in all.iter().filter(|w| w.group == group_name) {
            let prepared = w
                .prepare(&cpu)
                .unwrap_or_else(|e| panic!("preparing {}: {e}", w.name));
            // Fail early, with the error, if a kernel is missing.
            if let Err(e) = prepared.run() {
                panic!("running {}: {e}", w.name);
            }
            if w.flops > 0.0 {
                group.throughput(Throughput::Elements(w.flops as u64));
            } else {
                group.throughput(Throughput::Bytes(w.bytes as u64));
            }
            group.bench_function(w.name.as_str(), |b| {
                b.iter(|| black_box(prepared.run().expect("workload ran once already")))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, bench_workloads);
criterion_main!(benches);
