//! Full Jacobians by forward and by reverse mode, Hessians (forward over reverse) and Hessian-vector
//! products, against each other, analytic values and finite differences of the gradient.

use super::support::*;
use nabla_tensor::{Result, grad, hessian, hvp, jacfwd, jacrev};

/// `jacfwd(f)(x)` and `jacrev(f)(x)`: both of shape `f(x).shape ++ x.shape`, equal to 1e-12.
#[track_caller]
fn both_jacobians(label: &str, f: impl Fn(&T) -> Result<T> + Copy, x: &T) -> Vec<f64> {
    let y = f(x).unwrap();
    let fwd = jacfwd(f)(x).unwrap_or_else(|e| panic!("{label}: jacfwd: {e}"));
    let rev = jacrev(f)(x).unwrap_or_else(|e| panic!("{label}: jacrev: {e}"));
    let want: Vec<usize> = y.shape().iter().chain(x.shape()).copied().collect();
    assert_eq!(fwd.shape(), &want[..], "{label}: jacfwd shape");
    assert_eq!(rev.shape(), &want[..], "{label}: jacrev shape");
    assert_eq!(fwd.dtype(), x.dtype(), "{label}: jacfwd dtype");
    let (a, b) = (vals(&fwd), vals(&rev));
    for (k, (p, q)) in a.iter().zip(&b).enumerate() {
        assert!(
            (p - q).abs() <= 1e-12 * (1.0 + q.abs()),
            "{label}: element {k}: jacfwd {p} vs jacrev {q}\njacfwd {a:?}\njacrev {b:?}"
        );
    }
    a
}

#[test]
fn jacfwd_equals_jacrev() {
    // Elementwise: a diagonal Jacobian with cos on it.
    let x = randn(&[3], 1);
    let j = both_jacobians("sin", |x: &T| x.sin(), &x);
    let xv = vals(&x);
    for r in 0..3 {
        for c in 0..3 {
            let want = if r == c { xv[r].cos() } else { 0.0 };
            assert!((j[3 * r + c] - want).abs() < 1e-15, "sin: {j:?}");
        }
    }
    // Non-square: tanh(W x) from [4] to [2]; J = diag(1 - tanh^2) W.
    let w = randn(&[2, 4], 2);
    let wv = vals(&w);
    let x = randn(&[4], 3);
    let f = |x: &T| w.matmul(x)?.tanh();
    let j = both_jacobians("tanh(W x)", f, &x);
    let y = vals(&f(&x).unwrap());
    for r in 0..2 {
        for c in 0..4 {
            let want = (1.0 - y[r] * y[r]) * wv[4 * r + c];
            assert!((j[4 * r + c] - want).abs() < 1e-14, "tanh(W x): {j:?}");
        }
    }
    // Wide: [2] to [5].
    let k = randn(&[5, 2], 4);
    both_jacobians("exp(K x)", |x: &T| k.matmul(x)?.exp(), &randn(&[2], 5));
    // Matrix input and matrix output: x x^T from [2,3] to [2,2] (Jacobian [2,2,2,3]).
    both_jacobians("x x^T", |x: &T| x.matmul(&x.t()?), &randn(&[2, 3], 6));
    // Matrix to scalar, matrix to vector, scalar to vector.
    let c = randn(&[2, 3], 7);
    both_jacobians(
        "weighted softmax",
        |x: &T| x.softmax(-1)?.mul(&c)?.sum_all(),
        &randn(&[2, 3], 8),
    );
    both_jacobians(
        "row logsumexp of a transpose",
        |x: &T| x.t()?.logsumexp(&[1], false),
        &randn(&[2, 3], 9),
    );
    let d = randn(&[3], 10);
    both_jacobians(
        "scalar to vector",
        |x: &T| x.mul(&d)?.add(&x.sin()?),
        &randn(&[], 11),
    );
    // Permutations and mixing: sort values, cumsum, a 2-D convolution.
    both_jacobians(
        "sort values",
        |x: &T| Ok(x.sort(0, false)?.0),
        &randn(&[4], 12),
    );
    both_jacobians(
        "cumsum of a product",
        |x: &T| x.cumsum(1)?.mul(x),
        &randn(&[2, 3], 13),
    );
    let wc = randn(&[2, 1, 2, 2], 14);
    let params = nabla_core::Conv2dParams {
        stride: (1, 1),
        padding: (1, 0),
        dilation: (1, 1),
        groups: 1,
        precision: Default::default(),
    };
    both_jacobians(
        "conv2d",
        |x: &T| x.conv2d(&wc, &params)?.tanh(),
        &randn(&[1, 1, 3, 3], 15),
    );
    // A constant function has a zero Jacobian.
    let j = both_jacobians(
        "constant",
        |x: &T| x.zeros_like()?.add(1.0),
        &randn(&[3], 16),
    );
    assert_eq!(j, vec![0.0; 9]);
}

