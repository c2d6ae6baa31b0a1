//! The spectral ops, continued: values against their definitions, degenerate spectra, errors, traced
//! programs and the adjoint identity of the complex rules (helpers in `spectral`).

use super::spectral::*;
use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result};
use nabla_linalg::NormOrd;
use nabla_tensor::{AdContext, GraphExecutor, Tensor, TracingBackend};

#[test]
fn values_satisfy_their_definitions() {
    // eigh: A V = V diag(w), V orthonormal, w ascending; f64 and f32, batched.
    let a = sym(&tensor(40, &[3, 5, 5])).unwrap();
    for (dtype, tol) in [(DType::F64, 1e-12), (DType::F32, 1e-5)] {
        let a = a.cast(dtype).unwrap();
        let (w, v) = nabla_linalg::eigh(&a).unwrap();
        let av = a.matmul(&v).unwrap();
        let vw = v.mul(w.unsqueeze(-2).unwrap()).unwrap();
        assert_same(&av, &vw, tol, "A V = V diag(w)");
        assert_orthonormal_columns(&v, tol, "VᵀV = I");
        let w = values(&w.cast(DType::F64).unwrap());
        assert!(
            w.chunks(5).all(|c| c.windows(2).all(|p| p[0] <= p[1])),
            "{w:?}"
        );
    }
    // svd: reduced and full, tall and wide, real and complex.
    for (seed, shape) in [(41, vec![2, 5, 3]), (42, vec![3, 6]), (43, vec![4, 4])] {
        for complex in [false, true] {
            let a = if complex {
                complex_tensor(seed, &shape)
            } else {
                tensor(seed, &shape)
            };
            let (u, s, vh) = nabla_linalg::svd(&a, false).unwrap();
            let us = u
                .mul(s.cast(a.dtype()).unwrap().unsqueeze(-2).unwrap())
                .unwrap();
            assert_same(&us.matmul(&vh).unwrap(), &a, 1e-12, "U S Vh = A");
            assert_orthonormal_columns(&u, 1e-12, "UᴴU = I");
            assert_orthonormal_columns(&vh.t().unwrap(), 1e-12, "Vh Vhᴴ = I");
            assert_same(
                &nabla_linalg::svdvals(&a).unwrap(),
                &s,
                1e-12,
                "svdvals = S",
            );
            let (uf, sf, vhf) = nabla_linalg::svd(&a, true).unwrap();
            let (m, n) = (shape[shape.len() - 2], shape[shape.len() - 1]);
            assert_eq!((uf.dim(-1).unwrap(), vhf.dim(-2).unwrap()), (m, n));
            assert_orthonormal_columns(&uf, 1e-12, "full U unitary");
            assert_orthonormal_columns(&vhf.t().unwrap(), 1e-12, "full Vh unitary");
            assert_same(&sf, &s, 1e-12, "full S");
            // pinv: A A⁺ A = A and (A⁺ A)ᴴ = A⁺ A.
            let p = nabla_linalg::pinv(&a, None).unwrap();
            let apa = a.matmul(&p).unwrap().matmul(&a).unwrap();
            assert_same(&apa, &a, 1e-12, "A A⁺ A = A");
        }
    }
    // matrix_exp: exp(A) exp(-A) = I, exp(diag) = diag(exp); f32 too.
    let a = tensor(44, &[2, 4, 4]).mul(3.0).unwrap();
    let e = nabla_linalg::matrix_exp(&a).unwrap();
    let e_neg = nabla_linalg::matrix_exp(&a.neg().unwrap()).unwrap();
    let want = eye(4, DType::F64).broadcast_to([2, 4, 4]).unwrap();
    assert_same(
        &e.matmul(&e_neg).unwrap(),
        &want,
        1e-11,
        "exp(A) exp(-A) = I",
    );
    let d = Tensor::from_vec(vec![0.5f64, 0.0, 0.0, -8.0], [2, 2], &cpu()).unwrap();
    let got = values(&nabla_linalg::matrix_exp(&d).unwrap());
    assert_close(
        &got,
        &[0.5f64.exp(), 0.0, 0.0, (-8.0f64).exp()],
        1e-14,
        "exp(diag)",
    );
    let e32 = nabla_linalg::matrix_exp(&a.cast(DType::F32).unwrap()).unwrap();
    assert_same(&e32, &e, 1e-4, "matrix_exp f32");
    // pinv of a rank-deficient matrix: the zero singular value is cut off.
    let r1 = Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0], [2, 2], &cpu()).unwrap();
    let p = values(&nabla_linalg::pinv(&r1, None).unwrap());
    assert_close(
        &p,
        &[0.04, 0.08, 0.08, 0.16],
        1e-14,
        "pinv of a rank-1 matrix",
    );
    // eigvals: a rotation has ±i; the sum is the trace; complex64 for f32 input.
    let rot = Tensor::from_vec(vec![0.0f32, -1.0, 1.0, 0.0], [2, 2], &cpu()).unwrap();
    let lam = nabla_linalg::eigvals(&rot).unwrap();
    assert_eq!(lam.dtype(), DType::C64);
    let want = Tensor::from_vec(
        vec![Complex64::new(0.0, 1.0), Complex64::new(0.0, -1.0)],
        [2],
        &cpu(),
    )
    .unwrap();
    assert_same_spectrum(&lam, &want, 1e-6);
    for a in [tensor(46, &[2, 5, 5]), complex_tensor(47, &[3, 4, 4])] {
        let (lam, v) = nabla_linalg::eig(&a).unwrap();
        assert_eigenpairs(&a, &lam, &v, 1e-12);
        assert_same(
            &lam,
            &nabla_linalg::eigvals(&a).unwrap(),
            1e-12,
            "eig and eigvals agree",
        );
    }
    let g = tensor(45, &[3, 6, 6]);
    let lam = parts(&nabla_linalg::eigvals(&g).unwrap());
    let traces = values(
        &g.mul(eye(6, DType::F64))
            .unwrap()
            .sum(&[-2, -1], false)
            .unwrap(),
    );
    for (b, tr) in traces.iter().enumerate() {
        let (re, im): (f64, f64) = (
            lam.0[b * 6..][..6].iter().sum(),
            lam.1[b * 6..][..6].iter().sum(),
        );
        assert!(
            (re - tr).abs() < 1e-12 && im.abs() < 1e-12,
            "{re} {im} vs {tr}"
        );
    }
    // Norms against their definitions on a small matrix.
    let m = Tensor::from_vec(vec![3.0f64, 0.0, 0.0, -4.0], [2, 2], &cpu()).unwrap();
    for (ord, want) in [
        ("fro", 5.0),
        ("nuc", 7.0),
        ("2", 4.0),
        ("-2", 3.0),
        ("1", 4.0),
        ("-1", 3.0),
        ("inf", 4.0),
        ("-inf", 3.0),
    ] {
        let got = nabla_linalg::matrix_norm(&m, ord.parse().unwrap()).unwrap();
        assert!((got.item::<f64>().unwrap() - want).abs() < 1e-14, "{ord}");
    }
}

