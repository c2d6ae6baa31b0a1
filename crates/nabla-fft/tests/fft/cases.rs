//! Central differences in f64 of every fixture call, to first and second order (the second through
//! the rules' own derivatives), with `check_gradients` and `check_second_order`.

use crate::support::{T, call, cases, fixture, name};
use nabla_tensor::{GradCheckOptions, check_gradients, check_second_order};

#[test]
fn first_derivatives_match_central_differences() {
    for case in &cases() {
        let what = name(case);
        let f = |v: &[T]| call(case, &v[0]);
        check_gradients(f, &[fixture(&case["input"])], &GradCheckOptions::default())
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .assert_close(1e-8, 1e-6)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}

#[test]
fn second_derivatives_match_central_differences() {
    // Transforms are linear, so the second derivative of φ = Re Σ f(x)·c is zero; a loss with a
    // non-linear head (|f(x)|², through the rules' own derivatives) has a non-trivial Hessian.
    for case in &cases() {
        let what = name(case);
        let f = |v: &[T]| call(case, &v[0])?.abs()?.square()?.sin();
        check_second_order(f, &[fixture(&case["input"])], &GradCheckOptions::default())
            .unwrap_or_else(|e| panic!("{what}: {e}"))
            .assert_close(1e-7, 1e-5)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
    }
}
