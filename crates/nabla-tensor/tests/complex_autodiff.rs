//! Complex autodiff checked against JAX, finite differences and the adjoint identity.
//!
//! `tests/fixtures/jax_complex.json` was written by `scripts/gen_jax_complex_fixtures.py` (the script
//! documents the format and the convention: JAX's, where `jvp` multiplies by f'(z) and `vjp` is the
//! transpose of `jvp` under `Re Σ u·v`). For each case the test computes nabla's value, JVP (with the
//! fixture's tangents) and VJP (with the fixture's cotangent) and compares them with JAX; it checks the
//! VJPs against central differences (real and imaginary parts perturbed separately, complex128) and the
//! JVPs against the VJPs through `Re Σ u·(J v) = Re Σ (Jᵀu)·v`. `grad` of real losses of complex inputs
//! is compared with `jax.grad`. A fixture case without a closure here, or a closure without a case,
//! fails the test.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    GradCheckOptions, Tensor, TracingBackend, check_gradients, check_second_order, grad, jvp_n,
    value_and_grad_n, vjp_n,
};
use num_complex::Complex64 as C;
use serde_json::Value;
use std::collections::BTreeSet;

type T = Tensor<CpuBackend>;
/// `g(inputs, aux)`: inputs are differentiated, aux are integer constants.
type Expr = fn(&[T], &[T]) -> Result<T>;
/// A function of the differentiated inputs only.
type Loss = fn(&[T]) -> Result<T>;

fn e(name: &'static str, f: Expr) -> (&'static str, Expr) {
    (name, f)
}

/// The nabla counterpart of every fixture case (see `scripts/gen_jax_complex_fixtures.py`).
fn expressions() -> Vec<(&'static str, Expr)> {
    vec![
        e("add", |x, _| x[0].add(&x[1])),
        e("sub", |x, _| x[0].sub(&x[1])),
        e("mul", |x, _| x[0].mul(&x[1])),
        e("div", |x, _| x[0].div(&x[1])),
        e("neg", |x, _| x[0].neg()),
        e("exp", |x, _| x[0].exp()),
        e("log", |x, _| x[0].log()),
        e("sin", |x, _| x[0].sin()),
        e("cos", |x, _| x[0].cos()),
        e("tan", |x, _| x[0].tan()),
        e("sinh", |x, _| x[0].sinh()),
        e("cosh", |x, _| x[0].cosh()),
        e("tanh", |x, _| x[0].tanh()),
        e("sqrt", |x, _| x[0].sqrt()),
        e("rsqrt", |x, _| x[0].rsqrt()),
        e("recip", |x, _| x[0].recip()),
        e("square", |x, _| x[0].square()),
        e("pow", |x, _| x[0].pow(&x[1])),
        e("pow_int", |x, _| x[0].pow(3.0)),
        e("conj", |x, _| x[0].conj()),
        e("real", |x, _| x[0].real()),
        e("imag", |x, _| x[0].imag()),
        e("abs", |x, _| x[0].abs()),
        e("angle", |x, _| x[0].angle()),
        e("angle_real", |x, _| x[0].angle()),
        e("complex", |x, _| T::complex(&x[0], &x[1])),
        e("polar", |x, _| T::polar(&x[0], &x[1])),
        e("abs2_then_log", |x, _| {
            let w = x[0].abs()?.square()?.add(1.0)?.log()?;
            w.cast(DType::C128)?.mul(&x[0])
        }),
        e("cast_real_to_complex", |x, _| x[0].cast(DType::C128)),
        e("cast_complex_to_real", |x, _| x[0].cast(DType::F64)),
        e("cast_c128_to_c64", |x, _| x[0].cast(DType::C64)),
        e("sum", |x, _| x[0].sum(&[1], false)),
        e("sum_all", |x, _| x[0].sum_all()),
        e("prod", |x, _| x[0].prod(&[0], false)),
        e("mean", |x, _| x[0].mean(&[0], false)),
        e("cumsum", |x, _| x[0].cumsum(1)),
        e("matmul", |x, _| x[0].matmul(&x[1])),
        e("batched_matmul", |x, _| x[0].matmul(&x[1])),
        e("matmul_transposed", |x, _| x[0].t()?.matmul(&x[1])),
        e("reshape", |x, _| x[0].reshape([3, 2])),
        e("permute", |x, _| x[0].permute(&[2, 0, 1])),
        e("broadcast", |x, _| x[0].broadcast_to([2, 3])),
        e("slice", |x, _| x[0].slice(1, Some(1), None, 2)),
        e("flip", |x, _| x[0].flip(&[1])),
        e("pad", |x, _| x[0].pad(&[(1, 0), (0, 2)], 0.0)),
        e("concat", |x, _| T::cat(&[&x[0], &x[1]], 1)),
        e("where", |x, a| a[0].ne(0)?.where_(&x[0], &x[1])),
        e("gather", |x, a| x[0].gather(1, &a[0])),
        e("index_select", |x, a| x[0].index_select(0, &a[0])),
        e("scatter_add", |x, a| x[0].scatter_add(0, &a[0], &x[1])),
        e("mul_c64", |x, _| x[0].mul(&x[1])),
        e("exp_c64", |x, _| x[0].exp()),
        e("abs_c64", |x, _| x[0].abs()),
        e("matmul_c64", |x, _| x[0].matmul(&x[1])),
        e("cast_f32_to_c64", |x, _| x[0].cast(DType::C64)),
    ]
}

