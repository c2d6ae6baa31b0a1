//! What the ranks of a data-parallel `nabla train` must agree on before the first step: every
//! option that shapes the model, the batches, the number of steps or the collectives, and the
//! sizes of the data each rank loaded (`--data-dir` may name different copies on each machine).
//! `nabla_distributed::check_agreement` compares them across ranks.

use crate::args::TrainArgs;
use crate::info::{ModelInfo, value_name as name};

/// The record of `args` (with `lr` the learning rate in effect), the model `info` describes and
/// the `[train, validation, test]` example counts, as `(name, value)` entries.
pub fn train_record(
    args: &TrainArgs,
    lr: f64,
    info: &ModelInfo,
    sizes: [usize; 3],
) -> Vec<(String, String)> {
    let optional = |v: Option<u64>| v.map_or_else(|| "none".to_string(), |v| v.to_string());
    let entries = [
        ("--model", name(args.model)),
        ("--dataset", name(args.dataset)),
        ("--epochs", args.epochs.to_string()),
        ("--batch-size", args.batch_size.to_string()),
        ("--max-steps", optional(args.max_steps)),
        ("--bucket-mib", args.bucket_mib.to_string()),
        ("--optimizer", name(args.optimizer)),
        ("--lr", lr.to_string()),
        ("--schedule", name(args.schedule)),
        ("--seed", args.seed.to_string()),
        ("--checkpoint-every", optional(args.checkpoint_every)),
        ("--resume", args.resume.to_string()),
        ("--detect-anomaly", args.detect_anomaly.to_string()),
        (
            "--early-stopping",
            optional(args.early_stopping.map(|n| n as u64)),
        ),
        ("the input shape", format!("{:?}", info.input_shape)),
        ("the number of classes", info.classes.to_string()),
        ("the training examples", sizes[0].to_string()),
        ("the validation examples", sizes[1].to_string()),
        ("the test examples", sizes[2].to_string()),
    ];
    entries
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// The record of a run's position after `--resume`: every rank must continue from the same step.
pub fn position_record(epoch: u64, step: u64) -> Vec<(String, String)> {
    vec![
        ("the resumed epoch".to_string(), epoch.to_string()),
        ("the resumed step".to_string(), step.to_string()),
    ]
}
