//! Traced, compiled transforms against eager ones: the benchmark of `scripts/bench_transforms.py`, which
//! runs the same workloads in JAX (jit) in the same run and prints the ratios.
//!
//! ```sh
//! cargo run --release -p nabla --example bench_transforms -- [--repeats R]
//! ```
//!
//! Workloads (f32):
//! - `mlp_grad`: value and gradient of the cross-entropy loss of a 3-layer MLP (tanh, batch 128,
//!   784-512-512-10) with respect to its six parameters, eager (`AdContext` with `create_graph(false)`)
//!   and traced + compiled (`GraphCompiler`, run by `GraphExecutor`);
//! - `tanh_gram_grad` / `tanh_gram_hvp`: gradient and Hessian-vector product (forward over reverse) of
//!   `sum(tanh(X Xᵀ))` for a 256x256 `X`, traced + compiled, and eager.
//!
//! Each time is the median of `--repeats` runs (default 30) after warm-up. Trace and compile times are
//! reported separately. Human-readable lines go to stderr, one JSON line to stdout.

use nabla::prelude::*;
use nabla::{GraphCompiler, GraphExecutor, Program};
use std::time::{Duration, Instant};

const BATCH: usize = 128;
const SIZES: [usize; 4] = [784, 512, 512, 10];
const GRAM: usize = 256;

fn median(mut runs: Vec<Duration>) -> f64 {
    runs.sort();
    runs[runs.len() / 2].as_secs_f64()
}

/// Median seconds of `f` over `repeats` runs after three warm-up runs.
fn time(repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    for _ in 0..3 {
        f()?;
    }
    let mut runs = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let start = Instant::now();
        f()?;
        runs.push(start.elapsed());
    }
    Ok(median(runs))
}

/// The MLP's cross-entropy loss; `params` are `[w1, b1, w2, b2, w3, b3]`.
fn mlp_loss<B: Backend>(
    params: &[Tensor<B>],
    x: &Tensor<B>,
    labels: &Tensor<B>,
) -> Result<Tensor<B>> {
    let mut h = x.clone();
    for layer in 0..3 {
        h = h.matmul(&params[2 * layer])?.add(&params[2 * layer + 1])?;
        if layer < 2 {
            h = h.tanh()?;
        }
    }
    let nll = h.log_softmax(-1)?.mul(labels)?.sum_all()?;
    nll.mul(-1.0 / BATCH as f64)
}

fn mlp_shapes() -> Vec<Vec<usize>> {
    (0..3)
        .flat_map(|l| [vec![SIZES[l], SIZES[l + 1]], vec![SIZES[l + 1]]])
        .collect()
}

/// Inputs of the MLP: parameters (scaled like a default initialisation), a batch and one-hot labels.
fn mlp_inputs(cpu: &CpuBackend) -> Result<(Vec<CpuTensor>, CpuTensor, CpuTensor)> {
    let mut rng = Generator::new(7);
    let params = mlp_shapes()
        .into_iter()
        .map(|s| {
            let scale = 1.0 / (s[0] as f64).sqrt();
            Tensor::randn(s, DType::F32, &mut rng, cpu)?.mul(scale)
        })
        .collect::<Result<Vec<_>>>()?;
    let x = Tensor::randn([BATCH, SIZES[0]], DType::F32, &mut rng, cpu)?;
    let classes = Tensor::from_vec(
        (0..BATCH as i64).map(|i| i % 10).collect::<Vec<_>>(),
        [BATCH],
        cpu,
    )?;
    let labels = classes.one_hot(SIZES[3], DType::F32)?;
    Ok((params, x, labels))
}

struct Traced {
    program: Program,
    trace_s: f64,
    compile_s: f64,
    nodes_before: usize,
    nodes_after: usize,
}

/// Traces `build` on fresh placeholders of `shapes`, then compiles the program.
fn trace_and_compile(
    shapes: &[Vec<usize>],
    build: impl Fn(&[TracedTensor]) -> Result<Vec<TracedTensor>>,
) -> Result<Traced> {
    let start = Instant::now();
    let tb = TracingBackend::new();
    let inputs = shapes
        .iter()
        .map(|s| tb.placeholder(s.clone(), DType::F32))
        .collect::<Result<Vec<_>>>()?;
    let outputs = build(&inputs)?;
    let refs: Vec<&TracedTensor> = outputs.iter().collect();
    let raw = tb.program(&refs)?;
    let trace_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let (program, _report) = GraphCompiler::new().compile_with_report(&raw)?;
    let compile_s = start.elapsed().as_secs_f64();
    Ok(Traced {
        nodes_before: raw.nodes().len(),
        nodes_after: program.nodes().len(),
        program,
        trace_s,
        compile_s,
    })
}

