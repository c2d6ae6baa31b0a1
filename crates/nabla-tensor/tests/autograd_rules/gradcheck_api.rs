//! The gradient checker itself: it must pass correct rules, catch wrong ones and say where.

use super::support::*;
use nabla_core::{DType, Error};
use nabla_tensor::{GradCheckOptions, Tensor, check_gradients, check_second_order};

/// `x^2` in value but with the derivative of `x` for elements at or after `from` (flat): a wrong rule.
fn wrong_from(x: &T, from: usize) -> nabla_tensor::Result<T> {
    let n = x.numel();
    let mask: Vec<f64> = (0..n).map(|i| if i >= from { 1.0 } else { 0.0 }).collect();
    let mask = t(&mask, x.shape());
    let square = x.square()?;
    // mask * (x + stop(x^2 - x)) + (1 - mask) * x^2
    let wrong = x.add(square.sub(x)?.detach())?;
    mask.mul(&wrong)?.add(&mask.neg()?.add(1.0)?.mul(&square)?)
}

#[test]
fn a_correct_function_passes_with_tiny_errors() {
    let (a, b) = (randn(&[2, 3], 1), randn(&[3, 2], 2));
    let report = check_gradients(
        |v: &[T]| v[0].matmul(&v[1])?.exp(),
        &[a, b],
        &GradCheckOptions::default(),
    )
    .unwrap();
    assert_eq!(report.checked(), 12);
    assert_eq!(report.inputs.len(), 2);
    assert_eq!(report.inputs[0].shape, vec![2, 3]);
    assert_eq!(report.output_shape, vec![2, 2]);
    assert!(report.max_abs_error() < 1e-8, "{report}");
    assert!(report.max_rel_error() < 1e-7, "{report}");
    assert!(report.passed(1e-7, 1e-6));
    report.assert_close(1e-7, 1e-6).unwrap();
    let text = report.to_string();
    assert!(
        text.contains("first order gradient check of 12 elements"),
        "{text}"
    );
    assert!(text.contains("input 1 [3, 2]"), "{text}");
}

#[test]
fn a_wrong_rule_is_caught_and_the_worst_element_named() {
    // Input 1 of shape [2, 3] is wrong from flat element 4 on, i.e. at [1, 1] and [1, 2].
    let x0 = randn(&[3], 3);
    let x1 = rand(&[2, 3], 4, Dom::In(2.0, 3.0));
    let f = |v: &[T]| {
        v[0].sin()?
            .sum_all()?
            .add(&wrong_from(&v[1], 4)?.sum_all()?)
    };
    let report = check_gradients(f, &[x0, x1.clone()], &GradCheckOptions::default()).unwrap();
    assert!(!report.passed(1e-6, 1e-5));
    assert!(report.inputs[0].max_abs_error < 1e-8);
    let worst = *report.worst().unwrap();
    assert_eq!(worst.input, 1);
    assert!(worst.index >= 4);
    let xv = vals(&x1);
    // Analytic 1, numeric 2x: the worst is the larger x of the two wrong elements.
    let want = if xv[4] > xv[5] { 4 } else { 5 };
    assert_eq!(worst.index, want);
    assert!((worst.analytic - 1.0).abs() < 1e-12);
    assert!((worst.numeric - 2.0 * xv[want]).abs() < 1e-6);
    let bad: Vec<usize> = report.inputs[1]
        .elements
        .iter()
        .filter(|e| !e.is_close(1e-6, 1e-5))
        .map(|e| e.index)
        .collect();
    assert_eq!(bad, vec![4, 5]);
    let err = report.assert_close(1e-6, 1e-5).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Autodiff {
                op: "check_gradients",
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("first order gradient mismatch in 2 of 9 elements"),
        "{msg}"
    );
    let multi = if want == 4 { "[1, 1]" } else { "[1, 2]" };
    assert!(
        msg.contains(&format!(
            "worst: input 1 element {want} (index {multi} of shape [2, 3])"
        )),
        "{msg}"
    );
}

#[test]
fn non_scalar_outputs_are_checked_in_every_element() {
    // A rule that is wrong for one output element only must be caught through the cotangent.
    let x = randn(&[4], 5);
    let f = |v: &[T]| {
        let good = v[0].exp()?;
        let bad = wrong_from(&v[0], 3)?;
        Tensor::cat(&[&good, &bad], 0)
    };
    let report = check_gradients(f, &[x], &GradCheckOptions::default()).unwrap();
    assert_eq!(report.output_shape, vec![8]);
    assert!(!report.passed(1e-6, 1e-5), "{report}");
    assert_eq!(report.worst().unwrap().index, 3);
}

