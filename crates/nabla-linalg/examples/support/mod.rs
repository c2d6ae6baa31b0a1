//! Inputs shared by the benchmark examples of `nabla-linalg` (included with `#[path]`, not an
//! example itself).

use nabla_core::Result;
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;

/// Uniform values in [-1, 1) in f64 from a fixed xorshift generator (the benchmark scripts make the
/// same numbers from the same seed).
pub fn uniform(seed: u64, shape: &[usize], cpu: &CpuBackend) -> Result<Tensor<CpuBackend>> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let n = shape.iter().product();
    let v: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect();
    Tensor::from_vec(v, shape.to_vec(), cpu)
}
