//! Anomaly detection: the first op, forward or backward, that makes a NaN or infinity out of finite
//! values is an error naming it (and, for a reverse rule, where its op was recorded); values already
//! non-finite pass through; the mode is scoped to a thread.

use nabla_core::{Error, Result};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, detect_anomaly, is_anomaly_detection_enabled};

type T = Tensor<CpuBackend>;

fn tensor(values: &[f64]) -> Result<T> {
    Tensor::from_vec(values.to_vec(), [values.len()], &CpuBackend::new())
}

#[test]
fn a_forward_nan_names_the_op_that_made_it() -> Result<()> {
    let x = tensor(&[-1.0, 0.0, 4.0])?;
    // Off: NaN and -inf are returned as values.
    assert!(x.log()?.sum_all()?.item::<f64>()?.is_nan());
    let err = detect_anomaly(|| x.log()?.sum_all()).unwrap_err();
    assert!(matches!(err, Error::NonFinite { op: "log", .. }), "{err}");
    assert!(err.to_string().contains("[3]"), "{err}");
    Ok(())
}

/// The forward op whose reverse rule the test expects to fail, recorded in a named function so the
/// error's origin can be checked.
fn sqrt_then_sum(x: &T) -> Result<T> {
    x.sqrt()?.sum_all()
}

#[test]
fn a_backward_nan_names_the_rule_and_where_its_op_was_recorded() -> Result<()> {
    let x = Tensor::var("x", tensor(&[0.0, 4.0])?)?;
    // sqrt(0) = 0 is finite, its derivative 1 / (2 sqrt 0) is not.
    let loss = detect_anomaly(|| sqrt_then_sum(&x))?;
    let err = detect_anomaly(|| loss.backward()).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, Error::NonFinite { op: "sqrt", .. }), "{text}");
    assert!(text.contains("backward"), "{text}");
    assert!(text.contains("sqrt_then_sum"), "{text}");
    // Without the mode the gradient is returned with its infinity.
    let g = sqrt_then_sum(&x)?.grad(&x)?;
    assert!(g.to_vec::<f64>()?[0].is_infinite());
    Ok(())
}

/// Sources have no input to compare with: a fill with NaN or infinity is what was asked for, not an
/// anomaly; ops with integer or boolean outputs (comparisons, arg-reductions) never are.
#[test]
fn sources_and_untracked_outputs_are_not_anomalies() -> Result<()> {
    let cpu = CpuBackend::new();
    let dtype = nabla_core::DType::F64;
    detect_anomaly(|| -> Result<()> {
        let nan = Tensor::full([2], f64::NAN, dtype, &cpu)?;
        assert!(nan.to_vec::<f64>()?.iter().all(|v| v.is_nan()));
        let inf = Tensor::scalar(f64::INFINITY, dtype, &cpu)?;
        assert!(inf.item::<f64>()?.is_infinite());
        let x = tensor(&[1.0, 3.0, 2.0])?;
        assert_eq!(x.gt(1.5)?.to_vec::<bool>()?, vec![false, true, true]);
        assert_eq!(x.argmax(0, false)?.item::<i64>()?, 1);
        // A NaN made from finite values is still caught, by the op that made it.
        let err = Tensor::var("x", x)?.sub(3.0)?.log().unwrap_err();
        assert!(matches!(err, Error::NonFinite { op: "log", .. }), "{err}");
        Ok(())
    })
}

#[test]
fn values_already_non_finite_pass_through_and_the_mode_is_scoped() -> Result<()> {
    let x = tensor(&[f64::NAN, 1.0])?;
    detect_anomaly(|| x.exp()?.mul(2.0))?;
    assert!(!is_anomaly_detection_enabled());
    detect_anomaly(|| {
        assert!(is_anomaly_detection_enabled());
        // Another thread is not in the mode.
        std::thread::spawn(|| assert!(!is_anomaly_detection_enabled()))
            .join()
            .unwrap();
    });
    // Finite results from finite values are fine, in both passes.
    let v = Tensor::var("v", tensor(&[1.0, 2.0])?)?;
    let g = detect_anomaly(|| v.log()?.sum_all()?.grad(&v))?;
    assert_eq!(g.to_vec::<f64>()?, vec![1.0, 0.5]);
    Ok(())
}

#[test]
fn custom_functions_are_named_in_anomaly_errors() -> Result<()> {
    use nabla_tensor::CustomFn;
    let x = Tensor::var("x", tensor(&[0.0, 1.0])?)?;
    // Forward: the body's own ops are checked, so the first one that overflows is named.
    let blowup = CustomFn::<CpuBackend>::new("blowup", |x| x[0].add(1000.0)?.exp());
    let err = detect_anomaly(|| blowup.apply(&[&x]))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("exp: forward"), "{err}");
    // Backward: a reverse rule that divides by zero.
    let bad_rule = CustomFn::<CpuBackend>::new("bad_rule", |x| x[0].square())
        .reverse(|args, g| Ok(vec![Some(g.div(&args.inputs[0])?)]));
    let err = detect_anomaly(|| bad_rule.apply(&[&x])?.sum_all()?.grad(&x))
        .unwrap_err()
        .to_string();
    assert!(err.contains("'bad_rule' its reverse rule"), "{err}");
    Ok(())
}
