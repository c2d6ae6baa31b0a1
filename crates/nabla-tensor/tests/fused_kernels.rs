//! Hand-built fused kernels run through `Tensor::fused`, and the layout of matmul gradients.

use nabla_core::{DType, FusedBuilder, UnaryOp};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, no_grad};

type T = Tensor<CpuBackend>;

fn t(v: &[f64], shape: &[usize]) -> T {
    Tensor::from_slice(v, shape.to_vec(), &CpuBackend::new()).unwrap()
}

/// `sqrt(a) * b - 2`, built by hand.
fn kernel() -> nabla_core::FusedKernel {
    let mut k = FusedBuilder::new(DType::F64);
    let (a, b) = (k.input(), k.input());
    let r = k.unary(UnaryOp::Sqrt, a);
    let rb = k.mul(r, b);
    let out = k.offset(rb, -2.0);
    k.finish(out).unwrap()
}

#[test]
fn fused_kernel_matches_the_op_by_op_result_on_views() {
    let a = t(&[1.0, 4.0, 9.0, 16.0, 25.0, 36.0], &[2, 3]);
    let b = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[3, 2]).t().unwrap();
    let want = a.sqrt().unwrap().mul(&b).unwrap().sub(2.0).unwrap();
    let got = Tensor::fused(&kernel(), vec![a.clone(), b.clone()], Some(0)).unwrap();
    assert_eq!(got.shape(), &[2, 3]);
    assert_eq!(got.to_vec::<f64>().unwrap(), want.to_vec::<f64>().unwrap());
    // Donating a buffer another tensor still shares must leave that tensor untouched.
    assert_eq!(
        a.to_vec::<f64>().unwrap(),
        vec![1.0, 4.0, 9.0, 16.0, 25.0, 36.0]
    );
}

#[test]
fn a_result_that_is_not_the_last_step_is_copied_there() {
    let mut k = FusedBuilder::new(DType::F64);
    let a = k.input();
    let doubled = k.scale(a, 2.0);
    // `doubled` is computed but not the result: the kernel returns its input unchanged.
    let _ = doubled;
    let kernel = k.finish(a).unwrap();
    let x = t(&[1.0, -3.0], &[2]);
    let y = Tensor::fused(&kernel, vec![x], None).unwrap();
    assert_eq!(y.to_vec::<f64>().unwrap(), vec![1.0, -3.0]);
}

#[test]
fn bad_calls_are_errors() {
    let a = t(&[1.0, 2.0], &[2]);
    let short = t(&[1.0], &[1]);
    let k = kernel();
    let msg = |r: nabla_core::Result<T>| r.expect_err("an error").to_string();
    assert!(msg(Tensor::fused(&k, vec![a.clone()], None)).contains("2 inputs"));
    assert!(msg(Tensor::fused(&k, vec![a.clone(), short], None)).contains("fused"));
    let f32s = a.cast(DType::F32).unwrap();
    assert!(msg(Tensor::fused(&k, vec![f32s.clone(), f32s], None)).contains("fused"));
    assert!(msg(Tensor::fused(&k, vec![a.clone(), a.clone()], Some(5))).contains("donate"));
    assert!(msg(Tensor::fused(&k, vec![], None)).contains("at least one input"));
    let tracked = Tensor::var("x", a.clone()).unwrap();
    let err = msg(Tensor::fused(&k, vec![tracked.clone(), a.clone()], None));
    assert!(err.contains("not differentiable"), "{err}");
    // Under no_grad a tracked input is just a value.
    let y = no_grad(|| Tensor::fused(&k, vec![tracked, a], None)).unwrap();
    assert_eq!(y.shape(), &[2]);
}

#[test]
fn the_gradient_of_a_transposed_weight_reaches_it_contiguous() {
    // y = x @ w.t(), as in a Linear layer: dw must be laid out like w.
    let x = t(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
    let w_values = [1.0, 0.5, -1.0, 2.0, 0.0, 1.0, 3.0, -2.0, 1.0, 1.0, 1.0, 1.0];
    let w = Tensor::var("w", t(&w_values, &[4, 3])).unwrap();
    let y = x.matmul(&w.t().unwrap()).unwrap();
    let g = y.sum_all().unwrap().backward().unwrap();
    let dw = g.get(&w).unwrap();
    assert_eq!(dw.shape(), &[4, 3]);
    assert!(dw.is_contiguous(), "layout {:?}", dw.layout());
    // Every row of dw is the column sum of x.
    assert_eq!(dw.to_vec::<f64>().unwrap(), [5.0, 7.0, 9.0].repeat(4));
}

#[test]
fn several_results_in_one_pass() {
    // (sqrt(a) * b, sqrt(a) + b) in one kernel; the second result reuses b's buffer.
    let mut k = FusedBuilder::new(DType::F64);
    let (a, b) = (k.input(), k.input());
    let r = k.unary(UnaryOp::Sqrt, a);
    let (product, sum) = (k.mul(r, b), k.add(r, b));
    let kernel = k.finish_many(&[product, sum]).unwrap();
    let a = t(&[1.0, 4.0, 9.0], &[3]);
    let b = t(&[2.0, 3.0, 4.0], &[3]);
    let kept = b.clone();
    let out = Tensor::fused_many(&kernel, vec![a.clone(), b], &[None, Some(1)]).unwrap();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0].to_vec::<f64>().unwrap(), vec![2.0, 6.0, 12.0]);
    assert_eq!(out[1].to_vec::<f64>().unwrap(), vec![3.0, 5.0, 7.0]);
    // `b` was still shared, so its values are untouched.
    assert_eq!(kept.to_vec::<f64>().unwrap(), vec![2.0, 3.0, 4.0]);
    let msg = |r: nabla_core::Result<Vec<T>>| r.expect_err("an error").to_string();
    let two = || vec![a.clone(), kept.clone()];
    assert!(msg(Tensor::fused_many(&kernel, two(), &[Some(0)])).contains("2 results"));
    assert!(msg(Tensor::fused_many(&kernel, two(), &[Some(0), Some(0)])).contains("twice"));
    // A kernel with two results is not a single-result call.
    let err = Tensor::fused(&kernel, two(), None).unwrap_err().to_string();
    assert!(err.contains("fused_many"), "{err}");
}
