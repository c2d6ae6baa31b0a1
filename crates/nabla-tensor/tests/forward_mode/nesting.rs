//! `jvp` nested with `grad`, `vjp` and itself in every order, third derivatives, closures over outer
//! variables (no perturbation confusion), and the edge cases of a single `jvp`.

use super::support::*;
use nabla_tensor::{Result, Tensor, grad, hessian, jacfwd, jvp, jvp_n, value_and_grad, vjp};

/// `sin(x) e^x` elementwise, with its derivatives.
fn g(x: &T) -> Result<T> {
    x.sin()?.mul(&x.exp()?)
}
fn g1(x: f64) -> f64 {
    x.exp() * (x.sin() + x.cos())
}
fn g2(x: f64) -> f64 {
    2.0 * x.exp() * x.cos()
}
fn g3(x: f64) -> f64 {
    2.0 * x.exp() * (x.cos() - x.sin())
}

/// A scalar function of a vector with a full Hessian.
fn f(x: &T) -> Result<T> {
    let a = t(&[1.0, -0.5, 0.3, 0.2, 0.8, -1.1, 0.4, 0.0, 0.6], &[3, 3]);
    a.matmul(x)?
        .tanh()?
        .square()?
        .sum_all()?
        .add(&x.prod(&[], false)?)
}

fn scalar(x: f64) -> T {
    t(&[x], &[])
}

fn item(x: &T) -> f64 {
    x.item::<f64>().unwrap()
}

#[test]
fn third_derivatives_every_way() {
    for x0 in [-0.7, 0.3, 1.1] {
        let x = scalar(x0);
        let one = scalar(1.0);
        let want = g3(x0);
        let rev3 = item(&grad(grad(grad(g)))(&x).unwrap());
        assert!(
            (rev3 - want).abs() < 1e-12,
            "grad^3 at {x0}: {rev3} vs {want}"
        );
        let fwd_rev2 = item(&jvp(grad(grad(g)), &x, &one).unwrap().1);
        assert!(
            (fwd_rev2 - want).abs() < 1e-12,
            "jvp(grad^2) at {x0}: {fwd_rev2} vs {want}"
        );
        let fwd3 = jvp(
            |x: &T| Ok(jvp(|x: &T| Ok(jvp(g, x, &one)?.1), x, &one)?.1),
            &x,
            &one,
        )
        .unwrap()
        .1;
        assert!(
            (item(&fwd3) - want).abs() < 1e-12,
            "jvp^3 at {x0}: {fwd3:?} vs {want}"
        );
        let rev_fwd_rev = item(&grad(|x: &T| Ok(jvp(grad(g), x, &one)?.1))(&x).unwrap());
        assert!(
            (rev_fwd_rev - want).abs() < 1e-12,
            "grad(jvp(grad)) at {x0}: {rev_fwd_rev} vs {want}"
        );
        let rev_rev_fwd = item(&grad(grad(|x: &T| Ok(jvp(g, x, &one)?.1)))(&x).unwrap());
        assert!(
            (rev_rev_fwd - want).abs() < 1e-12,
            "grad(grad(jvp)) at {x0}: {rev_rev_fwd} vs {want}"
        );
    }
    // Vector input: jvp of the elementwise second derivative is g''' v.
    let x = randn(&[4], 1);
    let v = randn(&[4], 2);
    let d2 = |x: &T| grad(|x: &T| grad(|x: &T| g(x)?.sum_all())(x)?.sum_all())(x);
    let (second, third) = jvp(d2, &x, &v).unwrap();
    let (xv, vv) = (vals(&x), vals(&v));
    let want2: Vec<f64> = xv.iter().map(|&x| g2(x)).collect();
    let want3: Vec<f64> = xv.iter().zip(&vv).map(|(&x, &v)| g3(x) * v).collect();
    assert_near(&vals(&second), &want2, 1e-12);
    assert_near(&vals(&third), &want3, 1e-12);
    // The third-derivative tensor of sum(x^4): 24 x on the diagonal i = j = k, zero elsewhere.
    let d3 = jacfwd(hessian(|x: &T| x.pow(4.0)?.sum_all()))(&x).unwrap();
    assert_eq!(d3.shape(), &[4, 4, 4]);
    let d3 = vals(&d3);
    for i in 0..4 {
        for j in 0..4 {
            for k in 0..4 {
                let want = if i == j && j == k { 24.0 * xv[i] } else { 0.0 };
                assert!(
                    (d3[16 * i + 4 * j + k] - want).abs() < 1e-12,
                    "d3 x^4: {d3:?}"
                );
            }
        }
    }
}

