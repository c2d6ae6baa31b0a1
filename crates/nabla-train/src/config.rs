//! The trainer's configuration, early stopping, and the batch trait.

use nabla_core::{Backend, Error, Result};
use nabla_tensor::Tensor;
use serde_json::Value;
use std::path::PathBuf;

/// When an attached learning-rate scheduler takes its step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedulerInterval {
    /// After every epoch (PyTorch's usual `scheduler.step()` at the end of an epoch).
    Epoch,
    /// After every optimizer step (e.g. one-cycle schedules counted in steps).
    Step,
}

/// The validation metric that early stopping watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Monitor {
    /// Validation loss: lower is better.
    ValLoss,
    /// Validation accuracy: higher is better.
    ValAccuracy,
}

/// Stop training once the monitored validation metric has not improved by more than `min_delta`
/// for `patience` epochs in a row (Keras's and Lightning's `EarlyStopping`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EarlyStopping {
    /// The metric watched.
    pub monitor: Monitor,
    /// Epochs without improvement tolerated before stopping (at least 1).
    pub patience: usize,
    /// The smallest change that counts as an improvement (non-negative).
    pub min_delta: f64,
}

/// The progress of early stopping: the best value so far and the epochs since it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct EarlyState {
    pub best: Option<f64>,
    pub bad_epochs: usize,
    pub stopped: bool,
}

impl EarlyStopping {
    /// Checks the settings.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.patience == 0 || self.min_delta.is_nan() || self.min_delta < 0.0 {
            return Err(Error::invalid(
                "EarlyStopping",
                format!(
                    "patience must be at least 1 and min_delta non-negative, got patience {} and min_delta {}",
                    self.patience, self.min_delta
                ),
            ));
        }
        Ok(())
    }

    /// Records this epoch's metric; returns whether training should stop.
    pub(crate) fn update(&self, state: &mut EarlyState, value: f64) -> bool {
        let improved = match (state.best, self.monitor) {
            (None, _) => true,
            (Some(best), Monitor::ValLoss) => value < best - self.min_delta,
            (Some(best), Monitor::ValAccuracy) => value > best + self.min_delta,
        };
        if improved {
            state.best = Some(value);
            state.bad_epochs = 0;
        } else {
            state.bad_epochs += 1;
        }
        state.stopped = state.bad_epochs >= self.patience;
        state.stopped
    }
}

/// What a [`Trainer`](crate::Trainer) does besides training: everything is off by default except
/// the progress bar (which is hidden anyway when standard error is not a terminal).
#[derive(Clone, Debug)]
pub struct TrainerConfig {
    /// The total number of epochs (a resumed run continues up to this number).
    pub epochs: u64,
    /// Show a progress bar (loss, examples/s, ETA) on standard error when it is a terminal.
    pub progress: bool,
    /// Print one summary line per epoch on standard error.
    pub print_epochs: bool,
    /// `k` of the top-k validation accuracy (default 5).
    pub top_k: usize,
    /// Early stopping on a validation metric (needs a validation loader).
    pub early_stopping: Option<EarlyStopping>,
    /// Where checkpoints go; written at the end of every epoch when set. Before each save the
    /// weights and the optimizer's state must be finite and the model must give a finite loss on
    /// the last training batch (one forward pass, in evaluation mode); otherwise the run stops with
    /// an [`Error::NonFinite`](nabla_core::Error::NonFinite) and the file is left as it was.
    pub checkpoint: Option<PathBuf>,
    /// Also checkpoint every this many optimizer steps (mid-epoch checkpoints resume exactly too).
    pub checkpoint_every: Option<u64>,
    /// A per-epoch log, CSV (`.csv`) or JSON lines (`.jsonl`), rewritten after every epoch.
    pub log: Option<PathBuf>,
    /// An SVG plot of the loss and accuracy curves, written when training ends.
    pub plot: Option<PathBuf>,
    /// A directory for a TensorBoard event file (a new file per run, as PyTorch's
    /// `SummaryWriter(log_dir)`): the loss of every step (`train/batch_loss`), each epoch's losses,
    /// accuracies, learning rate and speed (`epoch/...`), a histogram of every parameter
    /// (`weights/<name>`) per epoch, and [`TrainerConfig::hparams`].
    pub tensorboard: Option<PathBuf>,
    /// Hyperparameters recorded in the TensorBoard run (its HParams tab).
    pub hparams: Vec<(String, crate::tensorboard::HParam)>,
    /// The title of the plot.
    pub plot_title: String,
    /// Run each training step under anomaly detection ([`nabla_tensor::AnomalyGuard`]): the first op,
    /// forward or backward, that makes a NaN or infinity from finite values stops the run with an
    /// error naming it (slower; for finding where a diverged run went wrong).
    pub detect_anomaly: bool,
    /// Stop once this many optimizer steps have been taken in all (Lightning's `max_steps`). A run
    /// stopped inside an epoch saves a mid-epoch checkpoint (when a checkpoint path is set), which
    /// resumes exactly with a larger limit; that epoch is not counted or logged.
    pub max_steps: Option<u64>,
    /// Batches whose gradients are summed into one optimizer step (Lightning's
    /// `accumulate_grad_batches`; at least 1): each batch's loss is divided by this count, so a step
    /// sees the mean gradient of the group, and an epoch's last group may be shorter. Steps, the
    /// scheduler, `checkpoint_every` and `max_steps` count optimizer steps.
    pub accumulate_grad_batches: usize,
    /// Anything the caller wants stored in checkpoints (e.g. the model kind and input shape), read
    /// back with [`checkpoint_metadata`](crate::checkpoint_metadata).
    pub metadata: Value,
    /// Replace existing files at the checkpoint, log and plot paths even when nabla did not write
    /// them (`nabla train --overwrite`). Without it such a file is an error when the trainer is
    /// built; a file nabla wrote (a checkpoint, a log with nabla's header, a plot as nabla draws
    /// it) or an empty one is replaced either way. A path that is a symbolic link is always refused.
    pub overwrite: bool,
}

