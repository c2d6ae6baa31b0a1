//! TensorBoard event files: a Trainer run writes the step losses, epoch metrics, weight histograms
//! and hyperparameters, read back record by record with both checksums checked; damaged files and
//! links are refused.

use nabla_core::{DType, Generator, Result};
use nabla_cpu::CpuBackend;
use nabla_data::{DataLoader, TensorDataset};
use nabla_nn::activation::ReLU;
use nabla_nn::optim::{Adam, AdamConfig};
use nabla_nn::{Linear, Module, Sequential};
use nabla_tensor::Tensor;
use nabla_train::tensorboard::{HParam, SummaryWriter, read_events};
use nabla_train::{Trainer, TrainerConfig};
use std::path::PathBuf;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nabla-tb-{}-{name}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    dir
}

/// The only event file in `dir`.
fn event_file(dir: &PathBuf) -> PathBuf {
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("the directory exists")
        .map(|e| e.expect("an entry").path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(
        files[0]
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("events.out.tfevents."))
    );
    files[0].clone()
}

#[test]
fn a_training_run_writes_steps_epochs_histograms_and_hparams() -> Result<()> {
    let cpu = CpuBackend::new();
    let rng = &mut Generator::new(0);
    let x = Tensor::randn([24, 4], DType::F32, rng, &cpu)?;
    let y = Tensor::from_vec((0..24).map(|i| (i % 3) as i64).collect(), [24], &cpu)?;
    let data = TensorDataset::new(vec![x, y])?;
    let model = Sequential::new()
        .push(Linear::new(4, 8, true, DType::F32, rng, &cpu)?)
        .push(ReLU)
        .push(Linear::new(8, 3, true, DType::F32, rng, &cpu)?);
    let opt = Adam::new(model.parameters(), AdamConfig::default())?;
    let dir = temp_dir("trainer");
    let config = TrainerConfig {
        epochs: 2,
        progress: false,
        tensorboard: Some(dir.clone()),
        hparams: vec![
            ("lr".into(), HParam::Number(1e-3)),
            ("model".into(), HParam::Text("mlp".into())),
        ],
        ..Default::default()
    };
    let mut trainer = Trainer::new(model, Box::new(opt), config)?;
    let mut train = DataLoader::new(data.clone(), 8)?;
    let mut val = DataLoader::new(data, 24)?;
    let history = trainer.fit(&mut train, Some(&mut val))?.clone();
    let events = read_events(event_file(&dir))?;

    // The file version, the hyperparameters, then each step's loss.
    assert!(events[0].scalar("train/batch_loss").is_none());
    let hparams = events[1].hparams().expect("a session-start event");
    assert_eq!(
        hparams,
        vec![
            ("lr".to_string(), HParam::Number(1e-3)),
            ("model".to_string(), HParam::Text("mlp".into())),
        ]
    );
    let steps: Vec<(i64, f32)> = events
        .iter()
        .filter_map(|e| e.scalar("train/batch_loss").map(|v| (e.step, v)))
        .collect();
    assert_eq!(
        steps.iter().map(|s| s.0).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
    assert!(steps.iter().all(|s| s.1.is_finite() && s.1 > 0.0));
    // Each epoch's metrics match the history, at the epoch's last step.
    for record in &history.epochs {
        let at = |tag: &str| {
            events
                .iter()
                .find(|e| e.step == record.step as i64 && e.scalar(tag).is_some())
                .and_then(|e| e.scalar(tag))
        };
        assert_eq!(at("epoch/train_loss"), Some(record.train_loss as f32));
        assert_eq!(
            at("epoch/val_accuracy"),
            record.val_accuracy.map(|v| v as f32)
        );
        assert_eq!(at("epoch/lr"), Some(record.lr as f32));
    }
    // A histogram of every parameter per epoch, counting all its entries.
    let histos: Vec<_> = events
        .iter()
        .filter_map(|e| e.histogram("weights/0.weight"))
        .collect();
    assert_eq!(histos.len(), 2);
    assert_eq!(histos[0].num, 32.0);
    assert_eq!(histos[0].bucket.iter().sum::<f64>(), 32.0);
    assert!(histos[0].min <= histos[0].max);
    // And of every parameter's gradient at each epoch's last step, as applied.
    let grads: Vec<_> = events
        .iter()
        .filter_map(|e| e.histogram("gradients/2.bias").map(|h| (e.step, h)))
        .collect();
    assert_eq!(
        grads.iter().map(|g| g.0).collect::<Vec<_>>(),
        history
            .epochs
            .iter()
            .map(|r| r.step as i64)
            .collect::<Vec<_>>()
    );
    let g = &grads[0].1;
    assert_eq!(g.num, 3.0);
    // The bias gradient of a mean cross-entropy sums to zero over the classes.
    assert!(g.sum.abs() < 1e-5, "{}", g.sum);
    assert!(g.min < 0.0 && g.max > 0.0);
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

#[test]
fn damaged_files_and_links_are_refused() -> Result<()> {
    let dir = temp_dir("damaged");
    let mut w = SummaryWriter::new(&dir)?;
    w.add_scalar("a", 1.0, 1)?;
    w.add_histogram("h", &[f64::NAN, 1.0, 1.0], 1)?;
    w.flush()?;
    let path = w.path().to_path_buf();
    let events = read_events(&path)?;
    let h = events[2].histogram("h").expect("a histogram");
    assert_eq!(
        (h.num, h.bucket.clone(), h.bucket_limit.clone()),
        (2.0, vec![2.0], vec![1.0])
    );
    let good = std::fs::read(&path).expect("readable");
    // A flipped payload byte, a cut record, a length beyond the limit.
    let mut flipped = good.clone();
    let last = flipped.len() - 6;
    flipped[last] ^= 1;
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    for (bytes, why) in [
        (flipped, "corrupt payload"),
        (good[..good.len() - 3].to_vec(), "truncated"),
        (huge, "corrupt length"),
    ] {
        std::fs::write(&path, bytes).expect("writable");
        let err = read_events(&path).unwrap_err().to_string();
        assert!(err.contains(why) && err.contains("record"), "{err}");
    }
    // A writer never follows a link for its directory.
    #[cfg(unix)]
    {
        let link = temp_dir("link");
        std::os::unix::fs::symlink(&dir, &link).expect("a link");
        assert!(SummaryWriter::new(&link).is_err());
        std::fs::remove_file(&link).ok();
    }
    std::fs::remove_dir_all(&dir).ok();
    Ok(())
}

/// A file PyTorch's `SummaryWriter` wrote (`scripts/gen_tensorboard_fixture.py`) reads back with its
/// values: the reader accepts what TensorBoard's own writers produce.
#[test]
fn reads_an_event_file_written_by_pytorch() -> Result<()> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/torch.tfevents");
    let events = read_events(&path)?;
    let losses: Vec<(i64, f32)> = events
        .iter()
        .filter_map(|e| e.scalar("train/loss").map(|v| (e.step, v)))
        .collect();
    assert_eq!(losses, vec![(1, 0.5), (2, 0.25)]);
    let h = events
        .iter()
        .find_map(|e| e.histogram("weights/w"))
        .expect("the histogram");
    assert_eq!((h.min, h.max, h.num, h.sum), (0.0, 9.0, 10.0, 45.0));
    assert_eq!(h.bucket.iter().sum::<f64>(), 10.0);
    Ok(())
}
