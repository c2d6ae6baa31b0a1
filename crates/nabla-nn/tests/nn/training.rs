//! End-to-end training: an MLP learns XOR, a small CNN overfits a batch, and a run resumed from a
//! checkpoint continues exactly as the uninterrupted run.

use nabla_core::{Backend, DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::activation::{Flatten, ReLU, Tanh};
use nabla_nn::loss::{self, BceWithLogitsOptions, CrossEntropyOptions};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use nabla_nn::{
    Conv2d, ConvOptions, Forward, Linear, MaxPool2d, Module, Sequential, TrainingState,
    load_checkpoint, save_checkpoint,
};
use nabla_tensor::Tensor;

fn mlp(hidden: usize, rng: &mut Generator, cpu: &CpuBackend) -> Result<Sequential<CpuBackend>> {
    Ok(Sequential::new()
        .push(Linear::new(2, hidden, true, DType::F32, rng, cpu)?)
        .push(Tanh)
        .push(Linear::new(hidden, 1, true, DType::F32, rng, cpu)?))
}

#[test]
fn an_mlp_learns_xor() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(0);
    let model = mlp(8, &mut rng, &cpu)?;
    let x = Tensor::from_vec(vec![0f32, 0., 0., 1., 1., 0., 1., 1.], [4, 2], &cpu)?;
    let y = Tensor::from_vec(vec![0f32, 1., 1., 0.], [4, 1], &cpu)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let options = BceWithLogitsOptions::default();
    let mut last = f32::INFINITY;
    for _ in 0..300 {
        let loss = loss::binary_cross_entropy_with_logits(&model.forward(&x)?, &y, &options)?;
        last = loss.item::<f32>()?;
        opt.step(&loss.backward()?)?;
    }
    assert!(last < 0.05, "final loss {last}");
    let predictions = model.forward(&x)?.sigmoid()?.to_vec::<f32>()?;
    for (p, want) in predictions.iter().zip([0.0, 1.0, 1.0, 0.0]) {
        assert!((p - want).abs() < 0.2, "{predictions:?}");
    }
    Ok(())
}

#[test]
fn a_small_cnn_overfits_a_batch() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(1);
    let model = Sequential::new()
        .push(Conv2d::new(
            1,
            6,
            (3, 3),
            ConvOptions {
                padding: (1, 1),
                ..Default::default()
            },
            DType::F32,
            &mut rng,
            &cpu,
        )?)
        .push(ReLU)
        .push(MaxPool2d::new((2, 2), None, (0, 0), (1, 1), false)?)
        .push(Flatten::default())
        .push(Linear::new(6 * 4 * 4, 4, true, DType::F32, &mut rng, &cpu)?);
    let images = Tensor::randn([16, 1, 8, 8], DType::F32, &mut rng, &cpu)?;
    let labels = Tensor::from_vec((0..16).map(|i| (i * 7 % 4) as i64).collect(), [16], &cpu)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 0.01,
            ..Default::default()
        },
    )?;
    let options = CrossEntropyOptions::default();
    let mut last = f32::INFINITY;
    for _ in 0..150 {
        let loss = loss::cross_entropy(&model.forward(&images)?, &labels, &options)?;
        last = loss.item::<f32>()?;
        opt.step(&loss.backward()?)?;
    }
    assert!(last < 0.05, "final loss {last}");
    let predicted = model.forward(&images)?.argmax(1, false)?.to_vec::<i64>()?;
    assert_eq!(predicted, labels.to_vec::<i64>()?);
    Ok(())
}

/// One epoch of minibatch SGD over shuffled data: the order comes from `rng`, so a resumed run must
/// restore the generator to draw the same batches.
fn train_epoch<B: Backend>(
    model: &Sequential<B>,
    opt: &mut dyn Optimizer<B>,
    data: (&Tensor<B>, &Tensor<B>),
    rng: &mut Generator,
) -> Result<()> {
    let n = data.0.shape()[0];
    let order = Tensor::rand([n], DType::F64, rng, data.0.backend())?.argsort(0, false)?;
    for start in (0..n).step_by(4) {
        let idx = order.narrow(0, start, 4.min(n - start))?;
        let (x, y) = (data.0.index_select(0, &idx)?, data.1.index_select(0, &idx)?);
        let loss = loss::mse_loss(&model.forward(&x)?, &y, loss::Reduction::Mean)?;
        opt.step(&loss.backward()?)?;
    }
    Ok(())
}