#[test]
fn degenerate_spectra_give_finite_exact_derivatives() {
    let ad = ad();
    // A symmetric matrix with a repeated eigenvalue: Q diag(1, 1, 3) Qᵀ with Q orthogonal.
    let (_, q) = nabla_linalg::eigh(&sym(&tensor(50, &[3, 3])).unwrap()).unwrap();
    let d = Tensor::from_vec(vec![1.0f64, 1.0, 3.0], [3], &cpu()).unwrap();
    let a = q
        .mul(d.unsqueeze(0).unwrap())
        .unwrap()
        .matmul(&q.t().unwrap())
        .unwrap();
    let x = Tensor::var("a", a.clone()).unwrap();
    // Σ w² = ‖A‖_F²: gradient 2A; the eigenvectors take part through the (dropped) gaps.
    let (w, v) = nabla_linalg::eigh(&x).unwrap();
    let loss = w.square().unwrap().sum_all().unwrap();
    let vv = v.square().unwrap().sum_all().unwrap(); // basis-invariant: Σ |V|² = n
    let g = ad.grad(&loss.add(&vv).unwrap(), &x).unwrap();
    assert_close(
        &values(&g),
        &values(&a.mul(2.0).unwrap()),
        1e-10,
        "eigh, repeated λ",
    );
    // The identity: every eigenvalue repeated.
    let i3 = Tensor::var("i", eye(3, DType::F64)).unwrap();
    let (w, _) = nabla_linalg::eigh(&i3).unwrap();
    let g = ad.grad(&w.sum_all().unwrap(), &i3).unwrap();
    assert_close(
        &values(&g),
        &values(&eye(3, DType::F64)),
        1e-12,
        "d tr / dA = I",
    );
    // An orthogonal matrix times 2: all singular values equal. Σ s has gradient U Vᵀ = A / 2.
    let o = Tensor::var("o", q.mul(2.0).unwrap()).unwrap();
    let (u, s, vh) = nabla_linalg::svd(&o, false).unwrap();
    let loss = s
        .sum_all()
        .unwrap()
        .add(u.square().unwrap().sum_all().unwrap())
        .unwrap();
    let loss = loss.add(vh.square().unwrap().sum_all().unwrap()).unwrap();
    let g = ad.grad(&loss, &o).unwrap();
    assert_close(&values(&g), &values(&q), 1e-10, "svd, repeated s");
    // A rank-deficient rectangular matrix: s has a zero; derivatives stay finite.
    let r = Tensor::var(
        "r",
        Tensor::from_vec(vec![1.0f64, 2.0, 2.0, 4.0, 3.0, 6.0], [3, 2], &cpu()).unwrap(),
    )
    .unwrap();
    let (u, s, _) = nabla_linalg::svd(&r, false).unwrap();
    let g = ad
        .grad(&s.sum_all().unwrap().add(u.sum_all().unwrap()).unwrap(), &r)
        .unwrap();
    assert!(values(&g).iter().all(|v| v.is_finite()), "{:?}", values(&g));
}

