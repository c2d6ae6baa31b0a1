//! Random tensors on the CPU: the host definition ([`nabla_core::random_host`]), its elements computed
//! across threads for large outputs.

use crate::strided::CHUNK;
use crate::{CpuStorage, PARALLEL_THRESHOLD};
use nabla_core::{DType, Distribution, Element, Fill, Result, RngKey, random_host};
use rayon::prelude::*;

/// [`Fill`] in chunks, in parallel for large outputs.
struct Parallel;

impl Fill for Parallel {
    fn fill<T: Element>(&self, len: usize, f: impl Fn(u64) -> T + Sync) -> Vec<T> {
        let mut out = vec![T::zero(); len];
        let fill = |(chunk, dst): (usize, &mut [T])| {
            let base = (chunk * CHUNK) as u64;
            for (j, v) in dst.iter_mut().enumerate() {
                *v = f(base + j as u64);
            }
        };
        if crate::splits(len, PARALLEL_THRESHOLD) {
            out.par_chunks_mut(CHUNK).enumerate().for_each(fill);
        } else {
            out.chunks_mut(CHUNK).enumerate().for_each(fill);
        }
        out
    }
}

/// `len` draws from `dist` as `dtype`; see [`nabla_core::Backend::random`].
pub(crate) fn random(
    dist: Distribution,
    len: usize,
    dtype: DType,
    key: RngKey,
) -> Result<CpuStorage> {
    Ok(CpuStorage::new(random_host(
        dist, len, dtype, key, &Parallel,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_core::{Generator, HostData};

    fn key() -> RngKey {
        let mut g = Generator::new(1234);
        g.next_key(5);
        g.next_key(100)
    }

    fn draw(dist: Distribution, len: usize, dtype: DType) -> HostData {
        random(dist, len, dtype, key()).unwrap().into_host()
    }

    #[test]
    fn elements_are_pure_functions_of_key_and_index() {
        let k = key();
        let u = Distribution::Uniform {
            low: -2.0,
            high: 3.0,
        };
        let HostData::F64(v) = draw(u, 100_000, DType::F64) else {
            panic!("dtype")
        };
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(x, -2.0 + 5.0 * k.uniform_f64(i as u64));
        }
        let n = Distribution::Normal {
            mean: 1.0,
            std: 2.0,
        };
        let HostData::F32(v) = draw(n, 70_000, DType::F32) else {
            panic!("dtype")
        };
        for (i, &x) in v.iter().enumerate() {
            assert_eq!(x, (1.0 + 2.0 * k.normal_f64(i as u64)) as f32);
        }
        // The same draws whether generated in parallel or not, and a prefix of a longer draw.
        let short = draw(n, 10, DType::F32);
        assert_eq!(
            short.to_f64_vec(),
            v[..10].iter().map(|&x| x as f64).collect::<Vec<_>>()
        );
    }

    #[test]
    fn uniform_stays_in_range_and_has_the_right_moments() {
        for dtype in [DType::F16, DType::BF16, DType::F32, DType::F64] {
            let v = draw(
                Distribution::Uniform {
                    low: 1.0,
                    high: 2.0,
                },
                50_000,
                dtype,
            )
            .to_f64_vec();
            assert!(v.iter().all(|&x| (1.0..2.0).contains(&x)), "{dtype}");
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            assert!((mean - 1.5).abs() < 0.01, "{dtype}: mean {mean}");
        }
        // A range narrower than one bf16 step still gives values in [low, high).
        let v = draw(
            Distribution::Uniform {
                low: 1.0,
                high: 1.001,
            },
            1000,
            DType::BF16,
        )
        .to_f64_vec();
        assert!(v.iter().all(|&x| x == 1.0));
    }

    #[test]
    fn normal_has_the_right_moments() {
        let v = draw(
            Distribution::Normal {
                mean: -3.0,
                std: 0.5,
            },
            200_000,
            DType::F64,
        )
        .to_f64_vec();
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64;
        assert!((mean + 3.0).abs() < 0.01, "mean {mean}");
        assert!((var - 0.25).abs() < 0.01, "var {var}");
        let zero_std = draw(
            Distribution::Normal {
                mean: 2.0,
                std: 0.0,
            },
            10,
            DType::F32,
        );
        assert_eq!(zero_std, HostData::F32(vec![2.0; 10]));
    }

    #[test]
    fn bernoulli_gives_zeros_and_ones_in_every_dtype() {
        let b = Distribution::Bernoulli { p: 0.3 };
        let HostData::Bool(bits) = draw(b, 100_000, DType::Bool) else {
            panic!("dtype")
        };
        let frac = bits.iter().filter(|&&x| x).count() as f64 / bits.len() as f64;
        assert!((frac - 0.3).abs() < 0.01, "fraction {frac}");
        for dtype in [
            DType::F16,
            DType::BF16,
            DType::F32,
            DType::F64,
            DType::I8,
            DType::I32,
            DType::I64,
            DType::U8,
            DType::U16,
            DType::U64,
        ] {
            let v = draw(b, 1000, dtype).to_f64_vec();
            let want: Vec<f64> = bits[..1000].iter().map(|&x| x as u8 as f64).collect();
            assert_eq!(v, want, "{dtype}");
        }
        assert!(
            draw(Distribution::Bernoulli { p: 0.0 }, 100, DType::Bool)
                .to_f64_vec()
                .iter()
                .all(|&x| x == 0.0)
        );
        assert!(
            draw(Distribution::Bernoulli { p: 1.0 }, 100, DType::U8)
                .to_f64_vec()
                .iter()
                .all(|&x| x == 1.0)
        );
    }

    #[test]
    fn empty_draws() {
        assert_eq!(
            draw(
                Distribution::Normal {
                    mean: 0.0,
                    std: 1.0
                },
                0,
                DType::F64
            ),
            HostData::F64(vec![])
        );
    }

    #[test]
    fn invalid_parameters_and_dtypes_are_errors() {
        let err = |d, dt| random(d, 4, dt, key()).unwrap_err().to_string();
        assert_eq!(
            err(
                Distribution::Uniform {
                    low: 1.0,
                    high: 1.0
                },
                DType::F32
            ),
            "random: uniform needs finite bounds with low < high, got low = 1, high = 1"
        );
        assert!(
            err(
                Distribution::Uniform {
                    low: 0.0,
                    high: f64::INFINITY
                },
                DType::F32
            )
            .contains("high = inf")
        );
        assert_eq!(
            err(
                Distribution::Normal {
                    mean: 0.0,
                    std: -1.0
                },
                DType::F64
            ),
            "random: normal needs a finite mean and a finite std >= 0, got mean = 0, std = -1"
        );
        assert!(
            err(
                Distribution::Normal {
                    mean: f64::NAN,
                    std: 1.0
                },
                DType::F64
            )
            .contains("mean = NaN")
        );
        assert_eq!(
            err(Distribution::Bernoulli { p: 1.5 }, DType::Bool),
            "random: bernoulli needs a probability 0 <= p <= 1, got p = 1.5"
        );
        assert!(err(Distribution::Bernoulli { p: f64::NAN }, DType::Bool).contains("p = NaN"));
        assert_eq!(
            err(
                Distribution::Uniform {
                    low: 0.0,
                    high: 1.0
                },
                DType::I64
            ),
            "random: not supported for dtype int64 (uniform draws need a real float dtype)"
        );
        assert_eq!(
            err(
                Distribution::Normal {
                    mean: 0.0,
                    std: 1.0
                },
                DType::C64
            ),
            "random: not supported for dtype complex64 (normal draws need a real float dtype)"
        );
        assert_eq!(
            err(Distribution::Bernoulli { p: 0.5 }, DType::C128),
            "random: not supported for dtype complex128 (bernoulli draws need a real float, integer or bool dtype)"
        );
    }
}
