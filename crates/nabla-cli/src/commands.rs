//! What `nabla train`, `nabla eval` and `nabla predict` do, written once for any [`Backend`] and
//! run through [`dispatch`] on the backend that `--backend` names.

use crate::agreement::{position_record, train_record};
use crate::args::{EvalArgs, OptimizerKind, PredictArgs, ScheduleKind, TrainArgs};
use crate::backend::{Job, dispatch, loader_on};
use crate::data;
use crate::info::{ModelInfo, TrainOptions};
use crate::models::{build_model, load_pretrained, parameter_count};
use nabla_core::{Backend, Error, Result, with_allocation_limit};
use nabla_cpu::CpuBackend;
use nabla_data::DistributedSampler;
use nabla_data::transforms::Transformed;
use nabla_distributed::{Communicator, DataParallel, check_agreement};
use nabla_nn::optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use nabla_nn::sched::{CosineAnnealingLR, LrScheduler, MultiStepLR, OneCycle, OneCycleLR};
use nabla_nn::{
    CheckpointLoad, Forward, Module, Sequential, load_checkpoint_with, remove_stale_temp_files,
};
use nabla_tensor::no_grad;
use nabla_train::metrics::argmax_rows;
use nabla_train::tensorboard::HParam;
use nabla_train::{
    EarlyStopping, Monitor, SchedulerInterval, Trainer, TrainerConfig, check_input_file,
    checkpoint_metadata, evaluate_model,
};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A scheduler and when it steps.
type Schedule<B> = (Box<dyn LrScheduler<B>>, SchedulerInterval);

/// `eprintln!` that ignores write failures (a closed standard error must not panic).
macro_rules! nabla_note {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// Writes `text` to standard output; a closed pipe (`nabla predict ... | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    emit_open(text).map(drop)
}

/// Writes `text` to standard output and says whether it is still open: `false` once its reader has
/// gone (a closed pipe), which is not an error.
fn emit_open(text: &str) -> Result<bool> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::Io {
            context: "writing to standard output".into(),
            message: e.to_string(),
        }),
    }
}

/// The optimizer `args` asks for, over `model`'s parameters.
fn optimizer<B: Backend>(args: &TrainArgs, model: &Sequential<B>) -> Result<Box<dyn Optimizer<B>>> {
    let params = model.parameters();
    let lr = args.learning_rate();
    Ok(match args.optimizer {
        OptimizerKind::Sgd => Box::new(Sgd::new(
            params,
            SgdConfig {
                lr,
                momentum: 0.9,
                nesterov: true,
                ..Default::default()
            },
        )?),
        OptimizerKind::Adam => Box::new(Adam::new(
            params,
            AdamConfig {
                lr,
                ..Default::default()
            },
        )?),
        OptimizerKind::Adamw => Box::new(Adam::new(
            params,
            AdamConfig {
                lr,
                ..AdamConfig::adamw()
            },
        )?),
    })
}

/// The schedule `args` asks for, attached to `opt`.
fn scheduler<B: Backend>(
    args: &TrainArgs,
    opt: &mut dyn Optimizer<B>,
    steps_per_epoch: usize,
) -> Result<Option<Schedule<B>>> {
    let epochs = args.epochs.max(1) as i64;
    Ok(match args.schedule {
        ScheduleKind::None => None,
        ScheduleKind::Cosine => Some((
            Box::new(CosineAnnealingLR::new(opt, epochs, 0.0)?),
            SchedulerInterval::Epoch,
        )),
        ScheduleKind::Step => Some((
            Box::new(MultiStepLR::new(
                opt,
                vec![(epochs / 3).max(1), (2 * epochs / 3).max(2)],
                0.1,
            )?),
            SchedulerInterval::Epoch,
        )),
        ScheduleKind::Onecycle => {
            let total = epochs * steps_per_epoch as i64 + 1;
            let max_lr = opt.lr(0);
            Some((
                Box::new(OneCycleLR::new(opt, OneCycle::new(max_lr, total))?),
                SchedulerInterval::Step,
            ))
        }
    })
}

