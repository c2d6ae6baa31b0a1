//! The linalg extension family: values, errors, derivative rules (central differences in f64 and the
//! adjoint identity between forward and reverse rules), missing-rule errors and traced execution.

use super::support::*;
use nabla_core::{DType, Error, Result};
use nabla_cpu::CpuBackend;
use nabla_linalg::Triangular;
use nabla_tensor::{AdContext, GraphExecutor, Tensor, TracingBackend};

/// Random `[..., n, n]` matrices near `2 I`, comfortably invertible.
fn matrices(seed: u64, shape: &[usize]) -> T {
    let n = shape[shape.len() - 1];
    let eye = Tensor::eye(n, DType::F64, &CpuBackend::new()).unwrap();
    tensor(seed, shape)
        .mul(0.5)
        .unwrap()
        .add(eye.mul(2.0).unwrap())
        .unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

/// One op of the family applied to its inputs.
type OpFn = fn(&[T]) -> Result<T>;

fn cases() -> Vec<(&'static str, OpFn, Vec<T>)> {
    vec![
        (
            "solve",
            |x| nabla_linalg::solve(&x[0], &x[1]),
            vec![matrices(1, &[2, 3, 3]), tensor(2, &[2, 3, 2])],
        ),
        (
            "inv",
            |x| nabla_linalg::inv(&x[0]),
            vec![matrices(3, &[4, 4])],
        ),
        (
            "logabsdet",
            |x| nabla_linalg::logabsdet(&x[0]),
            vec![matrices(4, &[3, 3, 3])],
        ),
    ]
}

#[test]
fn values_satisfy_their_definitions() {
    let a = matrices(5, &[2, 3, 3]);
    let b = tensor(6, &[2, 3, 4]);
    let x = nabla_linalg::solve(&a, &b).unwrap();
    assert_close(
        &values(&a.matmul(&x).unwrap()),
        &values(&b),
        1e-12,
        "A X = B",
    );
    let inv = nabla_linalg::inv(&a).unwrap();
    let eye = Tensor::eye(3, DType::F64, &CpuBackend::new()).unwrap();
    let want = values(&eye.broadcast_to([2, 3, 3]).unwrap());
    assert_close(&values(&a.matmul(&inv).unwrap()), &want, 1e-12, "A A⁻¹ = I");
    // A triangular matrix's log|det| is the sum of log|diagonal|.
    let tri = Tensor::from_vec(vec![2.0f64, 5.0, 0.0, -3.0], [2, 2], &CpuBackend::new()).unwrap();
    let l = nabla_linalg::logabsdet(&tri).unwrap();
    assert!((l.item::<f64>().unwrap() - 6f64.ln()).abs() < 1e-14);
    // f32 works too, and a transposed (non-contiguous) input is read through its view.
    let a32 = a.cast(DType::F32).unwrap();
    let inv32 = nabla_linalg::inv(&a32.t().unwrap()).unwrap();
    let inv_t = values(&inv.t().unwrap().contiguous().unwrap());
    let got: Vec<f64> = inv32
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|&v| v as f64)
        .collect();
    assert_close(&got, &inv_t, 1e-5, "inv(Aᵀ) in f32");
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    let cpu = CpuBackend::new();
    let singular = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], [2, 2], &cpu).unwrap();
    let err = nabla_linalg::inv(&singular).unwrap_err().to_string();
    assert!(
        err.contains("linalg.inv") && err.contains("singular"),
        "{err}"
    );
    let b = tensor(1, &[2, 1]);
    let err = nabla_linalg::solve(&singular, &b).unwrap_err().to_string();
    assert!(
        err.contains("linalg.solve") && err.contains("singular"),
        "{err}"
    );

    let rect = tensor(2, &[2, 3]);
    let err = nabla_linalg::logabsdet(&rect).unwrap_err().to_string();
    assert!(
        err.contains("linalg.logabsdet") && err.contains("[2, 3]"),
        "{err}"
    );
    let err = nabla_linalg::solve(&matrices(3, &[3, 3]), &tensor(4, &[2, 1])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::ShapeMismatch {
                op: "linalg.solve",
                ..
            }
        ),
        "{err}"
    );
    let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], [2, 2], &cpu).unwrap();
    let err = nabla_linalg::inv(&ints).unwrap_err();
    assert!(
        matches!(
            err,
            Error::UnsupportedDType {
                op: "linalg.inv",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn reverse_rules_match_central_differences() {
    let ad = ad();
    for (name, f, inputs) in cases() {
        let xs = vars(&inputs);
        let y = f(&xs).unwrap();
        let w = tensor(99, y.shape());
        let loss = |xs: &[T]| -> f64 {
            f(xs)
                .unwrap()
                .mul(&w)
                .unwrap()
                .sum_all()
                .unwrap()
                .item()
                .unwrap()
        };
        let refs: Vec<&T> = xs.iter().collect();
        let grads = ad
            .grads(&y.mul(&w).unwrap().sum_all().unwrap(), &refs)
            .unwrap();
        for (i, grad) in grads.iter().enumerate() {
            let numeric = central_differences(&loss, &inputs, i);
            assert_close(&values(grad), &numeric, 1e-6, &format!("{name} d/dx{i}"));
        }
    }
}

#[test]
fn forward_and_reverse_rules_satisfy_the_adjoint_identity() {
    let ad = ad();
    for (name, f, inputs) in cases() {
        let xs = vars(&inputs);
        let refs: Vec<&T> = xs.iter().collect();
        let y = f(&xs).unwrap();
        let vs: Vec<T> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| tensor(10 + i as u64, x.shape()))
            .collect();
        let vrefs: Vec<&T> = vs.iter().collect();
        let u = tensor(20, y.shape());
        let jv = ad.jvp_n(&y, &refs, &vrefs).unwrap();
        let jtu = ad.vjp_n(&y, &refs, &u).unwrap();
        let lhs: f64 = dot(&[u], &[jv]).item().unwrap();
        let rhs: f64 = dot(&jtu, &vs).item().unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()),
            "{name}: <u, Jv> = {lhs} but <Jᵀu, v> = {rhs}"
        );
    }
}

