//! The [`Trainer`]: epochs of forward, cross-entropy loss, backward and optimizer steps, with
//! validation, early stopping, checkpoints with exact resume, logs and a plot.

use crate::config::{ClassificationBatch, EarlyState, Monitor, SchedulerInterval, TrainerConfig};
use crate::history::{EpochRecord, History, LogFormat};
use crate::metrics::MetricAccumulator;
use crate::paths::{Output, check_output};
use crate::plot::write_svg;
use crate::progress::Progress;
use crate::tensorboard::SummaryWriter;
use nabla_core::{Backend, Error, Generator, Result};
use nabla_data::{DataLoader, Dataset};
use nabla_distributed::{Communicator, SingleProcess, all_reduce_f64};
use nabla_nn::loss::{CrossEntropyOptions, cross_entropy};
use nabla_nn::optim::Optimizer;
use nabla_nn::sched::LrScheduler;
use nabla_nn::{
    Forward, TrainingState, first_non_finite, load_checkpoint, read_training_state, save_checkpoint,
};
use nabla_tensor::{AnomalyGuard, Tensor, no_grad};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Where a resumed run picks up: the shuffling generator at the start of the interrupted epoch and
/// how far into it the checkpoint was taken.
#[derive(Clone, Debug)]
struct ResumePoint {
    generator: Generator,
    batches_done: usize,
    sums: Option<[f64; 4]>,
}

/// Trains a classifier `M` (logits `[N, C]` from inputs) with cross-entropy.
///
/// ```no_run
/// # use nabla_core::{DType, Generator};
/// # use nabla_cpu::CpuBackend;
/// # use nabla_data::{DataLoader, Digits};
/// # use nabla_nn::{Linear, Sequential, Module, activation::{Flatten, ReLU}};
/// # use nabla_nn::optim::{Adam, AdamConfig};
/// use nabla_train::{Trainer, TrainerConfig};
/// let cpu = CpuBackend::new();
/// let mut rng = Generator::new(0);
/// let (train, test) = Digits::load(&cpu)?.train_test_split(0.2, 0)?;
/// let model = Sequential::new()
///     .push(Flatten { start_dim: 1, end_dim: -1 })
///     .push(Linear::new(64, 10, true, DType::F32, &mut rng, &cpu)?);
/// let opt = Adam::new(model.parameters(), AdamConfig { lr: 1e-2, ..Default::default() })?;
/// let config = TrainerConfig { epochs: 5, ..Default::default() };
/// let mut trainer = Trainer::new(model, Box::new(opt), config)?;
/// let mut train = DataLoader::new(train, 32)?.shuffle(true).seed(1);
/// let mut test = DataLoader::new(test, 256)?;
/// let history = trainer.fit(&mut train, Some(&mut test))?;
/// println!("{:?}", history.last());
/// # Ok::<(), nabla_core::Error>(())
/// ```
pub struct Trainer<B: Backend, M> {
    model: M,
    optimizer: Box<dyn Optimizer<B>>,
    scheduler: Option<(Box<dyn LrScheduler<B>>, SchedulerInterval)>,
    config: TrainerConfig,
    history: History,
    epoch: u64,
    step: u64,
    early: EarlyState,
    resume_point: Option<ResumePoint>,
    comm: Arc<dyn Communicator>,
    /// The last training batch, on which a model about to be saved must give a finite loss.
    last_batch: Option<(Tensor<B>, Tensor<B>)>,
    /// The TensorBoard event file, once `fit` has opened it.
    tensorboard: Option<SummaryWriter>,
}

impl<B: Backend, M: Forward<B>> Trainer<B, M> {
    /// A trainer for `model` with `optimizer` (built over the model's parameters).
    pub fn new(model: M, optimizer: Box<dyn Optimizer<B>>, config: TrainerConfig) -> Result<Self> {
        if let Some(es) = &config.early_stopping {
            es.validate()?;
        }
        if config.top_k == 0
            || config.checkpoint_every == Some(0)
            || config.max_steps == Some(0)
            || config.accumulate_grad_batches == 0
        {
            return Err(Error::invalid(
                "Trainer::new",
                "top_k, checkpoint_every, max_steps and accumulate_grad_batches must be at least 1",
            ));
        }
        if let Some(log) = &config.log {
            check_output(
                log,
                Output::Log(LogFormat::from_path(log)?),
                config.overwrite,
            )?;
        }
        if let Some(plot) = &config.plot {
            check_output(plot, Output::Plot, config.overwrite)?;
        }
        if let Some(checkpoint) = &config.checkpoint {
            check_output(checkpoint, Output::Checkpoint, config.overwrite)?;
        }
        if config.checkpoint_every.is_some() && config.checkpoint.is_none() {
            return Err(Error::invalid(
                "Trainer::new",
                "checkpoint_every needs a checkpoint path",
            ));
        }
        Ok(Trainer {
            model,
            optimizer,
            scheduler: None,
            config,
            history: History::default(),
            epoch: 0,
            step: 0,
            early: EarlyState::default(),
            resume_point: None,
            comm: Arc::new(SingleProcess),
            last_batch: None,
            tensorboard: None,
        })
    }

