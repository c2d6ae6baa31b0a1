//! Elementwise fusion on the wgpu backend: a traced chain (GELU with the tanh approximation, then a
//! scale and shift: ten ops) run op by op and as the graph compiler's one fused kernel, with the
//! dispatch counts (from the profiler) and the time per run of each, measured in alternating rounds.
//!
//! ```sh
//! cargo run --release -p nabla-wgpu --example wgpu_fusion              # 2^20 elements
//! cargo run --release -p nabla-wgpu --example wgpu_fusion 16777216     # on a real GPU
//! ```

use nabla_core::{Backend, DType, Error, Generator, Result};
use nabla_tensor::{GraphCompiler, GraphExecutor, Program, Tensor, TracingBackend};
use nabla_wgpu::WgpuBackend;
use std::time::Instant;

/// `gelu(x) * a + b` with GELU's tanh approximation, traced on `[n]` inputs `x, a, b`.
fn traced(n: usize) -> Result<Program> {
    let tb = TracingBackend::new();
    let (x, a, b) = (
        tb.placeholder([n], DType::F32)?,
        tb.placeholder([n], DType::F32)?,
        tb.placeholder([n], DType::F32)?,
    );
    let cube = x.mul(&x)?.mul(&x)?;
    let inner = x
        .add(cube.mul(0.044_715)?)?
        .mul((2.0 / std::f64::consts::PI).sqrt())?;
    let gelu = x.mul(0.5)?.mul(inner.tanh()?.add(1.0)?)?;
    let y = gelu.mul(&a)?.add(&b)?;
    tb.program(&[&y])
}

/// Dispatches of one run of `program`, and the median seconds per run over `rounds` of `reps`.
fn measure(
    gpu: &WgpuBackend,
    program: &Program,
    inputs: &[Tensor<WgpuBackend>],
) -> Result<(usize, Vec<f64>)> {
    let exec = GraphExecutor::new(gpu);
    exec.run(program, inputs)?; // compile the pipelines
    gpu.synchronize()?;
    gpu.set_profiling(true);
    exec.run(program, inputs)?;
    let dispatches = gpu
        .profile()
        .iter()
        .filter(|r| r.op != "read")
        .map(|r| r.calls)
        .sum();
    gpu.set_profiling(false);
    let reps = 20;
    let start = Instant::now();
    for _ in 0..reps {
        exec.run(program, inputs)?;
    }
    gpu.synchronize()?;
    Ok((
        dispatches,
        vec![start.elapsed().as_secs_f64() / reps as f64],
    ))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let n = match std::env::args().nth(1) {
        Some(a) => a
            .parse()
            .map_err(|e| Error::invalid("wgpu_fusion", format!("size {a:?}: {e}")))?,
        None => 1 << 20,
    };
    let gpu = WgpuBackend::new()?;
    println!("adapter: {}; {n} elements", gpu.adapter_name());
    let program = traced(n)?;
    let compiled = GraphCompiler::for_backend(&gpu).compile(&program)?;
    let mut rng = Generator::new(0);
    let inputs = (0..3)
        .map(|_| Tensor::randn([n], DType::F32, &mut rng, &gpu))
        .collect::<Result<Vec<_>>>()?;
    let (mut plain, mut fused) = (Vec::new(), Vec::new());
    let (mut plain_dispatches, mut fused_dispatches) = (0, 0);
    for _ in 0..5 {
        let (d, t) = measure(&gpu, &program, &inputs)?;
        (plain_dispatches, plain) = (d, [plain, t].concat());
        let (d, t) = measure(&gpu, &compiled, &inputs)?;
        (fused_dispatches, fused) = (d, [fused, t].concat());
    }
    let ratios: Vec<f64> = plain.iter().zip(&fused).map(|(p, f)| p / f).collect();
    let (p, f) = (median(plain), median(fused));
    println!(
        "op by op: {plain_dispatches} dispatches, {:.3} ms per run",
        p * 1e3
    );
    println!(
        "fused:    {fused_dispatches} dispatches, {:.3} ms per run",
        f * 1e3
    );
    println!(
        "speedup (median of per-round ratios): {:.2}x, range {:.2}-{:.2}",
        median(ratios.clone()),
        ratios.iter().copied().fold(f64::INFINITY, f64::min),
        ratios.iter().copied().fold(0.0, f64::max)
    );
    Ok(())
}
