//! The suite's families, the per-test context ([`Suite`]) and the runner that reports a family's failures
//! and skips.

use crate::{Capabilities, Tolerance, direct, fixtures, properties};
use nabla_core::{Backend, DType};
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Mutex;
use std::time::Instant;

/// The backend under test, its capabilities, and the tally of cases skipped for unsupported dtypes.
#[derive(Debug)]
pub struct Suite<B: Backend> {
    backend: B,
    caps: Capabilities,
    skips: Mutex<BTreeMap<DType, usize>>,
    same_buffer: Option<SameBuffer<B>>,
}

/// Tells whether two storage handles are the same buffer.
pub type SameBuffer<B> = fn(&<B as Backend>::Storage, &<B as Backend>::Storage) -> bool;

impl<B: Backend> Suite<B> {
    /// A context for running checks on `backend`.
    pub fn new(backend: B, caps: Capabilities) -> Suite<B> {
        Suite {
            backend,
            caps,
            skips: Mutex::new(BTreeMap::new()),
            same_buffer: None,
        }
    }

    /// Lets the suite check that views copy nothing, with `same_buffer` telling whether two handles are
    /// one buffer ([`crate::conformance_suite!`] passes `==` when the backend's storage is `PartialEq`).
    pub fn with_same_buffer(mut self, same_buffer: Option<SameBuffer<B>>) -> Suite<B> {
        self.same_buffer = same_buffer;
        self
    }

    /// `true` if `a` and `b` view one buffer, or if the suite cannot tell (no [`SameBuffer`] given).
    pub fn shares(&self, a: &nabla_tensor::Tensor<B>, b: &nabla_tensor::Tensor<B>) -> bool {
        self.same_buffer
            .is_none_or(|same| same(a.storage(), b.storage()))
    }

    /// The backend under test.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// What the backend supports.
    pub fn caps(&self) -> &Capabilities {
        &self.caps
    }

    /// `true` if the backend supports every dtype of `dtypes`; otherwise counts one skipped case for the
    /// first unsupported one and returns `false`.
    pub fn has(&self, dtypes: &[DType]) -> bool {
        match dtypes.iter().find(|d| !self.caps.supports(**d)) {
            None => true,
            Some(&d) => {
                self.skip(d, 1);
                false
            }
        }
    }

    /// Counts `n` cases skipped because the backend lacks `dtype`.
    pub fn skip(&self, dtype: DType, n: usize) {
        let mut skips = self.skips.lock().unwrap_or_else(|e| e.into_inner());
        *skips.entry(dtype).or_default() += n;
    }

    /// Cases skipped so far, per missing dtype.
    pub fn skipped(&self) -> BTreeMap<DType, usize> {
        self.skips.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The widest float dtype the backend supports: `F64`, else `F32`. Checks of dtype-independent
    /// behaviour (views, copies, indexing) run in it, so that they run on every backend.
    pub fn float(&self) -> DType {
        if self.caps.supports(DType::F64) {
            DType::F64
        } else {
            DType::F32
        }
    }

    /// A check's own tolerance `(rtol, atol)` for results of `dtype`, widened by the backend's.
    pub fn tol(&self, dtype: DType, rtol: f64, atol: f64) -> (f64, f64) {
        let t = Tolerance { rtol, atol }.max(self.caps.tolerance(dtype));
        (t.rtol, t.atol)
    }
}

/// One named check of a family.
pub struct Check<B: Backend> {
    /// Name shown in reports.
    pub name: &'static str,
    /// Runs the check; `Err` holds the full report of a failure (a panic counts as a failure too).
    pub run: fn(&Suite<B>) -> Result<(), String>,
}

impl<B: Backend> std::fmt::Debug for Check<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check").field("name", &self.name).finish()
    }
}

/// Every family, in the order [`crate::conformance_suite!`] emits them.
pub const FAMILIES: [&str; 21] = [
    "unary",
    "binary",
    "compare",
    "cast",
    "reduce",
    "matmul",
    "movement",
    "indexing",
    "creation_random",
    "conv_pool",
    "large",
    "numpy_binary",
    "numpy_cast",
    "numpy_compare",
    "numpy_complex",
    "numpy_creation",
    "numpy_indexing",
    "numpy_matmul",
    "numpy_movement",
    "numpy_reduce",
    "numpy_unary",
];

macro_rules! checks {
    ($($m:ident :: $f:ident),* $(,)?) => {
        vec![$(Check { name: stringify!($f), run: $m::$f::<B> }),*]
    };
}

