//! Every Backend method on wgpu compared against the CPU reference backend.

#[path = "../common/mod.rs"]
mod common;

mod batching;
mod elementwise;
mod fused;
mod linalg;
mod movement;
mod reduce;