/// `nabla train` on the backend of `--backend`, as one rank of the data-parallel job `comm` (a
/// world of one when not started by `mpirun`).
pub fn train(args: &TrainArgs, comm: Arc<dyn Communicator>) -> Result<()> {
    dispatch(&args.common, Train(args, comm))
}

/// `nabla eval` on the backend of `--backend`.
pub fn eval(args: &EvalArgs) -> Result<()> {
    dispatch(&args.common, Eval(args))
}

/// `nabla predict` on the backend of `--backend`.
pub fn predict(args: &PredictArgs) -> Result<()> {
    dispatch(&args.common, Predict(args))
}

/// The `train` job, on its communicator.
struct Train<'a>(&'a TrainArgs, Arc<dyn Communicator>);

/// The `eval` job.
struct Eval<'a>(&'a EvalArgs);

/// The `predict` job.
struct Predict<'a>(&'a PredictArgs);

impl Job for Train<'_> {
    fn run<B: Backend>(self, backend: &B) -> Result<()> {
        train_on(self.0, &self.1, backend)
    }
}

impl Job for Eval<'_> {
    fn run<B: Backend>(self, backend: &B) -> Result<()> {
        eval_on(self.0, backend)
    }
}

impl Job for Predict<'_> {
    fn run<B: Backend>(self, backend: &B) -> Result<()> {
        predict_on(self.0, backend)
    }
}

/// The run's options as TensorBoard hyperparameters.
fn hparams(args: &TrainArgs) -> Vec<(String, HParam)> {
    let text = |s: &str| HParam::Text(s.to_string());
    vec![
        ("model".into(), text(args.model.name())),
        ("dataset".into(), text(args.dataset.name())),
        (
            "optimizer".into(),
            text(&format!("{:?}", args.optimizer).to_lowercase()),
        ),
        (
            "schedule".into(),
            text(&format!("{:?}", args.schedule).to_lowercase()),
        ),
        ("lr".into(), HParam::Number(args.learning_rate())),
        ("batch_size".into(), HParam::Number(args.batch_size as f64)),
        ("accumulate".into(), HParam::Number(args.accumulate as f64)),
        ("epochs".into(), HParam::Number(args.epochs as f64)),
        ("seed".into(), HParam::Number(args.seed as f64)),
    ]
}

/// The trainer configuration of `args` for a model described by `info`; `speaks` is whether this
/// process prints progress (rank 0 does).
fn trainer_config(args: &TrainArgs, info: &ModelInfo, speaks: bool) -> TrainerConfig {
    TrainerConfig {
        epochs: args.epochs,
        progress: !args.quiet && speaks,
        print_epochs: !args.quiet && speaks,
        top_k: 5,
        early_stopping: args.early_stopping.map(|patience| EarlyStopping {
            monitor: Monitor::ValLoss,
            patience,
            min_delta: 0.0,
        }),
        checkpoint: Some(args.checkpoint.clone()),
        checkpoint_every: args.checkpoint_every,
        log: args.log.clone(),
        plot: (!args.no_plot).then(|| args.plot.clone()),
        tensorboard: args.tensorboard.clone(),
        hparams: hparams(args),
        plot_title: format!("{} on {}", args.model.name(), args.dataset.name()),
        detect_anomaly: args.detect_anomaly,
        max_steps: args.max_steps,
        accumulate_grad_batches: args.accumulate,
        metadata: info.to_json(),
        overwrite: args.overwrite,
    }
}