    /// Makes this trainer one rank of a data-parallel job over `comm`. The optimizer should be a
    /// [`DataParallel`](nabla_distributed::DataParallel) over the same communicator and the
    /// training loader [`distributed`](DataLoader::distributed) (the validation loader too, for
    /// sharded validation); then the epoch metrics are summed over all ranks, so that every rank
    /// takes the same early-stopping decision, and only rank 0 writes checkpoints, logs and the
    /// plot.
    pub fn distributed(mut self, comm: Arc<dyn Communicator>) -> Self {
        self.comm = comm;
        self
    }

    /// Whether this process writes the run's files (rank 0, or the only process).
    fn writes_files(&self) -> bool {
        self.comm.rank() == 0
    }

    /// Attaches a learning-rate scheduler (built on this trainer's optimizer, see
    /// [`Trainer::optimizer_mut`]) stepped every epoch or every optimizer step.
    pub fn with_scheduler(
        mut self,
        scheduler: Box<dyn LrScheduler<B>>,
        interval: SchedulerInterval,
    ) -> Self {
        self.scheduler = Some((scheduler, interval));
        self
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }

    /// The model, mutably.
    pub fn model_mut(&mut self) -> &mut M {
        &mut self.model
    }

    /// Takes the model out of the trainer.
    pub fn into_model(self) -> M {
        self.model
    }

    /// The optimizer, mutably (to attach a scheduler or change learning rates).
    pub fn optimizer_mut(&mut self) -> &mut dyn Optimizer<B> {
        self.optimizer.as_mut()
    }

    /// The configuration.
    pub fn config(&self) -> &TrainerConfig {
        &self.config
    }

    /// The configuration, mutably (e.g. to raise `epochs` before continuing).
    pub fn config_mut(&mut self) -> &mut TrainerConfig {
        &mut self.config
    }

    /// The epochs so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Completed epochs.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Completed optimizer steps.
    pub fn step(&self) -> u64 {
        self.step
    }

    /// Whether early stopping has ended training.
    pub fn stopped_early(&self) -> bool {
        self.early.stopped
    }

    /// Trains from the current epoch up to `config.epochs`, validating on `val` after each epoch,
    /// and returns the history. After [`Trainer::resume`], `train` must come from
    /// [`Trainer::restore_loader`] so that its shuffling continues where the checkpoint left it.
    /// The validation loader should not shuffle (its state is not checkpointed).
    pub fn fit<D, O, DV, OV>(
        &mut self,
        train: &mut DataLoader<D, O>,
        mut val: Option<&mut DataLoader<DV, OV>>,
    ) -> Result<&History>
    where
        D: Dataset + Send + Sync + 'static,
        O: ClassificationBatch<B> + Send + 'static,
        DV: Dataset + Send + Sync + 'static,
        OV: ClassificationBatch<B> + Send + 'static,
    {
        if self.config.early_stopping.is_some() && val.is_none() {
            return Err(Error::invalid(
                "Trainer::fit",
                "early stopping watches a validation metric: pass a validation loader",
            ));
        }
        if let Some(dir) = &self.config.tensorboard
            && self.tensorboard.is_none()
            && self.writes_files()
        {
            let mut writer = SummaryWriter::new(dir)?;
            writer.add_hparams(&self.config.hparams)?;
            self.tensorboard = Some(writer);
        }
        while self.epoch < self.config.epochs && !self.early.stopped && !self.reached_max_steps() {
            let t0 = Instant::now();
            let Some(train_acc) = self.train_epoch(train)? else {
                break;
            };
            if let Some((s, SchedulerInterval::Epoch)) = &mut self.scheduler {
                s.step(self.optimizer.as_mut())?;
            }
            let val_acc = match val.as_deref_mut() {
                Some(loader) => Some(self.evaluate(loader, None)?),
                None => None,
            };
            let seconds = t0.elapsed().as_secs_f64();
            self.epoch += 1;
            let record = EpochRecord {
                epoch: self.epoch,
                step: self.step,
                lr: self.optimizer.lr(0),
                train_loss: train_acc.loss(),
                train_accuracy: train_acc.accuracy(),
                val_loss: val_acc.as_ref().map(MetricAccumulator::loss),
                val_accuracy: val_acc.as_ref().map(MetricAccumulator::accuracy),
                val_top_k_accuracy: val_acc.as_ref().map(MetricAccumulator::top_k_accuracy),
                seconds,
                examples_per_sec: train_acc.examples() as f64 / seconds.max(1e-9),
            };
            if let (Some(es), Some(v)) = (&self.config.early_stopping, &val_acc) {
                let value = match es.monitor {
                    Monitor::ValLoss => v.loss(),
                    Monitor::ValAccuracy => v.accuracy(),
                };
                es.update(&mut self.early, value);
            }
            if self.config.print_epochs {
                note(&self.summary_line(&record));
            }
            self.log_tensorboard(&record)?;
            self.history.epochs.push(record);
            if let Some(path) = &self.config.log
                && self.writes_files()
            {
                self.history.write_log(path)?;
            }
            if let Some(path) = self.config.checkpoint.clone() {
                let generator = train.current_generator().clone();
                self.write_checkpoint(&path, generator, 0, None)?;
            }
            if self.early.stopped && self.config.print_epochs {
                note(&format!(
                    "early stopping: no improvement for {} epochs",
                    self.early.bad_epochs
                ));
            }
        }
        if let Some(path) = &self.config.plot
            && self.writes_files()
        {
            write_svg(&self.history, &self.config.plot_title, path)?;
        }
        Ok(&self.history)
    }

