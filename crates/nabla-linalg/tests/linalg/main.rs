//! The integration tests of nabla-linalg, one test binary: the original three ops (`core_ops`), JAX
//! transform fixtures through them, every transform entry point with no rule setup, the factorisations
//! and the spectral ops.

mod composite;
mod core_ops;
mod entry_points;
mod factor;
mod factor_complex;
mod jax_transforms;
mod solve_rule;
mod spectral;
mod spectral_cases;
mod support;
mod vmap;
mod zero_size;
