//! Initialisers: PyTorch's bounds and standard deviations, reproducibility from the seed, orthogonality,
//! truncation, and errors.

use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::init::{self, FanMode, Nonlinearity};
use nabla_nn::{Linear, Module};

fn stats(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[test]
fn fans_and_gains_follow_pytorch() -> Result<()> {
    assert_eq!(init::fans(&[16, 8])?, (8, 16));
    assert_eq!(init::fans(&[16, 8, 3, 3])?, (72, 144));
    assert!(init::fans(&[5]).is_err());
    assert_eq!(init::calculate_gain(Nonlinearity::Relu), 2f64.sqrt());
    assert_eq!(init::calculate_gain(Nonlinearity::Tanh), 5.0 / 3.0);
    assert_eq!(init::calculate_gain(Nonlinearity::Selu), 0.75);
    let g = init::calculate_gain(Nonlinearity::LeakyRelu(5f64.sqrt()));
    assert!((g - (1.0f64 / 3.0).sqrt()).abs() < 1e-15);
    Ok(())
}

#[test]
fn uniform_initialisers_stay_inside_pytorchs_bounds() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    let shape = [200, 50, 3];
    let (fan_in, fan_out) = (150.0f64, 600.0f64);
    let w = init::kaiming_uniform(
        shape,
        0.0,
        FanMode::FanIn,
        Nonlinearity::Relu,
        DType::F64,
        &mut rng,
        &cpu,
    )?
    .to_vec::<f64>()?;
    let bound = (6.0 / fan_in).sqrt();
    assert!(w.iter().all(|v| v.abs() <= bound));
    // Uniform on (-b, b): standard deviation b / √3.
    let (_, sd) = stats(&w);
    assert!((sd - bound / 3f64.sqrt()).abs() < 0.02 * bound);

    let w = init::xavier_uniform(shape, 2.0, DType::F64, &mut rng, &cpu)?.to_vec::<f64>()?;
    let bound = 2.0 * (6.0 / (fan_in + fan_out)).sqrt();
    assert!(w.iter().all(|v| v.abs() <= bound));
    assert!(w.iter().any(|v| v.abs() > 0.95 * bound));

    // Linear's default: weight and bias inside ±1/√in_features.
    let layer = Linear::new(64, 32, true, DType::F64, &mut rng, &cpu)?;
    for (_, p) in layer.named_parameters() {
        assert!(p.value().to_vec::<f64>()?.iter().all(|v| v.abs() <= 0.125));
    }
    Ok(())
}

#[test]
fn normal_initialisers_have_pytorchs_standard_deviation() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(1);
    let shape = [300, 100];
    let w = init::kaiming_normal(
        shape,
        0.0,
        FanMode::FanOut,
        Nonlinearity::Relu,
        DType::F64,
        &mut rng,
        &cpu,
    )?
    .to_vec::<f64>()?;
    let (mean, sd) = stats(&w);
    let want = (2.0f64 / 300.0).sqrt();
    assert!(
        mean.abs() < 0.01 * want * 10.0 && (sd - want).abs() < 0.02 * want,
        "{mean} {sd}"
    );
    let w = init::xavier_normal(shape, 1.0, DType::F64, &mut rng, &cpu)?.to_vec::<f64>()?;
    let want = (2.0f64 / 400.0).sqrt();
    assert!((stats(&w).1 - want).abs() < 0.02 * want);
    Ok(())
}

#[test]
fn same_seed_same_values() -> Result<()> {
    let cpu = CpuBackend::new();
    let draw = |seed| -> Result<Vec<f32>> {
        init::kaiming_uniform(
            [8, 4],
            5f64.sqrt(),
            FanMode::FanIn,
            Nonlinearity::LeakyRelu(5f64.sqrt()),
            DType::F32,
            &mut Generator::new(seed),
            &cpu,
        )?
        .to_vec::<f32>()
    };
    assert_eq!(draw(3)?, draw(3)?);
    assert_ne!(draw(3)?, draw(4)?);
    Ok(())
}

#[test]
fn orthogonal_rows_or_columns_are_orthonormal() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(2);
    for (rows, cols) in [(6usize, 4usize), (4, 6), (5, 5)] {
        let q = init::orthogonal([rows, cols], 1.5, DType::F64, &mut rng, &cpu)?;
        // The smaller Gram matrix is 1.5² I.
        let gram = if rows >= cols {
            q.t()?.matmul(&q)?
        } else {
            q.matmul(&q.t()?)?
        };
        let n = rows.min(cols);
        let g = gram.to_vec::<f64>()?;
        for i in 0..n {
            for j in 0..n {
                let want = if i == j { 2.25 } else { 0.0 };
                assert!(
                    (g[i * n + j] - want).abs() < 1e-12,
                    "{rows}x{cols}: {:?}",
                    g
                );
            }
        }
    }
    // Trailing dimensions are flattened, as PyTorch does for convolution weights.
    let q = init::orthogonal([4, 2, 3], 1.0, DType::F32, &mut rng, &cpu)?;
    assert_eq!(q.shape(), &[4, 2, 3]);
    assert!(init::orthogonal([5], 1.0, DType::F32, &mut rng, &cpu).is_err());
    Ok(())
}

#[test]
fn truncated_normal_stays_in_bounds_with_the_truncated_moments() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(3);
    let w = init::trunc_normal([20000], 0.0, 1.0, (-2.0, 2.0), DType::F64, &mut rng, &cpu)?
        .to_vec::<f64>()?;
    assert!(w.iter().all(|v| (-2.0..=2.0).contains(v)));
    // Standard normal truncated to [-2, 2]: mean 0, standard deviation 0.8796.
    let (mean, sd) = stats(&w);
    assert!(
        mean.abs() < 0.02 && (sd - 0.8796).abs() < 0.01,
        "{mean} {sd}"
    );
    // A one-sided window far in the tail still lands inside it.
    let w = init::trunc_normal([1000], 0.0, 1.0, (3.0, 4.0), DType::F64, &mut rng, &cpu)?
        .to_vec::<f64>()?;
    assert!(w.iter().all(|v| (3.0..=4.0).contains(v)));
    assert!(init::trunc_normal([3], 0.0, 1.0, (1.0, -1.0), DType::F64, &mut rng, &cpu).is_err());
    assert!(init::normal([3], 0.0, -1.0, DType::F64, &mut rng, &cpu).is_err());
    assert!(init::uniform([3], 1.0, 0.0, DType::F64, &mut rng, &cpu).is_err());
    Ok(())
}
