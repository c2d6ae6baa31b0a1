//! Reductions (sum, mean, prod, max, min over single, multiple and negative axes, with and without
//! kept dimensions) and the cumulative sum.

use super::support::*;
use nabla_core::ReduceOp;
use nabla_tensor::{Tensor, grad_n};

/// Axis sets of a rank-3 tensor: all, one, negative, several, several negative.
const AXES: [&[isize]; 7] = [&[], &[0], &[1], &[-1], &[0, 2], &[-1, -3], &[0, 1, 2]];

#[test]
fn sum_and_mean_over_axes() {
    let x = randn(&[2, 3, 4], 1);
    let xt = randn(&[4, 3, 2], 2).permute(&[2, 1, 0]).unwrap();
    for axes in AXES {
        for keep in [false, true] {
            let label = format!("sum {axes:?} keepdims {keep}");
            check(
                &label,
                |v: &[T]| v[0].sum(axes, keep),
                std::slice::from_ref(&x),
            );
            check(
                &format!("{label} permuted"),
                |v: &[T]| v[0].sum(axes, keep),
                std::slice::from_ref(&xt),
            );
            let label = format!("mean {axes:?} keepdims {keep}");
            check(
                &label,
                |v: &[T]| v[0].mean(axes, keep),
                std::slice::from_ref(&x),
            );
        }
    }
    check("sum of rank 0", |v: &[T]| v[0].sum_all(), &[randn(&[], 3)]);
    check(
        "sum of a broadcast view",
        |v: &[T]| v[0].sum(&[0], false),
        &[broadcast_view(&[1, 3], &[4, 3], 4, STD)],
    );
}

#[test]
fn prod_over_axes_without_zeros() {
    let x = rand(&[2, 3, 4], 10, Dom::Away(0.5, 1.5));
    for axes in AXES {
        for keep in [false, true] {
            check(
                &format!("prod {axes:?} keepdims {keep}"),
                |v: &[T]| v[0].prod(axes, keep),
                std::slice::from_ref(&x),
            );
        }
    }
    check(
        "prod of a transpose",
        |v: &[T]| v[0].prod(&[0], false),
        &[transposed(3, 4, 11, Dom::Away(0.5, 1.5))],
    );
    check(
        "prod of rank 0",
        |v: &[T]| v[0].prod(&[], false),
        &[randn(&[], 12)],
    );
}

#[test]
fn prod_with_one_and_two_zeros() {
    // Rows with no zero, one zero and two zeros. The product is linear in each element, so central
    // differences are exact even at the zeros.
    let x = t(&[2.0, 3.0, 0.5, 4.0, 0.0, 5.0, 0.0, 7.0, 0.0], &[3, 3]);
    let g = grads(
        |v: &[T]| v[0].prod(&[1], false)?.sum_all(),
        std::slice::from_ref(&x),
    );
    assert_eq!(g[0], vec![1.5, 1.0, 6.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0]);
    check(
        "prod rows with 0, 1, 2 zeros",
        |v: &[T]| v[0].prod(&[1], false),
        std::slice::from_ref(&x),
    );
    check(
        "prod columns",
        |v: &[T]| v[0].prod(&[0], true),
        std::slice::from_ref(&x),
    );
    check(
        "prod all (three zeros)",
        |v: &[T]| v[0].prod(&[], false),
        std::slice::from_ref(&x),
    );
    let one_zero = t(&[2.0, 0.0, -3.0], &[3]);
    let g = grads(|v: &[T]| v[0].prod(&[], false), &[one_zero]);
    assert_eq!(g[0], vec![0.0, -6.0, 0.0]);
}

#[test]
fn max_and_min_over_axes_without_ties() {
    let x = randn(&[2, 3, 4], 20);
    let xt = randn(&[4, 3, 2], 21).permute(&[2, 1, 0]).unwrap();
    for op in [ReduceOp::Max, ReduceOp::Min] {
        for axes in AXES {
            for keep in [false, true] {
                let f = |v: &[T]| v[0].reduce(op, axes, keep);
                let label = format!("{} {axes:?} keepdims {keep}", op.name());
                check(&label, f, std::slice::from_ref(&x));
                check(&format!("{label} permuted"), f, std::slice::from_ref(&xt));
            }
        }
        check(
            &format!("{} of rank 0", op.name()),
            |v: &[T]| v[0].reduce(op, &[], false),
            &[randn(&[], 22)],
        );
    }
}

