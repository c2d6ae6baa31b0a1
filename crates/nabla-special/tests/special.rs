//! The special functions against SciPy's values and JAX's first and second derivatives (fixture from
//! scripts/gen_special_fixtures.py), central differences, f32, traced programs, `vmap`, the values at
//! poles and edges, and errors.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    GradCheckOptions, GraphExecutor, Tensor, TracedTensor, TracingBackend, check_gradients,
    check_second_order, grad, vmap,
};
use serde_json::Value;

type T = Tensor<CpuBackend>;
type UnaryFn = fn(&T) -> Result<T>;

const FIXTURE: &str = include_str!("fixtures/special.json");

fn unary(name: &str) -> UnaryFn {
    match name {
        "lgamma" => nabla_special::lgamma,
        "digamma" => nabla_special::digamma,
        "polygamma1" => |x| nabla_special::polygamma(1, x),
        "polygamma2" => |x| nabla_special::polygamma(2, x),
        "polygamma3" => |x| nabla_special::polygamma(3, x),
        "erfinv" => nabla_special::erfinv,
        "i0" => nabla_special::i0,
        "i0e" => nabla_special::i0e,
        "i1" => nabla_special::i1,
        "i1e" => nabla_special::i1e,
        "logit" => |x| nabla_special::logit(x, None),
        "log_sigmoid" => nabla_special::log_sigmoid,
        "erfc" => nabla_special::erfc,
        "ndtr" => nabla_special::ndtr,
        "ndtri" => nabla_special::ndtri,
        "log_ndtr" => nabla_special::log_ndtr,
        other => panic!("no function for fixture case {other}"),
    }
}

fn floats(v: &Value) -> Vec<Option<f64>> {
    v.as_array().unwrap().iter().map(Value::as_f64).collect()
}

/// Within `tol` relative, or 1e-20 absolute (JAX's second derivative of log_sigmoid at −50 is −0, the
/// exact one −e⁻⁵⁰).
fn close(got: f64, want: f64, tol: f64, what: &str) {
    assert!(
        (got - want).abs() <= tol * want.abs() + 1e-20 || got == want,
        "{what}: {got} vs {want} (relative error {:e})",
        ((got - want) / want).abs()
    );
}

/// `f` at each point, and its first and second derivatives there (reverse over reverse).
fn evaluate(f: UnaryFn, xs: &[f64]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let cpu = CpuBackend::new();
    let x = Tensor::var(
        "x",
        Tensor::from_vec(xs.to_vec(), [xs.len()], &cpu).unwrap(),
    )
    .unwrap();
    let y = f(&x).unwrap();
    let d1 = y.sum_all().unwrap().grad(&x).unwrap();
    let d2 = nabla_tensor::AdContext::new()
        .grad(&d1.sum_all().unwrap(), &x)
        .unwrap();
    let v = |t: &T| t.to_vec::<f64>().unwrap();
    (v(&y), v(&d1), v(&d2))
}

#[test]
fn values_match_scipy_and_derivatives_match_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let mut checked = 0;
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if case.get("y").is_some() {
            continue; // binary functions: their own test
        }
        let xs: Vec<f64> = floats(&case["x"]).into_iter().map(Option::unwrap).collect();
        let (values, d1, d2) = evaluate(unary(name), &xs);
        for (i, want) in floats(&case["value"]).into_iter().enumerate() {
            close(
                values[i],
                want.unwrap(),
                2e-14,
                &format!("{name}({})", xs[i]),
            );
        }
        // erfinv's derivatives are e^{y²}-amplified: in the far tails JAX's own erfinv (a polynomial
        // fit, about 1e-13 relative there) limits the agreement.
        let tol = if name == "erfinv" { 1e-10 } else { 1e-12 };
        // Second derivatives cancel (e.g. i0e'' = i1e' − sign(x) i0e' is small where both are not).
        for (order, got, want, tol) in [(1, &d1, &case["d1"], tol), (2, &d2, &case["d2"], 1e-10)] {
            for (i, want) in floats(want).into_iter().enumerate() {
                if let Some(w) = want {
                    close(
                        got[i],
                        w,
                        tol,
                        &format!("{name} derivative {order} at {}", xs[i]),
                    );
                    checked += 1;
                }
            }
        }
    }
    // Every recorded derivative was compared (JAX gives no finite value at the few poles).
    assert!(checked >= 250, "{checked} derivatives checked");
}

