//! JVP rules of the movement primitives: reshape (squeeze, unsqueeze, flatten), permute, transpose,
//! broadcast, slices with steps of both signs, flip, pad, and cat / stack of several inputs.

use super::helpers::*;
use super::support::*;
use nabla_tensor::{Tensor, jvp, jvp_n};

/// A nonlinear tail, so that a wrongly routed tangent cannot cancel out.
fn tail(y: T) -> nabla_tensor::Result<T> {
    y.sin()
}

#[test]
fn reshapes_squeeze_unsqueeze() {
    let x = randn(&[2, 3, 4], 1);
    let xs = std::slice::from_ref(&x);
    adjoint(
        "reshape [6,4]",
        |v: &[T]| tail(v[0].reshape([6, 4])?),
        xs,
        1,
    );
    adjoint("reshape [-1]", |v: &[T]| v[0].reshape([-1]), xs, 2);
    adjoint("flatten 1..2", |v: &[T]| tail(v[0].flatten(1, 2)?), xs, 3);
    adjoint(
        "reshape of a transpose (a copy)",
        |v: &[T]| tail(v[0].t()?.reshape([3, 8])?),
        xs,
        4,
    );
    adjoint(
        "reshape of a transposed input",
        |v: &[T]| v[0].reshape([6]),
        &[transposed(2, 3, 5, STD)],
        5,
    );
    let y = randn(&[2, 1, 3, 1], 6);
    let ys = std::slice::from_ref(&y);
    adjoint("squeeze 1", |v: &[T]| tail(v[0].squeeze(1)?), ys, 6);
    adjoint("squeeze -1", |v: &[T]| v[0].squeeze(-1), ys, 7);
    adjoint("squeeze_all", |v: &[T]| tail(v[0].squeeze_all()?), ys, 8);
    adjoint("unsqueeze 0", |v: &[T]| tail(v[0].unsqueeze(0)?), ys, 9);
    adjoint("unsqueeze -1", |v: &[T]| v[0].unsqueeze(-1), ys, 10);
    adjoint(
        "rank 0 to [1,1]",
        |v: &[T]| tail(v[0].reshape([1, 1])?),
        &[randn(&[], 11)],
        11,
    );
    adjoint(
        "[1] to rank 0",
        |v: &[T]| v[0].reshape(()),
        &[randn(&[1], 12)],
        12,
    );
}

#[test]
fn permutes_and_transposes() {
    let x = randn(&[2, 3, 4], 20);
    let xs = std::slice::from_ref(&x);
    for (k, perm) in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0], [-1, 0, -2]]
        .into_iter()
        .enumerate()
    {
        adjoint(
            &format!("permute {perm:?}"),
            |v: &[T]| tail(v[0].permute(&perm)?),
            xs,
            20 + k as u64,
        );
    }
    adjoint("transpose 0 2", |v: &[T]| v[0].transpose(0, 2), xs, 30);
    adjoint(
        "transpose -1 -2",
        |v: &[T]| tail(v[0].transpose(-1, -2)?),
        xs,
        31,
    );
    adjoint(
        "t of a matrix",
        |v: &[T]| v[0].t(),
        &[randn(&[3, 2], 32)],
        32,
    );
    adjoint(
        "permute of a step -2 input",
        |v: &[T]| tail(v[0].permute(&[1, 0])?),
        &[stepped_back(&[3, 2], 33, STD)],
        33,
    );
    // Exact: a transpose moves the tangent with the values.
    let v = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let (_, jv) = jvp(|x: &T| x.t(), &randn(&[2, 3], 34), &v).unwrap();
    assert_eq!(jv.shape(), &[3, 2]);
    assert_eq!(vals(&jv), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
}

