//! Per-operation cost of scalar automatic differentiation: forward mode (dual numbers) against reverse
//! mode (tape) on the gradient of the Rosenbrock function in 1,000 dimensions and on a 10,000-operation
//! scalar expression, with plain `f64` evaluation for reference.
//!
//! ```sh
//! cargo run --release -p nabla-scalar --example bench_scalar
//! ```
//!
//! The operation count of each function is the number of nodes it records on a tape. "ns/op" divides
//! the time of one full gradient by that count, so it is the cost per operation of the original
//! function; forward mode makes `ceil(n / C)` passes over the function with `C`-component duals.

use std::hint::black_box;
use std::time::{Duration, Instant};

use nabla_scalar::{Dual, DualN, Scalar, Tape, gradient_chunked};

/// The Rosenbrock function `Σ 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2`.
fn rosenbrock<S: Scalar>(x: &[S]) -> S {
    let mut acc = S::zero();
    for w in x.windows(2) {
        let a = w[1] - w[0] * w[0];
        let b = (-w[0]).add_f64(1.0);
        acc += (a * a).mul_f64(100.0) + b * b;
    }
    acc
}

/// A straight-line expression of 10,000 operations on four inputs, mixing arithmetic and elementary
/// functions (values stay bounded).
fn expression<S: Scalar>(x: &[S]) -> S {
    let mut v = x[0];
    for i in 0..1000 {
        let a = x[i % 4];
        let b = x[(i + 1) % 4];
        v = v * a + b; // 2
        v = v.sin(); // 1
        v -= a * b; // 2
        v /= (b * b).add_f64(1.0); // 3
        v = v.tanh() + a; // 2
    }
    v
}

/// The best time per call of `f` over a few batches lasting about `budget` in all.
fn time(budget: Duration, f: &mut dyn FnMut()) -> Duration {
    let start = Instant::now();
    f();
    let once = start.elapsed().max(Duration::from_nanos(1));
    let per_batch = budget / 5;
    let reps = (per_batch.as_nanos() / once.as_nanos()).clamp(1, 1_000_000) as u32;
    (0..5)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed() / reps
        })
        .min()
        .unwrap_or(once)
}

/// The number of operations `f` records on a tape for an input of length `n`.
fn op_count(
    f: impl for<'t> Fn(&[nabla_scalar::Var<'t>]) -> nabla_scalar::Var<'t>,
    n: usize,
) -> usize {
    let tape = Tape::new();
    let x = tape.var_slice(&vec![0.5; n]);
    f(&x);
    tape.len() - n
}

/// Prints the time of one call, its cost per operation of the function, and for forward mode with
/// `passes > 1` the cost per operation and pass.
fn report(mode: &str, per_call: Duration, ops: usize, passes: usize) {
    let ns = per_call.as_secs_f64() * 1e9;
    let per_op = ns / ops as f64;
    let per_pass = if passes > 1 {
        format!("  ({:.2} ns/op per pass)", per_op / passes as f64)
    } else {
        String::new()
    };
    println!(
        "  {mode:<50} {:>9.1} us {per_op:>9.2} ns/op{per_pass}",
        ns / 1e3
    );
}

/// Reverse mode with a reused tape: record, sweep, clear.
fn reverse(
    tape: &mut Tape,
    f: impl for<'t> Fn(&[nabla_scalar::Var<'t>]) -> nabla_scalar::Var<'t>,
    x: &[f64],
) -> f64 {
    let g = {
        let vars = tape.var_slice(x);
        let out = f(&vars);
        let grads = tape.backward(out);
        grads.wrt(vars[0])
    };
    tape.clear();
    g
}

/// Times and reports each `(mode, passes, body)` case for a function of `ops` operations.
fn run_cases(budget: Duration, ops: usize, cases: &mut [(&str, usize, &mut dyn FnMut())]) {
    for (mode, passes, body) in cases.iter_mut() {
        report(mode, time(budget, body), ops, *passes);
    }
}

fn main() {
    let budget = Duration::from_millis(300);

    let n = 1000;
    let x: Vec<f64> = (0..n).map(|i| 0.5 + 0.001 * i as f64).collect();
    let ops = op_count(|v| rosenbrock(v), n);
    println!("Rosenbrock gradient, n = {n} ({ops} operations per evaluation)");
    let mut tape = Tape::with_capacity(ops + n);
    run_cases(
        budget,
        ops,
        &mut [
            ("f64 evaluation (no derivative)", 1, &mut || {
                black_box(rosenbrock(black_box(&x)));
            }),
            ("forward, Dual<f64>, 1000 passes", 1000, &mut || {
                black_box(gradient_chunked::<1, _, _>(
                    rosenbrock::<Dual<f64>>,
                    black_box(&x),
                ));
            }),
            ("forward, DualN<f64, 8>, 125 passes", 125, &mut || {
                black_box(gradient_chunked::<8, _, _>(
                    rosenbrock::<DualN<f64, 8>>,
                    black_box(&x),
                ));
            }),
            ("forward, DualN<f64, 32>, 32 passes", 32, &mut || {
                black_box(gradient_chunked::<32, _, _>(
                    rosenbrock::<DualN<f64, 32>>,
                    black_box(&x),
                ));
            }),
            ("reverse, tape (record + backward, reused)", 1, &mut || {
                black_box(reverse(&mut tape, |v| rosenbrock(v), black_box(&x)));
            }),
        ],
    );

    let x4 = [0.3, -0.7, 1.1, 0.5];
    let ops = op_count(|v| expression(v), 4);
    println!("Scalar expression ({ops} operations, 4 inputs)");
    let mut tape = Tape::with_capacity(ops + 4);
    run_cases(
        budget,
        ops,
        &mut [
            ("f64 evaluation (no derivative)", 1, &mut || {
                black_box(expression(black_box(&x4)));
            }),
            (
                "forward, Dual<f64> (one directional derivative)",
                1,
                &mut || {
                    let [a, b, c, d] = black_box(x4);
                    let x = [
                        Dual::variable(a),
                        Dual::from_f64(b),
                        Dual::from_f64(c),
                        Dual::from_f64(d),
                    ];
                    black_box(expression(&x).deriv());
                },
            ),
            (
                "forward, DualN<f64, 4> (full gradient, 1 pass)",
                1,
                &mut || {
                    black_box(expression(&DualN::variables(black_box(x4))).eps);
                },
            ),
            ("reverse, tape (record + backward, reused)", 1, &mut || {
                black_box(reverse(&mut tape, |v| expression(v), black_box(&x4)));
            }),
        ],
    );
}
