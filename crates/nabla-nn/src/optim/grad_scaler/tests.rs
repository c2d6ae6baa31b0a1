//! The scaler's iteration: unscaling, skipping overflowed steps, the factor's backoff and growth,
//! its errors and its saved state.

use super::*;
use crate::Param;
use crate::optim::{Sgd, SgdConfig};
use nabla_cpu::CpuBackend;
use nabla_tensor::autocast;

type T = Tensor<CpuBackend>;

fn setup(cpu: &CpuBackend) -> (Param<CpuBackend>, T, Sgd<CpuBackend>) {
    let w = Param::new(Tensor::from_vec(vec![0.5f32, -1.0], [2, 1], cpu).unwrap()).unwrap();
    let x = Tensor::from_vec(vec![1.0f32, 2.0], [1, 2], cpu).unwrap();
    let config = SgdConfig {
        lr: 0.25,
        ..Default::default()
    };
    let opt = Sgd::new(vec![w.clone()], config).unwrap();
    (w, x, opt)
}

/// `sum(x @ w)` under f16 autocast, times `factor`.
fn loss(x: &T, w: &Param<CpuBackend>, factor: f64) -> Result<T> {
    autocast(DType::F16, || x.matmul(&w.value())?.sum_all())??.mul(factor)
}

fn config(growth_interval: u64) -> GradScalerConfig {
    GradScalerConfig {
        growth_interval,
        ..Default::default()
    }
}

#[test]
fn a_finite_step_updates_with_unscaled_gradients_and_counts_towards_growth() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, x, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(config(2))?;
    for round in 0..2 {
        let grads = scaler.scale(&loss(&x, &w, 0.25)?)?.backward()?;
        assert!(scaler.step(&mut opt, &grads)?);
        scaler.update();
        // The gradient is 0.25 x: w moves by lr * 0.25 * (1, 2) a step, exactly.
        let want = [
            0.5 - 0.0625 * (round + 1) as f32,
            -1.0 - 0.125 * (round + 1) as f32,
        ];
        assert_eq!(w.value().to_vec::<f32>()?, want);
    }
    // Two good steps with an interval of 2: the factor doubled, the count restarted.
    assert_eq!(scaler.scale_factor(), 131072.0);
    assert_eq!(scaler.state_dict().growth_tracker, 0);
    Ok(())
}

#[test]
fn an_overflow_skips_the_update_and_backs_the_factor_off() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, x, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(config(2))?;
    // One good step, so that the growth count is 1 before the overflow resets it.
    let grads = scaler.scale(&loss(&x, &w, 0.25)?)?.backward()?;
    assert!(scaler.step(&mut opt, &grads)?);
    scaler.update();
    let before = w.value().to_vec::<f32>()?;
    // A cotangent of 2 x 65536 exceeds f16's 65504: backward's rounded product overflows to
    // infinity.
    let grads = scaler.scale(&loss(&x, &w, 2.0)?)?.backward()?;
    assert!(!scaler.step(&mut opt, &grads)?);
    scaler.update();
    assert_eq!(w.value().to_vec::<f32>()?, before);
    assert_eq!(scaler.scale_factor(), 32768.0);
    assert_eq!(scaler.state_dict().growth_tracker, 0);
    // At the smaller factor the same loss fits (2 x 32768 = 65536 still overflows f16; 2 x 16384
    // does not): one more backoff, then it steps.
    let grads = scaler.scale(&loss(&x, &w, 2.0)?)?.backward()?;
    assert!(!scaler.step(&mut opt, &grads)?);
    scaler.update();
    let grads = scaler.scale(&loss(&x, &w, 2.0)?)?.backward()?;
    assert!(scaler.step(&mut opt, &grads)?);
    scaler.update();
    assert_eq!(scaler.scale_factor(), 16384.0);
    let after = w.value().to_vec::<f32>()?;
    assert_eq!(after, [before[0] - 0.5, before[1] - 1.0]);
    Ok(())
}

#[test]
fn nan_gradients_are_found_too() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, _, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(GradScalerConfig::default())?;
    // sqrt's gradient at -1 is NaN.
    let l = w.value().sqrt()?.sum_all()?;
    let grads = scaler.scale(&l)?.backward()?;
    assert!(!scaler.step(&mut opt, &grads)?);
    scaler.update();
    assert_eq!(w.value().to_vec::<f32>()?, [0.5, -1.0]);
    assert_eq!(scaler.scale_factor(), 32768.0);
    Ok(())
}

