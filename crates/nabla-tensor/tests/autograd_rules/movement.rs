//! Movement rules: reshape (views and copies, squeeze, unsqueeze, flatten), permute, broadcast, slice
//! (steps ±1, ±2, ±3, narrow, select_index, empty), flip, pad, cat and stack.

use super::support::*;
use nabla_tensor::{Tensor, s};

/// A function with a nonlinear tail so that a wrong routing of the gradient cannot cancel out.
fn tail(y: T) -> nabla_tensor::Result<T> {
    y.sin()
}

#[test]
fn reshapes_squeeze_unsqueeze_flatten() {
    let x = randn(&[2, 3, 4], 1);
    let xs = std::slice::from_ref(&x);
    check("reshape [6,4]", |v: &[T]| tail(v[0].reshape([6, 4])?), xs);
    check("reshape [-1]", |v: &[T]| tail(v[0].reshape([-1])?), xs);
    check(
        "reshape [4,1,6]",
        |v: &[T]| tail(v[0].reshape([4, 1, 6])?),
        xs,
    );
    check("flatten 1..2", |v: &[T]| tail(v[0].flatten(1, 2)?), xs);
    check("flatten_all", |v: &[T]| tail(v[0].flatten_all()?), xs);
    // A reshape of a transposed view needs a copy.
    check(
        "reshape of a transpose (copy)",
        |v: &[T]| tail(v[0].t()?.reshape([3, 8])?),
        xs,
    );
    check(
        "reshape transposed input",
        |v: &[T]| tail(v[0].reshape([6])?),
        &[transposed(2, 3, 2, STD)],
    );
    let y = randn(&[2, 1, 3, 1], 3);
    let ys = std::slice::from_ref(&y);
    check("squeeze 1", |v: &[T]| tail(v[0].squeeze(1)?), ys);
    check("squeeze -1", |v: &[T]| tail(v[0].squeeze(-1)?), ys);
    check("squeeze_all", |v: &[T]| tail(v[0].squeeze_all()?), ys);
    check("unsqueeze 0", |v: &[T]| tail(v[0].unsqueeze(0)?), ys);
    check("unsqueeze -1", |v: &[T]| tail(v[0].unsqueeze(-1)?), ys);
    check(
        "reshape rank 0 to [1,1]",
        |v: &[T]| tail(v[0].reshape([1, 1])?),
        &[randn(&[], 4)],
    );
    check(
        "reshape [1] to rank 0",
        |v: &[T]| tail(v[0].reshape(())?),
        &[randn(&[1], 5)],
    );
}

#[test]
fn permutes_and_transposes() {
    let x = randn(&[2, 3, 4], 10);
    let xs = std::slice::from_ref(&x);
    for perm in [[0, 1, 2], [2, 0, 1], [1, 2, 0], [2, 1, 0], [-1, 0, -2]] {
        check(
            &format!("permute {perm:?}"),
            |v: &[T]| tail(v[0].permute(&perm)?),
            xs,
        );
    }
    check("transpose 0 2", |v: &[T]| tail(v[0].transpose(0, 2)?), xs);
    check(
        "transpose -1 -2",
        |v: &[T]| tail(v[0].transpose(-1, -2)?),
        xs,
    );
    check(
        "t of a matrix",
        |v: &[T]| tail(v[0].t()?),
        &[randn(&[3, 2], 11)],
    );
    check(
        "t of a vector",
        |v: &[T]| tail(v[0].t()?),
        &[randn(&[3], 12)],
    );
    check(
        "permute of a step -2 view",
        |v: &[T]| tail(v[0].permute(&[1, 0])?),
        &[stepped_back(&[3, 2], 13, STD)],
    );
}

