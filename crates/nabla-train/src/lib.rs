//! Owns the classifier training loop: [`Trainer`], metrics, early stopping, checkpoints, logs.
//! Must not name a concrete backend, nor turn on the `mpi` feature of `nabla-distributed`.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! The training loop of nabla for classifiers: a [`Trainer`] that runs epochs with a progress bar
//! (loss, examples per second, ETA), validation, [`metrics`] (accuracy, top-k accuracy, a
//! confusion matrix with precision/recall/F1), early stopping, checkpoints every N steps and at
//! epoch ends that resume bit-exactly, a CSV or JSON-lines log of every epoch, and an SVG plot of
//! the loss and accuracy curves, and [`tensorboard`] event files.
//!
//! Batches come from a [`nabla_data::DataLoader`] and are `(inputs, i64 labels)` (see
//! [`ClassificationBatch`]); models implement [`nabla_nn::Forward`] and return logits `[N, C]`.
#![warn(missing_docs)]

mod config;
mod history;
pub mod metrics;
mod paths;
mod plot;
mod progress;
pub mod tensorboard;
mod trainer;

pub use config::{ClassificationBatch, EarlyStopping, Monitor, SchedulerInterval, TrainerConfig};
pub use history::{EpochRecord, History, LogFormat};
pub use paths::{check_input_file, check_output_path};
pub use plot::{nice_ticks, render_svg, write_svg};
pub use trainer::{Trainer, checkpoint_metadata, evaluate_model};