/// The Hessian of `f` at `x` as a flat row-major matrix of side `x.numel()`.
fn hessian_matrix(f: impl Fn(&T) -> Result<T>, x: &T) -> Vec<f64> {
    let h = hessian(f)(x).unwrap();
    let want: Vec<usize> = x.shape().iter().chain(x.shape()).copied().collect();
    assert_eq!(h.shape(), &want[..], "hessian shape");
    vals(&h)
}

#[test]
fn hessians_with_analytic_values() {
    // sum(x^3): diag(6 x).
    let x = randn(&[4], 20);
    let h = hessian_matrix(|x: &T| x.pow(3.0)?.sum_all(), &x);
    let xv = vals(&x);
    for r in 0..4 {
        for c in 0..4 {
            let want = if r == c { 6.0 * xv[r] } else { 0.0 };
            assert!((h[4 * r + c] - want).abs() < 1e-13, "x^3: {h:?}");
        }
    }
    // Rank 0: the second derivative itself.
    let h = hessian(|x: &T| x.pow(3.0))(&t(&[1.5], &[])).unwrap();
    assert_eq!(h.shape(), &[] as &[usize]);
    assert!((h.item::<f64>().unwrap() - 9.0).abs() < 1e-13);
    // exp(sin x): e^{sin x} (cos^2 x - sin x).
    for x0 in [-1.3, 0.0, 0.4, 2.0] {
        let h = hessian(|x: &T| x.sin()?.exp())(&t(&[x0], &[]))
            .unwrap()
            .item::<f64>()
            .unwrap();
        let want = x0.sin().exp() * (x0.cos().powi(2) - x0.sin());
        assert!((h - want).abs() < 1e-13, "exp(sin {x0}): {h} vs {want}");
    }
    // sum(exp(x)) of a matrix: a [2,3,2,3] Hessian with exp(x) on the diagonal.
    let x = randn(&[2, 3], 21);
    let h = hessian_matrix(|x: &T| x.exp()?.sum_all(), &x);
    let xv = vals(&x);
    for r in 0..6 {
        for c in 0..6 {
            let want = if r == c { xv[r].exp() } else { 0.0 };
            assert!((h[6 * r + c] - want).abs() < 1e-13, "sum exp: {h:?}");
        }
    }
    // x^T A x: A + A^T, for a non-symmetric A.
    let a = randn(&[3, 3], 22);
    let av = vals(&a);
    let h = hessian_matrix(|x: &T| x.matmul(&a.matmul(x)?), &randn(&[3], 23));
    for r in 0..3 {
        for c in 0..3 {
            let want = av[3 * r + c] + av[3 * c + r];
            assert!((h[3 * r + c] - want).abs() < 1e-13, "x^T A x: {h:?}");
        }
    }
}

