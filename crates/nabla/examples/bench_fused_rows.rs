//! Forward + backward time of softmax, log-softmax and layer norm at the sizes of the GPT benchmarks:
//! the fused row ops that `Tensor::softmax`, `Tensor::log_softmax` and `Tensor::layer_norm` use on the
//! CPU, against the same functions written
//! as their composite formula (what nabla ran before, and still runs on other backends). The
//! `scripts/bench_fused_rows.py` script runs this and PyTorch's fused kernels in the same run.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_fused_rows -- [--repeats R] [--workload all|softmax|log_softmax|layer_norm]
//! ```
//!
//! Workloads (f32; the loss is the output times a fixed random cotangent, summed):
//! - `softmax`: attention scores `[32, 4, 64, 64]` along the last axis;
//! - `log_softmax`: logits over GPT-2's vocabulary, `[256, 50257]` along the last axis (a quarter
//!   of the GPT-2-small benchmark's tokens; what its cross-entropy runs);
//! - `layer_norm`: activations `[32, 64, 128]` over the last axis, eps 1e-5.
//!
//! Prints one line per workload and variant: `name variant ms` (median of the repeats).

#[path = "bench_support/mod.rs"]
mod bench_support;

use nabla::prelude::*;

/// Softmax along the last axis by its composite formula.
fn softmax_composite(x: &CpuTensor) -> Result<CpuTensor> {
    let m = x.max(&[-1], true)?.detach();
    let e = x.sub(&m)?.exp()?;
    e.div(e.sum(&[-1], true)?)
}

/// Log-softmax along the last axis by its composite formula.
fn log_softmax_composite(x: &CpuTensor) -> Result<CpuTensor> {
    let shifted = x.sub(x.max(&[-1], true)?.detach())?;
    let lse = shifted.exp()?.sum(&[-1], true)?.log()?;
    shifted.sub(&lse)
}

/// Layer norm over the last axis by its composite formula.
fn layer_norm_composite(x: &CpuTensor, eps: f64) -> Result<CpuTensor> {
    let centered = x.sub(x.mean(&[-1], true)?)?;
    let var = centered.square()?.mean(&[-1], true)?;
    centered.mul(var.add(eps)?.rsqrt()?)
}

/// Median seconds of forward + backward of `f` at `x` against cotangent `c`.
fn time_step(
    repeats: usize,
    x: &CpuTensor,
    c: &CpuTensor,
    f: impl Fn(&CpuTensor) -> Result<CpuTensor>,
) -> Result<f64> {
    bench_support::time(repeats, || {
        let v = Tensor::var("x", x.clone())?;
        let loss = f(&v)?.mul(c)?.sum_all()?;
        let g = loss.backward()?;
        g.get(&v)
            .map(|_| ())
            .ok_or_else(|| Error::invalid("bench", "no gradient"))
    })
}

fn main() -> Result<()> {
    nabla::cpu::init_thread_pool(None)?;
    let (repeats, workload) = bench_support::repeats_and_workload(
        "bench_fused_rows",
        &["softmax", "log_softmax", "layer_norm"],
    );
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    type Case = (
        &'static str,
        Vec<usize>,
        Box<dyn Fn(&CpuTensor) -> Result<CpuTensor>>,
        Box<dyn Fn(&CpuTensor) -> Result<CpuTensor>>,
    );
    let cases: Vec<Case> = vec![
        (
            "softmax",
            vec![32, 4, 64, 64],
            Box::new(|x: &CpuTensor| x.softmax(-1)),
            Box::new(softmax_composite),
        ),
        (
            "log_softmax",
            vec![256, 50_257],
            Box::new(|x: &CpuTensor| x.log_softmax(-1)),
            Box::new(log_softmax_composite),
        ),
        (
            "layer_norm",
            vec![32, 64, 128],
            Box::new(|x: &CpuTensor| x.layer_norm(&[-1], 1e-5)),
            Box::new(|x: &CpuTensor| layer_norm_composite(x, 1e-5)),
        ),
    ];
    for (name, shape, fused, composite) in &cases {
        if workload != "all" && workload != *name {
            continue;
        }
        let x = Tensor::randn(shape.clone(), DType::F32, &mut rng, &cpu)?;
        let c = Tensor::randn(shape.clone(), DType::F32, &mut rng, &cpu)?;
        // Alternate the variants so that both see the same machine load.
        let (mut f_runs, mut c_runs) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            f_runs.push(time_step(repeats, &x, &c, fused)?);
            c_runs.push(time_step(repeats, &x, &c, composite)?);
        }
        f_runs.sort_by(f64::total_cmp);
        c_runs.sort_by(f64::total_cmp);
        println!("{name} fused {:.3}", f_runs[2] * 1e3);
        println!("{name} composite {:.3}", c_runs[2] * 1e3);
    }
    Ok(())
}