/// The nabla counterpart of every real loss in the fixture's `grads`.
fn losses() -> Vec<(&'static str, Loss)> {
    vec![
        ("abs2", |x| x[0].abs()?.square()?.sum_all()),
        ("abs2_scalar", |x| x[0].abs()?.square()),
        ("re_z_conj_w", |x| x[0].mul(x[1].conj()?)?.sum_all()?.real()),
        ("matmul_loss", |x| {
            x[0].matmul(&x[1])?.sub(&x[2])?.abs()?.square()?.sum_all()
        }),
        ("angle_abs_loss", |x| {
            let a = x[0].angle()?.mul(x[0].abs()?)?;
            a.add(x[0].exp()?.imag()?)?.sum_all()
        }),
    ]
}

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/jax_complex.json"
    );
    let text = std::fs::read_to_string(path).expect("fixture present");
    serde_json::from_str(&text).expect("fixture is JSON")
}

fn number(v: &Value) -> f64 {
    v.as_f64().expect("a number")
}

/// Decodes one fixture array (complex entries are `[re, im]` pairs).
fn array(v: &Value, cpu: &CpuBackend) -> T {
    let name = v["dtype"].as_str().expect("dtype");
    let dtype = DType::from_name(name).expect("known dtype");
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect();
    let data = v["data"].as_array().expect("data");
    let t = if dtype.is_complex() {
        let values: Vec<C> = data
            .iter()
            .map(|p| C::new(number(&p[0]), number(&p[1])))
            .collect();
        T::from_vec(values, shape, cpu)
    } else if dtype.is_float() {
        T::from_vec(data.iter().map(number).collect::<Vec<f64>>(), shape, cpu)
    } else {
        let values = data.iter().map(|d| d.as_i64().expect("int")).collect();
        T::from_vec::<i64>(values, shape, cpu)
    };
    t.and_then(|t| t.cast(dtype)).expect("fixture array")
}

fn arrays(v: &Value, cpu: &CpuBackend) -> Vec<T> {
    v.as_array()
        .expect("a list of arrays")
        .iter()
        .map(|a| array(a, cpu))
        .collect()
}

fn values(t: &T) -> Vec<C> {
    t.detach().cast(DType::C128).unwrap().to_vec::<C>().unwrap()
}

/// Relative tolerance for a reference of `dtype`.
fn tolerance(dtype: DType) -> f64 {
    if matches!(dtype, DType::C64 | DType::F32) {
        2e-5
    } else {
        1e-10
    }
}

