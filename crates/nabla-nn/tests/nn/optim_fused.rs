//! The optimizer step fused into backward (`Optimizer::backward_step`) and in-place parameter updates
//! (`Param::update_with`): the same values as the step after backward, bit for bit, buffers reused only
//! when nothing else can see them.

use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::ReLU;
use nabla_nn::loss::{self, CrossEntropyOptions};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use nabla_nn::{Forward, Linear, Module, Param, Sequential};
use nabla_tensor::Tensor;

type Net = (Sequential<CpuBackend>, Linear<CpuBackend>);

/// An MLP whose hidden layer `shared` is applied twice (its gradient gathers two contributions).
fn net(cpu: &CpuBackend) -> Result<Net> {
    let rng = &mut Generator::new(3);
    let shared = Linear::new(16, 16, true, DType::F32, rng, cpu)?;
    let model = Sequential::new()
        .push(Linear::new(8, 16, true, DType::F32, rng, cpu)?)
        .push(ReLU)
        .push(shared.clone())
        .push(ReLU)
        .push(shared.clone())
        .push(Linear::new(16, 4, true, DType::F32, rng, cpu)?);
    Ok((model, shared))
}

fn batch(cpu: &CpuBackend) -> Result<(Tensor<CpuBackend>, Tensor<CpuBackend>)> {
    let x = Tensor::randn([32, 8], DType::F32, &mut Generator::new(5), cpu)?;
    let y = Tensor::from_vec((0..32i64).map(|i| i % 4).collect::<Vec<_>>(), [32], cpu)?;
    Ok((x, y))
}

fn values(model: &Sequential<CpuBackend>) -> Result<Vec<Vec<f32>>> {
    model
        .parameters()
        .iter()
        .map(|p| p.data().to_vec())
        .collect()
}

/// Trains two copies of the network for a few steps, one with `step(&backward())` and one with
/// `backward_step`, with optimizers made by `make`, and checks they stay identical.
fn fused_matches_separate(
    make: impl Fn(&Sequential<CpuBackend>) -> Result<Box<dyn Optimizer<CpuBackend>>>,
) -> Result<()> {
    let cpu = CpuBackend::new();
    let (x, y) = batch(&cpu)?;
    let ((separate, _), (fused, _)) = (net(&cpu)?, net(&cpu)?);
    // One parameter frozen in both: neither path may touch it.
    separate.parameters()[1].freeze();
    fused.parameters()[1].freeze();
    let (mut opt_s, mut opt_f) = (make(&separate)?, make(&fused)?);
    let options = CrossEntropyOptions::default();
    for _ in 0..5 {
        let loss_s = loss::cross_entropy(&separate.forward(&x)?, &y, &options)?;
        opt_s.step(&loss_s.backward()?)?;
        let loss_f = loss::cross_entropy(&fused.forward(&x)?, &y, &options)?;
        opt_f.backward_step(&loss_f)?;
        assert_eq!(loss_s.item::<f32>()?, loss_f.item::<f32>()?);
    }
    assert_eq!(values(&separate)?, values(&fused)?);
    let (before, after) = (net(&cpu)?.0.parameters(), fused.parameters());
    assert_eq!(
        before[1].data().to_vec::<f32>()?,
        after[1].data().to_vec::<f32>()?
    );
    assert_ne!(
        before[0].data().to_vec::<f32>()?,
        after[0].data().to_vec::<f32>()?
    );
    Ok(())
}

#[test]
fn backward_step_matches_the_step_after_backward() -> Result<()> {
    // Adam, then AdamW with AMSGrad on a second group, then SGD with momentum and Nesterov.
    fused_matches_separate(|m| Ok(Box::new(Adam::new(m.parameters(), AdamConfig::default())?)))?;
    fused_matches_separate(|m| {
        let params = m.parameters();
        let mut opt = Adam::new(params[..4].to_vec(), AdamConfig::default())?;
        let adamw = AdamConfig {
            amsgrad: true,
            ..AdamConfig::adamw()
        };
        opt.add_param_group(params[4..].to_vec(), adamw)?;
        Ok(Box::new(opt))
    })?;
    fused_matches_separate(|m| {
        let sgd = SgdConfig {
            lr: 0.1,
            momentum: 0.9,
            nesterov: true,
            ..Default::default()
        };
        Ok(Box::new(Sgd::new(m.parameters(), sgd)?))
    })
}

/// The address of a parameter's buffer.
fn address(p: &Param<CpuBackend>) -> usize {
    p.data().storage().typed::<f32>("test").unwrap().as_ptr() as usize
}

#[test]
fn adam_updates_in_place_only_what_nothing_else_holds() -> Result<()> {
    let cpu = CpuBackend::new();
    let (x, y) = batch(&cpu)?;
    let (model, shared) = net(&cpu)?;
    let mut opt = Adam::new(model.parameters(), AdamConfig::default())?;
    let options = CrossEntropyOptions::default();
    let mut step = || -> Result<()> {
        let loss = loss::cross_entropy(&model.forward(&x)?, &y, &options)?;
        opt.backward_step(&loss)
    };
    step()?;
    let weight = shared.parameters()[0].clone();
    let at = address(&weight);
    step()?;
    assert_eq!(
        address(&weight),
        at,
        "the update should reuse the weight's buffer"
    );
    // A handle held outside keeps its values: the update writes a new buffer instead.
    let held = weight.data();
    let old = held.to_vec::<f32>()?;
    step()?;
    assert_eq!(held.to_vec::<f32>()?, old);
    assert_ne!(weight.data().to_vec::<f32>()?, old);
    assert_ne!(address(&weight), at);
    Ok(())
}

#[test]
fn a_failed_update_is_an_error_and_leaves_nan() -> Result<()> {
    let cpu = CpuBackend::new();
    let w = Param::new(Tensor::from_vec(vec![1.0f32, 2.0], [2], &cpu)?)?;
    let err = w
        .update_with(|v| v.reshape([1, 2]))
        .expect_err("a new value of another shape is refused");
    assert!(err.to_string().contains("[1, 2]"), "{err}");
    assert_eq!(w.shape(), [2]);
    assert!(w.data().to_vec::<f32>()?.iter().all(|v| v.is_nan()));
    let err = w
        .update_with(|v| v.cast(DType::F64))
        .expect_err("a new value of another dtype is refused");
    assert!(err.to_string().contains("float64"), "{err}");
    // The parameter is usable again once given values, and still a graph leaf.
    w.set(Tensor::from_vec(vec![3.0f32, 4.0], [2], &cpu)?)?;
    w.update_with(|v| v.add(1.0))?;
    let grads = w.value().sum_all()?.backward()?;
    assert_eq!(w.grad(&grads).unwrap().to_vec::<f32>()?, vec![1.0, 1.0]);
    assert_eq!(w.data().to_vec::<f32>()?, vec![4.0, 5.0]);
    Ok(())
}