#[test]
fn broadcasts() {
    let cases: [(&[usize], &[usize]); 5] = [
        (&[3], &[2, 4, 3]),
        (&[2, 1], &[2, 5]),
        (&[1, 3, 1], &[2, 3, 4]),
        (&[], &[2, 3]),
        (&[2, 3], &[2, 3]),
    ];
    for (k, (from, to)) in cases.into_iter().enumerate() {
        adjoint(
            &format!("broadcast {from:?} -> {to:?}"),
            |v: &[T]| tail(v[0].broadcast_to(to.to_vec())?),
            &[randn(from, 40 + k as u64)],
            40 + k as u64,
        );
    }
    adjoint(
        "broadcast_as times the other",
        |v: &[T]| v[0].broadcast_as(&v[1])?.mul(&v[1]),
        &[randn(&[4, 1], 46), randn(&[4, 3], 47)],
        46,
    );
    adjoint(
        "broadcast of a transposed input",
        |v: &[T]| tail(v[0].broadcast_to([5, 3, 2])?),
        &[transposed(3, 2, 48, STD)],
        48,
    );
}

#[test]
fn slices_with_steps_of_both_signs() {
    let x = randn(&[7, 5], 50);
    let xs = std::slice::from_ref(&x);
    let mut seed = 50;
    for step in [1, 2, -1, -2] {
        for (start, end) in [
            (None, None),
            (Some(1), Some(6)),
            (Some(-2), Some(0)),
            (Some(5), Some(1)),
            (Some(2), None),
        ] {
            for axis in [0, 1, -1] {
                seed += 1;
                adjoint(
                    &format!("slice axis {axis} {start:?}..{end:?} step {step}"),
                    |v: &[T]| tail(v[0].slice(axis, start, end, step)?),
                    xs,
                    seed,
                );
            }
        }
    }
    adjoint(
        "slice of a slice",
        |v: &[T]| tail(v[0].slice(0, None, None, -2)?.slice(1, Some(1), None, 2)?),
        xs,
        200,
    );
    adjoint(
        "slice of a step -2 input",
        |v: &[T]| v[0].slice(1, None, None, 2),
        &[stepped_back(&[3, 5], 201, STD)],
        201,
    );
    adjoint(
        "narrow and select_index",
        |v: &[T]| {
            v[0].narrow(1, 1, 3)?
                .mul(&v[0].select_index(0, 2)?.narrow(0, 0, 3)?)
        },
        xs,
        202,
    );
    // An empty slice has an empty tangent.
    let (y, jv) = jvp(
        |x: &T| x.slice(0, Some(3), Some(3), 1),
        &x,
        &randn(&[7, 5], 203),
    )
    .unwrap();
    assert_eq!((y.shape(), jv.shape()), (&[0, 5][..], &[0, 5][..]));
    // Exact: a step -2 slice picks the tangent's elements.
    let v = t(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0], &[6]);
    let (_, jv) = jvp(|x: &T| x.slice(0, None, None, -2), &randn(&[6], 204), &v).unwrap();
    assert_eq!(vals(&jv), vec![5.0, 3.0, 1.0]);
}

#[test]
fn flips() {
    let x = randn(&[2, 3, 4], 60);
    for (k, axes) in [&[0][..], &[-1], &[0, 2], &[0, 1, 2]]
        .into_iter()
        .enumerate()
    {
        adjoint(
            &format!("flip {axes:?}"),
            |v: &[T]| tail(v[0].flip(axes)?),
            std::slice::from_ref(&x),
            60 + k as u64,
        );
    }
    adjoint(
        "flip of a transposed input",
        |v: &[T]| v[0].flip(&[1]),
        &[transposed(3, 4, 65, STD)],
        65,
    );
}

