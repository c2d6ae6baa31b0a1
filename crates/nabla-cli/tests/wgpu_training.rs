//! Training on wgpu through the run-time backend the CLI uses: each model of `nabla train` (built by
//! the CLI's own `models` module) takes the same optimizer steps on `AnyBackend`'s wgpu device and on
//! its CPU from the same seed, and the two loss curves agree; tensors move between the devices and
//! back.
//!
//! Without a wgpu adapter the tests skip with a message, unless `CI=true` (then they fail).

#[allow(dead_code)]
#[path = "../src/models.rs"]
mod models;

use models::{ModelKind, build_model};
use nabla_any::AnyBackend;
use nabla_core::{Backend, DType, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{DataLoader, Digits};
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer};
use nabla_nn::{Forward, Module};
use nabla_tensor::Tensor;

/// Optimizer steps compared for the default model (each takes several seconds on Mesa's software
/// adapter today); the other models take two.
const STEPS: usize = 3;

/// The largest relative difference allowed between the two loss curves.
const TOLERANCE: f64 = 1e-3;

/// The wgpu backend, or `None` after a message when there is no adapter (a failure with `CI=true`).
fn gpu() -> Option<AnyBackend> {
    match AnyBackend::wgpu() {
        Ok(gpu) => Some(gpu),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!(
                "CI=true but no wgpu adapter was found (install mesa-vulkan-drivers and libvulkan1): {e}"
            )
        }
        Err(e) => {
            eprintln!("no wgpu adapter, skipping the wgpu training test: {e}");
            None
        }
    }
}

/// The losses of the first `steps` Adam steps (the CLI's defaults: lr 0.003, batches of 32
/// shuffled with seed 0) of model `kind` initialised from seed 0, trained on `backend` with the
/// digits loaded on the CPU.
fn loss_curve<B: Backend>(kind: ModelKind, steps: usize, backend: &B) -> Result<Vec<f64>> {
    let cpu = CpuBackend::new();
    let (train, _) = Digits::load(&cpu)?.train_test_split(0.2, 0)?;
    let model = build_model(kind, &[1, 8, 8], 10, 0, backend)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 3e-3,
            ..Default::default()
        },
    )?;
    let mut loader = DataLoader::new(train, 32)?.shuffle(true).seed(0);
    let options = CrossEntropyOptions::default();
    let mut losses = Vec::with_capacity(steps);
    for batch in loader.iter().take(steps) {
        let batch = batch?;
        let x = batch[0].to_backend(backend)?;
        let y = batch[1].to_backend(backend)?;
        let loss = cross_entropy(&model.forward(&x)?, &y, &options)?;
        let grads = loss.backward()?;
        opt.step(&grads)?;
        losses.push(f64::from(loss.detach().item::<f32>()?));
    }
    Ok(losses)
}

/// Trains `kind` for `steps` steps on `gpu` and on the CPU and checks that the loss curves agree.
fn trains_like_on_the_cpu(gpu: &AnyBackend, kind: ModelKind, steps: usize) -> Result<()> {
    let t0 = std::time::Instant::now();
    let on_gpu = loss_curve(kind, steps, gpu)?;
    let gpu_seconds = t0.elapsed().as_secs_f64();
    let on_cpu = loss_curve(kind, steps, &AnyBackend::cpu())?;
    assert_eq!(on_gpu.len(), steps);
    let mut worst = 0.0f64;
    for (step, (g, c)) in on_gpu.iter().zip(&on_cpu).enumerate() {
        let rel = (g - c).abs() / c.abs().max(1e-12);
        worst = worst.max(rel);
        assert!(
            rel <= TOLERANCE,
            "{kind:?} step {step}: loss {g} on wgpu but {c} on the CPU (relative difference {rel:.2e})"
        );
    }
    eprintln!(
        "{kind:?}, {steps} steps on {:?}: losses {:.6} .. {:.6} (CPU {:.6} .. {:.6}), largest relative difference {worst:.2e}, {gpu_seconds:.2}s",
        gpu.device(),
        on_gpu[0],
        on_gpu[steps - 1],
        on_cpu[0],
        on_cpu[steps - 1]
    );
    assert!(on_gpu.iter().all(|l| l.is_finite()), "{on_gpu:?}");
    Ok(())
}

#[test]
fn default_model_trains_on_wgpu_like_on_the_cpu() -> Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    trains_like_on_the_cpu(&gpu, ModelKind::Cnn, STEPS)
}

/// The MLP and the residual network (batch norm, adaptive average pooling) too: the residual
/// network once failed on wgpu, whose buffers hold no f64, when its pooling table was built in f64.
#[test]
fn mlp_and_resnet_train_on_wgpu_like_on_the_cpu() -> Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    trains_like_on_the_cpu(&gpu, ModelKind::Mlp, 2)?;
    trains_like_on_the_cpu(&gpu, ModelKind::Resnet, 2)
}

#[test]
fn a_wgpu_tensor_moves_to_the_cpu_and_back() -> Result<()> {
    let Some(gpu) = gpu() else { return Ok(()) };
    let cpu = AnyBackend::cpu();
    let x = Tensor::arange(0.0, 6.0, 1.0, DType::F32, &cpu)?.reshape([2, 3])?;
    let on_gpu = x.to_backend(&gpu)?;
    assert_eq!(on_gpu.backend().device().kind, "wgpu");
    let back = (&on_gpu + 1.0)?.to_backend(&cpu)?;
    assert_eq!(back.shape(), &[2, 3]);
    assert_eq!(back.to_vec::<f32>()?, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    Ok(())
}