/// `got` matches `want` in dtype, shape and values; an entry's error is measured against
/// `max(|want|, 1e-2 · max |want|)`, so that entries that cancel to nearly zero are judged at the scale
/// of their array.
fn assert_close(got: &T, want: &T, what: &str) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (values(got), values(want));
    let scale = w.iter().map(|v| v.norm()).fold(0.0, f64::max);
    let tol = tolerance(want.dtype());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        let denom = b.norm().max(1e-2 * scale).max(1e-300);
        assert!(
            (a - b).norm() <= tol * denom,
            "{what}: element {i}: nabla {a}, JAX {b} (rel error {:e})",
            (a - b).norm() / denom
        );
    }
}

/// `Re Σ a·b` over matching elements.
fn pairing(a: &T, b: &T) -> f64 {
    values(a)
        .iter()
        .zip(values(b))
        .map(|(x, y)| (x * y).re)
        .sum()
}

struct Case {
    name: String,
    inputs: Vec<T>,
    aux: Vec<T>,
    tangents: Vec<T>,
    output: T,
    jvp: T,
    cotangent: T,
    vjp: Vec<T>,
}

fn cases(cpu: &CpuBackend) -> Vec<Case> {
    fixture()["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| Case {
            name: c["name"].as_str().expect("name").to_string(),
            inputs: arrays(&c["inputs"], cpu),
            aux: arrays(&c["aux"], cpu),
            tangents: arrays(&c["tangents"], cpu),
            output: array(&c["output"], cpu),
            jvp: array(&c["jvp"], cpu),
            cotangent: array(&c["cotangent"], cpu),
            vjp: arrays(&c["vjp"], cpu),
        })
        .collect()
}

fn expression(name: &str) -> Expr {
    expressions()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no closure for fixture case {name}"))
        .1
}

#[test]
fn every_case_has_a_closure_and_every_closure_a_case() {
    let cpu = CpuBackend::new();
    let in_fixture: BTreeSet<String> = cases(&cpu).into_iter().map(|c| c.name).collect();
    let here: BTreeSet<String> = expressions().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(in_fixture, here);
    let grads: BTreeSet<String> = fixture()["grads"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    let here: BTreeSet<String> = losses().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(grads, here);
}

#[test]
fn values_jvps_and_vjps_match_jax() {
    let cpu = CpuBackend::new();
    let all = cases(&cpu);
    for c in &all {
        let f = expression(&c.name);
        let g = |xs: &[T]| f(xs, &c.aux);
        let name = &c.name;
        let (y, t) = jvp_n(g, &c.inputs, &c.tangents).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_close(&y, &c.output, &format!("{name}: value"));
        assert_close(&t, &c.jvp, &format!("{name}: jvp"));
        let (_, vs) = vjp_n(g, &c.inputs, &c.cotangent).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, (v, want)) in vs.iter().zip(&c.vjp).enumerate() {
            assert_close(v, want, &format!("{name}: vjp of input {i}"));
        }
    }
    assert_eq!(all.len(), 55);
}

#[test]
fn jvps_and_vjps_satisfy_the_adjoint_identity() {
    let cpu = CpuBackend::new();
    for c in cases(&cpu) {
        let f = expression(&c.name);
        let g = |xs: &[T]| f(xs, &c.aux);
        let (_, jv) = jvp_n(g, &c.inputs, &c.tangents).unwrap();
        let (_, vs) = vjp_n(g, &c.inputs, &c.cotangent).unwrap();
        let lhs = pairing(&c.cotangent, &jv);
        let rhs: f64 = vs.iter().zip(&c.tangents).map(|(v, t)| pairing(v, t)).sum();
        let tol = 1e3 * tolerance(c.output.dtype()) * (1.0 + lhs.abs());
        assert!(
            (lhs - rhs).abs() <= tol,
            "{}: Re Σ u·(J v) = {lhs} but Re Σ (Jᵀu)·v = {rhs}",
            c.name
        );
    }
}

#[test]
fn vjps_match_central_differences_in_complex128() {
    let cpu = CpuBackend::new();
    let mut checked = 0;
    for c in cases(&cpu) {
        let double = |d: DType| matches!(d, DType::C128 | DType::F64);
        if !(c.inputs.iter().all(|x| double(x.dtype())) && double(c.output.dtype())) {
            continue;
        }
        let f = expression(&c.name);
        let report = check_gradients(
            |xs: &[T]| f(xs, &c.aux),
            &c.inputs,
            &GradCheckOptions::default(),
        )
        .unwrap();
        report
            .assert_close(1e-6, 1e-5)
            .unwrap_or_else(|e| panic!("{}: {e}", c.name));
        checked += report.checked();
    }
    assert!(checked > 500, "only {checked} coordinates checked");
}

