//! Eager reverse-mode automatic differentiation.
//!
//! Ops on tracked tensors (variables made with [`Tensor::var`](crate::Tensor::var), and everything
//! computed from them) record a graph node holding the primitive that ran and the values its reverse
//! rule needs. [`Tensor::backward`](crate::Tensor::backward) walks that graph from the output, applying
//! one rule per node, freeing each saved value once its node has run. The rules are written in tensor
//! ops, so with `create_graph` the reverse pass is itself recorded and can be differentiated again, to
//! any order. Untracked tensors carry no node and pay only a pointer check per op.
//!
//! Forward mode ([`jvp`], [`jacfwd`], [`hessian`], [`hvp`]) records the same graph and pushes tangents
//! from the inputs to the output with one forward rule per primitive; forward and reverse rules read the
//! same saved values and are tested against each other by the adjoint identity.

mod accumulate;
mod anomaly;
mod backward;
mod context;
mod custom;
mod custom_call;
pub(crate) mod extension;
mod extension_rules;
mod forward;
mod functional;
mod grad_mode;
mod gradcheck;
mod jacobian;
mod node;
pub(crate) mod op;
mod parallel;
mod pass;
mod sum_to;

pub use anomaly::{AnomalyGuard, detect_anomaly, is_anomaly_detection_enabled};
pub use backward::{Gradients, VarId};
pub use context::{AdContext, AdContextBuilder};
pub use custom::checkpoint;
pub use custom_call::{CustomArgs, CustomFn, CustomForwardRule, CustomReverseRule};
pub use extension_rules::{ExtensionFamily, ExtensionRules, ForwardRule, ReverseRule, RuleArgs};
pub use forward::{hessian, hvp, jacfwd, jacrev, jvp, jvp_n};
pub use functional::{
    Pullback, grad, grad_n, value_and_grad, value_and_grad_n, vjp, vjp_fn_n, vjp_n,
};
pub use grad_mode::{NoGradGuard, is_grad_enabled, no_grad, set_grad_enabled};
pub use gradcheck::{
    ElementCheck, GradCheckOptions, GradCheckReport, InputCheck, check_gradients,
    check_second_order,
};
pub use jacobian::{
    JacobianBlocks, Linearized, hessian_n, jacfwd_n, jacrev_n, linearize, linearize_n,
};
pub(crate) use node::Node;
pub use node::is_recorded;
pub(crate) use op::{Op, View};
pub use pass::{BackwardOptions, ParallelBackward};
