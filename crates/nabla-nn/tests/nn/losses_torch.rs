//! `nabla_nn::loss` against PyTorch: values and gradients from
//! `tests/fixtures/losses.json` (written by `scripts/gen_torch_loss_fixtures.py`, float64), plus
//! extreme-value stability and error tests.

use crate::torch_support::{T, floats, index_tensor, shape_of, tensor, within};
use nabla_core::{DType, Error, Result};
use nabla_cpu::CpuBackend;
use nabla_nn::loss::{
    self, BceWithLogitsOptions, CrossEntropyOptions, KlDivReduction, NllLossOptions, Reduction,
    TripletMarginOptions,
};
use nabla_tensor::Tensor;
use serde_json::Value;
use std::collections::HashMap;

fn fixture() -> &'static Value {
    crate::torch_support::fixture("losses.json")
}

/// A fixture tensor: int64 where its `dtype` is `i64`, float64 otherwise.
fn input_tensor(v: &Value) -> T {
    if v["dtype"] == "i64" {
        index_tensor(v)
    } else {
        tensor(v)
    }
}

fn reduction(opts: &Value) -> Reduction {
    match opts["reduction"].as_str().expect("reduction") {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        _ => Reduction::Mean,
    }
}

fn num(opts: &Value, key: &str, default: f64) -> f64 {
    match &opts[key] {
        Value::String(s) if s == "inf" => f64::INFINITY,
        v => v.as_f64().unwrap_or(default),
    }
}

/// Calls the loss a fixture case names.
fn call(case: &Value, t: &HashMap<String, T>) -> Result<T> {
    let opts = &case["opts"];
    let r = reduction(opts);
    let get = |k: &str| t.get(k).cloned();
    let (x, target) = (|| &t["input"], || &t["target"]);
    match case["fn"].as_str().expect("fn") {
        "mse_loss" => loss::mse_loss(x(), target(), r),
        "l1_loss" => loss::l1_loss(x(), target(), r),
        "smooth_l1_loss" => loss::smooth_l1_loss(x(), target(), r, num(opts, "beta", 1.0)),
        "huber_loss" => loss::huber_loss(x(), target(), r, num(opts, "delta", 1.0)),
        "cross_entropy" => {
            let o = CrossEntropyOptions {
                weight: get("weight"),
                ignore_index: opts["ignore_index"].as_i64().unwrap_or(-100),
                reduction: r,
                label_smoothing: num(opts, "label_smoothing", 0.0),
            };
            loss::cross_entropy(x(), target(), &o)
        }
        "nll_loss" => {
            let o = NllLossOptions {
                weight: get("weight"),
                ignore_index: opts["ignore_index"].as_i64().unwrap_or(-100),
                reduction: r,
            };
            loss::nll_loss(x(), target(), &o)
        }
        "binary_cross_entropy" => loss::binary_cross_entropy(x(), target(), t.get("weight"), r),
        "binary_cross_entropy_with_logits" => {
            let o = BceWithLogitsOptions {
                weight: get("weight"),
                pos_weight: get("pos_weight"),
                reduction: r,
            };
            loss::binary_cross_entropy_with_logits(x(), target(), &o)
        }
        "kl_div" => {
            let kr = match opts["reduction"].as_str() {
                Some("batchmean") => KlDivReduction::BatchMean,
                _ => r.into(),
            };
            let log_target = opts["log_target"].as_bool().expect("log_target");
            loss::kl_div(x(), target(), kr, log_target)
        }
        "cosine_embedding_loss" => loss::cosine_embedding_loss(
            &t["input1"],
            &t["input2"],
            target(),
            num(opts, "margin", 0.0),
            r,
        ),
        "margin_ranking_loss" => loss::margin_ranking_loss(
            &t["input1"],
            &t["input2"],
            target(),
            num(opts, "margin", 0.0),
            r,
        ),
        "triplet_margin_loss" => {
            let o = TripletMarginOptions {
                margin: num(opts, "margin", 1.0),
                p: num(opts, "p", 2.0),
                eps: num(opts, "eps", 1e-6),
                swap: opts["swap"].as_bool().expect("swap"),
                reduction: r,
            };
            loss::triplet_margin_loss(&t["anchor"], &t["positive"], &t["negative"], &o)
        }
        other => panic!("unknown loss {other}"),
    }
}

