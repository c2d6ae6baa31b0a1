//! Property test: forward mode (chunked duals) and reverse mode (tape) agree on random programs.

use nabla_scalar::{DualN, Scalar, Tape, gradient_chunked};
use proptest::prelude::*;

/// One step of a random straight-line program: `op` applied to two earlier values.
#[derive(Clone, Copy, Debug)]
struct Step {
    op: u8,
    a: usize,
    b: usize,
}

/// Runs the program on `inputs`; each step reads two earlier values (indices taken modulo the number
/// so far). Every op is defined and smooth on all of R.
fn run<S: Scalar>(program: &[Step], inputs: &[S]) -> S {
    let mut values: Vec<S> = inputs.to_vec();
    for s in program {
        let a = values[s.a % values.len()];
        let b = values[s.b % values.len()];
        let v = match s.op % 12 {
            0 => a + b,
            1 => a - b,
            2 => a * b,
            3 => a / (b * b).add_f64(1.0),
            4 => a.sin() * b.cos(),
            5 => a.tanh() + b.atan(),
            6 => (a * a).log1p(),
            7 => (a * a + b * b).add_f64(1.0).sqrt(),
            8 => a.atan2(b.abs().add_f64(0.5)),
            9 => a.hypot(b.add_f64(0.5)),
            10 => a.min(b).mul_f64(2.0) + a.max(b),
            _ => (a.tanh()).exp() * b.sinh().atan(),
        };
        values.push(v);
    }
    values[values.len() - 1]
}

fn step() -> impl Strategy<Value = Step> {
    (any::<u8>(), 0usize..64, 0usize..64).prop_map(|(op, a, b)| Step { op, a, b })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn forward_and_reverse_agree(
        program in prop::collection::vec(step(), 1..40),
        inputs in prop::collection::vec(-2.0f64..2.0, 1..6),
    ) {
        let value = run(&program, &inputs);
        let forward = gradient_chunked::<3, _, _>(|x: &[DualN<f64, 3>]| run(&program, x), &inputs);
        let tape = Tape::new();
        let vars = tape.var_slice(&inputs);
        let out = run(&program, &vars);
        prop_assert_eq!(out.value(), value);
        let reverse = tape.backward(out).wrt_all(&vars);
        for (f, r) in forward.iter().zip(&reverse) {
            prop_assert!((f - r).abs() <= 1e-9 * (1.0 + f.abs()), "forward {} vs reverse {}", f, r);
        }
    }
}
