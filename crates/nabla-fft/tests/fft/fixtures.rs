//! Every fixture case: values against NumPy in f64 and f32, reverse and forward derivatives against
//! JAX, and the adjoint identity between our two rules.

use crate::support::{T, assert_close, call, cases, fixture, name, pairing};
use nabla_core::DType;
use nabla_tensor::{AdContext, Tensor};

#[test]
fn values_match_numpy_in_f64_and_f32() {
    let cases = cases();
    assert_eq!(cases.len(), 28);
    for case in &cases {
        let what = name(case);
        let x = fixture(&case["input"]);
        let want = fixture(&case["output"]);
        let got = call(case, &x).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
        assert_close(&got, &want, 1e-13, &what);
        let single = if x.dtype().is_complex() {
            DType::C64
        } else {
            DType::F32
        };
        let got = call(case, &x.cast(single).unwrap()).unwrap();
        let want_dtype = if want.dtype().is_complex() {
            DType::C64
        } else {
            DType::F32
        };
        assert_eq!(got.dtype(), want_dtype, "{what}: f32 dtype");
        assert_close(&got, &want, 2e-6, &format!("{what} (f32)"));
    }
}

/// The reverse (vjp) and forward (jvp) derivatives of the case's call at its input.
fn derivatives(case: &serde_json::Value) -> (T, T) {
    let what = name(case);
    let x = Tensor::var("x", fixture(&case["input"])).unwrap();
    let y = call(case, &x).unwrap();
    let ad = AdContext::new();
    let vjp = ad
        .vjp(&y, &x, &fixture(&case["cotangent"]))
        .unwrap_or_else(|e| panic!("{what} vjp: {e}"));
    let jvp = ad
        .jvp(&y, &x, &fixture(&case["tangent"]))
        .unwrap_or_else(|e| panic!("{what} jvp: {e}"));
    (vjp, jvp)
}

#[test]
fn derivatives_match_jax() {
    for case in &cases() {
        let what = name(case);
        let (vjp, jvp) = derivatives(case);
        assert_close(&vjp, &fixture(&case["vjp"]), 1e-12, &format!("{what} vjp"));
        assert_close(&jvp, &fixture(&case["jvp"]), 1e-12, &format!("{what} jvp"));
    }
}

#[test]
fn reverse_rules_transpose_forward_rules() {
    for case in &cases() {
        let what = name(case);
        let (vjp, jvp) = derivatives(case);
        let (cot, tangent) = (fixture(&case["cotangent"]), fixture(&case["tangent"]));
        let (lhs, rhs) = (pairing(&cot, &jvp), pairing(&vjp, &tangent));
        assert!(
            (lhs - rhs).abs() <= 1e-12 * (1.0 + lhs.abs()),
            "{what}: <ct, J t> = {lhs}, <Jᵀ ct, t> = {rhs}"
        );
    }
}