#[test]
fn a_resumed_run_continues_exactly_as_the_uninterrupted_one() -> Result<()> {
    let cpu = CpuBackend::new();
    let mut data_rng = Generator::new(2);
    let x = Tensor::randn([12, 2], DType::F32, &mut data_rng, &cpu)?;
    let y = x.sum(&[1], true)?.sin()?;
    let sgd = || SgdConfig {
        lr: 0.1,
        momentum: 0.9,
        nesterov: true,
        weight_decay: 1e-3,
        ..Default::default()
    };

    // Uninterrupted: four epochs.
    let model = mlp(5, &mut Generator::new(3), &cpu)?;
    let mut opt = Sgd::new(model.parameters(), sgd())?;
    let mut rng = Generator::new(4);
    for _ in 0..4 {
        train_epoch(&model, &mut opt, (&x, &y), &mut rng)?;
    }

    // Interrupted after two epochs, saved, and resumed into a differently initialised model.
    let path =
        std::env::temp_dir().join(format!("nabla-resume-{}.safetensors", std::process::id()));
    {
        let first = mlp(5, &mut Generator::new(3), &cpu)?;
        let mut opt = Sgd::new(first.parameters(), sgd())?;
        let mut rng = Generator::new(4);
        for _ in 0..2 {
            train_epoch(&first, &mut opt, (&x, &y), &mut rng)?;
        }
        let state = TrainingState {
            epoch: 2,
            step: 6,
            rng: Some(rng),
            extra: serde_json::json!({"note": "halfway"}),
        };
        save_checkpoint(&path, &first, Some(&opt), &state)?;
    }
    let resumed = mlp(5, &mut Generator::new(99), &cpu)?;
    let mut opt2 = Sgd::new(resumed.parameters(), sgd())?;
    let state = load_checkpoint(&path, &resumed, Some(&mut opt2), &cpu)?;
    assert_eq!((state.epoch, state.step), (2, 6));
    assert_eq!(state.extra["note"], "halfway");
    let mut rng = state.rng.expect("the generator was saved");
    for _ in state.epoch..4 {
        train_epoch(&resumed, &mut opt2, (&x, &y), &mut rng)?;
    }
    for ((name, a), (_, b)) in model.state_dict().iter().zip(resumed.state_dict()) {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?, "{name}");
    }
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn a_checkpoint_that_does_not_fit_changes_nothing() -> Result<()> {
    let cpu = CpuBackend::new();
    let path =
        std::env::temp_dir().join(format!("nabla-misfit-{}.safetensors", std::process::id()));
    let small = mlp(3, &mut Generator::new(5), &cpu)?;
    save_checkpoint(&path, &small, None, &TrainingState::default())?;
    let big = mlp(4, &mut Generator::new(6), &cpu)?;
    let before = big.state_dict();
    let err = load_checkpoint(&path, &big, None, &cpu)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("0.weight: expected [4, 2], got [3, 2]"),
        "{err}"
    );
    for ((_, a), (_, b)) in before.iter().zip(big.state_dict()) {
        assert_eq!(a.to_vec::<f32>()?, b.to_vec::<f32>()?);
    }
    // No optimizer state in the file, but one asked for: an error, and again nothing changes.
    let mut opt = Sgd::new(small.parameters(), SgdConfig::default())?;
    let err = load_checkpoint(&path, &small, Some(&mut opt), &cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no optimizer state"), "{err}");
    // A plain state dict is not a checkpoint.
    nabla_nn::save_module(&small, &path)?;
    let err = load_checkpoint(&path, &small, None, &cpu)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not a nabla checkpoint"), "{err}");
    std::fs::remove_file(&path).ok();
    Ok(())
}
