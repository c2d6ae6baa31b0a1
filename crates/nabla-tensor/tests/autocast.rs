//! Autocast: F32 products inside the scope multiply bf16-rounded operands with f32 sums, their
//! derivatives (reverse, forward, second order, traced) too, wherever they are evaluated; other
//! dtypes and code outside the scope are untouched.

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{
    AdContext, AutocastGuard, GraphExecutor, Precision, Tensor, TracingBackend, autocast,
    autocast_disabled, autocast_dtype, autocast_precision, grad, jvp,
};

type T = Tensor<CpuBackend>;

/// Values whose low mantissa bits are set, so that rounding them to bf16 changes them.
fn values(cpu: &CpuBackend, shape: &[usize], seed: u32) -> T {
    let n: usize = shape.iter().product();
    let v: Vec<f32> = (0..n)
        .map(|i| {
            let x = ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 1000) as f32;
            (x - 500.0) / 250.0 + 1.0 / 1024.0
        })
        .collect();
    Tensor::from_vec(v, shape.to_vec(), cpu).unwrap()
}

/// `x` rounded to bf16 and back.
fn rounded(x: &T) -> T {
    x.cast(DType::BF16).unwrap().cast(DType::F32).unwrap()
}

fn max_diff(a: &T, b: &T) -> f32 {
    let (a, b) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(&b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

/// The f32 summation bound of a product over `k` terms of size about `scale`.
fn f32_bound(k: usize, scale: f32) -> f32 {
    k as f32 * f32::EPSILON * scale * 4.0
}

#[test]
fn products_in_the_scope_multiply_rounded_operands() -> Result<()> {
    let cpu = CpuBackend::new();
    let (a, b) = (values(&cpu, &[3, 37, 70], 1), values(&cpu, &[70, 50], 2));
    let mixed = autocast(DType::BF16, || a.matmul(&b))??;
    let reference = rounded(&a).matmul(&rounded(&b))?;
    assert!(max_diff(&mixed, &reference) <= f32_bound(70, 9.0));
    // Rounding changed the result: the f32 product differs by far more than summation order.
    assert!(max_diff(&mixed, &a.matmul(&b)?) > 1e-3);
    assert_eq!(mixed.dtype(), DType::F32);
    // Batched on both sides, and a vector on the right.
    let (c, v) = (values(&cpu, &[3, 70, 9], 3), values(&cpu, &[70], 4));
    let both = autocast(DType::BF16, || a.matmul(&c))??;
    assert!(max_diff(&both, &rounded(&a).matmul(&rounded(&c))?) <= f32_bound(70, 9.0));
    let mv = autocast(DType::BF16, || a.matmul(&v))??;
    assert!(max_diff(&mv, &rounded(&a).matmul(&rounded(&v))?) <= f32_bound(70, 9.0));
    Ok(())
}

#[test]
fn other_dtypes_and_code_outside_the_scope_are_untouched() -> Result<()> {
    let cpu = CpuBackend::new();
    let (a, b) = (values(&cpu, &[4, 6], 5), values(&cpu, &[6, 3], 6));
    let (a64, b64) = (a.cast(DType::F64)?, b.cast(DType::F64)?);
    let inside = autocast(DType::BF16, || a64.matmul(&b64))??;
    assert_eq!(inside.to_vec::<f64>()?, a64.matmul(&b64)?.to_vec::<f64>()?);
    assert_eq!(autocast_dtype(), None);
    let _guard = AutocastGuard::new(DType::BF16)?;
    assert_eq!(autocast_dtype(), Some(DType::BF16));
    let off = autocast_disabled(|| a.matmul(&b))?;
    assert_eq!(
        off.to_vec::<f32>()?,
        a.matmul_with(&b, Precision::Full)?.to_vec::<f32>()?
    );
    assert_eq!(autocast_precision(DType::F32), Precision::Bf16);
    assert_eq!(autocast_precision(DType::F64), Precision::Full);
    Ok(())
}

#[test]
fn scopes_nest_and_end_even_when_their_body_panics() {
    let outcome = std::panic::catch_unwind(|| {
        autocast(DType::BF16, || {
            assert_eq!(autocast_dtype(), Some(DType::BF16));
            autocast_disabled(|| assert_eq!(autocast_dtype(), None));
            assert_eq!(autocast_dtype(), Some(DType::BF16));
            panic!("inside the scope");
        })
    });
    assert!(outcome.is_err());
    assert_eq!(autocast_dtype(), None);
}

#[test]
fn only_bf16_and_f16_are_accepted_and_rounded_products_need_float32() {
    assert!(autocast(DType::F16, || ()).is_ok());
    for dtype in [DType::F32, DType::F64, DType::I32] {
        let err = autocast(dtype, || ()).unwrap_err().to_string();
        assert!(err.contains("autocast"), "{err}");
    }
    let cpu = CpuBackend::new();
    let a = values(&cpu, &[2, 2], 7).cast(DType::F64).unwrap();
    for precision in [Precision::Bf16, Precision::F16] {
        let err = a.matmul_with(&a, precision).unwrap_err().to_string();
        assert!(err.contains("matmul") && err.contains("float32"), "{err}");
    }
}

/// `x` rounded to f16 and back.
fn rounded_f16(x: &T) -> T {
    x.cast(DType::F16).unwrap().cast(DType::F32).unwrap()
}

#[test]
fn f16_scopes_round_products_and_convolutions_to_f16_overflowing_to_infinity() -> Result<()> {
    let cpu = CpuBackend::new();
    let (a, b) = (values(&cpu, &[5, 40], 30), values(&cpu, &[40, 6], 31));
    let (a, b) = (Tensor::var("a", a)?, Tensor::var("b", b)?);
    let y = autocast(DType::F16, || loss(&a, &b))??;
    let (ra, rb) = (rounded_f16(&a.detach()), rounded_f16(&b.detach()));
    let c = ra.matmul(&rb)?;
    assert!((y.item::<f32>()? - c.tanh()?.sum_all()?.item::<f32>()?).abs() <= 1e-4);
    // f16 keeps 11 significant bits where bf16 keeps 8: closer to the f32 product, not equal to it.
    let (a0, b0) = (a.detach(), b.detach());
    let f16_err = max_diff(&autocast(DType::F16, || a0.matmul(&b0))??, &a0.matmul(&b0)?);
    let bf16_err = max_diff(
        &autocast(DType::BF16, || a0.matmul(&b0))??,
        &a0.matmul(&b0)?,
    );
    assert!(
        f16_err > 0.0 && f16_err * 4.0 < bf16_err,
        "{f16_err} {bf16_err}"
    );
    // Backward, outside the scope, multiplies f16-rounded operands too.
    let grads = AdContext::new().grads(&y, &[&a, &b])?;
    let g = (c.tanh()?.square()?.neg()? + 1.0)?;
    let da = rounded_f16(&g).matmul(&rb.t()?)?;
    assert!(max_diff(&grads[0], &da) <= f32_bound(6, 4.0));
    // Past 65504 an operand is infinite.
    let big = Tensor::from_vec(vec![70000.0f32, 1.0], [1, 2], &cpu)?;
    let ones = Tensor::ones([2, 1], DType::F32, &cpu)?;
    let inf = autocast(DType::F16, || big.matmul(&ones))??;
    assert_eq!(inf.to_vec::<f32>()?, vec![f32::INFINITY]);
    // Convolutions too.
    let p = conv_params();
    let (x, w) = (
        values(&cpu, &[1, 2, 7, 7], 32),
        values(&cpu, &[3, 2, 3, 3], 33),
    );
    let mixed = autocast(DType::F16, || x.conv2d(&w, &p))??;
    let want = rounded_f16(&x).conv2d(&rounded_f16(&w), &p)?;
    assert!(max_diff(&mixed, &want) <= f32_bound(18, 9.0));
    assert!(max_diff(&mixed, &x.conv2d(&w, &p)?) > 0.0);
    Ok(())
}

/// `sum(tanh(a @ b))` and its gradient with respect to both operands.
fn loss(a: &T, b: &T) -> Result<T> {
    a.matmul(b)?.tanh()?.sum_all()
}

#[test]
fn gradients_multiply_in_bf16_even_when_backward_runs_outside_the_scope() -> Result<()> {
    let cpu = CpuBackend::new();
    let (a, b) = (values(&cpu, &[16, 40], 8), values(&cpu, &[40, 24], 9));
    let (a, b) = (Tensor::var("a", a)?, Tensor::var("b", b)?);
    let y = autocast(DType::BF16, || loss(&a, &b))??;
    let grads = AdContext::new().grads(&y, &[&a, &b])?; // outside the scope
    // The same derivative written out with explicitly rounded operands: g = 1 - tanh(c)^2 for the
    // product c = round(a) round(b), then da = round(g) round(b)ᵀ and db = round(a)ᵀ round(g).
    let c = rounded(&a.detach()).matmul(&rounded(&b.detach()))?;
    let g = (c.tanh()?.square()?.neg()? + 1.0)?;
    let da = rounded(&g).matmul(&rounded(&b.detach()).t()?)?;
    let db = rounded(&a.detach()).t()?.matmul(&rounded(&g))?;
    assert!(max_diff(&grads[0], &da) <= f32_bound(24, 4.0));
    assert!(max_diff(&grads[1], &db) <= f32_bound(16, 4.0));
    // And they track the f32 gradients within bf16's precision (relative 2^-8 per operand).
    let full = AdContext::new().grads(&loss(&a, &b)?, &[&a, &b])?;
    let scale = 40.0 * 4.0 * 2.0f32.powi(-7);
    assert!(max_diff(&grads[0], &full[0]) <= scale);
    assert!(max_diff(&grads[0], &full[0]) > 1e-5);
    Ok(())
}

#[test]
fn forward_mode_and_second_order_derivatives_keep_the_precision() -> Result<()> {
    let cpu = CpuBackend::new();
    let (a, b) = (values(&cpu, &[6, 10], 10), values(&cpu, &[10, 5], 11));
    let t = values(&cpu, &[6, 10], 12);
    // Forward mode: the tangent of a @ b along t is t @ b, in bf16.
    let (_, tangent) = autocast(DType::BF16, || jvp(|x: &T| x.matmul(&b), &a, &t))??;
    let want = rounded(&t).matmul(&rounded(&b))?;
    assert!(max_diff(&tangent, &want) <= f32_bound(10, 4.0));
    // Second order: the gradient of the gradient's sum, recorded in the scope, evaluated outside.
    let f = |x: &T| x.matmul(&b)?.square()?.sum_all();
    let g2 = autocast(DType::BF16, || grad(|x: &T| grad(f)(x)?.sum_all())(&a))??;
    // It differs from the f32 second derivative, by no more than bf16 rounding of its products.
    let f32_g2 = grad(|x: &T| grad(f)(x)?.sum_all())(&a)?;
    let diff = max_diff(&g2, &f32_g2);
    assert!(
        diff > 0.0 && diff <= 10.0 * 2.0 * 20.0 * 2.0f32.powi(-7),
        "{diff}"
    );
    Ok(())
}

#[test]
fn a_program_traced_in_the_scope_replays_bf16_products() -> Result<()> {
    let tb = TracingBackend::new();
    let x = tb.placeholder([8, 12], DType::F32)?;
    let w = tb.placeholder([12, 6], DType::F32)?;
    let out = autocast(DType::BF16, || x.matmul(&w)?.relu())??;
    let program = tb.program(&[&out])?;
    assert!(program.to_string().contains("matmul_bf16"), "{program}");
    let cpu = CpuBackend::new();
    let (xc, wc) = (values(&cpu, &[8, 12], 13), values(&cpu, &[12, 6], 14));
    let got = GraphExecutor::new(&cpu).run(&program, &[xc.clone(), wc.clone()])?;
    let want = rounded(&xc).matmul(&rounded(&wc))?.relu()?;
    assert!(max_diff(&got[0], &want) <= f32_bound(12, 4.0));
    Ok(())
}

/// A padded, strided convolution: enough taps for rounding to show.
fn conv_params() -> nabla_core::Conv2dParams {
    nabla_core::Conv2dParams {
        stride: (2, 1),
        padding: (1, 1),
        ..Default::default()
    }
}

#[test]
fn convolutions_in_the_scope_multiply_rounded_operands_and_keep_it_in_backward() -> Result<()> {
    let cpu = CpuBackend::new();
    let p = conv_params();
    let (x, w) = (
        values(&cpu, &[2, 3, 9, 7], 20),
        values(&cpu, &[4, 3, 3, 3], 21),
    );
    let (x, w) = (Tensor::var("x", x)?, Tensor::var("w", w)?);
    let f = |x: &T, w: &T| -> Result<T> { x.conv2d(w, &p)?.square()?.sum_all() };
    let y = autocast(DType::BF16, || f(&x, &w))??;
    let grads = AdContext::new().grads(&y, &[&x, &w])?; // outside the scope
    // Written out: c = conv(round(x), round(w)); g = 2c; dx = conv_input_grad(round(g), round(w)),
    // dw = conv_weight_grad(round(x), round(g)), all in f32.
    let (rx, rw) = (rounded(&x.detach()), rounded(&w.detach()));
    let c = rx.conv2d(&rw, &p)?;
    let g = (c.clone() * 2.0)?;
    let dx = rounded(&g).conv2d_input_grad(&rw, (9, 7), &p)?;
    let dw = rx.conv2d_weight_grad(&rounded(&g), (3, 3), &p)?;
    let taps = 27;
    let inside = autocast(DType::BF16, || x.detach().conv2d(&w.detach(), &p))??;
    assert!(max_diff(&inside, &c) <= f32_bound(taps, 9.0));
    assert!(max_diff(&inside, &x.detach().conv2d(&w.detach(), &p)?) > 1e-3);
    assert!(max_diff(&grads[0], &dx) <= f32_bound(4 * 9, 200.0));
    assert!(max_diff(&grads[1], &dw) <= f32_bound(2 * 5 * 7, 200.0));
    // They track the f32 gradients within bf16's precision, and differ from them.
    let full = AdContext::new().grads(&f(&x, &w)?, &[&x, &w])?;
    for (mixed, full) in grads.iter().zip(&full) {
        let scale = full.abs()?.max_all()?.to_vec::<f32>()?[0];
        let diff = max_diff(mixed, full);
        assert!(
            diff > 0.0 && diff <= 4.0 * scale * 2.0f32.powi(-8),
            "{diff} {scale}"
        );
    }
    Ok(())
}

#[test]
fn conv2d_with_takes_the_given_precision_and_f64_convolutions_are_untouched() -> Result<()> {
    let cpu = CpuBackend::new();
    let p = conv_params();
    let (x, w) = (
        values(&cpu, &[1, 2, 6, 6], 22),
        values(&cpu, &[3, 2, 3, 3], 23),
    );
    // Full precision asked of conv2d_with: the scope does not change it.
    let exact = autocast(DType::BF16, || x.conv2d_with(&w, &p))??;
    assert_eq!(exact.to_vec::<f32>()?, x.conv2d(&w, &p)?.to_vec::<f32>()?);
    // Bf16 asked outside any scope.
    let bf16 = nabla_core::Conv2dParams {
        precision: Precision::Bf16,
        ..p
    };
    let asked = x.conv2d(&w, &bf16)?;
    assert!(max_diff(&asked, &rounded(&x).conv2d(&rounded(&w), &p)?) <= f32_bound(18, 9.0));
    // F64 inside the scope is unchanged, and F64 at Bf16 is an error naming the op.
    let (x64, w64) = (x.cast(DType::F64)?, w.cast(DType::F64)?);
    let inside = autocast(DType::BF16, || x64.conv2d(&w64, &p))??;
    assert_eq!(
        inside.to_vec::<f64>()?,
        x64.conv2d(&w64, &p)?.to_vec::<f64>()?
    );
    let err = x64.conv2d(&w64, &bf16).unwrap_err().to_string();
    assert!(err.contains("conv2d") && err.contains("float32"), "{err}");
    Ok(())
}

#[test]
fn convolutions_traced_in_the_scope_replay_in_bf16_and_forward_mode_keeps_it() -> Result<()> {
    let p = conv_params();
    let tb = TracingBackend::new();
    let x = tb.placeholder([2, 3, 8, 8], DType::F32)?;
    let w = tb.placeholder([5, 3, 3, 3], DType::F32)?;
    let out = autocast(DType::BF16, || x.conv2d(&w, &p)?.relu())??;
    let program = tb.program(&[&out])?;
    let cpu = CpuBackend::new();
    let (xc, wc) = (
        values(&cpu, &[2, 3, 8, 8], 24),
        values(&cpu, &[5, 3, 3, 3], 25),
    );
    let got = GraphExecutor::new(&cpu).run(&program, &[xc.clone(), wc.clone()])?;
    let want = rounded(&xc).conv2d(&rounded(&wc), &p)?.relu()?;
    assert!(max_diff(&got[0], &want) <= f32_bound(27, 9.0));
    assert!(max_diff(&got[0], &xc.conv2d(&wc, &p)?.relu()?) > 1e-3);
    // Forward mode: the tangent along t is conv(t, w), in bf16.
    let t = values(&cpu, &[2, 3, 8, 8], 26);
    let (_, tangent) = autocast(DType::BF16, || jvp(|x: &T| x.conv2d(&wc, &p), &xc, &t))??;
    let want = rounded(&t).conv2d(&rounded(&wc), &p)?;
    assert!(max_diff(&tangent, &want) <= f32_bound(27, 9.0));
    Ok(())
}
