//! `#[differentiate]` end to end: the generated gradients against closed forms, finite differences
//! and forward mode on the generated generic functions, over the whole supported subset.

use nabla_derive::differentiate;
use nabla_scalar::{Dual, DualN, Scalar};

#[differentiate(crate = nabla_scalar)]
fn product_sin(x: f64, y: f64) -> f64 {
    x * y + x.sin()
}

#[differentiate(crate = nabla_scalar)]
fn every_function(x: f64, y: f64) -> f64 {
    let a = x.exp() + x.ln() + x.log1p() + x.sqrt() + x.powi(3) + x.powf(y) + f64::sin(x);
    let b = x.cos() + x.tan() + (x / 4.0).asin() + f64::acos(x / 4.0) + x.atan() + y.atan2(x);
    let c = x.sinh() + x.cosh() + x.tanh() + (-x).abs() + x.min(y) + f64::max(x, y) + x.hypot(y);
    a + b - c
}

#[differentiate(crate = nabla_scalar)]
fn control_flow(x: f64, y: f64) -> f64 {
    let mut acc: f64 = 0.0;
    for i in 0..4 {
        if i % 2 == 0 {
            acc += x * (i as f64);
        } else {
            acc -= y / f64::from(i);
        }
    }
    let mut k = 0;
    while k < 3 {
        acc *= 1.5;
        k += 1;
    }
    if acc > 100.0 {
        return acc;
    }
    let scaled = if x > y { acc * x } else { -acc * y };
    scaled + std::f64::consts::PI * 2.0e0
}

#[differentiate(crate = nabla_scalar)]
#[allow(clippy::needless_range_loop)] // `for i in 0..v.len()` is the subset under test
fn array_params(a: f64, v: [f64; 3]) -> f64 {
    let mut s = 0.0;
    for i in 0..v.len() {
        s += v[i] * v[i] * a;
    }
    let w: [f64; 2] = [v[0] - 1.0, 2.0];
    let (p, q) = (w[0], w[1]);
    s + p * q
}

#[differentiate(crate = nabla_scalar)]
fn horner(x: f64, c: [f64; 4]) -> f64 {
    let mut acc = 0.0;
    for i in (0..c.len()).rev() {
        acc = acc * x + c[i];
    }
    acc
}

#[differentiate(crate = nabla_scalar)]
fn calls_other(x: f64, y: f64) -> f64 {
    product_sin(x, y) * 2.0 + product_sin(y, x)
}

#[differentiate(crate = nabla_scalar)]
fn no_params() -> f64 {
    1.5
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// Central differences of `f` at `x` in every coordinate.
fn finite_gradient<const N: usize>(f: impl Fn([f64; N]) -> f64, x: [f64; N]) -> [f64; N] {
    core::array::from_fn(|i| {
        let h = 1e-6 * (1.0 + x[i].abs());
        let mut p = x;
        let mut m = x;
        p[i] += h;
        m[i] -= h;
        (f(p) - f(m)) / (2.0 * h)
    })
}

#[test]
fn closed_form() {
    let (value, grad) = product_sin_grad(2.0, 3.0);
    assert_eq!(value, product_sin(2.0, 3.0));
    assert_eq!(grad, [3.0 + 2.0_f64.cos(), 2.0]);
}

#[test]
fn every_function_against_finite_differences_and_forward_mode() {
    for (x, y) in [(1.3, 0.7), (2.2, 2.9), (0.6, -1.1)] {
        let (value, grad) = every_function_grad(x, y);
        assert_eq!(value, every_function(x, y));
        let fd = finite_gradient(|p: [f64; 2]| every_function(p[0], p[1]), [x, y]);
        let [dx, dy] = DualN::<f64, 2>::variables([x, y]);
        let forward = every_function_scalar(dx, dy);
        for i in 0..2 {
            assert!(
                close(grad[i], fd[i], 1e-6),
                "({x}, {y}): reverse {grad:?} vs fd {fd:?}"
            );
            assert!(
                close(grad[i], forward.eps[i], 1e-13),
                "reverse vs forward at ({x}, {y})"
            );
        }
    }
}

#[test]
fn control_flow_follows_the_values() {
    // x > y branch: acc = (x*0 - y/1 + x*2 - y/3) * 1.5^3, result acc * x + 2 pi.
    let (x, y) = (2.0, 1.0);
    let k = 1.5_f64.powi(3);
    let acc = (2.0 * x - y * (1.0 + 1.0 / 3.0)) * k;
    let (value, grad) = control_flow_grad(x, y);
    assert!(close(value, acc * x + 2.0 * std::f64::consts::PI, 1e-15));
    assert!(close(grad[0], 2.0 * k * x + acc, 1e-14));
    assert!(close(grad[1], -(4.0 / 3.0) * k * x, 1e-14));
    // The other branch and the early return.
    for (x, y) in [(0.5, 1.5), (30.0, 1.0)] {
        let (value, grad) = control_flow_grad(x, y);
        assert_eq!(value, control_flow(x, y));
        let fd = finite_gradient(|p: [f64; 2]| control_flow(p[0], p[1]), [x, y]);
        assert!(
            close(grad[0], fd[0], 1e-6) && close(grad[1], fd[1], 1e-6),
            "{grad:?} vs {fd:?}"
        );
    }
}

#[test]
fn array_parameters_are_flattened_in_order() {
    let (a, v) = (2.0, [1.0, -2.0, 0.5]);
    let (value, grad) = array_params_grad(a, v);
    let sq: f64 = v.iter().map(|t| t * t).sum();
    assert_eq!(value, array_params(a, v));
    assert_eq!(
        grad,
        [sq, 2.0 * a * v[0] + 2.0, 2.0 * a * v[1], 2.0 * a * v[2]]
    );
}

#[test]
fn reversed_range_loop() {
    let (x, c) = (1.5, [1.0, -2.0, 0.5, 3.0]);
    let (value, grad) = horner_grad(x, c);
    assert_eq!(value, horner(x, c));
    assert!(close(
        value,
        1.0 - 2.0 * x + 0.5 * x * x + 3.0 * x.powi(3),
        1e-15
    ));
    let dx = -2.0 + x + 9.0 * x * x;
    assert!(close(grad[0], dx, 1e-15));
    assert_eq!(grad[1..], [1.0, x, x * x, x.powi(3)]);
}

#[test]
fn calls_to_other_differentiated_functions() {
    let (x, y) = (0.4, -1.7);
    let (value, grad) = calls_other_grad(x, y);
    assert_eq!(value, calls_other(x, y));
    let (_, g1) = product_sin_grad(x, y);
    let (_, g2) = product_sin_grad(y, x);
    assert!(close(grad[0], 2.0 * g1[0] + g2[1], 1e-15));
    assert!(close(grad[1], 2.0 * g1[1] + g2[0], 1e-15));
    // Second derivative through the generic version: d2/dx2 of product_sin = -sin x.
    let d2 = nabla_scalar::derivative(
        |t: Dual<f64>| nabla_scalar::derivative(|u| product_sin_scalar(u, Dual::from_f64(y)), t),
        x,
    );
    assert!(close(d2, -x.sin(), 1e-14));
}

#[test]
fn no_parameters() {
    assert_eq!(no_params(), 1.5);
    assert_eq!(no_params_grad(), (1.5, []));
    assert_eq!(no_params_scalar::<f64>(), 1.5);
}