#[test]
fn max_and_min_split_ties_evenly() {
    // As JAX: every element equal to the extremum gets an equal share of the gradient.
    let x = t(
        &[
            1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 0.0, -1.0, 4.0, -1.0, -1.0,
        ],
        &[3, 4],
    );
    let g = grads(
        |v: &[T]| v[0].max(&[1], false)?.sum_all(),
        std::slice::from_ref(&x),
    );
    let third = 1.0 / 3.0;
    assert_near(
        &g[0],
        &[
            0.0, 0.5, 0.5, 0.0, third, third, third, 0.0, 0.0, 1.0, 0.0, 0.0,
        ],
        1e-15,
    );
    let g = grads(
        |v: &[T]| v[0].min(&[-1], true)?.sum_all(),
        std::slice::from_ref(&x),
    );
    assert_near(
        &g[0],
        &[
            1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, third, 0.0, third, third,
        ],
        1e-15,
    );
    // The cotangent is split, not duplicated: weights per row.
    let w = t(&[1.0, 10.0, 100.0], &[3]);
    let g = grads(
        |v: &[T]| v[0].max(&[1], false)?.mul(&w)?.sum_all(),
        std::slice::from_ref(&x),
    );
    assert_near(
        &g[0],
        &[
            0.0,
            0.5,
            0.5,
            0.0,
            10.0 * third,
            10.0 * third,
            10.0 * third,
            0.0,
            0.0,
            100.0,
            0.0,
            0.0,
        ],
        1e-12,
    );
    // Over several axes and over everything.
    let g = grads(|v: &[T]| v[0].max_all(), std::slice::from_ref(&x));
    assert_near(
        &g[0],
        &[
            0.0, 0.0, 0.0, 0.0, third, third, third, 0.0, 0.0, 0.0, 0.0, 0.0,
        ],
        1e-15,
    );
    let y = t(&[2.0, 2.0, 1.0, 2.0], &[2, 1, 2]);
    let g = grads(|v: &[T]| v[0].max(&[0, 2], false)?.sum_all(), &[y]);
    assert_near(&g[0], &[third, third, 0.0, third], 1e-15);
    // A tie between two elements: central differences also give 1/2 each.
    check(
        "max with a two-way tie",
        |v: &[T]| v[0].max(&[0], false),
        &[t(&[1.0, 4.0, 4.0, 2.0], &[4])],
    );
}

#[test]
fn cumsum_along_each_axis() {
    let x = randn(&[3, 4], 30);
    for axis in [0, 1, -1, -2] {
        check(
            &format!("cumsum axis {axis}"),
            |v: &[T]| v[0].cumsum(axis),
            std::slice::from_ref(&x),
        );
        check(
            &format!("cumsum axis {axis} transposed"),
            |v: &[T]| v[0].cumsum(axis),
            &[transposed(3, 4, 31, STD)],
        );
        check(
            &format!("cumsum axis {axis} step -2"),
            |v: &[T]| v[0].cumsum(axis),
            &[stepped_back(&[3, 4], 32, STD)],
        );
    }
    check(
        "cumsum rank 1",
        |v: &[T]| v[0].cumsum(0),
        &[randn(&[5], 33)],
    );
    check(
        "cumsum rank 3 middle",
        |v: &[T]| v[0].cumsum(1),
        &[randn(&[2, 3, 2], 34)],
    );
}

#[test]
fn reductions_of_tracked_and_constant_mixtures() {
    // The gradient of a reduction composed with broadcasting back (x - mean(x)) and a softmax-like
    // normalisation, over the last axis.
    let x = randn(&[3, 4], 40);
    check(
        "x - mean",
        |v: &[T]| v[0].sub(&v[0].mean(&[-1], true)?),
        std::slice::from_ref(&x),
    );
    let softmax = |v: &[T]| {
        let m = v[0].max(&[-1], true)?;
        let e = v[0].sub(&m)?.exp()?;
        e.div(&e.sum(&[-1], true)?)
    };
    check("softmax", softmax, std::slice::from_ref(&x));
    let k = Tensor::constant(randn(&[3, 4], 41));
    check(
        "sum(x * k)",
        move |v: &[T]| v[0].mul(&k)?.sum(&[0], false),
        &[x],
    );
}

#[test]
fn zero_size_reductions() {
    // Reductions over an empty axis: the gradient has the (empty) input shape; a sum over nothing
    // is 0 and a product 1, both constant.
    let e = t(&[], &[0, 3]);
    let g = grads(
        |v: &[T]| v[0].sum(&[0], false)?.sum_all(),
        std::slice::from_ref(&e),
    );
    assert!(g[0].is_empty());
    let g = grad_n(|v: &[T]| v[0].prod(&[0], false)?.sum_all())(std::slice::from_ref(&e)).unwrap();
    assert_eq!(g[0].shape(), &[0, 3]);
    // A non-empty input reduced together with an empty one.
    let x = randn(&[2, 3], 50);
    check(
        "sum of cat with an empty piece",
        |v: &[T]| Tensor::cat(&[&v[0], &v[1]], 0)?.sum(&[0], false)?.sin(),
        &[x, e],
    );
    // An empty axis next to a kept one: the output is non-empty and constant.
    let g =
        grad_n(|v: &[T]| v[0].sum(&[1], false)?.add(1.0)?.sum_all())(&[t(&[], &[3, 0])]).unwrap();
    assert_eq!(g[0].shape(), &[3, 0]);
}
