//! The integration tests of nabla-nn, one test binary: each module is one area (layers, losses,
//! optimizers, ...); the `*_torch` modules compare with PyTorch fixtures via `torch_support`.

mod torch_support;

mod activations_torch;
mod init;
mod layers_torch;
mod losses_torch;
mod modules;
mod optim_fused;
mod optim_torch;
mod recompute;
mod sched_torch;
mod sdpa_torch;
mod sequence_torch;
mod torch_files;
mod traced_losses;
mod training;
