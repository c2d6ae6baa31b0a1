//! The factorisation ops: values against their definitions and against JAX (fixture from
//! scripts/gen_linalg_factor_fixtures.py: values, a JVP and a VJP; the real cases here, the complex
//! ones in `factor_complex`),
//! reverse rules against central differences, the adjoint identity between forward and reverse rules,
//! second derivatives, degenerate inputs, errors and traced execution.

use super::support::*;
use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result};
use nabla_linalg::Triangular;
use nabla_tensor::{AdContext, GraphExecutor, Tensor, TracingBackend};
use serde_json::Value;

const FIXTURE: &str = include_str!("../fixtures/factor.json");

/// Random `[..., n, n]` matrices near `2 I`.
fn near_identity(seed: u64, shape: &[usize]) -> T {
    let n = shape[shape.len() - 1];
    tensor(seed, shape)
        .mul(0.5)
        .unwrap()
        .add(eye64(n).mul(2.0).unwrap())
        .unwrap()
}

/// Random symmetric positive definite `[..., n, n]` matrices.
fn spd(seed: u64, shape: &[usize]) -> T {
    let x = tensor(seed, shape);
    let n = shape[shape.len() - 1];
    x.matmul(&x.t().unwrap())
        .unwrap()
        .add(eye64(n).mul(n as f64).unwrap())
        .unwrap()
}

/// `X d` scaling column `j` of each matrix by `d[j]` (`d` of shape `[..., k]`).
fn scale_columns(x: &T, d: &T) -> T {
    x.mul(d.unsqueeze(-2).unwrap()).unwrap()
}

/// QR normalised so that `R` has a real positive diagonal (unique): `Q diag(d)`, `diag(conj d) R`
/// with the constant `d = R_jj / |R_jj|` (ones for the extra columns of a complete `Q`).
pub(super) fn normalised((q, r): (T, T)) -> Result<Vec<T>> {
    let (qk, rr, rc) = (
        q.shape()[q.rank() - 1],
        r.shape()[r.rank() - 2],
        r.shape()[r.rank() - 1],
    );
    let k = rr.min(rc);
    let rv = cvalues(&r);
    let batch: usize = r.shape()[..r.rank() - 2].iter().product();
    let mut d = Vec::with_capacity(batch * qk);
    for b in 0..batch {
        for j in 0..qk {
            d.push(if j < k {
                let x = rv[b * rr * rc + j * rc + j];
                x / x.norm()
            } else {
                Complex64::new(1.0, 0.0)
            });
        }
    }
    let mut dshape = r.shape()[..r.rank() - 2].to_vec();
    dshape.push(qk);
    let conj: Vec<Complex64> = d.iter().map(|x| x.conj()).collect();
    let make = |v: Vec<Complex64>| -> Result<T> {
        let t = Tensor::from_vec(v, dshape.clone(), &cpu())?;
        let t = if q.dtype().is_complex() { t } else { t.real()? };
        t.cast(q.dtype())
    };
    let (d, dc) = (make(d)?, make(conj)?);
    let rows = dc.narrow(-1, 0, rr)?.unsqueeze(-1)?;
    Ok(vec![scale_columns(&q, &d), r.mul(&rows)?])
}

/// The function of each fixture case, on the case's inputs.
pub(super) fn function(name: &str, x: &[T]) -> Result<Vec<T>> {
    if let Some(flags) = name.strip_prefix("triangular_solve_") {
        let f: Vec<&str> = flags.split('_').collect();
        let opts = Triangular {
            lower: f[0] == "lower",
            left: f[1] == "left",
            unit_diagonal: f[2] == "unit",
            adjoint: f[3] == "adjoint",
        };
        return Ok(vec![nabla_linalg::triangular_solve(&x[0], &x[1], opts)?]);
    }
    Ok(match name {
        "cholesky" => vec![nabla_linalg::cholesky(&x[0])?],
        "det" => vec![nabla_linalg::det(&x[0])?],
        "slogdet" => {
            let (s, l) = nabla_linalg::slogdet(&x[0])?;
            vec![s, l]
        }
        "lu" => {
            let (p, l, u) = nabla_linalg::lu(&x[0])?;
            vec![p, l, u]
        }
        "qr" => normalised(nabla_linalg::qr(&x[0])?)?,
        "qr_full" => normalised(nabla_linalg::qr_full(&x[0])?)?,
        "lstsq" => vec![nabla_linalg::lstsq(&x[0], &x[1])?],
        "solve" => vec![nabla_linalg::solve(&x[0], &x[1])?],
        "inv" => vec![nabla_linalg::inv(&x[0])?],
        "logabsdet" => vec![nabla_linalg::logabsdet(&x[0])?],
        other => panic!("unknown case {other}"),
    })
}

