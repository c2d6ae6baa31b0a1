//! The spectral ops (eigh, svd, svdvals, matrix_exp, pinv, matrix_norm, eigvals): values against their
//! definitions and against JAX (fixture from scripts/gen_linalg_spectral_fixtures.py, real and
//! complex), derivative rules against JAX (real: JVP and VJP; complex: JVP), central differences
//! and the adjoint identity (real), second order; `spectral_cases` has definitions, degenerate
//! spectra, errors, traced programs and the complex adjoint identity.

pub(super) use super::support::*;
use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result};
use nabla_linalg::NormOrd;
use nabla_tensor::Tensor;
use serde_json::Value;

pub(super) const FIXTURE: &str = include_str!("../fixtures/spectral.json");

pub(super) fn complex_tensor(seed: u64, shape: &[usize]) -> T {
    let n: usize = shape.iter().product();
    let (re, im) = (data(seed, n), data(seed + 1000, n));
    let v: Vec<Complex64> = re
        .iter()
        .zip(&im)
        .map(|(&r, &i)| Complex64::new(r, i))
        .collect();
    Tensor::from_vec(v, shape.to_vec(), &cpu()).unwrap()
}

pub(super) fn assert_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

/// Real and imaginary parts of a tensor (zeros for a real one), as f64.
pub(super) fn parts(t: &T) -> (Vec<f64>, Vec<f64>) {
    if t.dtype().is_complex() {
        let v = t.cast(DType::C128).unwrap().to_vec::<Complex64>().unwrap();
        (
            v.iter().map(|z| z.re).collect(),
            v.iter().map(|z| z.im).collect(),
        )
    } else {
        let v = values(&t.cast(DType::F64).unwrap());
        let zeros = vec![0.0; v.len()];
        (v, zeros)
    }
}

pub(super) fn eye(n: usize, dtype: DType) -> T {
    Tensor::eye(n, dtype, &cpu()).unwrap()
}

/// `Xᴴ X` compared with the identity.
pub(super) fn assert_orthonormal_columns(x: &T, tol: f64, what: &str) {
    let k = x.dim(-1).unwrap();
    let gram = x.t().unwrap().conj().unwrap().matmul(x).unwrap();
    let want = eye(k, x.dtype())
        .broadcast_to(gram.shape().to_vec())
        .unwrap();
    let (gr, gi) = parts(&gram);
    let (wr, _) = parts(&want);
    assert_close(&gr, &wr, tol, what);
    assert_close(&gi, &vec![0.0; gi.len()], tol, what);
}

pub(super) fn assert_same(a: &T, b: &T, tol: f64, what: &str) {
    let ((ar, ai), (br, bi)) = (parts(a), parts(b));
    assert_close(&ar, &br, tol, &format!("{what} (re)"));
    assert_close(&ai, &bi, tol, &format!("{what} (im)"));
}

/// `|x|²` elementwise (a phase-invariant view of singular vectors and eigenvectors).
pub(super) fn gauge_free(x: &T) -> Result<T> {
    if x.dtype().is_complex() {
        x.abs()?.square()
    } else {
        x.square()
    }
}

/// The gauge-invariant outputs of a fixture op, as the generator defines them.
pub(super) fn outputs(op: &str, a: &T) -> Result<Vec<T>> {
    Ok(match op {
        "eigh" => {
            let (w, v) = nabla_linalg::eigh(a)?;
            vec![w, gauge_free(&v)?]
        }
        "svd" => {
            let (u, s, vh) = nabla_linalg::svd(a, false)?;
            vec![s, gauge_free(&u)?, gauge_free(&vh)?]
        }
        "svdvals" => vec![nabla_linalg::svdvals(a)?],
        "matrix_exp" => vec![nabla_linalg::matrix_exp(a)?],
        "pinv" => vec![nabla_linalg::pinv(a, None)?],
        "eigvals" => vec![nabla_linalg::eigvals(a)?],
        "eigvals_powers" => {
            let lam = nabla_linalg::eigvals(a)?;
            let (l2, l3) = (lam.mul(&lam)?, lam.mul(&lam)?.mul(&lam)?);
            let sums: Vec<T> = [&lam, &l2, &l3]
                .iter()
                .map(|p| p.sum(&[-1], false))
                .collect::<Result<_>>()?;
            vec![Tensor::stack(&sums.iter().collect::<Vec<_>>(), -1)?]
        }
        norm => {
            let ord: NormOrd = norm.trim_start_matches("norm_").parse()?;
            vec![nabla_linalg::matrix_norm(a, ord)?]
        }
    })
}

