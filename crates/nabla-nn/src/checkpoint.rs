//! Training checkpoints: model state, optimizer state and the training position in one safetensors
//! file, written atomically, so a run resumed from it continues exactly as if it had not stopped.
//!
//! Layout (format version 2): model tensors under `model.<dotted name>`, optimizer tensors under
//! `optimizer.<name>`, and the [`TrainingState`]'s `extra` JSON as the `U8` tensor `nabla.extra`,
//! in the data rather than the header, so that it may grow without bound (a safetensors header may
//! not exceed 100 MB). The header's metadata holds `nabla.checkpoint` (format version),
//! `nabla.optimizer` (the optimizer's hyper-parameters and step counts, JSON) and `nabla.training`
//! (epoch, step and generator, JSON). Files of version 1, which kept `extra` in `nabla.training`,
//! still load.
//!
//! A checkpoint never holds NaN or infinity: [`save_checkpoint`] refuses a model or optimizer state
//! holding one, and [`load_checkpoint`] refuses such a file, each naming the tensor
//! ([`CheckpointLoad::allow_non_finite`] opens one for inspection).

use crate::module::Module;
use crate::optim::{Optimizer, OptimizerState};
use crate::safetensors_io::{
    Bytes, RawFile, all_finite, clip, encode_tensors, read_metadata, write_entries,
};
use crate::state::{Strictness, load_state_dict};
use nabla_core::{Backend, Error, Generator, Result};
use nabla_tensor::Tensor;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

const FORMAT_KEY: &str = "nabla.checkpoint";
const FORMAT_VERSION: &str = "2";
/// The format versions this build reads.
const READABLE_VERSIONS: [&str; 2] = ["1", "2"];
const OPTIMIZER_KEY: &str = "nabla.optimizer";
const TRAINING_KEY: &str = "nabla.training";
/// The tensor holding [`TrainingState::extra`] as JSON text.
const EXTRA_TENSOR: &str = "nabla.extra";
const MODEL_PREFIX: &str = "model.";
const OPTIMIZER_PREFIX: &str = "optimizer.";

/// Where training stands: what a resumed run needs besides the model and optimizer.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainingState {
    /// Completed epochs.
    pub epoch: u64,
    /// Completed optimizer steps.
    pub step: u64,
    /// The random generator's state (shuffling, dropout), if the run uses one.
    pub rng: Option<Generator>,
    /// Anything else (a scheduler's state, the best metric so far, ...), as JSON.
    pub extra: Value,
}

impl Default for TrainingState {
    fn default() -> Self {
        TrainingState {
            epoch: 0,
            step: 0,
            rng: None,
            extra: Value::Null,
        }
    }
}

impl TrainingState {
    /// What the header holds: the position (the `extra` JSON is stored as a tensor).
    fn position_json(&self) -> Value {
        json!({
            "epoch": self.epoch,
            "step": self.step,
            "rng": self.rng.as_ref().map(|g| json!({"seed": g.seed(), "counter": g.counter()})),
        })
    }

    /// The state from the header's position `v` and `extra`.
    fn from_json(path: &Path, v: &Value, extra: Value) -> Result<Self> {
        let bad = |what: &str| {
            checkpoint_error(
                path,
                format!("the training state's `{what}` is missing or not a number"),
            )
        };
        let rng = match &v["rng"] {
            Value::Null => None,
            r => Some(Generator::from_state(
                r["seed"].as_u64().ok_or_else(|| bad("rng.seed"))?,
                r["counter"].as_u64().ok_or_else(|| bad("rng.counter"))?,
            )),
        };
        Ok(TrainingState {
            epoch: v["epoch"].as_u64().ok_or_else(|| bad("epoch"))?,
            step: v["step"].as_u64().ok_or_else(|| bad("step"))?,
            rng,
            extra,
        })
    }
}

/// How [`load_checkpoint_with`] treats what it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointLoad {
    /// Load tensors holding NaN or infinity (to inspect a diverged or damaged run) instead of
    /// refusing the file.
    pub allow_non_finite: bool,
}

/// An error about the checkpoint at `path`.
fn checkpoint_error(path: &Path, message: impl Into<String>) -> Error {
    Error::Io {
        context: format!("reading checkpoint {}", path.display()),
        message: message.into(),
    }
}

/// Tensors by name.
type Named<B> = Vec<(String, Tensor<B>)>;