#[test]
fn the_cotangent_is_deterministic_and_seeded() {
    let x = randn(&[2, 2], 6);
    let f = |v: &[T]| v[0].sin();
    let opts = GradCheckOptions::default();
    let a = check_gradients(f, std::slice::from_ref(&x), &opts).unwrap();
    let b = check_gradients(f, std::slice::from_ref(&x), &opts).unwrap();
    assert_eq!(a, b);
    let other = GradCheckOptions {
        seed: 7,
        ..opts.clone()
    };
    let c = check_gradients(f, std::slice::from_ref(&x), &other).unwrap();
    assert_ne!(
        a.inputs[0].elements[0].analytic,
        c.inputs[0].elements[0].analytic
    );
    // A one-element output is contracted with 1: the report holds the plain gradient.
    let d = check_gradients(
        |v: &[T]| v[0].sin()?.sum_all(),
        std::slice::from_ref(&x),
        &opts,
    )
    .unwrap();
    let want: Vec<f64> = vals(&x).iter().map(|v| v.cos()).collect();
    let got: Vec<f64> = d.inputs[0].elements.iter().map(|e| e.analytic).collect();
    assert_near(&got, &want, 1e-15);
}

#[test]
fn element_limit_samples_evenly() {
    let x = randn(&[10], 8);
    let opts = GradCheckOptions {
        max_elements_per_input: Some(4),
        ..Default::default()
    };
    let report = check_gradients(|v: &[T]| v[0].exp(), &[x], &opts).unwrap();
    let picked: Vec<usize> = report.inputs[0].elements.iter().map(|e| e.index).collect();
    assert_eq!(picked, vec![0, 2, 5, 7]);
    assert_eq!(report.checked(), 4);
}

#[test]
fn inputs_are_converted_to_f64_and_bad_inputs_rejected() {
    let x32 = randn(&[3], 9).cast(DType::F32).unwrap();
    let report = check_gradients(
        |v: &[T]| {
            assert_eq!(v[0].dtype(), DType::F64);
            v[0].tanh()
        },
        &[x32],
        &GradCheckOptions::default(),
    )
    .unwrap();
    report.assert_close(ATOL, RTOL).unwrap();
    let n = idx(&[1, 2], &[2]);
    let err = check_gradients(
        |v: &[T]| v[0].cast(DType::F64),
        &[n],
        &GradCheckOptions::default(),
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("only float inputs can be checked"),
        "{err}"
    );
    let err = check_gradients(
        |v: &[T]| v[0].gt(0.0),
        &[randn(&[2], 10)],
        &GradCheckOptions::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("only float outputs"), "{err}");
    let bad = GradCheckOptions {
        eps: 0.0,
        ..Default::default()
    };
    assert!(check_gradients(|v: &[T]| v[0].exp(), &[randn(&[2], 11)], &bad).is_err());
    // Errors of the function itself come back unchanged.
    let err = check_gradients(
        |v: &[T]| v[0].matmul(&v[0]),
        &[randn(&[2, 3], 12)],
        &GradCheckOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(err, Error::ShapeMismatch { op: "matmul", .. }),
        "{err}"
    );
}

#[test]
fn unused_inputs_and_empty_inputs() {
    let report = check_gradients(
        |v: &[T]| v[0].exp(),
        &[randn(&[2], 13), randn(&[3], 14), randn(&[0], 15)],
        &GradCheckOptions::default(),
    )
    .unwrap();
    assert_eq!(report.checked(), 5);
    assert!(
        report.inputs[1]
            .elements
            .iter()
            .all(|e| e.analytic == 0.0 && e.numeric == 0.0)
    );
    assert!(report.inputs[2].elements.is_empty());
    report.assert_close(ATOL, RTOL).unwrap();
}

#[test]
fn second_order_checks_catch_a_wrong_second_derivative() {
    let x = rand(&[3], 16, Dom::In(0.5, 1.5));
    let good = check_second_order(
        |v: &[T]| v[0].exp()?.mul(&v[0].sin()?),
        std::slice::from_ref(&x),
        &GradCheckOptions::default(),
    )
    .unwrap();
    assert_eq!(good.order, "second order");
    good.assert_close(ATOL, RTOL).unwrap();
    // x^3 whose first derivative is right but whose gradient graph is cut: the second derivative is 0
    // instead of 6x.
    let cut = |v: &[T]| {
        let x = &v[0];
        let value = x.pow(3.0)?;
        // Right value and right first derivative (3 x^2, a constant to the graph), no second.
        let slope = x.square()?.mul(3.0)?.detach();
        value
            .detach()
            .add(&x.mul(&slope)?)?
            .sub(&x.detach().mul(&slope)?)
    };
    check_gradients(cut, std::slice::from_ref(&x), &GradCheckOptions::default())
        .unwrap()
        .assert_close(ATOL, RTOL)
        .unwrap();
    let report =
        check_second_order(cut, std::slice::from_ref(&x), &GradCheckOptions::default()).unwrap();
    let err = report.assert_close(ATOL, RTOL).unwrap_err().to_string();
    assert!(
        err.starts_with("check_gradients: second order gradient mismatch in 3 of 3 elements"),
        "{err}"
    );
}