#[test]
fn forward_over_reverse_and_reverse_over_forward_agree() {
    let x = randn(&[3], 10);
    let v = randn(&[3], 11);
    let h = hessian(f)(&x).unwrap();
    let hv = vals(&h.matmul(&v).unwrap());
    // jvp of grad (forward over reverse).
    let (g0, fwd) = jvp(grad(f), &x, &v).unwrap();
    assert_near(&vals(&g0), &vals(&grad(f)(&x).unwrap()), 1e-14);
    assert_near(&vals(&fwd), &hv, 1e-13);
    // jvp of value_and_grad's gradient.
    let (_, fwd) = jvp(|x: &T| Ok(value_and_grad(f)(x)?.1), &x, &v).unwrap();
    assert_near(&vals(&fwd), &hv, 1e-13);
    // grad of a jvp output (reverse over forward): grad_x <grad f(x), v> = H v.
    let rev = grad(|x: &T| Ok(jvp(f, x, &v)?.1))(&x).unwrap();
    assert_near(&vals(&rev), &hv, 1e-13);
    // vjp of jvp, with a scalar cotangent 2: 2 H v.
    let (y, rev) = vjp(|x: &T| Ok(jvp(f, x, &v)?.1), &x, &scalar(2.0)).unwrap();
    let dir = vals(&grad(f)(&x).unwrap())
        .iter()
        .zip(vals(&v))
        .map(|(a, b)| a * b)
        .sum::<f64>();
    assert!((item(&y) - dir).abs() < 1e-13, "vjp(jvp) primal");
    let twice: Vec<f64> = hv.iter().map(|h| 2.0 * h).collect();
    assert_near(&vals(&rev), &twice, 1e-13);
    // jvp of jvp: w^T H v.
    let w = randn(&[3], 12);
    let (_, wv) = jvp(|x: &T| Ok(jvp(f, x, &v)?.1), &x, &w).unwrap();
    let want: f64 = vals(&w).iter().zip(&hv).map(|(a, b)| a * b).sum();
    assert!(
        (item(&wv) - want).abs() < 1e-13,
        "jvp(jvp): {wv:?} vs {want}"
    );
    // jvp of vjp: the vjp of a scalar function with cotangent 1 is its gradient, so H v again.
    let (_, fwd) = jvp(|x: &T| Ok(vjp(f, x, &scalar(1.0))?.1), &x, &v).unwrap();
    assert_near(&vals(&fwd), &hv, 1e-13);
}

#[test]
fn nesting_with_elementwise_functions() {
    // For g applied elementwise every second-order composition is g''(x) times the directions.
    let x = randn(&[2, 3], 20);
    let (u, v, w) = (randn(&[2, 3], 21), randn(&[2, 3], 22), randn(&[2, 3], 23));
    let (xv, uv, vv, wv) = (vals(&x), vals(&u), vals(&v), vals(&w));
    let want = |d: &[f64]| -> Vec<f64> {
        xv.iter()
            .zip(&vv)
            .zip(d)
            .map(|((&x, &v), &d)| g2(x) * v * d)
            .collect()
    };
    let ones = vec![1.0; 6];
    let jj = jvp(|x: &T| Ok(jvp(g, x, &v)?.1), &x, &w).unwrap().1;
    assert_near(&vals(&jj), &want(&wv), 1e-12);
    let vj = vjp(|x: &T| Ok(jvp(g, x, &v)?.1), &x, &u).unwrap().1;
    assert_near(&vals(&vj), &want(&uv), 1e-12);
    let jv = jvp(|x: &T| Ok(vjp(g, x, &u)?.1), &x, &v).unwrap().1;
    assert_near(&vals(&jv), &want(&uv), 1e-12);
    let gj = grad(|x: &T| jvp(g, x, &v)?.1.sum_all())(&x).unwrap();
    assert_near(&vals(&gj), &want(&ones), 1e-12);
    let jg = jvp(grad(|x: &T| g(x)?.sum_all()), &x, &v).unwrap().1;
    assert_near(&vals(&jg), &want(&ones), 1e-12);
    // The primal of the inner jvp is g(x), its tangent g'(x) v.
    let (y, dy) = jvp(g, &x, &v).unwrap();
    let want_y: Vec<f64> = xv.iter().map(|&x| x.sin() * x.exp()).collect();
    let want_dy: Vec<f64> = xv.iter().zip(&vv).map(|(&x, &v)| g1(x) * v).collect();
    assert_near(&vals(&y), &want_y, 1e-14);
    assert_near(&vals(&dy), &want_dy, 1e-13);
}