#[test]
fn pads() {
    let x = randn(&[2, 3], 70);
    let xs = std::slice::from_ref(&x);
    adjoint(
        "pad (1,2),(0,3)",
        |v: &[T]| tail(v[0].pad(&[(1, 2), (0, 3)], 0.0)?),
        xs,
        70,
    );
    adjoint(
        "pad with a value",
        |v: &[T]| v[0].pad(&[(0, 0), (2, 1)], 1.5),
        xs,
        71,
    );
    adjoint(
        "pad rank 3",
        |v: &[T]| tail(v[0].pad(&[(1, 0), (0, 2), (1, 1)], 0.0)?),
        &[randn(&[2, 1, 2], 72)],
        72,
    );
    adjoint(
        "pad a transposed input",
        |v: &[T]| v[0].pad(&[(1, 1), (1, 0)], -1.0),
        &[transposed(3, 2, 73, STD)],
        73,
    );
    // Exact: the padding has a zero tangent, whatever the pad value.
    let (_, jv) = jvp(
        |x: &T| x.pad(&[(1, 1)], 7.0),
        &randn(&[2], 74),
        &t(&[3.0, 4.0], &[2]),
    )
    .unwrap();
    assert_eq!(vals(&jv), vec![0.0, 3.0, 4.0, 0.0]);
}

#[test]
fn cat_and_stack_of_several_inputs() {
    let (a, b, c) = (randn(&[2, 3], 80), randn(&[2, 1], 81), randn(&[2, 4], 82));
    adjoint(
        "cat axis 1",
        |v: &[T]| tail(Tensor::cat(&[&v[0], &v[1], &v[2]], 1)?),
        &[a.clone(), b.clone(), c.clone()],
        80,
    );
    adjoint(
        "cat axis -1 of views",
        |v: &[T]| Tensor::cat(&[&v[0], &v[1]], -1),
        &[transposed(2, 3, 83, STD), stepped_back(&[2, 2], 84, STD)],
        81,
    );
    adjoint(
        "cat axis 0 with a repeated input",
        |v: &[T]| tail(Tensor::cat(&[&v[0], &v[1], &v[0]], 0)?),
        &[randn(&[1, 3], 85), randn(&[3, 3], 86)],
        82,
    );
    let k = Tensor::constant(randn(&[2, 2], 87));
    adjoint(
        "cat with a constant",
        move |v: &[T]| tail(Tensor::cat(&[&k, &v[0]], 1)?),
        std::slice::from_ref(&a),
        83,
    );
    for (j, axis) in [0, 1, 2, -1].into_iter().enumerate() {
        adjoint(
            &format!("stack axis {axis}"),
            |v: &[T]| tail(Tensor::stack(&[&v[0], &v[1]], axis)?),
            &[a.clone(), transposed(2, 3, 88, STD)],
            90 + j as u64,
        );
    }
    adjoint(
        "stack the same tensor",
        |v: &[T]| Tensor::stack(&[&v[0], &v[0], &v[0]], 0),
        &[randn(&[], 89)],
        95,
    );
    // Exact: the tangent of a cat is the cat of the tangents.
    let (y, jv) = jvp_n(
        |v: &[T]| Tensor::cat(&[&v[0], &v[1]], 0),
        &[randn(&[2], 96), randn(&[1], 97)],
        &[t(&[1.0, 2.0], &[2]), t(&[3.0], &[1])],
    )
    .unwrap();
    assert_eq!(y.shape(), &[3]);
    assert_eq!(vals(&jv), vec![1.0, 2.0, 3.0]);
}

#[test]
fn movement_against_finite_differences() {
    finite_difference(
        "reshape permute broadcast slice pad",
        |v: &[T]| {
            v[0].reshape([2, 2, 3])?
                .permute(&[2, 0, 1])?
                .broadcast_to([2, 3, 2, 2])?
                .slice(1, None, None, -2)?
                .pad(&[(0, 0), (1, 0), (0, 1), (0, 0)], 0.5)?
                .tanh()
        },
        &[randn(&[3, 4], 100)],
        100,
    );
    finite_difference(
        "cat of flips",
        |v: &[T]| Tensor::cat(&[&v[0].flip(&[0])?, &v[1].square()?], 0)?.exp(),
        &[randn(&[2, 3], 101), randn(&[1, 3], 102)],
        101,
    );
}