#[test]
fn clipping_between_unscale_and_step() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, x, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(GradScalerConfig::default())?;
    let grads = scaler.scale(&loss(&x, &w, 3.0)?.mul(0.25)?)?.backward()?;
    let mut unscaled = scaler.unscale(&opt, &grads)?;
    // The unscaled gradient is 0.75 x = (0.75, 1.5), norm 1.677...; clipped to norm 1.
    let total = crate::optim::clip_grad_norm(&mut unscaled, 1.0, 2.0)?;
    assert!((total - 0.75 * 5f64.sqrt()).abs() < 1e-6);
    assert!(scaler.step_unscaled(&mut opt, &unscaled)?);
    scaler.update();
    let moved = w.value().to_vec::<f32>()?;
    let (g0, g1) = (1.0 / 5f32.sqrt(), 2.0 / 5f32.sqrt());
    assert!((moved[0] - (0.5 - 0.25 * g0)).abs() < 1e-6);
    assert!((moved[1] - (-1.0 - 0.25 * g1)).abs() < 1e-6);
    Ok(())
}

#[test]
fn a_disabled_scaler_passes_the_loss_through_and_always_steps() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, _, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(GradScalerConfig {
        enabled: false,
        ..Default::default()
    })?;
    let l = w.value().square()?.sum_all()?;
    assert_eq!(scaler.scale(&l)?.to_vec::<f32>()?, l.to_vec::<f32>()?);
    assert_eq!(scaler.scale_factor(), 1.0);
    let grads = scaler.scale(&l)?.backward()?;
    assert!(scaler.step(&mut opt, &grads)?);
    scaler.update();
    // The gradient 2w: w - 0.25 * 2w = w / 2.
    assert_eq!(w.value().to_vec::<f32>()?, [0.25, -0.5]);
    Ok(())
}

#[test]
fn misuse_and_bad_settings_are_errors_naming_what_is_wrong() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, x, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(GradScalerConfig::default())?;
    let grads = scaler.scale(&loss(&x, &w, 0.25)?)?.backward()?;
    let unscaled = scaler.unscale(&opt, &grads)?;
    let twice = scaler.unscale(&opt, &grads).unwrap_err().to_string();
    assert!(twice.contains("already unscaled"), "{twice}");
    assert!(scaler.step_unscaled(&mut opt, &unscaled)?);
    let again = scaler
        .step_unscaled(&mut opt, &unscaled)
        .unwrap_err()
        .to_string();
    assert!(again.contains("unscale()"), "{again}");
    scaler.update();
    let early = scaler
        .step_unscaled(&mut opt, &unscaled)
        .unwrap_err()
        .to_string();
    assert!(early.contains("unscale()"), "{early}");
    let bad = [
        (
            GradScalerConfig {
                init_scale: 0.0,
                ..Default::default()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                init_scale: f64::INFINITY,
                ..Default::default()
            },
            "init_scale",
        ),
        (
            GradScalerConfig {
                growth_factor: 1.0,
                ..Default::default()
            },
            "growth_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: 1.0,
                ..Default::default()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                backoff_factor: f64::NAN,
                ..Default::default()
            },
            "backoff_factor",
        ),
        (
            GradScalerConfig {
                growth_interval: 0,
                ..Default::default()
            },
            "growth_interval",
        ),
    ];
    for (config, name) in bad {
        let err = GradScaler::new(config).unwrap_err().to_string();
        assert!(err.contains(name) && err.contains("GradScaler"), "{err}");
    }
    Ok(())
}

#[test]
fn the_state_round_trips_and_a_bad_state_changes_nothing() -> Result<()> {
    let cpu = CpuBackend::new();
    let (w, x, mut opt) = setup(&cpu);
    let mut scaler = GradScaler::new(config(5))?;
    let grads = scaler.scale(&loss(&x, &w, 0.25)?)?.backward()?;
    scaler.step(&mut opt, &grads)?;
    scaler.update();
    let saved = scaler.state_dict();
    assert_eq!(saved.growth_tracker, 1);
    let mut other = GradScaler::new(GradScalerConfig::default())?;
    other.load_state_dict(&saved)?;
    assert_eq!(other.state_dict(), saved);
    let broken = GradScalerState {
        scale: -1.0,
        ..saved
    };
    assert!(other.load_state_dict(&broken).is_err());
    assert_eq!(other.state_dict(), saved);
    let counted_past = GradScalerState {
        growth_tracker: 5,
        ..saved
    };
    let err = other
        .load_state_dict(&counted_past)
        .unwrap_err()
        .to_string();
    assert!(err.contains("growth_tracker"), "{err}");
    assert_eq!(other.state_dict(), saved);
    Ok(())
}