/// The checks of family `name`, or `None` for an unknown name.
pub fn family<B: Backend>(name: &str) -> Option<Vec<Check<B>>> {
    use direct::{conv, misc, pool, rounded};
    use properties::support;
    use properties::{elementwise as el, large, linalg, movement as mv, random, reductions as red};
    let checks = match name {
        "unary" => checks![
            el::unary_f64_matches_std,
            el::unary_f32_matches_std,
            el::unary_integers_are_exact,
            el::complex_unary_matches_num_complex,
        ],
        "binary" => checks![
            el::binary_f64_broadcasts_like_numpy,
            el::binary_f32_broadcasts_like_numpy,
            el::float_remainder_takes_the_divisor_sign,
            el::binary_integers_floor_divide_and_wrap,
            el::binary_bools_are_logic,
        ],
        "compare" => checks![
            el::comparisons_broadcast,
            el::where_selects_with_three_way_broadcasting,
            misc::select_picks_by_condition,
        ],
        "cast" => checks![el::casts_round_trip],
        "reduce" => checks![
            red::float_reductions_over_axis_subsets,
            red::integer_reductions_are_exact,
            red::bool_sums_count,
            red::argmax_and_argmin_pick_the_first_extreme,
            red::cumsum_accumulates_along_the_axis,
            red::sort_is_stable_and_topk_takes_the_extremes,
            misc::cumsum_kernel_on_views,
            misc::topk_kernel_with_ties_and_nan,
        ],
        "matmul" => checks![
            linalg::matmul_matches_the_triple_loop,
            rounded::matmul_rounded_matches_rounded_loops,
        ],
        "movement" => checks![
            support::view_kinds_are_strided_views_of_their_values,
            mv::permute_flip_and_transpose_are_views,
            mv::slices_follow_python,
            mv::basic_indexing_matches_per_axis_selection,
            mv::broadcast_reshape_and_squeeze,
            mv::pad_surrounds_with_the_value,
            mv::cat_stack_split_and_chunk,
            misc::pad_kernel_on_views,
            misc::concat_kernel_on_views,
        ],
        "indexing" => checks![
            mv::gather_and_index_select,
            mv::scatter_add_and_index_add_accumulate,
            mv::one_hot_marks_the_class,
            misc::one_hot_kernel,
            misc::scatter_add_kernel_on_views,
        ],
        "creation_random" => checks![
            random::same_seed_same_values_other_seed_other_values,
            random::uniform_stays_in_range,
            random::normal_has_the_requested_moments,
            random::bernoulli_hits_its_rate,
        ],
        "conv_pool" => checks![
            linalg::conv2d_and_its_gradients_match_loops,
            conv::conv_kernels_match_loops,
            rounded::conv_rounded_matches_rounded_loops,
            pool::max_pool2d_matches_the_contract,
            pool::max_pool2d_ties_nan_and_padding,
        ],
        "large" => checks![
            large::big_views_agree_with_references,
            large::big_matmul_of_transposed_operands,
        ],
        "numpy_binary" => checks![fixtures::numpy_binary],
        "numpy_cast" => checks![fixtures::numpy_cast],
        "numpy_compare" => checks![fixtures::numpy_compare],
        "numpy_complex" => checks![fixtures::numpy_complex],
        "numpy_creation" => checks![fixtures::numpy_creation],
        "numpy_indexing" => checks![fixtures::numpy_indexing],
        "numpy_matmul" => checks![fixtures::numpy_matmul],
        "numpy_movement" => checks![fixtures::numpy_movement],
        "numpy_reduce" => checks![fixtures::numpy_reduce],
        "numpy_unary" => checks![fixtures::numpy_unary],
        _ => return None,
    };
    Some(checks)
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<String>()
        .cloned()
        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "non-string panic".into())
}

