//! Throughput of the fused elementwise kernel against the same expression run op by op, for quick checks
//! while tuning. Run with `cargo run --release -p nabla-cpu --example fused_throughput`.

use nabla_core::{
    Backend, BinaryOp, DType, FusedKernel, FusedOp, FusedStep, HostData, Layout, Scalar, UnaryOp,
};
use nabla_cpu::{CpuBackend, CpuStorage};
use std::time::Instant;

/// Best of `reps` runs of `f` (which may prepare untimed state and returns the seconds it timed).
fn best_of(reps: usize, mut f: impl FnMut() -> f64) -> f64 {
    (0..reps).map(|_| f()).fold(f64::INFINITY, f64::min)
}

fn timed(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64()
}

/// `tanh(in0 * in1 + 1) * in2` in `dt`, or `-(in0 * in1 + 1) * in2` without `tanh`.
fn chain(dt: DType, tanh: bool) -> FusedKernel {
    use FusedOp::*;
    let s = |op| FusedStep::new(op, dt);
    let f = if tanh { UnaryOp::Tanh } else { UnaryOp::Neg };
    FusedKernel::new(vec![
        s(Input(0)),
        s(Input(1)),
        s(Binary(BinaryOp::Mul, 0, 1)),
        s(Constant(Scalar::F64(1.0))),
        s(Binary(BinaryOp::Add, 2, 3)),
        s(Unary(f, 4)),
        s(Input(2)),
        s(Binary(BinaryOp::Mul, 5, 6)),
    ])
    .unwrap()
}

fn buffer(cpu: &CpuBackend, dt: DType, n: usize, seed: usize) -> CpuStorage {
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 7 + seed) % 13) as f64 * 0.1 - 0.6)
        .collect();
    let data = match dt {
        DType::F32 => HostData::F32(v.iter().map(|&x| x as f32).collect()),
        _ => HostData::F64(v),
    };
    cpu.upload(data).unwrap()
}

fn main() {
    let cpu = CpuBackend::new();
    for (dt, n, tanh) in [
        (DType::F32, 1 << 16, true),
        (DType::F32, 1 << 20, true),
        (DType::F32, 1 << 20, false),
        (DType::F64, 1 << 20, true),
        (DType::F32, 1 << 24, true),
    ] {
        let kernel = chain(dt, tanh);
        let side = (n as f64).sqrt() as usize;
        let n = side * side;
        let l = Layout::contiguous([side, side]);
        let lt = l.transpose(0, 1).unwrap();
        let ins: Vec<CpuStorage> = (0..3).map(|k| buffer(&cpu, dt, n, k)).collect();
        let reps = if n >= 1 << 24 { 5 } else { 30 };
        let refs: Vec<(&CpuStorage, &Layout)> = ins.iter().map(|s| (s, &l)).collect();
        let by_ops = best_of(reps, || {
            timed(|| {
                kernel.evaluate_by_ops(&cpu, &refs, l.shape()).unwrap();
            })
        });
        let fused = best_of(reps, || {
            let owned = ins.iter().map(|s| (s.clone(), &l)).collect();
            timed(|| {
                cpu.fused(&kernel, owned, l.shape(), None).unwrap();
            })
        });
        let donated = best_of(reps, || {
            let fresh = CpuStorage::new(ins[0].host().to_owned());
            let owned = vec![(fresh, &l), (ins[1].clone(), &l), (ins[2].clone(), &l)];
            timed(|| {
                cpu.fused(&kernel, owned, l.shape(), Some(0)).unwrap();
            })
        });
        let refs_t = vec![(&ins[0], &l), (&ins[1], &lt), (&ins[2], &l)];
        let by_ops_t = best_of(reps, || {
            timed(|| {
                kernel.evaluate_by_ops(&cpu, &refs_t, l.shape()).unwrap();
            })
        });
        let fused_t = best_of(reps, || {
            let owned = refs_t.iter().map(|(s, l)| ((*s).clone(), *l)).collect();
            timed(|| {
                cpu.fused(&kernel, owned, l.shape(), None).unwrap();
            })
        });
        let gbs = |t: f64| (4 * n * dt.size_in_bytes()) as f64 / t / 1e9;
        println!(
            "{kernel} {} x{n:>9}: op by op {:8.3} ms ({:5.1} GB/s) | fused {:8.3} ms ({:5.1} GB/s, {:.2}x) | \
             donated {:8.3} ms ({:.2}x) | transposed in1: op by op {:8.3} ms, fused {:8.3} ms ({:.2}x)",
            dt.name(),
            by_ops * 1e3,
            gbs(by_ops),
            fused * 1e3,
            gbs(fused),
            by_ops / fused,
            donated * 1e3,
            by_ops / donated,
            by_ops_t * 1e3,
            fused_t * 1e3,
            by_ops_t / fused_t,
        );
    }
}
