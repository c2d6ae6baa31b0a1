//! Index rules: gather, index_select, scatter_add and index_add with repeated (and negative) indices,
//! and the values of sort and topk (recorded as gathers).

use super::support::*;
use nabla_tensor::Tensor;

fn tail(y: T) -> nabla_tensor::Result<T> {
    y.sin()
}

#[test]
fn gather_with_repeated_and_negative_indices() {
    let x = randn(&[3, 4], 1);
    let xs = std::slice::from_ref(&x);
    let i1 = idx(&[0, 0, 3, 1, 2, 2, 2, -1, 1, 0, 0, 0], &[3, 4]);
    check(
        "gather axis 1, repeats",
        |v: &[T]| tail(v[0].gather(1, &i1)?),
        xs,
    );
    let i0 = idx(&[2, 2, 0, 1, 0, 0, 2, 2], &[2, 4]);
    check(
        "gather axis 0, repeats",
        |v: &[T]| tail(v[0].gather(0, &i0)?),
        xs,
    );
    let wide = idx(&[1, 1, 1, 0, 3, 3], &[3, 2]);
    check(
        "gather axis -1, fewer columns",
        |v: &[T]| tail(v[0].gather(-1, &wide)?),
        xs,
    );
    // The index broadcasts against x and x against the index.
    let ib = idx(&[3, 0, 0], &[1, 3]);
    check(
        "gather, index broadcast",
        |v: &[T]| tail(v[0].gather(1, &ib)?),
        xs,
    );
    let xb = randn(&[1, 4], 2);
    let i2 = idx(&[0, 1, 1, 1, 3, 0], &[3, 2]);
    check(
        "gather, x broadcast",
        |v: &[T]| tail(v[0].gather(1, &i2)?),
        &[xb],
    );
    check(
        "gather of a transpose",
        |v: &[T]| tail(v[0].gather(1, &i0.t()?.contiguous()?)?),
        &[transposed(4, 3, 3, STD)],
    );
    check(
        "gather of a step -2 view",
        |v: &[T]| tail(v[0].gather(1, &i1)?),
        &[stepped_back(&[3, 4], 4, STD)],
    );
    // Exact: the gradient counts how often each element was read.
    let g = grads(|v: &[T]| v[0].gather(1, &i1)?.sum_all(), xs);
    assert_eq!(
        g[0],
        vec![2.0, 1.0, 0.0, 1.0, 0.0, 0.0, 3.0, 1.0, 3.0, 1.0, 0.0, 0.0]
    );
}

#[test]
fn index_select_with_repeats() {
    let x = randn(&[4, 3], 10);
    let xs = std::slice::from_ref(&x);
    let i = idx(&[3, 0, 3, 3, -4], &[5]);
    check(
        "index_select axis 0",
        |v: &[T]| tail(v[0].index_select(0, &i)?),
        xs,
    );
    let j = idx(&[2, 2, 1], &[3]);
    check(
        "index_select axis 1",
        |v: &[T]| tail(v[0].index_select(1, &j)?),
        xs,
    );
    check(
        "index_select axis -1 of a transpose",
        |v: &[T]| tail(v[0].index_select(-1, &i)?),
        &[transposed(3, 4, 11, STD)],
    );
    check(
        "index_select of a broadcast",
        |v: &[T]| tail(v[0].index_select(0, &i)?),
        &[broadcast_view(&[3], &[4, 3], 12, STD)],
    );
    let g = grads(|v: &[T]| v[0].index_select(0, &i)?.sum_all(), xs);
    assert_eq!(
        g[0],
        vec![2.0, 2.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0]
    );
    // An int32 index is accepted too.
    let i32_index = Tensor::from_slice(&[1i32, 1], [2], &cpu()).unwrap();
    check(
        "index_select with i32 indices",
        |v: &[T]| tail(v[0].index_select(0, &i32_index)?),
        xs,
    );
}