/// Runs every check of family `name` on the suite's backend, prints the cases skipped per dtype and the time taken,
/// and panics with every failing check listed (naming the family and the backend).
pub fn run_family<B: Backend>(name: &str, suite: Suite<B>) {
    let who = format!(
        "{} ({})",
        suite.backend().name(),
        std::any::type_name::<B>().replace("nabla_core::memory::", "")
    );
    let Some(checks) = family::<B>(name) else {
        panic!("unknown conformance family {name:?}; the families are {FAMILIES:?}")
    };
    if suite.same_buffer.is_none() {
        println!(
            "{name} on {who}: storage handles are not PartialEq, views are not checked to copy nothing"
        );
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    for check in &checks {
        match catch_unwind(AssertUnwindSafe(|| (check.run)(&suite))) {
            Ok(Ok(())) => {}
            Ok(Err(report)) => failures.push(format!("--- {}:\n{report}", check.name)),
            Err(p) => failures.push(format!(
                "--- {}: PANICKED: {}",
                check.name,
                panic_message(p.as_ref())
            )),
        }
    }
    for (dtype, n) in suite.skipped() {
        println!("{name} on {who}: {n} cases skipped for dtype {dtype}");
    }
    println!(
        "{name} on {who}: {} checks, {} failed, {:.2?}",
        checks.len(),
        failures.len(),
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "conformance family `{name}` failed on backend {who}: {} of {} checks\n\n{}",
        failures.len(),
        checks.len(),
        failures.join("\n\n")
    );
}

/// [`run_family`] for a backend that may be missing: `None` skips with a message, or fails when the
/// environment variable `CI` is `true` (CI must not pass a suite it never ran).
pub fn try_run_family<B: Backend>(name: &str, suite: Option<Suite<B>>) {
    try_run_family_required_by(name, suite, "CI", "true")
}

/// [`try_run_family`] that fails on a missing device only when the environment variable `var`
/// equals `value`: `CI=true` for a device CI provides, `NABLA_REQUIRE_CUDA=1` for a CUDA GPU, which
/// CI never has and a machine lent one sets.
pub fn try_run_family_required_by<B: Backend>(
    name: &str,
    suite: Option<Suite<B>>,
    var: &str,
    value: &str,
) {
    match suite {
        Some(s) => run_family(name, s),
        None if std::env::var(var).is_ok_and(|v| v == value) => panic!(
            "conformance family `{name}`: no {} device found, and {var}={value} forbids skipping",
            std::any::type_name::<B>()
        ),
        None => println!(
            "conformance family `{name}` SKIPPED: no {} device found",
            std::any::type_name::<B>()
        ),
    }
}

/// Picks `==` as the [`SameBuffer`] test when a backend's storage is `PartialEq` (autoref
/// specialisation, resolved where [`crate::conformance_suite!`] expands for a concrete backend).
#[doc(hidden)]
pub mod probe {
    use super::SameBuffer;
    use nabla_core::Backend;
    use std::marker::PhantomData;

    /// Carries the backend type.
    pub struct Probe<B>(PhantomData<B>);

    impl<B: Backend> Probe<B> {
        /// A probe for the type of `made`.
        pub fn of(_made: &Option<B>) -> Probe<B> {
            Probe(PhantomData)
        }
    }

    /// Chosen when the storage is `PartialEq`.
    pub trait ByEq<B: Backend> {
        /// `Some(==)`.
        fn same_buffer(&self) -> Option<SameBuffer<B>>;
    }

    impl<B: Backend> ByEq<B> for Probe<B>
    where
        B::Storage: PartialEq,
    {
        fn same_buffer(&self) -> Option<SameBuffer<B>> {
            Some(|a, b| a == b)
        }
    }

    /// Chosen otherwise.
    pub trait Unknown<B: Backend> {
        /// `None`.
        fn same_buffer(&self) -> Option<SameBuffer<B>>;
    }

    impl<B: Backend> Unknown<B> for &Probe<B> {
        fn same_buffer(&self) -> Option<SameBuffer<B>> {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nabla_cpu::CpuBackend;

    #[test]
    fn a_missing_device_skips_or_fails_in_ci() {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        let outcome = catch_unwind(|| try_run_family::<CpuBackend>("unary", None));
        assert_eq!(outcome.is_err(), ci);
    }

    #[test]
    fn unknown_families_and_unsupported_dtypes_are_reported() {
        assert!(family::<CpuBackend>("no_such_family").is_none());
        let suite = Suite::new(CpuBackend::new(), Capabilities::new(&[DType::F32]));
        assert!(suite.has(&[DType::F32]));
        assert!(!suite.has(&[DType::F32, DType::F64, DType::C128]));
        assert!(!suite.has(&[DType::F64]));
        assert_eq!(suite.skipped(), BTreeMap::from([(DType::F64, 2)]));
        assert_eq!(suite.float(), DType::F32);
        let loose = Suite::new(
            CpuBackend::new(),
            Capabilities::all().with_tolerance(DType::F32, 1e-3, 0.0),
        );
        assert_eq!(loose.tol(DType::F32, 1e-6, 1e-7), (1e-3, 1e-7));
        assert_eq!(loose.tol(DType::C64, 0.0, 0.0), (1e-3, 0.0));
        assert_eq!(loose.tol(DType::F64, 1e-12, 0.0), (1e-12, 0.0));
    }
}