#[test]
fn broadcasts() {
    check(
        "[3] -> [2,4,3]",
        |v: &[T]| tail(v[0].broadcast_to([2, 4, 3])?),
        &[randn(&[3], 20)],
    );
    check(
        "[2,1] -> [2,5]",
        |v: &[T]| tail(v[0].broadcast_to([2, 5])?),
        &[randn(&[2, 1], 21)],
    );
    check(
        "[1,3,1] -> [2,3,4]",
        |v: &[T]| tail(v[0].broadcast_to([2, 3, 4])?),
        &[randn(&[1, 3, 1], 22)],
    );
    check(
        "[] -> [2,3]",
        |v: &[T]| tail(v[0].broadcast_to([2, 3])?),
        &[randn(&[], 23)],
    );
    check(
        "broadcast_as",
        |v: &[T]| tail(v[0].broadcast_as(&v[1])?.mul(&v[1])?),
        &[randn(&[4, 1], 24), randn(&[4, 3], 25)],
    );
    // A transposed view broadcast again, and a broadcast input broadcast further.
    check(
        "broadcast of a transpose",
        |v: &[T]| tail(v[0].broadcast_to([5, 3, 2])?),
        &[transposed(3, 2, 26, STD)],
    );
    check(
        "broadcast of a broadcast",
        |v: &[T]| tail(v[0].broadcast_to([2, 4, 3])?),
        &[broadcast_view(&[3], &[4, 3], 27, STD)],
    );
}

#[test]
fn slices_with_steps_of_both_signs() {
    let x = randn(&[7, 5], 30);
    let xs = std::slice::from_ref(&x);
    for step in [1, 2, 3, -1, -2, -3] {
        for (start, end) in [
            (None, None),
            (Some(1), Some(6)),
            (Some(-2), Some(0)),
            (Some(5), Some(1)),
            (Some(2), None),
        ] {
            for axis in [0, 1, -1] {
                let f = |v: &[T]| tail(v[0].slice(axis, start, end, step)?);
                check(
                    &format!("slice axis {axis} {start:?}..{end:?} step {step}"),
                    f,
                    xs,
                );
            }
        }
    }
    // Slices of slices, of transposed views, and an empty slice.
    check(
        "slice of a slice",
        |v: &[T]| tail(v[0].slice(0, None, None, -2)?.slice(1, Some(1), None, 3)?),
        xs,
    );
    check(
        "slice of a transpose",
        |v: &[T]| tail(v[0].t()?.slice(1, Some(6), None, -3)?),
        xs,
    );
    check(
        "slice of a step -2 input",
        |v: &[T]| tail(v[0].slice(1, None, None, 2)?),
        &[stepped_back(&[3, 5], 31, STD)],
    );
    let g = grads(|v: &[T]| v[0].slice(0, Some(3), Some(3), 1)?.sum_all(), xs);
    assert_eq!(g[0], vec![0.0; 35]);
    check(
        "empty slice plus the rest",
        |v: &[T]| tail(v[0].slice(0, Some(3), Some(3), -1)?.sum_all()?.add(&v[0])?),
        xs,
    );
}

#[test]
fn narrow_select_index_split_and_indexing() {
    let x = randn(&[4, 5], 40);
    let xs = std::slice::from_ref(&x);
    check("narrow", |v: &[T]| tail(v[0].narrow(1, 1, 3)?), xs);
    check(
        "select_index 0",
        |v: &[T]| tail(v[0].select_index(0, 2)?),
        xs,
    );
    check(
        "select_index -1",
        |v: &[T]| tail(v[0].select_index(-1, -1)?),
        xs,
    );
    check(
        "split",
        |v: &[T]| {
            let parts = v[0].split(2, 1)?;
            tail(
                parts[0]
                    .sum_all()?
                    .add(&parts[2].mul(&parts[2])?.sum_all()?)?,
            )
        },
        xs,
    );
    check(
        "chunk",
        |v: &[T]| {
            let parts = v[0].chunk(2, 0)?;
            tail(parts[0].mul(&parts[1])?)
        },
        xs,
    );
    check(
        "i with s(..) steps",
        |v: &[T]| tail(v[0].i((s(1..).step(2), s(..).step(-2)))?),
        xs,
    );
    check("i with an integer", |v: &[T]| tail(v[0].i(-2)?), xs);
}