/// Fails unless the message `e` contains every one of `needles`.
fn mentions(e: &str, needles: &[&str]) {
    assert!(needles.iter().all(|n| e.contains(n)), "{e}");
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    let err = |r: Result<T>| r.unwrap_err().to_string();
    let rect = tensor(1, &[2, 3]);
    let e = nabla_linalg::eigh(&rect).unwrap_err().to_string();
    mentions(&e, &["linalg.eigh", "[2, 3]"]);
    let e = err(nabla_linalg::matrix_exp(&rect));
    mentions(&e, &["linalg.matrix_exp", "[2, 3]"]);
    let e = err(nabla_linalg::svdvals(&tensor(1, &[3])));
    mentions(&e, &["linalg.svdvals"]);
    let ints = Tensor::from_vec(vec![1i64, 0, 0, 1], [2, 2], &cpu()).unwrap();
    let e = err(nabla_linalg::eigvals(&ints));
    mentions(&e, &["linalg.eigvals", "int64"]);
    // A NaN names the op, the matrix of the batch and the position.
    let mut v = data(2, 8);
    v[6] = f64::NAN;
    let nan = Tensor::from_vec(v, [2, 2, 2], &cpu()).unwrap();
    for e in [
        err(nabla_linalg::svdvals(&nan)),
        nabla_linalg::eigh(&nan).unwrap_err().to_string(),
        err(nabla_linalg::matrix_exp(&nan)),
    ] {
        assert!(
            e.contains("matrix 1 of the batch") && e.contains("(1, 0)"),
            "{e}"
        );
    }
    // Overflow of the exponential.
    let big = eye(2, DType::F32).mul(200.0).unwrap();
    let e = err(nabla_linalg::matrix_exp(&big));
    mentions(&e, &["linalg.matrix_exp", "overflows"]);
    let e = "spectral".parse::<NormOrd>().unwrap_err().to_string();
    mentions(&e, &["linalg.matrix_norm", "fro"]);
    let e = err(nabla_linalg::pinv(&rect, Some(-1.0)));
    mentions(&e, &["linalg.pinv", "rcond"]);
    // Forward-mode derivatives of a non-square full SVD: an error naming the op and the fix.
    let ad = ad();
    let x = Tensor::var("a", tensor(3, &[4, 3])).unwrap();
    let (u, _, _) = nabla_linalg::svd(&x, true).unwrap();
    let e = ad.jvp(&u, &x, &tensor(4, &[4, 3])).unwrap_err().to_string();
    mentions(&e, &["linalg.svd", "4x3", "svd(a, false)"]);
}

#[test]
fn reverse_mode_through_a_non_square_full_svd_is_pytorchs() {
    // PyTorch's rule: the extra columns of U (rows of Vh) are an arbitrary basis, their cotangents
    // are dropped, so any loss of the first k vectors and the singular values differentiates as
    // through the reduced SVD.
    let ad = ad();
    for shape in [[4usize, 3], [2, 5]] {
        let x = Tensor::var("a", tensor(90, &shape)).unwrap();
        let k = shape[0].min(shape[1]);
        let (u, s, vh) = nabla_linalg::svd(&x, true).unwrap();
        let (ur, sr, vhr) = nabla_linalg::svd(&x, false).unwrap();
        let loss = |u: &T, s: &T, vh: &T| {
            let u = u.narrow(-1, 0, k).unwrap().square().unwrap();
            let vh = vh.narrow(-2, 0, k).unwrap().square().unwrap();
            flat_cat(&[u, s.clone(), vh])
                .unwrap()
                .sin()
                .unwrap()
                .sum_all()
                .unwrap()
        };
        let full = ad.grad(&loss(&u, &s, &vh), &x).unwrap();
        let reduced = ad.grad(&loss(&ur, &sr, &vhr), &x).unwrap();
        assert_close(
            &values(&full),
            &values(&reduced),
            1e-12,
            "full vs reduced SVD gradient",
        );
        // And a loss touching only the extra vectors gets a zero gradient.
        let extra = if shape[0] > k {
            u.narrow(-1, k, shape[0] - k).unwrap()
        } else {
            vh.narrow(-2, k, shape[1] - k).unwrap()
        };
        let g = ad.grad(&extra.sum_all().unwrap(), &x).unwrap();
        assert!(values(&g).iter().all(|v| *v == 0.0));
    }
}

