//! Helpers shared by the test modules: deterministic data, tensors, the rule context.

use nabla_core::DType;
use nabla_cpu::CpuBackend;
use nabla_tensor::{AdContext, Tensor};

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

/// A context with the family's rules.
pub(crate) fn ad() -> AdContext<CpuBackend> {
    AdContext::builder()
        .with_extension_rules(nabla_linalg::rules())
        .build()
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
