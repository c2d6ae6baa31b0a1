//! Custom derivative rules (`CustomFn`) and checkpointing: the classic uses against JAX's
//! `jax.custom_vjp` (fixture from `scripts/gen_jax_custom_rules.py`) and finite differences, in every
//! mode, to second order, traced, and checkpointed blocks against plain ones bit for bit with their
//! peak memory.

use nabla_core::{DType, MemoryTracked, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    AdContext, CustomFn, GraphExecutor, Tensor, TracingBackend, check_gradients, checkpoint, grad,
    hessian, jvp,
};
use serde_json::Value;

type T = Tensor<CpuBackend>;

const FIXTURE: &str = include_str!("fixtures/jax_custom_rules.json");

fn case(name: &str) -> Value {
    let doc: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    doc["cases"][name].clone()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("an array")
        .iter()
        .map(|x| x.as_f64().expect("a number"))
        .collect()
}

fn tensor(values: &[f64]) -> Result<T> {
    Tensor::from_vec(values.to_vec(), [values.len()], &CpuBackend::new())
}

fn assert_close(got: &T, want: &[f64], tol: f64, what: &str) -> Result<()> {
    let got = got.to_vec::<f64>()?;
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
    Ok(())
}

/// softplus with the stable derivative sigmoid(x), in both modes, written in differentiable ops.
fn softplus() -> CustomFn<CpuBackend> {
    CustomFn::new("softplus", |x: &[T]| x[0].softplus())
        .reverse(|args, g| Ok(vec![Some(g.mul(&args.inputs[0].sigmoid()?)?)]))
        .forward(|args, t| {
            t[0].as_ref()
                .map(|t| t.mul(&args.inputs[0].sigmoid()?))
                .transpose()
        })
}

#[test]
fn a_stable_softplus_matches_jax_where_the_naive_gradient_is_nan() -> Result<()> {
    let c = case("softplus");
    let x = tensor(&floats(&c["x"]))?;
    let want = floats(&c["grad"]);
    let sp = softplus();
    let g = grad(|x: &T| sp.apply(&[x])?.sum_all())(&x)?;
    assert_close(&g, &want, 1e-15, "reverse")?;
    // The naive formula's gradient is NaN at 1000 (inf / inf): the rule is what fixes it.
    let naive = grad(|x: &T| x.exp()?.log1p()?.sum_all())(&x)?;
    assert!(naive.to_vec::<f64>()?[4].is_nan());
    // Forward mode with the forward rule, one basis direction at a time.
    for i in 0..want.len() {
        let mut e = vec![0.0; want.len()];
        e[i] = 1.0;
        let (_, t) = jvp(|x: &T| sp.apply(&[x]), &x, &tensor(&e)?)?;
        assert!((t.to_vec::<f64>()?[i] - want[i]).abs() < 1e-15);
    }
    // Second order: the rules are differentiable, so the Hessian is diag(s (1 - s)).
    let small = tensor(&[-1.0, 0.5, 2.0])?;
    let h = hessian(|x: &T| sp.apply(&[x])?.sum_all())(&small)?;
    let h = h.to_vec::<f64>()?;
    for (i, x) in [-1.0f64, 0.5, 2.0].iter().enumerate() {
        let s = 1.0 / (1.0 + (-x).exp());
        assert!((h[i * 3 + i] - s * (1.0 - s)).abs() < 1e-12, "hessian {i}");
    }
    // Finite differences agree where the function is tame.
    let report = check_gradients(
        |xs: &[T]| sp.apply(&[&xs[0]])?.sum_all(),
        &[small],
        &Default::default(),
    )?;
    assert!(report.passed(1e-7, 1e-6), "{report}");
    Ok(())
}

