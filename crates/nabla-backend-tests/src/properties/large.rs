//! A few cases big enough to take the kernels' multi-threaded and vectorised paths (above
//! `nabla_cpu::PARALLEL_THRESHOLD` elements, [`BIG`]), on strided views, in the widest float dtype the
//! backend has.

use super::support::*;
use nabla_core::{DType, UnaryOp};

use proptest::prelude::*;

/// The size above which the CPU kernels go multi-threaded (`nabla_cpu::PARALLEL_THRESHOLD`); a GPU
/// backend needs several workgroups for it too.
pub const BIG: usize = 1 << 15;

/// `(rtol, atol)` of `dtype` for a check that has `f64` in double precision and `f32` in single.
fn tol<B: Backend>(cx: &Suite<B>, dtype: DType, f64: (f64, f64), f32: (f64, f64)) -> (f64, f64) {
    let (r, a) = if dtype == DType::F64 { f64 } else { f32 };
    cx.tol(dtype, r, a)
}

/// A rank-3 input of at least [`BIG`] elements, in any layout.
fn big() -> impl Strategy<Value = Input> {
    (34usize..44, 34usize..44, 30usize..36).prop_flat_map(|(a, b, c)| input(vec![a, b, c], reals()))
}

property! {
/// Elementwise ops, broadcasting, a transposing copy, reductions and argmax on big strided views.
fn big_views_agree_with_references(cx, cases = 6; x in big(), y in big(), axis in 0usize..3) {
    prop_assert!(x.shape.iter().product::<usize>() >= BIG);
    let fd = cx.float();
    let vals = x.values_as(fd);
    let t = x.tensor(cx, fd);
    // Unary and binary elementwise on views.
    let e = t.unary(UnaryOp::Exp).unwrap();
    let (r, a) = tol(cx, fd, (1e-13, 0.0), (2e-6, 2e-6));
    assert_close(&read(&e), &vals.iter().map(|v| round_to(fd, v.exp())).collect::<Vec<_>>(), r, a, "exp");
    if cx.has(&[DType::F32]) {
        let (r, a) = tol(cx, DType::F32, (2e-6, 2e-6), (2e-6, 2e-6));
        let f = x.tensor(cx, DType::F32).unary(UnaryOp::Tanh).unwrap();
        let want: Vec<f64> = x.values().iter().map(|v| (*v as f32 as f64).tanh()).collect();
        assert_close(&read(&f), &want, r, a, "tanh f32");
    }
    // Broadcast along one axis: add the first slice of y's (reshaped) data.
    let mut bshape = x.shape.clone();
    bshape[axis] = 1;
    let bn: usize = bshape.iter().product();
    let bvals: Vec<f64> = y.values_as(fd).into_iter().take(bn).collect();
    let sum = t.add(tensor(cx, &bvals, &bshape, fd)).unwrap();
    let want: Vec<f64> = vals.iter().zip(expand(&bvals, &bshape, &x.shape)).map(|(a, b)| round_to(fd, a + b)).collect();
    assert_close(&read(&sum), &want, 0.0, 0.0, "broadcast add");
    // A transposing copy.
    let c = t.transpose(0, 2).unwrap().contiguous().unwrap();
    let tshape = [x.shape[2], x.shape[1], x.shape[0]];
    let want: Vec<f64> = (0..vals.len()).map(|i| {
        let o = unravel(i, &tshape);
        vals[ravel(&[o[2], o[1], o[0]], &x.shape)]
    }).collect();
    assert_close(&read(&c), &want, 0.0, 0.0, "transpose copy");
    // Reduction over one axis, and its arg-reduction.
    let s = t.sum(&[axis as isize], false).unwrap();
    let dense = t.contiguous().unwrap().sum(&[axis as isize], false).unwrap();
    let (r, a) = tol(cx, fd, (1e-12, 1e-12), (1e-5, 1e-4));
    assert_close(&read(&s), &read(&dense), r, a, "sum view vs contiguous");
    let total: f64 = vals.iter().sum();
    let (r, a) = tol(cx, fd, (1e-10, 1e-10), (1e-4, 1e-2));
    assert_close(&read(&t.sum_all().unwrap()), &[total], r, a, "sum_all");
    let mx = t.max(&[axis as isize], true).unwrap();
    let am = t.argmax(axis as isize, true).unwrap();
    let picked = t.gather(axis as isize, &am).unwrap();
    assert_close(&read(&picked), &read(&mx), 0.0, 0.0, "argmax points at the max");
}
}

property! {
/// A product of two transposed big matrices against a triple loop, in the widest float dtype and in
/// `f32`.
fn big_matmul_of_transposed_operands(cx, cases = 6; m in 60usize..90, k in 120usize..160, n in 60usize..90, seed in any::<u64>()) {
    let fd = cx.float();
    let mut g = nabla_core::Generator::new(seed);
    let a = Tensor::randn([k, m], fd, &mut g, cx.backend()).unwrap();
    let b = Tensor::randn([n, k], fd, &mut g, cx.backend()).unwrap();
    let got = a.t().unwrap().matmul(&b.t().unwrap()).unwrap();
    let (av, bv) = (read(&a), read(&b));
    let mut want = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            want[i * n + j] = (0..k).map(|p| av[p * m + i] * bv[j * k + p]).sum();
        }
    }
    let (r, at) = tol(cx, fd, (1e-12, 1e-11), (1e-4, 1e-4));
    assert_close(&read(&got), &want, r, at, &format!("{fd} matmul of transposes"));
    if fd != DType::F32 && cx.has(&[DType::F32]) {
        let (r, at) = tol(cx, DType::F32, (1e-4, 1e-4), (1e-4, 1e-4));
        let got32 = a.cast(DType::F32).unwrap().t().unwrap().matmul(&b.cast(DType::F32).unwrap().t().unwrap()).unwrap();
        assert_close(&read(&got32), &want, r, at, "f32 matmul of transposes");
    }
}
}
