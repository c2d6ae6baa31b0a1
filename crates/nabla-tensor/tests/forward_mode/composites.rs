//! JVPs of the composite ops (recorded as the primitives they are made of): softmax, log_softmax,
//! logsumexp, gelu, silu, softplus, layer_norm, variance and normalize.

use super::helpers::*;
use super::support::*;
use nabla_tensor::jvp;

#[test]
fn softmax_family() {
    let x = randn(&[3, 4], 1).mul(2.0).unwrap();
    let xs = std::slice::from_ref(&x);
    for (k, axis) in [0, 1, -1].into_iter().enumerate() {
        let s = 10 * k as u64;
        adjoint(
            &format!("softmax axis {axis}"),
            |v: &[T]| v[0].softmax(axis),
            xs,
            s,
        );
        adjoint(
            &format!("log_softmax axis {axis}"),
            |v: &[T]| v[0].log_softmax(axis),
            xs,
            s + 1,
        );
    }
    for (k, (axes, keep)) in [
        (&[][..], false),
        (&[1][..], false),
        (&[-1][..], true),
        (&[0, 1][..], true),
    ]
    .into_iter()
    .enumerate()
    {
        adjoint(
            &format!("logsumexp {axes:?} keepdims {keep}"),
            |v: &[T]| v[0].logsumexp(axes, keep),
            xs,
            40 + k as u64,
        );
    }
    adjoint(
        "softmax of a transposed input",
        |v: &[T]| v[0].softmax(-1),
        &[transposed(3, 4, 2, STD)],
        50,
    );
    // Exact: the tangent of softmax is s * (v - <s, v>); a constant shift has a zero tangent.
    let (_, jv) = jvp(|x: &T| x.softmax(-1), &x, &x.ones_like().unwrap()).unwrap();
    assert_near(&vals(&jv), &[0.0; 12], 1e-15);
}

#[test]
fn activations() {
    let x = randn(&[2, 5], 60).mul(2.0).unwrap();
    let xs = std::slice::from_ref(&x);
    adjoint("gelu", |v: &[T]| v[0].gelu(), xs, 60);
    adjoint("gelu_tanh", |v: &[T]| v[0].gelu_tanh(), xs, 61);
    adjoint("silu", |v: &[T]| v[0].silu(), xs, 62);
    adjoint("softplus", |v: &[T]| v[0].softplus(), xs, 63);
    adjoint("elu", |v: &[T]| v[0].elu(0.7), xs, 64);
    adjoint(
        "relu away from 0",
        |v: &[T]| v[0].relu(),
        &[rand(&[6], 65, Dom::Away(0.1, 2.0))],
        65,
    );
    adjoint(
        "leaky_relu away from 0",
        |v: &[T]| v[0].leaky_relu(0.1),
        &[rand(&[6], 66, Dom::Away(0.1, 2.0))],
        66,
    );
    // Exact: silu'(x) = s(x) (1 + x (1 - s(x))).
    let (_, jv) = jvp(|x: &T| x.silu(), &x, &x.ones_like().unwrap()).unwrap();
    let want: Vec<f64> = vals(&x)
        .iter()
        .map(|&x| {
            let s = 1.0 / (1.0 + (-x).exp());
            s * (1.0 + x * (1.0 - s))
        })
        .collect();
    assert_near(&vals(&jv), &want, 1e-13);
}

#[test]
fn normalizations() {
    let x = randn(&[3, 4], 70);
    let xs = std::slice::from_ref(&x);
    adjoint(
        "layer_norm [-1]",
        |v: &[T]| v[0].layer_norm(&[-1], 1e-5),
        xs,
        70,
    );
    adjoint(
        "layer_norm all",
        |v: &[T]| v[0].layer_norm(&[0, 1], 1e-5),
        xs,
        71,
    );
    adjoint(
        "layer_norm rank 3 middle",
        |v: &[T]| v[0].layer_norm(&[1], 1e-3),
        &[randn(&[2, 3, 2], 72)],
        72,
    );
    for (k, (axes, keep, corr)) in [
        (&[][..], false, 0),
        (&[1][..], true, 1),
        (&[0][..], false, 1),
        (&[-1][..], false, 0),
    ]
    .into_iter()
    .enumerate()
    {
        adjoint(
            &format!("variance {axes:?} keepdims {keep} correction {corr}"),
            |v: &[T]| v[0].variance(axes, keep, corr),
            xs,
            80 + k as u64,
        );
    }
    adjoint("std_dev", |v: &[T]| v[0].std_dev(&[1], false, 1), xs, 85);
    for (k, (p, axis)) in [(2.0, -1), (1.0, 0), (3.0, 1)].into_iter().enumerate() {
        adjoint(
            &format!("normalize p {p} axis {axis}"),
            |v: &[T]| v[0].normalize(p, axis, 1e-12),
            &[rand(&[3, 4], 90 + k as u64, Dom::Away(0.2, 2.0))],
            90 + k as u64,
        );
    }
}

#[test]
fn composites_against_finite_differences() {
    let x = randn(&[3, 4], 100);
    let xs = std::slice::from_ref(&x);
    finite_difference("log_softmax", |v: &[T]| v[0].log_softmax(-1), xs, 100);
    finite_difference("gelu", |v: &[T]| v[0].gelu(), xs, 101);
    finite_difference(
        "layer_norm",
        |v: &[T]| v[0].layer_norm(&[-1], 1e-5),
        xs,
        102,
    );
    finite_difference(
        "normalize",
        |v: &[T]| v[0].normalize(2.0, 1, 1e-12),
        xs,
        103,
    );
}