#[test]
fn grads_of_real_losses_match_jax() {
    let cpu = CpuBackend::new();
    for g in fixture()["grads"].as_array().unwrap() {
        let name = g["name"].as_str().unwrap();
        let loss = losses().into_iter().find(|(n, _)| *n == name).unwrap().1;
        let inputs = arrays(&g["inputs"], &cpu);
        let (value, grads) = value_and_grad_n(loss)(&inputs).unwrap();
        let want = number(&g["value"]);
        let got = value.item::<f64>().unwrap();
        assert!(
            (got - want).abs() <= 1e-10 * want.abs().max(1.0),
            "{name}: {got} vs {want}"
        );
        for (i, (got, want)) in grads.iter().zip(arrays(&g["grads"], &cpu)).enumerate() {
            assert_close(got, &want, &format!("{name}: grad of input {i}"));
        }
    }
}

#[test]
fn grad_of_abs_squared_is_the_conjugate_as_in_jax() {
    let cpu = CpuBackend::new();
    let z = T::from_vec(vec![C::new(3.0, 4.0)], [], &cpu).unwrap();
    // jax.grad(lambda z: abs(z)**2)(3+4j) == 6-8j
    let g = grad(|z: &T| z.abs()?.square())(&z).unwrap();
    assert_eq!(g.item::<C>().unwrap(), C::new(6.0, -8.0));
    // The same through backward on a variable, and the derivative of abs at 0 is 0 as in JAX.
    let v = T::var("z", T::from_vec(vec![C::new(0.0, 0.0)], [1], &cpu).unwrap()).unwrap();
    let grads = v.abs().unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(
        grads.by_name("z").unwrap().to_vec::<C>().unwrap(),
        vec![C::new(0.0, 0.0)]
    );
}

#[test]
fn second_derivatives_match_finite_differences() {
    let cpu = CpuBackend::new();
    let z = T::from_vec(
        vec![C::new(0.3, -0.7), C::new(-1.1, 0.4), C::new(0.8, 0.9)],
        [3],
        &cpu,
    )
    .unwrap();
    let w = T::from_vec(
        vec![C::new(0.5, 0.2), C::new(-0.3, 1.0), C::new(1.2, -0.4)],
        [3],
        &cpu,
    )
    .unwrap();
    let fs: [Loss; 4] = [
        |v| v[0].exp()?.mul(v[0].conj()?),
        |v| v[0].sin()?.abs(),
        |v| v[0].mul(&v[1])?.angle()?.mul(v[1].real()?),
        |v| v[0].matmul(&v[1].reshape([3, 1])?)?.square()?.imag(),
    ];
    for (k, f) in fs.iter().enumerate() {
        check_second_order(f, &[z.clone(), w.clone()], &GradCheckOptions::default())
            .unwrap()
            .assert_close(1e-5, 1e-4)
            .unwrap_or_else(|e| panic!("function {k}: {e}"));
    }
}

