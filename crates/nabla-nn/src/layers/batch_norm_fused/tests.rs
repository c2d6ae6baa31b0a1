use super::*;
use crate::layers::fused::test_support::{assert_adjoint, near, on_cpu, one, vals};
use nabla_core::Generator;
use nabla_cpu::CpuBackend;
use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order, vjp_n};

type T = Tensor<CpuBackend>;

fn randn(shape: &[usize], seed: u64, scale: f64, shift: f64) -> T {
    Tensor::randn(
        shape.to_vec(),
        DType::F64,
        &mut Generator::new(seed),
        &CpuBackend::new(),
    )
    .unwrap()
    .mul(scale)
    .unwrap()
    .add(shift)
    .unwrap()
}

/// `x [shape]`, `w [C]` and `b [C]`, with means and scales away from 0 and 1.
fn inputs(shape: &[usize], seed: u64) -> Vec<T> {
    let c = shape[1];
    vec![
        randn(shape, seed, 1.7, 0.6),
        randn(&[c], seed + 1, 0.5, 1.0),
        randn(&[c], seed + 2, 0.5, 0.0),
    ]
}

/// The settings of the tests: eps 1e-5, with or without the ReLU.
fn settings(relu: bool) -> Settings {
    Settings {
        eps: 1e-5f64.to_bits(),
        relu,
    }
}

fn fused_with(v: &[T], relu: bool) -> Result<T> {
    Tensor::apply_family_op::<FusedBatchNorm>(
        Arc::new(on_cpu(BatchNormOp::Forward(settings(relu)))),
        &[&v[0], &v[1], &v[2]],
    )
}

fn fused(v: &[T]) -> Result<T> {
    fused_with(v, false)
}

/// A loss reaching every element of the flat output (values, means and variances) differently.
fn loss(flat: &T) -> Result<T> {
    let w = Tensor::arange(0, flat.numel() as i64, 1, flat.dtype(), flat.backend())?
        .mul(0.61)?
        .cos()?;
    flat.mul(&w)?.sum_all()
}

#[test]
fn values_and_gradients_match_the_composite() {
    for (i, shape) in [
        vec![2, 3],
        vec![4, 5, 7],
        vec![3, 4, 5, 6],
        vec![1, 2, 3, 3],
        vec![5, 1, 17, 3],
    ]
    .into_iter()
    .enumerate()
    {
        for relu in [false, true] {
            let v = inputs(&shape, 10 * i as u64);
            let f = fused_with(&v, relu).unwrap();
            near(
                &vals(&f),
                &vals(&composite_flat(&v, settings(relu)).unwrap()),
                1e-12,
            );
            let (_, gf) = vjp_n(|x| loss(&fused_with(x, relu)?), &v, &one()).unwrap();
            let (_, gc) = vjp_n(|x| loss(&composite_flat(x, settings(relu))?), &v, &one()).unwrap();
            for (a, b) in gf.iter().zip(&gc) {
                assert_eq!(a.shape(), b.shape());
                near(&vals(a), &vals(b), 1e-11);
            }
        }
    }
}

#[test]
fn derivatives_match_finite_differences_to_second_order() {
    let opts = GradCheckOptions::default();
    let v = inputs(&[3, 2, 4], 1);
    check_gradients(fused, &v, &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
    check_second_order(fused, &v, &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
    assert_adjoint(|x| loss(&fused(x)?), &v, &inputs(&[3, 2, 4], 5));
    // With the ReLU (no output of these inputs lies within the differences' step of its kink).
    let relu = |x: &[T]| fused_with(x, true);
    check_gradients(relu, &v, &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
    check_second_order(relu, &v, &opts)
        .unwrap()
        .assert_close(1e-7, 1e-6)
        .unwrap();
    assert_adjoint(|x| loss(&fused_with(x, true)?), &v, &inputs(&[3, 2, 4], 5));
}

#[test]
fn float32_matches_float64_to_single_precision() {
    let v = inputs(&[8, 6, 9, 9], 20);
    let v32: Vec<T> = v.iter().map(|x| x.cast(DType::F32).unwrap()).collect();
    let to64 = |t: &T| vals(&t.cast(DType::F64).unwrap());
    near(
        &to64(&fused(&v32).unwrap()),
        &vals(&fused(&v).unwrap()),
        2e-5,
    );
}

#[test]
fn bad_inputs_are_errors_naming_the_op() {
    let v = inputs(&[2, 3, 4], 30);
    let err = |x: &T, w: &T, b: &T| {
        let e = fused(&[x.clone(), w.clone(), b.clone()])
            .unwrap_err()
            .to_string();
        assert!(e.contains("fused.batch_norm"), "{e}");
    };
    err(&v[0], &randn(&[4], 1, 1.0, 0.0), &v[2]);
    err(&v[0].cast(DType::F32).unwrap(), &v[1], &v[2]);
    err(&randn(&[0, 3, 4], 1, 1.0, 0.0), &v[1], &v[2]);
    err(&randn(&[3], 1, 1.0, 0.0), &v[1], &v[2]);
}

#[test]
fn the_layer_runs_fused_and_keeps_the_composite_for_empty_batches() {
    use crate::{BatchNorm2d, Forward, Module};
    let cpu = CpuBackend::new();
    let mut bn = BatchNorm2d::new(3, 1e-5, Some(0.1), true, false, DType::F64, &cpu).unwrap();
    let x = randn(&[4, 3, 5, 5], 40, 2.0, 1.0);
    let want = composite_flat(
        &[
            x.clone(),
            Tensor::ones([3], DType::F64, &cpu).unwrap(),
            Tensor::zeros([3], DType::F64, &cpu).unwrap(),
        ],
        settings(false),
    )
    .unwrap();
    near(
        &vals(&bn.forward(&x).unwrap()),
        &vals(&want)[..x.numel()],
        1e-12,
    );
    // In evaluation without running statistics the batch's are used; an empty batch has none.
    bn.eval();
    let empty = bn.forward(&randn(&[0, 3, 5, 5], 41, 1.0, 0.0)).unwrap();
    assert_eq!(empty.shape(), &[0, 3, 5, 5]);
}

#[test]
fn forward_relu_is_the_relu_of_forward_in_training_and_evaluation() {
    use crate::{BatchNorm2d, Forward, Module};
    let cpu = CpuBackend::new();
    let x = randn(&[3, 4, 6, 6], 50, 1.5, 0.3);
    for training in [true, false] {
        // Two layers with the same state, so that each sees one update of its running statistics.
        let make = || {
            let mut bn =
                BatchNorm2d::new(4, 1e-5, Some(0.1), true, true, DType::F64, &cpu).unwrap();
            bn.set_training(training);
            bn
        };
        let (fused_layer, plain_layer) = (make(), make());
        let fused = fused_layer.forward_relu(&x).unwrap();
        let plain = plain_layer.forward(&x).unwrap().relu().unwrap();
        near(&vals(&fused), &vals(&plain), 1e-12);
        let stats = |bn: &BatchNorm2d<CpuBackend>| vals(&bn.running_mean.as_ref().unwrap().data());
        near(&stats(&fused_layer), &stats(&plain_layer), 1e-14);
    }
}