#[test]
fn closures_over_outer_variables_do_not_confuse_perturbations() {
    // d/dx [x * d/dy (x + y)] = 1 (not 2): the inner derivative must not see the outer perturbation.
    let (x0, y0, one) = (scalar(1.0), scalar(2.0), scalar(1.0));
    let inner = |x: &T| -> Result<T> { Ok(jvp(|y: &T| x.add(y), &y0, &one)?.1) };
    let fwd_fwd = jvp(|x: &T| x.mul(&inner(x)?), &x0, &one).unwrap().1;
    assert_eq!(item(&fwd_fwd), 1.0, "jvp over jvp");
    let rev_fwd = grad(|x: &T| x.mul(&inner(x)?))(&x0).unwrap();
    assert_eq!(item(&rev_fwd), 1.0, "grad over jvp");
    let fwd_rev = jvp(|x: &T| x.mul(&grad(|y: &T| x.add(y))(&y0)?), &x0, &one)
        .unwrap()
        .1;
    assert_eq!(item(&fwd_rev), 1.0, "jvp over grad");
}

#[test]
fn grad_through_a_jvp_whose_function_closes_over_the_outer_input() {
    // d/da sum(jvp_x sin(a x)[v]) = d/da sum(cos(a x) a v) = sum((cos(a x) - a x sin(a x)) v).
    let (x, v) = (randn(&[3], 30), randn(&[3], 31));
    let a0 = 0.8;
    let d = grad(|a: &T| jvp(|x: &T| x.mul(a)?.sin(), &x, &v)?.1.sum_all())(&scalar(a0)).unwrap();
    let want: f64 = vals(&x)
        .iter()
        .zip(vals(&v))
        .map(|(&x, v)| ((a0 * x).cos() - a0 * x * (a0 * x).sin()) * v)
        .sum();
    assert!((item(&d) - want).abs() < 1e-13, "{} vs {want}", item(&d));
}

#[test]
fn tracked_variable_captured_by_a_jvp() {
    let (x, v) = (randn(&[3], 30), randn(&[3], 31));
    // A tracked variable captured by the function of a jvp: its gradient flows through the tangent.
    let a = Tensor::var("a", t(&[0.5, -1.0, 2.0], &[3])).unwrap();
    let (_, jv) = jvp(|x: &T| x.square()?.mul(&a), &x, &v).unwrap();
    assert!(jv.requires_grad(), "the tangent depends on the variable a");
    let ga = jv
        .sum_all()
        .unwrap()
        .backward()
        .unwrap()
        .get(&a)
        .unwrap()
        .clone();
    let want: Vec<f64> = vals(&x)
        .iter()
        .zip(vals(&v))
        .map(|(&x, v)| 2.0 * x * v)
        .collect();
    assert_near(&vals(&ga), &want, 1e-14);
}