/// The cases of the JAX fixture.
pub(super) fn fixture_cases() -> Vec<Value> {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    fixture["cases"].as_array().unwrap().clone()
}

/// Whether a fixture case is complex (complex64 or complex128).
pub(super) fn is_complex(case: &Value) -> bool {
    case["inputs"][0].get("im").is_some()
}

/// The arrays `case[key]` as tensors, in single precision for a complex64 case.
pub(super) fn case_tensors(case: &Value, key: &str) -> Vec<T> {
    let ts = fixture_tensors(&case[key]);
    if case["dtype"].as_str() != Some("complex64") {
        return ts;
    }
    ts.into_iter()
        .map(|t| {
            let dtype = if t.dtype().is_complex() {
                DType::C64
            } else {
                DType::F32
            };
            t.cast(dtype).unwrap()
        })
        .collect()
}

/// Checks one fixture case: our values against JAX's to `value_tol` and, where the case has them,
/// our JVP along its tangents and our VJP of its cotangents (the gradient of the real pairing
/// `Re Σ u ⊙ f(x)`, i.e. `jax.vjp`'s result) to `derivative_tol`. Returns whether derivatives were
/// checked.
pub(super) fn check_fixture_case(case: &Value, value_tol: f64, derivative_tol: f64) -> bool {
    let ad = ad();
    let name = case["name"].as_str().unwrap();
    let xs = vars(&case_tensors(case, "inputs"));
    let what = format!("{name} {:?} {}", xs[0].shape(), xs[0].dtype());
    let ys = function(name, &xs).unwrap();
    compare(&ys, &case_tensors(case, "values"), value_tol, &what);
    if case.get("jvp").is_none() {
        return false;
    }
    let refs: Vec<&T> = xs.iter().collect();
    let vs = case_tensors(case, "tangents");
    let vrefs: Vec<&T> = vs.iter().collect();
    let jvp: Vec<T> = ys
        .iter()
        .map(|y| ad.jvp_n(y, &refs, &vrefs).unwrap())
        .collect();
    let want = case_tensors(case, "jvp");
    compare(&jvp, &want, derivative_tol, &format!("{what} jvp"));
    let us = case_tensors(case, "cotangents");
    let vjp = ad.grads(&real_dot(&ys, &us), &refs).unwrap();
    let want = case_tensors(case, "vjp");
    compare(&vjp, &want, derivative_tol, &format!("{what} vjp"));
    true
}

#[test]
fn real_values_and_derivatives_match_jax() {
    let mut checked = (0, 0);
    for case in fixture_cases().iter().filter(|c| !is_complex(c)) {
        checked.0 += 1;
        checked.1 += usize::from(check_fixture_case(case, 1e-10, 1e-9));
    }
    assert_eq!(checked, (16, 13), "(value cases, derivative cases)");
}

/// One function of the family's factor ops, from inputs to results.
type OpFn = fn(&[T]) -> Result<Vec<T>>;

