//! NumPy semantics, checked on committed fixtures.
//!
//! The JSON files in `tests/fixtures/numpy_*.json` were written by `scripts/gen_numpy_fixtures.py` (run it
//! from the repository root to regenerate them; the script documents the format). Each case names an op,
//! its parameters, its inputs (optionally seen through views: slices with negative steps, transposes,
//! broadcasts) and NumPy's result. This test runs every case through the `Tensor` API on the CPU backend
//! and reports every failing case at once, with its op, parameters and the differing values.

#[path = "numpy_fixtures/compare.rs"]
mod compare;
#[path = "numpy_fixtures/decode.rs"]
mod decode;
#[path = "numpy_fixtures/dispatch.rs"]
mod dispatch;

use compare::{Tolerance, Values, float_close, mismatches, unravel};
use decode::Case;
use nabla_core::DType;
use nabla_cpu::CpuBackend;
use serde_json::Value;
use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Every fixture file (sorted) with its parsed JSON.
fn fixture_files() -> Vec<(String, Value)> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(fixture_dir())
        .expect("tests/fixtures exists")
        .map(|e| e.expect("readable directory entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.starts_with("numpy_") && name.ends_with(".json")
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("reading {name}: {e}"));
            let json =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {name}: {e}"));
            (name, json)
        })
        .collect()
}

/// Every case of every file; malformed cases come back as `Err` with their origin.
fn load_cases() -> Vec<Result<Case, String>> {
    let mut out = Vec::new();
    for (file, json) in fixture_files() {
        let cases = json["cases"].as_array().cloned().unwrap_or_default();
        for (i, c) in cases.iter().enumerate() {
            let origin = format!("{file}#{i}");
            out.push(
                decode::case(origin.clone(), c)
                    .map_err(|e| format!("[{origin}] malformed case: {e}")),
            );
        }
    }
    out
}

/// Runs one case; `Err` holds the full report of a failure.
fn check(case: &Case, cpu: &CpuBackend) -> Result<(), String> {
    let header = format!(
        "[{}] {}\n  op = {}, params = {}\n  inputs: {}",
        case.origin,
        case.name,
        case.op,
        case.params,
        case.inputs
            .iter()
            .map(|a| {
                let view = if a.view.is_empty() {
                    String::new()
                } else {
                    format!(" viewed through {:?}", a.view)
                };
                format!(
                    "{} {:?} {}{view}",
                    a.dtype,
                    a.shape,
                    Values::of(&a.data).preview(12)
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    );
    let fail = |what: String| Err(format!("{header}\n  {what}"));
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let t = dispatch::run(case, cpu)?;
        let host = t.to_host().map_err(decode::nabla)?;
        Ok::<_, String>((t.dtype(), t.shape().to_vec(), host))
    }));
    let (dtype, shape, host) = match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return fail(e),
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into());
            return fail(format!(
                "PANICKED (public calls must return errors instead): {msg}"
            ));
        }
    };
    let exp = &case.expected;
    let expected = Values::of(&exp.data);
    if dtype != exp.dtype || shape != exp.shape || host.dtype() != dtype {
        return fail(format!(
            "expected {} {:?}, got {} {:?} (data read back as {})\n  expected values: {}",
            exp.dtype,
            exp.shape,
            dtype,
            shape,
            host.dtype(),
            expected.preview(24)
        ));
    }
    let actual = Values::of(&host);
    let tol = Tolerance::for_dtype(dtype, case.exact, case.signed_zero);
    let bad = match mismatches(&actual, &expected, tol) {
        Ok(bad) => bad,
        Err(e) => return fail(e),
    };
    if bad.is_empty() {
        return Ok(());
    }
    let detail: Vec<String> = bad
        .iter()
        .take(8)
        .map(|&i| {
            format!(
                "at {:?}: expected {}, got {}",
                unravel(i, &shape),
                expected.show(i),
                actual.show(i)
            )
        })
        .collect();
    fail(format!(
        "{} of {} values differ ({}; {})\n    {}\n  expected: {}\n  actual:   {}",
        bad.len(),
        actual.len(),
        if tol.exact {
            "bit-exact".to_string()
        } else {
            format!("rtol {:e}, atol {:e}", tol.rtol, tol.atol)
        },
        if tol.signed_zero {
            "sign of zero checked"
        } else {
            "sign of zero ignored"
        },
        detail.join("\n    "),
        expected.preview(24),
        actual.preview(24)
    ))
}

#[test]
fn numpy_fixtures_match() {
    let cpu = CpuBackend::new();
    let cases = load_cases();
    let mut failures = Vec::new();
    // Per-op tallies of (passed, total), printed with `--nocapture`.
    let mut tally: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for case in &cases {
        match case {
            Err(e) => failures.push(e.clone()),
            Ok(case) => {
                let entry = tally.entry(case.op.clone()).or_default();
                entry.1 += 1;
                match check(case, &cpu) {
                    Ok(()) => entry.0 += 1,
                    Err(report) => failures.push(report),
                }
            }
        }
    }
    for (op, (pass, total)) in &tally {
        println!("{op:>16}: {pass}/{total} cases pass");
    }
    assert!(
        !cases.is_empty(),
        "no fixtures found in {}",
        fixture_dir().display()
    );
    assert!(
        failures.is_empty(),
        "{} of {} NumPy fixture cases failed:\n\n{}\n\n{} of {} NumPy fixture cases failed (listed above)",
        failures.len(),
        cases.len(),
        failures.join("\n\n"),
        failures.len(),
        cases.len()
    );
}

