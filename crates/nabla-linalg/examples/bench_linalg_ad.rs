//! Derivatives of linear-algebra factorizations at every size: the nabla side of
//! `scripts/bench_linalg_ad.py`, which times the same workloads in PyTorch (`torch.func`) and JAX
//! (`jax.jit`) in the same run.
//!
//! ```text
//! cargo run --release -p nabla-linalg --example bench_linalg_ad -- \
//!     [--repeats 30] [--dtype f64|f32] [--sizes 2,4,8,256,512,1000x4] [--workloads eigh,lu,qr,solve,svd]
//! ```
//!
//! Workloads (the suite tenferro-rs publishes as `linalg_jvp_vjp`), each a scalar loss of an `n x n`
//! matrix `A`, differentiated with respect to `A`:
//! - `eigh`: the sum of the eigenvalues of a symmetric positive definite `A` (`X Xᵀ / n + I`);
//! - `lu`: `sum(L) + sum(U)` of the LU factorization with partial pivoting of `A = X`;
//! - `qr`: `sum(Q) + sum(R)` of the reduced QR factorization of `A = X`;
//! - `solve`: `sum(solve(A, b))` with one right-hand side `b` `[n, 1]`, `A = X + n I`;
//! - `svd`: the sum of the singular values of `A = X`.
//!
//! A size `n` is one `n x n` matrix; `BxN` is a batch of `B` matrices `N x N` (`A` is `[B, N, N]`,
//! the loss sums over the batch).
//!
//! Two modes each: `vjp`, the gradient of the loss (forward and reverse pass), and `jvp`, the
//! derivative of the loss along a direction `T` (symmetrised for `eigh`). Two ways each: `eager`
//! (`Tensor::var`, then `AdContext::grad` or `AdContext::jvp`) and `compiled` (the same traced once
//! with `TracingBackend`, compiled by `GraphCompiler` and run by `GraphExecutor`). `X`, `T`, `b` and
//! the check weights `W` come from a fixed xorshift generator in f64 (the script makes the same
//! numbers), are combined in f64 and cast to the dtype last.
//!
//! Threads: `RAYON_NUM_THREADS` (the script sets it). Each time is the median of `--repeats` calls
//! after warm-up (twenty times as many at `n <= 8`). Prints one line per case to stderr and, last,
//! one JSON object to stdout: `{"<workload>_<mode>_<n>": {"eager_s", "compiled_s", "check"}}`,
//! where `check` is `sum(grad * W)` for `vjp` and the directional derivative for `jvp`, which the
//! script compares with the peers' before it reports their times.

#[allow(dead_code)]
#[path = "../../nabla/examples/bench_support/mod.rs"]
mod bench_support;
#[path = "support/mod.rs"]
mod support;

use nabla_core::{DType, Error, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, GraphCompiler, GraphExecutor, Tensor, TracedTensor, TracingBackend};
use support::uniform;

type T = Tensor<CpuBackend>;

const WORKLOADS: [&str; 5] = ["eigh", "lu", "qr", "solve", "svd"];

/// One workload's inputs in `dtype`: the matrix `A`, the direction `T`, the right-hand side `b` and
/// the check weights `W`.
struct Inputs {
    a: T,
    t: T,
    b: T,
    w: T,
}

/// A matrix size from the command line: `n`, or a batch `BxN`.
#[derive(Clone, Copy)]
struct Size {
    batch: Option<usize>,
    n: usize,
}

impl Size {
    fn parse(text: &str) -> Option<Size> {
        let positive = |s: &str| s.parse().ok().filter(|&v: &usize| v > 0);
        match text.split_once('x') {
            Some((b, n)) => Some(Size {
                batch: Some(positive(b)?),
                n: positive(n)?,
            }),
            None => Some(Size {
                batch: None,
                n: positive(text)?,
            }),
        }
    }

