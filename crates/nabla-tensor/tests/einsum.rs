//! `einsum` on NumPy's test-suite equations (fixture from scripts/gen_einsum_fixtures.py: values from
//! numpy.einsum, gradients from jax.vjp), plus central differences to second order, traced programs,
//! planning of the contraction order, and errors.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    AdContext, GradCheckOptions, GraphCompiler, GraphExecutor, Tensor, TracingBackend,
    check_gradients, check_second_order, einsum_path,
};
use serde_json::Value;

type T = Tensor<CpuBackend>;

const FIXTURE: &str = include_str!("fixtures/einsum.json");

fn on<B: nabla_core::Backend>(v: &Value, backend: &B) -> Tensor<B> {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f64> = v["re"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    Tensor::from_vec(data, shape, backend).unwrap()
}

fn cases() -> Vec<Value> {
    let v: Value = serde_json::from_str(FIXTURE).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn close(got: &T, want: &T, tol: f64, what: &str) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let (g, w) = (got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: {a} vs {b}"
        );
    }
}

#[test]
fn numpy_suite_values_and_jax_gradients() {
    let cpu = CpuBackend::new();
    let cases = cases();
    assert_eq!(cases.len(), 52);
    for case in &cases {
        let eq = case["equation"].as_str().unwrap();
        let ops: Vec<T> = case["operands"]
            .as_array()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(k, o)| Tensor::var(format!("x{k}"), on(o, &cpu)).unwrap())
            .collect();
        let refs: Vec<&T> = ops.iter().collect();
        let y = Tensor::einsum(eq, &refs).unwrap_or_else(|e| panic!("{eq}: {e}"));
        close(&y, &on(&case["output"], &cpu), 1e-13, eq);
        let grads = AdContext::new()
            .vjp_n(&y, &refs, &on(&case["cotangent"], &cpu))
            .unwrap_or_else(|e| panic!("{eq} vjp: {e}"));
        for (k, (g, want)) in grads
            .iter()
            .zip(case["grads"].as_array().unwrap())
            .enumerate()
        {
            close(g, &on(want, &cpu), 1e-13, &format!("{eq} grad {k}"));
        }
    }
}

