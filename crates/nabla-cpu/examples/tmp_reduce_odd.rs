use nabla_core::{ArgReduceOp, Backend, HostData, Layout, ReduceOp};
use nabla_cpu::CpuBackend;
use std::time::Instant;
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
    let n = 1 << 24;
    let x = cpu
        .upload(HostData::F32((0..n).map(|i| (i % 17) as f32).collect()))
        .unwrap();
    let sq = Layout::contiguous([4096, 4096]);
    let tr = sq.permute(&[1, 0]).unwrap();
    let cases: Vec<(&str, Layout, Vec<usize>)> = vec![
        ("[16M] all", Layout::contiguous([n]), vec![0]),
        ("[8M,2] ax1", Layout::contiguous([n / 2, 2]), vec![1]),
        ("[8M,2] ax0", Layout::contiguous([n / 2, 2]), vec![0]),
        ("[2,8M] ax0", Layout::contiguous([2, n / 2]), vec![0]),
        ("[2,8M] ax1", Layout::contiguous([2, n / 2]), vec![1]),
        ("T ax0", tr.clone(), vec![0]),
        ("T ax1", tr.clone(), vec![1]),
        (
            "[256,256,256] ax(0,2)",
            Layout::contiguous([256, 256, 256]),
            vec![0, 2],
        ),
        (
            "[256,256,256] ax1",
            Layout::contiguous([256, 256, 256]),
            vec![1],
        ),
    ];
    for (name, l, axes) in cases {
        let t = best_of(5, || {
            cpu.reduce(ReduceOp::Sum, &x, &l, &axes).unwrap();
        });
        let tm = best_of(5, || {
            cpu.reduce(ReduceOp::Max, &x, &l, &axes).unwrap();
        });
        println!("sum {name}: {:.2} ms, max {:.2} ms", t * 1e3, tm * 1e3);
    }
    for ax in [0, 1] {
        let t = best_of(5, || {
            cpu.arg_reduce(ArgReduceOp::ArgMax, &x, &sq, ax).unwrap();
        });
        let tc = best_of(5, || {
            cpu.cumsum(&x, &sq, ax).unwrap();
        });
        println!(
            "argmax ax{ax}: {:.2} ms; cumsum {:.2} ms",
            t * 1e3,
            tc * 1e3
        );
    }
}
