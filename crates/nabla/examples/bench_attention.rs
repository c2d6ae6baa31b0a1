//! Scaled dot-product attention at GPT-2 small's sizes: the fused op that
//! `scaled_dot_product_attention` runs on the CPU against the composite formula it runs with a mask
//! (what every attention layer ran before). `scripts/bench_attention.py` runs this and PyTorch's
//! `scaled_dot_product_attention` (and its explicit formula) in the same run.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_attention -- [--repeats R] [--workload all|train|long|infer]
//! ```
//!
//! Workloads (f32, causal, scale 1/8, `q`, `k`, `v` of one shape; the loss is the output times a
//! fixed random cotangent, summed):
//! - `train`: `[4, 12, 256, 64]` (GPT-2 small's heads at batch 4, context 256), forward + backward;
//! - `long`: `[1, 12, 1024, 64]` (GPT-2's full context), forward + backward;
//! - `infer`: `[4, 12, 256, 64]`, forward only, without recording.
//!
//! Prints one line per workload and variant: `name variant ms` (median of the repeats).

#[path = "bench_support/mod.rs"]
mod bench_support;

use nabla::nn::{SdpaArgs, generate_square_subsequent_mask, scaled_dot_product_attention};
use nabla::prelude::*;

/// The attention, fused (causal flag) or composite (the causal mask as a float bias).
fn attend(x: &[CpuTensor], bias: Option<&CpuTensor>) -> Result<CpuTensor> {
    let args = SdpaArgs {
        attn_mask: bias,
        is_causal: bias.is_none(),
        ..SdpaArgs::default()
    };
    scaled_dot_product_attention(&x[0], &x[1], &x[2], args)
}

/// Median seconds of forward (+ backward when `train`) at `x` against the cotangent `c`.
fn time_step(
    repeats: usize,
    x: &[CpuTensor],
    c: &CpuTensor,
    bias: Option<&CpuTensor>,
    train: bool,
) -> Result<f64> {
    bench_support::time(repeats, || {
        if !train {
            return no_grad(|| attend(x, bias)).map(|_| ());
        }
        let vars: Vec<CpuTensor> = ["q", "k", "v"]
            .iter()
            .zip(x)
            .map(|(n, t)| Tensor::var(*n, t.clone()))
            .collect::<Result<_>>()?;
        let loss = attend(&vars, bias)?.mul(c)?.sum_all()?;
        let g = loss.backward()?;
        g.get(&vars[0])
            .map(|_| ())
            .ok_or_else(|| Error::invalid("bench", "no gradient"))
    })
}

fn main() -> Result<()> {
    nabla::cpu::init_thread_pool(None)?;
    let (repeats, workload) =
        bench_support::repeats_and_workload("bench_attention", &["train", "long", "infer"]);
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    let cases: [(&str, [usize; 4], bool); 3] = [
        ("train", [4, 12, 256, 64], true),
        ("long", [1, 12, 1024, 64], true),
        ("infer", [4, 12, 256, 64], false),
    ];
    for (name, shape, train) in cases {
        if workload != "all" && workload != name {
            continue;
        }
        let x: Vec<CpuTensor> = (0..3)
            .map(|_| Tensor::randn(shape, DType::F32, &mut rng, &cpu))
            .collect::<Result<_>>()?;
        let c = Tensor::randn(shape, DType::F32, &mut rng, &cpu)?;
        let bias = generate_square_subsequent_mask(shape[2], DType::F32, &cpu)?;
        // Alternate the variants so that both see the same machine load.
        let (mut f_runs, mut c_runs) = (Vec::new(), Vec::new());
        for _ in 0..5 {
            f_runs.push(time_step(repeats, &x, &c, None, train)?);
            c_runs.push(time_step(repeats, &x, &c, Some(&bias), train)?);
        }
        f_runs.sort_by(f64::total_cmp);
        c_runs.sort_by(f64::total_cmp);
        println!("{name} fused {:.3}", f_runs[2] * 1e3);
        println!("{name} composite {:.3}", c_runs[2] * 1e3);
    }
    Ok(())
}
