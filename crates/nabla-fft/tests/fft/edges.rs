//! Edge cases: zero-size batches, length-0 axes and other errors, strided and broadcast inputs, large
//! and prime lengths against a direct DFT (the threaded paths too), the frequency helpers against
//! NumPy's values, and dtype conversions.

use crate::support::{T, assert_close, cvalues};
use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_fft::{
    Norm, fft, fftfreq, fftn, fftshift, ifft, ifftshift, irfft, irfftn, rfft, rfftfreq, rfftn,
};
use nabla_tensor::{AdContext, Tensor};

fn cpu() -> CpuBackend {
    CpuBackend::new()
}

/// `n` deterministic values in `[-1, 1)`.
fn data(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

fn real(seed: u64, shape: &[usize]) -> T {
    Tensor::from_vec(data(seed, shape.iter().product()), shape.to_vec(), &cpu()).unwrap()
}

fn complex(seed: u64, shape: &[usize]) -> T {
    Tensor::complex(&real(seed, shape), &real(seed + 1000, shape)).unwrap()
}

/// The direct O(n²) DFT of each line of `x` along `axis` (complex128).
fn direct_dft(x: &T, axis: usize, inverse: bool) -> T {
    let shape = x.shape().to_vec();
    let v = cvalues(x);
    let n = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut out = vec![Complex64::new(0.0, 0.0); v.len()];
    for o in 0..outer {
        for i in 0..inner {
            for k in 0..n {
                let mut acc = Complex64::new(0.0, 0.0);
                for j in 0..n {
                    let angle = sign * 2.0 * std::f64::consts::PI * ((j * k) % n) as f64 / n as f64;
                    acc += v[(o * n + j) * inner + i] * Complex64::from_polar(1.0, angle);
                }
                out[(o * n + k) * inner + i] = acc;
            }
        }
    }
    Tensor::from_vec(out, shape, &cpu()).unwrap()
}

#[test]
fn large_prime_and_threaded_transforms_match_a_direct_dft() {
    // Lengths: a power of two, a large prime (Bluestein), and mixed radices; batches large enough to
    // split across threads, along the last axis and along an inner one.
    for (shape, axis) in [
        (vec![40, 1024], 1),
        (vec![97, 3], 0),
        (vec![1009], 0),
        (vec![2, 360, 40], 1),
    ] {
        let x = complex(shape.iter().sum::<usize>() as u64, &shape);
        let a = axis as isize - shape.len() as isize;
        let got = fft(&x, None, a, Norm::Backward).unwrap();
        assert_close(
            &got,
            &direct_dft(&x, axis, false),
            1e-12,
            &format!("fft {shape:?}"),
        );
        let back = ifft(&got, None, a, Norm::Backward).unwrap();
        assert_close(&back, &x, 1e-13, &format!("ifft(fft) {shape:?}"));
        let xr = x.real().unwrap();
        let half = rfft(&xr, None, a, Norm::Backward).unwrap();
        let full = direct_dft(&xr, axis, false);
        let m = shape[axis] / 2 + 1;
        assert_close(
            &half,
            &full.narrow(a, 0, m).unwrap(),
            1e-12,
            &format!("rfft {shape:?}"),
        );
        let back = irfft(&half, Some(shape[axis]), a, Norm::Backward).unwrap();
        assert_close(&back, &xr, 1e-13, &format!("irfft(rfft) {shape:?}"));
    }
}

#[test]
fn zero_size_batches_give_empty_results_and_empty_gradients() -> Result<()> {
    let x = Tensor::var("x", Tensor::zeros([0, 6], DType::F64, &cpu())?)?;
    let y = rfft(&x, None, -1, Norm::Backward)?;
    assert_eq!((y.shape(), y.dtype()), (&[0usize, 4][..], DType::C128));
    let z = fftn(&x, None, Some(&[-1]), Norm::Ortho)?;
    assert_eq!(z.shape(), &[0, 6]);
    let back = irfft(&y, Some(6), -1, Norm::Backward)?;
    assert_eq!(back.shape(), &[0, 6]);
    let loss = back.sum_all()?.add(&z.abs()?.sum_all()?)?;
    let g = AdContext::new().grad(&loss, &x)?;
    assert_eq!(g.shape(), &[0, 6]);
    Ok(())
}

/// The error of `r`, which must name `op` and contain `text`.
fn refused(r: Result<T>, op: &str, text: &str) {
    let e = r.expect_err("expected an error").to_string();
    assert!(e.contains(op) && e.contains(text), "{e}");
}

#[test]
fn bad_arguments_are_errors_naming_the_op() {
    let x = real(1, &[3, 4]);
    refused(
        fft(
            &Tensor::zeros([3, 0], DType::F64, &cpu()).unwrap(),
            None,
            -1,
            Norm::Backward,
        ),
        "fft",
        "(0)",
    );
    refused(fft(&x, Some(0), -1, Norm::Backward), "fft", "(0)");
    refused(fft(&x, None, 2, Norm::Backward), "fft.fft", "out of range");
    refused(fft(&x, None, -3, Norm::Backward), "fft.fft", "out of range");
    refused(
        fftn(&x, None, Some(&[0, -2]), Norm::Backward),
        "fft.fft",
        "repeated",
    );
    refused(
        fftn(&x, Some(&[2, 2, 2]), None, Norm::Backward),
        "fft.fftn",
        "lengths",
    );
    refused(
        fftn(&x, Some(&[2]), Some(&[0, 1]), Norm::Backward),
        "fft.fftn",
        "lengths",
    );
    refused(
        fftn(
            &Tensor::from_vec(vec![1.0f64], [], &cpu()).unwrap(),
            None,
            None,
            Norm::Backward,
        ),
        "fft.fftn",
        "at least one axis",
    );
    refused(
        rfft(&complex(2, &[4]), None, -1, Norm::Backward),
        "fft.rfftn",
        "complex",
    );
    refused(
        irfft(&complex(3, &[1]), None, -1, Norm::Backward),
        "fft.irfftn",
        "(0)",
    );
    refused(
        irfftn(&complex(3, &[2, 3]), Some(&[2, 0]), None, Norm::Backward),
        "fft.irfftn",
        "(0)",
    );
    refused(
        fftfreq(4, 0.0, DType::F64, &cpu()),
        "fft.fftfreq",
        "spacing",
    );
    refused(
        rfftfreq(4, f64::NAN, DType::F64, &cpu()),
        "fft.rfftfreq",
        "spacing",
    );
    let e = "sideways".parse::<Norm>().unwrap_err().to_string();
    assert!(e.contains("backward, ortho or forward"), "{e}");
}

#[test]
fn strided_and_broadcast_inputs_transform_like_contiguous_copies() -> Result<()> {
    let x = complex(7, &[5, 6]);
    let views = [
        x.t()?,
        x.narrow(1, 1, 4)?,
        x.flip(&[0])?,
        complex(8, &[6]).unsqueeze(0)?.broadcast_to([3, 6])?,
    ];
    for view in &views {
        let copy = view.contiguous()?;
        assert_close(
            &fft(view, None, -1, Norm::Backward)?,
            &fft(&copy, None, -1, Norm::Backward)?,
            1e-14,
            "fft of a view",
        );
        assert_close(
            &fftn(view, None, None, Norm::Ortho)?,
            &fftn(&copy, None, None, Norm::Ortho)?,
            1e-14,
            "fftn of a view",
        );
        let r = view.real()?;
        assert_close(
            &rfftn(&r, None, None, Norm::Backward)?,
            &rfftn(&r.contiguous()?, None, None, Norm::Backward)?,
            1e-14,
            "rfftn of a view",
        );
    }
    Ok(())
}

#[test]
fn frequencies_and_shifts_match_numpy() -> Result<()> {
    let v = |t: T| t.to_vec::<f64>().unwrap();
    // np.fft.fftfreq(5, 0.5), np.fft.rfftfreq(6, 2.0)
    assert_eq!(
        v(fftfreq(5, 0.5, DType::F64, &cpu())?),
        vec![0.0, 0.4, 0.8, -0.8, -0.4]
    );
    assert_eq!(
        v(rfftfreq(6, 2.0, DType::F64, &cpu())?),
        vec![0.0, 1.0 / 12.0, 2.0 / 12.0, 0.25]
    );
    assert_eq!(fftfreq(0, 1.0, DType::F32, &cpu())?.shape(), &[0]);
    let x = Tensor::from_vec((0..10).map(f64::from).collect(), [2, 5], &cpu())?;
    // np.fft.fftshift(x) and np.fft.ifftshift(x, axes=1)
    assert_eq!(
        v(fftshift(&x, None)?),
        vec![8.0, 9.0, 5.0, 6.0, 7.0, 3.0, 4.0, 0.0, 1.0, 2.0]
    );
    assert_eq!(
        v(ifftshift(&x, Some(&[1]))?),
        vec![2.0, 3.0, 4.0, 0.0, 1.0, 7.0, 8.0, 9.0, 5.0, 6.0]
    );
    assert_eq!(v(ifftshift(&fftshift(&x, None)?, None)?), v(x));
    Ok(())
}

#[test]
fn inputs_of_other_dtypes_convert_like_pytorch() -> Result<()> {
    let ints = Tensor::from_vec(vec![1i64, 2, 3, 4], [4], &cpu())?;
    assert_eq!(fft(&ints, None, -1, Norm::Backward)?.dtype(), DType::C64);
    assert_eq!(rfft(&ints, None, -1, Norm::Backward)?.dtype(), DType::C64);
    let half = ints.cast(DType::F16)?;
    assert_eq!(
        irfft(
            &rfft(&half, None, -1, Norm::Backward)?,
            Some(4),
            -1,
            Norm::Backward
        )?
        .dtype(),
        DType::F32
    );
    assert_eq!(
        fft(&ints.cast(DType::F64)?, None, -1, Norm::Backward)?.dtype(),
        DType::C128
    );
    Ok(())
}

#[test]
fn ortho_transforms_are_unitary_and_norms_scale_as_documented() -> Result<()> {
    let x = complex(11, &[3, 8]);
    let energy = |t: &T| {
        t.abs()
            .unwrap()
            .square()
            .unwrap()
            .sum_all()
            .unwrap()
            .item::<f64>()
            .unwrap()
    };
    let y = fftn(&x, None, None, Norm::Ortho)?;
    assert!((energy(&y) - energy(&x)).abs() < 1e-12 * energy(&x));
    let backward = fft(&x, None, -1, Norm::Backward)?;
    let forward = fft(&x, None, -1, Norm::Forward)?;
    assert_close(
        &forward.mul(8.0)?,
        &backward,
        1e-14,
        "forward norm = backward / n",
    );
    Ok(())
}
