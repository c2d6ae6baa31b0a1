//! The integration tests of nabla-fft, one test binary: values against NumPy and derivatives against
//! JAX (fixtures from scripts/gen_fft_fixtures.py), central differences to second order, the adjoint
//! identity, traced and compiled programs, `vmap`, and edge cases (zero-size, strided, f32, errors).

mod cases;
mod edges;
mod fixtures;
mod support;
mod transforms;
