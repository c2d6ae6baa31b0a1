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
//! - `tanh_gram_grad` / `tanh_gram_hvp`: gradient and Hessian-vector product of `sum(tanh(X Xᵀ))` for
//!   a 256x256 `X`, traced + compiled, and eager. The HVP is `AdContext::hvp` (reverse over forward);
//!   compiled, it is also timed forward over reverse (the tangent of the gradient).
//!
//! Each time is the median of `--repeats` runs (default 30) after warm-up. Trace and compile times are
//! reported separately. `--workload NAME` runs one group only (`mlp_eager`, `mlp_compiled`,
//! `gram_eager`, `gram_compiled`; default all): the script runs each in its own process, so that one
//! workload's heap state does not slow the next one's allocations. Human-readable lines go to stderr,
//! one JSON object to stdout.

use nabla::prelude::*;
use nabla::{GraphCompiler, GraphExecutor, Pass, Program};
use std::time::Instant;

#[path = "bench_support/mod.rs"]
mod bench_support;
use bench_support::time;

const BATCH: usize = 128;
const SIZES: [usize; 4] = [784, 512, 512, 10];
const GRAM: usize = 256;

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
    trace_and_compile_with(
        &GraphCompiler::for_backend(&CpuBackend::new()),
        shapes,
        build,
    )
}

/// [`trace_and_compile`] with a given compiler.
fn trace_and_compile_with(
    compiler: &GraphCompiler,
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
    let (program, _report) = compiler.compile_with_report(&raw)?;
    let compile_s = start.elapsed().as_secs_f64();
    Ok(Traced {
        nodes_before: raw.nodes().len(),
        nodes_after: program.nodes().len(),
        program,
        trace_s,
        compile_s,
    })
}

/// Appends `"key": value` pairs to the JSON object being built.
fn put(json: &mut Vec<String>, key: &str, value: impl std::fmt::Display) {
    json.push(format!("\"{key}\": {value}"));
}

fn mlp_eager(repeats: usize, cpu: &CpuBackend, json: &mut Vec<String>) -> Result<()> {
    let (params, x, labels) = mlp_inputs(cpu)?;
    let ad = AdContext::builder().create_graph(false).build();
    let secs = time(repeats, || {
        let vars = params
            .iter()
            .enumerate()
            .map(|(i, p)| Tensor::var(format!("p{i}"), p.clone()))
            .collect::<Result<Vec<_>>>()?;
        let loss = mlp_loss(&vars, &x, &labels)?;
        let refs: Vec<&CpuTensor> = vars.iter().collect();
        std::hint::black_box((ad.grads(&loss, &refs)?, loss));
        Ok(())
    })?;
    eprintln!("mlp_grad eager: {:.3} ms", secs * 1e3);
    put(json, "mlp_grad_eager_s", secs);
    Ok(())
}

fn mlp_compiled(repeats: usize, cpu: &CpuBackend, json: &mut Vec<String>) -> Result<()> {
    let (params, x, labels) = mlp_inputs(cpu)?;
    let mut shapes = mlp_shapes();
    shapes.push(vec![BATCH, SIZES[0]]);
    shapes.push(vec![BATCH, SIZES[3]]);
    let mlp = trace_and_compile(&shapes, |inp| {
        let loss = mlp_loss(&inp[..6], &inp[6].detach(), &inp[7].detach())?;
        let refs: Vec<&TracedTensor> = inp[..6].iter().collect();
        let mut out = vec![loss.clone()];
        out.extend(AdContext::new().grads(&loss, &refs)?);
        Ok(out)
    })?;
    let mut feed = params;
    feed.push(x);
    feed.push(labels);
    let exec = GraphExecutor::new(cpu);
    let secs = time(repeats, || {
        std::hint::black_box(exec.run(&mlp.program, &feed)?);
        Ok(())
    })?;
    eprintln!(
        "mlp_grad compiled: {:.3} ms (trace {:.2} ms, compile {:.2} ms, nodes {} -> {})",
        secs * 1e3,
        mlp.trace_s * 1e3,
        mlp.compile_s * 1e3,
        mlp.nodes_before,
        mlp.nodes_after
    );
    put(json, "mlp_grad_compiled_s", secs);
    put(json, "mlp_trace_s", mlp.trace_s);
    put(json, "mlp_compile_s", mlp.compile_s);
    put(json, "mlp_nodes_before", mlp.nodes_before);
    put(json, "mlp_nodes_after", mlp.nodes_after);
    Ok(())
}

/// `X` and the HVP direction `V` of the tanh-Gram workload.
fn gram_inputs(cpu: &CpuBackend) -> Result<(CpuTensor, CpuTensor)> {
    let mut rng = Generator::new(11);
    let x = Tensor::randn([GRAM, GRAM], DType::F32, &mut rng, cpu)?.mul(0.05)?;
    let v = Tensor::randn([GRAM, GRAM], DType::F32, &mut rng, cpu)?;
    Ok((x, v))
}

fn gram<B: Backend>(x: &Tensor<B>) -> Result<Tensor<B>> {
    x.matmul(&x.t()?)?.tanh()?.sum_all()
}