#[test]
fn rules_travel_with_the_op_and_a_context_overrides_them() {
    let a = Tensor::var("a", matrices(1, &[3, 3])).unwrap();
    let y = nabla_linalg::logabsdet(&a).unwrap();
    let want = values(&nabla_linalg::inv(&a.detach()).unwrap().t().unwrap());
    // A default context and plain backward (on its own copy of the graph) see the bound rules.
    let g = AdContext::new().grad(&y, &a).unwrap();
    assert_real_close(&values(&g), &want, 1e-12, "grad");
    let fresh = nabla_linalg::logabsdet(&a).unwrap();
    let g2 = fresh.backward().unwrap().get(&a).unwrap().clone();
    assert_real_close(&values(&g2), &want, 1e-12, "backward of logabsdet");
    let v = tensor(2, &[3, 3]);
    let jv = AdContext::new()
        .jvp(&y, &a, &v)
        .unwrap()
        .item::<f64>()
        .unwrap();
    let inner: f64 = g.mul(&v).unwrap().sum_all().unwrap().item().unwrap();
    assert!((jv - inner).abs() < 1e-12, "jvp {jv} vs <grad, v> {inner}");

    // An override replaces the reverse rule for this context only; the forward rule stays bound.
    let zeroing = AdContext::builder()
        .with_extension_rules(
            nabla_tensor::ExtensionRules::<CpuBackend>::new()
                .reverse("linalg.logabsdet", |args, _, _| {
                    Ok(vec![Some(args.inputs[0].zeros_like()?)])
                }),
        )
        .build();
    assert_eq!(values(&zeroing.grad(&y, &a).unwrap()), vec![0.0; 9]);
    let jv2 = zeroing.jvp(&y, &a, &v).unwrap().item::<f64>().unwrap();
    assert!((jv2 - jv).abs() < 1e-15);
    assert_real_close(
        &values(&AdContext::new().grad(&y, &a).unwrap()),
        &want,
        1e-12,
        "other contexts",
    );

    // An op applied without its family has no rules: an error naming the op, the mode and the fix.
    let bare =
        Tensor::apply_extension(std::sync::Arc::new(nabla_linalg::LogAbsDet), &[&a]).unwrap();
    let err = bare.backward().unwrap_err().to_string();
    assert!(
        err.contains("'linalg.logabsdet'")
            && err.contains("reverse-mode")
            && err.contains("apply_family_op"),
        "{err}"
    );
    let err = AdContext::new().jvp(&bare, &a, &v).unwrap_err().to_string();
    assert!(
        err.contains("'linalg.logabsdet'") && err.contains("forward-mode"),
        "{err}"
    );
    // ... which a context's override can supply.
    let supplied = AdContext::builder()
        .with_extension_rules(nabla_linalg::rules::<CpuBackend>())
        .build();
    assert_real_close(
        &values(&supplied.grad(&bare, &a).unwrap()),
        &want,
        1e-12,
        "override",
    );
}