    /// Writes an epoch's scalars and the parameters' histograms to the TensorBoard file, if any (the
    /// gradients' were written by the epoch's last step).
    fn log_tensorboard(&mut self, r: &EpochRecord) -> Result<()> {
        let Some(tb) = self.tensorboard.as_mut() else {
            return Ok(());
        };
        let scalars = [
            ("epoch/train_loss", Some(r.train_loss)),
            ("epoch/train_accuracy", Some(r.train_accuracy)),
            ("epoch/val_loss", r.val_loss),
            ("epoch/val_accuracy", r.val_accuracy),
            ("epoch/lr", Some(r.lr)),
            ("epoch/examples_per_sec", Some(r.examples_per_sec)),
        ];
        for (tag, value) in scalars {
            if let Some(v) = value {
                tb.add_scalar(tag, v, r.step)?;
            }
        }
        for (name, p) in self.model.named_parameters() {
            let values = p
                .value()
                .detach()
                .cast(nabla_core::DType::F64)?
                .to_vec::<f64>()?;
            tb.add_histogram(&format!("weights/{name}"), &values, r.step)?;
        }
        tb.flush()
    }

    /// One line describing an epoch.
    fn summary_line(&self, r: &EpochRecord) -> String {
        let mut s = format!(
            "epoch {:>3}/{}  loss {:.4}  acc {:.2}%",
            r.epoch,
            self.config.epochs,
            r.train_loss,
            100.0 * r.train_accuracy
        );
        if let (Some(l), Some(a)) = (r.val_loss, r.val_accuracy) {
            s.push_str(&format!("  val_loss {l:.4}  val_acc {:.2}%", 100.0 * a));
        }
        s.push_str(&format!(
            "  lr {:.2e}  {:.0} ex/s  {:.1}s",
            r.lr, r.examples_per_sec, r.seconds
        ));
        s
    }

    /// Whether `config.max_steps` optimizer steps have been taken.
    fn reached_max_steps(&self) -> bool {
        self.config.max_steps.is_some_and(|max| self.step >= max)
    }

