//! The integration tests of nabla-tensor, one test binary with a module per area (the API, autodiff
//! rules in both modes, extension ops of a user family, traced programs and the compiler, composites,
//! complex numbers, JAX fixtures).

mod anomaly;
mod api;
mod autocast;
mod autograd_basics;
mod autograd_memory;
mod autograd_rules;
mod compiler_fusion;
mod compiler_passes;
mod compiler_reassociate;
mod compiler_support;
mod complex_autodiff;
mod composites;
mod custom_rules;
mod diagonal;
mod einsum;
mod errors;
mod extension_ops;
mod forward_mode;
mod fused_kernels;
mod fused_rows;
mod half_arithmetic;
mod int_dtypes;
mod jacobians;
mod jax_fixtures;
mod misuse;
mod primitives;
mod promotion;
mod shared_weight_gradients;
mod sizes;
mod slice_gradients;
#[path = "autograd_rules/support.rs"]
mod support;
mod traced;
mod traced_agreement;
mod vmap;
mod vmap_compose;
