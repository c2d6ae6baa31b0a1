//! The integration tests of nabla-data, one test binary with a module per area.

mod chunked;
mod corpus;
mod csv_rules;
mod fuzz;
mod hardening;
mod loader;
mod mutation;
mod npy_dtypes;
mod peak;
mod readers;
mod transforms_digits;
