//! JVP rules of the matrix product (ranks 1 to 4 with batch broadcasting) and of the three
//! convolutions (stride, padding, dilation, groups), in both operands at once through `jvp_n`.

use super::helpers::*;
use super::support::*;
use nabla_tensor::jvp_n;

#[test]
fn matmul_over_ranks_with_batch_broadcasting() {
    let cases = MATMUL_SHAPES;
    for (k, (sa, sb)) in cases.into_iter().enumerate() {
        let s = 2 * k as u64;
        adjoint(
            &format!("matmul {sa:?} @ {sb:?}"),
            |v: &[T]| v[0].matmul(&v[1]),
            &[randn(sa, s), randn(sb, s + 1)],
            s,
        );
    }
}

#[test]
fn matmul_of_views_and_of_a_matrix_with_itself() {
    let f = |v: &[T]| v[0].matmul(&v[1]);
    adjoint(
        "transposed @ step -2",
        f,
        &[transposed(2, 3, 40, STD), stepped_back(&[3, 2], 41, STD)],
        40,
    );
    adjoint(
        "batched transposes",
        |v: &[T]| v[0].t()?.matmul(&v[1].t()?),
        &[randn(&[2, 3, 2], 42), randn(&[2, 4, 3], 43)],
        41,
    );
    adjoint(
        "x @ x",
        |v: &[T]| v[0].matmul(&v[0]),
        &[randn(&[3, 3], 44)],
        42,
    );
    adjoint(
        "x @ x^T",
        |v: &[T]| v[0].matmul(&v[0].t()?),
        &[randn(&[2, 3], 45)],
        43,
    );
    adjoint(
        "tanh(x @ w) @ u",
        |v: &[T]| v[0].matmul(&v[1])?.tanh()?.matmul(&v[2]),
        &[randn(&[2, 3], 46), randn(&[3, 4], 47), randn(&[4, 2], 48)],
        44,
    );
    // Exact: d(A B) = dA B + A dB.
    let (a, b) = (
        t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]),
        t(&[0.0, 1.0, 1.0, 0.0], &[2, 2]),
    );
    let (da, db) = (
        t(&[1.0, 0.0, 0.0, 0.0], &[2, 2]),
        t(&[0.0, 0.0, 0.0, 2.0], &[2, 2]),
    );
    let (_, jv) = jvp_n(|v: &[T]| v[0].matmul(&v[1]), &[a, b], &[da, db]).unwrap();
    assert_eq!(vals(&jv), vec![0.0, 5.0, 0.0, 8.0]);
}

#[test]
fn conv2d_input_and_weight() {
    for (k, (c, xs, ws)) in conv_cases().into_iter().enumerate() {
        let s = 100 + 2 * k as u64;
        let label = format!("conv2d {c:?} x {xs:?} w {ws:?}");
        let inputs = [randn(&xs, s), randn(&ws, s + 1)];
        adjoint(&label, |v: &[T]| v[0].conv2d(&v[1], &c), &inputs, s);
        adjoint(
            &format!("{label} tanh"),
            |v: &[T]| v[0].conv2d(&v[1], &c)?.tanh(),
            &inputs,
            s + 1,
        );
    }
    let c = p((1, 1), (1, 0), (1, 1), 1);
    let x = randn(&[1, 2, 4, 3], 130).permute(&[0, 1, 3, 2]).unwrap();
    let w = stepped_back(&[2, 2, 2, 2], 131, STD);
    adjoint(
        "conv2d of views",
        |v: &[T]| v[0].conv2d(&v[1], &c),
        &[x, w],
        130,
    );
}

#[test]
fn conv2d_input_grad_and_weight_grad_themselves() {
    for (k, (c, xs, ws)) in conv_cases().into_iter().enumerate() {
        let s = 200 + 3 * k as u64;
        let (oh, ow) = out_hw(&c, &xs, &ws);
        let h = randn(&[xs[0], ws[0], oh, ow], s);
        let w = randn(&ws, s + 1);
        let x = randn(&xs, s + 2);
        let hw = (xs[2], xs[3]);
        adjoint(
            &format!("conv2d_input_grad {c:?} x {xs:?} w {ws:?}"),
            |v: &[T]| v[0].conv2d_input_grad(&v[1], hw, &c),
            &[h.clone(), w],
            s,
        );
        let khw = (ws[2], ws[3]);
        adjoint(
            &format!("conv2d_weight_grad {c:?} x {xs:?} w {ws:?}"),
            |v: &[T]| v[0].conv2d_weight_grad(&v[1], khw, &c),
            &[x, h],
            s + 1,
        );
    }
}

#[test]
fn linalg_against_finite_differences() {
    finite_difference(
        "batched matmul",
        |v: &[T]| v[0].matmul(&v[1])?.sin(),
        &[randn(&[2, 1, 2, 3], 300), randn(&[3, 3, 2], 301)],
        300,
    );
    let (c, xs, ws) = conv_cases()[5];
    finite_difference(
        "conv2d with stride, padding, dilation and groups",
        |v: &[T]| v[0].conv2d(&v[1], &c)?.tanh(),
        &[randn(&xs, 302), randn(&ws, 303)],
        301,
    );
    let (oh, ow) = out_hw(&c, &xs, &ws);
    finite_difference(
        "conv2d_input_grad",
        |v: &[T]| v[0].conv2d_input_grad(&v[1], (xs[2], xs[3]), &c)?.sin(),
        &[randn(&[xs[0], ws[0], oh, ow], 304), randn(&ws, 305)],
        302,
    );
    finite_difference(
        "conv2d_weight_grad",
        |v: &[T]| v[0].conv2d_weight_grad(&v[1], (ws[2], ws[3]), &c)?.sin(),
        &[randn(&xs, 306), randn(&[xs[0], ws[0], oh, ow], 307)],
        303,
    );
}