/// Checks that the run saved in `--checkpoint` can be continued by `args` (same model, data set and
/// options; no fewer epochs than it has done) and restores it into `trainer`.
fn resume_run<B: Backend>(
    args: &TrainArgs,
    info: &ModelInfo,
    trainer: &mut Trainer<B, Sequential<B>>,
    backend: &B,
) -> Result<()> {
    let path = &args.checkpoint;
    let saved = ModelInfo::from_json(path, &checkpoint_metadata(path)?)?;
    if saved.model != info.model || saved.dataset != info.dataset {
        return Err(Error::invalid(
            "--resume",
            format!(
                "{} holds a {} model trained on {}, but this run asks for {} on {}",
                path.display(),
                saved.model.name(),
                saved.dataset.name(),
                info.model.name(),
                info.dataset.name()
            ),
        ));
    }
    if let (Some(saved), Some(now)) = (&saved.options, &info.options) {
        now.check_resumable(saved, path)?;
    }
    let state = trainer.resume(path, backend)?;
    let speaks = trainer.config().print_epochs || trainer.config().progress;
    if state.epoch > args.epochs {
        return Err(Error::invalid(
            "--resume",
            format!(
                "{} has already trained {} epochs, more than --epochs {}",
                path.display(),
                state.epoch,
                args.epochs
            ),
        ));
    }
    if speaks {
        nabla_note!("resuming after epoch {} (step {})", state.epoch, state.step);
    }
    Ok(())
}

/// The share of a global batch of `batch_size` examples that each of `comm`'s ranks takes.
fn per_rank_batch(batch_size: usize, comm: &dyn Communicator) -> Result<usize> {
    let world = comm.world_size();
    if !batch_size.is_multiple_of(world) {
        return Err(Error::invalid(
            "--batch-size",
            format!(
                "--batch-size {batch_size} is the global batch, split evenly across the {world} \
                 ranks: it must be a multiple of {world}"
            ),
        ));
    }
    Ok(batch_size / world)
}

/// `nabla train` on `backend` (the data is loaded on the CPU and moved batch by batch), as one rank
/// of `comm`. Every argument, output path and the data are checked before the first step, so a bad
/// option never costs an epoch or touches an existing checkpoint; the per-epoch figures come from a
/// validation split of the training data and the final result from the test set.
///
/// With several ranks each takes its share of every global batch and of the validation set
/// ([`DistributedSampler`]), the optimizer averages gradients across them ([`DataParallel`]), and
/// only rank 0 prints, writes files and evaluates on the test set.
fn train_on<B: Backend>(args: &TrainArgs, comm: &Arc<dyn Communicator>, backend: &B) -> Result<()> {
    let cpu = CpuBackend::new();
    args.validate()?;
    let local_batch = per_rank_batch(args.batch_size, comm.as_ref())?;
    let (rank, world) = (comm.rank(), comm.world_size());
    let speaks = rank == 0;
    if args.resume {
        check_input_file(&args.checkpoint, "checkpoint to resume")?;
    }
    let splits = data::load(args.dataset, args.data_dir.as_deref(), &cpu)?;
    let info = ModelInfo {
        model: args.model,
        dataset: args.dataset,
        input_shape: splits.input_shape.clone(),
        classes: splits.classes,
        options: Some(TrainOptions::of(args, args.learning_rate())),
    };
    let model = build_model(
        args.model,
        &info.input_shape,
        info.classes,
        args.seed,
        backend,
    )?;
    if let Some(path) = &args.pretrained
        && !args.resume
    {
        check_input_file(path, "pretrained weights")?;
        let fresh = load_pretrained(args.model, &model, path, backend)?;
        if !args.quiet && speaks {
            let note = match fresh.as_slice() {
                [] => String::new(),
                names => format!(
                    " ({} start fresh: the data's shape differs)",
                    names.join(", ")
                ),
            };
            nabla_note!("loaded {}{note}", path.display());
        }
    }
    let n_params = parameter_count(&model);
    let [n_train, n_val, n_test] = splits.sizes();
    let record = train_record(args, args.learning_rate(), &info, splits.sizes());
    check_agreement(comm.as_ref(), "the options of nabla train", &record)?;
    let sampler = DistributedSampler::new(rank, world)?;
    let augmented = Transformed::new(splits.train, args.dataset.augmentation()?, args.seed);
    let loader = loader_on(augmented, local_batch, backend)?
        .shuffle(true)
        .seed(args.seed)
        .num_workers(args.workers)
        .distributed(sampler);
    let workers = args.workers.min(1);
    let mut val_loader = loader_on(splits.val, 256, backend)?
        .num_workers(workers)
        .distributed(sampler.pad(false));
    let mut opt = optimizer(args, &model)?;
    if world > 1 {
        let buffers: Vec<_> = model.named_buffers().into_iter().map(|(_, b)| b).collect();
        let bucket_bytes = (args.bucket_mib * (1u64 << 20) as f64) as usize;
        opt = Box::new(DataParallel::new(
            opt,
            Arc::clone(comm),
            &buffers,
            bucket_bytes,
        )?);
    }
    let sched = scheduler(args, opt.as_mut(), loader.len())?;
    let mut trainer = Trainer::new(model, opt, trainer_config(args, &info, speaks))?
        .distributed(Arc::clone(comm));
    if let Some((s, interval)) = sched {
        trainer = trainer.with_scheduler(s, interval);
    }
    if args.resume {
        resume_run(args, &info, &mut trainer, backend)?;
        let position = position_record(trainer.epoch(), trainer.step());
        check_agreement(comm.as_ref(), "the resumed checkpoint", &position)?;
    }
    let mut train_loader = trainer.restore_loader(loader);
    if !args.quiet && speaks {
        let ranks = if world > 1 {
            format!(
                " on {world} ranks ({} examples per rank and batch)",
                local_batch
            )
        } else {
            String::new()
        };
        nabla_note!(
            "training {} ({n_params} parameters) on {}: {n_train} training, {n_val} validation and {n_test} test examples, {} epochs, {} backend{ranks}",
            args.model.name(),
            args.dataset.name(),
            args.epochs,
            backend.name()
        );
    }
    let t0 = Instant::now();
    let epochs = trainer
        .fit(&mut train_loader, Some(&mut val_loader))?
        .epochs
        .len();
    let seconds = t0.elapsed().as_secs_f64();
    if !speaks {
        return Ok(());
    }
    let mut test_loader = loader_on(splits.test, 256, backend)?.num_workers(workers);
    let test = evaluate_model(trainer.model(), &mut test_loader, 5, Some(info.classes))?;
    let mut out = String::new();
    if epochs == 0 && args.max_steps.is_none_or(|m| trainer.step() < m) {
        let _ = writeln!(
            out,
            "nothing to train: the run already has {} epochs",
            args.epochs
        );
    }
    if let Some(max) = args.max_steps.filter(|&m| trainer.step() >= m) {
        let _ = writeln!(out, "stopped after --max-steps {max} steps");
    }
    let _ = writeln!(
        out,
        "test accuracy {:.2}% (loss {:.4}, top-5 {:.2}%) after {} epochs; trained in {seconds:.1}s",
        100.0 * test.accuracy(),
        test.loss(),
        100.0 * test.top_k_accuracy(),
        trainer.epoch()
    );
    let _ = writeln!(out, "checkpoint: {}", args.checkpoint.display());
    if !args.no_plot && epochs > 0 {
        let _ = writeln!(out, "plot: {}", args.plot.display());
    }
    emit(&out)
}

