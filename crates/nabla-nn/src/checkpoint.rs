//! Training checkpoints: model state, optimizer state and the training position in one safetensors
//! file, written atomically, so a run resumed from it continues exactly as if it had not stopped.
//!
//! Layout: model tensors under `model.<dotted name>`, optimizer tensors under `optimizer.<name>`;
//! the header's metadata holds `nabla.checkpoint` (format version), `nabla.optimizer` (the
//! optimizer's hyper-parameters and step counts, JSON) and `nabla.training` (the [`TrainingState`],
//! JSON).

use crate::module::Module;
use crate::optim::{Optimizer, OptimizerState};
use crate::safetensors_io::{load_safetensors, save_safetensors};
use crate::state::{Strictness, load_state_dict};
use nabla_core::{Backend, Error, Generator, Result};
use nabla_tensor::Tensor;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;

const FORMAT_KEY: &str = "nabla.checkpoint";
const FORMAT_VERSION: &str = "1";
const OPTIMIZER_KEY: &str = "nabla.optimizer";
const TRAINING_KEY: &str = "nabla.training";
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
    fn to_json(&self) -> Value {
        json!({
            "epoch": self.epoch,
            "step": self.step,
            "rng": self.rng.as_ref().map(|g| json!({"seed": g.seed(), "counter": g.counter()})),
            "extra": self.extra,
        })
    }

    fn from_json(path: &Path, v: &Value) -> Result<Self> {
        let bad = |what: &str| Error::Io {
            context: format!("reading checkpoint {}", path.display()),
            message: format!("the training state's `{what}` is missing or not a number"),
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
            extra: v["extra"].clone(),
        })
    }
}

/// Saves the model's parameters and buffers, the optimizer's state (if given) and the training
/// position to `path`, atomically (a temporary file renamed over `path`).
pub fn save_checkpoint<B: Backend, M: Module<B> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: Option<&dyn Optimizer<B>>,
    training: &TrainingState,
) -> Result<()> {
    let mut tensors: Vec<(String, Tensor<B>)> = model
        .state_dict()
        .into_iter()
        .map(|(n, t)| (format!("{MODEL_PREFIX}{n}"), t))
        .collect();
    let mut metadata = HashMap::new();
    metadata.insert(FORMAT_KEY.to_string(), FORMAT_VERSION.to_string());
    metadata.insert(TRAINING_KEY.to_string(), training.to_json().to_string());
    if let Some(opt) = optimizer {
        let state = opt.state_dict();
        tensors.extend(
            state
                .tensors
                .into_iter()
                .map(|(n, t)| (format!("{OPTIMIZER_PREFIX}{n}"), t)),
        );
        metadata.insert(OPTIMIZER_KEY.to_string(), state.meta.to_string());
    }
    save_safetensors(path, &tensors, &metadata)
}

/// Restores a checkpoint written by [`save_checkpoint`]: the model's parameters and buffers (every
/// name must match, see [`load_state_dict`]), the optimizer's state when `optimizer` is given, and
/// returns the training position. On any error nothing is changed.
pub fn load_checkpoint<B: Backend, M: Module<B> + ?Sized>(
    path: impl AsRef<Path>,
    model: &M,
    optimizer: Option<&mut dyn Optimizer<B>>,
    backend: &B,
) -> Result<TrainingState> {
    let path = path.as_ref();
    let bad = |message: String| Error::Io {
        context: format!("reading checkpoint {}", path.display()),
        message,
    };
    let file = load_safetensors(path, backend)?;
    match file.metadata.get(FORMAT_KEY).map(String::as_str) {
        Some(FORMAT_VERSION) => {}
        Some(other) => {
            return Err(bad(format!(
                "checkpoint format version {other} is not supported (this build reads version {FORMAT_VERSION})"
            )));
        }
        None => {
            return Err(bad(
                "not a nabla checkpoint (no `nabla.checkpoint` entry); a plain state dict loads with load_module".into(),
            ));
        }
    }
    let json = |key: &str| -> Result<Option<Value>> {
        file.metadata
            .get(key)
            .map(|s| {
                serde_json::from_str(s).map_err(|e| bad(format!("`{key}` is not valid JSON: {e}")))
            })
            .transpose()
    };
    let training = TrainingState::from_json(
        path,
        &json(TRAINING_KEY)?.ok_or_else(|| bad("the training state is missing".into()))?,
    )?;
    let mut model_state = Vec::new();
    let mut optimizer_tensors = Vec::new();
    for (name, t) in file.tensors {
        if let Some(n) = name.strip_prefix(MODEL_PREFIX) {
            model_state.push((n.to_string(), t));
        } else if let Some(n) = name.strip_prefix(OPTIMIZER_PREFIX) {
            optimizer_tensors.push((n.to_string(), t));
        } else {
            return Err(bad(format!(
                "tensor `{name}` belongs to neither the model nor the optimizer"
            )));
        }
    }
    let optimizer_state = match (&optimizer, json(OPTIMIZER_KEY)?) {
        (Some(_), None) => {
            return Err(bad(
                "the checkpoint holds no optimizer state, but an optimizer was given to restore"
                    .into(),
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
    load_state_dict(model, &model_state, Strictness::Strict).map_err(|e| bad(e.to_string()))?;
    if let (Some(opt), Some(state)) = (optimizer, optimizer_state)
        && let Err(e) = opt.load_state_dict(&state)
    {
        load_state_dict(model, &previous, Strictness::Strict)?;
        return Err(bad(e.to_string()));
    }
    Ok(training)
}