#[test]
fn gradient_clipping_and_straight_through_match_jax() -> Result<()> {
    let c = case("clip_gradient");
    let (lo, hi) = (c["lo"].as_f64().unwrap(), c["hi"].as_f64().unwrap());
    let clip = CustomFn::<CpuBackend>::new("clip_gradient", |x: &[T]| Ok(x[0].clone()))
        .reverse(move |_, g| Ok(vec![Some(g.clamp(lo, hi)?)]));
    let x = tensor(&floats(&c["x"]))?;
    let g = grad(|x: &T| clip.apply(&[&x.pow(3.0)?])?.mul(2.0)?.sum_all())(&x)?;
    assert_close(&g, &floats(&c["grad"]), 1e-15, "clip_gradient")?;

    let c = case("straight_through");
    let ste = CustomFn::<CpuBackend>::new("ste_round", |x: &[T]| x[0].round())
        .reverse(|_, g| Ok(vec![Some(g.clone())]));
    let (x, w) = (tensor(&floats(&c["x"]))?, tensor(&floats(&c["w"]))?);
    let y = ste.apply(&[&x])?;
    assert_close(&y, &floats(&c["value"]), 0.0, "ste value")?;
    let g = grad(|x: &T| ste.apply(&[x])?.mul(&w)?.sum_all())(&x)?;
    assert_close(&g, &floats(&c["grad"]), 0.0, "ste grad")?;
    // No forward rule: forward mode differentiates the body (round), whose derivative is zero.
    let (_, t) = jvp(|x: &T| ste.apply(&[x]), &x, &x.ones_like()?)?;
    assert_eq!(t.to_vec::<f64>()?, vec![0.0; 5]);
    Ok(())
}

/// `z = tanh(a z + 1/2)`, the map whose fixed point the solver finds.
fn t_map(a: &T, z: &T) -> Result<T> {
    a.mul(z)?.add(0.5)?.tanh()
}

#[test]
fn an_implicit_function_rule_solves_the_adjoint_equation() -> Result<()> {
    let c = case("fixed_point");
    let solver = CustomFn::<CpuBackend>::new("fixed_point", |xs: &[T]| {
        let mut z = xs[0].zeros_like()?;
        for _ in 0..200 {
            z = t_map(&xs[0], &z)?;
        }
        Ok(z)
    })
    .reverse(|args, g| {
        // w = g + (dT/dz)^T w by the same iteration, then the gradient (dT/da)^T w.
        let (a, z) = (args.inputs[0].detach(), args.output.detach());
        let ad = AdContext::new();
        let zv = Tensor::var("z", z.clone())?;
        let tz = t_map(&a, &zv)?;
        let mut w = g.detach();
        for _ in 0..200 {
            w = g.add(&ad.vjp(&tz, &zv, &w)?)?;
        }
        let av = Tensor::var("a", a)?;
        Ok(vec![Some(ad.vjp(&t_map(&av, &z)?, &av, &w)?)])
    });
    let a = tensor(&floats(&c["a"]))?;
    assert_close(
        &solver.apply(&[&a])?,
        &floats(&c["value"]),
        1e-12,
        "fixed point",
    )?;
    let g = grad(|a: &T| solver.apply(&[a])?.square()?.sum_all())(&a)?;
    assert_close(&g, &floats(&c["grad"]), 1e-12, "implicit gradient")?;
    Ok(())
}

#[test]
fn custom_rules_run_in_traced_programs() -> Result<()> {
    let tb = TracingBackend::new();
    let sp = CustomFn::<TracingBackend>::new("softplus", |x| x[0].softplus())
        .reverse(|args, g| Ok(vec![Some(g.mul(&args.inputs[0].sigmoid()?)?)]));
    let x = tb.placeholder([3], DType::F64)?;
    let g = AdContext::new().grad(&sp.apply(&[&x])?.sum_all()?, &x)?;
    let program = tb.program(&[&g])?;
    let cpu = CpuBackend::new();
    let out = GraphExecutor::new(&cpu).run(&program, &[tensor(&[0.0, 1000.0, -2.0])?])?;
    let s = 1.0 / (1.0 + 2.0f64.exp());
    assert_close(&out[0], &[0.5, 1.0, s], 1e-15, "traced")
}