/// The most bytes one weight of a model rebuilt from a checkpoint may take: twice the checkpoint
/// file's size plus 1 MiB. The file holds every weight, so a larger request means a corrupt or hostile
/// model description, refused before it is allocated.
fn weight_bound(path: &Path) -> Result<usize> {
    let len = std::fs::metadata(path)
        .map_err(|e| Error::Io {
            context: format!("reading checkpoint {}", path.display()),
            message: e.to_string(),
        })?
        .len();
    Ok(usize::try_from(len)
        .unwrap_or(usize::MAX)
        .saturating_mul(2)
        .saturating_add(1 << 20))
}

/// Rebuilds the model saved in `path` on `backend` and loads its weights (in evaluation mode);
/// a checkpoint written on one backend loads on any other. The model description is checked
/// ([`ModelInfo::from_json`]), no weight may be larger than [`weight_bound`] allows, and weights
/// holding NaN or infinity are refused unless `allow_non_finite`. Temporary files that killed saves
/// of `path` left behind are removed first.
fn load_trained<B: Backend>(
    path: &Path,
    allow_non_finite: bool,
    backend: &B,
) -> Result<(Sequential<B>, ModelInfo)> {
    remove_stale_temp_files(path);
    check_input_file(path, "checkpoint")?;
    let info = ModelInfo::from_json(path, &checkpoint_metadata(path)?)?;
    let bound = weight_bound(path)?;
    let mut model = with_allocation_limit(bound, || {
        build_model(info.model, &info.input_shape, info.classes, 0, backend)
    })
    .map_err(|e| Error::Io {
        context: format!("reading checkpoint {}", path.display()),
        message: format!(
            "its model description ({} with input {:?} and {} classes) does not fit the weights \
             the file holds: {e}",
            info.model.name(),
            info.input_shape,
            info.classes
        ),
    })?;
    let options = CheckpointLoad { allow_non_finite };
    load_checkpoint_with(path, &model, None, backend, options)?;
    model.eval();
    Ok((model, info))
}

