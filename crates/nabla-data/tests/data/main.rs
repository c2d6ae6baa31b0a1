//! The integration tests of nabla-data, one test binary with a module per area.

mod corpus;
mod fuzz;
mod hardening;
mod loader;
mod peak;
mod readers;
mod transforms_digits;

/// Counts each thread's heap bytes, so the hardening and fuzz tests can bound a reader's memory.
#[global_allocator]
static ALLOCATOR: peak::Counting = peak::Counting;