/// The tensors a checkpoint of `model` and `optimizer` holds, named as in the file, and the
/// optimizer's metadata.
fn named_state<B: Backend, M: Module<B> + ?Sized>(
    model: &M,
    optimizer: Option<&dyn Optimizer<B>>,
) -> (Named<B>, Option<Value>) {
    let mut tensors: Vec<(String, Tensor<B>)> = model
        .state_dict()
        .into_iter()
        .map(|(n, t)| (format!("{MODEL_PREFIX}{n}"), t))
        .collect();
    let meta = optimizer.map(|opt| {
        let state = opt.state_dict();
        tensors.extend(
            state
                .tensors
                .into_iter()
                .map(|(n, t)| (format!("{OPTIMIZER_PREFIX}{n}"), t)),
        );
        state.meta
    });
    (tensors, meta)
}

/// The name, as in a checkpoint file (`model.…` or `optimizer.…`), of the first tensor of the
/// model's parameters and buffers or of the optimizer's state that holds a NaN or an infinity, or
/// `None` when all values are finite. [`save_checkpoint`] refuses to save such a state; a training
/// loop of several processes asks first, on every rank, so that all take the same decision.
pub fn first_non_finite<B: Backend, M: Module<B> + ?Sized>(
    model: &M,
    optimizer: Option<&dyn Optimizer<B>>,
) -> Result<Option<String>> {
    for (name, t) in named_state(model, optimizer).0 {
        if !all_finite(&t.contiguous()?.to_host()?) {
            return Ok(Some(name));
        }
    }
    Ok(None)
}

/// Saves the model's parameters and buffers, the optimizer's state (if given) and the training
/// position to `path`, atomically (a temporary file renamed over `path`). A tensor holding NaN or
/// infinity is an [`Error::NonFinite`] naming it, and `path` is left as it was: a checkpoint never
/// holds a diverged model.
pub fn save_checkpoint<B: Backend, M: Module<B> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: Option<&dyn Optimizer<B>>,
    training: &TrainingState,
) -> Result<()> {
    let path = path.as_ref();
    let (tensors, optimizer_meta) = named_state(model, optimizer);
    let mut entries = encode_tensors(&tensors, |name, host| {
        if all_finite(host) {
            return Ok(());
        }
        Err(Error::NonFinite {
            op: "save_checkpoint",
            message: format!(
                "tensor `{name}` holds NaN or infinity, and a checkpoint never holds non-finite \
                 values: {} was left as it was",
                path.display()
            ),
        })
    })?;
    let extra = training.extra.to_string().into_bytes();
    entries.push((EXTRA_TENSOR.to_string(), Bytes::blob(extra)));
    let mut metadata = HashMap::new();
    metadata.insert(FORMAT_KEY.to_string(), FORMAT_VERSION.to_string());
    metadata.insert(
        TRAINING_KEY.to_string(),
        training.position_json().to_string(),
    );
    if let Some(meta) = optimizer_meta {
        metadata.insert(OPTIMIZER_KEY.to_string(), meta.to_string());
    }
    write_entries(path, &entries, &metadata)
}

/// Whether the file at `path` is a nabla checkpoint (a safetensors file whose header names a
/// checkpoint format), reading only its header. A missing, unreadable or damaged file is not one.
pub fn is_checkpoint(path: impl AsRef<Path>) -> bool {
    read_metadata(path.as_ref()).is_ok_and(|m| m.contains_key(FORMAT_KEY))
}

/// Checks that `metadata` is a checkpoint's, of a version this build reads.
fn check_format(path: &Path, metadata: &HashMap<String, String>) -> Result<()> {
    match metadata.get(FORMAT_KEY).map(String::as_str) {
        Some(v) if READABLE_VERSIONS.contains(&v) => Ok(()),
        Some(other) => Err(checkpoint_error(
            path,
            format!(
                "checkpoint format version {} is not supported (this build reads versions {})",
                clip(other),
                READABLE_VERSIONS.join(" and ")
            ),
        )),
        None => Err(checkpoint_error(
            path,
            "not a nabla checkpoint (no `nabla.checkpoint` entry); a plain state dict loads with \
             load_module",
        )),
    }
}

/// The JSON value of metadata entry `key` of the checkpoint at `path`, if present.
fn metadata_json(path: &Path, file: &RawFile, key: &str) -> Result<Option<Value>> {
    file.metadata
        .get(key)
        .map(|s| {
            serde_json::from_str(s).map_err(|e| {
                checkpoint_error(
                    path,
                    format!("`{key}` is not valid JSON: {}", clip(&e.to_string())),
                )
            })
        })
        .transpose()
}

