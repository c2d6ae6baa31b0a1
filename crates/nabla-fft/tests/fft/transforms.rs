//! The family under nabla's transforms: traced programs (run and compiled) against eager values and
//! derivatives, `vmap` against a loop, and Hessians.

use crate::support::{T, assert_close, call, cases, fixture, name, on};
use nabla_core::DType;
use nabla_cpu::CpuBackend;
use nabla_fft::Norm;
use nabla_tensor::{
    GraphCompiler, GraphExecutor, Tensor, TracedTensor, TracingBackend, grad, hessian, vmap,
};

/// `Σ |f(x)|² · w` with fixed weights: a real loss with a non-trivial Hessian.
fn weighted_power<B: nabla_core::Backend>(y: &Tensor<B>) -> nabla_core::Result<Tensor<B>> {
    let n = y.numel();
    let w: Vec<f64> = (0..n).map(|i| 0.5 + (i % 7) as f64 / 7.0).collect();
    let w = Tensor::from_vec(w, y.shape().to_vec(), y.backend())?;
    y.abs()?.square()?.mul(&w)?.sum_all()
}

#[test]
fn traced_and_compiled_programs_match_eager_values_and_gradients() {
    let cpu = CpuBackend::new();
    for case in &cases() {
        let what = name(case);
        let x = fixture(&case["input"]);
        let xv = Tensor::var("x", x.clone()).unwrap();
        let y = call(case, &xv).unwrap();
        let loss = weighted_power(&y).unwrap();
        let g = loss.grad(&xv).unwrap();

        let tb = TracingBackend::new();
        let placeholder = tb.placeholder(x.shape().to_vec(), x.dtype()).unwrap();
        let ty = call(case, &placeholder).unwrap();
        let tg = weighted_power(&ty).unwrap().grad(&placeholder).unwrap();
        let program = tb.program(&[&ty, &tg]).unwrap();
        let compiled = GraphCompiler::new().compile(&program).unwrap();
        for (p, kind) in [(&program, "traced"), (&compiled, "compiled")] {
            let run = GraphExecutor::new(&cpu)
                .run(p, &[on(&case["input"], &cpu)])
                .unwrap();
            assert_close(&run[0], &y.detach(), 1e-12, &format!("{what} {kind} value"));
            assert_close(&run[1], &g, 1e-12, &format!("{what} {kind} gradient"));
        }
    }
}

#[test]
fn vmap_over_transforms_equals_a_loop() {
    let cpu = CpuBackend::new();
    let xs: Vec<f64> = (0..4 * 6)
        .map(|i| ((i * 37 % 11) as f64 - 5.0) / 3.0)
        .collect();
    let batch = Tensor::from_vec(xs, [4, 6], &cpu).unwrap();
    let spectra = vmap(|t: &[TracedTensor]| nabla_fft::rfft(&t[0], None, -1, Norm::Ortho))
        .call1(&[&batch])
        .unwrap();
    let per_example = vmap(|t: &[TracedTensor]| {
        grad(|x: &TracedTensor| weighted_power(&nabla_fft::fft(x, Some(8), 0, Norm::Backward)?))(
            &t[0],
        )
    })
    .call1(&[&batch])
    .unwrap();
    for b in 0..4 {
        let x = batch.select_index(0, b).unwrap();
        let want = nabla_fft::rfft(&x, None, -1, Norm::Ortho).unwrap();
        assert_close(
            &spectra.select_index(0, b).unwrap(),
            &want,
            1e-13,
            "vmap(rfft)",
        );
        let g = grad(|x: &T| weighted_power(&nabla_fft::fft(x, Some(8), 0, Norm::Backward)?))(&x)
            .unwrap();
        assert_close(
            &per_example.select_index(0, b).unwrap(),
            &g,
            1e-12,
            "vmap(grad(fft))",
        );
    }
}

#[test]
fn hessian_of_a_spectral_loss_matches_its_closed_form() {
    // L(x) = Σ_k |X_k|² = n Σ x² (Parseval), so its Hessian is 2n I, through rfft and irfft alike.
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(vec![0.3f64, -1.2, 0.8, 2.0, -0.4], [5], &cpu).unwrap();
    let parseval = |x: &T| {
        nabla_fft::fft(x, None, -1, Norm::Backward)?
            .abs()?
            .square()?
            .sum_all()
    };
    let h = hessian(parseval)(&x).unwrap();
    let want = Tensor::eye(5, DType::F64, &cpu).unwrap().mul(10.0).unwrap();
    assert_close(&h, &want, 1e-12, "hessian of Σ|fft(x)|²");
    // The round trip irfft(rfft(x)) is the identity: its Hessian of Σ y³ is diag(6 x).
    let cube = |x: &T| {
        nabla_fft::irfft(
            &nabla_fft::rfft(x, None, -1, Norm::Ortho)?,
            Some(5),
            -1,
            Norm::Ortho,
        )?
        .pow(3.0)?
        .sum_all()
    };
    let h = hessian(cube)(&x).unwrap();
    let want = Tensor::eye(5, DType::F64, &cpu)
        .unwrap()
        .mul(x.mul(6.0).unwrap())
        .unwrap();
    assert_close(&h, &want, 1e-12, "hessian of Σ irfft(rfft(x))³");
}