    /// The shape of one operand with `cols` columns: `[n, cols]` or `[B, n, cols]`.
    fn shape(self, cols: usize) -> Vec<usize> {
        let mut shape: Vec<usize> = self.batch.into_iter().collect();
        shape.extend([self.n, cols]);
        shape
    }

    /// Small cases run twenty times as often (their times are microseconds).
    fn repeats(self, repeats: usize) -> usize {
        if self.n <= 8 && self.batch.is_none() {
            repeats * 20
        } else {
            repeats
        }
    }

    fn label(self) -> String {
        match self.batch {
            Some(b) => format!("{b}x{}", self.n),
            None => self.n.to_string(),
        }
    }
}

fn inputs(workload: &str, size: Size, dtype: DType, cpu: &CpuBackend) -> Result<Inputs> {
    let n = size.n;
    let x = uniform(1, &size.shape(n), cpu)?;
    let t = uniform(2, &size.shape(n), cpu)?;
    let eye = Tensor::eye(n, DType::F64, cpu)?;
    let (a, t) = match workload {
        "eigh" => (
            x.matmul(&x.t()?)?.div(n as f64)?.add(&eye)?,
            t.add(&t.t()?)?.mul(0.5)?,
        ),
        "solve" => (x.add(&eye.mul(n as f64)?)?, t),
        _ => (x, t),
    };
    Ok(Inputs {
        a: a.contiguous()?.cast(dtype)?,
        t: t.contiguous()?.cast(dtype)?,
        b: uniform(4, &size.shape(1), cpu)?.cast(dtype)?,
        w: uniform(3, &size.shape(n), cpu)?.cast(dtype)?,
    })
}

/// The workload's scalar loss of `a` (`b` is solve's right-hand side).
fn loss<B: nabla_core::Backend>(workload: &str, a: &Tensor<B>, b: &Tensor<B>) -> Result<Tensor<B>> {
    match workload {
        "eigh" => nabla_linalg::eigh(a)?.0.sum_all(),
        "lu" => {
            let (_, l, u) = nabla_linalg::lu(a)?;
            l.sum_all()?.add(&u.sum_all()?)
        }
        "qr" => {
            let (q, r) = nabla_linalg::qr(a)?;
            q.sum_all()?.add(&r.sum_all()?)
        }
        "solve" => nabla_linalg::solve(a, b)?.sum_all(),
        "svd" => nabla_linalg::svdvals(a)?.sum_all(),
        other => Err(Error::invalid(
            "bench_linalg_ad",
            format!(
                "unknown workload '{other}' (known: {})",
                WORKLOADS.join(", ")
            ),
        )),
    }
}

/// The derivative the mode asks for, eager or traced: the gradient for `vjp`, the directional
/// derivative along `t` for `jvp`.
fn derivative<B: nabla_core::Backend>(
    workload: &str,
    mode: &str,
    a: &Tensor<B>,
    t: &Tensor<B>,
    b: &Tensor<B>,
) -> Result<Tensor<B>> {
    let ad = AdContext::new();
    let y = loss(workload, a, b)?;
    match mode {
        "vjp" => ad.grad(&y, a),
        _ => ad.jvp(&y, a, t),
    }
}

fn item(t: &T) -> Result<f64> {
    t.cast(DType::F64)?.item::<f64>()
}

