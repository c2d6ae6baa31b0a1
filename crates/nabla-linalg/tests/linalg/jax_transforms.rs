//! Derivatives up to third order, eager and traced, against JAX (fixture from
//! scripts/gen_jax_transform_fixtures.py): gradients, a JVP, HVPs (forward over reverse and reverse over
//! reverse) and a third derivative of functions of core ops and of the linalg extension family.

use nabla_core::{Backend, DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, GraphCompiler, GraphExecutor, Tensor, TracingBackend};
use serde_json::Value;

const FIXTURE: &str = include_str!("../fixtures/jax_transforms.json");

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn shape(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_u64().expect("dim") as usize)
        .collect()
}

/// The scalar function of each case; weighted cases are `sum(g(inputs) * w)` with the fixture's weight.
fn function<B: Backend>(name: &str, xs: &[Tensor<B>], w: Option<&Tensor<B>>) -> Result<Tensor<B>> {
    let weighted = |y: Tensor<B>| y.mul(w.expect("weighted case has a weight"))?.sum_all();
    match name {
        "solve_weighted" => weighted(nabla_linalg::solve(&xs[0], &xs[1])?),
        "inv_weighted" => weighted(nabla_linalg::inv(&xs[0])?),
        "logabsdet_sum" => nabla_linalg::logabsdet(&xs[0])?.sum_all(),
        "exp_sin_weighted" => weighted(xs[0].sin()?.exp()?),
        "tanh_matmul_sum" => xs[0].matmul(&xs[1])?.tanh()?.sum_all(),
        other => panic!("unknown case {other}"),
    }
}

/// `Σᵢ <aᵢ, bᵢ>` as a one-element tensor.
fn dot_all<B: Backend>(a: &[Tensor<B>], b: &[Tensor<B>]) -> Result<Tensor<B>> {
    let mut acc: Option<Tensor<B>> = None;
    for (x, y) in a.iter().zip(b) {
        let d = x.mul(y)?.sum_all()?;
        acc = Some(match acc {
            None => d,
            Some(s) => s.add(&d)?,
        });
    }
    Ok(acc.expect("at least one input"))
}

/// Every derivative the fixture records, computed with a default AdContext (the family's rules are
/// bound to its ops) on tensors of backend `B`:
/// `[value], [jvp], grads.., hvp (fwd-over-rev).., hvp (rev-over-rev).., third..`.
fn derivatives<B: Backend>(
    name: &str,
    xs: &[Tensor<B>],
    vs: &[Tensor<B>],
    w: Option<&Tensor<B>>,
) -> Result<Vec<Tensor<B>>> {
    let ad = AdContext::new();
    let refs: Vec<&Tensor<B>> = xs.iter().collect();
    let vrefs: Vec<&Tensor<B>> = vs.iter().collect();
    let y = function(name, xs, w)?;
    let jvp = ad.jvp_n(&y, &refs, &vrefs)?;
    let grads = ad.grads(&y, &refs)?;
    let hvp_fwd = grads
        .iter()
        .map(|g| ad.jvp_n(g, &refs, &vrefs))
        .collect::<Result<Vec<_>>>()?;
    let directional = dot_all(&grads, vs)?;
    let hvp_rev = ad.grads(&directional, &refs)?;
    let third = ad.grads(&dot_all(&hvp_rev, vs)?, &refs)?;
    let mut out = vec![y, jvp];
    out.extend(grads);
    out.extend(hvp_fwd);
    out.extend(hvp_rev);
    out.extend(third);
    Ok(out)
}

fn close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: nabla {g} vs JAX {w}"
        );
    }
}

#[test]
fn eager_and_traced_derivatives_match_jax_to_third_order() {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let cpu = CpuBackend::new();
    let cases = fixture["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 5);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let inputs = case["inputs"].as_array().expect("inputs");
        let shapes: Vec<Vec<usize>> = inputs.iter().map(|x| shape(&x["shape"])).collect();
        let eager = |data: Vec<f64>, s: &[usize]| Tensor::from_vec(data, s.to_vec(), &cpu).unwrap();
        let xs: Vec<_> = inputs
            .iter()
            .zip(&shapes)
            .enumerate()
            .map(|(i, (x, s))| Tensor::var(format!("x{i}"), eager(floats(&x["data"]), s)).unwrap())
            .collect();
        let vs: Vec<_> = case["v"]
            .as_array()
            .unwrap()
            .iter()
            .zip(&shapes)
            .map(|(v, s)| eager(floats(v), s))
            .collect();
        let w = case
            .get("weight")
            .map(|w| eager(floats(&w["data"]), &shape(&w["shape"])));
        let got = derivatives(name, &xs, &vs, w.as_ref()).unwrap();

        // The same computation traced, compiled and run on the CPU gives the same numbers.
        let tb = TracingBackend::new();
        let txs: Vec<_> = shapes
            .iter()
            .map(|s| tb.placeholder(s.clone(), DType::F64).unwrap())
            .collect();
        let tvs: Vec<_> = shapes
            .iter()
            .map(|s| tb.placeholder(s.clone(), DType::F64).unwrap().detach())
            .collect();
        let tw = w.as_ref().map(|w| {
            Tensor::from_vec(w.to_vec::<f64>().unwrap(), w.shape().to_vec(), &tb).unwrap()
        });
        let traced = derivatives(name, &txs, &tvs, tw.as_ref()).unwrap();
        let program = GraphCompiler::new().compile(&traced).unwrap();
        let mut feed: Vec<Tensor<CpuBackend>> = xs.iter().map(Tensor::detach).collect();
        feed.extend(vs.iter().cloned());
        let run = GraphExecutor::new(&cpu).run(&program, &feed).unwrap();
        assert_eq!(run.len(), got.len());
        for (k, (e, t)) in got.iter().zip(&run).enumerate() {
            close(
                &t.to_vec::<f64>().unwrap(),
                &e.to_vec::<f64>().unwrap(),
                1e-10,
                &format!("{name}: traced vs eager output {k}"),
            );
        }

        let n = xs.len();
        let flat = |t: &Tensor<CpuBackend>| t.to_vec::<f64>().unwrap();
        let tol = 1e-9;
        close(
            &flat(&got[0]),
            &[case["value"].as_f64().unwrap()],
            tol,
            &format!("{name}: value"),
        );
        close(
            &flat(&got[1]),
            &[case["jvp"].as_f64().unwrap()],
            tol,
            &format!("{name}: jvp"),
        );
        for i in 0..n {
            let grads = floats(&case["grads"][i]);
            let hvp = floats(&case["hvp"][i]);
            let third = floats(&case["third"][i]);
            close(
                &flat(&got[2 + i]),
                &grads,
                tol,
                &format!("{name}: grad {i}"),
            );
            close(
                &flat(&got[2 + n + i]),
                &hvp,
                tol,
                &format!("{name}: hvp fwd-over-rev {i}"),
            );
            close(
                &flat(&got[2 + 2 * n + i]),
                &hvp,
                tol,
                &format!("{name}: hvp rev-over-rev {i}"),
            );
            close(
                &flat(&got[2 + 3 * n + i]),
                &third,
                tol,
                &format!("{name}: third {i}"),
            );
        }
    }
}
