//! The command-line arguments (clap derive).

use crate::data::DatasetKind;
use crate::models::ModelKind;
use clap::{Args, Parser, Subcommand, ValueEnum};
use nabla_core::{Error, Result};
use std::path::PathBuf;

/// The default checkpoint file, in the current directory.
pub const DEFAULT_CHECKPOINT: &str = "nabla-checkpoint.safetensors";

/// Examples shown at the end of `nabla --help`.
const EXAMPLES: &str = "Examples:
  nabla train                              CNN on the embedded digits: about 98% in 10 s
  nabla train --model resnet --epochs 20   a small residual network instead
  nabla train --dataset fashion-mnist --batch-size 64 --epochs 5
  nabla train --dataset cifar10 --data-dir cifar-10-batches-bin --model resnet18 --optimizer sgd
  nabla train --epochs 30 --resume         continue the saved run up to epoch 30
  nabla train --backend wgpu               train on the GPU (wgpu: Vulkan, Metal, DirectX 12)
  nabla eval                               test metrics of nabla-checkpoint.safetensors
  nabla predict --input images.npy         classify the rows of a .npy or .csv file
  nabla generate --model gpt2 --weights model.safetensors --prompt-ids 464,3290 --top-k 40";

/// Train, evaluate and run small image classifiers with nabla.
///
/// Start with `nabla train`: it trains a small CNN on the handwritten digits embedded in nabla
/// (no download), prints the test accuracy after every epoch, saves the model to
/// nabla-checkpoint.safetensors and draws the loss and accuracy curves in nabla-train.svg.
/// Then `nabla eval` reports the test metrics of the saved model and `nabla predict --input
/// FILE` classifies new images.
#[derive(Parser, Debug)]
#[command(
    name = "nabla",
    version,
    arg_required_else_help = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Train a classifier (default: a small CNN on the embedded digits, about 98% test accuracy).
    Train(TrainArgs),
    /// Evaluate a saved checkpoint on a test set: loss, accuracy, top-5 accuracy, confusion matrix
    /// and per-class precision, recall and F1.
    Eval(EvalArgs),
    /// Classify the examples of a .npy or .csv file with a saved checkpoint.
    Predict(PredictArgs),
    /// Sample tokens from a GPT-2 checkpoint (Hugging Face's names: model.safetensors or
    /// pytorch_model.bin) with temperature and top-k, over the model's key-value cache.
    Generate(GenerateArgs),
}

/// The optimizers `--optimizer` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OptimizerKind {
    /// Stochastic gradient descent with Nesterov momentum 0.9 (default lr 0.05).
    Sgd,
    /// Adam (default lr 0.003).
    Adam,
    /// AdamW: Adam with decoupled weight decay 0.01 (default lr 0.003).
    Adamw,
}

/// The learning-rate schedules `--schedule` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScheduleKind {
    /// A constant learning rate.
    None,
    /// Cosine annealing from lr to 0 over the epochs (stepped per epoch).
    Cosine,
    /// lr times 0.1 after a third and after two thirds of the epochs.
    Step,
    /// One cycle: warm up to lr over 30% of the steps, then anneal (stepped per batch).
    Onecycle,
}

/// Options shared by every subcommand.
#[derive(Args, Debug, Clone)]
pub struct CommonArgs {
    /// Compute threads (default: one per core; at most eight per core).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// The compute backend: the CPU, a GPU through wgpu (Vulkan, Metal, DirectX 12), or an NVIDIA
    /// GPU through CUDA. Data is loaded on the CPU and each batch is moved to the backend;
    /// checkpoints load on any of them.
    #[arg(long, value_enum, default_value_t = BackendKind::Cpu)]
    pub backend: BackendKind,
}

/// The backends `--backend` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    /// The multi-threaded CPU backend.
    Cpu,
    /// The GPU backend on wgpu: the default adapter (a GPU, or a software one such as Mesa's
    /// lavapipe). Needs a build with the `wgpu` feature (on by default).
    Wgpu,
    /// The NVIDIA GPU backend on CUDA: device 0. Needs the NVIDIA driver and CUDA 13's NVRTC and
    /// cuBLAS at run time, and a build with the `cuda` feature (on by default).
    Cuda,
}