#[test]
fn inner_derivative_depending_on_a_captured_outer_variable() {
    // d/dx [d/dy (x y)] = 1 at every x: the inner derivative is x, a closed-over value of the outer
    // transform, whose own derivative must survive the inner transform (in every order).
    let (x0, y0, one) = (scalar(3.0), scalar(2.0), scalar(1.0));
    let mut failures = Vec::new();
    let mut expect = |label: &str, r: Result<T>| match r {
        Ok(d) if item(&d) == 1.0 => {}
        Ok(d) => failures.push(format!("{label}: got {}, want 1", item(&d))),
        Err(e) => failures.push(format!("{label}: error {e}")),
    };
    let inner_fwd = |x: &T| -> Result<T> { Ok(jvp(|y: &T| x.mul(y), &y0, &one)?.1) };
    let inner_rev = |x: &T| grad(|y: &T| x.mul(y))(&y0);
    let inner_vjp = |x: &T| -> Result<T> { Ok(vjp(|y: &T| x.mul(y), &y0, &one)?.1) };
    expect("jvp over jvp", jvp(inner_fwd, &x0, &one).map(|r| r.1));
    expect("grad over jvp", grad(inner_fwd)(&x0));
    expect("jvp over grad", jvp(inner_rev, &x0, &one).map(|r| r.1));
    expect("grad over grad", grad(inner_rev)(&x0));
    expect("jvp over vjp", jvp(inner_vjp, &x0, &one).map(|r| r.1));
    expect("vjp over jvp", vjp(inner_fwd, &x0, &one).map(|r| r.1));
    // The inner values themselves are x.
    assert_eq!(item(&inner_fwd(&x0).unwrap()), 3.0);
    assert_eq!(item(&inner_rev(&x0).unwrap()), 3.0);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn jvp_edge_cases() {
    let x = randn(&[2, 3], 40);
    let v = randn(&[2, 3], 41);
    // The identity passes the tangent through; a constant has a zero tangent.
    let (y, jv) = jvp(|x: &T| Ok(x.clone()), &x, &v).unwrap();
    assert_eq!((vals(&y), vals(&jv)), (vals(&x), vals(&v)));
    let (y, jv) = jvp(|x: &T| x.zeros_like()?.add(2.0), &x, &v).unwrap();
    assert_eq!((vals(&y), vals(&jv)), (vec![2.0; 6], vec![0.0; 6]));
    let k = randn(&[4], 42);
    let (y, jv) = jvp(|_: &T| Ok(k.clone()), &x, &v).unwrap();
    assert_eq!((y.shape(), jv.shape()), (&[4][..], &[4][..]));
    assert_eq!(vals(&jv), vec![0.0; 4]);
    // A zero tangent gives a zero tangent; linearity in the tangent.
    let (_, jv) = jvp(g, &x, &v.zeros_like().unwrap()).unwrap();
    assert_eq!(vals(&jv), vec![0.0; 6]);
    let (_, a) = jvp(g, &x, &v).unwrap();
    let (_, b) = jvp(g, &x, &v.mul(-3.0).unwrap()).unwrap();
    let scaled: Vec<f64> = vals(&a).iter().map(|a| -3.0 * a).collect();
    assert_near(&vals(&b), &scaled, 1e-13);
    // Empty tensors.
    let e = t(&[], &[0, 3]);
    let (y, jv) = jvp(|x: &T| x.exp(), &e, &e).unwrap();
    assert_eq!((y.shape(), jv.shape()), (&[0, 3][..], &[0, 3][..]));
    // Several inputs: the tangents add up, and inputs the function ignores contribute nothing.
    let xs = [randn(&[3], 43), randn(&[3], 44), randn(&[2], 45)];
    let vs = [randn(&[3], 46), randn(&[3], 47), randn(&[2], 48)];
    let (_, jv) = jvp_n(|w: &[T]| w[0].mul(&w[1]), &xs, &vs).unwrap();
    let want: Vec<f64> = (0..3)
        .map(|i| vals(&vs[0])[i] * vals(&xs[1])[i] + vals(&xs[0])[i] * vals(&vs[1])[i])
        .collect();
    assert_near(&vals(&jv), &want, 1e-14);
    // The same tensor as two inputs: d(a b) with a = b = x is v1 x + x v2.
    let (_, jv) = jvp_n(
        |w: &[T]| w[0].mul(&w[1]),
        &[xs[0].clone(), xs[0].clone()],
        &[vs[0].clone(), vs[1].clone()],
    )
    .unwrap();
    let want: Vec<f64> = (0..3)
        .map(|i| (vals(&vs[0])[i] + vals(&vs[1])[i]) * vals(&xs[0])[i])
        .collect();
    assert_near(&vals(&jv), &want, 1e-14);
    // A plain jvp of untracked inputs leaves untracked results.
    let (y, jv) = jvp(g, &x, &v).unwrap();
    assert!(!y.requires_grad() && !jv.requires_grad());
}
