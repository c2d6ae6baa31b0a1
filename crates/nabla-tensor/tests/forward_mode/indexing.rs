//! JVP rules of the index primitives: gather, index_select, scatter_add and index_add with repeated
//! and negative indices (destination and source at once), and the values of sort and topk.

use super::helpers::*;
use super::support::*;
use nabla_tensor::{Tensor, jvp, jvp_n};

fn tail(y: T) -> nabla_tensor::Result<T> {
    y.sin()
}

#[test]
fn gather_with_repeats_and_broadcasting() {
    let x = randn(&[3, 4], 1);
    let xs = std::slice::from_ref(&x);
    let i1 = idx(&[0, 0, 3, 1, 2, 2, 2, -1, 1, 0, 0, 0], &[3, 4]);
    adjoint(
        "gather axis 1, repeats",
        |v: &[T]| tail(v[0].gather(1, &i1)?),
        xs,
        1,
    );
    let i0 = idx(&[2, 2, 0, 1, 0, 0, 2, 2], &[2, 4]);
    adjoint("gather axis 0", |v: &[T]| v[0].gather(0, &i0), xs, 2);
    let narrow = idx(&[1, 1, 1, 0, 3, 3], &[3, 2]);
    adjoint(
        "gather axis -1, fewer columns",
        |v: &[T]| tail(v[0].gather(-1, &narrow)?),
        xs,
        3,
    );
    let ib = idx(&[3, 0, 0], &[1, 3]);
    adjoint(
        "gather, index broadcast",
        |v: &[T]| v[0].gather(1, &ib),
        xs,
        4,
    );
    let i2 = idx(&[0, 1, 1, 1, 3, 0], &[3, 2]);
    adjoint(
        "gather, x broadcast",
        |v: &[T]| tail(v[0].gather(1, &i2)?),
        &[randn(&[1, 4], 5)],
        5,
    );
    adjoint(
        "gather of a step -2 input",
        |v: &[T]| v[0].gather(1, &i1),
        &[stepped_back(&[3, 4], 6, STD)],
        6,
    );
    // Exact: the tangent is gathered like the values.
    let v = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let (_, jv) = jvp(
        |x: &T| x.gather(0, &idx(&[3, 3, 0], &[3])),
        &randn(&[4], 7),
        &v,
    )
    .unwrap();
    assert_eq!(vals(&jv), vec![4.0, 4.0, 1.0]);
}

#[test]
fn index_select_with_repeats() {
    let x = randn(&[4, 3], 10);
    let xs = std::slice::from_ref(&x);
    let i = idx(&[3, 0, 3, 3, -4], &[5]);
    adjoint(
        "index_select axis 0",
        |v: &[T]| tail(v[0].index_select(0, &i)?),
        xs,
        10,
    );
    let j = idx(&[2, 2, 1], &[3]);
    adjoint(
        "index_select axis 1",
        |v: &[T]| v[0].index_select(1, &j),
        xs,
        11,
    );
    adjoint(
        "index_select axis -1 of a transposed input",
        |v: &[T]| tail(v[0].index_select(-1, &i)?),
        &[transposed(3, 4, 12, STD)],
        12,
    );
    let i32_index = Tensor::from_slice(&[1i32, 1], [2], &cpu()).unwrap();
    adjoint(
        "index_select with i32 indices",
        |v: &[T]| v[0].index_select(0, &i32_index),
        xs,
        13,
    );
}

