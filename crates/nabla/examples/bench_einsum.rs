//! `einsum` on a chain of three 256 x 256 matrices: the benchmark of `scripts/bench_einsum.py`, which
//! runs the same workloads with `jax.jit(jnp.einsum)` and `torch.einsum` in the same run.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_einsum -- [--repeats R] [--workload NAME]
//! ```
//!
//! Workloads (f32, eager):
//! - `chain`: `einsum("ij,jk,kl->il", A, B, C)`;
//! - `chain_grad`: the value and the gradients with respect to `A`, `B` and `C` of
//!   `sum(einsum("ij,jk,kl->il", A, B, C))`;
//! - `batched`: `einsum("bij,bjk->bik", X, Y)` with 64 pairs of 64 x 64 matrices.
//!
//! Each time is the median of `--repeats` runs after warm-up. Human-readable lines go to stderr, one
//! JSON object to stdout.

use nabla::prelude::*;
use nabla::{AdContext, Generator};

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::{repeats_and_workload, time};

const N: usize = 256;
const WORKLOADS: [&str; 3] = ["chain", "chain_grad", "batched"];

fn main() -> Result<()> {
    let (repeats, workload) = repeats_and_workload("bench_einsum", &WORKLOADS);
    nabla::cpu::init_thread_pool(None)?;
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    let mut uniform = |shape: &[usize]| Tensor::rand(shape.to_vec(), DType::F32, &mut rng, &cpu);
    let (a, b, c) = (uniform(&[N, N])?, uniform(&[N, N])?, uniform(&[N, N])?);
    let (x, y) = (uniform(&[64, 64, 64])?, uniform(&[64, 64, 64])?);
    let mut json = Vec::new();
    for name in WORKLOADS
        .iter()
        .filter(|w| workload == "all" || workload == **w)
    {
        let secs = match *name {
            "chain" => time(repeats, || {
                Tensor::einsum("ij,jk,kl->il", &[&a, &b, &c]).map(drop)
            })?,
            "chain_grad" => time(repeats, || {
                let vars = [
                    Tensor::var("a", a.clone())?,
                    Tensor::var("b", b.clone())?,
                    Tensor::var("c", c.clone())?,
                ];
                let refs: Vec<&Tensor<CpuBackend>> = vars.iter().collect();
                let loss = Tensor::einsum("ij,jk,kl->il", &refs)?.sum_all()?;
                AdContext::new().grads(&loss, &refs).map(drop)
            })?,
            _ => time(repeats, || {
                Tensor::einsum("bij,bjk->bik", &[&x, &y]).map(drop)
            })?,
        };
        eprintln!("{name:12} {:9.3} ms", secs * 1e3);
        json.push(format!("\"{name}_s\": {secs:e}"));
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
