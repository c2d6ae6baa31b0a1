//! Property tests of the `Tensor` API against plain Rust references, over random shapes (rank 0 to 4,
//! dimensions 0 to 4, so empty tensors included), NumPy broadcasting and non-contiguous inputs (permuted,
//! flipped, stepped and broadcast views). Each family also checks that an op on a view agrees with the
//! same op on a contiguous copy.
//!
//! Every property is a function `fn(&Suite<B>) -> Result<(), String>` that runs proptest's
//! [`TestRunner`] itself, so that it can be called for any backend; a failure reports the minimal
//! failing input proptest shrank it to.

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseResult, TestError, TestRunner};

/// Cases per property: enough to reach the corners (empty, rank 0, broadcasting) while keeping every
/// family well under a minute.
pub const CASES: u32 = 64;

/// Runs property `name` for `cases` random inputs drawn from `strategy`; `Err` holds the reason and the
/// minimal failing input.
pub fn run<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> TestCaseResult,
) -> Result<(), String> {
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner.run(&strategy, test).map_err(|e| match e {
        TestError::Fail(reason, value) => {
            format!("property {name} failed: {reason}\n  minimal failing input: {value:#?}")
        }
        TestError::Abort(reason) => format!("property {name} aborted: {reason}"),
    })
}

/// Declares a property as a public function generic over the backend:
/// `property! { /// doc
/// fn name(cx, cases = 64; a in strategy_a, b in strategy_b) { body } }`. The body sees the suite as
/// `cx` and may use `prop_assert!` or panic.
macro_rules! property {
    ($(#[doc = $doc:expr])* fn $name:ident($cx:ident, cases = $cases:expr; $($pat:pat in $strat:expr),+ $(,)?) $body:block) => {
        $(#[doc = $doc])*
        pub fn $name<B: nabla_core::Backend>($cx: &$crate::Suite<B>) -> Result<(), String> {
            $crate::properties::run(stringify!($name), $cases, ($($strat,)+), |($($pat,)+)| {
                $body
                #[allow(unreachable_code)]
                Ok(())
            })
        }
    };
    ($(#[doc = $doc:expr])* fn $name:ident($cx:ident; $($rest:tt)*) $body:block) => {
        property! { $(#[doc = $doc])* fn $name($cx, cases = $crate::properties::CASES; $($rest)*) $body }
    };
}

pub mod elementwise;
pub mod large;
pub mod linalg;
pub mod movement;
pub mod random;
pub mod reductions;
pub mod support;
