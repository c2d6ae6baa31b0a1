//! The reverse-mode tape: recording, reuse, constants, and misuse.

use nabla_scalar::{Scalar, Tape, Var, reverse_gradient};

#[test]
fn backward_gives_adjoints_by_variable() {
    let tape = Tape::new();
    let [x, y, unused] = tape.vars([2.0, 3.0, 7.0]);
    let z = x * y + x.sin();
    let g = tape.backward(z);
    assert_eq!(g[x], 3.0 + 2.0_f64.cos());
    assert_eq!(g.wrt(y), 2.0);
    assert_eq!(g[unused], 0.0);
    assert_eq!(g.wrt_all(&[x, y]), vec![g[x], 2.0]);
    // A variable used many times accumulates.
    let w = x * x * x + x;
    assert_eq!(tape.backward(w)[x], 13.0);
    // Intermediate nodes have adjoints too.
    let p = x * y;
    let q = p.exp();
    assert_eq!(tape.backward(q)[p], 6.0_f64.exp());
    assert_eq!(g.as_slice().len(), 6);
}

#[test]
fn constants_are_not_recorded() {
    let tape = Tape::new();
    let x = tape.var(1.5);
    let c = Var::from_f64(2.0);
    assert!(c.is_constant() && !x.is_constant());
    let before = tape.len();
    let k = (c * c).sin() + Var::constant(1.0);
    assert_eq!(tape.len(), before, "operations on constants record nothing");
    let y = x * c + k;
    assert_eq!(tape.len(), before + 2);
    let g = tape.backward(y);
    assert_eq!((g[x], g[c]), (2.0, 0.0));
    assert!(tape.backward(c).as_slice().iter().all(|&a| a == 0.0));
}

#[test]
fn clear_reuses_the_tape() {
    let mut tape = Tape::with_capacity(16);
    let mut results = Vec::new();
    for i in 0..3 {
        let x = tape.var(f64::from(i));
        let y = x * x;
        results.push(tape.backward(y)[x]);
        assert_eq!(tape.len(), 2);
        tape.clear();
        assert!(tape.is_empty());
    }
    assert_eq!(results, vec![0.0, 2.0, 4.0]);
}

#[test]
#[should_panic(expected = "two different tapes")]
fn mixing_tapes_panics() {
    let a = Tape::new();
    let b = Tape::new();
    let _ = a.var(1.0) + b.var(2.0);
}

#[test]
fn reverse_gradient_helper() {
    let (value, grad) = reverse_gradient(
        |x: &[Var<'_>]| {
            let mut acc = Var::zero();
            for w in x.windows(2) {
                acc += (w[1] - w[0] * w[0]).powi(2) * 100.0 + (1.0 - w[0]).powi(2);
            }
            acc
        },
        &[1.0, 1.0, 1.0],
    );
    assert_eq!((value, grad), (0.0, vec![0.0, 0.0, 0.0]));
}
