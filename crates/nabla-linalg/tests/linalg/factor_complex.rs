//! The factorisation ops on complex matrices (complex128, and complex64 to ~1e-4): values, JVPs and
//! VJPs against JAX (the complex cases of scripts/gen_linalg_factor_fixtures.py), the adjoint
//! identity `Re Σ u ⊙ (J v) = Re Σ (Jᵀu) ⊙ v` between our forward and reverse rules, gradients of
//! real losses against central differences along the real and imaginary parts, and second
//! derivatives.
//!
//! Convention (JAX's): the JVP of a holomorphic map is `f'(z)·dz` (the real-linear tangent map for
//! the others: cholesky's symmetrisation, slogdet's sign and log, normalised QR); the VJP of `u` is
//! the transpose of the JVP under the real pairing `Re Σ uᵢvᵢ` (no conjugation), which is what
//! `jax.vjp` returns and what `grad` of the real loss `Re Σ u ⊙ f(z)` gives here.

use super::factor::{case_tensors, check_fixture_case, fixture_cases, function, is_complex};
use super::support::*;
use nabla_core::DType;
use nabla_core::num_complex::Complex64;
use nabla_tensor::Tensor;
use serde_json::Value;

/// The complex cases of the fixture.
fn complex_cases() -> Vec<Value> {
    fixture_cases().into_iter().filter(is_complex).collect()
}

/// Whether a case is single precision.
fn single(case: &Value) -> bool {
    case["dtype"].as_str() == Some("complex64")
}

/// The case's name and input shape and dtype, for messages.
fn describe(case: &Value, xs: &[T]) -> String {
    let name = case["name"].as_str().unwrap();
    format!("{name} {:?} {}", xs[0].shape(), xs[0].dtype())
}

#[test]
fn complex_values_and_derivatives_match_jax() {
    // (value cases, derivative cases) for complex128 and complex64.
    let mut checked = [(0, 0), (0, 0)];
    for case in complex_cases() {
        let (slot, tols) = if single(&case) {
            (1, (1e-4, 1e-4))
        } else {
            (0, (1e-10, 1e-9))
        };
        checked[slot].0 += 1;
        checked[slot].1 += usize::from(check_fixture_case(&case, tols.0, tols.1));
    }
    assert_eq!(checked, [(18, 16), (5, 5)], "[complex128, complex64]");
}

#[test]
fn complex_rules_satisfy_the_adjoint_identity() {
    let ad = ad();
    let mut count = 0;
    for case in complex_cases().iter().filter(|c| c.get("jvp").is_some()) {
        let xs = vars(&case_tensors(case, "inputs"));
        let what = describe(case, &xs);
        let refs: Vec<&T> = xs.iter().collect();
        let ys = function(case["name"].as_str().unwrap(), &xs).unwrap();
        let vs = case_tensors(case, "tangents");
        let vrefs: Vec<&T> = vs.iter().collect();
        let us = case_tensors(case, "cotangents");
        let jv: Vec<T> = ys
            .iter()
            .map(|y| ad.jvp_n(y, &refs, &vrefs).unwrap())
            .collect();
        let jtu = ad.grads(&real_dot(&ys, &us), &refs).unwrap();
        let lhs = real_dot(&jv, &us).cast(DType::F64).unwrap();
        let rhs = real_dot(&jtu, &vs).cast(DType::F64).unwrap();
        let (lhs, rhs): (f64, f64) = (lhs.item().unwrap(), rhs.item().unwrap());
        let tol = if single(case) { 1e-4 } else { 1e-11 };
        assert!(
            (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()),
            "{what}: Re <u, Jv> = {lhs} but Re <Jᵀu, v> = {rhs}"
        );
        count += 1;
    }
    assert_eq!(count, 21);
}

/// `x` with element `k`'s real (`imag = false`) or imaginary part moved by `d`.
fn nudged(x: &T, k: usize, imag: bool, d: f64) -> T {
    let mut v = cvalues(x);
    v[k] += if imag {
        Complex64::new(0.0, d)
    } else {
        Complex64::new(d, 0.0)
    };
    Tensor::from_vec(v, x.shape().to_vec(), &cpu()).unwrap()
}

/// `∂L/∂x − i ∂L/∂y` of the real `loss` at input `i` of `inputs`, element by element, by central
/// differences (step 1e-6): what `grad` returns for complex inputs.
fn conjugate_gradient_by_differences(
    loss: &dyn Fn(&[T]) -> f64,
    inputs: &[T],
    i: usize,
) -> Vec<Complex64> {
    let eps = 1e-6;
    let partial = |k: usize, imag: bool| {
        let at = |d: f64| {
            let mut xs = inputs.to_vec();
            xs[i] = nudged(&inputs[i], k, imag, d);
            loss(&xs)
        };
        (at(eps) - at(-eps)) / (2.0 * eps)
    };
    (0..inputs[i].numel())
        .map(|k| Complex64::new(partial(k, false), -partial(k, true)))
        .collect()
}

