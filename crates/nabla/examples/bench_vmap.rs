//! Per-example gradients with `vmap(grad)`: the benchmark of `scripts/bench_vmap.py`, which runs the
//! same workloads with `jax.jit(jax.vmap(jax.grad))` and `torch.func.vmap(torch.func.grad)` in the same
//! run and prints the ratios.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_vmap -- [--repeats R] [--workload NAME]
//! ```
//!
//! Workloads (f32), the gradient of each example's cross-entropy with respect to every parameter:
//! - `mlp`: a 784-256-10 tanh MLP, batch 64;
//! - `cnn`: two 3x3 convolutions (8 and 16 channels, padding 1) with ReLU and 2x2 max-pooling, then a
//!   linear layer, on 1x16x16 images, batch 32.
//!
//! Each runs eagerly (`vmap(...).call` per step: trace of one example, batched replay) and traced +
//! compiled (the whole `vmap` traced once, compiled by `GraphCompiler`, run by `GraphExecutor`). Each
//! time is the median of `--repeats` runs after warm-up. Human-readable lines go to stderr, one JSON
//! object to stdout. With `NABLA_PROFILE` set, the slowest nodes of the compiled program are listed.

use nabla::core::Pool2dParams;
use nabla::prelude::*;
use nabla::{GraphCompiler, GraphExecutor, grad_n};
use std::time::Instant;

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::time;

const MLP_BATCH: usize = 64;
const MLP_SIZES: [usize; 3] = [784, 256, 10];
const CNN_BATCH: usize = 32;
const IMAGE: usize = 16;

/// Cross-entropy of one example's logits `[10]` against its one-hot label.
fn nll<B: Backend>(logits: &Tensor<B>, one_hot: &Tensor<B>) -> Result<Tensor<B>> {
    logits.log_softmax(-1)?.mul(one_hot)?.sum_all()?.neg()
}

/// One example's MLP loss; `params` are `[w1, b1, w2, b2]`, `x` is `[784]`.
fn mlp_loss<B: Backend>(params: &[Tensor<B>], x: &Tensor<B>, y: &Tensor<B>) -> Result<Tensor<B>> {
    let h = x.matmul(&params[0])?.add(&params[1])?.tanh()?;
    nll(&h.matmul(&params[2])?.add(&params[3])?, y)
}

/// One example's CNN loss; `params` are `[k1, c1, k2, c2, w, b]`, `x` is `[1, 16, 16]`.
fn cnn_loss<B: Backend>(params: &[Tensor<B>], x: &Tensor<B>, y: &Tensor<B>) -> Result<Tensor<B>> {
    let conv = Conv2dParams {
        padding: (1, 1),
        ..Default::default()
    };
    let pool = Pool2dParams::square(2);
    let mut h = x.unsqueeze(0)?;
    for layer in 0..2 {
        let (k, c) = (&params[2 * layer], &params[2 * layer + 1]);
        let bias = c.reshape([1, -1, 1, 1])?;
        h = h.conv2d(k, &conv)?.add(&bias)?.relu()?.max_pool2d(&pool)?.0;
    }
    let flat = h.reshape([-1])?;
    nll(&flat.matmul(&params[4])?.add(&params[5])?, y)
}

struct Workload {
    params: Vec<CpuTensor>,
    x: CpuTensor,
    y: CpuTensor,
    loss: fn(&[TracedTensor], &TracedTensor, &TracedTensor) -> Result<TracedTensor>,
}

fn random_params(
    shapes: &[Vec<usize>],
    rng: &mut Generator,
    cpu: &CpuBackend,
) -> Result<Vec<CpuTensor>> {
    shapes
        .iter()
        .map(|s| {
            let fan_in: usize = if s.len() == 4 {
                s[1] * s[2] * s[3]
            } else {
                s[0]
            };
            Tensor::randn(s.clone(), DType::F32, rng, cpu)?.mul(1.0 / (fan_in as f64).sqrt())
        })
        .collect()
}

fn labels(batch: usize, cpu: &CpuBackend) -> Result<CpuTensor> {
    let classes = (0..batch as i64).map(|i| i % 10).collect::<Vec<_>>();
    Tensor::from_vec(classes, [batch], cpu)?.one_hot(10, DType::F32)
}

fn mlp(cpu: &CpuBackend) -> Result<Workload> {
    let mut rng = Generator::new(7);
    let [d, h, c] = MLP_SIZES;
    let shapes = [vec![d, h], vec![h], vec![h, c], vec![c]];
    Ok(Workload {
        params: random_params(&shapes, &mut rng, cpu)?,
        x: Tensor::randn([MLP_BATCH, d], DType::F32, &mut rng, cpu)?,
        y: labels(MLP_BATCH, cpu)?,
        loss: mlp_loss,
    })
}

