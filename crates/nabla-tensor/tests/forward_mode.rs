//! Forward-mode autodiff: every primitive's JVP rule checked against its (finite-difference tested)
//! reverse rule through the adjoint identity `<u, J v> == <Jᵀ u, v>` in `f64`, a few directly against
//! central finite differences; Jacobians by forward and reverse mode, Hessians, Hessian-vector
//! products and higher derivatives, with `jvp`, `grad` and `vjp` nested in every order; and the
//! errors of the forward-mode transforms.

#[path = "forward_mode/composites.rs"]
mod composites;
#[path = "forward_mode/elementwise.rs"]
mod elementwise;
#[path = "forward_mode/errors.rs"]
mod errors;
#[path = "forward_mode/gram.rs"]
mod gram;
#[path = "forward_mode/helpers.rs"]
pub(crate) mod helpers;
#[path = "forward_mode/indexing.rs"]
mod indexing;
#[path = "forward_mode/jacobians.rs"]
mod jacobians;
#[path = "forward_mode/linalg.rs"]
mod linalg;
#[path = "forward_mode/movement.rs"]
mod movement;
#[path = "forward_mode/nesting.rs"]
mod nesting;
#[path = "forward_mode/reduce.rs"]
mod reduce;
// The seeded-input helpers of the reverse-rule tests; not every one is used here.
#[allow(dead_code)]
use crate::support;
