//! Owns the `torch.nn`-style library: modules, params, layers, losses, optimizers, checkpoints.
//! Must not name a backend type (all generic over `B`); `nabla-cpu` serves only the LSTM's GEMMs.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! The neural-network library of nabla, shaped after PyTorch's `torch.nn` so that a ported model
//! trains the same way: [`Module`]s with dotted parameter names (`#[derive(Module)]`), layers with
//! PyTorch's defaults, initialisers, losses, optimizers, learning-rate schedulers and safetensors
//! checkpoints.
//!
//! Parameters are [`Param`]s: shared handles with a stable identity whose values are graph leaves,
//! so the eager autodiff of `nabla-tensor` gives their gradients with `loss.backward()`.
#![warn(missing_docs)]
#![forbid(unsafe_code)]

// Lets `#[derive(Module)]` inside this crate name it by its public path.
extern crate self as nabla_nn;

pub mod activation;
mod checkpoint;
pub mod init;
pub mod layers;
pub mod loss;
mod module;
pub mod optim;
mod param;
mod recompute;
mod safetensors_io;
pub mod sched;
mod sequential;
mod state;
mod torch_io;

pub use checkpoint::{
    CheckpointLoad, TrainingState, first_non_finite, is_checkpoint, load_checkpoint,
    load_checkpoint_with, read_training_state, save_checkpoint,
};
pub use layers::*;
pub use module::{Forward, LayerAlgebra, Module, join_name};
pub use nabla_derive::Module;
pub use param::{Param, ParamId, ParamKind};
pub use recompute::Checkpointed;
pub use safetensors_io::{
    TensorFile, create_temp_file, destination_problem, load_module, load_safetensors, load_tensors,
    remove_stale_temp_files, save_module, save_safetensors, write_atomic,
};
pub use sequential::Sequential;
pub use state::{LoadReport, Strictness, load_state_dict, transfer_state};
pub use torch_io::load_torch;
