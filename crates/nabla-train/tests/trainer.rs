//! The Trainer on tiny synthetic data: learning, logs and plot, early stopping, and exact resume.

use nabla_core::{DType, Error, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{DataLoader, Dataset, TensorDataset};
use nabla_nn::activation::ReLU;
use nabla_nn::optim::{Adam, AdamConfig, Sgd, SgdConfig};
use nabla_nn::sched::StepLR;
use nabla_nn::{Linear, Module, Sequential};
use nabla_tensor::Tensor;
use nabla_train::{
    EarlyStopping, Monitor, SchedulerInterval, Trainer, TrainerConfig, checkpoint_metadata,
};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

type Cpu = CpuBackend;

/// 60 points in 4-D around three well-separated centres, labels 0..3.
fn blobs(seed: u64) -> Result<TensorDataset<Cpu>> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(seed);
    let noise = Tensor::randn([60, 4], DType::F32, &mut rng, &cpu)?.to_vec::<f32>()?;
    let mut x = Vec::with_capacity(240);
    let mut y = Vec::with_capacity(60);
    for i in 0..60 {
        let class = i % 3;
        for j in 0..4 {
            let centre = if j == class { 3.0 } else { 0.0 };
            x.push(centre + 0.5 * noise[i * 4 + j]);
        }
        y.push(class as i64);
    }
    TensorDataset::new(vec![
        Tensor::from_vec(x, [60, 4], &cpu)?,
        Tensor::from_vec(y, [60], &cpu)?,
    ])
}

fn mlp(seed: u64) -> Result<Sequential<Cpu>> {
    let cpu = CpuBackend::new();
    let mut rng = Generator::new(seed);
    Ok(Sequential::new()
        .push(Linear::new(4, 16, true, DType::F32, &mut rng, &cpu)?)
        .push(ReLU)
        .push(Linear::new(16, 3, true, DType::F32, &mut rng, &cpu)?))
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("nabla-train-{}-{name}", std::process::id()))
}

fn quiet(epochs: u64) -> TrainerConfig {
    TrainerConfig {
        epochs,
        progress: false,
        ..Default::default()
    }
}

#[test]
fn learns_blobs_and_writes_log_and_plot() -> Result<()> {
    let model = mlp(0)?;
    let opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 0.05,
            ..Default::default()
        },
    )?;
    let (csv, jsonl, svg) = (temp("log.csv"), temp("log.jsonl"), temp("plot.svg"));
    let config = TrainerConfig {
        log: Some(csv.clone()),
        plot: Some(svg.clone()),
        ..quiet(5)
    };
    let mut trainer = Trainer::new(model, Box::new(opt), config)?;
    let mut train = DataLoader::new(blobs(1)?, 8)?.shuffle(true).seed(3);
    let mut val = DataLoader::new(blobs(2)?, 32)?;
    let history = trainer.fit(&mut train, Some(&mut val))?.clone();
    assert_eq!(history.epochs.len(), 5);
    let last = history
        .last()
        .ok_or_else(|| Error::invalid("test", "no epochs"))?;
    assert!(last.val_accuracy.unwrap_or(0.0) >= 0.95, "{last:?}");
    assert_eq!(last.val_top_k_accuracy, Some(1.0)); // top-5 of 3 classes
    assert!(history.epochs[0].train_loss > last.train_loss);
    assert_eq!(last.step, 5 * 8);
    let log = std::fs::read_to_string(&csv).map_err(|e| Error::invalid("test", e.to_string()))?;
    assert_eq!(log.lines().count(), 6);
    assert!(log.starts_with("epoch,step,lr,train_loss"));
    let plot = std::fs::read_to_string(&svg).map_err(|e| Error::invalid("test", e.to_string()))?;
    assert_eq!(plot.matches("<polyline").count(), 4);
    history.write_log(&jsonl)?;
    let jl = std::fs::read_to_string(&jsonl).map_err(|e| Error::invalid("test", e.to_string()))?;
    assert_eq!(jl.lines().count(), 5);

    let cm_acc = trainer.evaluate(&mut val, Some(3))?;
    let cm = cm_acc
        .confusion()
        .ok_or_else(|| Error::invalid("test", "no matrix"))?;
    assert_eq!(cm.total(), 60);
    assert_eq!(cm.accuracy(), cm_acc.accuracy());
    for p in [csv, jsonl, svg] {
        std::fs::remove_file(p).ok();
    }
    Ok(())
}