#[test]
fn scatter_add_into_destination_and_source() {
    let dst = randn(&[3, 4], 20);
    let i = idx(&[1, 1, 0, 3, 2, 2], &[3, 2]);
    adjoint(
        "scatter_add axis 1, repeats",
        |v: &[T]| tail(v[0].scatter_add(1, &i, &v[1])?),
        &[dst.clone(), randn(&[3, 2], 21)],
        20,
    );
    let i0 = idx(&[2, 2, 2, 0, 0, 0, 1, 2], &[2, 4]);
    adjoint(
        "scatter_add axis 0, repeats",
        |v: &[T]| v[0].scatter_add(0, &i0, &v[1]),
        &[dst.clone(), randn(&[2, 4], 22)],
        21,
    );
    adjoint(
        "scatter_add into a transposed input",
        |v: &[T]| tail(v[0].scatter_add(0, &i0, &v[1])?),
        &[transposed(3, 4, 23, STD), stepped_back(&[2, 4], 24, STD)],
        22,
    );
    let d = Tensor::constant(dst.clone());
    adjoint(
        "scatter_add source only",
        |v: &[T]| tail(d.scatter_add(-1, &i, &v[0])?),
        &[randn(&[3, 2], 25)],
        23,
    );
    adjoint(
        "scatter_add of x into itself",
        |v: &[T]| {
            v[0].scatter_add(
                1,
                &idx(&[0, 0, 1, 1], &[2, 2]),
                &v[0].narrow(1, 0, 2)?.square()?,
            )
        },
        &[randn(&[2, 3], 26)],
        24,
    );
    // Exact: the tangents are scattered like the values.
    let (_, jv) = jvp_n(
        |v: &[T]| v[0].scatter_add(0, &idx(&[2, 2, 0], &[3]), &v[1]),
        &[randn(&[3], 27), randn(&[3], 28)],
        &[t(&[1.0, 2.0, 3.0], &[3]), t(&[10.0, 20.0, 30.0], &[3])],
    )
    .unwrap();
    assert_eq!(vals(&jv), vec![31.0, 2.0, 33.0]);
}

#[test]
fn index_add_with_repeats() {
    let dst = randn(&[4, 3], 30);
    let i = idx(&[0, 3, 0, 0, 2], &[5]);
    adjoint(
        "index_add axis 0",
        |v: &[T]| tail(v[0].index_add(0, &i, &v[1])?),
        &[dst.clone(), randn(&[5, 3], 31)],
        30,
    );
    let j = idx(&[2, 2], &[2]);
    adjoint(
        "index_add axis 1",
        |v: &[T]| v[0].index_add(1, &j, &v[1]),
        &[dst, randn(&[4, 2], 32)],
        31,
    );
}

#[test]
fn sort_and_topk_values() {
    let x = randn(&[3, 5], 40);
    let xs = std::slice::from_ref(&x);
    let mut seed = 40;
    for axis in [0, 1, -1] {
        for desc in [false, true] {
            seed += 1;
            adjoint(
                &format!("sort axis {axis} descending {desc}"),
                |v: &[T]| tail(v[0].sort(axis, desc)?.0),
                xs,
                seed,
            );
        }
    }
    for (k, largest) in [(1, true), (3, true), (2, false), (5, false)] {
        seed += 1;
        adjoint(
            &format!("topk {k} largest {largest}"),
            |v: &[T]| Ok(v[0].topk(k, -1, largest)?.0),
            xs,
            seed,
        );
    }
    adjoint(
        "topk axis 0",
        |v: &[T]| tail(v[0].topk(2, 0, true)?.0),
        xs,
        60,
    );
    adjoint(
        "sort of a transposed input",
        |v: &[T]| Ok(v[0].sort(1, false)?.0),
        &[transposed(3, 5, 61, STD)],
        61,
    );
    // Exact: the tangent follows its value to the sorted position.
    let y = t(&[3.0, 1.0, 2.0], &[3]);
    let v = t(&[30.0, 10.0, 20.0], &[3]);
    let (s, jv) = jvp(|x: &T| Ok(x.sort(0, false)?.0), &y, &v).unwrap();
    assert_eq!(vals(&s), vec![1.0, 2.0, 3.0]);
    assert_eq!(vals(&jv), vec![10.0, 20.0, 30.0]);
    let (_, jv) = jvp(|x: &T| Ok(x.topk(2, 0, true)?.0), &y, &v).unwrap();
    assert_eq!(vals(&jv), vec![30.0, 20.0]);
}

#[test]
fn indexing_against_finite_differences() {
    let i = idx(&[0, 0, 3, 1, 2, 2], &[3, 2]);
    finite_difference(
        "gather and scatter_add",
        |v: &[T]| v[0].scatter_add(1, &i, &v[0].gather(1, &i)?.exp()?)?.sin(),
        &[randn(&[3, 4], 70)],
        70,
    );
    finite_difference(
        "sort values",
        |v: &[T]| v[0].sort(1, true)?.0.exp()?.cumsum(1),
        &[randn(&[3, 4], 71)],
        71,
    );
}
