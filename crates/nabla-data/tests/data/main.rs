//! The integration tests of nabla-data, one test binary with a module per area.

mod loader;
mod readers;
mod transforms_digits;
