//! Every transform sees the linalg family with no setup: `backward`, `grad`, `value_and_grad`, `jvp`,
//! `hvp`, `hessian`, `jacrev` and `jacfwd` of functions using solve, det, cholesky, eigh and svd match
//! JAX in f64 (fixture from scripts/gen_jax_linalg_entry_points.py), eagerly and traced.

use super::support::*;
use nabla_core::{Backend, DType, Result};
use nabla_tensor::{
    GraphExecutor, Tensor, TracingBackend, grad, hessian, hvp, jacfwd, jacrev, jvp, value_and_grad,
};
use serde_json::Value;

const FIXTURE: &str = include_str!("../fixtures/jax_entry_points.json");

fn array(v: &Value) -> (Vec<usize>, Vec<f64>) {
    let shape = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    (shape, data)
}

fn on<B: Backend>(v: &Value, backend: &B) -> Tensor<B> {
    let (shape, data) = array(v);
    Tensor::from_vec(data, shape, backend).unwrap()
}

/// The op's output `g(x)` of each case (gauge-invariant for eigh and svd: squared vectors).
fn output<B: Backend>(
    name: &str,
    x: &Tensor<B>,
    constant: Option<&Tensor<B>>,
) -> Result<Tensor<B>> {
    match name {
        "solve" => nabla_linalg::solve(x, constant.expect("solve has a right-hand side")),
        "det" => nabla_linalg::det(x),
        "cholesky" => nabla_linalg::cholesky(x),
        "eigh" => {
            let (w, v) = nabla_linalg::eigh(x)?;
            Tensor::cat(&[&w, &v.square()?.flatten_all()?], 0)
        }
        "svd" => {
            let (u, s, _) = nabla_linalg::svd(x, false)?;
            Tensor::cat(&[&s, &u.square()?.flatten_all()?], 0)
        }
        other => panic!("unknown case {other}"),
    }
}

/// The case's loss `sum(g(x) * W)`.
fn loss<B: Backend>(
    name: &str,
    x: &Tensor<B>,
    w: &Tensor<B>,
    constant: Option<&Tensor<B>>,
) -> Result<Tensor<B>> {
    output(name, x, constant)?.mul(w)?.sum_all()
}

fn check(got: &T, want: &Value, tol: f64, what: &str) {
    let (shape, data) = array(want);
    assert_eq!(got.shape(), shape.as_slice(), "{what}: shape");
    assert_real_close(&values(got), &data, tol, what);
}

#[test]
fn every_entry_point_differentiates_linalg_ops_like_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let cases = fixture["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 5);
    let cpu = cpu();
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let x = on(&case["x"], &cpu);
        let w = on(&case["weight"], &cpu);
        let v = on(&case["v"], &cpu);
        let c = case.get("constant").map(|c| on(c, &cpu));
        let f = |x: &T| loss(name, x, &w, c.as_ref());
        let g = |x: &T| output(name, x, c.as_ref());
        let tol = 1e-9;

        // Tensor::backward on a variable.
        let xv = Tensor::var("x", x.clone()).unwrap();
        let y = f(&xv).unwrap();
        let want_value = case["value"].as_f64().unwrap();
        assert_real_close(&values(&y), &[want_value], tol, &format!("{name}: value"));
        // Tensor::grad keeps the graph; backward (last) frees it.
        check(
            &y.grad(&xv).unwrap(),
            &case["grad"],
            tol,
            &format!("{name}: Tensor::grad"),
        );
        let grads = y.backward().unwrap();
        check(
            grads.get(&xv).unwrap(),
            &case["grad"],
            tol,
            &format!("{name}: backward"),
        );

        // The functional transforms.
        check(
            &grad(f)(&x).unwrap(),
            &case["grad"],
            tol,
            &format!("{name}: grad"),
        );
        let (value, g2) = value_and_grad(f)(&x).unwrap();
        assert_real_close(&values(&value), &[want_value], tol, name);
        check(&g2, &case["grad"], tol, &format!("{name}: value_and_grad"));
        let (_, jv) = jvp(f, &x, &v).unwrap();
        let want_jvp = case["jvp"].as_f64().unwrap();
        assert_real_close(&values(&jv), &[want_jvp], tol, &format!("{name}: jvp"));
        let hess = hessian(f)(&x).unwrap();
        check(&hess, &case["hessian"], 1e-8, &format!("{name}: hessian"));
        // H v from the fixture's Hessian, against the hvp transform.
        let n = x.numel();
        let hv_want = hess
            .reshape([n, n])
            .unwrap()
            .matmul(&v.reshape([n, 1]).unwrap())
            .unwrap();
        let hv = hvp(f, &x, &v).unwrap();
        assert_real_close(
            &values(&hv),
            &values(&hv_want),
            1e-8,
            &format!("{name}: hvp"),
        );
        check(
            &g(&x).unwrap(),
            &case["outputs"],
            tol,
            &format!("{name}: g"),
        );
        check(
            &jacrev(g)(&x).unwrap(),
            &case["jacobian"],
            tol,
            &format!("{name}: jacrev"),
        );
        check(
            &jacfwd(g)(&x).unwrap(),
            &case["jacobian"],
            tol,
            &format!("{name}: jacfwd"),
        );
    }
}

#[test]
fn traced_gradients_and_hessians_of_linalg_ops_match_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let cpu = cpu();
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let tb = TracingBackend::new();
        let (shape, _) = array(&case["x"]);
        let x = tb.placeholder(shape, DType::F64).unwrap();
        let w = on(&case["weight"], &tb);
        let c = case.get("constant").map(|c| on(c, &tb));
        let f = |x: &Tensor<TracingBackend>| loss(name, x, &w, c.as_ref());
        let y = f(&x).unwrap();
        // Tensor::grad on the traced placeholder, and the functional hessian of the traced function.
        let dx = y.grad(&x).unwrap();
        let hess = hessian(f)(&x.detach()).unwrap();
        let program = tb.program(&[&y, &dx]).unwrap();
        let run = GraphExecutor::new(&cpu)
            .run(&program, &[on(&case["x"], &cpu)])
            .unwrap();
        let tol = 1e-9;
        let value = case["value"].as_f64().unwrap();
        assert_real_close(
            &values(&run[0]),
            &[value],
            tol,
            &format!("{name}: traced value"),
        );
        check(&run[1], &case["grad"], tol, &format!("{name}: traced grad"));

        // The Hessian was traced from a detached copy: a program of its own, fed the same input.
        let hprogram = tb.program(&[&hess]).unwrap();
        let run = GraphExecutor::new(&cpu)
            .run(&hprogram, &[on(&case["x"], &cpu)])
            .unwrap();
        check(
            &run[0],
            &case["hessian"],
            1e-8,
            &format!("{name}: traced hessian"),
        );
    }
}