/// Real f64 cases for the derivative checks.
fn cases() -> Vec<(&'static str, OpFn, Vec<T>)> {
    vec![
        (
            "cholesky",
            |x| Ok(vec![nabla_linalg::cholesky(&x[0])?]),
            vec![spd(1, &[2, 3, 3])],
        ),
        (
            "triangular_solve lower left",
            |x| {
                let o = Triangular::default();
                Ok(vec![nabla_linalg::triangular_solve(&x[0], &x[1], o)?])
            },
            vec![near_identity(2, &[2, 3, 3]), tensor(3, &[2, 3, 2])],
        ),
        (
            "triangular_solve upper right unit adjoint",
            |x| {
                let o = Triangular {
                    lower: false,
                    left: false,
                    unit_diagonal: true,
                    adjoint: true,
                };
                Ok(vec![nabla_linalg::triangular_solve(&x[0], &x[1], o)?])
            },
            vec![near_identity(4, &[3, 3]), tensor(5, &[2, 3])],
        ),
        (
            "det",
            |x| Ok(vec![nabla_linalg::det(&x[0])?]),
            vec![near_identity(6, &[2, 3, 3])],
        ),
        (
            "slogdet",
            |x| {
                let (s, l) = nabla_linalg::slogdet(&x[0])?;
                Ok(vec![s, l])
            },
            vec![near_identity(7, &[2, 3, 3]).neg().unwrap()],
        ),
        (
            "lu",
            |x| {
                let (p, l, u) = nabla_linalg::lu(&x[0])?;
                Ok(vec![p, l, u])
            },
            vec![tensor(8, &[2, 3, 3])],
        ),
        (
            "qr tall",
            |x| {
                let (q, r) = nabla_linalg::qr(&x[0])?;
                Ok(vec![q, r])
            },
            vec![tensor(9, &[2, 4, 3])],
        ),
        (
            "qr_full square",
            |x| {
                let (q, r) = nabla_linalg::qr_full(&x[0])?;
                Ok(vec![q, r])
            },
            vec![tensor(10, &[3, 3])],
        ),
        (
            "lstsq",
            |x| Ok(vec![nabla_linalg::lstsq(&x[0], &x[1])?]),
            vec![tensor(11, &[2, 4, 2]), tensor(12, &[2, 4, 3])],
        ),
    ]
}

#[test]
fn reverse_rules_match_central_differences() {
    let ad = ad();
    for (name, f, inputs) in cases() {
        let xs = vars(&inputs);
        let ys = f(&xs).unwrap();
        let ws: Vec<T> = (0..ys.len())
            .map(|i| tensor(90 + i as u64, ys[i].shape()))
            .collect();
        let loss = |xs: &[T]| -> f64 { dot(&f(xs).unwrap(), &ws).item().unwrap() };
        let refs: Vec<&T> = xs.iter().collect();
        let grads = ad.grads(&dot(&ys, &ws), &refs).unwrap();
        for (i, grad) in grads.iter().enumerate() {
            let numeric = central_differences(&loss, &inputs, i);
            assert_real_close(&values(grad), &numeric, 1e-6, &format!("{name} d/dx{i}"));
        }
    }
}

#[test]
fn forward_and_reverse_rules_satisfy_the_adjoint_identity() {
    let ad = ad();
    for (name, f, inputs) in cases() {
        let xs = vars(&inputs);
        let refs: Vec<&T> = xs.iter().collect();
        let ys = f(&xs).unwrap();
        let vs: Vec<T> = xs
            .iter()
            .enumerate()
            .map(|(i, x)| tensor(10 + i as u64, x.shape()))
            .collect();
        let vrefs: Vec<&T> = vs.iter().collect();
        let us: Vec<T> = (0..ys.len())
            .map(|i| tensor(20 + i as u64, ys[i].shape()))
            .collect();
        let jv: Vec<T> = ys
            .iter()
            .map(|y| ad.jvp_n(y, &refs, &vrefs).unwrap())
            .collect();
        let jtu = ad.grads(&dot(&ys, &us), &refs).unwrap();
        let lhs: f64 = dot(&us, &jv).item().unwrap();
        let rhs: f64 = dot(&jtu, &vs).item().unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-11 * (1.0 + lhs.abs()),
            "{name}: <u, Jv> = {lhs} but <Jᵀu, v> = {rhs}"
        );
    }
}