pub(super) fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// A fixture array (`{"shape", "re", "im"?}`) as an f64 or complex128 tensor.
pub(super) fn fixture_tensor(v: &Value) -> T {
    let shape: Vec<usize> = floats(&v["shape"]).iter().map(|&d| d as usize).collect();
    let re = floats(&v["re"]);
    match v.get("im") {
        Some(im) => {
            let z: Vec<Complex64> = re
                .iter()
                .zip(floats(im))
                .map(|(&r, i)| Complex64::new(r, i))
                .collect();
            Tensor::from_vec(z, shape, &cpu()).unwrap()
        }
        None => Tensor::from_vec(re, shape, &cpu()).unwrap(),
    }
}

/// Matches each computed eigenvalue to the nearest unused reference one (order-free comparison).
pub(super) fn assert_same_spectrum(got: &T, want: &T, tol: f64) {
    let ((gr, gi), (wr, wi)) = (parts(got), parts(want));
    let n = got.dim(-1).unwrap();
    for b in 0..gr.len() / n {
        let mut used = vec![false; n];
        for i in b * n..(b + 1) * n {
            let (j, d) = (b * n..(b + 1) * n)
                .filter(|&j| !used[j - b * n])
                .map(|j| (j, (gr[i] - wr[j]).hypot(gi[i] - wi[j])))
                .min_by(|x, y| x.1.total_cmp(&y.1))
                .expect("an unused eigenvalue");
            assert!(
                d <= tol,
                "eigenvalue ({}, {}) of matrix {b} has no match",
                gr[i],
                gi[i]
            );
            used[j - b * n] = true;
        }
    }
}

/// `A V = V diag(w)` with unit columns of `V`, in complex arithmetic.
pub(super) fn assert_eigenpairs(a: &T, w: &T, v: &T, tol: f64) {
    let ac = a.cast(v.dtype()).unwrap();
    let av = ac.matmul(v).unwrap();
    let vw = v.mul(w.unsqueeze(-2).unwrap()).unwrap();
    assert_same(&av, &vw, tol, "A V = V diag(w)");
    let norms = v
        .abs()
        .unwrap()
        .square()
        .unwrap()
        .sum(&[-2], false)
        .unwrap();
    let (nr, _) = parts(&norms);
    assert_close(&nr, &vec![1.0; nr.len()], tol, "unit eigenvectors");
}

#[test]
fn values_and_derivatives_match_jax() {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let ad = ad();
    let cases = fixture["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 34);
    let mut derivative_cases = 0;
    for (c, case) in cases.iter().enumerate() {
        let op = case["op"].as_str().expect("op");
        let what = format!("case {c} ({op})");
        let a = fixture_tensor(&case["input"]);
        let want: Vec<T> = case["outputs"]
            .as_array()
            .expect("outputs")
            .iter()
            .map(fixture_tensor)
            .collect();
        let got = outputs(op, &a).unwrap();
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.shape(), w.shape(), "{what}");
            if op == "eigvals" {
                assert_same_spectrum(g, w, 1e-10);
                let (lam, v) = nabla_linalg::eig(&a).unwrap();
                assert_same_spectrum(&lam, w, 1e-10);
                assert_eigenpairs(&a, &lam, &v, 1e-12);
            } else {
                assert_same(g, w, 1e-10, &what);
            }
        }
        let Some(weights) = case.get("weights") else {
            continue;
        };
        derivative_cases += 1;
        let weights: Vec<T> = weights
            .as_array()
            .expect("weights")
            .iter()
            .map(fixture_tensor)
            .collect();
        let x = Tensor::var("a", a.clone()).unwrap();
        let loss = |x: &T| -> Result<T> {
            let mut acc: Option<T> = None;
            for (o, w) in outputs(op, x)?.iter().zip(&weights) {
                let term = o.mul(w)?.sum_all()?;
                acc = Some(match acc {
                    Some(s) => s.add(&term)?,
                    None => term,
                });
            }
            let total = acc.expect("one output at least");
            if total.dtype().is_complex() {
                total.real()
            } else {
                Ok(total)
            }
        };
        let l = loss(&x).unwrap();
        let tangent = fixture_tensor(&case["tangent"]);
        assert_close(&values(&l), &[case["loss"].as_f64().unwrap()], 1e-10, &what);
        let jvp = ad.jvp(&l, &x, &tangent).unwrap();
        assert_close(
            &values(&jvp),
            &[case["jvp"].as_f64().unwrap()],
            1e-8,
            &format!("{what} jvp"),
        );
        if let Some(want) = case.get("grad") {
            let grad = ad.grad(&l, &x).unwrap();
            assert_close(
                &values(&grad),
                &values(&fixture_tensor(want)),
                1e-8,
                &format!("{what} grad"),
            );
        }
        if let Some(jvp_out) = case.get("jvp_out") {
            let y = outputs(op, &x).unwrap().remove(0);
            let got = ad.jvp(&y, &x, &tangent).unwrap();
            assert_close(
                &values(&got),
                &values(&fixture_tensor(jvp_out)),
                1e-8,
                &format!("{what} full jvp"),
            );
        }
    }
    assert_eq!(derivative_cases, 26);
}

