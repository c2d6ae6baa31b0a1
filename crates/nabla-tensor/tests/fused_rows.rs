//! The fused row ops behind `softmax` and `log_softmax` (last axis) and `layer_norm` (trailing axes)
//! on the CPU: values
//! against the composite formula (which other axes still use), first and second derivatives against
//! central finite differences, the adjoint identity of the forward and reverse rules of the ops and of
//! their fused vector-Jacobian products, and derivatives to third order against the composite's.

use crate::forward_mode::helpers::{adjoint, finite_difference};
use crate::support::*;
use nabla_core::DType;
use nabla_tensor::{Result, Tensor, grad, hvp, jvp};

/// `f` along the last axis (the fused op), and the same through the composite formula (along a
/// leading axis of the transposed input, transposed back).
fn fused_and_composite(x: &T, f: impl Fn(&T, isize) -> Result<T>) -> (T, T) {
    let last = x.rank() as isize - 1;
    let fused = f(x, -1).unwrap();
    let composite = f(&x.transpose(0, last).unwrap(), 0)
        .unwrap()
        .transpose(0, last)
        .unwrap();
    (fused, composite)
}

fn softmax_both(x: &T) -> (T, T) {
    fused_and_composite(x, |x, axis| x.softmax(axis))
}

fn log_softmax_both(x: &T) -> (T, T) {
    fused_and_composite(x, |x, axis| x.log_softmax(axis))
}

fn layer_norm_both(x: &T, eps: f64) -> (T, T) {
    fused_and_composite(x, |x, axis| x.layer_norm(&[axis], eps))
}

/// Elementwise closeness, NaN matching NaN and infinities matching exactly.
#[track_caller]
fn assert_same(label: &str, got: &T, want: &T, tol: f64) {
    assert_eq!(got.shape(), want.shape(), "{label}: shape");
    for (i, (g, w)) in vals(got).iter().zip(vals(want)).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || *g == w || (g - w).abs() <= tol * (1.0 + w.abs());
        assert!(ok, "{label}: element {i}: fused {g} vs composite {w}");
    }
}

/// Shapes covering one row, many rows, rows of one element, zero rows, odd lengths (lane tails) and
/// inputs large enough to split across threads.
const SHAPES: [&[usize]; 7] = [
    &[5],
    &[3, 7],
    &[4, 1],
    &[0, 6],
    &[2, 3, 9],
    &[40, 600],
    &[3, 17],
];

#[test]
fn values_match_the_composite_formula() {
    for (k, shape) in SHAPES.iter().enumerate() {
        let x = randn(shape, 100 + k as u64).mul(3.0).unwrap();
        let (f, c) = softmax_both(&x);
        assert_same(&format!("softmax {shape:?}"), &f, &c, 1e-14);
        let (f, c) = layer_norm_both(&x, 1e-5);
        assert_same(&format!("layer_norm {shape:?}"), &f, &c, 1e-12);
        let (f, c) = log_softmax_both(&x);
        assert_same(&format!("log_softmax {shape:?}"), &f, &c, 1e-14);
        let x32 = x.cast(DType::F32).unwrap();
        let (f, c) = log_softmax_both(&x32);
        assert_same(&format!("log_softmax f32 {shape:?}"), &f, &c, 1e-6);
        let (f, c) = softmax_both(&x32);
        assert_eq!(f.dtype(), DType::F32);
        assert_same(&format!("softmax f32 {shape:?}"), &f, &c, 1e-6);
        let (f, c) = layer_norm_both(&x32, 1e-5);
        assert_same(&format!("layer_norm f32 {shape:?}"), &f, &c, 1e-5);
    }
}

#[test]
fn views_extremes_and_non_finite_rows_match_the_composite() {
    let x = transposed(6, 4, 7, STD);
    let (f, c) = softmax_both(&x);
    assert_same("softmax of a transposed view", &f, &c, 1e-14);
    let (f, c) = layer_norm_both(&x, 0.0);
    assert_same("layer_norm of a transposed view", &f, &c, 1e-12);
    let (f, c) = log_softmax_both(&x);
    assert_same("log_softmax of a transposed view", &f, &c, 1e-14);
    let inf = f64::INFINITY;
    let rows = t(
        &[
            1e4,
            1e4,
            -1e4,
            0.0, // huge values
            f64::NAN,
            1.0,
            2.0,
            3.0, // a NaN
            -inf,
            -inf,
            -inf,
            -inf, // all -inf
            inf,
            1.0,
            2.0,
            3.0, // +inf
            -inf,
            0.0,
            1.0,
            -inf, // some -inf
            7.0,
            7.0,
            7.0,
            7.0, // constant
        ],
        &[6, 4],
    );
    for dtype in [DType::F64, DType::F32] {
        let x = rows.cast(dtype).unwrap();
        let (f, c) = softmax_both(&x);
        assert_same(&format!("softmax extremes {dtype}"), &f, &c, 1e-6);
        let (f, c) = layer_norm_both(&x, 1e-5);
        assert_same(&format!("layer_norm extremes {dtype}"), &f, &c, 1e-5);
        let (f, c) = log_softmax_both(&x);
        assert_same(&format!("log_softmax extremes {dtype}"), &f, &c, 1e-6);
    }
}

