//! Matrix products (ranks 1 to 4 with batch broadcasting, transposed operands) and the three
//! convolutions (stride, padding, dilation, groups; input and weight), first and second order.

use super::support::*;
use nabla_tensor::grad_n;

#[test]
fn matmul_over_ranks_with_batch_broadcasting() {
    let cases = MATMUL_SHAPES;
    for (k, (sa, sb)) in cases.iter().enumerate() {
        let (a, b) = (randn(sa, 2 * k as u64), randn(sb, 2 * k as u64 + 1));
        check(
            &format!("matmul {sa:?} @ {sb:?}"),
            |v: &[T]| v[0].matmul(&v[1]),
            &[a, b],
        );
    }
}

#[test]
fn matmul_of_views_and_of_a_matrix_with_itself() {
    let f = |v: &[T]| v[0].matmul(&v[1]);
    check(
        "transposed @ step -2",
        f,
        &[transposed(2, 3, 10, STD), stepped_back(&[3, 2], 11, STD)],
    );
    check(
        "broadcast view @ transposed",
        f,
        &[
            broadcast_view(&[1, 3], &[4, 3], 12, STD),
            transposed(3, 2, 13, STD),
        ],
    );
    check(
        "batched transposes",
        |v: &[T]| v[0].t()?.matmul(&v[1].t()?),
        &[randn(&[2, 3, 2], 14), randn(&[2, 4, 3], 15)],
    );
    check("x @ x", |v: &[T]| v[0].matmul(&v[0]), &[randn(&[3, 3], 16)]);
    check(
        "x @ x^T",
        |v: &[T]| v[0].matmul(&v[0].t()?),
        &[randn(&[2, 3], 17)],
    );
}

#[test]
fn matmul_with_an_empty_inner_dimension() {
    // [2, 0] @ [0, 3] is a [2, 3] block of zeros; the gradients are empty.
    let g = grad_n(|v: &[T]| v[0].matmul(&v[1])?.sum_all())(&[t(&[], &[2, 0]), t(&[], &[0, 3])])
        .unwrap();
    assert_eq!((g[0].shape(), g[1].shape()), (&[2, 0][..], &[0, 3][..]));
}

#[test]
fn matmul_second_order() {
    // Bilinear: the second derivative mixes the two operands.
    let f = |v: &[T]| v[0].matmul(&v[1]);
    check2(
        "matmul [2,3] @ [3,4]",
        f,
        &[randn(&[2, 3], 20), randn(&[3, 4], 21)],
    );
    check2(
        "matmul [2,1,2,3] @ [3,3,2]",
        f,
        &[randn(&[2, 1, 2, 3], 22), randn(&[3, 3, 2], 23)],
    );
    check2("matmul [3] @ [3]", f, &[randn(&[3], 24), randn(&[3], 25)]);
    check2(
        "tanh(x @ w) @ v",
        |v: &[T]| v[0].matmul(&v[1])?.tanh()?.matmul(&v[2]),
        &[randn(&[2, 3], 26), randn(&[3, 4], 27), randn(&[4, 2], 28)],
    );
    check2("x @ x", |v: &[T]| v[0].matmul(&v[0]), &[randn(&[3, 3], 29)]);
}

#[test]
fn conv2d_input_and_weight() {
    for (k, (c, xs, ws)) in conv_cases().into_iter().enumerate() {
        let (x, w) = (
            randn(&xs, 100 + 2 * k as u64),
            randn(&ws, 101 + 2 * k as u64),
        );
        check(
            &format!("conv2d {c:?} x {xs:?} w {ws:?}"),
            |v: &[T]| v[0].conv2d(&v[1], &c),
            &[x, w],
        );
    }
    // Non-contiguous operands.
    let c = p((1, 1), (1, 0), (1, 1), 1);
    let x = randn(&[1, 2, 4, 3], 130).permute(&[0, 1, 3, 2]).unwrap();
    let w = stepped_back(&[2, 2, 2, 2], 131, STD);
    check("conv2d of views", |v: &[T]| v[0].conv2d(&v[1], &c), &[x, w]);
}

#[test]
fn conv2d_input_grad_and_weight_grad_themselves() {
    for (k, (c, xs, ws)) in conv_cases().into_iter().enumerate() {
        let (oh, ow) = out_hw(&c, &xs, &ws);
        let h = randn(&[xs[0], ws[0], oh, ow], 200 + 3 * k as u64);
        let w = randn(&ws, 201 + 3 * k as u64);
        let x = randn(&xs, 202 + 3 * k as u64);
        let hw = (xs[2], xs[3]);
        check(
            &format!("conv2d_input_grad {c:?} x {xs:?} w {ws:?}"),
            |v: &[T]| v[0].conv2d_input_grad(&v[1], hw, &c),
            &[h.clone(), w],
        );
        let khw = (ws[2], ws[3]);
        check(
            &format!("conv2d_weight_grad {c:?} x {xs:?} w {ws:?}"),
            |v: &[T]| v[0].conv2d_weight_grad(&v[1], khw, &c),
            &[x, h],
        );
    }
}

#[test]
fn conv2d_second_order() {
    for (k, (c, xs, ws)) in conv_cases().into_iter().enumerate() {
        let (x, w) = (
            randn(&xs, 300 + 2 * k as u64),
            randn(&ws, 301 + 2 * k as u64),
        );
        let label = format!("conv2d {c:?} x {xs:?} w {ws:?}");
        // The bilinear conv alone: the cross terms go through conv2d_input_grad and
        // conv2d_weight_grad's own rules.
        check2(
            &label,
            |v: &[T]| v[0].conv2d(&v[1], &c),
            &[x.clone(), w.clone()],
        );
        // With a nonlinearity, the terms in x x and w w appear as well.
        check2(
            &format!("{label} tanh"),
            |v: &[T]| v[0].conv2d(&v[1], &c)?.tanh(),
            &[x, w],
        );
    }
}

#[test]
fn conv2d_grad_ops_second_order() {
    let (c, xs, ws) = conv_cases()[5];
    let (oh, ow) = out_hw(&c, &xs, &ws);
    let h = randn(&[xs[0], ws[0], oh, ow], 400);
    let (w, x) = (randn(&ws, 401), randn(&xs, 402));
    let hw = (xs[2], xs[3]);
    check2(
        "conv2d_input_grad",
        |v: &[T]| v[0].conv2d_input_grad(&v[1], hw, &c)?.sin(),
        &[h.clone(), w],
    );
    let khw = (ws[2], ws[3]);
    check2(
        "conv2d_weight_grad",
        |v: &[T]| v[0].conv2d_weight_grad(&v[1], khw, &c)?.sin(),
        &[x, h],
    );
}