/// A differentiable function of one input.
pub(super) type OpFn = fn(&T) -> Result<T>;

/// `(A + Aᵀ)/2`: eigh reads the lower triangle, so central differences perturb through this.
pub(super) fn sym(a: &T) -> Result<T> {
    a.add(&a.t()?)?.mul(0.5)
}

/// All results of a function of the op, flattened and concatenated (the adjoint identity covers the
/// gauge-dependent vectors too, as both rules see the same ones).
pub(super) fn flat_cat(parts: &[T]) -> Result<T> {
    let flat: Vec<T> = parts
        .iter()
        .map(|p| p.reshape([p.numel()]))
        .collect::<Result<_>>()?;
    Tensor::cat(&flat.iter().collect::<Vec<_>>(), 0)
}

/// Cases for the rule checks: a name, the full (gauge-dependent) results, a gauge-invariant
/// function of them, and an input.
/// All results of the SVD (`full` or reduced), or with the vectors squared (gauge-free) when `gauge_free`.
pub(super) fn svd_results(a: &T, full: bool, gauge_free: bool) -> Result<T> {
    let (u, s, vh) = nabla_linalg::svd(a, full)?;
    if gauge_free {
        flat_cat(&[u.square()?, s, vh.square()?])
    } else {
        flat_cat(&[u, s, vh])
    }
}

/// `Re Σ W ⊙ λ(A)` with a fixed complex `W`: a real function of the (complex) eigenvalues.
pub(super) fn eigvals_loss(a: &T) -> Result<T> {
    let lam = nabla_linalg::eigvals(a)?;
    let w = complex_tensor(90, lam.shape()).cast(lam.dtype())?;
    lam.mul(&w)?.sum(&[-1], false)?.real()
}

pub(super) fn rule_cases() -> Vec<(&'static str, OpFn, OpFn, T)> {
    vec![
        (
            "eigh",
            |a| {
                let (w, v) = nabla_linalg::eigh(a)?;
                flat_cat(&[w, v])
            },
            |a| {
                let (w, v) = nabla_linalg::eigh(&sym(a)?)?;
                flat_cat(&[w, v.square()?])
            },
            tensor(1, &[2, 4, 4]),
        ),
        (
            "svd tall",
            |a| svd_results(a, false, false),
            |a| svd_results(a, false, true),
            tensor(2, &[2, 5, 3]),
        ),
        (
            "svd wide",
            |a| svd_results(a, false, false),
            |a| svd_results(a, false, true),
            tensor(3, &[3, 4]),
        ),
        (
            "svd full square",
            |a| svd_results(a, true, false),
            |a| svd_results(a, true, true),
            tensor(4, &[3, 3]),
        ),
        (
            "eigvals",
            eigvals_loss,
            eigvals_loss,
            tensor(11, &[2, 4, 4]),
        ),
        (
            "svdvals",
            nabla_linalg::svdvals,
            nabla_linalg::svdvals,
            tensor(5, &[2, 4, 3]),
        ),
        (
            // Large enough that an eager svdvals differentiates through the full SVD.
            "svdvals 26 x 25",
            nabla_linalg::svdvals,
            nabla_linalg::svdvals,
            tensor(12, &[26, 25]),
        ),
        (
            "matrix_exp",
            nabla_linalg::matrix_exp,
            nabla_linalg::matrix_exp,
            tensor(6, &[2, 3, 3]).mul(2.0).unwrap(),
        ),
        (
            "pinv",
            |a| nabla_linalg::pinv(a, None),
            |a| nabla_linalg::pinv(a, None),
            tensor(7, &[3, 4]),
        ),
        (
            "matrix_norm nuc",
            |a| nabla_linalg::matrix_norm(a, NormOrd::Nuc),
            |a| nabla_linalg::matrix_norm(a, NormOrd::Nuc),
            tensor(8, &[2, 3, 4]),
        ),
        (
            "matrix_norm -2",
            |a| nabla_linalg::matrix_norm(a, NormOrd::NegTwo),
            |a| nabla_linalg::matrix_norm(a, NormOrd::NegTwo),
            tensor(9, &[4, 3]),
        ),
    ]
}