#[test]
fn flips() {
    let x = randn(&[2, 3, 4], 50);
    let xs = std::slice::from_ref(&x);
    for axes in [&[0][..], &[-1], &[0, 2], &[0, 1, 2]] {
        check(
            &format!("flip {axes:?}"),
            |v: &[T]| tail(v[0].flip(axes)?),
            xs,
        );
    }
    check(
        "flip of a transpose",
        |v: &[T]| tail(v[0].flip(&[1])?),
        &[transposed(3, 4, 51, STD)],
    );
    check(
        "flip twice",
        |v: &[T]| tail(v[0].flip(&[0])?.flip(&[0])?),
        xs,
    );
}

#[test]
fn pads() {
    let x = randn(&[2, 3], 60);
    let xs = std::slice::from_ref(&x);
    check(
        "pad (1,2),(0,3)",
        |v: &[T]| tail(v[0].pad(&[(1, 2), (0, 3)], 0.0)?),
        xs,
    );
    check(
        "pad with a value",
        |v: &[T]| tail(v[0].pad(&[(0, 0), (2, 1)], 1.5)?),
        xs,
    );
    check(
        "pad nothing",
        |v: &[T]| tail(v[0].pad(&[(0, 0), (0, 0)], 0.0)?),
        xs,
    );
    check(
        "pad a transpose",
        |v: &[T]| tail(v[0].pad(&[(1, 1), (1, 0)], -1.0)?),
        &[transposed(3, 2, 61, STD)],
    );
    check(
        "pad rank 3",
        |v: &[T]| tail(v[0].pad(&[(1, 0), (0, 2), (1, 1)], 0.0)?),
        &[randn(&[2, 1, 2], 62)],
    );
    check(
        "pad of a broadcast",
        |v: &[T]| tail(v[0].pad(&[(1, 1), (0, 1)], 0.0)?),
        &[broadcast_view(&[3], &[2, 3], 63, STD)],
    );
}

#[test]
fn cat_and_stack() {
    let (a, b, c) = (randn(&[2, 3], 70), randn(&[2, 1], 71), randn(&[2, 4], 72));
    check(
        "cat axis 1",
        |v: &[T]| tail(Tensor::cat(&[&v[0], &v[1], &v[2]], 1)?),
        &[a.clone(), b.clone(), c.clone()],
    );
    check(
        "cat axis -1 of views",
        |v: &[T]| tail(Tensor::cat(&[&v[0], &v[1]], -1)?),
        &[transposed(2, 3, 73, STD), stepped_back(&[2, 2], 74, STD)],
    );
    let (d, e) = (randn(&[1, 3], 75), randn(&[3, 3], 76));
    check(
        "cat axis 0",
        |v: &[T]| tail(Tensor::cat(&[&v[0], &v[1], &v[0]], 0)?),
        &[d, e],
    );
    // A constant among the pieces gets no gradient and does not disturb the others.
    let k = Tensor::constant(randn(&[2, 2], 77));
    check(
        "cat with a constant",
        move |v: &[T]| tail(Tensor::cat(&[&k, &v[0]], 1)?),
        std::slice::from_ref(&a),
    );
    for axis in [0, 1, 2, -1] {
        check(
            &format!("stack axis {axis}"),
            |v: &[T]| tail(Tensor::stack(&[&v[0], &v[1]], axis)?),
            &[a.clone(), transposed(2, 3, 78, STD)],
        );
    }
    check(
        "stack the same tensor",
        |v: &[T]| tail(Tensor::stack(&[&v[0], &v[0], &v[0]], 0)?),
        &[randn(&[], 79)],
    );
}