#[test]
fn layer_norm_over_several_trailing_axes_and_all_axes() {
    let x = randn(&[3, 4, 5], 9);
    let fused = x.layer_norm(&[-2, -1], 1e-5).unwrap();
    // The same rows through the composite: the two axes first, reduced as leading axes.
    let composite = x
        .permute(&[1, 2, 0])
        .unwrap()
        .layer_norm(&[0, 1], 1e-5)
        .unwrap()
        .permute(&[2, 0, 1])
        .unwrap();
    assert_same("layer_norm [-2, -1]", &fused, &composite, 1e-12);
    let all = x.layer_norm(&[], 1e-5).unwrap();
    let all_composite = x
        .permute(&[2, 1, 0])
        .unwrap()
        .layer_norm(&[], 1e-5)
        .unwrap();
    let all_composite = all_composite.permute(&[2, 1, 0]).unwrap();
    assert_same("layer_norm all axes", &all, &all_composite, 1e-12);
    // Bad axes are still errors naming the op.
    let err = x.layer_norm(&[3], 1e-5).unwrap_err().to_string();
    assert!(err.contains("layer_norm"), "{err}");
}

/// Functions that reach both inputs of the vjp ops in their own derivatives: the cotangent reaching
/// softmax and layer norm depends on `x` through the square and the tanh.
fn softmax_loss(x: &T) -> Result<T> {
    x.softmax(-1)?
        .square()?
        .mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?
        .sum_all()
}

fn log_softmax_loss(x: &T) -> Result<T> {
    x.log_softmax(-1)?
        .tanh()?
        .mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?
        .sum_all()
}

fn layer_norm_loss(x: &T) -> Result<T> {
    x.layer_norm(&[-1], 1e-3)?
        .tanh()?
        .mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?
        .sum_all()
}

/// The same losses through the composite formula.
fn softmax_loss_composite(x: &T) -> Result<T> {
    let y = x.t()?.softmax(0)?.t()?;
    y.square()?.mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?.sum_all()
}

fn log_softmax_loss_composite(x: &T) -> Result<T> {
    let y = x.t()?.log_softmax(0)?.t()?;
    y.tanh()?.mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?.sum_all()
}

fn layer_norm_loss_composite(x: &T) -> Result<T> {
    let y = x.t()?.layer_norm(&[0], 1e-3)?.t()?;
    y.tanh()?.mul(t(&[0.3, -1.2, 0.7, 2.0], &[4]))?.sum_all()
}

#[test]
fn first_and_second_derivatives_match_finite_differences() {
    let x = randn(&[3, 4], 21);
    for (label, f) in [
        ("softmax", softmax_loss as fn(&T) -> Result<T>),
        ("log_softmax", log_softmax_loss),
        ("layer_norm", layer_norm_loss),
    ] {
        check(label, |v: &[T]| f(&v[0]), std::slice::from_ref(&x));
        check2(label, |v: &[T]| f(&v[0]), std::slice::from_ref(&x));
        finite_difference(label, |v: &[T]| f(&v[0]), std::slice::from_ref(&x), 3);
    }
    // Non-scalar outputs (every output element's row), over two trailing axes and a strided input.
    let x3 = stepped_back(&[2, 3, 4], 22, STD);
    check(
        "softmax 3-D",
        |v: &[T]| v[0].softmax(-1),
        std::slice::from_ref(&x3),
    );
    check2(
        "softmax 3-D",
        |v: &[T]| v[0].softmax(-1),
        std::slice::from_ref(&x3),
    );
    let lsm = |v: &[T]| v[0].log_softmax(-1);
    check("log_softmax 3-D", lsm, std::slice::from_ref(&x3));
    check2("log_softmax 3-D", lsm, std::slice::from_ref(&x3));
    let ln2 = |v: &[T]| v[0].layer_norm(&[-2, -1], 1e-2);
    check("layer_norm 2 axes", ln2, std::slice::from_ref(&x3));
    check2("layer_norm 2 axes", ln2, std::slice::from_ref(&x3));
}