/// `nabla train`.
#[derive(Args, Debug)]
pub struct TrainArgs {
    /// The model to train.
    #[arg(long, value_enum, default_value_t = ModelKind::Cnn)]
    pub model: ModelKind,
    /// The data set: the embedded digits, MNIST / Fashion-MNIST IDX files or CIFAR binary files
    /// from --data-dir.
    #[arg(long, value_enum, default_value_t = DatasetKind::Digits)]
    pub dataset: DatasetKind,
    /// Directory of the files of mnist / fashion-mnist (IDX; fashion-mnist defaults to
    /// /usr/share/datasets/fashion-mnist, where `apt install dataset-fashion-mnist` puts them) or
    /// cifar10 / cifar100 (the binary version).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Total number of epochs, 1 to 1,000,000 (a resumed run continues up to this number).
    #[arg(long, default_value_t = 15, value_name = "N")]
    pub epochs: u64,
    /// Examples per batch. Under `mpirun` this is the global batch, split evenly across the ranks
    /// (it must be a multiple of their number).
    #[arg(long, default_value_t = 32, value_name = "N")]
    pub batch_size: usize,
    /// Stop after N optimizer steps in all (a run stopped inside an epoch saves a mid-epoch
    /// checkpoint, which --resume continues).
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// Sum the gradients of N batches (each loss divided by N) into every optimizer step: steps
    /// of N x --batch-size examples in the memory of one batch. Steps, schedules,
    /// --checkpoint-every and --max-steps count optimizer steps.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub accumulate: usize,
    /// Under `mpirun`: the size in MiB of the buckets in which gradients are all-reduced while the
    /// backward pass runs (PyTorch DDP's default, 25).
    #[arg(long, default_value_t = 25.0, value_name = "MIB")]
    pub bucket_mib: f64,
    /// The optimizer.
    #[arg(long, value_enum, default_value_t = OptimizerKind::Adam)]
    pub optimizer: OptimizerKind,
    /// Learning rate, a positive number (default: 0.003 for adam and adamw, 0.05 for sgd).
    #[arg(long, value_name = "LR", allow_negative_numbers = true)]
    pub lr: Option<f64>,
    /// Learning-rate schedule.
    #[arg(long, value_enum, default_value_t = ScheduleKind::None)]
    pub schedule: ScheduleKind,
    /// Seed of the initial weights and of the shuffling (the digits' 80/20 split is fixed).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Checkpoint file, written after every epoch (model, optimizer and position).
    #[arg(long, default_value = DEFAULT_CHECKPOINT, value_name = "PATH")]
    pub checkpoint: PathBuf,
    /// Also write the checkpoint every N optimizer steps.
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<u64>,
    /// Continue the run saved in --checkpoint exactly where it stopped (same options needed).
    #[arg(long)]
    pub resume: bool,
    /// Start a zoo model from published weights: torchvision's for resnet18, resnet34 and
    /// resnet50, Hugging Face transformers' for vit-tiny; a .pth/.bin file (torch.save) or
    /// safetensors. The stem, the ViT's positions and the classifier keep their fresh start when
    /// the file's are for other images or classes (ImageNet's 7x7 stem or 16x16 patches, 1,000
    /// classes).
    #[arg(long, value_name = "FILE")]
    pub pretrained: Option<PathBuf>,
    /// Check every op of each training step for NaN and infinity (slower): a diverged run stops with
    /// an error naming the op that first produced one.
    #[arg(long)]
    pub detect_anomaly: bool,
    /// Stop when the test loss has not improved for N epochs.
    #[arg(long, value_name = "N")]
    pub early_stopping: Option<usize>,
    /// Background threads that prepare batches (0: load in the training thread; at most the
    /// --threads limit).
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub workers: usize,
    /// Per-epoch log: CSV if PATH ends in .csv, JSON lines if it ends in .jsonl.
    #[arg(long, value_name = "PATH")]
    pub log: Option<PathBuf>,
    /// SVG plot of the loss and accuracy curves, written at the end.
    #[arg(long, default_value = "nabla-train.svg", value_name = "PATH")]
    pub plot: PathBuf,
    /// Do not write the plot.
    #[arg(long)]
    pub no_plot: bool,
    /// Write a TensorBoard event file into DIR (created if needed; a new file per run): the loss of
    /// every step, each epoch's metrics and learning rate, weight histograms and the run's options
    /// as hyperparameters. View with `tensorboard --logdir DIR`.
    #[arg(long, value_name = "DIR")]
    pub tensorboard: Option<PathBuf>,
    /// Replace existing checkpoint, log and plot files that nabla did not write (without it such a
    /// file is an error; files nabla wrote are replaced either way, a symbolic link never is).
    #[arg(long)]
    pub overwrite: bool,
    /// No progress bar and no per-epoch lines (the final result is still printed).
    #[arg(long, short)]
    pub quiet: bool,
    /// Threads and backend.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `nabla eval`.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The checkpoint written by `nabla train`.
    #[arg(long, default_value = DEFAULT_CHECKPOINT, value_name = "PATH")]
    pub checkpoint: PathBuf,
    /// The data set whose test split is evaluated (default: the one the model was trained on).
    #[arg(long, value_enum)]
    pub dataset: Option<DatasetKind>,
    /// Directory of the IDX files of mnist / fashion-mnist.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Examples per batch.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub batch_size: usize,
    /// Open a checkpoint whose weights hold NaN or infinity (refused otherwise), to inspect it.
    #[arg(long)]
    pub allow_non_finite: bool,
    /// Threads and backend.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// `nabla predict`.
#[derive(Args, Debug)]
pub struct PredictArgs {
    /// The checkpoint written by `nabla train`.
    #[arg(long, default_value = DEFAULT_CHECKPOINT, value_name = "PATH")]
    pub checkpoint: PathBuf,
    /// Examples to classify: a .npy array or a .csv table, one example per row, values scaled as
    /// in training (pixels in [0, 1]; for the digits: the 0..16 counts divided by 16).
    #[arg(long, value_name = "FILE")]
    pub input: PathBuf,
    /// Examples read and classified at a time: memory grows with the batch, not the file.
    #[arg(long, default_value_t = 256, value_name = "N")]
    pub batch_size: usize,
    /// The first row of the .csv input is a header (without it, the first row is a header only
    /// when none of its fields is a number).
    #[arg(long)]
    pub header: bool,
    /// Open a checkpoint whose weights hold NaN or infinity (refused otherwise), to inspect it.
    #[arg(long)]
    pub allow_non_finite: bool,
    /// Threads and backend.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The language models `nabla generate --model` offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum GenerateModel {
    /// GPT-2 of the model zoo (Hugging Face's names), any size.
    Gpt2,
}

/// `nabla generate`.
#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// The architecture of --weights.
    #[arg(long, value_enum, default_value_t = GenerateModel::Gpt2)]
    pub model: GenerateModel,
    /// The weights: Hugging Face's GPT-2 (`transformer.` names or not), safetensors or a torch.save
    /// file. The sizes come from the weights; the heads from --n-head, a config.json beside the
    /// weights, or GPT-2's width of 64 per head.
    #[arg(long, value_name = "FILE")]
    pub weights: PathBuf,
    /// The prompt's token ids, comma-separated (`464,3290,318`).
    #[arg(long, value_name = "IDS", conflicts_with = "prompt_text")]
    pub prompt_ids: Option<String>,
    /// The prompt as text, for a byte-level model (a vocabulary of 256: each byte a token); the
    /// continuation is printed as text too.
    #[arg(long, value_name = "TEXT")]
    pub prompt_text: Option<String>,
    /// Tokens to sample (fewer when --eos-id comes up or the context is full).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub max_new_tokens: usize,
    /// Divides the logits before sampling: below 1 sharper, above 1 flatter; 0 takes the most
    /// likely token every step (greedy).
    #[arg(long, default_value_t = 1.0, value_name = "T")]
    pub temperature: f64,
    /// Sample among the K most likely tokens only (0: all of them).
    #[arg(long, default_value_t = 50, value_name = "K")]
    pub top_k: usize,
    /// Stop after sampling this token.
    #[arg(long, value_name = "ID")]
    pub eos_id: Option<i64>,
    /// Attention heads (default: from config.json beside the weights, or 64 features per head).
    #[arg(long, value_name = "N")]
    pub n_head: Option<usize>,
    /// The seed of the sampling.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Threads and backend.
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The most epochs `--epochs` accepts (schedules count steps in `i64`).
pub const MAX_EPOCHS: u64 = 1_000_000;

impl TrainArgs {
    /// The learning rate in effect: `--lr`, or the optimizer's default.
    pub fn learning_rate(&self) -> f64 {
        self.lr.unwrap_or(match self.optimizer {
            OptimizerKind::Sgd => 0.05,
            OptimizerKind::Adam | OptimizerKind::Adamw => 3e-3,
        })
    }