/// Times one case eagerly and compiled; returns `(eager_s, compiled_s, check)`.
fn case(workload: &str, mode: &str, size: Size, dtype: DType, repeats: usize) -> Result<[f64; 3]> {
    let cpu = CpuBackend::new();
    let inp = inputs(workload, size, dtype, &cpu)?;
    let repeats = size.repeats(repeats);
    let eager = || -> Result<T> {
        let x = Tensor::var("a", inp.a.clone())?;
        derivative(workload, mode, &x, &inp.t, &inp.b)
    };
    let value = eager()?;
    let check = match mode {
        "vjp" => item(&value.mul(&inp.w)?.sum_all()?)?,
        _ => item(&value)?,
    };
    let eager_s = bench_support::time(repeats, || {
        std::hint::black_box(eager()?);
        Ok(())
    })?;
    let tb = TracingBackend::new();
    let traced: Vec<TracedTensor> = [&inp.a, &inp.t, &inp.b]
        .iter()
        .map(|x| tb.placeholder(x.shape().to_vec(), dtype))
        .collect::<Result<_>>()?;
    let out = derivative(
        workload,
        mode,
        &traced[0],
        &traced[1].detach(),
        &traced[2].detach(),
    )?;
    let program = GraphCompiler::for_backend(&cpu).compile(&tb.program(&[&out])?)?;
    let exec = GraphExecutor::new(&cpu);
    let feed = [inp.a.clone(), inp.t.clone(), inp.b.clone()];
    let compiled = exec.run(&program, &feed)?.remove(0);
    let compiled_check = match mode {
        "vjp" => item(&compiled.mul(&inp.w)?.sum_all()?)?,
        _ => item(&compiled)?,
    };
    if (compiled_check - check).abs() > 1e-6 * check.abs().max(1.0) {
        return Err(Error::invalid(
            "bench_linalg_ad",
            format!(
                "{workload} {mode} {}: compiled {compiled_check} != eager {check}",
                size.label()
            ),
        ));
    }
    let compiled_s = bench_support::time(repeats, || {
        std::hint::black_box(exec.run(&program, &feed)?);
        Ok(())
    })?;
    Ok([eager_s, compiled_s, check])
}

/// The command line: `(repeats, dtype, sizes, workloads)`.
fn arguments() -> (usize, DType, Vec<Size>, Vec<String>) {
    let usage = || -> ! {
        eprintln!(
            "usage: bench_linalg_ad [--repeats N] [--dtype f64|f32] [--sizes 2,4,8,256,512,1000x4] \
             [--workloads {}]",
            WORKLOADS.join(",")
        );
        std::process::exit(2)
    };
    let (mut repeats, mut dtype) = (30usize, DType::F64);
    let mut sizes: Vec<Size> = ["2", "4", "8", "256", "512", "1000x4"]
        .into_iter()
        .filter_map(Size::parse)
        .collect();
    let mut workloads: Vec<String> = WORKLOADS.iter().map(|w| w.to_string()).collect();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--repeats" => {
                repeats = value
                    .parse()
                    .ok()
                    .filter(|&r| r > 0)
                    .unwrap_or_else(|| usage())
            }
            "--dtype" => {
                dtype = match value.as_str() {
                    "f64" => DType::F64,
                    "f32" => DType::F32,
                    _ => usage(),
                }
            }
            "--sizes" => {
                sizes = value
                    .split(',')
                    .map(|s| Size::parse(s).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--workloads" => {
                workloads = value.split(',').map(str::to_string).collect();
                if workloads.iter().any(|w| !WORKLOADS.contains(&w.as_str())) {
                    usage()
                }
            }
            _ => usage(),
        }
    }
    (repeats, dtype, sizes, workloads)
}

fn main() -> Result<()> {
    let (repeats, dtype, sizes, workloads) = arguments();
    // This thread joins the kernels' pool (as a training program's main thread does), so that an op
    // split over two threads starts on it rather than being handed over.
    nabla_cpu::init_thread_pool(None)?;
    let mut json = Vec::new();
    for workload in &workloads {
        for mode in ["vjp", "jvp"] {
            for &size in &sizes {
                let [eager, compiled, check] = case(workload, mode, size, dtype, repeats)?;
                let key = format!("{workload}_{mode}_{}", size.label());
                eprintln!(
                    "{key:16} eager {:10.4} ms  compiled {:10.4} ms  check {check:.10e}",
                    eager * 1e3,
                    compiled * 1e3
                );
                json.push(format!(
                    "\"{key}\": {{\"eager_s\": {eager:e}, \"compiled_s\": {compiled:e}, \"check\": {check:e}}}"
                ));
            }
        }
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