    /// Runs one training epoch and returns its training metrics, or `None` when the run reached
    /// `config.max_steps` inside the epoch (after saving a mid-epoch checkpoint).
    fn train_epoch<D, O>(
        &mut self,
        train: &mut DataLoader<D, O>,
    ) -> Result<Option<MetricAccumulator>>
    where
        D: Dataset + Send + Sync + 'static,
        O: ClassificationBatch<B> + Send + 'static,
    {
        let (start, skip, sums) = match self.resume_point.take() {
            Some(rp) => {
                if train.current_generator() != &rp.generator {
                    return Err(Error::invalid(
                        "Trainer::fit",
                        "the training loader's generator differs from the checkpoint's: build the \
                         loader through Trainer::restore_loader after Trainer::resume",
                    ));
                }
                (rp.generator, rp.batches_done, rp.sums)
            }
            None => (train.current_generator().clone(), 0, None),
        };
        self.model.train();
        let mut acc = MetricAccumulator::new(1, None);
        // The saved sums are those of all ranks: one rank carries them on.
        if let Some(s) = sums
            && self.writes_files()
        {
            acc.set_sums(s);
        }
        let batches = train.len();
        let examples = train.num_examples();
        let mut progress = Progress::new(
            self.config.progress,
            examples as u64,
            format!("epoch {}/{}", self.epoch + 1, self.config.epochs),
        );
        progress.set_position(acc.examples() as u64);
        let options = CrossEntropyOptions::default();
        for (b, batch) in train.iter().enumerate() {
            let batch = batch?;
            if b < skip {
                continue;
            }
            let (x, y) = batch.into_inputs_labels()?;
            let anomaly = self.config.detect_anomaly.then(AnomalyGuard::new);
            let logits = self.model.forward(&x)?;
            let loss = cross_entropy(&logits, &y, &options)?;
            let stepped = self.backward(&loss, b + 1, batches)?;
            drop(anomaly);
            let loss_value = scalar(&loss)?;
            if !loss_value.is_finite() {
                return Err(diverged(loss_value, self.epoch + 1, self.step + 1));
            }
            if !stepped {
                acc.add_batch(loss_value, &logits.detach(), &y)?;
                progress.advance(y.shape().first().copied().unwrap_or(0) as u64, acc.loss());
                continue;
            }
            self.step += 1;
            if let Some(tb) = self.tensorboard.as_mut() {
                tb.add_scalar("train/batch_loss", loss_value, self.step)?;
            }
            if let Some((s, SchedulerInterval::Step)) = &mut self.scheduler {
                s.step(self.optimizer.as_mut())?;
            }
            acc.add_batch(loss_value, &logits.detach(), &y)?;
            progress.advance(y.shape().first().copied().unwrap_or(0) as u64, acc.loss());
            self.last_batch = Some((x, y));
            if let (Some(every), Some(path)) =
                (self.config.checkpoint_every, self.config.checkpoint.clone())
                && self.step.is_multiple_of(every)
                && b + 1 < batches
            {
                let mut all = acc.clone();
                all.all_reduce(self.comm.as_ref())?;
                self.write_checkpoint(&path, start.clone(), b + 1, Some(all.sums()))?;
            }
            if self.reached_max_steps() && b + 1 < batches {
                progress.finish();
                acc.all_reduce(self.comm.as_ref())?;
                if let Some(path) = self.config.checkpoint.clone() {
                    self.write_checkpoint(&path, start.clone(), b + 1, Some(acc.sums()))?;
                }
                // A later `fit` with a larger limit continues this epoch, from a loader rebuilt by
                // `restore_loader`, as after `resume`.
                self.resume_point = Some(ResumePoint {
                    generator: start,
                    batches_done: b + 1,
                    sums: Some(acc.sums()),
                });
                return Ok(None);
            }
        }
        progress.finish();
        acc.all_reduce(self.comm.as_ref())?;
        Ok(Some(acc))
    }

    /// The backward pass of batch `done` (counted from 1) of an epoch of `batches`, and the
    /// optimizer's step when it ends a group of `accumulate_grad_batches` (or the epoch); returns
    /// whether it stepped.
    fn backward(&mut self, loss: &Tensor<B>, done: usize, batches: usize) -> Result<bool> {
        let k = self.config.accumulate_grad_batches;
        // The epoch's last step keeps its gradients whole for TensorBoard's histograms.
        let histograms = self.tensorboard.is_some() && done == batches;
        if k == 1 && !histograms {
            // Each parameter is updated as soon as its gradient is complete, while it is in cache.
            self.optimizer.backward_step(loss)?;
            return Ok(true);
        }
        let grads = if k == 1 {
            loss.backward()?
        } else {
            loss.div(k as f64)?.backward()?
        };
        self.optimizer.accumulate(&grads)?;
        if !done.is_multiple_of(k) && done < batches {
            return Ok(false);
        }
        if histograms {
            self.log_gradient_histograms()?;
        }
        self.optimizer.step_accumulated()?;
        self.optimizer.zero_grad();
        Ok(true)
    }

