//! Shared helpers of the PyTorch-comparison tests (`*_torch.rs`): loading the JSON fixtures in
//! `tests/fixtures/` (written by `scripts/gen_torch_*_fixtures.py`), selecting their cases, turning
//! their `{shape, data}` tensors into float64 CPU tensors and comparing values with PyTorch's.
//!
//! Declared once in `main.rs`; the test modules use it as `crate::torch_support`.

use nabla_core::Backend;
use nabla_cpu::CpuBackend;
use nabla_tensor::Tensor;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

pub type T = Tensor<CpuBackend>;

pub fn cpu() -> CpuBackend {
    CpuBackend::new()
}

/// The parsed fixture `tests/fixtures/{file}`, read once per test binary and kept for its lifetime.
pub fn fixture(file: &str) -> &'static Value {
    static DOCS: OnceLock<Mutex<HashMap<String, &'static Value>>> = OnceLock::new();
    let mut docs = DOCS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(doc) = docs.get(file) {
        return doc;
    }
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read the fixture {path}: {e}"));
    let doc: Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse the fixture {path}: {e}"));
    let doc: &'static Value = Box::leak(Box::new(doc));
    docs.insert(file.to_string(), doc);
    doc
}

/// Every case of `doc["cases"]` whose `field` is `name`, at least one.
pub fn cases(doc: &'static Value, field: &str, name: &str) -> Vec<&'static Value> {
    let found: Vec<_> = doc["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter(|c| c[field] == name)
        .collect();
    assert!(!found.is_empty(), "no fixture cases for {name}");
    found
}

/// The `shape` of a fixture tensor.
pub fn shape_of(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .expect("shape")
        .iter()
        .map(|d| d.as_u64().expect("dim") as usize)
        .collect()
}

/// A JSON array of numbers.
pub fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

/// A fixture tensor `{shape, data}` as a float64 CPU tensor.
pub fn tensor(v: &Value) -> T {
    let data: Vec<f64> = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_f64().expect("float"))
        .collect();
    Tensor::from_vec(data, shape_of(v), &cpu()).expect("fixture tensor")
}

/// A fixture tensor `{shape, data}` of integers as an int64 CPU tensor.
pub fn index_tensor(v: &Value) -> T {
    let data: Vec<i64> = v["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|x| x.as_i64().expect("int"))
        .collect();
    Tensor::from_vec(data, shape_of(v), &cpu()).expect("fixture indices")
}

/// A state dict `{name: tensor}` of the fixture, as float64 CPU tensors.
pub fn state_dict(v: &Value) -> Vec<(String, T)> {
    v.as_object()
        .expect("state")
        .iter()
        .map(|(k, v)| (k.clone(), tensor(v)))
        .collect()
}

/// Whether `got` is within `atol + rtol * |want|` of `want` (false for a NaN).
pub fn within(got: f64, want: f64, atol: f64, rtol: f64) -> bool {
    (got - want).abs() <= atol + rtol * want.abs()
}

/// Asserts that every value of `got` is [`within`] `atol` and `rtol` of `want`.
pub fn assert_values_close(what: &str, got: &[f64], want: &[f64], atol: f64, rtol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: number of values");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            within(*g, *w, atol, rtol),
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

/// Asserts that the float64 tensor `got` has the fixture tensor `want`'s shape and values, within
/// `atol + rtol * |want|`.
pub fn assert_close<B: Backend>(what: &str, got: &Tensor<B>, want: &Value, atol: f64, rtol: f64) {
    assert_eq!(got.shape(), shape_of(want).as_slice(), "{what}: shape");
    let got = got.to_vec::<f64>().expect("f64 values");
    let want = tensor(want).to_vec::<f64>().expect("f64 values");
    assert_values_close(what, &got, &want, atol, rtol);
}

/// Asserts that the float64 tensors `got` and `want` have the same shape and values, within
/// `atol + rtol * |want|`.
pub fn assert_tensors_close(what: &str, got: &T, want: &T, atol: f64, rtol: f64) {
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    let got = got.to_vec::<f64>().expect("f64 values");
    let want = want.to_vec::<f64>().expect("f64 values");
    assert_values_close(what, &got, &want, atol, rtol);
}