#[test]
fn complex_reverse_rules_match_central_differences() {
    let ad = ad();
    let mut count = 0;
    for case in complex_cases()
        .iter()
        .filter(|c| c.get("vjp").is_some() && !single(c))
    {
        let name = case["name"].as_str().unwrap();
        let inputs = case_tensors(case, "inputs");
        let us = case_tensors(case, "cotangents");
        let loss =
            |xs: &[T]| -> f64 { real_dot(&function(name, xs).unwrap(), &us).item().unwrap() };
        let xs = vars(&inputs);
        let what = describe(case, &xs);
        let refs: Vec<&T> = xs.iter().collect();
        let grads = ad
            .grads(&real_dot(&function(name, &xs).unwrap(), &us), &refs)
            .unwrap();
        for (i, grad) in grads.iter().enumerate() {
            let numeric = conjugate_gradient_by_differences(&loss, &inputs, i);
            assert_close(&cvalues(grad), &numeric, 1e-6, &format!("{what} d/dx{i}"));
        }
        count += 1;
    }
    assert_eq!(count, 16);
}

/// Second derivatives of real losses of complex matrices: forward over reverse (`jvp` of `grad`)
/// against central differences of the gradient along a complex direction, and reverse over reverse
/// as its transpose (the adjoint identity).
#[test]
fn complex_second_derivatives_agree_across_modes_and_with_differences() {
    let ad = ad();
    let c = cpu();
    let complex = |seed: u64, shape: &[usize]| -> T {
        let n: usize = shape.iter().product();
        let (re, im) = (data(seed, n), data(seed + 1, n));
        let v: Vec<Complex64> = re
            .into_iter()
            .zip(im)
            .map(|(r, i)| Complex64::new(r, i))
            .collect();
        Tensor::from_vec(v, shape.to_vec(), &c).unwrap()
    };
    let eye = |n: usize, scale: f64| Tensor::eye(n, DType::C128, &c).unwrap().mul(scale).unwrap();
    let x = complex(1, &[2, 3, 3]);
    let hpd = x
        .matmul(&x.t().unwrap().conj().unwrap())
        .unwrap()
        .add(eye(3, 3.0))
        .unwrap();
    let near_2i = complex(3, &[2, 3, 3])
        .mul(0.5)
        .unwrap()
        .add(eye(3, 2.0))
        .unwrap();
    type Loss = fn(&T) -> nabla_core::Result<T>;
    let cases: [(&str, Loss, T); 4] = [
        (
            "cholesky",
            |a| nabla_linalg::cholesky(a)?.tanh(),
            hpd.clone(),
        ),
        (
            // A loss that does not depend on the phases of Q's columns (not unique for complex A).
            "qr",
            |a| {
                let (q, r) = nabla_linalg::qr(a)?;
                let projector = q.matmul(&q.t()?.conj()?)?.sin()?;
                let moduli = r.abs()?.cast(q.dtype())?.tanh()?;
                projector.narrow(-1, 0, 3)?.matmul(&moduli)
            },
            complex(5, &[4, 3]),
        ),
        (
            "lu",
            |a| {
                let (_, l, u) = nabla_linalg::lu(a)?;
                l.matmul(&u.sin()?)
            },
            near_2i.clone(),
        ),
        (
            "slogdet",
            |a| {
                let (s, l) = nabla_linalg::slogdet(a)?;
                s.mul(l.square()?.cast(s.dtype())?)
            },
            near_2i,
        ),
    ];
    for (name, f, x0) in cases {
        let w = complex(7, f(&x0).unwrap().shape());
        let v = complex(9, x0.shape());
        let grad_at = |x: &T| -> T {
            let x = Tensor::var("x", x.clone()).unwrap();
            let y = f(&x).unwrap();
            ad.grad(&real_dot(&[y], std::slice::from_ref(&w)), &x)
                .unwrap()
        };
        let x = Tensor::var("x", x0.clone()).unwrap();
        let g = ad
            .grad(&real_dot(&[f(&x).unwrap()], std::slice::from_ref(&w)), &x)
            .unwrap();
        let fwd_over_rev = ad.jvp(&g, &x, &v).unwrap();
        let rev_over_rev = ad
            .grad(
                &real_dot(std::slice::from_ref(&g), std::slice::from_ref(&v)),
                &x,
            )
            .unwrap();
        let eps = 1e-5;
        let shifted = |d: f64| cvalues(&grad_at(&x0.add(v.mul(d).unwrap()).unwrap()));
        let numeric: Vec<Complex64> = shifted(eps)
            .iter()
            .zip(shifted(-eps))
            .map(|(a, b)| (a - b) / (2.0 * eps))
            .collect();
        assert_close(
            &cvalues(&fwd_over_rev),
            &numeric,
            1e-6,
            &format!("{name} Hv"),
        );
        // Reverse over reverse: the gradient of Re <g(x), v> is the transpose of the Hessian map,
        // checked through the adjoint identity against the forward-over-reverse product.
        let u = complex(11, x0.shape());
        let lhs: f64 = real_dot(&[rev_over_rev], std::slice::from_ref(&u))
            .item()
            .unwrap();
        let rhs: f64 = real_dot(&[ad.jvp(&g, &x, &u).unwrap()], std::slice::from_ref(&v))
            .item()
            .unwrap();
        assert!(
            (lhs - rhs).abs() <= 1e-9 * (1.0 + lhs.abs()),
            "{name}: Re <Hᵀv, u> = {lhs} but Re <v, H u> = {rhs}"
        );
    }
}
