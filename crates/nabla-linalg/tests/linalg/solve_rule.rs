//! The right-hand-side rule of `solve` and `lstsq` against NumPy 2 (fixture from
//! scripts/gen_linalg_solve_broadcast_fixture.py): `b` is a vector only when it is 1-D, otherwise a
//! stack of matrices whose batch dimensions broadcast against `A`'s; where NumPy raises, nabla gives a
//! shape error naming the op and the fix.

use crate::support::{T, assert_real_close, fixture_tensor, values};
use nabla_core::Error;
use serde_json::Value;

const FIXTURE: &str = include_str!("../fixtures/solve_broadcast.json");

fn run(op: &str, a: &T, b: &T) -> nabla_core::Result<T> {
    match op {
        "solve" => nabla_linalg::solve(a, b),
        "lstsq" => nabla_linalg::lstsq(a, b),
        other => panic!("no function for fixture op {other}"),
    }
}

#[test]
fn right_hand_sides_follow_numpy_2() {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 12);
    for case in cases {
        let (name, op) = (case["name"].as_str().unwrap(), case["op"].as_str().unwrap());
        let (a, b) = (fixture_tensor(&case["a"]), fixture_tensor(&case["b"]));
        let got = run(op, &a, &b);
        if case.get("error").is_some() {
            let err = got.expect_err(name);
            assert!(
                matches!(err, Error::ShapeMismatch { op: o, .. } if o == format!("linalg.{op}")),
                "{name}: {err}"
            );
            let text = err.to_string();
            assert!(
                text.contains("only when it is 1-D") && text.contains("unsqueeze(-1)"),
                "{name}: {text}"
            );
            continue;
        }
        let got = got.unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = fixture_tensor(&case["x"]);
        assert_eq!(got.shape(), want.shape(), "{name}: shape");
        assert_real_close(&values(&got), &values(&want), 1e-12, name);
    }
}

#[test]
fn a_stack_of_vectors_is_solved_as_one_column_matrices() -> nabla_core::Result<()> {
    let fixture: Value = serde_json::from_str(FIXTURE).unwrap();
    let case = fixture["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "solve_stack_of_vectors_is_not_a_vector")
        .unwrap();
    let (a, b) = (fixture_tensor(&case["a"]), fixture_tensor(&case["b"]));
    // The fix the error names: b [2, 3] as two columns [2, 3, 1].
    let x = nabla_linalg::solve(&a, &b.unsqueeze(-1)?)?.squeeze(-1)?;
    assert_eq!(x.shape(), &[2, 3]);
    let back = a.matmul(&x.unsqueeze(-1)?)?.squeeze(-1)?;
    assert_real_close(&values(&back), &values(&b), 1e-13, "A x = b");
    Ok(())
}