#[test]
fn second_derivatives_agree_across_modes_and_with_differences() {
    let ad = ad();
    let cases: [(&str, OpFn, T); 2] = [
        (
            "cholesky",
            |x| Ok(vec![nabla_linalg::cholesky(&x[0])?.tanh()?]),
            spd(30, &[3, 3]),
        ),
        (
            "qr",
            |x| {
                let (q, r) = nabla_linalg::qr(&x[0])?;
                Ok(vec![q.sin()?, r.mul(&r)?])
            },
            tensor(31, &[4, 3]),
        ),
    ];
    for (name, f, x0) in cases {
        let v = tensor(32, x0.shape());
        let grad_at = |x: &T| -> T {
            let x = Tensor::var("x", x.clone()).unwrap();
            let ys = f(std::slice::from_ref(&x)).unwrap();
            let ws: Vec<T> = (0..ys.len())
                .map(|i| tensor(40 + i as u64, ys[i].shape()))
                .collect();
            ad.grad(&dot(&ys, &ws), &x).unwrap()
        };
        let x = Tensor::var("x", x0.clone()).unwrap();
        let ys = f(std::slice::from_ref(&x)).unwrap();
        let ws: Vec<T> = (0..ys.len())
            .map(|i| tensor(40 + i as u64, ys[i].shape()))
            .collect();
        let g = ad.grad(&dot(&ys, &ws), &x).unwrap();
        let fwd_over_rev = ad.jvp(&g, &x, &v).unwrap();
        let rev_over_rev = ad.grad(&dot(&[g], std::slice::from_ref(&v)), &x).unwrap();
        let eps = 1e-5;
        let shifted = |d: f64| values(&grad_at(&x0.add(v.mul(d).unwrap()).unwrap()));
        let numeric: Vec<f64> = shifted(eps)
            .iter()
            .zip(shifted(-eps))
            .map(|(a, b)| (a - b) / (2.0 * eps))
            .collect();
        let what = format!("{name} Hv");
        assert_real_close(&values(&fwd_over_rev), &numeric, 1e-6, &what);
        assert_real_close(&values(&rev_over_rev), &numeric, 1e-6, &what);
    }
}

#[test]
fn values_satisfy_their_definitions() {
    let close = |a: &T, b: &T, tol: f64, what: &str| {
        assert_eq!(a.shape(), b.shape(), "{what}");
        assert_close(&cvalues(a), &cvalues(b), tol, what);
    };
    let h = |x: &T| x.t().unwrap().conj().unwrap();
    let upper = |r: &T| {
        let v = cvalues(r);
        let (m, n) = (r.shape()[r.rank() - 2], r.shape()[r.rank() - 1]);
        v.iter()
            .enumerate()
            .all(|(k, x)| (k % (m * n)) / n <= k % n || *x == Complex64::new(0.0, 0.0))
    };
    let complex = |seed: u64, shape: &[usize]| {
        let re = tensor(seed, shape).cast(DType::C128).unwrap();
        let im = tensor(seed + 1, shape).cast(DType::C128).unwrap();
        let i = Tensor::from_vec(vec![Complex64::new(0.0, 1.0)], [1], &cpu()).unwrap();
        re.add(im.mul(&i).unwrap()).unwrap()
    };
    for (dtype, tol) in [
        (DType::F64, 1e-12),
        (DType::F32, 1e-5),
        (DType::C128, 1e-12),
    ] {
        let a_of = |seed, shape: &[usize]| match dtype {
            DType::C128 => complex(seed, shape),
            d => tensor(seed, shape).cast(d).unwrap(),
        };
        for shape in [[2, 5, 3], [2, 3, 5], [2, 4, 4]] {
            let a = a_of(50, &shape);
            let (m, n) = (shape[1], shape[2]);
            let (q, r) = nabla_linalg::qr(&a).unwrap();
            close(&q.matmul(&r).unwrap(), &a, tol, "Q R = A");
            let k = m.min(n);
            let eye_k = Tensor::eye(k, dtype, &cpu()).unwrap();
            let eye_k = eye_k.broadcast_to([2, k, k]).unwrap();
            close(&h(&q).matmul(&q).unwrap(), &eye_k, tol, "Qᴴ Q = I");
            assert!(upper(&r), "R upper triangular");
            let (qf, rf) = nabla_linalg::qr_full(&a).unwrap();
            assert_eq!((qf.shape(), rf.shape()), (&[2, m, m][..], &[2, m, n][..]));
            close(&qf.matmul(&rf).unwrap(), &a, tol, "full Q R = A");
            let eye_m = Tensor::eye(m, dtype, &cpu()).unwrap();
            let eye_m = eye_m.broadcast_to([2, m, m]).unwrap();
            close(&h(&qf).matmul(&qf).unwrap(), &eye_m, tol, "full Qᴴ Q = I");

            let (p, l, u) = nabla_linalg::lu(&a).unwrap();
            assert_eq!(l.shape(), &[2, m, k]);
            close(
                &p.matmul(&l).unwrap().matmul(&u).unwrap(),
                &a,
                tol,
                "P L U = A",
            );
            assert!(upper(&u) && upper(&h(&l)), "L lower, U upper");
        }
        let spd = match dtype {
            DType::C128 => {
                let x = complex(60, &[2, 3, 3]);
                let i3 = Tensor::eye(3, dtype, &cpu()).unwrap().mul(3.0).unwrap();
                x.matmul(&h(&x)).unwrap().add(&i3).unwrap()
            }
            d => spd(60, &[2, 3, 3]).cast(d).unwrap(),
        };
        let l = nabla_linalg::cholesky(&spd).unwrap();
        close(&l.matmul(&h(&l)).unwrap(), &spd, tol, "L Lᴴ = A");
        assert!(upper(&h(&l)), "L lower");
        let a = a_of(61, &[2, 3, 3]);
        let (sign, log) = nabla_linalg::slogdet(&a).unwrap();
        assert_eq!(log.dtype(), dtype.real());
        let det = nabla_linalg::det(&a).unwrap();
        let from_slogdet = sign.mul(log.exp().unwrap().cast(dtype).unwrap()).unwrap();
        close(&det, &from_slogdet, tol * 10.0, "det = sign exp(logabsdet)");
        let b = a_of(62, &[2, 3, 2]);
        let opts = Triangular {
            adjoint: true,
            ..Triangular::default()
        };
        let x = nabla_linalg::triangular_solve(&a, &b, opts).unwrap();
        let lower = l.clone(); // a lower-triangular matrix with A's dtype
        let x2 = nabla_linalg::triangular_solve(&lower, &b, opts).unwrap();
        close(&h(&lower).matmul(&x2).unwrap(), &b, tol * 10.0, "Lᴴ X = B");
        assert_eq!(x.shape(), &[2, 3, 2]);
    }
}

