//! Owns scalar autodiff: [`Scalar`], dual numbers, the reverse-mode tape, fixed-size matrices.
//! Must not depend on anything: no nabla crate (no tensors, no backend) and no third-party crate.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! Automatic differentiation of scalar code: where a computation works on a handful of numbers
//! (simulation, optimisation, control, physics), a tensor graph is overhead. Write the function
//! once, generic over [`Scalar`], and run it on
//!
//! - `f64` / `f32` for the value,
//! - [`Dual<T>`] / [`DualN<T, N>`] for forward mode: one pass gives the value and `N` directional
//!   derivatives; duals nest (`Dual<Dual<f64>>`) for higher derivatives. Helpers: [`derivative`],
//!   [`gradient`], [`gradient_chunked`], [`jacobian`], [`hessian`].
//! - [`Var`] on a [`Tape`] for reverse mode: one recording and one [`Tape::backward`] sweep give
//!   the derivatives with respect to every input. Variables borrow the tape, so none outlives it.
//!
//! [`Vector<T, N>`] and [`Matrix<T, M, N>`] carry their sizes in the type (a shape mismatch does
//! not compile) and work with any of the above, including the LU [`Matrix::solve`].
//!
//! Every elementary function has one derivative rule (value and partials), shared by forward and
//! reverse mode. At kinks and ties the rules take JAX's conventions, which the tensor tier takes
//! too: `abs` has derivative 1 at 0, [`Scalar::relu`] 0 at 0, [`Scalar::sign`] 0 everywhere, a tie
//! of [`Scalar::max`] or [`Scalar::min`] gives each argument one half, and [`Scalar::clamp`] is
//! `min(max(x, lo), hi)` (one half at a bound).
//!
//! ```
//! use nabla_scalar::{Dual, Scalar, Tape, gradient};
//!
//! fn f<S: Scalar>(x: &[S; 2]) -> S {
//!     x[0] * x[1] + x[0].sin()
//! }
//!
//! // Forward mode, both partials in one pass on 2-component duals.
//! let g = gradient(f, &[1.0, 2.0]);
//!
//! // Reverse mode on a tape.
//! let tape = Tape::new();
//! let x = tape.vars([1.0, 2.0]);
//! let grads = tape.backward(f(&x));
//! assert_eq!([grads[x[0]], grads[x[1]]], g);
//! assert_eq!(g, [2.0 + 1.0_f64.cos(), 1.0]);
//!
//! // Plain numbers mix in: 2x + 1 at 3 has derivative 2.
//! let y = 2.0 * Dual::variable(3.0) + 1.0;
//! assert_eq!(y.deriv(), 2.0);
//! ```
#![warn(missing_docs)]

mod dual;
mod error;
mod forward;
mod mixed;
mod rules;
mod scalar;
mod shape;
mod tape;

pub use dual::{Dual, DualN};
pub use error::{Error, Result};
pub use forward::{derivative, gradient, gradient_chunked, hessian, jacobian};
pub use scalar::Scalar;
pub use shape::{Lu, Matrix, Vector};
pub use tape::{Gradients, Tape, Var, reverse_gradient};