#[test]
fn early_stopping_ends_a_run_that_does_not_improve() -> Result<()> {
    let model = mlp(0)?;
    // A zero learning rate: the validation loss never moves.
    let opt = Sgd::new(
        model.parameters(),
        SgdConfig {
            lr: 0.0,
            ..Default::default()
        },
    )?;
    let config = TrainerConfig {
        early_stopping: Some(EarlyStopping {
            monitor: Monitor::ValLoss,
            patience: 2,
            min_delta: 0.0,
        }),
        ..quiet(10)
    };
    let mut trainer = Trainer::new(model, Box::new(opt), config)?;
    let mut train = DataLoader::new(blobs(1)?, 16)?;
    let mut val = DataLoader::new(blobs(2)?, 32)?;
    assert_eq!(trainer.fit(&mut train, Some(&mut val))?.epochs.len(), 3);
    assert!(trainer.stopped_early());
    // Without a validation loader early stopping is refused.
    let none: Option<&mut DataLoader<TensorDataset<Cpu>, Vec<Tensor<Cpu>>>> = None;
    assert!(trainer.fit(&mut train, none).is_err());
    Ok(())
}

/// A data set that fails once `limit` examples have been read: a crash in the middle of an epoch.
struct Crashing {
    inner: TensorDataset<Cpu>,
    reads: Arc<AtomicUsize>,
    limit: usize,
}

impl Dataset for Crashing {
    type Item = Vec<Tensor<Cpu>>;
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn get(&self, i: usize) -> Result<Self::Item> {
        if self.reads.fetch_add(1, Ordering::SeqCst) >= self.limit {
            return Err(Error::invalid("Crashing", "simulated crash"));
        }
        self.inner.get(i)
    }
}

/// A trainer with Adam and a per-step StepLR, checkpointing to `path` every 3 steps.
fn resumable(path: &std::path::Path, epochs: u64) -> Result<Trainer<Cpu, Sequential<Cpu>>> {
    let model = mlp(7)?;
    let mut opt = Adam::new(
        model.parameters(),
        AdamConfig {
            lr: 0.02,
            ..Default::default()
        },
    )?;
    let sched = StepLR::new(&mut opt, 5, 0.7)?;
    let config = TrainerConfig {
        checkpoint: Some(path.to_path_buf()),
        checkpoint_every: Some(3),
        metadata: json!({"model": "mlp", "input_shape": [4]}),
        ..quiet(epochs)
    };
    Ok(Trainer::new(model, Box::new(opt), config)?
        .with_scheduler(Box::new(sched), SchedulerInterval::Step))
}

fn bits(model: &Sequential<Cpu>) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for (_, t) in model.state_dict() {
        out.extend(t.to_vec::<f32>()?.into_iter().map(f32::to_bits));
    }
    Ok(out)
}

#[test]
fn two_epochs_then_resume_equals_four_straight_bit_for_bit() -> Result<()> {
    let cpu = CpuBackend::new();
    let loader = || -> Result<_> { Ok(DataLoader::new(blobs(1)?, 8)?.shuffle(true).seed(11)) };
    let val = || -> Result<_> { DataLoader::new(blobs(2)?, 32) };

    let straight_path = temp("straight.safetensors");
    let mut straight = resumable(&straight_path, 4)?;
    let want = straight.fit(&mut loader()?, Some(&mut val()?))?.clone();
    let want_bits = bits(straight.model())?;

    // Two epochs, then a fresh process (new trainer, new loader) resumes to four.
    let path = temp("resume.safetensors");
    let mut first = resumable(&path, 2)?;
    first.fit(&mut loader()?, Some(&mut val()?))?;
    assert_eq!(checkpoint_metadata(&path)?["model"], "mlp");
    let mut second = resumable(&path, 4)?;
    let state = second.resume(&path, &cpu)?;
    assert_eq!((state.epoch, state.step), (2, 16));
    let mut train = second.restore_loader(loader()?);
    let got = second.fit(&mut train, Some(&mut val()?))?.clone();
    assert_eq!(bits(second.model())?, want_bits);
    assert_eq!(got.epochs.len(), 4);
    for (a, b) in got.epochs.iter().zip(&want.epochs) {
        assert_eq!(
            (a.train_loss, a.val_loss, a.lr),
            (b.train_loss, b.val_loss, b.lr)
        );
    }

    // A crash in the middle of epoch 3 (after the checkpoint at step 21), then resume.
    let crash_path = temp("crash.safetensors");
    let mut crashing = resumable(&crash_path, 4)?;
    let reads = Arc::new(AtomicUsize::new(0));
    let data = Crashing {
        inner: blobs(1)?,
        reads: Arc::clone(&reads),
        limit: 60 * 2 + 8 * 6,
    };
    let mut crash_loader = DataLoader::new(data, 8)?.shuffle(true).seed(11);
    assert!(crashing.fit(&mut crash_loader, Some(&mut val()?)).is_err());
    let mut after = resumable(&crash_path, 4)?;
    let state = after.resume(&crash_path, &cpu)?;
    assert_eq!((state.epoch, state.step), (2, 21));
    let mut train = after.restore_loader(loader()?);
    let got = after.fit(&mut train, Some(&mut val()?))?.clone();
    assert_eq!(bits(after.model())?, want_bits);
    assert_eq!(
        got.epochs.iter().map(|e| e.train_loss).collect::<Vec<_>>(),
        want.epochs.iter().map(|e| e.train_loss).collect::<Vec<_>>()
    );

    // Resuming without restoring the loader's generator is refused.
    let mut wrong = resumable(&path, 6)?;
    wrong.resume(&path, &cpu)?;
    assert!(
        wrong
            .fit(&mut loader()?.seed(99), Some(&mut val()?))
            .is_err()
    );
    for p in [straight_path, path, crash_path] {
        std::fs::remove_file(p).ok();
    }
    Ok(())
}

