//! Traced graphs: record tensor programs (and autodiff transforms) with `TracingBackend`, replay them on
//! the CPU backend with `GraphExecutor`, and compare with eager results.

use nabla_core::{Backend, DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{GraphExecutor, Program, Tensor, TracingBackend, grad, grad_n, hessian, jvp};

fn data(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn cpu_tensor(cpu: &CpuBackend, seed: u64, shape: &[usize]) -> Tensor<CpuBackend> {
    let n = shape.iter().product();
    Tensor::from_vec(data(seed, n), shape.to_vec(), cpu).unwrap()
}

fn assert_close(a: &Tensor<CpuBackend>, b: &Tensor<CpuBackend>, tol: f64) {
    assert_eq!(a.shape(), b.shape());
    assert_eq!(a.dtype(), b.dtype());
    let (x, y) = (
        a.cast(DType::F64).unwrap().to_vec::<f64>().unwrap(),
        b.cast(DType::F64).unwrap().to_vec::<f64>().unwrap(),
    );
    for (i, (p, q)) in x.iter().zip(&y).enumerate() {
        assert!(
            (p - q).abs() <= tol * (1.0 + q.abs()),
            "element {i}: {p} vs {q}"
        );
    }
}

/// Elementwise ops, matmul, reductions, views and the softmax composite; two outputs, one a view.
fn forward<B: Backend>(a: &Tensor<B>, b: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
    let h = (a.matmul(b)? + a.narrow(1, 1, 3)?.exp()?)?; // [4, 3]
    let p = h.tanh()?.softmax(-1)?;
    let s = (p.sum(&[0], true)? * h.mean(&[0, 1], true)?)?; // [1, 3]
    let m = h.max(&[1], false)?; // [4]
    Ok(vec![p.t()?, s, m, h.relu()?.sum_all()?])
}

#[test]
fn forward_program_matches_eager_on_two_runs() {
    let tb = TracingBackend::new();
    let a = tb.placeholder([4, 5], DType::F64).unwrap();
    let b = tb.placeholder([5, 3], DType::F64).unwrap();
    let outs = forward(&a, &b).unwrap();
    let program = tb.program(&outs.iter().collect::<Vec<_>>()).unwrap();
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let mut first = Vec::new();
    for seed in [1, 2] {
        let (x, y) = (
            cpu_tensor(&cpu, seed, &[4, 5]),
            cpu_tensor(&cpu, seed + 10, &[5, 3]),
        );
        let got = exec.run(&program, &[x.clone(), y.clone()]).unwrap();
        let want = forward(&x, &y).unwrap();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_close(g, w, 1e-12);
        }
        assert!(
            !got[0].is_contiguous(),
            "the transposed output stays a view"
        );
        first.push(got[1].to_vec::<f64>().unwrap());
    }
    assert_ne!(first[0], first[1], "each run computes fresh results");
}

fn tanh_gram(x: &Tensor<TracingBackend>) -> Result<Tensor<TracingBackend>> {
    x.matmul(&x.t()?)?.tanh()?.sum_all()
}

fn tanh_gram_cpu(x: &Tensor<CpuBackend>) -> Result<Tensor<CpuBackend>> {
    x.matmul(&x.t()?)?.tanh()?.sum_all()
}

#[test]
fn traced_grad_hessian_and_hvp_match_eager() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([3, 2], DType::F64).unwrap();
    let v = tb.placeholder([3, 2], DType::F64).unwrap();
    let g = grad(tanh_gram)(&x).unwrap();
    let h = hessian(tanh_gram)(&x).unwrap();
    let (_, hv) = jvp(grad(tanh_gram), &x, &v).unwrap();
    let program = tb.program(&[&g, &h, &hv]).unwrap();
    let text = program.to_string();
    println!("{text}");
    for name in [
        "input 0", "input 1", "matmul", "tanh", "square", "mul", "outputs:",
    ] {
        assert!(text.contains(name), "IR lacks {name}:\n{text}");
    }

    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    for seed in [3, 4] {
        let (xc, vc) = (
            cpu_tensor(&cpu, seed, &[3, 2]),
            cpu_tensor(&cpu, seed + 7, &[3, 2]),
        );
        let got = exec.run(&program, &[xc.clone(), vc.clone()]).unwrap();
        assert_close(&got[0], &grad(tanh_gram_cpu)(&xc).unwrap(), 1e-12);
        assert_close(&got[1], &hessian(tanh_gram_cpu)(&xc).unwrap(), 1e-12);
        let (_, hv_eager) = jvp(grad(tanh_gram_cpu), &xc, &vc).unwrap();
        assert_close(&got[2], &hv_eager, 1e-12);
        assert_eq!(got[1].shape(), &[3, 2, 3, 2]);
    }
}

