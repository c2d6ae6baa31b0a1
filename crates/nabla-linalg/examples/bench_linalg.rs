//! Times the linalg family's ops on the CPU backend: value and gradient of `sum(op(A) * W)` for solve,
//! cholesky, eigh and svd at n = 256 and 512, f32 and f64 (eager `Tensor::var` + `AdContext::grad`).
//!
//! ```text
//! cargo run --release -p nabla-linalg --example bench_linalg -- [--repeats 10] [--ops solve,cholesky]
//! ```
//!
//! Prints one line per measurement and, last, one JSON object `{"<op>_<dtype>_<n>_<value|grad>_s": seconds}`
//! (medians of `--repeats` runs after three warm-up runs) read by `scripts/bench_linalg.py`.

#[allow(dead_code)]
#[path = "../../nabla/examples/bench_support/mod.rs"]
mod bench_support;
#[path = "support/mod.rs"]
mod support;

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, Tensor};

type T = Tensor<CpuBackend>;

/// Right-hand-side columns of the solve workload.
const SOLVE_RHS: usize = 32;

/// Uniform values in [-1, 1) from the shared xorshift generator, in `dtype`.
fn random(seed: u64, shape: &[usize], dtype: DType, cpu: &CpuBackend) -> Result<T> {
    support::uniform(seed, shape, cpu)?.cast(dtype)
}

/// The input of each op: well conditioned for solve, symmetric positive definite for cholesky and
/// symmetric for eigh, plain random for svd.
fn input(op: &str, n: usize, dtype: DType, cpu: &CpuBackend) -> Result<T> {
    let x = random(1, &[n, n], dtype, cpu)?;
    let eye = Tensor::eye(n, dtype, cpu)?;
    match op {
        "solve" => x.add(&eye.mul(n as f64)?),
        "cholesky" => x.matmul(&x.t()?)?.mul(1.0 / n as f64)?.add(&eye),
        "eigh" => x.add(&x.t()?),
        _ => Ok(x),
    }
}

/// `op(A)`: the tensor the loss weighs (singular values for svd, eigenvalues for eigh).
fn apply(op: &str, a: &T, b: &T) -> Result<T> {
    match op {
        "solve" => nabla_linalg::solve(a, b),
        "cholesky" => nabla_linalg::cholesky(a),
        "eigh" => Ok(nabla_linalg::eigh(a)?.0),
        "svd" => Ok(nabla_linalg::svd(a, false)?.1),
        other => Err(nabla_core::Error::invalid(
            "bench_linalg",
            format!("unknown op {other}"),
        )),
    }
}

fn usage() -> ! {
    eprintln!("usage: bench_linalg [--repeats N] [--ops solve,cholesky,eigh,svd]");
    std::process::exit(2)
}

fn main() -> Result<()> {
    let (mut repeats, mut ops) = (10usize, vec!["solve", "cholesky", "eigh", "svd"]);
    let mut args = std::env::args().skip(1);
    let mut ops_arg = String::new();
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--repeats" => match value.parse() {
                Ok(n) if n > 0 => repeats = n,
                _ => usage(),
            },
            "--ops" => ops_arg = value,
            _ => usage(),
        }
    }
    if !ops_arg.is_empty() {
        ops = ops_arg.split(',').collect();
    }
    let cpu = CpuBackend::new();
    let ad = AdContext::new();
    let mut json = Vec::new();
    for op in &ops {
        for dtype in [DType::F32, DType::F64] {
            for n in [256, 512] {
                let a = input(op, n, dtype, &cpu)?;
                let b = random(2, &[n, SOLVE_RHS], dtype, &cpu)?;
                let w = random(3, apply(op, &a, &b)?.shape(), dtype, &cpu)?;
                let value = bench_support::time(repeats, || {
                    apply(op, &a, &b)?
                        .mul(&w)?
                        .sum_all()?
                        .cast(DType::F64)?
                        .item::<f64>()?;
                    Ok(())
                })?;
                let grad = bench_support::time(repeats, || {
                    let x = Tensor::var("a", a.clone())?;
                    let loss = apply(op, &x, &b)?.mul(&w)?.sum_all()?;
                    ad.grad(&loss, &x)?
                        .sum_all()?
                        .cast(DType::F64)?
                        .item::<f64>()?;
                    Ok(())
                })?;
                let key = format!("{op}_{}_{n}", dtype.name());
                println!(
                    "{key:24} value {:9.3} ms   value+grad {:9.3} ms",
                    value * 1e3,
                    grad * 1e3
                );
                json.push(format!("\"{key}_value_s\": {value:e}"));
                json.push(format!("\"{key}_grad_s\": {grad:e}"));
            }
        }
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
