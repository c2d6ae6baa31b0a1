//! The integration tests of nabla-scalar, one test binary with a module per area.

mod agree;
mod functions;
mod higher_order;
mod shapes;
mod tape;
