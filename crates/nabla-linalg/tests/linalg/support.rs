//! Helpers shared by the test modules: deterministic data, tensors, the rule context, comparisons
//! of real and complex values, JAX fixture arrays and pairings of several results.

use nabla_core::DType;
use nabla_core::num_complex::Complex64;
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, Tensor};
use serde_json::Value;

/// The tensor type of every test.
pub(crate) type T = Tensor<CpuBackend>;

pub(crate) fn cpu() -> CpuBackend {
    CpuBackend::new()
}

/// `n` deterministic values in `[-1, 1)` (xorshift from `seed`).
pub(crate) fn data(seed: u64, n: usize) -> Vec<f64> {
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

/// A float64 tensor of `shape` holding `data(seed, ..)`.
pub(crate) fn tensor(seed: u64, shape: &[usize]) -> T {
    let n = shape.iter().product();
    Tensor::from_vec(data(seed, n), shape.to_vec(), &cpu()).unwrap()
}

/// The float64 identity matrix of size `n`.
pub(crate) fn eye64(n: usize) -> T {
    Tensor::eye(n, DType::F64, &cpu()).unwrap()
}

/// A context (the family's rules travel with its ops; none are given here).
pub(crate) fn ad() -> AdContext {
    AdContext::new()
}

pub(crate) fn values(t: &T) -> Vec<f64> {
    t.to_vec::<f64>().unwrap()
}

/// Variables `x0, x1, ..` holding `inputs`.
pub(crate) fn vars(inputs: &[T]) -> Vec<T> {
    inputs
        .iter()
        .enumerate()
        .map(|(i, x)| Tensor::var(format!("x{i}"), x.clone()).unwrap())
        .collect()
}

/// Central differences (step 1e-6) of `loss` with respect to every element of input `i`.
pub(crate) fn central_differences(loss: &dyn Fn(&[T]) -> f64, inputs: &[T], i: usize) -> Vec<f64> {
    let eps = 1e-6;
    let base = values(&inputs[i]);
    (0..base.len())
        .map(|k| {
            let at = |d: f64| {
                let mut v = base.clone();
                v[k] += d;
                let mut xs = inputs.to_vec();
                xs[i] = Tensor::from_vec(v, inputs[i].shape().to_vec(), &cpu()).unwrap();
                loss(&xs)
            };
            (at(eps) - at(-eps)) / (2.0 * eps)
        })
        .collect()
}

/// The values of a real or complex tensor as complex numbers.
pub(crate) fn cvalues(t: &T) -> Vec<Complex64> {
    let t = t.contiguous().unwrap();
    if t.dtype().is_complex() {
        t.cast(DType::C128).unwrap().to_vec::<Complex64>().unwrap()
    } else {
        let v = t.cast(DType::F64).unwrap().to_vec::<f64>().unwrap();
        v.into_iter().map(|x| Complex64::new(x, 0.0)).collect()
    }
}

pub(crate) fn assert_close(got: &[Complex64], want: &[Complex64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).norm() <= tol * (1.0 + w.norm()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

pub(crate) fn assert_real_close(got: &[f64], want: &[f64], tol: f64, what: &str) {
    let c = |v: &[f64]| {
        v.iter()
            .map(|&x| Complex64::new(x, 0.0))
            .collect::<Vec<_>>()
    };
    assert_close(&c(got), &c(want), tol, what);
}

/// A fixture array as a tensor (complex128 when it has an imaginary part).
pub(crate) fn fixture_tensor(v: &Value) -> T {
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
    if v.get("im").is_some() {
        let c = re
            .iter()
            .zip(floats("im"))
            .map(|(&r, i)| Complex64::new(r, i))
            .collect::<Vec<_>>();
        Tensor::from_vec(c, shape, &cpu()).unwrap()
    } else {
        Tensor::from_vec(re, shape, &cpu()).unwrap()
    }
}

pub(crate) fn fixture_tensors(v: &Value) -> Vec<T> {
    v.as_array().unwrap().iter().map(fixture_tensor).collect()
}

pub(crate) fn compare(got: &[T], want: &[T], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: result count");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g.shape(), w.shape(), "{what} {i}: shape");
        assert_close(&cvalues(g), &cvalues(w), tol, &format!("{what} {i}"));
    }
}

/// `Σᵢ sum(aᵢ ⊙ bᵢ)` as a one-element tensor (the bilinear pairing, no conjugation).
pub(crate) fn dot(a: &[T], b: &[T]) -> T {
    a.iter()
        .zip(b)
        .map(|(x, y)| x.mul(y).unwrap().sum_all().unwrap())
        .reduce(|s, d| s.add(&d).unwrap())
        .unwrap()
}

/// `Re Σᵢ sum(aᵢ ⊙ bᵢ)` as a one-element real tensor: the real pairing under which reverse rules
/// transpose forward rules (JAX's convention; the plain [`dot`] for real tensors). Each `bᵢ` is
/// cast to `aᵢ`'s dtype first (a real cotangent of a complex-typed result, e.g. LU's `P`).
pub(crate) fn real_dot(a: &[T], b: &[T]) -> T {
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            let s = x
                .mul(y.cast(x.dtype()).unwrap())
                .unwrap()
                .sum_all()
                .unwrap();
            if s.dtype().is_complex() {
                s.real().unwrap()
            } else {
                s
            }
        })
        .reduce(|s, d| s.add(&d).unwrap())
        .unwrap()
}
