//! Extension families on `Tensor<WgpuBackend>`: the special functions run through the host fallback
//! (download, host kernel, upload) with the CPU's values and gradients; the FFT family, whose outputs
//! are complex, is a clear dtype error on wgpu (no complex dtypes there), not a crash.

mod common;

use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_fft::Norm;
use nabla_tensor::Tensor;

type Unary<B> = fn(&Tensor<B>) -> Result<Tensor<B>>;

#[test]
fn special_functions_match_the_cpu_through_the_host_fallback() -> Result<()> {
    let Some(gpu) = common::gpu() else {
        return Ok(());
    };
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(vec![0.25f32, 0.5, 0.75, 0.9], [4], &cpu)?;
    let on_cpu: [Unary<CpuBackend>; 4] = [
        nabla_special::lgamma,
        nabla_special::digamma,
        nabla_special::erfinv,
        nabla_special::i0e,
    ];
    let on_gpu: [Unary<nabla_wgpu::WgpuBackend>; 4] = [
        nabla_special::lgamma,
        nabla_special::digamma,
        nabla_special::erfinv,
        nabla_special::i0e,
    ];
    for (f, g) in on_cpu.iter().zip(&on_gpu) {
        let xc = Tensor::var("x", x.clone())?;
        let xg = Tensor::var("x", x.to_backend(gpu)?)?;
        let (yc, yg) = (f(&xc)?, g(&xg)?);
        assert_eq!(yg.dtype(), DType::F32);
        let (dc, dg) = (yc.sum_all()?.grad(&xc)?, yg.sum_all()?.grad(&xg)?);
        for (a, b) in [(yc.detach(), yg.detach()), (dc, dg)] {
            let (a, b) = (a.to_vec::<f32>()?, b.to_vec::<f32>()?);
            for (p, q) in a.iter().zip(&b) {
                assert!((p - q).abs() <= 1e-5 * (1.0 + p.abs()), "{p} vs {q}");
            }
        }
    }
    Ok(())
}

#[test]
fn fourier_transforms_on_wgpu_are_a_dtype_error() -> Result<()> {
    let Some(gpu) = common::gpu() else {
        return Ok(());
    };
    let x =
        Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [4], &CpuBackend::new())?.to_backend(gpu)?;
    let e = nabla_fft::rfft(&x, None, -1, Norm::Backward)
        .unwrap_err()
        .to_string();
    assert!(e.contains("complex64"), "{e}");
    Ok(())
}