fn mlp_loss<B: Backend>(p: &[Tensor<B>]) -> Result<Tensor<B>> {
    let (x, w1, b1, w2, target) = (&p[0], &p[1], &p[2], &p[3], &p[4]);
    let hidden = (x.matmul(w1)? + b1)?.tanh()?;
    let logits = hidden.matmul(w2)?;
    let logp = logits.log_softmax(-1)?;
    let picked = (logp * target)?.sum_all()?;
    picked.neg()?.mean_all()
}

#[test]
fn traced_mlp_gradients_match_eager() {
    let tb = TracingBackend::new();
    let shapes: [&[usize]; 5] = [&[6, 4], &[4, 5], &[5], &[5, 3], &[6, 3]];
    let ps: Vec<_> = shapes
        .iter()
        .map(|s| tb.placeholder(s.to_vec(), DType::F64).unwrap())
        .collect();
    let gs = grad_n(mlp_loss)(&ps).unwrap();
    let program = tb.program(&gs.iter().collect::<Vec<_>>()).unwrap();
    assert!(program.to_string().contains("log") && program.to_string().contains("exp"));

    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let xs: Vec<_> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| cpu_tensor(&cpu, 20 + i as u64, s))
        .collect();
    let got = exec.run(&program, &xs).unwrap();
    let want = grad_n(mlp_loss)(&xs).unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert_close(g, w, 1e-12);
    }
}

#[test]
fn misc_ops_replay() {
    fn f<B: Backend>(x: &Tensor<B>) -> Result<Vec<Tensor<B>>> {
        let c = Tensor::cat(&[x, &x.neg()?], 0)?; // [6, 4]
        let padded = c.pad(&[(1, 0), (0, 2)], 0.5)?;
        let (vals, idx) = padded.sort(1, true)?;
        let arg = padded.argmax(1, false)?;
        let one = arg.one_hot(6, DType::F64)?;
        let taken = padded.gather(1, &idx)?;
        let k = Tensor::from_vec(vec![1.0f64, 2.0, 3.0], [3], x.backend())?;
        let z = Tensor::<B>::zeros([3], DType::F64, x.backend())?;
        Ok(vec![
            vals.cumsum(1)?,
            one,
            (taken - vals)?,
            (x.sum(&[0], false)?.narrow(0, 0, 3)? * k)?,
            z,
        ])
    }
    let tb = TracingBackend::new();
    let x = tb.placeholder([3, 4], DType::F64).unwrap();
    let outs = f(&x).unwrap();
    let program = tb.program(&outs.iter().collect::<Vec<_>>()).unwrap();
    let text = program.to_string();
    for name in [
        "concat",
        "pad",
        "sort",
        "argmax",
        "one_hot",
        "gather",
        "cumsum",
        "constant f64x3",
        "full 0",
    ] {
        assert!(text.contains(name), "IR lacks {name}:\n{text}");
    }
    let cpu = CpuBackend::new();
    let xc = cpu_tensor(&cpu, 5, &[3, 4]);
    let got = GraphExecutor::new(&cpu)
        .run(&program, std::slice::from_ref(&xc))
        .unwrap();
    for (g, w) in got.iter().zip(&f(&xc).unwrap()) {
        assert_close(g, w, 0.0);
    }
}

#[test]
fn reading_a_traced_value_errors() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2], DType::F32).unwrap();
    let y = x.exp().unwrap();
    let err = y.to_vec::<f32>().unwrap_err().to_string();
    assert!(err.contains("GraphExecutor"), "{err}");
    assert!(y.item::<f32>().is_err());
}