#[test]
fn traced_programs_run_spectral_ops_and_their_derivatives() {
    let tb = TracingBackend::new();
    let a = tb.placeholder([2, 3, 3], DType::F64).unwrap();
    let ad = AdContext::new();
    let f = |a: &Tensor<TracingBackend>| -> Result<Tensor<TracingBackend>> {
        let s = nabla_linalg::svdvals(a)?.sum_all()?;
        s.add(nabla_linalg::matrix_exp(a)?.tanh()?.sum_all()?)
    };
    let loss = f(&a).unwrap();
    let grad = ad.grad(&loss, &a).unwrap();
    let program = tb.program(&[&loss, &grad]).unwrap();
    assert!(
        program.to_string().contains("linalg.matrix_exp"),
        "{program}"
    );
    let exec = GraphExecutor::new(&cpu());
    let input = tensor(60, &[2, 3, 3]);
    let got = exec.run(&program, std::slice::from_ref(&input)).unwrap();
    let x = Tensor::var("a", input).unwrap();
    let l = nabla_linalg::svdvals(&x).unwrap().sum_all().unwrap();
    let l = l
        .add(
            nabla_linalg::matrix_exp(&x)
                .unwrap()
                .tanh()
                .unwrap()
                .sum_all()
                .unwrap(),
        )
        .unwrap();
    let want = self::ad().grad(&l, &x).unwrap();
    assert_close(&values(&got[0]), &values(&l), 1e-12, "traced loss");
    assert_close(&values(&got[1]), &values(&want), 1e-12, "traced grad");
}

/// The complex rules under JAX's convention: the reverse rule is the transpose of the forward rule
/// under the real pairing `Re Σ uᵢvᵢ` (plain transposes; `conj`, `real` and the Hermitian parts make
/// eigh and svd only R-linear), so `Re Σ u ⊙ Jv = Re Σ (Jᵀu) ⊙ v`; for the holomorphic matrix_exp the
/// imaginary parts agree too.
#[test]
fn complex_rules_satisfy_the_adjoint_identity() {
    let ad = ad();
    let herm = |a: &T| -> Result<T> { a.add(&a.t()?.conj()?)?.mul(0.5) };
    let cases: Vec<(&str, OpFn, T)> = vec![
        (
            "eigh",
            |a| {
                let (w, v) = nabla_linalg::eigh(a)?;
                flat_cat(&[w.cast(v.dtype())?, v])
            },
            herm(&complex_tensor(80, &[2, 3, 3])).unwrap(),
        ),
        (
            "svd tall",
            |a| {
                let (u, s, vh) = nabla_linalg::svd(a, false)?;
                flat_cat(&[u, s.cast(vh.dtype())?, vh])
            },
            complex_tensor(81, &[2, 4, 3]),
        ),
        (
            "svd wide",
            |a| {
                let (u, s, vh) = nabla_linalg::svd(a, false)?;
                flat_cat(&[u, s.cast(vh.dtype())?, vh])
            },
            complex_tensor(82, &[3, 5]),
        ),
        (
            "matrix_exp",
            nabla_linalg::matrix_exp,
            complex_tensor(83, &[2, 3, 3]),
        ),
        (
            "eigvals",
            nabla_linalg::eigvals,
            complex_tensor(86, &[2, 3, 3]),
        ),
        (
            "eigvals of real input",
            nabla_linalg::eigvals,
            tensor(87, &[4, 4]),
        ),
    ];
    for (name, f, input) in cases {
        let x = Tensor::var("x", input.clone()).unwrap();
        let y = f(&x).unwrap();
        let v = if x.dtype().is_complex() {
            complex_tensor(84, x.shape())
        } else {
            tensor(84, x.shape())
        };
        let u = complex_tensor(85, y.shape());
        let jv = ad.jvp(&y, &x, &v).unwrap();
        let jtu = ad.vjp(&y, &x, &u).unwrap();
        let lhs = parts(&u.mul(&jv).unwrap().sum_all().unwrap());
        let rhs = parts(&jtu.mul(&v).unwrap().sum_all().unwrap());
        let holomorphic = name == "matrix_exp" || name == "eigvals";
        assert!(
            (lhs.0[0] - rhs.0[0]).abs() < 1e-10
                && (!holomorphic || (lhs.1[0] - rhs.1[0]).abs() < 1e-10),
            "{name}: <u, Jv> = {lhs:?} but <Jᵀu, v> = {rhs:?}"
        );
    }
}