/// The central-difference gradient of `Σ w ⊙ f(x)` at `x`.
pub(super) fn numeric_gradient(f: OpFn, x: &T, w: &T) -> Vec<f64> {
    let base = values(x);
    let eps = 1e-6;
    (0..base.len())
        .map(|k| {
            let at = |d: f64| {
                let mut v = base.clone();
                v[k] += d;
                let xs = Tensor::from_vec(v, x.shape().to_vec(), &cpu()).unwrap();
                f(&xs)
                    .unwrap()
                    .mul(w)
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .item::<f64>()
                    .unwrap()
            };
            (at(eps) - at(-eps)) / (2.0 * eps)
        })
        .collect()
}

#[test]
fn reverse_rules_match_central_differences() {
    let ad = ad();
    for (name, _, f, input) in rule_cases() {
        let x = Tensor::var("x", input.clone()).unwrap();
        let y = f(&x).unwrap();
        let w = tensor(99, y.shape());
        let grad = ad.grad(&y.mul(&w).unwrap().sum_all().unwrap(), &x).unwrap();
        assert_close(&values(&grad), &numeric_gradient(f, &input, &w), 1e-6, name);
    }
}

#[test]
fn forward_and_reverse_rules_satisfy_the_adjoint_identity() {
    let ad = ad();
    for (name, full, _, input) in rule_cases() {
        let x = Tensor::var("x", input.clone()).unwrap();
        let y = full(&x).unwrap();
        let v = tensor(10, x.shape());
        let u = tensor(20, y.shape());
        let jv = ad.jvp(&y, &x, &v).unwrap();
        let jtu = ad.vjp(&y, &x, &u).unwrap();
        let lhs: f64 = dot(&[u], &[jv]).item().unwrap();
        let rhs: f64 = dot(&[jtu], &[v]).item().unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()),
            "{name}: <u, Jv> = {lhs} but <Jᵀu, v> = {rhs}"
        );
    }
}

#[test]
fn second_derivatives_match_differences_of_gradients() {
    let ad = ad();
    let cases: [(&str, OpFn, T); 4] = [
        ("matrix_exp", nabla_linalg::matrix_exp, tensor(30, &[3, 3])),
        (
            "eigh",
            |a| {
                let (w, v) = nabla_linalg::eigh(&sym(a)?)?;
                flat_cat(&[w, v.square()?])
            },
            tensor(31, &[3, 3]),
        ),
        ("svdvals", nabla_linalg::svdvals, tensor(32, &[4, 3])),
        (
            "svdvals 25 x 24",
            nabla_linalg::svdvals,
            tensor(35, &[25, 24]),
        ),
    ];
    for (name, f, input) in cases {
        let w = tensor(33, f(&input).unwrap().shape());
        let dir = tensor(34, input.shape());
        let gradient = |x: &T| -> Result<(T, T)> {
            let x = Tensor::var("x", x.clone())?;
            let g = ad.grad(&f(&x)?.mul(&w)?.sum_all()?, &x)?;
            Ok((x, g))
        };
        let (x, g) = gradient(&input).unwrap();
        // Reverse over reverse and forward over reverse.
        let hvp_rev = ad
            .grad(&g.mul(&dir).unwrap().sum_all().unwrap(), &x)
            .unwrap();
        let hvp_fwd = ad.jvp(&g, &x, &dir).unwrap();
        let eps = 1e-5;
        let shifted = |d: f64| {
            values(
                &gradient(&input.add(dir.mul(d).unwrap()).unwrap())
                    .unwrap()
                    .1,
            )
        };
        let (plus, minus) = (shifted(eps), shifted(-eps));
        let numeric: Vec<f64> = plus
            .iter()
            .zip(&minus)
            .map(|(p, m)| (p - m) / (2.0 * eps))
            .collect();
        assert_close(
            &values(&hvp_rev),
            &numeric,
            1e-6,
            &format!("{name} rev-over-rev"),
        );
        assert_close(
            &values(&hvp_fwd),
            &numeric,
            1e-6,
            &format!("{name} fwd-over-rev"),
        );
    }
}