#[test]
fn scatter_add_into_both_destination_and_source() {
    let dst = randn(&[3, 4], 20);
    let src = randn(&[3, 2], 21);
    let i = idx(&[1, 1, 0, 3, 2, 2], &[3, 2]);
    let f = |v: &[T]| tail(v[0].scatter_add(1, &i, &v[1])?);
    check(
        "scatter_add axis 1, repeats",
        f,
        &[dst.clone(), src.clone()],
    );
    let i0 = idx(&[2, 2, 2, 0, 0, 0, 1, 2], &[2, 4]);
    let f = |v: &[T]| tail(v[0].scatter_add(0, &i0, &v[1])?);
    check(
        "scatter_add axis 0, repeats",
        f,
        &[dst.clone(), randn(&[2, 4], 22)],
    );
    check(
        "scatter_add into a transpose",
        f,
        &[transposed(3, 4, 23, STD), stepped_back(&[2, 4], 24, STD)],
    );
    // Source only, destination constant.
    let d = Tensor::constant(dst.clone());
    check(
        "scatter_add source only",
        |v: &[T]| tail(d.scatter_add(-1, &i, &v[0])?),
        std::slice::from_ref(&src),
    );
    // Exact: each source element reads the gradient at its destination.
    let w = t(&(1..=12).map(f64::from).collect::<Vec<_>>(), &[3, 4]);
    let g = grads(
        |v: &[T]| v[0].scatter_add(1, &i, &v[1])?.mul(&w)?.sum_all(),
        &[dst, src],
    );
    assert_eq!(g[0], vals(&w));
    assert_eq!(g[1], vec![2.0, 2.0, 5.0, 8.0, 11.0, 11.0]);
}

#[test]
fn index_add_with_repeats() {
    let dst = randn(&[4, 3], 30);
    let src = randn(&[5, 3], 31);
    let i = idx(&[0, 3, 0, 0, 2], &[5]);
    check(
        "index_add axis 0",
        |v: &[T]| tail(v[0].index_add(0, &i, &v[1])?),
        &[dst.clone(), src],
    );
    let j = idx(&[2, 2], &[2]);
    check(
        "index_add axis 1",
        |v: &[T]| tail(v[0].index_add(1, &j, &v[1])?),
        &[dst, randn(&[4, 2], 32)],
    );
}

#[test]
fn sort_and_topk_values() {
    let x = randn(&[3, 5], 40);
    let xs = std::slice::from_ref(&x);
    for axis in [0, 1, -1] {
        for desc in [false, true] {
            check(
                &format!("sort axis {axis} descending {desc}"),
                |v: &[T]| tail(v[0].sort(axis, desc)?.0),
                xs,
            );
        }
    }
    for (k, largest) in [(1, true), (3, true), (2, false), (5, false)] {
        check(
            &format!("topk {k} largest {largest}"),
            |v: &[T]| tail(v[0].topk(k, -1, largest)?.0),
            xs,
        );
    }
    check("topk axis 0", |v: &[T]| tail(v[0].topk(2, 0, true)?.0), xs);
    check(
        "sort of a transpose",
        |v: &[T]| tail(v[0].sort(1, false)?.0),
        &[transposed(3, 5, 41, STD)],
    );
    // Exact: the gradient of the sorted values is routed back to where each came from.
    let y = t(&[3.0, 1.0, 2.0], &[3]);
    let w = t(&[1.0, 10.0, 100.0], &[3]);
    let g = grads(
        |v: &[T]| v[0].sort(0, false)?.0.mul(&w)?.sum_all(),
        std::slice::from_ref(&y),
    );
    assert_eq!(g[0], vec![100.0, 1.0, 10.0]);
    let g = grads(
        |v: &[T]| v[0].topk(2, 0, true)?.0.mul(&w.narrow(0, 0, 2)?)?.sum_all(),
        &[y],
    );
    assert_eq!(g[0], vec![1.0, 0.0, 10.0]);
}

#[test]
fn embedding_like_lookup_and_one_hot_are_consistent() {
    // index_select on axis 0 (an embedding) and one_hot @ table give the same gradient.
    let table = randn(&[5, 3], 50);
    let ids = idx(&[4, 1, 4, 0], &[4]);
    let w = randn(&[4, 3], 51);
    let a = grads(
        |v: &[T]| v[0].index_select(0, &ids)?.mul(&w)?.sum_all(),
        std::slice::from_ref(&table),
    );
    let oh = ids.one_hot(5, nabla_core::DType::F64).unwrap();
    let b = grads(
        |v: &[T]| oh.matmul(&v[0])?.mul(&w)?.sum_all(),
        std::slice::from_ref(&table),
    );
    assert_near(&a[0], &b[0], 1e-12);
    assert!(!oh.requires_grad());
}