#[test]
fn degenerate_inputs_give_documented_values_or_errors() {
    let c = cpu();
    let singular = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], [2, 2], &c).unwrap();
    assert_eq!(
        nabla_linalg::det(&singular).unwrap().item::<f64>().unwrap(),
        0.0
    );
    let (s, l) = nabla_linalg::slogdet(&singular).unwrap();
    assert_eq!(s.item::<f64>().unwrap(), 0.0);
    assert_eq!(l.item::<f64>().unwrap(), f64::NEG_INFINITY);
    // The derivative of det at a singular matrix needs A⁻¹: an error, not NaN.
    let v = Tensor::var("a", singular.clone()).unwrap();
    let err = ad()
        .grad(&nabla_linalg::det(&v).unwrap(), &v)
        .unwrap_err()
        .to_string();
    assert!(err.contains("singular"), "{err}");
    // LU factors a singular matrix.
    let (p, l, u) = nabla_linalg::lu(&singular).unwrap();
    let back = p.matmul(&l).unwrap().matmul(&u).unwrap();
    assert_real_close(&values(&back), &values(&singular), 1e-15, "P L U");

    // Batch of two where the second matrix is indefinite.
    let batch = Tensor::from_vec(
        vec![4.0f64, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 1.0],
        [2, 2, 2],
        &c,
    )
    .unwrap();
    let err = nabla_linalg::cholesky(&batch).unwrap_err().to_string();
    assert!(
        err.contains("linalg.cholesky")
            && err.contains("matrix 1 of the batch")
            && err.contains("pivot 1 is -3"),
        "{err}"
    );
    let zero_diag = Tensor::from_vec(vec![1.0f64, 0.0, 5.0, 0.0], [2, 2], &c).unwrap();
    let b = tensor(1, &[2, 1]);
    let err = nabla_linalg::triangular_solve(&zero_diag, &b, Triangular::default())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("linalg.triangular_solve") && err.contains("diagonal entry 1 is 0"),
        "{err}"
    );
    // With a unit diagonal the zero is not read.
    let unit = Triangular {
        unit_diagonal: true,
        ..Triangular::default()
    };
    let x = nabla_linalg::triangular_solve(&zero_diag, &b, unit).unwrap();
    let bv = values(&b);
    assert_real_close(
        &values(&x),
        &[bv[0], bv[1] - 5.0 * bv[0]],
        1e-15,
        "unit solve",
    );

    // A rank-deficient least-squares problem (a zero column).
    let a = Tensor::from_vec(vec![1.0f64, 0.0, 2.0, 0.0, 3.0, 0.0], [3, 2], &c).unwrap();
    let err = nabla_linalg::lstsq(&a, &tensor(2, &[3, 1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("linalg.lstsq") && err.contains("full column rank"),
        "{err}"
    );
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    let c = cpu();
    let rect = tensor(1, &[2, 3]);
    for (op, err) in [
        ("linalg.cholesky", nabla_linalg::cholesky(&rect).err()),
        ("linalg.det", nabla_linalg::det(&rect).err()),
        ("linalg.slogdet", nabla_linalg::slogdet(&rect).err()),
        (
            "linalg.triangular_solve",
            nabla_linalg::triangular_solve(&rect, &rect, Triangular::default()).err(),
        ),
        (
            "linalg.lstsq",
            nabla_linalg::lstsq(&rect, &tensor(2, &[2, 1])).err(),
        ),
        ("linalg.qr", nabla_linalg::qr(&tensor(3, &[4])).err()),
    ] {
        let err = err.expect("an error").to_string();
        assert!(err.contains(op), "{op}: {err}");
    }
    let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], [2, 2], &c).unwrap();
    let err = nabla_linalg::lu(&ints).unwrap_err().to_string();
    assert!(err.contains("linalg.lu"), "{err}");
    // Derivatives that are not unique or not implemented are errors naming the op and the shape.
    let ad = ad();
    let tall = Tensor::var("a", tensor(4, &[5, 3])).unwrap();
    let (q, _) = nabla_linalg::qr_full(&tall).unwrap();
    let err = ad
        .grad(&q.sum_all().unwrap(), &tall)
        .unwrap_err()
        .to_string();
    assert!(err.contains("linalg.qr"), "{err}");
}