#[test]
fn binary_functions_match_scipy_and_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let cpu = CpuBackend::new();
    for case in fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("y").is_some())
    {
        let name = case["name"].as_str().unwrap();
        let xs: Vec<f64> = floats(&case["x"]).into_iter().map(Option::unwrap).collect();
        let ys: Vec<f64> = floats(&case["y"]).into_iter().map(Option::unwrap).collect();
        let n = xs.len();
        let x = Tensor::var("x", Tensor::from_vec(xs, [n], &cpu).unwrap()).unwrap();
        let y = Tensor::var("y", Tensor::from_vec(ys, [n], &cpu).unwrap()).unwrap();
        let out = match name {
            "xlogy" => nabla_special::xlogy(&x, &y),
            "betaln" => nabla_special::betaln(&x, &y),
            other => panic!("unknown binary case {other}"),
        }
        .unwrap();
        for (i, want) in floats(&case["value"]).into_iter().enumerate() {
            close(
                out.to_vec::<f64>().unwrap()[i],
                want.unwrap(),
                2e-14,
                &format!("{name}[{i}]"),
            );
        }
        let grads = nabla_tensor::AdContext::new()
            .grads(&out.sum_all().unwrap(), &[&x, &y])
            .unwrap();
        for (g, key) in grads.iter().zip(["dx", "dy"]) {
            for (i, want) in floats(&case[key]).into_iter().enumerate() {
                let got = g.to_vec::<f64>().unwrap()[i];
                match want {
                    Some(w) => close(got, w, 1e-12, &format!("{name} {key}[{i}]")),
                    // xlogy at x = y = 0: JAX gives ∂x = log 0 = −∞ and ∂y = 0/0; nabla keeps the
                    // function's flat value there and gives 0 (documented on xlogy).
                    None => assert_eq!(got, 0.0, "{name} {key}[{i}]"),
                }
            }
        }
    }
}