#[test]
fn forward_and_reverse_rules_satisfy_the_adjoint_identity() {
    let x = randn(&[3, 4], 31);
    let xs = std::slice::from_ref(&x);
    adjoint("softmax", |v: &[T]| v[0].softmax(-1), xs, 1);
    adjoint("layer_norm", |v: &[T]| v[0].layer_norm(&[-1], 1e-3), xs, 2);
    adjoint("log_softmax", |v: &[T]| v[0].log_softmax(-1), xs, 7);
    adjoint(
        "grad of log_softmax loss",
        |v: &[T]| grad(log_softmax_loss)(&v[0]),
        xs,
        8,
    );
    finite_difference(
        "grad of log_softmax loss",
        |v: &[T]| grad(log_softmax_loss)(&v[0]),
        xs,
        9,
    );
    // Forward over forward reaches the jvp op's own forward rule.
    let jvp_of_jvp = |v: &[T]| {
        let d = randn(&[3, 4], 10);
        let (_, t) = jvp(|x: &T| x.log_softmax(-1)?.tanh(), &v[0], &d)?;
        Ok(t)
    };
    adjoint("jvp of log_softmax", jvp_of_jvp, xs, 11);
    finite_difference("jvp of log_softmax", jvp_of_jvp, xs, 12);
    // The gradient maps: their Jacobians are the Hessians, through both vjp ops' two rules.
    adjoint(
        "grad of softmax loss",
        |v: &[T]| grad(softmax_loss)(&v[0]),
        xs,
        3,
    );
    adjoint(
        "grad of layer_norm loss",
        |v: &[T]| grad(layer_norm_loss)(&v[0]),
        xs,
        4,
    );
    finite_difference(
        "grad of softmax loss",
        |v: &[T]| grad(softmax_loss)(&v[0]),
        xs,
        5,
    );
    finite_difference(
        "grad of layer_norm loss",
        |v: &[T]| grad(layer_norm_loss)(&v[0]),
        xs,
        6,
    );
}

#[test]
fn derivatives_to_third_order_match_the_composite() {
    let x = randn(&[3, 4], 41);
    let v = randn(&[3, 4], 42);
    let w = randn(&[3, 4], 43);
    for (fused, composite) in [
        (
            softmax_loss as fn(&T) -> Result<T>,
            softmax_loss_composite as fn(&T) -> Result<T>,
        ),
        (layer_norm_loss, layer_norm_loss_composite),
        (log_softmax_loss, log_softmax_loss_composite),
    ] {
        let g = |f: fn(&T) -> Result<T>| vals(&grad(f)(&x).unwrap());
        assert_near(&g(fused), &g(composite), 1e-12);
        // Forward over reverse.
        let h = |f: fn(&T) -> Result<T>| vals(&hvp(f, &x, &v).unwrap());
        assert_near(&h(fused), &h(composite), 1e-11);
        // Reverse over reverse.
        let rr = |f: fn(&T) -> Result<T>| {
            let dir = |x: &T| grad(f)(x)?.mul(&v)?.sum_all();
            vals(&grad(dir)(&x).unwrap())
        };
        assert_near(&rr(fused), &rr(composite), 1e-11);
        // Third order: the gradient of <H v, w>, and a jvp of the Hessian-vector product.
        let third = |f: fn(&T) -> Result<T>| {
            let hv_w = |x: &T| hvp(f, x, &v)?.mul(&w)?.sum_all();
            vals(&grad(hv_w)(&x).unwrap())
        };
        assert_near(&third(fused), &third(composite), 1e-10);
        let third_fwd = |f: fn(&T) -> Result<T>| {
            let (_, t) = jvp(|x: &T| hvp(f, x, &v), &x, &w).unwrap();
            vals(&t)
        };
        assert_near(&third_fwd(fused), &third_fwd(composite), 1e-10);
    }
}

#[test]
fn backward_through_both_matches_the_composite() {
    // Plain backward (no graph kept) through both ops, and an integer input is an error.
    let x = Tensor::var("x", randn(&[2, 3], 61)).unwrap();
    let y = x
        .softmax(-1)
        .unwrap()
        .add(x.layer_norm(&[-1], 1e-5).unwrap())
        .unwrap();
    let loss = y.square().unwrap().sum_all().unwrap();
    let g = loss.grad(&x).unwrap();
    let composite = {
        let xt = x.t().unwrap();
        let y = xt
            .softmax(0)
            .unwrap()
            .add(xt.layer_norm(&[0], 1e-5).unwrap())
            .unwrap();
        y.square().unwrap().sum_all().unwrap().grad(&x).unwrap()
    };
    assert_near(&vals(&g), &vals(&composite), 1e-12);
    let bad = nabla_tensor::Tensor::from_vec(vec![1i64, 2], [2], &cpu()).unwrap();
    let err = bad.softmax(-1).unwrap_err().to_string();
    assert!(err.contains("softmax"), "{err}");
}