fn main() -> Result<()> {
    let mut repeats = 30usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next().and_then(|v| v.parse().ok())) {
            ("--repeats", Some(n)) if n > 0 => repeats = n,
            _ => {
                eprintln!("usage: bench_transforms [--repeats R]   (R >= 1)");
                std::process::exit(2);
            }
        }
    }
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);

    // 1. MLP gradient.
    let (params, x, labels) = mlp_inputs(&cpu)?;
    let eager_ad = AdContext::<CpuBackend>::builder()
        .create_graph(false)
        .build();
    let mlp_eager = time(repeats, || {
        let vars = params
            .iter()
            .enumerate()
            .map(|(i, p)| Tensor::var(format!("p{i}"), p.clone()))
            .collect::<Result<Vec<_>>>()?;
        let loss = mlp_loss(&vars, &x, &labels)?;
        let refs: Vec<&CpuTensor> = vars.iter().collect();
        let grads = eager_ad.grads(&loss, &refs)?;
        std::hint::black_box((loss, grads));
        Ok(())
    })?;
    let mut shapes = mlp_shapes();
    shapes.push(vec![BATCH, SIZES[0]]);
    shapes.push(vec![BATCH, SIZES[3]]);
    let mlp = trace_and_compile(&shapes, |inp| {
        let ad = AdContext::new();
        let loss = mlp_loss(&inp[..6], &inp[6].detach(), &inp[7].detach())?;
        let refs: Vec<&TracedTensor> = inp[..6].iter().collect();
        let mut out = vec![loss.clone()];
        out.extend(ad.grads(&loss, &refs)?);
        Ok(out)
    })?;
    let mut feed = params.clone();
    feed.push(x.clone());
    feed.push(labels.clone());
    let mlp_compiled = time(repeats, || {
        std::hint::black_box(exec.run(&mlp.program, &feed)?);
        Ok(())
    })?;

    // 2. HVP over gradient for sum(tanh(X Xᵀ)).
    let mut rng = Generator::new(11);
    let gx = Tensor::randn([GRAM, GRAM], DType::F32, &mut rng, &cpu)?.mul(0.05)?;
    let gv = Tensor::randn([GRAM, GRAM], DType::F32, &mut rng, &cpu)?;
    let gram = |x: &TracedTensor| x.matmul(&x.t()?)?.tanh()?.sum_all();
    let gram_shapes = vec![vec![GRAM, GRAM], vec![GRAM, GRAM]];
    let grad_prog = trace_and_compile(&gram_shapes[..1], |inp| {
        Ok(vec![AdContext::new().grad(&gram(&inp[0])?, &inp[0])?])
    })?;
    let hvp_prog = trace_and_compile(&gram_shapes, |inp| {
        let ad = AdContext::new();
        let g = ad.grad(&gram(&inp[0])?, &inp[0])?;
        Ok(vec![ad.jvp(&g, &inp[0], &inp[1].detach())?])
    })?;
    let grad_feed = [gx.clone()];
    let hvp_feed = [gx.clone(), gv.clone()];
    let gram_grad = time(repeats, || {
        std::hint::black_box(exec.run(&grad_prog.program, &grad_feed)?);
        Ok(())
    })?;
    let gram_hvp = time(repeats, || {
        std::hint::black_box(exec.run(&hvp_prog.program, &hvp_feed)?);
        Ok(())
    })?;
    let eager_gram = |x: &CpuTensor| x.matmul(&x.t()?)?.tanh()?.sum_all();
    let gram_grad_eager = time(repeats, || {
        let xv = Tensor::var("x", gx.clone())?;
        std::hint::black_box(eager_ad.grad(&eager_gram(&xv)?, &xv)?);
        Ok(())
    })?;
    let gram_hvp_eager = time(repeats, || {
        let xv = Tensor::var("x", gx.clone())?;
        std::hint::black_box(eager_ad.hvp(&eager_gram(&xv)?, &xv, &gv)?);
        Ok(())
    })?;

    eprintln!(
        "mlp_grad: eager {:.3} ms, compiled {:.3} ms (trace {:.1} ms, compile {:.1} ms, nodes {} -> {})",
        mlp_eager * 1e3,
        mlp_compiled * 1e3,
        mlp.trace_s * 1e3,
        mlp.compile_s * 1e3,
        mlp.nodes_before,
        mlp.nodes_after
    );
    eprintln!(
        "tanh_gram: grad {:.3} ms, hvp {:.3} ms (ratio {:.2}); eager grad {:.3} ms, hvp {:.3} ms \
         (ratio {:.2}); compile {:.1} / {:.1} ms",
        gram_grad * 1e3,
        gram_hvp * 1e3,
        gram_hvp / gram_grad,
        gram_grad_eager * 1e3,
        gram_hvp_eager * 1e3,
        gram_hvp_eager / gram_grad_eager,
        grad_prog.compile_s * 1e3,
        hvp_prog.compile_s * 1e3
    );
    println!(
        "{{\"mlp_grad_eager_s\": {mlp_eager}, \"mlp_grad_compiled_s\": {mlp_compiled}, \
         \"mlp_trace_s\": {}, \"mlp_compile_s\": {}, \"mlp_nodes_before\": {}, \"mlp_nodes_after\": {}, \
         \"gram_grad_s\": {gram_grad}, \"gram_hvp_s\": {gram_hvp}, \"gram_grad_eager_s\": {gram_grad_eager}, \
         \"gram_hvp_eager_s\": {gram_hvp_eager}, \"gram_grad_compile_s\": {}, \"gram_hvp_compile_s\": {}, \
         \"gram_grad_trace_s\": {}, \"gram_hvp_trace_s\": {}}}",
        mlp.trace_s,
        mlp.compile_s,
        mlp.nodes_before,
        mlp.nodes_after,
        grad_prog.compile_s,
        hvp_prog.compile_s,
        grad_prog.trace_s,
        hvp_prog.trace_s
    );
    Ok(())
}
