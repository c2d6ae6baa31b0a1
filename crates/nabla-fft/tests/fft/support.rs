//! Helpers shared by the test modules: fixture arrays as tensors, the call a fixture case names, and
//! comparisons of real and complex values.

use nabla_core::num_complex::Complex64;
use nabla_core::{DType, Result};
use nabla_cpu::CpuBackend;
use nabla_fft::Norm;
use nabla_tensor::Tensor;
use serde_json::Value;

/// The tensor type of every test.
pub(crate) type T = Tensor<CpuBackend>;

pub(crate) const FIXTURE: &str = include_str!("../fixtures/fft.json");

pub(crate) fn cases() -> Vec<Value> {
    let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    fixture["cases"].as_array().expect("cases").clone()
}

/// A fixture array as a tensor on `backend` (complex128 when it has an imaginary part).
pub(crate) fn on<B: nabla_core::Backend>(v: &Value, backend: &B) -> Tensor<B> {
    let shape: Vec<usize> = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let floats = |k: &str| -> Vec<f64> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    let re = floats("re");
    match v.get("im") {
        Some(_) => {
            let c = re
                .iter()
                .zip(floats("im"))
                .map(|(&r, i)| Complex64::new(r, i))
                .collect();
            Tensor::from_vec(c, shape, backend).unwrap()
        }
        None => Tensor::from_vec(re, shape, backend).unwrap(),
    }
}

pub(crate) fn fixture(v: &Value) -> T {
    on(v, &CpuBackend::new())
}

/// The call a fixture case describes, on any backend.
pub(crate) fn call<B: nabla_core::Backend>(case: &Value, x: &Tensor<B>) -> Result<Tensor<B>> {
    let norm: Norm = case
        .get("norm")
        .map_or(Ok(Norm::Backward), |v| v.as_str().unwrap().parse())?;
    let n = case.get("n").map(|v| v.as_u64().unwrap() as usize);
    let axis = case
        .get("axis")
        .map_or(-1, |v| v.as_i64().unwrap() as isize);
    let list = |k: &str| -> Option<Vec<i64>> {
        case.get(k).map(|v| {
            v.as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_i64().unwrap())
                .collect()
        })
    };
    let s: Option<Vec<usize>> = list("s").map(|v| v.into_iter().map(|d| d as usize).collect());
    let axes: Option<Vec<isize>> =
        list("axes").map(|v| v.into_iter().map(|d| d as isize).collect());
    let (s, axes) = (s.as_deref(), axes.as_deref());
    match case["fn"].as_str().unwrap() {
        "fft" => nabla_fft::fft(x, n, axis, norm),
        "ifft" => nabla_fft::ifft(x, n, axis, norm),
        "rfft" => nabla_fft::rfft(x, n, axis, norm),
        "irfft" => nabla_fft::irfft(x, n, axis, norm),
        "fftn" => nabla_fft::fftn(x, s, axes, norm),
        "ifftn" => nabla_fft::ifftn(x, s, axes, norm),
        "rfftn" => nabla_fft::rfftn(x, s, axes, norm),
        "irfftn" => nabla_fft::irfftn(x, s, axes, norm),
        "fft2" => nabla_fft::fft2(x, s, norm),
        "ifft2" => nabla_fft::ifft2(x, s, norm),
        "rfft2" => nabla_fft::rfft2(x, s, norm),
        "irfft2" => nabla_fft::irfft2(x, s, norm),
        other => panic!("unknown fixture function {other}"),
    }
}

/// A short name for a case in messages.
pub(crate) fn name(case: &Value) -> String {
    let mut what = case["fn"].as_str().unwrap().to_string();
    for k in ["n", "axis", "s", "axes", "norm"] {
        if let Some(v) = case.get(k) {
            what.push_str(&format!(" {k}={v}"));
        }
    }
    what.push_str(&format!(" shape={}", case["input"]["shape"]));
    what
}

/// The values of a real or complex tensor as complex numbers.
pub(crate) fn cvalues<B: nabla_core::Backend>(t: &Tensor<B>) -> Vec<Complex64> {
    let t = t.contiguous().unwrap();
    if t.dtype().is_complex() {
        t.cast(DType::C128).unwrap().to_vec::<Complex64>().unwrap()
    } else {
        let v = t.cast(DType::F64).unwrap().to_vec::<f64>().unwrap();
        v.into_iter().map(|x| Complex64::new(x, 0.0)).collect()
    }
}

/// `got` and `want` agree in shape, realness and values within `tol` (relative to the largest
/// magnitude of `want`, as FFT errors scale with the whole signal).
pub(crate) fn assert_close<B: nabla_core::Backend>(
    got: &Tensor<B>,
    want: &T,
    tol: f64,
    what: &str,
) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    assert_eq!(
        got.dtype().is_complex(),
        want.dtype().is_complex(),
        "{what}: complex or real"
    );
    let (g, w) = (cvalues(got), cvalues(want));
    let scale = w.iter().map(|z| z.norm()).fold(1.0, f64::max);
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!((a - b).norm() <= tol * scale, "{what}[{i}]: {a} vs {b}");
    }
}

/// `Re Σ a ⊙ b` (the pairing under which reverse rules transpose forward rules).
pub(crate) fn pairing(a: &T, b: &T) -> f64 {
    cvalues(a)
        .iter()
        .zip(cvalues(b))
        .map(|(x, y)| (x * y).re)
        .sum()
}
