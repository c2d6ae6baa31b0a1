//! Nested duals for higher derivatives, and the Jacobian and Hessian helpers, against closed forms.

use nabla_scalar::{
    Dual, DualN, Scalar, derivative, gradient, gradient_chunked, hessian, jacobian,
};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

/// The first three derivatives of `f` at `x` by nesting `Dual` three deep.
fn three_derivatives(
    f: impl Fn(Dual<Dual<Dual<f64>>>) -> Dual<Dual<Dual<f64>>>,
    x: f64,
) -> [f64; 3] {
    let inner = Dual::new(Dual::variable(x), Dual::from_f64(1.0));
    let x3 = Dual::new(inner, Dual::from_f64(1.0));
    // Seed all three levels with dx = 1: the mixed tangent eps1 eps2 eps3 is the third derivative.
    let y = f(x3);
    [
        y.value().value().deriv(),
        y.deriv().deriv().value(),
        y.deriv().deriv().deriv(),
    ]
}

#[test]
fn second_and_third_derivatives_by_nesting() {
    let x = 0.8_f64;
    let [d1, d2, d3] = three_derivatives(|t| t.sin(), x);
    assert!(close(d1, x.cos()) && close(d2, -x.sin()) && close(d3, -x.cos()));
    let [d1, d2, d3] = three_derivatives(|t| t.exp(), x);
    assert!(close(d1, x.exp()) && close(d2, x.exp()) && close(d3, x.exp()));
    let [d1, d2, d3] = three_derivatives(|t| t.powi(5), x);
    assert!(close(d1, 5.0 * x.powi(4)) && close(d2, 20.0 * x.powi(3)) && close(d3, 60.0 * x * x));
    let [d1, d2, d3] = three_derivatives(|t| t.ln(), x);
    assert!(close(d1, 1.0 / x) && close(d2, -1.0 / (x * x)) && close(d3, 2.0 / x.powi(3)));
    let [_, _, d3] = three_derivatives(|t| t.atan(), 0.0);
    assert!(close(d3, -2.0));
}

#[test]
fn derivative_helper_nests() {
    fn f<S: Scalar>(x: S) -> S {
        x.powi(5) + x.tanh()
    }
    let x = 0.6_f64;
    let t = x.tanh();
    let sech2 = 1.0 - t * t;
    assert!(close(derivative(f, x), 5.0 * x.powi(4) + sech2));
    assert!(close(
        derivative(|y| derivative(f, y), x),
        20.0 * x.powi(3) - 2.0 * t * sech2
    ));
    let third = derivative(|z| derivative(|y| derivative(f, y), z), x);
    assert!(close(third, 60.0 * x * x + sech2 * (6.0 * t * t - 2.0)));
}

fn rosenbrock<S: Scalar>(x: &[S]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        let a = w[1] - w[0] * w[0];
        let b = (-w[0]).add_f64(1.0);
        acc += a * a * S::from_f64(100.0) + b * b;
    }
    acc
}

fn rosenbrock_gradient(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    (0..n)
        .map(|i| {
            let mut g = 0.0;
            if i + 1 < n {
                g += -400.0 * x[i] * (x[i + 1] - x[i] * x[i]) - 2.0 * (1.0 - x[i]);
            }
            if i > 0 {
                g += 200.0 * (x[i] - x[i - 1] * x[i - 1]);
            }
            g
        })
        .collect()
}

#[test]
fn gradient_full_and_chunked_match_closed_form() {
    let x = [0.3, -1.2, 0.9, 2.0, 0.1];
    let exact = rosenbrock_gradient(&x);
    let full = gradient(|v: &[DualN<f64, 5>; 5]| rosenbrock(v), &x);
    let chunked = gradient_chunked::<2, _, _>(rosenbrock::<DualN<f64, 2>>, &x);
    let chunked8 = gradient_chunked::<8, _, _>(rosenbrock::<DualN<f64, 8>>, &x);
    for i in 0..5 {
        assert!(
            close(full[i], exact[i]) && close(chunked[i], exact[i]) && close(chunked8[i], exact[i])
        );
    }
    assert!(gradient_chunked::<3, _, _>(rosenbrock::<DualN<f64, 3>>, &[]).is_empty());
}

#[test]
fn jacobian_matches_closed_form() {
    // Spherical to Cartesian coordinates.
    fn f<S: Scalar>(p: &[S; 3]) -> [S; 3] {
        let [r, t, u] = *p;
        [r * t.sin() * u.cos(), r * t.sin() * u.sin(), r * t.cos()]
    }
    let (r, t, u) = (2.0_f64, 0.7_f64, -0.4_f64);
    let j = jacobian(f, &[r, t, u]);
    let exact = [
        [
            t.sin() * u.cos(),
            r * t.cos() * u.cos(),
            -r * t.sin() * u.sin(),
        ],
        [
            t.sin() * u.sin(),
            r * t.cos() * u.sin(),
            r * t.sin() * u.cos(),
        ],
        [t.cos(), -r * t.sin(), 0.0],
    ];
    for i in 0..3 {
        for k in 0..3 {
            assert!(
                close(j[i][k], exact[i][k]),
                "J[{i}][{k}] = {} vs {}",
                j[i][k],
                exact[i][k]
            );
        }
    }
}

#[test]
fn hessian_matches_closed_form() {
    fn f<S: Scalar>(x: &[S; 3]) -> S {
        x[0] * x[0] * x[1] + x[1].sin() * x[2] + x[2].exp()
    }
    let [a, b, c] = [1.5_f64, 0.3, -0.2];
    let h = hessian(f, &[a, b, c]);
    let exact = [
        [2.0 * b, 2.0 * a, 0.0],
        [2.0 * a, -b.sin() * c, b.cos()],
        [0.0, b.cos(), c.exp()],
    ];
    for i in 0..3 {
        for k in 0..3 {
            assert!(
                close(h[i][k], exact[i][k]),
                "H[{i}][{k}] = {} vs {}",
                h[i][k],
                exact[i][k]
            );
        }
    }
    // Rosenbrock in 2-D: [[1200x^2 - 400y + 2, -400x], [-400x, 200]].
    let h = hessian(
        |v: &[DualN<DualN<f64, 2>, 2>; 2]| rosenbrock(v),
        &[1.0, 2.0],
    );
    assert_eq!(h, [[402.0, -400.0], [-400.0, 200.0]]);
}