impl Default for TrainerConfig {
    fn default() -> Self {
        TrainerConfig {
            epochs: 1,
            progress: true,
            print_epochs: false,
            top_k: 5,
            early_stopping: None,
            checkpoint: None,
            checkpoint_every: None,
            log: None,
            plot: None,
            tensorboard: None,
            hparams: Vec::new(),
            plot_title: "training".to_string(),
            detect_anomaly: false,
            max_steps: None,
            accumulate_grad_batches: 1,
            metadata: Value::Null,
            overwrite: false,
        }
    }
}

/// A batch of a classification data set: inputs and `i64` class labels `[N]`.
///
/// Implemented for the `Vec` batches of a [`TensorDataset`](nabla_data::TensorDataset) of
/// `(inputs, labels)` (e.g. [`Digits`](nabla_data::Digits), [`Mnist`](nabla_data::Mnist)) and for
/// pairs of tensors.
pub trait ClassificationBatch<B: Backend> {
    /// Splits the batch into inputs and labels.
    fn into_inputs_labels(self) -> Result<(Tensor<B>, Tensor<B>)>;
}

impl<B: Backend> ClassificationBatch<B> for (Tensor<B>, Tensor<B>) {
    fn into_inputs_labels(self) -> Result<(Tensor<B>, Tensor<B>)> {
        Ok(self)
    }
}

impl<B: Backend> ClassificationBatch<B> for Vec<Tensor<B>> {
    fn into_inputs_labels(self) -> Result<(Tensor<B>, Tensor<B>)> {
        let n = self.len();
        let mut it = self.into_iter();
        match (it.next(), it.next(), n) {
            (Some(x), Some(y), 2) => Ok((x, y)),
            _ => Err(Error::invalid(
                "Trainer",
                format!("a classification batch needs 2 tensors (inputs, labels), got {n}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn early_stopping_counts_epochs_without_improvement() {
        let es = EarlyStopping {
            monitor: Monitor::ValLoss,
            patience: 2,
            min_delta: 0.1,
        };
        let mut s = EarlyState::default();
        assert!(!es.update(&mut s, 1.0));
        assert!(!es.update(&mut s, 0.95)); // not better by more than 0.1
        assert!(!es.update(&mut s, 0.8)); // better: resets
        assert!(!es.update(&mut s, 0.79));
        assert!(es.update(&mut s, 0.8));
        let acc = EarlyStopping {
            monitor: Monitor::ValAccuracy,
            patience: 1,
            min_delta: 0.0,
        };
        let mut s = EarlyState::default();
        assert!(!acc.update(&mut s, 0.5));
        assert!(!acc.update(&mut s, 0.6));
        assert!(acc.update(&mut s, 0.6));
        assert!(EarlyStopping { patience: 0, ..acc }.validate().is_err());
    }
}