/// The fixtures parse, use only known ops and cover the families they were written for. This needs no
/// kernels, so it also guards the files while backends are being written.
#[test]
fn fixtures_are_well_formed_and_cover_every_family() {
    let mut count = 0;
    let mut ops = BTreeMap::<String, usize>::new();
    let mut exact_or_view = 0;
    for case in load_cases() {
        let case = case.unwrap_or_else(|e| panic!("{e}"));
        assert!(
            dispatch::KNOWN_OPS.contains(&case.op.as_str()),
            "[{}] unknown op {:?}",
            case.origin,
            case.op
        );
        *ops.entry(case.op.clone()).or_default() += 1;
        if case.exact || case.inputs.iter().any(|a| !a.view.is_empty()) {
            exact_or_view += 1;
        }
        count += 1;
    }
    assert!(count >= 500, "only {count} fixture cases");
    for op in dispatch::KNOWN_OPS {
        assert!(ops.contains_key(*op), "no fixture exercises {op}");
    }
    assert!(
        exact_or_view > 100,
        "too few exact or strided cases: {exact_or_view}"
    );
}

/// The comparison itself must be able to fail: it rejects near misses, NaN against numbers, wrong signs
/// of zero where they are checked, and different lengths or kinds.
#[test]
fn comparison_rejects_near_misses() {
    let f64_tol = Tolerance::for_dtype(DType::F64, false, false);
    let f32_tol = Tolerance::for_dtype(DType::F32, false, false);
    assert!(float_close(1.0, 1.0 + 1e-14, f64_tol));
    assert!(!float_close(1.0, 1.0 + 1e-9, f64_tol));
    assert!(float_close(1.0, 1.0 + 5e-7, f32_tol));
    assert!(!float_close(1.0, 1.0 + 1e-5, f32_tol));
    assert!(float_close(f64::NAN, f64::NAN, f64_tol));
    assert!(!float_close(0.0, f64::NAN, f64_tol));
    assert!(!float_close(f64::NAN, 0.0, f64_tol));
    assert!(!float_close(f64::INFINITY, f64::MAX, f64_tol));
    assert!(float_close(-0.0, 0.0, f64_tol));
    let signed = Tolerance::for_dtype(DType::F64, true, true);
    assert!(!float_close(-0.0, 0.0, signed));
    assert!(!float_close(1.0, 1.0 + f64::EPSILON, signed));
    assert!(compare::complex_close((1.0, 1e-20), (1.0, 0.0), f64_tol));
    assert!(!compare::complex_close((1.0, 1e-6), (1.0, 0.0), f64_tol));
    assert!(!compare::complex_close(
        (f64::NAN, 0.0),
        (0.0, 0.0),
        f64_tol
    ));
    let ints = (Values::Int(vec![1, 2, 3]), Values::Int(vec![1, 2, 4]));
    assert_eq!(mismatches(&ints.0, &ints.1, f64_tol), Ok(vec![2]));
    assert!(mismatches(&Values::Int(vec![1]), &Values::Int(vec![1, 2]), f64_tol).is_err());
    assert!(mismatches(&Values::Int(vec![1]), &Values::Bool(vec![true]), f64_tol).is_err());
    assert_eq!(unravel(5, &[2, 3]), vec![1, 2]);
}

/// Decoding keeps the values the generator wrote, special floats included.
#[test]
fn special_floats_and_wide_integers_decode_exactly() {
    let v: Value = serde_json::json!({
        "dtype": "float64", "shape": [5],
        "data": ["nan", "inf", "-inf", "-0.0", 0.1]
    });
    let a = decode::array(&v).unwrap();
    let Values::Real(x) = Values::of(&a.data) else {
        panic!("float64 decodes to reals")
    };
    assert!(x[0].is_nan() && x[1] == f64::INFINITY && x[2] == f64::NEG_INFINITY);
    assert!(x[3] == 0.0 && x[3].is_sign_negative());
    assert_eq!(x[4], 0.1);
    let v: Value =
        serde_json::json!({"dtype": "int64", "shape": [2], "data": [i64::MIN, i64::MAX]});
    assert_eq!(
        Values::of(&decode::array(&v).unwrap().data),
        Values::Int(vec![i64::MIN, i64::MAX])
    );
    let v: Value = serde_json::json!({"dtype": "uint8", "shape": [1], "data": [256]});
    assert!(decode::array(&v).is_err());
    let v: Value = serde_json::json!({"dtype": "float32", "shape": [3], "data": [1.0]});
    assert!(decode::array(&v).is_err());
}
