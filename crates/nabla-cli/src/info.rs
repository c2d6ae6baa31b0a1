//! What a checkpoint records about its model and its run, read back (and checked) by `eval`,
//! `predict` and `train --resume`.

use crate::args::{OptimizerKind, ScheduleKind, TrainArgs};
use crate::data::DatasetKind;
use crate::models::ModelKind;
use clap::ValueEnum;
use nabla_core::{Error, Result};
use serde_json::{Value, json};
use std::path::Path;

/// The most classes a checkpoint's model description may declare.
pub const MAX_CLASSES: usize = 1 << 16;

/// The largest image side a checkpoint's model description may declare.
pub const MAX_SIDE: usize = 1 << 14;

/// The most channels a checkpoint's model description may declare.
pub const MAX_CHANNELS: usize = 64;

/// What a checkpoint records about its model, so `eval` and `predict` can rebuild it.
pub struct ModelInfo {
    /// The architecture.
    pub model: ModelKind,
    /// The data set it was trained on.
    pub dataset: DatasetKind,
    /// `[C, H, W]`.
    pub input_shape: Vec<usize>,
    /// The number of classes.
    pub classes: usize,
    /// The training options (`None` in checkpoints from before they were recorded).
    pub options: Option<TrainOptions>,
}

/// The options of a training run that `--resume` must repeat (the epochs may grow).
#[derive(Clone, Debug, PartialEq)]
pub struct TrainOptions {
    /// `--optimizer`.
    pub optimizer: OptimizerKind,
    /// The learning rate in effect (`--lr` or the optimizer's default).
    pub lr: f64,
    /// `--schedule`.
    pub schedule: ScheduleKind,
    /// `--batch-size`.
    pub batch_size: usize,
    /// `--accumulate` (1 in checkpoints from before it was recorded).
    pub accumulate: usize,
    /// `--seed`.
    pub seed: u64,
    /// `--epochs` of the run that wrote the checkpoint (schedules are planned over it).
    pub epochs: u64,
}

impl TrainOptions {
    /// The options of `args`, with `lr` the learning rate in effect.
    pub fn of(args: &TrainArgs, lr: f64) -> Self {
        TrainOptions {
            optimizer: args.optimizer,
            lr,
            schedule: args.schedule,
            batch_size: args.batch_size,
            accumulate: args.accumulate,
            seed: args.seed,
            epochs: args.epochs,
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "optimizer": value_name(self.optimizer),
            "lr": self.lr,
            "schedule": value_name(self.schedule),
            "batch_size": self.batch_size,
            "accumulate": self.accumulate,
            "seed": self.seed,
            "epochs": self.epochs,
        })
    }

    fn from_json(v: &Value) -> Option<Self> {
        Some(TrainOptions {
            optimizer: OptimizerKind::from_str(v["optimizer"].as_str()?, true).ok()?,
            lr: v["lr"].as_f64()?,
            schedule: ScheduleKind::from_str(v["schedule"].as_str()?, true).ok()?,
            batch_size: usize::try_from(v["batch_size"].as_u64()?).ok()?,
            accumulate: usize::try_from(v["accumulate"].as_u64().unwrap_or(1)).ok()?,
            seed: v["seed"].as_u64()?,
            epochs: v["epochs"].as_u64()?,
        })
    }

    /// Fails, naming the first difference, unless a run with options `self` may continue the run
    /// that saved `saved` (in `path`): everything equal, except that the epochs may change when no
    /// schedule is planned over them.
    pub fn check_resumable(&self, saved: &TrainOptions, path: &Path) -> Result<()> {
        let differences = [
            (
                "--optimizer",
                value_name(saved.optimizer),
                value_name(self.optimizer),
            ),
            ("--lr", saved.lr.to_string(), self.lr.to_string()),
            (
                "--schedule",
                value_name(saved.schedule),
                value_name(self.schedule),
            ),
            (
                "--batch-size",
                saved.batch_size.to_string(),
                self.batch_size.to_string(),
            ),
            (
                "--accumulate",
                saved.accumulate.to_string(),
                self.accumulate.to_string(),
            ),
            ("--seed", saved.seed.to_string(), self.seed.to_string()),
        ];
        if let Some((flag, was, now)) = differences.into_iter().find(|(_, a, b)| a != b) {
            return Err(Error::invalid(
                "--resume",
                format!(
                    "{} was trained with {flag} {was}, but this run asks for {flag} {now}; \
                     resume with the same options",
                    path.display()
                ),
            ));
        }
        if saved.schedule != ScheduleKind::None && saved.epochs != self.epochs {
            return Err(Error::invalid(
                "--resume",
                format!(
                    "{} follows a {} schedule planned over --epochs {}; resume with --epochs {}",
                    path.display(),
                    value_name(saved.schedule),
                    saved.epochs,
                    saved.epochs
                ),
            ));
        }
        Ok(())
    }
}

/// The command-line spelling of a value of an option such as `--optimizer` or `--model`.
pub(crate) fn value_name(v: impl ValueEnum) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

impl ModelInfo {
    /// The JSON stored in the checkpoint.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "model": self.model.name(),
            "dataset": self.dataset.name(),
            "input_shape": self.input_shape,
            "classes": self.classes,
        });
        if let Some(options) = &self.options {
            v["options"] = options.to_json();
        }
        v
    }

    /// Reads and checks the description stored in checkpoint `path`: a known model and data set,
    /// `1..=MAX_CLASSES` classes and a `[C, H, W]` input shape within [`MAX_CHANNELS`] and
    /// [`MAX_SIDE`], so that a corrupt or hostile description cannot ask for huge weights.
    pub fn from_json(path: &Path, v: &Value) -> Result<Self> {
        let bad = |what: String| Error::Io {
            context: format!("reading checkpoint {}", path.display()),
            message: what,
        };
        let missing =
            || bad("it records no model description (was it written by `nabla train`?)".into());
        let input_shape = v["input_shape"]
            .as_array()
            .ok_or_else(missing)?
            .iter()
            .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(missing)?;
        let classes = v["classes"].as_u64().ok_or_else(missing)?;
        let shape_ok = matches!(input_shape.as_slice(),
            [c, h, w] if (1..=MAX_CHANNELS).contains(c)
                && (1..=MAX_SIDE).contains(h)
                && (1..=MAX_SIDE).contains(w));
        if !shape_ok {
            return Err(bad(format!(
                "its model description gives input shape {input_shape:?}; expected [C, H, W] with \
                 1..={MAX_CHANNELS} channels and sides of 1..={MAX_SIDE}"
            )));
        }
        if !(1..=MAX_CLASSES as u64).contains(&classes) {
            return Err(bad(format!(
                "its model description gives {classes} classes; expected 1..={MAX_CLASSES}"
            )));
        }
        Ok(ModelInfo {
            model: ModelKind::from_name(v["model"].as_str().ok_or_else(missing)?)?,
            dataset: DatasetKind::from_name(v["dataset"].as_str().ok_or_else(missing)?)?,
            input_shape,
            classes: classes as usize,
            options: TrainOptions::from_json(&v["options"]),
        })
    }
}