#[test]
fn derivatives_match_central_differences_to_second_order() {
    let cpu = CpuBackend::new();
    for case in cases().iter().filter(|c| {
        let eq = c["equation"].as_str().unwrap();
        [
            "ii->i",
            "...ij,...jk->...ik",
            "ij,jk,kl->il",
            "i...i->...",
            "bn,anm,bm->ba",
        ]
        .contains(&eq)
    }) {
        let eq = case["equation"].as_str().unwrap();
        let ops: Vec<T> = case["operands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| on(o, &cpu))
            .collect();
        let f = |v: &[T]| Tensor::einsum(eq, &v.iter().collect::<Vec<_>>());
        check_gradients(f, &ops, &GradCheckOptions::default())
            .unwrap()
            .assert_close(1e-8, 1e-6)
            .unwrap();
        // A non-linear head gives a non-zero second derivative.
        let g = |v: &[T]| Tensor::einsum(eq, &v.iter().collect::<Vec<_>>())?.tanh();
        check_second_order(g, &ops, &GradCheckOptions::default())
            .unwrap()
            .assert_close(1e-7, 1e-5)
            .unwrap();
    }
}

#[test]
fn traced_and_compiled_einsum_match_eager() {
    let cpu = CpuBackend::new();
    for case in cases().iter().step_by(5) {
        let eq = case["equation"].as_str().unwrap();
        let operands = case["operands"].as_array().unwrap();
        let tb = TracingBackend::new();
        let placeholders: Vec<Tensor<TracingBackend>> = operands
            .iter()
            .map(|o| {
                let shape: Vec<usize> = o["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|d| d.as_u64().unwrap() as usize)
                    .collect();
                tb.placeholder(shape, DType::F64).unwrap()
            })
            .collect();
        let y = Tensor::einsum(eq, &placeholders.iter().collect::<Vec<_>>()).unwrap();
        let program = GraphCompiler::new()
            .compile(tb.program(&[&y]).unwrap())
            .unwrap();
        let inputs: Vec<T> = operands.iter().map(|o| on(o, &cpu)).collect();
        let run = GraphExecutor::new(&cpu).run(&program, &inputs).unwrap();
        close(
            &run[0],
            &on(&case["output"], &cpu),
            1e-13,
            &format!("{eq} compiled"),
        );
    }
}

#[test]
fn planning_picks_the_cheaper_order_for_three_operands() -> Result<()> {
    // A (10 x 1000), B (1000 x 10), C (10 x 1000): (AB)C costs 2e5 multiply-adds, A(BC) 2e7.
    let path = einsum_path("ij,jk,kl->il", &[&[10, 1000], &[1000, 10], &[10, 1000]])?;
    assert_eq!(path.steps, vec![(0, 1), (0, 1)]);
    assert_eq!(path.flops, 200_000.0);
    // The other way round: A (1000 x 10), B (10 x 1000), C (1000 x 10): A(BC) is cheaper.
    let path = einsum_path("ij,jk,kl->il", &[&[1000, 10], &[10, 1000], &[1000, 10]])?;
    assert_eq!(path.steps, vec![(1, 2), (0, 1)]);
    assert_eq!(path.flops, 200_000.0);
    assert_eq!(path.left_to_right_flops, 20_000_000.0);
    // The planned order gives the left-to-right result.
    let cpu = CpuBackend::new();
    let a = Tensor::from_vec(
        (0..1000 * 10).map(|i| (i % 7) as f64 - 3.0).collect(),
        [1000, 10],
        &cpu,
    )?;
    let b = Tensor::from_vec(
        (0..1000 * 10).map(|i| (i % 5) as f64 - 2.0).collect(),
        [10, 1000],
        &cpu,
    )?;
    let c = Tensor::from_vec(
        (0..1000 * 10).map(|i| (i % 3) as f64 - 1.0).collect(),
        [1000, 10],
        &cpu,
    )?;
    let got = Tensor::einsum("ij,jk,kl->il", &[&a, &b, &c])?;
    close(&got, &a.matmul(&b)?.matmul(&c)?, 1e-12, "planned chain");
    Ok(())
}

#[test]
fn bad_equations_are_errors_naming_einsum() {
    let cpu = CpuBackend::new();
    let a = Tensor::zeros([2, 3], DType::F64, &cpu).unwrap();
    let b = Tensor::zeros([4, 5], DType::F64, &cpu).unwrap();
    for (eq, ops, text) in [
        ("ij,jk->ik", vec![&a, &b], "size"),
        ("ij", vec![&a, &b], "operands"),
        ("ijk", vec![&a], "dimensions"),
        ("i", vec![&a], "dimensions"),
        ("ij->iz", vec![&a], "does not appear"),
        ("ij->ii", vec![&a], "twice"),
        ("i1", vec![&a], "invalid subscript"),
        ("i.j", vec![&a], "invalid subscript"),
    ] {
        let e = Tensor::einsum(eq, &ops).expect_err(eq).to_string();
        assert!(e.contains("einsum") && e.contains(text), "{eq}: {e}");
    }
    let e = Tensor::<CpuBackend>::einsum("", &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("at least one operand"), "{e}");
}

#[test]
fn zero_size_and_strided_operands() -> Result<()> {
    let cpu = CpuBackend::new();
    let empty = Tensor::zeros([3, 0], DType::F64, &cpu)?;
    let x = Tensor::from_vec((0..12).map(f64::from).collect(), [4, 3], &cpu)?;
    // Contracting over an empty axis gives zeros; an empty free axis gives an empty result.
    let z = Tensor::einsum(
        "ij,kj->ik",
        &[&empty, &Tensor::zeros([2, 0], DType::F64, &cpu)?],
    )?;
    assert_eq!(
        (z.shape(), z.to_vec::<f64>()?),
        (&[3usize, 2][..], vec![0.0; 6])
    );
    assert_eq!(
        Tensor::einsum(
            "ij,jk->ik",
            &[&empty, &Tensor::zeros([0, 5], DType::F64, &cpu)?]
        )?
        .shape(),
        &[3, 5]
    );
    // A transposed (strided) operand.
    let xt = x.t()?;
    close(
        &Tensor::einsum("ij,jk->ik", &[&xt, &x])?,
        &xt.matmul(&x)?,
        1e-14,
        "strided",
    );
    Ok(())
}