    /// Writes a histogram of each parameter's gradient, as the optimizer is about to apply it, at
    /// the coming step (`gradients/<name>`; frozen parameters and those without a gradient have
    /// none).
    fn log_gradient_histograms(&mut self) -> Result<()> {
        let Some(tb) = self.tensorboard.as_mut() else {
            return Ok(());
        };
        let step = self.step + 1;
        for (name, p) in self.model.named_parameters() {
            if let Some(g) = self.optimizer.accumulated_mut().get(p.id()) {
                let values = g.detach().cast(nabla_core::DType::F64)?.to_vec::<f64>()?;
                tb.add_histogram(&format!("gradients/{name}"), &values, step)?;
            }
        }
        Ok(())
    }

    /// Evaluates the model on `loader` without recording gradients (in evaluation mode): mean
    /// loss, accuracy, top-k accuracy (`k = config.top_k`), and a confusion matrix when `classes`
    /// is given.
    pub fn evaluate<D, O>(
        &mut self,
        loader: &mut DataLoader<D, O>,
        classes: Option<usize>,
    ) -> Result<MetricAccumulator>
    where
        D: Dataset + Send + Sync + 'static,
        O: ClassificationBatch<B> + Send + 'static,
    {
        self.model.eval();
        let result = evaluate_model(&self.model, loader, self.config.top_k, classes);
        self.model.train();
        let mut acc = result?;
        acc.all_reduce(self.comm.as_ref())?;
        Ok(acc)
    }

    /// Writes a checkpoint with the training state (position, generator and the trainer's own
    /// state) unless the run diverged (see [`Trainer::check_savable`]); only rank 0 writes.
    fn write_checkpoint(
        &mut self,
        path: &Path,
        generator: Generator,
        batches_done: usize,
        sums: Option<[f64; 4]>,
    ) -> Result<()> {
        self.check_savable(path)?;
        if !self.writes_files() {
            return Ok(());
        }
        let extra = json!({
            "trainer": {
                "history": self.history.to_json(),
                "batches_done": batches_done,
                "partial_sums": sums.map(|s| s.to_vec()),
                "scheduler": self.scheduler.as_ref().map(|(s, _)| s.state()),
                "early_stopping": {
                    "best": self.early.best,
                    "bad_epochs": self.early.bad_epochs,
                    "stopped": self.early.stopped,
                },
            },
            "metadata": self.config.metadata,
        });
        let state = TrainingState {
            epoch: self.epoch,
            step: self.step,
            rng: Some(generator),
            extra,
        };
        save_checkpoint(path, &self.model, Some(self.optimizer.as_ref()), &state)
    }

    /// An error when the model about to be saved to `path` has diverged, so that a diverged run
    /// never replaces a good checkpoint: a parameter, buffer or optimizer state holding NaN or
    /// infinity, or a loss that is not finite on the last training batch (weights can be finite
    /// yet so large that the next forward pass overflows). Every rank checks, so that all take the
    /// same decision.
    fn check_savable(&mut self, path: &Path) -> Result<()> {
        let step = self.step;
        let stop = |what: String| Error::NonFinite {
            op: "checkpoint",
            message: format!(
                "{what} at step {step}: the run diverged and {} was not overwritten (lower the \
                 learning rate)",
                path.display()
            ),
        };
        if let Some(name) = first_non_finite(&self.model, Some(self.optimizer.as_ref()))? {
            return Err(stop(format!("`{name}` holds NaN or infinity")));
        }
        let loss = self.last_batch_loss()?;
        if !loss.is_finite() {
            return Err(stop(format!(
                "the model gives loss {loss} on its last training batch"
            )));
        }
        Ok(())
    }

    /// The loss of the model as it stands on the last training batch, in evaluation mode and
    /// without gradients (so nothing of the model changes), summed over the ranks; 0 before any
    /// batch.
    fn last_batch_loss(&mut self) -> Result<f64> {
        let Some((x, y)) = self.last_batch.clone() else {
            return Ok(0.0);
        };
        self.model.eval();
        let options = CrossEntropyOptions::default();
        let loss = no_grad(|| scalar(&cross_entropy(&self.model.forward(&x)?, &y, &options)?));
        self.model.train();
        let loss = loss?;
        if self.comm.world_size() == 1 {
            return Ok(loss);
        }
        Ok(all_reduce_f64(self.comm.as_ref(), &[loss])?[0])
    }