#[test]
fn traced_programs_run_the_family_and_its_derivatives() {
    let tb = TracingBackend::new();
    let a = tb.placeholder([3, 3], DType::F64).unwrap();
    let b = tb.placeholder([3, 2], DType::F64).unwrap();
    let ad = AdContext::new();
    let loss = nabla_linalg::solve(&a, &b)
        .unwrap()
        .tanh()
        .unwrap()
        .sum_all()
        .unwrap()
        .add(nabla_linalg::logabsdet(&a).unwrap())
        .unwrap();
    let grads = ad.grads(&loss, &[&a, &b]).unwrap();
    let program = tb.program(&[&loss, &grads[0], &grads[1]]).unwrap();
    assert!(program.to_string().contains("linalg.solve"), "{program}");

    let cpu = CpuBackend::new();
    let exec = GraphExecutor::new(&cpu);
    let mut previous = None;
    for seed in [1, 2] {
        let (ea, eb) = (matrices(seed, &[3, 3]), tensor(seed + 5, &[3, 2]));
        let got = exec.run(&program, &[ea.clone(), eb.clone()]).unwrap();
        let (va, vb) = (Tensor::var("a", ea).unwrap(), Tensor::var("b", eb).unwrap());
        let l = nabla_linalg::solve(&va, &vb)
            .unwrap()
            .tanh()
            .unwrap()
            .sum_all()
            .unwrap();
        let l = l.add(nabla_linalg::logabsdet(&va).unwrap()).unwrap();
        let want = self::ad().grads(&l, &[&va, &vb]).unwrap();
        assert_close(&values(&got[0]), &values(&l), 1e-12, "traced loss");
        assert_close(&values(&got[1]), &values(&want[0]), 1e-12, "traced dA");
        assert_close(&values(&got[2]), &values(&want[1]), 1e-12, "traced dB");
        assert_ne!(
            previous,
            Some(values(&got[0])),
            "a second run computes fresh values"
        );
        previous = Some(values(&got[0]));
    }
    // A singular input is an error at run time, not a crash.
    let singular = Tensor::from_vec(vec![0.0f64; 9], [3, 3], &cpu).unwrap();
    let err = exec
        .run(&program, &[singular, tensor(1, &[3, 2])])
        .unwrap_err();
    assert!(err.to_string().contains("singular"), "{err}");
}

/// Batches large enough to be spread over threads (one sequential factorisation per matrix) give,
/// matrix by matrix, what each matrix gives alone (one factorisation with faer's parallelism).
#[test]
fn threaded_batches_match_one_matrix_at_a_time() {
    let (batch, n) = (3, 130);
    let a = matrices(40, &[batch, n, n]);
    let x = tensor(41, &[batch, n, n]);
    let spd = x
        .matmul(&x.t().unwrap())
        .unwrap()
        .add(eye64(n).mul(n as f64).unwrap())
        .unwrap();
    let b = tensor(42, &[batch, n, 4]);
    type Op = fn(&T, &T) -> Result<T>;
    let ops: [(&str, Op); 9] = [
        ("solve", |a, b| nabla_linalg::solve(a, b)),
        ("inv", |a, _| nabla_linalg::inv(a)),
        ("logabsdet", |a, _| nabla_linalg::logabsdet(a)),
        ("cholesky", |a, _| nabla_linalg::cholesky(a)),
        ("triangular_solve", |a, b| {
            nabla_linalg::triangular_solve(a, b, Triangular::default())
        }),
        ("qr", |a, _| Ok(nabla_linalg::qr(a)?.1)),
        ("lu", |a, _| Ok(nabla_linalg::lu(a)?.2)),
        ("det", |a, _| nabla_linalg::det(&a.mul(0.5)?)),
        ("slogdet", |a, _| Ok(nabla_linalg::slogdet(a)?.1)),
    ];
    for (name, f) in ops {
        let input = if name == "cholesky" { &spd } else { &a };
        let batched = f(input, &b).unwrap();
        for i in 0..batch {
            let one = f(&input.narrow(0, i, 1).unwrap(), &b.narrow(0, i, 1).unwrap()).unwrap();
            let part = batched.narrow(0, i, 1).unwrap().contiguous().unwrap();
            let what = format!("{name} matrix {i}");
            assert_close(
                &values(&part),
                &values(&one.contiguous().unwrap()),
                1e-12,
                &what,
            );
        }
    }
}
