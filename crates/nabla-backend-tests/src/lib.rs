//! Owns the conformance suite that every backend runs: fixtures, properties and kernel checks.
//! Must not depend on a concrete backend: each backend's own crate runs the suite on itself.
//!
//! The layering of the crates, and the rules above, are described in the architecture chapter of
//! the book, `docs/src/architecture.md`.
//!
//! The conformance suite of nabla: one set of checks, generic over the [`Backend`], that every
//! backend runs (in the spirit of Burn's `burn-backend-tests` and Candle's `test_device!`).
//!
//! It has three parts:
//! - the **NumPy fixtures** (`fixtures/numpy_*.json`, written by `scripts/gen_numpy_fixtures.py`):
//!   each case names an op, its parameters, its inputs (often seen through strided, flipped or
//!   broadcast views) and NumPy's result, and is run through the `Tensor` API;
//! - **properties** (proptest) of every op family against plain-Rust references, over random
//!   shapes (empty and rank-0 included), broadcasting and non-contiguous views;
//! - **direct kernel checks** of Backend methods the Tensor API does not reach on its own
//!   (pooling, the convolution gradients, `select`, `pad`, `concat`, `one_hot`, `topk`, `cumsum`,
//!   `scatter_add`...), called on the backend itself and compared with naive loops.
//!
//! A backend states what it supports in [`Capabilities`]: its dtypes (cases needing another are
//! skipped *and counted*, never silently passed), extra float tolerances per dtype, and whether
//! float results are bit-exact where IEEE 754 makes them so. [`conformance_suite!`] expands to one
//! `#[test]` per [`FAMILIES`] entry, so a failure names its family and backend:
//!
//! ```
//! // crates/nabla-cpu/tests/conformance.rs
//! use nabla_backend_tests::{Capabilities, conformance_suite};
//! use nabla_core::DType;
//! use nabla_cpu::CpuBackend;
//!
//! conformance_suite!(mod cpu, make = CpuBackend::new, caps = Capabilities::all());
//!
//! // A device that may be absent (a GPU): `None` skips with a message, or fails when CI=true.
//! conformance_suite!(
//!     mod maybe_absent,
//!     try_make = || Some(CpuBackend::new()),
//!     caps = Capabilities::new(&[DType::F32, DType::I32, DType::I64, DType::U8, DType::Bool])
//!         .with_tolerance(DType::F32, 1e-4, 1e-5)
//!         .inexact_floats()
//! );
//! # fn main() {}
//! ```

#![warn(missing_docs)]

mod caps;
pub mod direct;
pub mod fixtures;
pub mod properties;
mod suite;

pub use caps::{Capabilities, Tolerance};
pub use suite::{
    Check, FAMILIES, SameBuffer, Suite, family, probe, run_family, try_run_family,
    try_run_family_required_by,
};

#[doc(hidden)]
pub use nabla_core as __core;

/// Expands to one `#[test]` per conformance family ([`FAMILIES`]) for one backend.
///
/// - `make` is a function or closure returning the backend, called once per test;
/// - `try_make` instead returns `Option<B>`: `None` (no device) skips every family with a message, except
///   when the environment variable `CI` is `true`, where it fails; with `required_by = "VAR"` after
///   `caps` (a device CI never has), it fails only when `VAR` is `1`;
/// - `caps` is the backend's [`Capabilities`];
/// - an optional leading `mod name,` puts the tests in a module of that name (which imports the caller's
///   scope), so that several backends can share one test file.
///
/// Each test prints `N cases skipped for dtype X` for what the capabilities excluded and fails with every
/// failing check of its family listed, naming the family and the backend.
#[macro_export]
macro_rules! conformance_suite {
    (mod $m:ident, $($rest:tt)*) => {
        mod $m {
            #[allow(unused_imports)]
            use super::*;
            $crate::conformance_suite!($($rest)*);
        }
    };
    (make = $make:expr, caps = $caps:expr $(,)?) => {
        $crate::conformance_suite!(@all (Some(($make)())), $caps, "CI", "true");
    };
    (try_make = $make:expr, caps = $caps:expr, required_by = $var:literal $(,)?) => {
        $crate::conformance_suite!(@all (($make)()), $caps, $var, "1");
    };
    (try_make = $make:expr, caps = $caps:expr $(,)?) => {
        $crate::conformance_suite!(@all (($make)()), $caps, "CI", "true");
    };
    (@all $made:expr, $caps:expr, $var:literal, $value:literal) => {
        $crate::conformance_suite!(@families $made, $caps, $var, $value;
            unary binary compare cast reduce matmul movement indexing creation_random conv_pool large
            numpy_binary numpy_cast numpy_compare numpy_complex numpy_creation numpy_indexing
            numpy_matmul numpy_movement numpy_reduce numpy_unary);
    };
    (@families $made:expr, $caps:expr, $var:literal, $value:literal; $($family:ident)*) => {
        $(
            #[test]
            fn $family() {
                #[allow(unused_imports)]
                use $crate::probe::{ByEq as _, Unknown as _};
                let made = $made;
                let same_buffer = (&$crate::probe::Probe::of(&made)).same_buffer();
                let suite = made.map(|b| $crate::Suite::new(b, $caps).with_same_buffer(same_buffer));
                $crate::try_run_family_required_by(stringify!($family), suite, $var, $value);
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    /// The macro emits exactly the families [`crate::FAMILIES`] lists, each of which has checks.
    #[test]
    fn the_macro_lists_every_family() {
        let src = include_str!("lib.rs");
        let start = src
            .find("(@all $made")
            .expect("the arm listing the families");
        let arm = &src[start..];
        let arm = &arm[arm.find(';').expect("family list") + 1..arm.find(");").expect("end")];
        let listed: Vec<&str> = arm.split_whitespace().collect();
        assert_eq!(listed, crate::FAMILIES.to_vec());
        for f in crate::FAMILIES {
            let checks = crate::family::<nabla_cpu::CpuBackend>(f);
            assert!(
                checks.is_some_and(|c| !c.is_empty()),
                "family {f} has no checks"
            );
        }
    }
}