/// `nabla eval` on `backend`.
fn eval_on<B: Backend>(args: &EvalArgs, backend: &B) -> Result<()> {
    let cpu = CpuBackend::new();
    if args.batch_size == 0 {
        return Err(Error::invalid("--batch-size", "must be at least 1"));
    }
    let (model, info) = load_trained(&args.checkpoint, args.allow_non_finite, backend)?;
    let dataset = args.dataset.unwrap_or(info.dataset);
    let splits = data::load(dataset, args.data_dir.as_deref(), &cpu)?;
    if splits.input_shape != info.input_shape || splits.classes > info.classes {
        return Err(Error::invalid(
            "eval",
            format!(
                "the model takes {:?} inputs and {} classes, but {} has {:?} and {}",
                info.input_shape,
                info.classes,
                dataset.name(),
                splits.input_shape,
                splits.classes
            ),
        ));
    }
    let mut loader = loader_on(splits.test, args.batch_size, backend)?;
    let m = evaluate_model(&model, &mut loader, 5, Some(info.classes))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} ({}) on the {} test set, {} examples",
        args.checkpoint.display(),
        info.model.name(),
        dataset.name(),
        m.examples()
    );
    let _ = writeln!(out, "loss            {:.4}", m.loss());
    let _ = writeln!(out, "accuracy        {:.2}%", 100.0 * m.accuracy());
    let _ = writeln!(out, "top-5 accuracy  {:.2}%", 100.0 * m.top_k_accuracy());
    if let Some(cm) = m.confusion() {
        let _ = writeln!(
            out,
            "\nconfusion matrix (rows: actual class, columns: predicted class)"
        );
        let _ = write!(out, "{cm}");
        let _ = writeln!(out);
        let _ = write!(out, "{}", cm.report());
    }
    emit(&out)
}

/// `nabla predict` on `backend`: the input is read, classified and printed `--batch-size` examples
/// at a time, so memory is bounded by the batch, not the file. Nothing is printed before the first
/// batch has been read and checked; an error in a later batch stops after the rows already printed.
fn predict_on<B: Backend>(args: &PredictArgs, backend: &B) -> Result<()> {
    if args.batch_size == 0 {
        return Err(Error::invalid("--batch-size", "must be at least 1"));
    }
    let (model, info) = load_trained(&args.checkpoint, args.allow_non_finite, backend)?;
    let cpu = CpuBackend::new();
    let mut inputs = data::PredictInput::open(&args.input, &info.input_shape, args.header)?;
    let c = info.classes;
    let mut out = String::from("example,class,probability\n");
    let mut first = 0;
    while let Some(batch) = inputs.next_batch(args.batch_size, &cpu)? {
        let x = batch.to_backend(backend)?;
        let probs = no_grad(|| model.forward(&x)?.softmax(1))?;
        let host = probs.to_host()?.to_f64_vec(); // widened on the host: wgpu has no float64
        for (class, row) in argmax_rows(&host, c).into_iter().zip(host.chunks(c)) {
            let _ = writeln!(out, "{first},{class},{:.4}", row[class]);
            first += 1;
        }
        if !emit_open(&out)? {
            return Ok(()); // the reader has gone: nothing more is wanted
        }
        out.clear();
        // Each batch arrives in fresh host buffers, which the CPU backend would keep for reuse once
        // freed (up to its cache's 256 MiB): memory would grow with the file up to that cap.
        nabla_cpu::release_cached_buffers();
    }
    Ok(())
}