#[test]
fn a_rule_with_the_wrong_number_of_gradients_is_an_error_naming_the_function() -> Result<()> {
    let bad = CustomFn::<CpuBackend>::new("two_inputs", |x: &[T]| x[0].add(&x[1]))
        .reverse(|_, g| Ok(vec![Some(g.clone())]));
    let (a, b) = (tensor(&[1.0])?, tensor(&[2.0])?);
    let av = Tensor::var("a", a)?;
    let err = bad.apply(&[&av, &b])?.sum_all()?.grad(&av).unwrap_err();
    assert!(err.to_string().contains("two_inputs"), "{err}");
    // A gradient or tangent of the wrong shape is an error too, not a silent broadcast.
    let scalar_grad = CustomFn::<CpuBackend>::new("scalar_grad", |x: &[T]| x[0].exp())
        .reverse(|_, g| Ok(vec![Some(g.sum_all()?)]))
        .forward(|_, t| t[0].as_ref().map(|t| t.sum_all()).transpose());
    let x = Tensor::var("x", tensor(&[1.0, 2.0])?)?;
    let err = scalar_grad.apply(&[&x])?.sum_all()?.grad(&x).unwrap_err();
    assert!(
        err.to_string()
            .contains("scalar_grad: the reverse rule returned shape"),
        "{err}"
    );
    let err = jvp(|x: &T| scalar_grad.apply(&[x]), &x.detach(), &x.detach()).unwrap_err();
    assert!(
        err.to_string()
            .contains("scalar_grad: the forward rule returned shape"),
        "{err}"
    );
    Ok(())
}

/// A deep MLP of `depth` blocks `tanh(tanh(tanh(h W_up) W_mid) W_down)`, each with two hidden layers
/// four times wider than its input, so that its saved activations dominate.
struct Mlp {
    blocks: Vec<[T; 3]>,
}

fn weights(rows: usize, cols: usize, seed: usize) -> Result<T> {
    let w: Vec<f64> = (0..rows * cols)
        .map(|k| (((k * 31 + seed * 7) % 17) as f64 - 8.0) / (8.0 * rows as f64).sqrt())
        .collect();
    Tensor::var(
        format!("w{seed}"),
        Tensor::from_vec(w, [rows, cols], &CpuBackend::new())?,
    )
}