#[test]
fn run_checks_inputs() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3], DType::F32).unwrap();
    let program = tb.program(&[&x.sin().unwrap()]).unwrap();
    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let wrong = Tensor::zeros([3, 2], DType::F32, &cpu).unwrap();
    let err = exec.run(&program, &[wrong]).unwrap_err().to_string();
    assert!(
        err.contains("input 0") && err.contains("[3, 2]") && err.contains("[2, 3]"),
        "{err}"
    );
    let wrong_dtype = Tensor::zeros([2, 3], DType::F64, &cpu).unwrap();
    assert!(exec.run(&program, &[wrong_dtype]).is_err());
    let err = exec.run(&program, &[]).unwrap_err().to_string();
    assert!(err.contains("1 inputs"), "{err}");
    // A transposed view of the right shape is accepted (materialised first).
    let view = Tensor::from_vec(vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0], [3, 2], &cpu)
        .unwrap()
        .t()
        .unwrap();
    let out = exec.run(&program, std::slice::from_ref(&view)).unwrap();
    assert_close(&out[0], &view.sin().unwrap(), 0.0);
}

#[test]
fn dead_code_is_dropped_and_liveness_bounds_peak_memory() {
    let tb = TracingBackend::new();
    let x = tb.placeholder([1000], DType::F64).unwrap();
    let _unused = x.exp().unwrap().sum_all().unwrap();
    let mut y = x.clone();
    for _ in 0..40 {
        y = ((&y * 0.5).unwrap() + 0.25).unwrap().tanh().unwrap();
    }
    let program: Program = tb.program(&[&y]).unwrap();
    assert!(tb.recorded_nodes() > program.nodes().len());
    assert!(!program.to_string().contains("exp"));

    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    assert!(exec.last_run_stats().is_none());
    let xc = cpu_tensor(&cpu, 9, &[1000]);
    let got = exec.run(&program, std::slice::from_ref(&xc)).unwrap();
    let mut want = xc;
    for _ in 0..40 {
        want = ((&want * 0.5).unwrap() + 0.25).unwrap().tanh().unwrap();
    }
    assert_close(&got[0], &want, 0.0);
    let stats = exec.last_run_stats().unwrap();
    let total = program.total_value_bytes();
    assert!(stats.peak_buffer_bytes > 0);
    assert!(
        stats.peak_buffer_bytes * 10 < total,
        "peak {} of total {total}",
        stats.peak_buffer_bytes
    );
    assert!(stats.values_freed > 0);
    assert_eq!(stats.nodes_executed, program.nodes().len());
}

#[test]
fn values_of_another_trace_are_rejected() {
    let (t1, t2) = (TracingBackend::new(), TracingBackend::new());
    let a = t1.placeholder([2], DType::F32).unwrap();
    let b = t2.placeholder([2], DType::F32).unwrap();
    assert!((&a + &b).is_err());
    assert!(t2.program(&[&a]).is_err());
}

#[test]
fn traced_conv_gradients_topk_and_random_match_eager() {
    use nabla_core::{Conv2dParams, Generator};
    fn loss<B: Backend>(p: &[Tensor<B>]) -> Result<Tensor<B>> {
        let params = Conv2dParams {
            stride: (2, 1),
            padding: (1, 1),
            ..Default::default()
        };
        let y = p[0].conv2d(&p[1], &params)?;
        let (top, _) = y.flatten_all()?.topk(5, 0, true)?;
        y.square()?.sum_all()? + top.sum_all()?
    }
    fn noise<B: Backend>(b: &B) -> Result<Tensor<B>> {
        let mut g = Generator::new(7);
        Tensor::rand([4, 3], DType::F64, &mut g, b)
    }
    let tb = TracingBackend::new();
    let ps = [
        tb.placeholder([2, 2, 5, 5], DType::F64).unwrap(),
        tb.placeholder([3, 2, 3, 3], DType::F64).unwrap(),
    ];
    let mut outs = grad_n(loss)(&ps).unwrap();
    outs.push(noise(&tb).unwrap());
    let program = tb.program(&outs.iter().collect::<Vec<_>>()).unwrap();
    let text = program.to_string();
    for name in [
        "conv2d ",
        "conv2d_input_grad",
        "conv2d_weight_grad",
        "topk",
        "random",
    ] {
        assert!(text.contains(name), "IR lacks {name}:\n{text}");
    }
    let cpu = CpuBackend::new();
    let xs = [
        cpu_tensor(&cpu, 30, &[2, 2, 5, 5]),
        cpu_tensor(&cpu, 31, &[3, 2, 3, 3]),
    ];
    let got = GraphExecutor::new(&cpu).run(&program, &xs).unwrap();
    let mut want = grad_n(loss)(&xs).unwrap();
    want.push(noise(&cpu).unwrap());
    for (g, w) in got.iter().zip(&want) {
        assert_close(g, w, 1e-12);
    }
}