/// The error that ends a run of SGD with an absurd learning rate (the weights overflow within a few
/// steps) under `config`.
fn diverged_run(config: TrainerConfig) -> Result<Error> {
    let model = mlp(0)?;
    let opt = Sgd::new(
        model.parameters(),
        SgdConfig {
            lr: 1e25,
            ..Default::default()
        },
    )?;
    let mut trainer = Trainer::new(model, Box::new(opt), config)?;
    let mut train = DataLoader::new(blobs(1)?, 8)?;
    let no_validation = None::<&mut DataLoader<TensorDataset<Cpu>, Vec<Tensor<Cpu>>>>;
    match trainer.fit(&mut train, no_validation) {
        Ok(_) => Err(Error::invalid("test", "the diverging run finished")),
        Err(e) => Ok(e),
    }
}

/// Three epochs that save a checkpoint at `path` after every step.
fn saving_every_step(path: &std::path::Path) -> TrainerConfig {
    TrainerConfig {
        checkpoint: Some(path.to_path_buf()),
        checkpoint_every: Some(1),
        ..quiet(3)
    }
}

#[test]
fn a_diverged_run_stops_with_an_error_and_saves_no_nan_weights() -> Result<()> {
    let path = temp("diverged.safetensors");
    std::fs::remove_file(&path).ok();
    let err = diverged_run(saving_every_step(&path))?;
    assert!(matches!(err, Error::NonFinite { .. }), "{err}");
    let text = err.to_string();
    assert!(text.contains("diverged"), "{text}");
    // Whatever was saved before the divergence holds finite weights only.
    if path.exists() {
        let model = mlp(5)?;
        nabla_nn::load_checkpoint(&path, &model, None, &CpuBackend::new())?;
        for (name, p) in model.named_parameters() {
            let finite = p.data().isfinite()?.all(&[], false)?.item::<bool>()?;
            assert!(finite, "{name} was saved non-finite");
        }
    }
    std::fs::remove_file(&path).ok();
    Ok(())
}

#[test]
fn anomaly_detection_names_the_op_where_the_run_diverged() -> Result<()> {
    let config = TrainerConfig {
        detect_anomaly: true,
        ..quiet(3)
    };
    let err = diverged_run(config)?;
    let Error::NonFinite { op, message } = &err else {
        panic!("expected NonFinite, got {err}");
    };
    assert_ne!(*op, "training loss", "{message}");
    assert_ne!(*op, "checkpoint", "{message}");
    Ok(())
}

/// The bytes of the file at `path`.
fn read(path: &std::path::Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| Error::invalid("test", format!("{}: {e}", path.display())))
}

#[test]
fn a_diverged_run_keeps_the_last_good_checkpoint() -> Result<()> {
    let path = temp("good.safetensors");
    let mut good = resumable(&path, 1)?;
    good.fit(
        &mut DataLoader::new(blobs(1)?, 8)?,
        Some(&mut DataLoader::new(blobs(2)?, 32)?),
    )?;
    let before = read(&path)?;
    // The first step's loss is finite, but the weights it leaves (about 1e25) give no finite loss.
    let err = diverged_run(saving_every_step(&path))?;
    assert!(matches!(err, Error::NonFinite { .. }), "{err}");
    assert!(err.to_string().contains("diverged"), "{err}");
    assert!(read(&path)? == before, "the good checkpoint was replaced");
    std::fs::remove_file(&path).ok();
    Ok(())
}

/// The header length of the safetensors file at `path`.
fn header_len(path: &std::path::Path) -> Result<u64> {
    let bytes = read(path)?;
    let len: [u8; 8] = bytes[..8].try_into().expect("8 bytes");
    Ok(u64::from_le_bytes(len))
}