    /// Checks the numbers of `nabla train` before anything is loaded or written: a batch size, epochs
    /// in `1..=MAX_EPOCHS`, a positive finite learning rate, at least one step between checkpoints
    /// and no more loader workers than the thread limit.
    pub fn validate(&self) -> Result<()> {
        if self.batch_size == 0 || !(1..=MAX_EPOCHS).contains(&self.epochs) {
            return Err(Error::invalid(
                "--batch-size, --epochs",
                format!(
                    "--batch-size must be at least 1 and --epochs 1..={MAX_EPOCHS}, got \
                     --batch-size {} --epochs {}",
                    self.batch_size, self.epochs
                ),
            ));
        }
        let lr = self.learning_rate();
        if !(lr.is_finite() && lr > 0.0) {
            return Err(Error::invalid(
                "--lr",
                format!("the learning rate must be a positive finite number, got {lr}"),
            ));
        }
        if self.checkpoint_every == Some(0) || self.max_steps == Some(0) || self.accumulate == 0 {
            return Err(Error::invalid(
                "--checkpoint-every, --max-steps, --accumulate",
                "must be at least 1",
            ));
        }
        if !(self.bucket_mib.is_finite() && self.bucket_mib > 0.0 && self.bucket_mib <= 65536.0) {
            return Err(Error::invalid(
                "--bucket-mib",
                format!(
                    "expected a size in MiB in (0, 65536], got {}",
                    self.bucket_mib
                ),
            ));
        }
        let max = nabla_cpu::max_threads();
        if self.workers > max {
            return Err(Error::invalid(
                "--workers",
                format!(
                    "{} loader threads is more than the limit of {max} (eight per core)",
                    self.workers
                ),
            ));
        }
        if self.pretrained.is_some() && !self.model.is_zoo() {
            return Err(Error::invalid(
                "--pretrained",
                format!(
                    "--model {} has no published weights; --pretrained applies to resnet18, \
                     resnet34, resnet50 and vit-tiny",
                    self.model.name()
                ),
            ));
        }
        Ok(())
    }
}
