//! Layers with PyTorch's argument names, shapes and default initialisation.

mod linear;

pub use linear::Linear;