#[test]
fn the_checkpoint_header_does_not_grow_with_the_history() -> Result<()> {
    let header_after = |epochs: u64| -> Result<u64> {
        let path = temp(&format!("history-{epochs}.safetensors"));
        let mut trainer = resumable(&path, epochs)?;
        trainer.fit(
            &mut DataLoader::new(blobs(1)?, 8)?,
            Some(&mut DataLoader::new(blobs(2)?, 32)?),
        )?;
        let len = header_len(&path);
        std::fs::remove_file(&path).ok();
        len
    };
    let (one, six) = (header_after(1)?, header_after(6)?);
    // Only the numbers of the position (epoch, step, generator counter) may get longer.
    assert!(six < one + 16, "the header grew from {one} to {six} bytes");
    Ok(())
}

#[cfg(unix)]
#[test]
fn outputs_never_go_through_links_nor_replace_foreign_files() -> Result<()> {
    let victim = temp("victim.txt");
    std::fs::write(&victim, "precious").map_err(|e| Error::invalid("test", e.to_string()))?;
    let new_trainer = |config: TrainerConfig| -> Result<()> {
        let model = mlp(0)?;
        let opt = Sgd::new(model.parameters(), SgdConfig::default())?;
        Trainer::new(model, Box::new(opt), config).map(drop)
    };
    let link = |name: &str| -> Result<PathBuf> {
        let link = temp(name);
        std::fs::remove_file(&link).ok();
        std::os::unix::fs::symlink(&victim, &link)
            .map_err(|e| Error::invalid("test", e.to_string()))?;
        Ok(link)
    };
    let (log, plot, ckpt) = (link("link.csv")?, link("link.svg")?, link("link.ckpt")?);
    for config in [
        TrainerConfig {
            log: Some(log.clone()),
            ..quiet(1)
        },
        TrainerConfig {
            plot: Some(plot.clone()),
            ..quiet(1)
        },
        TrainerConfig {
            checkpoint: Some(ckpt.clone()),
            ..quiet(1)
        },
    ] {
        let err = new_trainer(config).unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
    }
    // A file nabla did not write is not replaced.
    for config in [
        TrainerConfig {
            log: Some(victim.with_extension("csv")),
            ..quiet(1)
        },
        TrainerConfig {
            plot: Some(victim.with_extension("svg")),
            ..quiet(1)
        },
        TrainerConfig {
            checkpoint: Some(victim.clone()),
            ..quiet(1)
        },
    ] {
        for path in [victim.with_extension("csv"), victim.with_extension("svg")] {
            std::fs::write(&path, "precious").map_err(|e| Error::invalid("test", e.to_string()))?;
        }
        let err = new_trainer(config.clone()).unwrap_err().to_string();
        assert!(err.contains("overwrite"), "{err}");
        new_trainer(TrainerConfig {
            overwrite: true,
            ..config
        })?;
    }
    assert_eq!(read(&victim)?, b"precious");
    for p in [victim.clone(), log, plot, ckpt] {
        std::fs::remove_file(p).ok();
    }
    for ext in ["csv", "svg"] {
        std::fs::remove_file(victim.with_extension(ext)).ok();
    }
    Ok(())
}

/// One epoch of plain SGD over the blobs (not shuffled) in batches of `batch`, accumulating `k`
/// batches per step: the trained weights and the number of steps.
fn accumulated_run(batch: usize, k: usize) -> Result<(Vec<f32>, u64)> {
    let model = mlp(0)?;
    let opt = Sgd::new(
        model.parameters(),
        SgdConfig {
            lr: 0.1,
            ..Default::default()
        },
    )?;
    let config = TrainerConfig {
        accumulate_grad_batches: k,
        ..quiet(1)
    };
    let mut trainer = Trainer::new(model, Box::new(opt), config)?;
    let mut train = DataLoader::new(blobs(1)?, batch)?;
    trainer.fit(
        &mut train,
        None::<&mut DataLoader<TensorDataset<Cpu>, Vec<Tensor<Cpu>>>>,
    )?;
    let weights = trainer
        .model()
        .parameters()
        .iter()
        .map(|p| p.value().to_vec::<f32>())
        .collect::<Result<Vec<_>>>()?
        .concat();
    Ok((weights, trainer.step()))
}

#[test]
fn accumulated_batches_step_as_one_large_batch() -> Result<()> {
    // Four batches of 5 per step: the mean gradient of 20 examples, as one batch of 20.
    let (large, steps) = accumulated_run(20, 1)?;
    let (accumulated, accumulated_steps) = accumulated_run(5, 4)?;
    assert_eq!((steps, accumulated_steps), (3, 3));
    for (a, b) in large.iter().zip(&accumulated) {
        assert!((a - b).abs() <= 1e-6 * a.abs().max(1.0), "{a} vs {b}");
    }
    // 12 batches in groups of 5: the epoch's last group of 2 still steps.
    assert_eq!(accumulated_run(5, 5)?.1, 3);
    let err = accumulated_run(5, 0)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("accumulate_grad_batches"), "{err}");
    Ok(())
}