/// The training state of the checkpoint `file` at `path`: the position from the header, `extra`
/// from the `nabla.extra` tensor (or, in version 1, from the header).
fn training_state(path: &Path, file: &RawFile) -> Result<TrainingState> {
    let position = metadata_json(path, file, TRAINING_KEY)?
        .ok_or_else(|| checkpoint_error(path, "the training state is missing"))?;
    let extra = match file.entries.iter().find(|e| e.name == EXTRA_TENSOR) {
        Some(entry) => serde_json::from_slice(file.bytes(entry)?).map_err(|e| {
            checkpoint_error(
                path,
                format!(
                    "`{EXTRA_TENSOR}` is not valid JSON: {}",
                    clip(&e.to_string())
                ),
            )
        })?,
        None => position["extra"].clone(),
    };
    TrainingState::from_json(path, &position, extra)
}

/// The training state of the checkpoint at `path` (position and `extra`), without building a model:
/// for a program that rebuilds the model from what it stored in `extra`.
pub fn read_training_state(path: impl AsRef<Path>) -> Result<TrainingState> {
    let path = path.as_ref();
    let file = RawFile::read(path)?;
    check_format(path, &file.metadata)?;
    training_state(path, &file)
}

/// The model's and the optimizer's tensors of checkpoint `file` at `path`, built on `backend`, with
/// their prefixes removed. A tensor of neither, or one holding NaN or infinity (unless
/// `options` allow it), is an error naming it.
fn read_state<B: Backend>(
    path: &Path,
    file: &RawFile,
    backend: &B,
    options: CheckpointLoad,
) -> Result<(Named<B>, Named<B>)> {
    let (mut model, mut optimizer) = (Vec::new(), Vec::new());
    for entry in file.entries.iter().filter(|e| e.name != EXTRA_TENSOR) {
        let name = entry.name.as_str();
        let (list, short) = match (
            name.strip_prefix(MODEL_PREFIX),
            name.strip_prefix(OPTIMIZER_PREFIX),
        ) {
            (Some(short), _) => (&mut model, short),
            (_, Some(short)) => (&mut optimizer, short),
            _ => {
                return Err(checkpoint_error(
                    path,
                    format!(
                        "tensor `{}` belongs to neither the model nor the optimizer",
                        clip(name)
                    ),
                ));
            }
        };
        let host = file.host(entry)?;
        if !options.allow_non_finite && !all_finite(&host) {
            return Err(checkpoint_error(
                path,
                format!(
                    "tensor `{}` holds NaN or infinity (the run diverged or the file is damaged); \
                     `--allow-non-finite` (CheckpointLoad::allow_non_finite) opens it for \
                     inspection",
                    clip(name)
                ),
            ));
        }
        list.push((short.to_string(), file.tensor(entry, host, backend)?));
    }
    Ok((model, optimizer))
}

/// Restores a checkpoint written by [`save_checkpoint`]: the model's parameters and buffers (every
/// name must match, see [`load_state_dict`]), the optimizer's state when `optimizer` is given, and
/// returns the training position. A tensor holding NaN or infinity is an error naming it (see
/// [`load_checkpoint_with`] to open such a file). On any error nothing is changed.
pub fn load_checkpoint<B: Backend, M: Module<B> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: Option<&mut dyn Optimizer<B>>,
    backend: &B,
) -> Result<TrainingState> {
    load_checkpoint_with(path, model, optimizer, backend, CheckpointLoad::default())
}

/// [`load_checkpoint`] with `options`: `allow_non_finite` loads a checkpoint whose tensors hold NaN
/// or infinity (written by another tool, or damaged) for inspection.
pub fn load_checkpoint_with<B: Backend, M: Module<B> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: Option<&mut dyn Optimizer<B>>,
    backend: &B,
    options: CheckpointLoad,
) -> Result<TrainingState> {
    let path = path.as_ref();
    let file = RawFile::read(path)?;
    check_format(path, &file.metadata)?;
    let training = training_state(path, &file)?;
    let (model_state, optimizer_tensors) = read_state(path, &file, backend, options)?;
    let optimizer_state = match (&optimizer, metadata_json(path, &file, OPTIMIZER_KEY)?) {
        (Some(_), None) => {
            return Err(checkpoint_error(
                path,
                "the checkpoint holds no optimizer state, but an optimizer was given to restore",
            ));
        }
        (_, meta) => meta.map(|meta| OptimizerState {
            tensors: optimizer_tensors,
            meta,
        }),
    };
    // The model is restored first (all or nothing); if the optimizer then refuses its state, the
    // model's previous values are put back.
    let previous = model.state_dict();
    load_state_dict(model, &model_state, Strictness::Strict)
        .map_err(|e| checkpoint_error(path, e.to_string()))?;
    if let (Some(opt), Some(state)) = (optimizer, optimizer_state)
        && let Err(e) = opt.load_state_dict(&state)
    {
        load_state_dict(model, &previous, Strictness::Strict)?;
        return Err(checkpoint_error(path, e.to_string()));
    }
    Ok(training)
}