/// A small MLP's mean squared error as a function of its first-layer weights `w` ([3, 4]).
fn mlp_loss(w: &T) -> Result<T> {
    let data = randn(&[5, 3], 30);
    let w2 = randn(&[4], 31);
    let target = randn(&[5], 32);
    data.matmul(w)?
        .tanh()?
        .matmul(&w2)?
        .sub(&target)?
        .square()?
        .mean_all()
}

#[test]
fn mlp_hessian_against_finite_differences_of_the_gradient() {
    let w = randn(&[3, 4], 33);
    let h = hessian_matrix(mlp_loss, &w);
    let n = 12;
    let step = 1e-5;
    for j in 0..n {
        let mut e = vec![0.0; n];
        e[j] = step;
        let e = t(&e, &[3, 4]);
        let gp = vals(&grad(mlp_loss)(&w.add(&e).unwrap()).unwrap());
        let gm = vals(&grad(mlp_loss)(&w.sub(&e).unwrap()).unwrap());
        for i in 0..n {
            let fd = (gp[i] - gm[i]) / (2.0 * step);
            assert!(
                (h[n * i + j] - fd).abs() <= 1e-7 + 1e-6 * fd.abs(),
                "mlp hessian [{i}, {j}]: {} vs finite difference {fd}",
                h[n * i + j]
            );
        }
    }
    // Symmetric, up to rounding.
    for i in 0..n {
        for j in 0..i {
            assert!(
                (h[n * i + j] - h[n * j + i]).abs() < 1e-12,
                "asymmetric at {i} {j}"
            );
        }
    }
}

#[test]
fn hvp_equals_hessian_times_v() {
    let w = randn(&[3, 4], 40);
    let v = randn(&[3, 4], 41);
    let h = hessian(mlp_loss)(&w).unwrap().reshape([12, 12]).unwrap();
    let want = vals(&h.matmul(&v.reshape([12]).unwrap()).unwrap());
    let got = hvp(mlp_loss, &w, &v).unwrap();
    assert_eq!(got.shape(), &[3, 4]);
    assert_near(&vals(&got), &want, 1e-13);
    // x^T A x: (A + A^T) v.
    let a = randn(&[3, 3], 42);
    let (x, v) = (randn(&[3], 43), randn(&[3], 44));
    let got = hvp(|x: &T| x.matmul(&a.matmul(x)?), &x, &v).unwrap();
    let want = a.add(a.t().unwrap()).unwrap().matmul(&v).unwrap();
    assert_near(&vals(&got), &vals(&want), 1e-13);
    // A function of a rank-0 input: f''(x) v.
    let got = hvp(|x: &T| x.sin()?.exp(), &t(&[0.4], &[]), &t(&[2.0], &[])).unwrap();
    let want = 2.0 * 0.4f64.sin().exp() * (0.4f64.cos().powi(2) - 0.4f64.sin());
    assert!((got.item::<f64>().unwrap() - want).abs() < 1e-13);
}

#[test]
fn hessian_as_jacobian_of_the_gradient() {
    // hessian == jacfwd(grad f) == jacrev(grad f).
    let w = randn(&[3, 4], 50);
    let h = vals(&hessian(mlp_loss)(&w).unwrap());
    let f = vals(&jacfwd(grad(mlp_loss))(&w).unwrap());
    let r = vals(&jacrev(grad(mlp_loss))(&w).unwrap());
    assert_near(&f, &h, 1e-13);
    assert_near(&r, &h, 1e-13);
    // Jacobian of a Jacobian: jacfwd(jacrev(f)) of a vector function (third-order tensor).
    let g = |x: &T| x.sin()?.mul(&x.sum_all()?);
    let x = randn(&[3], 51);
    let a = jacfwd(jacrev(g))(&x).unwrap();
    let b = jacrev(jacfwd(g))(&x).unwrap();
    assert_eq!(a.shape(), &[3, 3, 3]);
    assert_near(&vals(&a), &vals(&b), 1e-13);
}
