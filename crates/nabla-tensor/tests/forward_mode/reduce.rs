//! JVP rules of the reductions (sum, mean, prod, max, min over single, several, negative and all
//! axes, with and without kept dimensions; products with zeros and extrema with ties) and cumsum.

use super::helpers::*;
use super::support::*;
use nabla_core::ReduceOp;
use nabla_tensor::{Result, jvp};

/// Axis sets of a rank-3 tensor: all, one, negative, several, several negative, every one.
const AXES: [&[isize]; 7] = [&[], &[0], &[1], &[-1], &[0, 2], &[-1, -3], &[0, 1, 2]];

/// A reduction over axes with or without kept dimensions.
type Reduction = fn(&T, &[isize], bool) -> Result<T>;

#[test]
fn every_reduction_over_axes_with_and_without_keepdims() {
    let x = randn(&[2, 3, 4], 1);
    let xt = randn(&[4, 3, 2], 2).permute(&[2, 1, 0]).unwrap();
    let away = rand(&[2, 3, 4], 3, Dom::Away(0.5, 1.5));
    let away_t = rand(&[4, 3, 2], 5, Dom::Away(0.5, 1.5))
        .permute(&[2, 1, 0])
        .unwrap();
    let ops: [(&str, Reduction); 5] = [
        ("sum", |x, a, k| x.sum(a, k)),
        ("mean", |x, a, k| x.mean(a, k)),
        ("prod", |x, a, k| x.prod(a, k)),
        ("max", |x, a, k| x.reduce(ReduceOp::Max, a, k)),
        ("min", |x, a, k| x.reduce(ReduceOp::Min, a, k)),
    ];
    for (k, (name, op)) in ops.into_iter().enumerate() {
        let (plain, permuted) = if name == "prod" {
            (&away, &away_t)
        } else {
            (&x, &xt)
        };
        for (j, axes) in AXES.into_iter().enumerate() {
            for keep in [false, true] {
                let s = 100 * k as u64 + 2 * j as u64 + u64::from(keep);
                let label = format!("{name} {axes:?} keepdims {keep}");
                let f = |v: &[T]| op(&v[0], axes, keep);
                adjoint(&label, f, std::slice::from_ref(plain), s);
                adjoint(
                    &format!("{label} of a permuted input"),
                    f,
                    std::slice::from_ref(permuted),
                    s + 50,
                );
            }
        }
        adjoint(
            &format!("{name} of rank 0"),
            |v: &[T]| op(&v[0], &[], false),
            &[randn(&[], 4)],
            600 + k as u64,
        );
    }
}

#[test]
fn named_reductions() {
    let x = randn(&[3, 4], 10);
    let xs = std::slice::from_ref(&x);
    adjoint("sum_all", |v: &[T]| v[0].sum_all(), xs, 10);
    adjoint("mean_all", |v: &[T]| v[0].mean_all(), xs, 11);
    adjoint("max_all", |v: &[T]| v[0].max_all(), xs, 12);
    adjoint("min_all", |v: &[T]| v[0].min_all(), xs, 13);
    adjoint(
        "sum then exp",
        |v: &[T]| v[0].sum(&[0], true)?.exp(),
        xs,
        14,
    );
    adjoint(
        "mean of a broadcast",
        |v: &[T]| v[0].broadcast_to([5, 3, 4])?.mean(&[0, 2], false),
        xs,
        15,
    );
    adjoint(
        "x - max(x)",
        |v: &[T]| v[0].sub(&v[0].max(&[-1], true)?),
        xs,
        16,
    );
}