fn gram_compiled(repeats: usize, cpu: &CpuBackend, json: &mut Vec<String>) -> Result<()> {
    let plain = GraphCompiler::for_backend(cpu);
    let (grad_prog, hvp_prog) = gram_compiled_with(repeats, cpu, json, &plain, "")?;
    put(json, "gram_grad_trace_s", grad_prog.trace_s);
    put(json, "gram_hvp_trace_s", hvp_prog.trace_s);
    put(json, "gram_grad_compile_s", grad_prog.compile_s);
    put(json, "gram_hvp_compile_s", hvp_prog.compile_s);
    // Again with the opt-in `Pass::Reassociate`, which merges the products sharing a factor
    // (`S X + Sᵀ X` becomes `(S + Sᵀ) X`).
    let merging = plain.with(Pass::Reassociate);
    gram_compiled_with(repeats, cpu, json, &merging, "_reassoc")?;
    Ok(())
}

/// Compiles the gradient and the HVP with `compiler`, times them and records `gram_grad{suffix}_s`
/// and `gram_hvp{suffix}_s` (the HVP as [`AdContext::hvp`] takes it, reverse over forward), and
/// `gram_hvp_fwd_rev{suffix}_s` for the HVP traced forward over reverse (the tangent of the gradient,
/// as JAX's `jvp(grad(f))`); returns the gradient's and `hvp`'s programs.
fn gram_compiled_with(
    repeats: usize,
    cpu: &CpuBackend,
    json: &mut Vec<String>,
    compiler: &GraphCompiler,
    suffix: &str,
) -> Result<(Traced, Traced)> {
    let (x, v) = gram_inputs(cpu)?;
    let shapes = vec![vec![GRAM, GRAM], vec![GRAM, GRAM]];
    let grad_prog = trace_and_compile_with(compiler, &shapes[..1], |inp| {
        Ok(vec![AdContext::new().grad(&gram(&inp[0])?, &inp[0])?])
    })?;
    let hvp_prog = trace_and_compile_with(compiler, &shapes, |inp| {
        Ok(vec![AdContext::new().hvp(
            &gram(&inp[0])?,
            &inp[0],
            &inp[1].detach(),
        )?])
    })?;
    let fwd_rev_prog = trace_and_compile_with(compiler, &shapes, |inp| {
        let ad = AdContext::new();
        let g = ad.grad(&gram(&inp[0])?, &inp[0])?;
        Ok(vec![ad.jvp(&g, &inp[0], &inp[1].detach())?])
    })?;
    let exec = GraphExecutor::new(cpu);
    let (grad_feed, hvp_feed) = ([x.clone()], [x, v]);
    let run = |program: &Program, feed: &[CpuTensor]| {
        time(repeats, || {
            std::hint::black_box(exec.run(program, feed)?);
            Ok(())
        })
    };
    let grad_s = run(&grad_prog.program, &grad_feed)?;
    let hvp_s = run(&hvp_prog.program, &hvp_feed)?;
    let fwd_rev_s = run(&fwd_rev_prog.program, &hvp_feed)?;
    eprintln!(
        "tanh_gram compiled{suffix}: grad {:.3} ms, hvp {:.3} ms (ratio {:.2}), forward over reverse \
         {:.3} ms (ratio {:.2}); compile {:.2} / {:.2} ms",
        grad_s * 1e3,
        hvp_s * 1e3,
        hvp_s / grad_s,
        fwd_rev_s * 1e3,
        fwd_rev_s / grad_s,
        grad_prog.compile_s * 1e3,
        hvp_prog.compile_s * 1e3
    );
    put(json, &format!("gram_grad{suffix}_s"), grad_s);
    put(json, &format!("gram_hvp{suffix}_s"), hvp_s);
    put(json, &format!("gram_hvp_fwd_rev{suffix}_s"), fwd_rev_s);
    Ok((grad_prog, hvp_prog))
}

fn gram_eager(repeats: usize, cpu: &CpuBackend, json: &mut Vec<String>) -> Result<()> {
    let (x, v) = gram_inputs(cpu)?;
    let ad = AdContext::builder().create_graph(false).build();
    let grad_s = time(repeats, || {
        let xv = Tensor::var("x", x.clone())?;
        std::hint::black_box(ad.grad(&gram(&xv)?, &xv)?);
        Ok(())
    })?;
    let hvp_s = time(repeats, || {
        let xv = Tensor::var("x", x.clone())?;
        std::hint::black_box(ad.hvp(&gram(&xv)?, &xv, &v)?);
        Ok(())
    })?;
    eprintln!(
        "tanh_gram eager: grad {:.3} ms, hvp {:.3} ms (ratio {:.2})",
        grad_s * 1e3,
        hvp_s * 1e3,
        hvp_s / grad_s
    );
    put(json, "gram_grad_eager_s", grad_s);
    put(json, "gram_hvp_eager_s", hvp_s);
    Ok(())
}

type Workload = fn(usize, &CpuBackend, &mut Vec<String>) -> Result<()>;

const WORKLOADS: [(&str, Workload); 4] = [
    ("mlp_eager", mlp_eager),
    ("mlp_compiled", mlp_compiled),
    ("gram_eager", gram_eager),
    ("gram_compiled", gram_compiled),
];

fn main() -> Result<()> {
    let names: Vec<&str> = WORKLOADS.iter().map(|(n, _)| *n).collect();
    let (repeats, workload) = bench_support::repeats_and_workload("bench_transforms", &names);
    // The calling thread joins the CPU pool, as `nabla train` and the training benchmarks run: each
    // op then starts its parallel work itself instead of handing it over and sleeping.
    nabla::cpu::init_thread_pool(None)?;
    let cpu = CpuBackend::new();
    let mut json = Vec::new();
    for (name, run) in WORKLOADS {
        if workload == "all" || workload == name {
            run(repeats, &cpu, &mut json)?;
        }
    }
    println!("{{{}}}", json.join(", "));
    Ok(())
}
