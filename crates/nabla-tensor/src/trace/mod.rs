//! Traced graphs by a recording backend.
//!
//! [`TracingBackend`] is a [`nabla_core::Backend`] whose buffers are symbolic values: running tensor code
//! (including the autodiff transforms) on `Tensor<TracingBackend>` records a [`Program`] instead of
//! computing. [`GraphExecutor`] replays a program on any real backend, releasing each buffer after its
//! last use.

mod backend;
mod compiler;
mod executor;
mod graph;
mod record;

pub use backend::{TracedTensor, TracedValue, TracingBackend};
pub use compiler::{CompileReport, GraphCompiler, IntoProgram, Pass, PassReport};
pub use executor::{GraphExecutor, RunStats};
pub use graph::{Node, Program, TraceOp, TraceOperand, ValueId, ValueInfo};