    /// Restores model, optimizer, scheduler, history, early-stopping state and position from a
    /// checkpoint written by this trainer, and returns its training state. Build the training
    /// loader with [`Trainer::restore_loader`] before calling [`Trainer::fit`] to continue exactly.
    pub fn resume(&mut self, path: impl AsRef<Path>, backend: &B) -> Result<TrainingState> {
        let path = path.as_ref();
        let bad = |what: &str| Error::Io {
            context: format!("resuming from {}", path.display()),
            message: what.to_string(),
        };
        let state = load_checkpoint(path, &self.model, Some(self.optimizer.as_mut()), backend)?;
        let t = &state.extra["trainer"];
        if !t.is_object() {
            return Err(bad("the checkpoint was not written by a Trainer"));
        }
        self.history = History::from_json(&t["history"])?;
        if let (Some((s, _)), v) = (&mut self.scheduler, &t["scheduler"])
            && !v.is_null()
        {
            s.load_state(v)?;
            for (group, lr) in s.last_lr().into_iter().enumerate() {
                self.optimizer.set_lr(group, lr);
            }
        }
        let es = &t["early_stopping"];
        self.early = EarlyState {
            best: es["best"].as_f64(),
            bad_epochs: es["bad_epochs"].as_u64().unwrap_or(0) as usize,
            stopped: es["stopped"].as_bool().unwrap_or(false),
        };
        let sums = match &t["partial_sums"] {
            Value::Array(v) if v.len() == 4 => {
                let mut s = [0.0; 4];
                for (dst, src) in s.iter_mut().zip(v) {
                    *dst = src
                        .as_f64()
                        .ok_or_else(|| bad("partial_sums holds a non-number"))?;
                }
                Some(s)
            }
            _ => None,
        };
        let generator = state
            .rng
            .clone()
            .ok_or_else(|| bad("the checkpoint holds no loader generator"))?;
        self.epoch = state.epoch;
        self.step = state.step;
        self.resume_point = Some(ResumePoint {
            generator,
            batches_done: t["batches_done"].as_u64().unwrap_or(0) as usize,
            sums,
        });
        Ok(state)
    }

    /// `loader` with the shuffling generator saved in the checkpoint given to
    /// [`Trainer::resume`] (unchanged when not resuming).
    pub fn restore_loader<D: Dataset, O>(&self, loader: DataLoader<D, O>) -> DataLoader<D, O> {
        match &self.resume_point {
            Some(rp) => loader.generator(rp.generator.clone()),
            None => loader,
        }
    }
}

/// Prints a line on standard error, ignoring failures (a closed terminal must not stop training).
fn note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The value of a scalar loss as `f64`, widened on the host (not every backend has float64).
/// The error that stops a run whose training loss became `loss`: nothing is saved from that step on.
fn diverged(loss: f64, epoch: u64, step: u64) -> Error {
    Error::NonFinite {
        op: "training loss",
        message: format!(
            "the loss is {loss} at epoch {epoch}, step {step}: the run diverged and was stopped \
             before saving (lower the learning rate, or turn on anomaly detection \
             (TrainerConfig::detect_anomaly, `nabla train --detect-anomaly`) to find the first op \
             that made a NaN or infinity)"
        ),
    }
}

fn scalar<B: Backend>(t: &Tensor<B>) -> Result<f64> {
    match t.detach().to_host()?.to_f64_vec()[..] {
        [v] => Ok(v),
        _ => Err(Error::invalid(
            "Trainer",
            format!("the loss must be a scalar, got shape {:?}", t.shape()),
        )),
    }
}

/// Evaluates `model` (already in evaluation mode) on `loader` without recording gradients.
pub fn evaluate_model<B, M, D, O>(
    model: &M,
    loader: &mut DataLoader<D, O>,
    top_k: usize,
    classes: Option<usize>,
) -> Result<MetricAccumulator>
where
    B: Backend,
    M: Forward<B>,
    D: Dataset + Send + Sync + 'static,
    O: ClassificationBatch<B> + Send + 'static,
{
    let options = CrossEntropyOptions::default();
    no_grad(|| {
        let mut acc = MetricAccumulator::new(top_k, classes);
        for batch in loader.iter() {
            let (x, y) = batch?.into_inputs_labels()?;
            let logits = model.forward(&x)?;
            let loss = cross_entropy(&logits, &y, &options)?;
            acc.add_batch(scalar(&loss)?, &logits, &y)?;
        }
        Ok(acc)
    })
}

/// The caller's metadata stored in a checkpoint written by a [`Trainer`]
/// ([`TrainerConfig::metadata`]), read without building a model (`Null` when there is none).
pub fn checkpoint_metadata(path: impl AsRef<Path>) -> Result<Value> {
    Ok(read_training_state(path)?.extra["metadata"].clone())
}