#[test]
fn traced_programs_run_factorisations_and_their_derivatives() {
    let tb = TracingBackend::new();
    let a = tb.placeholder([4, 3], DType::F64).unwrap();
    let s = tb.placeholder([3, 3], DType::F64).unwrap();
    let loss = |a: &Tensor<TracingBackend>, s: &Tensor<TracingBackend>| {
        let (q, r) = nabla_linalg::qr(a)?;
        let l = nabla_linalg::cholesky(s)?;
        q.sin()?.sum_all()?.add(r.matmul(&l)?.tanh()?.sum_all()?)
    };
    let ad = AdContext::new();
    let y = loss(&a, &s).unwrap();
    let g = ad.grads(&y, &[&a, &s]).unwrap();
    let program = tb.program(&[&y, &g[0], &g[1]]).unwrap();
    assert!(program.to_string().contains("linalg.qr"), "{program}");
    let exec = GraphExecutor::new(&cpu());
    let (ea, es) = (tensor(70, &[4, 3]), spd(71, &[3, 3]));
    let got = exec.run(&program, &[ea.clone(), es.clone()]).unwrap();
    let (va, vs) = (Tensor::var("a", ea).unwrap(), Tensor::var("s", es).unwrap());
    let (q, r) = nabla_linalg::qr(&va).unwrap();
    let l = nabla_linalg::cholesky(&vs).unwrap();
    let want_y = q
        .sin()
        .unwrap()
        .sum_all()
        .unwrap()
        .add(r.matmul(&l).unwrap().tanh().unwrap().sum_all().unwrap())
        .unwrap();
    let want = self::ad().grads(&want_y, &[&va, &vs]).unwrap();
    assert_real_close(&values(&got[0]), &values(&want_y), 1e-12, "traced loss");
    assert_real_close(&values(&got[1]), &values(&want[0]), 1e-12, "traced dA");
    assert_real_close(&values(&got[2]), &values(&want[1]), 1e-12, "traced dS");
}