/// `Re Σ W₁ ⊙ λ + Σ W₂ ⊙ |V|²`: a real function of eig's results that does not depend on the
/// eigenvectors' phases.
fn eig_loss(a: &T) -> Result<T> {
    let (lam, v) = nabla_linalg::eig(a)?;
    let w1 = complex_tensor(70, lam.shape()).cast(lam.dtype())?;
    let w2 = tensor(71, v.shape()).cast(v.abs()?.dtype())?;
    lam.mul(&w1)?
        .sum_all()?
        .real()?
        .add(&v.abs()?.square()?.mul(&w2)?.sum_all()?)
}

#[test]
fn eig_derivatives_match_central_differences_to_second_order() {
    use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order};
    let opts = GradCheckOptions::default();
    for input in [
        tensor(72, &[3, 3]),
        tensor(73, &[2, 4, 4]),
        complex_tensor(74, &[3, 3]),
    ] {
        let f = |v: &[T]| eig_loss(&v[0]);
        check_gradients(f, std::slice::from_ref(&input), &opts)
            .unwrap()
            .assert_close(1e-7, 1e-5)
            .unwrap();
        check_second_order(f, std::slice::from_ref(&input), &opts)
            .unwrap()
            .assert_close(1e-6, 1e-4)
            .unwrap();
        // Eigenvalues alone, to second order through eigvals (whose rules use eig).
        let g = |v: &[T]| eigvals_loss(&v[0]);
        check_second_order(g, &[input], &opts)
            .unwrap()
            .assert_close(1e-6, 1e-4)
            .unwrap();
    }
}

#[test]
fn eig_forward_and_reverse_rules_are_adjoint() {
    use crate::support::real_dot;
    let ad = AdContext::new();
    for input in [tensor(75, &[2, 3, 3]), complex_tensor(76, &[3, 3])] {
        let x = Tensor::var("x", input.clone()).unwrap();
        let (lam, v) = nabla_linalg::eig(&x).unwrap();
        let y = flat_cat(&[lam, v]).unwrap();
        let t = if input.dtype().is_complex() {
            complex_tensor(77, x.shape())
        } else {
            tensor(77, x.shape())
        };
        let u = complex_tensor(78, y.shape());
        let jv = ad.jvp(&y, &x, &t).unwrap();
        let jtu = ad.vjp(&y, &x, &u).unwrap();
        let lhs: f64 = real_dot(&[u], &[jv]).item().unwrap();
        let rhs: f64 = real_dot(&[jtu], &[t]).item().unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()),
            "<u, Jt> = {lhs}, <Jᵀu, t> = {rhs}"
        );
    }
}

#[test]
fn eig_gradients_match_pytorch() {
    use crate::support::{compare, fixture_tensor};
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/torch_eig.json")).unwrap();
    for case in fixture["cases"].as_array().unwrap() {
        let x = Tensor::var("a", fixture_tensor(&case["input"])).unwrap();
        let (lam, v) = nabla_linalg::eig(&x).unwrap();
        let loss = lam
            .real()
            .unwrap()
            .pow(3.0)
            .unwrap()
            .sum_all()
            .unwrap()
            .add(lam.imag().unwrap().square().unwrap().sum_all().unwrap())
            .unwrap()
            .add(v.abs().unwrap().pow(4.0).unwrap().sum_all().unwrap())
            .unwrap();
        let want = case["loss"].as_f64().unwrap();
        assert!((loss.item::<f64>().unwrap() - want).abs() < 1e-10 * (1.0 + want.abs()));
        let g = AdContext::new().grad(&loss, &x).unwrap();
        compare(
            &[g],
            &[fixture_tensor(&case["grad"])],
            1e-9,
            "eig gradient vs PyTorch",
        );
    }
}
