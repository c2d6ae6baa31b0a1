//! Derivative-rule tests of the eager autodiff engine: every recorded primitive (and every
//! differentiable unary and binary op) checked against central finite differences in `f64` with
//! [`nabla_tensor::check_gradients`], on seeded random inputs including broadcast shapes, non-contiguous
//! views and rank 0; second derivatives of the smooth ones with [`nabla_tensor::check_second_order`]
//! and with nested `grad` / `create_graph`; and exact values where a convention is involved (ties of
//! max and min, products with zeros, zero derivatives of rounding).

#[path = "autograd_rules/elementwise.rs"]
mod elementwise;
#[path = "autograd_rules/gradcheck_api.rs"]
mod gradcheck_api;
#[path = "autograd_rules/indexing.rs"]
mod indexing;
#[path = "autograd_rules/linalg.rs"]
mod linalg;
#[path = "autograd_rules/movement.rs"]
mod movement;
#[path = "autograd_rules/reduce.rs"]
mod reduce;
#[path = "autograd_rules/second_order.rs"]
mod second_order;
use crate::support;
