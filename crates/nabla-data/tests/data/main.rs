//! The integration tests of nabla-data, one test binary with a module per area.

mod corpus;
mod fuzz;
mod hardening;
mod loader;
mod mutation;
mod peak;
mod readers;
mod transforms_digits;