#[test]
fn complex_outputs_and_ordering_ops_give_clear_errors() {
    let cpu = CpuBackend::new();
    let data = T::from_vec(vec![C::new(1.0, 2.0), C::new(-0.5, 0.25)], [2], &cpu).unwrap();
    let z = T::var("z", data).unwrap();
    // A complex output is not a loss (JAX: grad needs holomorphic=True).
    let err = z
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .backward()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("complex128") && err.contains("real scalar loss"),
        "{err}"
    );
    let err = grad(|z: &T| z.sum_all())(&z.detach())
        .unwrap_err()
        .to_string();
    assert!(err.contains("complex128"), "{err}");
    // With an explicit cotangent of ones, backward gives f'(z) of a holomorphic f.
    let ones = z.detach().sum_all().unwrap().ones_like().unwrap();
    let g = z
        .square()
        .unwrap()
        .sum_all()
        .unwrap()
        .backward_with(&ones)
        .unwrap();
    assert_eq!(
        g.by_name("z").unwrap().to_vec::<C>().unwrap(),
        vec![C::new(2.0, 4.0), C::new(-1.0, 0.5)]
    );
    // Ops that order values or are not differentiable on complex numbers fail, naming the op.
    let w = z.detach().conj().unwrap();
    let loss = |t: Result<T>| t.and_then(|t| t.abs()?.sum_all()?.backward());
    for (op, result) in [
        ("maximum", loss(z.maximum(&w))),
        ("sign", loss(z.sign())),
        ("max", loss(z.max(&[0], false))),
    ] {
        let err = result.expect_err(op).to_string();
        assert!(
            err.contains(op) && err.contains("complex128"),
            "{op}: {err}"
        );
    }
    assert!(z.lt(&w).is_err() && z.relu().is_err() && z.sort(0, false).is_err());
    // Integers still cannot be variables; the message lists the dtypes that can.
    let err = T::var("n", T::from_vec(vec![1i64], [1], &cpu).unwrap()).unwrap_err();
    assert!(err.to_string().contains("complex64"), "{err}");
}

#[test]
fn new_ops_follow_numpy() {
    let cpu = CpuBackend::new();
    let pi = std::f64::consts::PI;
    let x = T::from_vec(vec![1.0f64, -1.0, 0.0, -0.0], [4], &cpu).unwrap();
    assert_eq!(
        x.angle().unwrap().to_vec::<f64>().unwrap(),
        vec![0.0, pi, 0.0, pi]
    );
    let z = T::from_vec(vec![C::new(1.0, 1.0), C::new(0.0, -2.0)], [2], &cpu).unwrap();
    let a = z.angle().unwrap().to_vec::<f64>().unwrap();
    assert_eq!(a, vec![pi / 4.0, -pi / 2.0]);
    let back = T::polar(&z.abs().unwrap(), &z.angle().unwrap()).unwrap();
    for (p, q) in values(&back).iter().zip(values(&z)) {
        assert!((p - q).norm() < 1e-15);
    }
    let re = T::from_vec(vec![1.0f32, 2.0], [2], &cpu).unwrap();
    let im = T::from_vec(vec![3.0f32, -4.0], [2], &cpu).unwrap();
    let c = T::complex(&re, &im).unwrap();
    assert_eq!(c.dtype(), DType::C64);
    assert_eq!(c.real().unwrap().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
    assert_eq!(c.imag().unwrap().to_vec::<f32>().unwrap(), vec![3.0, -4.0]);
    assert!(T::complex(&re, &im.cast(DType::F64).unwrap()).is_err());
    assert!(T::complex(&c, &c).is_err());
    assert!(T::from_vec(vec![1i64], [1], &cpu).unwrap().angle().is_err());
}

#[test]
fn traced_complex_gradients_match_eager() {
    let tb = TracingBackend::new();
    let z = tb.placeholder([2, 2], DType::C128).unwrap();
    assert!(z.requires_grad(), "a complex placeholder is a variable");
    let loss = |z: &Tensor<TracingBackend>| z.matmul(&z.conj()?)?.abs()?.square()?.sum_all();
    let g = grad(loss)(&z).unwrap();
    let program = tb.program(&[&g]).unwrap();
    let cpu = CpuBackend::new();
    let data = vec![
        C::new(0.5, -1.0),
        C::new(1.5, 0.25),
        C::new(-0.75, 0.5),
        C::new(0.1, 2.0),
    ];
    let zc = T::from_vec(data, [2, 2], &cpu).unwrap();
    let got = nabla_tensor::GraphExecutor::new(&cpu)
        .run(&program, std::slice::from_ref(&zc))
        .unwrap();
    let eager_loss = |z: &T| z.matmul(&z.conj()?)?.abs()?.square()?.sum_all();
    let want = grad(eager_loss)(&zc).unwrap();
    assert_eq!(got[0].dtype(), DType::C128);
    for (a, b) in values(&got[0]).iter().zip(values(&want)) {
        assert!((a - b).norm() <= 1e-12 * b.norm().max(1.0), "{a} vs {b}");
    }
}