#[test]
fn wide_qr_factors_and_differentiates() {
    use crate::spectral::flat_cat;
    use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order};
    let opts = GradCheckOptions::default();
    let close = |a: &T, b: &T, tol: f64, what: &str| {
        assert_eq!(a.shape(), b.shape(), "{what}");
        assert_close(&cvalues(a), &cvalues(b), tol, what);
    };
    let h = |x: &T| x.t().unwrap().conj().unwrap();
    let upper = |r: &T| {
        cvalues(&r.tril(-1).unwrap())
            .iter()
            .all(|z| z.norm() == 0.0)
    };
    let real = tensor(40, &[2, 3, 5]);
    let complex = Tensor::complex(&tensor(41, &[2, 4]), &tensor(42, &[2, 4])).unwrap();
    for a in [real, complex] {
        let (q, r) = nabla_linalg::qr(&a).unwrap();
        let (m, n) = (a.shape()[a.rank() - 2], a.shape()[a.rank() - 1]);
        assert_eq!(
            (q.dim(-1).unwrap(), r.dim(-2).unwrap(), r.dim(-1).unwrap()),
            (m, m, n)
        );
        close(&q.matmul(&r).unwrap(), &a, 1e-13, "Q R = A");
        let gram = h(&q).matmul(&q).unwrap();
        let eye = eye64(m).cast(a.dtype()).unwrap();
        close(
            &gram,
            &eye.broadcast_to(gram.shape().to_vec()).unwrap(),
            1e-13,
            "QᴴQ = I",
        );
        assert!(upper(&r), "R upper trapezoidal");
        // The complete factorisation of a wide matrix is the reduced one.
        let (qf, rf) = nabla_linalg::qr_full(&a).unwrap();
        close(&qf, &q, 0.0, "qr_full Q");
        close(&rf, &r, 0.0, "qr_full R");
        // Normalised to a real positive diagonal of R (unique, so smooth in A; for real input the
        // Householder signs already are), the factors' derivatives match central differences to
        // second order.
        let f = |v: &[T]| flat_cat(&normalised(nabla_linalg::qr(&v[0])?)?);
        check_gradients(f, std::slice::from_ref(&a), &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        let g = |v: &[T]| f(v)?.sin();
        check_second_order(g, std::slice::from_ref(&a), &opts)
            .unwrap()
            .assert_close(1e-6, 1e-5)
            .unwrap();
    }
}

#[test]
fn non_square_lu_differentiates_like_jax() {
    use crate::spectral::flat_cat;
    use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order};
    let opts = GradCheckOptions::default();
    // Away from pivot ties, P is constant and L, U are smooth functions of A.
    let complex = Tensor::complex(&tensor(52, &[3, 5]), &tensor(53, &[3, 5])).unwrap();
    for a in [tensor(50, &[2, 5, 3]), tensor(51, &[3, 5]), complex] {
        let f = |v: &[T]| {
            let (_, l, u) = nabla_linalg::lu(&v[0])?;
            flat_cat(&[l, u])
        };
        check_gradients(f, std::slice::from_ref(&a), &opts)
            .unwrap()
            .assert_close(1e-7, 1e-6)
            .unwrap();
        let g = |v: &[T]| f(v)?.sin();
        check_second_order(g, std::slice::from_ref(&a), &opts)
            .unwrap()
            .assert_close(1e-6, 1e-5)
            .unwrap();
        // The adjoint identity between the completed forward and reverse rules.
        let x = Tensor::var("x", a.clone()).unwrap();
        let y = f(std::slice::from_ref(&x)).unwrap();
        let (t, u) = (
            tensor(54, x.shape()).cast(a.dtype()).unwrap(),
            tensor(55, y.shape()).cast(y.dtype()).unwrap(),
        );
        let ad = AdContext::new();
        let jv = ad.jvp(&y, &x, &t).unwrap();
        let jtu = ad.vjp(&y, &x, &u).unwrap();
        let lhs: f64 = real_dot(&[u], &[jv]).item().unwrap();
        let rhs: f64 = real_dot(&[jtu], &[t]).item().unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()),
            "{lhs} vs {rhs}"
        );
    }
}

#[test]
fn non_square_lu_gradients_match_jax() {
    let fixture: Value =
        serde_json::from_str(include_str!("../fixtures/lu_nonsquare.json")).unwrap();
    for case in fixture["cases"].as_array().unwrap() {
        let x = Tensor::var("a", fixture_tensor(&case["input"])).unwrap();
        let (p, l, u) = nabla_linalg::lu(&x).unwrap();
        for (got, key) in [(&p, "p"), (&l, "l"), (&u, "u")] {
            compare(
                std::slice::from_ref(got),
                &[fixture_tensor(&case[key])],
                1e-12,
                key,
            );
        }
        let loss = l
            .mul(fixture_tensor(&case["wl"]))
            .unwrap()
            .sum_all()
            .unwrap()
            .add(
                u.mul(fixture_tensor(&case["wu"]))
                    .unwrap()
                    .sum_all()
                    .unwrap(),
            )
            .unwrap();
        let g = AdContext::new().grad(&loss, &x).unwrap();
        compare(
            &[g],
            &[fixture_tensor(&case["grad"])],
            1e-10,
            "LU gradient vs JAX",
        );
    }
}