#[test]
fn prod_with_zeros() {
    // Rows with no zero, one zero, two zeros and three zeros.
    let x = t(
        &[2.0, 3.0, 0.5, 4.0, 0.0, 5.0, 0.0, 7.0, 0.0, 0.0, 0.0, 0.0],
        &[4, 3],
    );
    let xs = std::slice::from_ref(&x);
    adjoint("prod rows", |v: &[T]| v[0].prod(&[1], false), xs, 20);
    adjoint("prod columns", |v: &[T]| v[0].prod(&[0], true), xs, 21);
    adjoint("prod all", |v: &[T]| v[0].prod(&[], false), xs, 22);
    // Exact: d prod = sum_i v_i prod_{j != i} x_j.
    let y = t(&[2.0, 0.0, -3.0], &[3]);
    let v = t(&[0.5, 2.0, -1.0], &[3]);
    let (p, jv) = jvp(|x: &T| x.prod(&[], false), &y, &v).unwrap();
    assert_eq!(p.item::<f64>().unwrap(), 0.0);
    assert_eq!(jv.item::<f64>().unwrap(), -12.0);
    let (_, jv) = jvp(|x: &T| x.prod(&[], false), &t(&[0.0, 0.0, 5.0], &[3]), &v).unwrap();
    assert_eq!(jv.item::<f64>().unwrap(), 0.0);
}

#[test]
fn max_and_min_with_ties() {
    // As the reverse rule, the tangent of a tied extremum is the mean of the tied tangents.
    let x = t(
        &[
            1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 0.0, -1.0, 4.0, -1.0, -1.0,
        ],
        &[3, 4],
    );
    let xs = std::slice::from_ref(&x);
    adjoint(
        "max rows with ties",
        |v: &[T]| v[0].max(&[1], false),
        xs,
        30,
    );
    adjoint(
        "min rows with ties",
        |v: &[T]| v[0].min(&[-1], true),
        xs,
        31,
    );
    adjoint("max_all with ties", |v: &[T]| v[0].max_all(), xs, 32);
    let v = t(
        &[0.0, 1.0, 2.0, 0.0, 3.0, 6.0, 9.0, 0.0, 1.0, 0.0, 2.0, 6.0],
        &[3, 4],
    );
    let (m, jv) = jvp(|x: &T| x.max(&[1], false), &x, &v).unwrap();
    assert_eq!(vals(&m), vec![3.0, 5.0, 4.0]);
    assert_near(&vals(&jv), &[1.5, 6.0, 0.0], 1e-15);
    let (_, jv) = jvp(|x: &T| x.min(&[1], false), &x, &v).unwrap();
    assert_near(&vals(&jv), &[0.0, 0.0, 3.0], 1e-15);
}

#[test]
fn cumsum_along_each_axis() {
    let x = randn(&[3, 4], 40);
    for (k, axis) in [0, 1, -1, -2].into_iter().enumerate() {
        let s = 40 + 3 * k as u64;
        let f = |v: &[T]| v[0].cumsum(axis);
        adjoint(
            &format!("cumsum axis {axis}"),
            f,
            std::slice::from_ref(&x),
            s,
        );
        adjoint(
            &format!("cumsum axis {axis} of a transposed input"),
            f,
            &[transposed(3, 4, s + 1, STD)],
            s + 1,
        );
        adjoint(
            &format!("cumsum axis {axis} squared"),
            |v: &[T]| v[0].cumsum(axis)?.square(),
            &[stepped_back(&[3, 4], s + 2, STD)],
            s + 2,
        );
    }
    adjoint(
        "cumsum rank 3 middle",
        |v: &[T]| v[0].cumsum(1),
        &[randn(&[2, 3, 2], 60)],
        60,
    );
    // Exact: cumsum is linear, so J v = cumsum(v).
    let v = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let (_, jv) = jvp(|x: &T| x.cumsum(0), &randn(&[4], 61), &v).unwrap();
    assert_eq!(vals(&jv), vec![1.0, 3.0, 6.0, 10.0]);
}

#[test]
fn reductions_against_finite_differences() {
    finite_difference(
        "prod and max",
        |v: &[T]| v[0].prod(&[1], false)?.add(&v[0].max(&[1], false)?),
        &[rand(&[3, 4], 70, Dom::Away(0.5, 1.5))],
        70,
    );
    finite_difference(
        "mean of cumsum squared",
        |v: &[T]| v[0].cumsum(0)?.square()?.mean(&[0], false),
        &[randn(&[4, 3], 71)],
        71,
    );
}