fn cnn(cpu: &CpuBackend) -> Result<Workload> {
    let mut rng = Generator::new(11);
    let flat = 16 * (IMAGE / 4) * (IMAGE / 4);
    let shapes = [
        vec![8, 1, 3, 3],
        vec![8],
        vec![16, 8, 3, 3],
        vec![16],
        vec![flat, 10],
        vec![10],
    ];
    Ok(Workload {
        params: random_params(&shapes, &mut rng, cpu)?,
        x: Tensor::randn([CNN_BATCH, 1, IMAGE, IMAGE], DType::F32, &mut rng, cpu)?,
        y: labels(CNN_BATCH, cpu)?,
        loss: cnn_loss,
    })
}

impl Workload {
    /// `vmap(grad)` over the examples with the parameters shared, on any backend.
    fn per_example_grads<B: Backend>(&self, inputs: &[&Tensor<B>]) -> Result<Vec<Tensor<B>>> {
        let n = self.params.len();
        let loss = self.loss;
        let mut in_axes = vec![None; n];
        in_axes.extend([Some(0), Some(0)]);
        vmap(move |t: &[TracedTensor]| {
            let (x, y) = (t[n].detach(), t[n + 1].detach());
            grad_n(|ps: &[TracedTensor]| loss(ps, &x, &y))(&t[..n])
        })
        .in_axes(&in_axes)
        .call(inputs)
    }

    fn inputs(&self) -> Vec<&CpuTensor> {
        let mut all: Vec<&CpuTensor> = self.params.iter().collect();
        all.extend([&self.x, &self.y]);
        all
    }
}

fn run(
    name: &str,
    w: &Workload,
    repeats: usize,
    cpu: &CpuBackend,
    json: &mut Vec<String>,
) -> Result<()> {
    let inputs = w.inputs();
    let eager = time(repeats, || {
        std::hint::black_box(w.per_example_grads(&inputs)?);
        Ok(())
    })?;
    let start = Instant::now();
    let tb = TracingBackend::new();
    let placeholders = inputs
        .iter()
        .map(|t| tb.placeholder(t.shape().to_vec(), t.dtype()))
        .collect::<Result<Vec<_>>>()?;
    let outputs = w.per_example_grads(&placeholders.iter().collect::<Vec<_>>())?;
    let raw = tb.program(&outputs.iter().collect::<Vec<_>>())?;
    let program = GraphCompiler::for_backend(cpu).compile(&raw)?;
    let build_s = start.elapsed().as_secs_f64();
    let exec = GraphExecutor::new(cpu);
    let feed: Vec<CpuTensor> = inputs.iter().map(|t| (*t).clone()).collect();
    let compiled = time(repeats, || {
        std::hint::black_box(exec.run(&program, &feed)?);
        Ok(())
    })?;
    eprintln!(
        "{name} per-example grads: eager {:.3} ms, compiled {:.3} ms (trace + compile {:.1} ms, {} -> {} nodes)",
        eager * 1e3,
        compiled * 1e3,
        build_s * 1e3,
        raw.nodes().len(),
        program.nodes().len()
    );
    if std::env::var_os("NABLA_PROFILE").is_some() {
        let (_, times) = exec.run_profiled(&program, &feed)?;
        let mut rows: Vec<_> = program.nodes().iter().zip(&times).collect();
        rows.sort_by_key(|(_, t)| std::cmp::Reverse(**t));
        for (node, t) in rows.iter().take(12) {
            let shapes: Vec<_> = node
                .outputs
                .iter()
                .map(|&v| &program.values()[v].shape)
                .collect();
            eprintln!(
                "  {:8.3} ms  {} -> {shapes:?}",
                t.as_secs_f64() * 1e3,
                node.op
            );
        }
    }
    json.push(format!("\"{name}_eager_s\": {eager}"));
    json.push(format!("\"{name}_compiled_s\": {compiled}"));
    json.push(format!("\"{name}_build_s\": {build_s}"));
    Ok(())
}

fn main() -> Result<()> {
    let (repeats, workload) = bench_support::repeats_and_workload("bench_vmap", &["mlp", "cnn"]);
    let cpu = CpuBackend::new();
    let mut json = Vec::new();
    if workload == "all" || workload == "mlp" {
        run("mlp", &mlp(&cpu)?, repeats, &cpu, &mut json)?;
    }
    if workload == "all" || workload == "cnn" {
        run("cnn", &cnn(&cpu)?, repeats, &cpu, &mut json)?;
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
