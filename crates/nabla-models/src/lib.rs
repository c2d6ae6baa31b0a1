//! Owns nabla's model zoo: reference architectures whose modules and parameters carry the names of
//! the libraries their weights come from (torchvision's ResNets, Hugging Face `transformers`' GPT-2,
//! BERT and ViT),
//! so that a state dict saved there (safetensors, or a `torch.save` file) loads by name, and a state
//! dict saved here loads there. Each model has a configuration with the published sizes, a
//! constructor with its library's initialisation, `load` for weights, and a forward pass checked
//! against the reference library's logits and gradients in the tests.
//!
//! Must depend only on `nabla-core`, `nabla-tensor` and `nabla-nn`: the zoo is built from the public
//! layers, as a user's own model would be. The command line and the Python package build on it.

pub mod bert;
pub mod encoder;
pub mod gpt2;
pub mod resnet;
pub mod vit;

pub use bert::{Bert, BertConfig, BertOutput};
pub use gpt2::{Gpt2, Gpt2Config};
pub use resnet::{ResNet, ResNetConfig};
pub use vit::{Vit, VitConfig};

use nabla_core::{Backend, Result};
use nabla_nn::{Module, Strictness, load_state_dict, load_tensors};
use std::path::Path;

/// Loads `model`'s parameters and buffers from the file at `path` (safetensors or `torch.save`),
/// after `rename` maps each name of the file to the model's (`None` leaves the tensor out). Every
/// parameter and buffer must be given, and every kept name must be the model's, with its shape;
/// the error lists each offender and changes nothing.
pub(crate) fn load_renamed<B: Backend, M: Module<B>>(
    model: &M,
    path: &Path,
    backend: &B,
    rename: impl Fn(&str) -> Option<String>,
) -> Result<()> {
    let file = load_tensors(path, backend)?;
    let state: Vec<_> = file
        .tensors
        .into_iter()
        .filter_map(|(name, t)| rename(&name).map(|n| (n, t)))
        .collect();
    load_state_dict(model, &state, Strictness::Strict).map(drop)
}