#[test]
fn derivatives_match_central_differences() -> Result<()> {
    let cpu = CpuBackend::new();
    let opts = GradCheckOptions::default();
    let points = |v: Vec<f64>| Tensor::from_vec(v.clone(), [v.len()], &cpu);
    let cases: [(&str, UnaryFn, Vec<f64>); 13] = [
        ("lgamma", nabla_special::lgamma, vec![-2.5, 0.3, 1.7, 12.0]),
        (
            "digamma",
            nabla_special::digamma,
            vec![-0.5, 0.3, 4.0, 25.0],
        ),
        (
            "polygamma 2",
            |x| nabla_special::polygamma(2, x),
            vec![-1.5, 0.7, 3.0],
        ),
        ("erfinv", nabla_special::erfinv, vec![-0.8, 0.0, 0.4, 0.95]),
        // I₀ and I₁ stay small here: central differences of a contraction that holds I₀(21) ≈ 1e8
        // lose five digits to cancellation. The scaled versions cover the asymptotic region.
        ("i0", nabla_special::i0, vec![-3.0, 0.0, 0.5, 4.0]),
        ("i0e", nabla_special::i0e, vec![-25.0, -1.0, 0.5, 19.5]),
        ("i1", nabla_special::i1, vec![-3.0, 0.0, 0.5, 4.0]),
        ("i1e", nabla_special::i1e, vec![-25.0, 0.0, 0.5, 19.5]),
        (
            "log_sigmoid",
            nabla_special::log_sigmoid,
            vec![-30.0, -0.5, 3.0],
        ),
        ("erfc", nabla_special::erfc, vec![-1.5, 0.0, 0.4, 2.0]),
        ("ndtr", nabla_special::ndtr, vec![-3.0, -0.2, 0.0, 1.7]),
        ("ndtri", nabla_special::ndtri, vec![0.05, 0.3, 0.5, 0.9]),
        (
            "log_ndtr",
            nabla_special::log_ndtr,
            vec![-25.0, -3.0, 0.5, 4.0],
        ),
    ];
    for (name, f, xs) in cases {
        let g = |v: &[T]| f(&v[0]);
        check_gradients(g, &[points(xs.clone())?], &opts)?
            .assert_close(1e-7, 1e-6)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        check_second_order(g, &[points(xs)?], &opts)?
            .assert_close(1e-6, 1e-5)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    Ok(())
}

#[test]
fn poles_edges_and_f32() -> Result<()> {
    let cpu = CpuBackend::new();
    let v = |t: T| t.to_vec::<f64>().unwrap();
    let poles = Tensor::from_vec(vec![0.0f64, -1.0, -2.0], [3], &cpu)?;
    assert!(
        v(nabla_special::lgamma(&poles)?)
            .iter()
            .all(|x| *x == f64::INFINITY)
    );
    let d = v(nabla_special::digamma(&poles)?);
    assert!(d[0] == f64::NEG_INFINITY && d[1].is_nan() && d[2].is_nan());
    let edges = Tensor::from_vec(vec![-1.0f64, 1.0, 1.5, f64::NAN], [4], &cpu)?;
    let e = v(nabla_special::erfinv(&edges)?);
    assert!(e[0] == f64::NEG_INFINITY && e[1] == f64::INFINITY && e[2].is_nan() && e[3].is_nan());
    let probabilities = Tensor::from_vec(vec![0.0f64, 1.0, 1.5, -0.1, f64::NAN], [5], &cpu)?;
    let q = v(nabla_special::ndtri(&probabilities)?);
    assert!(
        q[0] == f64::NEG_INFINITY && q[1] == f64::INFINITY && q[2..].iter().all(|x| x.is_nan())
    );
    let infinities = Tensor::from_vec(vec![f64::NEG_INFINITY, f64::INFINITY], [2], &cpu)?;
    assert_eq!(
        v(nabla_special::log_ndtr(&infinities)?),
        vec![f64::NEG_INFINITY, 0.0]
    );
    assert_eq!(v(nabla_special::ndtr(&infinities)?), vec![0.0, 1.0]);
    assert_eq!(v(nabla_special::erfc(&infinities)?), vec![2.0, 0.0]);
    // ndtri inverts ndtr, both tails included (Φ amplifies x's rounding by x² in relative terms: about
    // 1e3 at 1e-200).
    let p = Tensor::from_vec(vec![1e-200f64, 1e-9, 0.3, 0.5, 0.8, 1.0 - 1e-9], [6], &cpu)?;
    let back = v(nabla_special::ndtr(&nabla_special::ndtri(&p)?)?);
    for (b, w) in back.iter().zip(v(p.clone())) {
        assert!((b - w).abs() <= 1e-12 * w, "{b:e} vs {w:e}");
    }
    let big = Tensor::from_vec(vec![1000.0f64, f64::INFINITY], [2], &cpu)?;
    assert_eq!(
        v(nabla_special::i0(&big)?),
        vec![f64::INFINITY, f64::INFINITY]
    );
    let scaled = v(nabla_special::i0e(&big)?);
    // e^{−x} I₀(x) ≈ (1 + 1/(8x)) / √(2πx) for large x.
    let asymptotic = (1.0 + 1.0 / 8000.0) / (2.0 * std::f64::consts::PI * 1000.0).sqrt();
    assert!((scaled[0] - asymptotic).abs() < 1e-6 * asymptotic && scaled[1] == 0.0);
    // f32 in, f32 out, rounded from the f64 result; integers convert to f32.
    let x32 = Tensor::from_vec(vec![0.5f32, 3.0], [2], &cpu)?;
    let g = nabla_special::lgamma(&x32)?;
    assert_eq!(g.dtype(), DType::F32);
    assert!((g.to_vec::<f32>()?[0] - std::f32::consts::PI.sqrt().ln()).abs() < 1e-6);
    let ints = Tensor::from_vec(vec![1i64, 2, 3], [3], &cpu)?;
    assert_eq!(nabla_special::digamma(&ints)?.dtype(), DType::F32);
    // A large input takes the parallel path and agrees with the sequential one.
    let many: Vec<f64> = (0..20_000).map(|i| 0.01 + i as f64 * 1e-3).collect();
    let all = v(nabla_special::digamma(&Tensor::from_vec(
        many.clone(),
        [20_000],
        &cpu,
    )?)?);
    let few = v(nabla_special::digamma(&Tensor::from_vec(
        many[..100].to_vec(),
        [100],
        &cpu,
    )?)?);
    assert_eq!(&all[..100], &few[..]);
    Ok(())
}

#[test]
fn traced_vmapped_and_errors() -> Result<()> {
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(vec![0.3f64, 1.2, 2.5, 4.0, 0.7, 9.0], [2, 3], &cpu)?;
    let tb = TracingBackend::new();
    let p = tb.placeholder([2, 3], DType::F64)?;
    let y = nabla_special::lgamma(&p)?.add(&nabla_special::i1e(&p)?)?;
    let g = y.sum_all()?.grad(&p)?;
    let program = tb.program(&[&y, &g])?;
    let run = GraphExecutor::new(&cpu).run(&program, std::slice::from_ref(&x))?;
    let xv = Tensor::var("x", x.clone())?;
    let eager = nabla_special::lgamma(&xv)?.add(&nabla_special::i1e(&xv)?)?;
    assert_eq!(run[0].to_vec::<f64>()?, eager.to_vec::<f64>()?);
    assert_eq!(
        run[1].to_vec::<f64>()?,
        eager.sum_all()?.grad(&xv)?.to_vec::<f64>()?
    );
    let per_row = vmap(|t: &[TracedTensor]| {
        grad(|r: &TracedTensor| nabla_special::digamma(r)?.sum_all())(&t[0])
    })
    .call1(&[&x])?;
    let want = nabla_special::polygamma(1, &x)?;
    assert_eq!(per_row.to_vec::<f64>()?, want.to_vec::<f64>()?);
    let z = Tensor::complex(&x, &x)?;
    let e = nabla_special::erfinv(&z).unwrap_err().to_string();
    assert!(e.contains("special.erfinv") && e.contains("real"), "{e}");
    let e = nabla_special::logit(&x, Some(0.7)).unwrap_err().to_string();
    assert!(e.contains("special.logit") && e.contains("eps"), "{e}");
    Ok(())
}

const BETALN: &str = include_str!("fixtures/betaln.json");

/// betaln over a grid of pairs from 1e-300 to 1e300 (fixture from
/// scripts/gen_special_betaln_fixture.py, mpmath at 450 digits), in both argument orders: values within
/// 1e-13 relative (lgamma(a) + lgamma(b) − lgamma(a + b) is off by up to 3e-7 there), derivatives
/// within 1e-13 of the digamma values they are differences of.
#[test]
fn betaln_matches_mpmath_over_a_wide_grid() -> Result<()> {
    let fixture: Value = serde_json::from_str(BETALN).unwrap();
    let points: Vec<Vec<f64>> = fixture["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| floats(p).into_iter().map(Option::unwrap).collect())
        .collect();
    assert_eq!(points.len(), 253);
    // Each pair in both orders: (a, b, value, d/da, d/db).
    let rows: Vec<[f64; 5]> = points
        .iter()
        .flat_map(|p| {
            [
                [p[0], p[1], p[2], p[3], p[4]],
                [p[1], p[0], p[2], p[4], p[3]],
            ]
        })
        .collect();
    let cpu = CpuBackend::new();
    let column = |k: usize| -> Result<T> {
        let v: Vec<f64> = rows.iter().map(|r| r[k]).collect();
        Tensor::var("x", Tensor::from_vec(v, [rows.len()], &cpu)?)
    };
    let (a, b) = (column(0)?, column(1)?);
    let out = nabla_special::betaln(&a, &b)?;
    let grads = nabla_tensor::AdContext::new().grads(&out.sum_all()?, &[&a, &b])?;
    let digamma = |t: &T| nabla_special::digamma(&t.detach()).and_then(|d| d.to_vec::<f64>());
    let (psi_a, psi_b, psi_ab) = (digamma(&a)?, digamma(&b)?, digamma(&a.add(&b)?)?);
    let (values, da, db) = (
        out.to_vec::<f64>()?,
        grads[0].to_vec::<f64>()?,
        grads[1].to_vec::<f64>()?,
    );
    for (i, r) in rows.iter().enumerate() {
        let what = format!("betaln({:e}, {:e})", r[0], r[1]);
        close(values[i], r[2], 1e-13, &what);
        for (got, want, psi) in [(da[i], r[3], psi_a[i]), (db[i], r[4], psi_b[i])] {
            let scale = psi.abs() + psi_ab[i].abs();
            assert!(
                (got - want).abs() <= 1e-13 * scale,
                "{what} derivative: {got} vs {want} (digamma values {psi}, {})",
                psi_ab[i]
            );
        }
    }
    Ok(())
}

#[test]
fn betaln_edges_f32_and_derivatives_of_two_orders() -> Result<()> {
    let cpu = CpuBackend::new();
    let t = |v: Vec<f64>| Tensor::from_vec(v.clone(), [v.len()], &cpu);
    // An infinite argument against a positive one, a pole, NaN; broadcasting a scalar.
    let a = t(vec![f64::INFINITY, 0.0, f64::NAN, 2.0])?;
    let v = nabla_special::betaln(&a, &t(vec![3.0])?)?.to_vec::<f64>()?;
    assert!(
        v[0] == f64::NEG_INFINITY && v[1] == f64::INFINITY && v[2].is_nan(),
        "{v:?}"
    );
    assert!((v[3] + 12f64.ln()).abs() < 1e-15, "{v:?}");
    // f32 in, f32 out, rounded from the f64 value (no cancellation at 1e8).
    let a32 = Tensor::from_vec(vec![1e8f32], [1], &cpu)?;
    let b32 = Tensor::from_vec(vec![5.0f32], [1], &cpu)?;
    let v32 = nabla_special::betaln(&a32, &b32)?;
    assert_eq!(v32.dtype(), DType::F32);
    assert_eq!(v32.to_vec::<f32>()?, vec![-88.92535f32]);
    // Both orders of derivatives on both sides of the switch to Stirling's series.
    let f = |v: &[T]| nabla_special::betaln(&v[0], &v[1]);
    let points = [
        t(vec![0.7, 3.0, 12.0, 40.0])?,
        t(vec![2.0, 15.0, 11.0, 900.0])?,
    ];
    let opts = GradCheckOptions::default();
    check_gradients(f, &points, &opts)?.assert_close(1e-7, 1e-6)?;
    check_second_order(f, &points, &opts)?.assert_close(1e-6, 1e-5)?;
    Ok(())
}
