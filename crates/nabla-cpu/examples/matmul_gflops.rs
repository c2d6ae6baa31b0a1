//! Throughput of the CPU backend's f32 matrix product (and of reductions), for quick checks while
//! tuning. Run with `cargo run --release -p nabla-cpu --example matmul_gflops`. The committed
//! benchmarks (`cargo bench`) are the reference measurements.

use nabla_core::{Backend, HostData, Layout, ReduceOp};
use nabla_cpu::CpuBackend;
use std::time::Instant;

/// Best of `reps` runs of `f`, in seconds.
fn best_of(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let cpu = CpuBackend::new();
    for n in [256usize, 512, 1024, 2048] {
        let data: Vec<f32> = (0..n * n).map(|i| ((i * 7) % 13) as f32 * 0.1).collect();
        let a = cpu.upload(HostData::F32(data.clone())).unwrap();
        let b = cpu.upload(HostData::F32(data)).unwrap();
        let l = Layout::contiguous([n, n]);
        let lt = l.permute(&[1, 0]).unwrap();
        let reps = if n >= 2048 { 5 } else { 10 };
        let flops = 2.0 * (n * n * n) as f64;
        let t = best_of(reps, || {
            cpu.matmul(&a, &l, &b, &l).unwrap();
        });
        let tt = best_of(reps, || {
            cpu.matmul(&a, &lt, &b, &l).unwrap();
        });
        println!(
            "f32 matmul {n:>4}: {:7.1} GFLOP/s ({:.2} ms); with transposed lhs {:7.1} GFLOP/s",
            flops / t / 1e9,
            t * 1e3,
            flops / tt / 1e9
        );
    }
    let (batch, n) = (64usize, 128usize);
    let data: Vec<f32> = (0..batch * n * n).map(|i| (i % 11) as f32).collect();
    let a = cpu.upload(HostData::F32(data)).unwrap();
    let l = Layout::contiguous([batch, n, n]);
    let t = best_of(20, || {
        cpu.matmul(&a, &l, &a, &l).unwrap();
    });
    let flops = 2.0 * (batch * n * n * n) as f64;
    println!(
        "f32 batched matmul [{batch}, {n}, {n}]: {:7.1} GFLOP/s ({:.2} ms)",
        flops / t / 1e9,
        t * 1e3
    );
    let n = 4096;
    let x = cpu
        .upload(HostData::F32((0..n * n).map(|i| (i % 17) as f32).collect()))
        .unwrap();
    let l = Layout::contiguous([n, n]);
    for axis in [0usize, 1] {
        let t = best_of(10, || {
            cpu.reduce(ReduceOp::Sum, &x, &l, &[axis]).unwrap();
        });
        println!(
            "sum [4096, 4096] axis {axis}: {:.2} ms ({:.1} GB/s)",
            t * 1e3,
            (n * n * 4) as f64 / t / 1e9
        );
    }
}