fn close(what: &str, got: &[f64], want: &[f64], failures: &mut Vec<String>) {
    if got.len() != want.len() {
        failures.push(format!(
            "{what}: {} values, expected {}",
            got.len(),
            want.len()
        ));
        return;
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        // Written so that a NaN fails too.
        if !within(*g, *w, 1e-9, 1e-9) {
            failures.push(format!("{what}[{i}]: got {g}, PyTorch {w}"));
            return;
        }
    }
}

/// Runs every fixture case of the loss `name`: the value and the gradient of its sum with respect to
/// each differentiable tensor. Returns the number of cases.
fn check_family(name: &str) -> usize {
    let fx = fixture();
    let mut failures = Vec::new();
    let mut count = 0;
    for case in fx["cases"].as_array().expect("cases") {
        if case["fn"] != name {
            continue;
        }
        count += 1;
        let id = case["name"].as_str().expect("name");
        let grads_want = case["grads"].as_object().expect("grads");
        let mut t = HashMap::new();
        for (k, v) in case["inputs"].as_object().expect("inputs") {
            let value = input_tensor(v);
            let value = if grads_want.contains_key(k) {
                Tensor::var(k.clone(), value).expect("var")
            } else {
                value
            };
            t.insert(k.clone(), value);
        }
        let out = match call(case, &t) {
            Ok(out) => out,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        assert_eq!(
            out.shape(),
            shape_of(&case["output"]).as_slice(),
            "{id}: output shape"
        );
        close(
            &format!("{id} value"),
            &out.to_vec::<f64>().expect("values"),
            &floats(&case["output"]["data"]),
            &mut failures,
        );
        let grads = out.sum_all().and_then(|s| s.backward()).expect("backward");
        for (k, want) in grads_want {
            match grads.get(&t[k]) {
                Some(g) => {
                    assert_eq!(g.shape(), shape_of(want).as_slice(), "{id}: grad {k} shape");
                    close(
                        &format!("{id} d/d{k}"),
                        &g.to_vec::<f64>().expect("grad"),
                        &floats(&want["data"]),
                        &mut failures,
                    );
                }
                None => failures.push(format!("{id}: no gradient for {k}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(count > 0, "no fixture cases for {name}");
    count
}

macro_rules! torch_family_tests {
    ($($test:ident => $name:literal, $min:literal;)*) => {$(
        #[test]
        fn $test() {
            assert!(check_family($name) >= $min);
        }
    )*};
}

torch_family_tests! {
    mse_matches_torch => "mse_loss", 3;
    l1_matches_torch => "l1_loss", 3;
    smooth_l1_matches_torch => "smooth_l1_loss", 9;
    huber_matches_torch => "huber_loss", 6;
    cross_entropy_matches_torch => "cross_entropy", 54;
    nll_matches_torch => "nll_loss", 21;
    bce_matches_torch => "binary_cross_entropy", 6;
    bce_with_logits_matches_torch => "binary_cross_entropy_with_logits", 15;
    kl_div_matches_torch => "kl_div", 8;
    cosine_embedding_matches_torch => "cosine_embedding_loss", 12;
    margin_ranking_matches_torch => "margin_ranking_loss", 9;
    triplet_matches_torch => "triplet_margin_loss", 18;
}

#[test]
fn fixture_has_only_known_losses() {
    let fx = fixture();
    let known = [
        "mse_loss",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "cross_entropy",
        "nll_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "cosine_embedding_loss",
        "margin_ranking_loss",
        "triplet_margin_loss",
    ];
    for case in fx["cases"].as_array().expect("cases") {
        let f = case["fn"].as_str().expect("fn");
        assert!(known.contains(&f), "untested loss {f}");
    }
}

// ---- Extreme values ----

fn values(t: &T) -> Vec<f64> {
    t.cast(DType::F64)
        .and_then(|t| t.to_vec::<f64>())
        .expect("values")
}

/// Loss value and input gradient of `f` at `data` (shape `dims`) in `dtype`.
fn value_and_grad(
    dtype: DType,
    data: &[f64],
    dims: &[usize],
    f: impl Fn(&T) -> Result<T>,
) -> (Vec<f64>, Vec<f64>) {
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(data.to_vec(), dims.to_vec(), &cpu)
        .and_then(|t| t.cast(dtype))
        .and_then(|t| Tensor::var("x", t))
        .expect("input");
    let loss = f(&x).expect("loss");
    let grads = loss.sum_all().and_then(|l| l.backward()).expect("backward");
    let g = grads.get(&x).expect("gradient");
    (values(&loss), values(g))
}

fn assert_near(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert!(
            g.is_finite() && (g - w).abs() <= tol * (1.0 + w.abs()),
            "{got:?} vs {want:?}"
        );
    }
}

#[test]
fn cross_entropy_is_stable_for_huge_logits() {
    for dtype in [DType::F32, DType::F64] {
        let cpu = CpuBackend::new();
        let target = Tensor::from_vec(vec![1i64, 0], [2], &cpu).expect("target");
        let logits = [1e4, -1e4, 0.0, -1e4, 1e4, -1e4];
        let (v, g) = value_and_grad(dtype, &logits, &[2, 3], |x| {
            loss::cross_entropy(
                x,
                &target,
                &CrossEntropyOptions {
                    reduction: Reduction::Sum,
                    ..Default::default()
                },
            )
        });
        // PyTorch: loss 2e4 + 2e4, gradient softmax - one_hot.
        assert_near(&v, &[4e4], 1e-6);
        assert_near(&g, &[1.0, -1.0, 0.0, -1.0, 1.0, 0.0], 1e-6);
        let probs = Tensor::from_vec(vec![0.0, 1.0, 0.0, 0.5, 0.5, 0.0], [2, 3], &cpu)
            .and_then(|p| p.cast(dtype))
            .expect("probs");
        let (v, g) = value_and_grad(dtype, &logits, &[2, 3], |x| {
            let o = CrossEntropyOptions {
                label_smoothing: 0.1,
                ..Default::default()
            };
            loss::cross_entropy(x, &probs, &o)
        });
        assert!(
            v[0].is_finite() && g.iter().all(|g| g.is_finite()),
            "{v:?} {g:?}"
        );
    }
}

#[test]
fn bce_with_logits_is_stable_for_huge_logits() {
    for dtype in [DType::F32, DType::F64] {
        let cpu = CpuBackend::new();
        let target = Tensor::from_vec(vec![0.0, 1.0, 1.0, 0.0], [4], &cpu)
            .and_then(|t| t.cast(dtype))
            .expect("target");
        let pw = Tensor::from_vec(vec![2.0], [1], &cpu)
            .and_then(|t| t.cast(dtype))
            .expect("pos_weight");
        let opts = BceWithLogitsOptions {
            pos_weight: Some(pw),
            reduction: Reduction::None,
            ..Default::default()
        };
        let (v, g) = value_and_grad(dtype, &[1e4, -1e4, 1e4, -1e4], &[4], |x| {
            loss::binary_cross_entropy_with_logits(x, &target, &opts)
        });
        // PyTorch (float32 and float64): [1e4, 2e4, 0, 0] and [1, -2, 0, 0].
        assert_near(&v, &[1e4, 2e4, 0.0, 0.0], 1e-6);
        assert_near(&g, &[1.0, -2.0, 0.0, 0.0], 1e-6);
    }
}

#[test]
fn bce_clamps_logs_of_saturated_probabilities() {
    for dtype in [DType::F32, DType::F64] {
        let cpu = CpuBackend::new();
        let target = Tensor::from_vec(vec![1.0, 0.0, 0.0, 1.0], [4], &cpu)
            .and_then(|t| t.cast(dtype))
            .expect("target");
        let (v, g) = value_and_grad(dtype, &[0.0, 1.0, 0.0, 1.0], &[4], |x| {
            loss::binary_cross_entropy(x, &target, None, Reduction::None)
        });
        // PyTorch: log clamped at -100 on the wrong side, exactly 0 on the right side.
        assert_eq!(v, vec![100.0, 100.0, 0.0, 0.0]);
        assert!(g.iter().all(|g| g.is_finite()), "{g:?}");
    }
}

#[test]
fn kl_div_with_zero_targets_has_finite_gradients() {
    let cpu = CpuBackend::new();
    let target = Tensor::from_vec(vec![0.0f64, 1.0], [1, 2], &cpu).expect("target");
    let (v, g) = value_and_grad(DType::F64, &[-1e4, 0.0], &[1, 2], |x| {
        loss::kl_div(x, &target, KlDivReduction::BatchMean, false)
    });
    assert_eq!((v, g), (vec![0.0], vec![0.0, -1.0]));
}

#[test]
fn all_ignored_targets_give_nan_like_pytorch() {
    let cpu = CpuBackend::new();
    let x = Tensor::from_vec(vec![0.5f64, 1.0, 2.0, 0.0], [2, 2], &cpu).expect("x");
    let target = Tensor::from_vec(vec![-100i64, -100], [2], &cpu).expect("target");
    let ce = loss::cross_entropy(&x, &target, &CrossEntropyOptions::default()).expect("ce");
    assert!(ce.item::<f64>().expect("value").is_nan());
    let sum = CrossEntropyOptions {
        reduction: Reduction::Sum,
        ..Default::default()
    };
    assert_eq!(
        loss::cross_entropy(&x, &target, &sum)
            .and_then(|l| l.item::<f64>())
            .expect("sum"),
        0.0
    );
}

// ---- Errors ----

fn err(r: Result<T>) -> Error {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.shape()),
        Err(e) => e,
    }
}

#[test]
fn shape_mismatches_name_the_loss_and_both_shapes() {
    let cpu = CpuBackend::new();
    let a = Tensor::zeros([2, 3], DType::F32, &cpu).expect("a");
    let b = Tensor::zeros([3, 2], DType::F32, &cpu).expect("b");
    for (name, e) in [
        ("mse_loss", err(loss::mse_loss(&a, &b, Reduction::Mean))),
        (
            "huber_loss",
            err(loss::huber_loss(&a, &b, Reduction::Mean, 1.0)),
        ),
        (
            "kl_div",
            err(loss::kl_div(&a, &b, KlDivReduction::BatchMean, false)),
        ),
        (
            "cross_entropy",
            err(loss::cross_entropy(&a, &b, &CrossEntropyOptions::default())),
        ),
        (
            "margin_ranking_loss",
            err(loss::margin_ranking_loss(&a, &a, &b, 0.0, Reduction::Mean)),
        ),
        (
            "triplet_margin_loss",
            err(loss::triplet_margin_loss(
                &a,
                &a,
                &b,
                &TripletMarginOptions::default(),
            )),
        ),
    ] {
        let msg = e.to_string();
        assert!(matches!(e, Error::ShapeMismatch { .. }), "{msg}");
        assert!(
            msg.starts_with(name) && msg.contains("[2, 3]") && msg.contains("[3, 2]"),
            "{msg}"
        );
    }
    let idx = Tensor::zeros([3], DType::I64, &cpu).expect("index targets");
    let e = err(loss::nll_loss(&a, &idx, &NllLossOptions::default()));
    assert!(
        e.to_string().contains("nll_loss") && e.to_string().contains("[2]"),
        "{e}"
    );
    let w = Tensor::ones([2], DType::F32, &cpu).expect("weight");
    let o = CrossEntropyOptions {
        weight: Some(w),
        ..Default::default()
    };
    let e = err(loss::cross_entropy(
        &a,
        &idx.narrow(0, 0, 2).expect("narrow"),
        &o,
    ));
    assert!(e.to_string().contains("[3]"), "{e}");
}

#[test]
fn bad_class_indices_are_named() {
    let cpu = CpuBackend::new();
    let x = Tensor::zeros([3, 4], DType::F64, &cpu).expect("x");
    let target = Tensor::from_vec(vec![0i64, 7, -100], [3], &cpu).expect("target");
    let e = err(loss::cross_entropy(
        &x,
        &target,
        &CrossEntropyOptions::default(),
    ));
    assert_eq!(
        e,
        Error::IndexOutOfBounds {
            op: "cross_entropy",
            index: 7,
            size: 4
        }
    );
    let negative = Tensor::from_vec(vec![0i64, -1, 2], [3], &cpu).expect("target");
    let e = err(loss::nll_loss(&x, &negative, &NllLossOptions::default()));
    assert_eq!(
        e,
        Error::IndexOutOfBounds {
            op: "nll_loss",
            index: -1,
            size: 4
        }
    );
    // -100 is only special while it is the ignore index.
    let o = NllLossOptions {
        ignore_index: 1,
        ..Default::default()
    };
    let ignored = Tensor::from_vec(vec![1i64, -100, 3], [3], &cpu).expect("target");
    let e = err(loss::nll_loss(&x, &ignored, &o));
    assert_eq!(
        e,
        Error::IndexOutOfBounds {
            op: "nll_loss",
            index: -100,
            size: 4
        }
    );
}

#[test]
fn non_integer_index_targets_are_rejected() {
    let cpu = CpuBackend::new();
    let x = Tensor::zeros([3, 4], DType::F64, &cpu).expect("x");
    let float_target = Tensor::zeros([3], DType::F64, &cpu).expect("target");
    let e = err(loss::nll_loss(
        &x,
        &float_target,
        &NllLossOptions::default(),
    ));
    assert!(
        matches!(e, Error::UnsupportedDType { op: "nll_loss", .. }),
        "{e}"
    );
    let bool_target = Tensor::zeros([3, 4], DType::F64, &cpu)
        .and_then(|t| t.gt(0.0))
        .expect("bool target");
    let e = err(loss::cross_entropy(
        &x,
        &bool_target,
        &CrossEntropyOptions::default(),
    ));
    assert!(e.to_string().contains("cross_entropy"), "{e}");
}

#[test]
fn bad_arguments_are_errors() {
    let cpu = CpuBackend::new();
    let x = Tensor::full([2, 3], 0.5, DType::F64, &cpu).expect("x");
    let e = err(loss::smooth_l1_loss(&x, &x, Reduction::Mean, -1.0));
    assert!(
        e.to_string().contains("smooth_l1_loss") && e.to_string().contains("-1"),
        "{e}"
    );
    assert!(loss::huber_loss(&x, &x, Reduction::Mean, 0.0).is_err());
    let t = Tensor::from_vec(vec![0i64, 1], [2], &cpu).expect("t");
    let o = CrossEntropyOptions {
        label_smoothing: 1.5,
        ..Default::default()
    };
    assert!(
        err(loss::cross_entropy(&x, &t, &o))
            .to_string()
            .contains("label_smoothing")
    );
    let too_big = Tensor::full([2, 3], 1.5, DType::F64, &cpu).expect("p");
    let e = err(loss::binary_cross_entropy(
        &too_big,
        &x,
        None,
        Reduction::Mean,
    ));
    assert!(
        e.to_string().contains("between 0 and 1") && e.to_string().contains("1.5"),
        "{e}"
    );
    let o = TripletMarginOptions {
        p: 0.0,
        ..Default::default()
    };
    assert!(loss::triplet_margin_loss(&x, &x, &x, &o).is_err());
    let cube = Tensor::zeros([2, 2, 2], DType::F64, &cpu).expect("cube");
    let y = Tensor::ones([2, 2], DType::F64, &cpu).expect("y");
    assert!(loss::cosine_embedding_loss(&cube, &cube, &y, 0.0, Reduction::Mean).is_err());
    let ints = Tensor::zeros([2, 3], DType::I64, &cpu).expect("ints");
    assert!(matches!(
        err(loss::mse_loss(&ints, &ints, Reduction::Mean)),
        Error::UnsupportedDType { op: "mse_loss", .. }
    ));
    let w = Tensor::ones([3, 3], DType::F64, &cpu).expect("w");
    let o = BceWithLogitsOptions {
        weight: Some(w),
        ..Default::default()
    };
    assert!(matches!(
        err(loss::binary_cross_entropy_with_logits(&x, &x, &o)),
        Error::ShapeMismatch {
            op: "binary_cross_entropy_with_logits",
            ..
        }
    ));
}