impl Mlp {
    fn new(width: usize, depth: usize) -> Result<Self> {
        let blocks = (0..depth)
            .map(|i| {
                Ok([
                    weights(width, 4 * width, 3 * i)?,
                    weights(4 * width, 4 * width, 3 * i + 1)?,
                    weights(4 * width, width, 3 * i + 2)?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Mlp { blocks })
    }

    fn loss<B: nabla_core::Backend>(
        &self,
        x: &Tensor<B>,
        params: &[[Tensor<B>; 3]],
        checkpointed: bool,
    ) -> Result<Tensor<B>> {
        let mut h = x.clone();
        for [up, mid, down] in params {
            let [w1, w2, w3] = [up.clone(), mid.clone(), down.clone()];
            let block = move |xs: &[Tensor<B>]| {
                xs[0]
                    .matmul(&w1)?
                    .tanh()?
                    .matmul(&w2)?
                    .tanh()?
                    .matmul(&w3)?
                    .tanh()
            };
            h = if checkpointed {
                checkpoint(&[&h], &[up, mid, down], block)?
            } else {
                block(std::slice::from_ref(&h))?
            };
        }
        h.square()?.sum_all()
    }
}

#[test]
fn checkpointed_blocks_give_the_same_gradients_bit_for_bit() -> Result<()> {
    let mlp = Mlp::new(8, 16)?;
    let x = Tensor::from_vec(
        (0..32).map(|i| i as f64 / 32.0).collect(),
        [4, 8],
        &CpuBackend::new(),
    )?;
    let flat: Vec<&T> = mlp.blocks.iter().flatten().collect();
    let ad = AdContext::new();
    let plain = ad.grads(&mlp.loss(&x, &mlp.blocks, false)?, &flat)?;
    let ckpt = ad.grads(&mlp.loss(&x, &mlp.blocks, true)?, &flat)?;
    for (p, c) in plain.iter().zip(&ckpt) {
        assert_eq!(p.to_vec::<f64>()?, c.to_vec::<f64>()?);
    }
    // Forward mode and second order see through checkpoints too.
    let (w0, v) = (&mlp.blocks[0][0], mlp.blocks[0][0].ones_like()?);
    let hv_plain = ad.hvp(&mlp.loss(&x, &mlp.blocks, false)?, w0, &v)?;
    let hv_ckpt = ad.hvp(&mlp.loss(&x, &mlp.blocks, true)?, w0, &v)?;
    assert_close(&hv_ckpt, &hv_plain.to_vec::<f64>()?, 1e-12, "hvp")
}

#[test]
fn checkpointing_cuts_the_peak_memory_of_a_deep_mlp() -> Result<()> {
    let (width, depth, batch) = (32, 16, 2048);
    let peak = |checkpointed: bool| -> Result<usize> {
        let mem = MemoryTracked::new(CpuBackend::new());
        let mlp = Mlp::new(width, depth)?;
        let params = mlp
            .blocks
            .iter()
            .enumerate()
            .map(|(i, block)| {
                let to_tracked = |j: usize| -> Result<Tensor<MemoryTracked<CpuBackend>>> {
                    let (t, host) = (&block[j], block[j].to_host()?);
                    let value = Tensor::from_host(host, t.shape().to_vec(), &mem)?;
                    Tensor::var(format!("w{i}.{j}"), value)
                };
                Ok([to_tracked(0)?, to_tracked(1)?, to_tracked(2)?])
            })
            .collect::<Result<Vec<_>>>()?;
        let x = Tensor::ones([batch, width], DType::F64, &mem)?;
        mem.reset_peak();
        let loss = mlp.loss(&x, &params, checkpointed)?;
        let flat: Vec<&Tensor<MemoryTracked<CpuBackend>>> = params.iter().flatten().collect();
        let grads = loss.backward()?;
        assert!(flat.iter().all(|p| grads.get(p).is_some()));
        drop((loss, grads));
        Ok(mem.stats().peak_bytes)
    };
    let (plain, ckpt) = (peak(false)?, peak(true)?);
    // Checkpointing keeps each block's input instead of its five activations' worth.
    assert!(
        ckpt * 10 <= plain * 4,
        "checkpointed peak {ckpt} vs plain {plain}"
    );
    Ok(())
}

#[test]
fn re_runs_repeat_the_random_draws_of_the_first_run_even_nested() -> Result<()> {
    use nabla_core::Generator;
    use std::sync::{Arc, Mutex};
    let rng = Arc::new(Mutex::new(Generator::new(3)));
    let noisy = {
        let rng = rng.clone();
        move |x: &T| -> Result<T> {
            let mut g = rng.lock().expect("generator");
            let mask = Tensor::bernoulli(x.shape().to_vec(), 0.5, DType::F64, &mut g, x.backend())?;
            x.mul(&mask)?.tanh()
        }
    };
    let x = Tensor::var("x", tensor(&[0.3, -1.2, 0.7, 2.0])?)?;
    let outer = {
        let noisy = noisy.clone();
        move |xs: &[T]| {
            let inner = noisy.clone();
            let h = checkpoint(&[&xs[0]], &[], move |ys: &[T]| inner(&ys[0]))?;
            noisy(&h.mul(2.0)?)
        }
    };
    // The plain run from the same generator state gives the reference gradient.
    let start = rng.lock().expect("generator").clone();
    let plain = outer(std::slice::from_ref(&x))?.sum_all()?.grad(&x)?;
    let after_plain = rng.lock().expect("generator").clone();
    *rng.lock().expect("generator") = start;
    let y = checkpoint(&[&x], &[], outer)?.sum_all()?;
    assert_eq!(y.grad(&x)?.to_vec::<f64>()?, plain.to_vec::<f64>()?);
    // Backward re-ran both bodies without advancing the generator.
    assert_eq!(*rng.lock().expect("generator"), after_plain);
    Ok(())
}

#[test]
fn a_rerun_that_draws_differently_is_an_error() -> Result<()> {
    use nabla_core::Generator;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    let draw = Arc::new(AtomicBool::new(false));
    let body = {
        let draw = draw.clone();
        move |xs: &[T]| {
            if draw.load(Ordering::Relaxed) {
                let mut g = Generator::new(1);
                let noise =
                    Tensor::rand(xs[0].shape().to_vec(), DType::F64, &mut g, xs[0].backend())?;
                xs[0].add(&noise)?.exp()
            } else {
                xs[0].exp()
            }
        }
    };
    let x = Tensor::var("x", tensor(&[0.5, 1.0])?)?;
    let y = checkpoint(&[&x], &[], body.clone())?.sum_all()?;
    draw.store(true, Ordering::Relaxed);
    let err = y.grad(&x).unwrap_err().to_string();
    assert!(err.contains("more numbers than in its first run"), "{err}");
    let y = checkpoint(&[&x], &[], body)?.sum_all()?;
    draw.store(false, Ordering::Relaxed);
    let err = y.grad(&x).unwrap_err().to_string();
    assert!(err.contains("fewer"), "{err}");
    Ok(())
}
