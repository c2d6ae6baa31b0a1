//! Every elementary function and operator: value, forward derivative (`Dual`), reverse derivative
//! (`Tape`) against closed forms, and the closed forms against central finite differences.

use nabla_scalar::{Dual, Scalar, Tape};

/// Unary functions with their closed-form derivatives and test points inside their domains.
#[derive(Clone, Copy, Debug)]
enum Unary {
    Exp,
    Ln,
    Log1p,
    Sqrt,
    Powi3,
    PowiNeg2,
    Powi0,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Abs,
    Sign,
    Relu,
    Neg,
}

const UNARY: [Unary; 20] = [
    Unary::Exp,
    Unary::Ln,
    Unary::Log1p,
    Unary::Sqrt,
    Unary::Powi3,
    Unary::PowiNeg2,
    Unary::Powi0,
    Unary::Sin,
    Unary::Cos,
    Unary::Tan,
    Unary::Asin,
    Unary::Acos,
    Unary::Atan,
    Unary::Sinh,
    Unary::Cosh,
    Unary::Tanh,
    Unary::Abs,
    Unary::Sign,
    Unary::Relu,
    Unary::Neg,
];

impl Unary {
    fn apply<S: Scalar>(self, x: S) -> S {
        match self {
            Unary::Exp => x.exp(),
            Unary::Ln => x.ln(),
            Unary::Log1p => x.log1p(),
            Unary::Sqrt => x.sqrt(),
            Unary::Powi3 => x.powi(3),
            Unary::PowiNeg2 => x.powi(-2),
            Unary::Powi0 => x.powi(0),
            Unary::Sin => x.sin(),
            Unary::Cos => x.cos(),
            Unary::Tan => x.tan(),
            Unary::Asin => x.asin(),
            Unary::Acos => x.acos(),
            Unary::Atan => x.atan(),
            Unary::Sinh => x.sinh(),
            Unary::Cosh => x.cosh(),
            Unary::Tanh => x.tanh(),
            Unary::Abs => x.abs(),
            Unary::Sign => x.sign(),
            Unary::Relu => x.relu(),
            Unary::Neg => -x,
        }
    }

    fn deriv(self, x: f64) -> f64 {
        match self {
            Unary::Exp => x.exp(),
            Unary::Ln => 1.0 / x,
            Unary::Log1p => 1.0 / (1.0 + x),
            Unary::Sqrt => 0.5 / x.sqrt(),
            Unary::Powi3 => 3.0 * x * x,
            Unary::PowiNeg2 => -2.0 / (x * x * x),
            Unary::Powi0 => 0.0,
            Unary::Sin => x.cos(),
            Unary::Cos => -x.sin(),
            Unary::Tan => 1.0 / (x.cos() * x.cos()),
            Unary::Asin => 1.0 / (1.0 - x * x).sqrt(),
            Unary::Acos => -1.0 / (1.0 - x * x).sqrt(),
            Unary::Atan => 1.0 / (1.0 + x * x),
            Unary::Sinh => x.cosh(),
            Unary::Cosh => x.sinh(),
            Unary::Tanh => 1.0 - x.tanh() * x.tanh(),
            Unary::Abs => x.signum(),
            Unary::Sign => 0.0,
            Unary::Relu => f64::from(u8::from(x > 0.0)),
            Unary::Neg => -1.0,
        }
    }

    fn points(self) -> &'static [f64] {
        match self {
            Unary::Ln | Unary::Sqrt => &[0.3, 1.0, 7.5],
            Unary::Log1p => &[-0.5, 1e-3, 2.0],
            Unary::Asin | Unary::Acos => &[-0.7, 0.0, 0.4],
            Unary::Tan => &[-1.0, 0.2, 1.2],
            Unary::PowiNeg2 => &[-1.5, 0.4, 2.0],
            _ => &[-1.3, 0.25, 2.0],
        }
    }
}

/// Binary functions with closed-form partials.
#[derive(Clone, Copy, Debug)]
enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    Powf,
    Atan2,
    Hypot,
    Min,
    Max,
}

const BINARY: [Binary; 9] = [
    Binary::Add,
    Binary::Sub,
    Binary::Mul,
    Binary::Div,
    Binary::Powf,
    Binary::Atan2,
    Binary::Hypot,
    Binary::Min,
    Binary::Max,
];

const PAIRS: [(f64, f64); 4] = [(0.7, 1.9), (2.5, -0.6), (1.3, 0.4), (3.0, 2.0)];

impl Binary {
    fn apply<S: Scalar>(self, a: S, b: S) -> S {
        match self {
            Binary::Add => a + b,
            Binary::Sub => a - b,
            Binary::Mul => a * b,
            Binary::Div => a / b,
            Binary::Powf => a.powf(b),
            Binary::Atan2 => a.atan2(b),
            Binary::Hypot => a.hypot(b),
            Binary::Min => a.min(b),
            Binary::Max => a.max(b),
        }
    }

    fn partials(self, a: f64, b: f64) -> (f64, f64) {
        match self {
            Binary::Add => (1.0, 1.0),
            Binary::Sub => (1.0, -1.0),
            Binary::Mul => (b, a),
            Binary::Div => (1.0 / b, -a / (b * b)),
            Binary::Powf => (b * a.powf(b - 1.0), a.powf(b) * a.ln()),
            Binary::Atan2 => (b / (a * a + b * b), -a / (a * a + b * b)),
            Binary::Hypot => (a / a.hypot(b), b / a.hypot(b)),
            Binary::Min | Binary::Max if a == b => (0.5, 0.5),
            Binary::Min => {
                if a < b {
                    (1.0, 0.0)
                } else {
                    (0.0, 1.0)
                }
            }
            Binary::Max => {
                if a > b {
                    (1.0, 0.0)
                } else {
                    (0.0, 1.0)
                }
            }
        }
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

fn central_difference(f: impl Fn(f64) -> f64, x: f64) -> f64 {
    let h = 1e-6 * (1.0 + x.abs());
    (f(x + h) - f(x - h)) / (2.0 * h)
}

#[test]
fn unary_functions_forward_reverse_closed_form_and_finite_differences() {
    for op in UNARY {
        for &x in op.points() {
            let exact = op.deriv(x);
            let value = op.apply(x);
            let fd = central_difference(|t| op.apply(t), x);
            assert!(
                close(fd, exact, 1e-6),
                "{op:?} at {x}: fd {fd} vs closed form {exact}"
            );

            let dual = op.apply(Dual::variable(x));
            assert_eq!(dual.value(), value, "{op:?} at {x}: dual value");
            assert!(
                close(dual.deriv(), exact, 1e-13),
                "{op:?} at {x}: forward {} vs {exact}",
                dual.deriv()
            );

            let tape = Tape::new();
            let v = tape.var(x);
            let y = op.apply(v);
            assert_eq!(y.value(), value, "{op:?} at {x}: tape value");
            let g = tape.backward(y)[v];
            assert!(
                close(g, exact, 1e-13),
                "{op:?} at {x}: reverse {g} vs {exact}"
            );
        }
    }
}

#[test]
fn binary_functions_forward_reverse_closed_form_and_finite_differences() {
    for op in BINARY {
        for (a, b) in PAIRS {
            if matches!(op, Binary::Powf) && a <= 0.0 {
                continue;
            }
            let (da, db) = op.partials(a, b);
            let value = op.apply(a, b);
            let fda = central_difference(|t| op.apply(t, b), a);
            let fdb = central_difference(|t| op.apply(a, t), b);
            assert!(
                close(fda, da, 1e-6) && close(fdb, db, 1e-6),
                "{op:?} at ({a}, {b}): fd"
            );

            let fa = op.apply(Dual::variable(a), Dual::from_f64(b));
            let fb = op.apply(Dual::from_f64(a), Dual::variable(b));
            assert_eq!(fa.value(), value);
            assert!(
                close(fa.deriv(), da, 1e-13),
                "{op:?} at ({a}, {b}): forward d/da"
            );
            assert!(
                close(fb.deriv(), db, 1e-13),
                "{op:?} at ({a}, {b}): forward d/db"
            );

            let tape = Tape::new();
            let [va, vb] = tape.vars([a, b]);
            let y = op.apply(va, vb);
            assert_eq!(y.value(), value);
            let g = tape.backward(y);
            assert!(
                close(g[va], da, 1e-13),
                "{op:?} at ({a}, {b}): reverse d/da"
            );
            assert!(
                close(g[vb], db, 1e-13),
                "{op:?} at ({a}, {b}): reverse d/db"
            );
        }
    }
}

#[test]
fn edge_cases_give_conventional_derivatives_not_nan() {
    // |x| and hypot at the kink, powf with a constant exponent at a zero base, x^0 at 0. The kinks
    // of abs, relu, sign, min, max and clamp follow the tensor tier (the facade's `kinks` test).
    assert_eq!(Dual::variable(0.0).abs().deriv(), 1.0);
    let h = Dual::variable(0.0).hypot(Dual::from_f64(0.0));
    assert_eq!((h.value(), h.deriv()), (0.0, 0.0));
    let p = Dual::variable(0.0).powf(Dual::from_f64(2.0));
    assert_eq!((p.value(), p.deriv()), (0.0, 0.0));
    assert_eq!(Dual::variable(0.0).powi(0).deriv(), 0.0);
    assert_eq!(Dual::variable(0.0).powf(Dual::from_f64(0.0)).deriv(), 0.0);
    // A negative base with a constant integer exponent keeps the base derivative.
    let q = Dual::variable(-2.0).powf(Dual::from_f64(3.0));
    assert_eq!((q.value(), q.deriv()), (-8.0, 12.0));
    // min/max ties split the derivative evenly.
    let tape = Tape::new();
    let [a, b] = tape.vars([1.0, 1.0]);
    let g = tape.backward(a.max(b) + a.min(b) * 2.0);
    assert_eq!((g[a], g[b]), (1.5, 1.5));
    // relu'(0) = 0, sign is 0 at both zeros with derivative 0, clamp takes one half at a bound.
    assert_eq!(Dual::variable(0.0).relu().deriv(), 0.0);
    let s = Dual::variable(-0.0).sign();
    assert_eq!((s.value(), s.deriv()), (0.0, 0.0));
    let (lo, hi) = (Dual::from_f64(-1.0), Dual::from_f64(2.0));
    assert_eq!(Dual::variable(-1.0).clamp(lo, hi).deriv(), 0.5);
    assert_eq!(Dual::variable(2.0).clamp(lo, hi).deriv(), 0.5);
    assert_eq!(Dual::variable(0.5).clamp(lo, hi).deriv(), 1.0);
}

#[test]
fn mixed_operations_with_plain_numbers() {
    let x = Dual::variable(3.0);
    let y = 2.0 * x + 1.0 - x / 2.0 + (1.0 - x) * 4.0 + 6.0 / x;
    // 2x + 1 - x/2 + 4 - 4x + 6/x: derivative 2 - 1/2 - 4 - 6/x^2
    assert_eq!(y.value(), 6.0 + 1.0 - 1.5 - 8.0 + 2.0);
    assert!(close(y.deriv(), 2.0 - 0.5 - 4.0 - 6.0 / 9.0, 1e-15));
    let mut z = x;
    z += 1.0;
    z *= 2.0;
    z -= 0.5;
    z /= 0.5;
    assert_eq!((z.value(), z.deriv()), (15.0, 4.0));
    assert!(x > 2.0);
    assert!(x < 4.0);
    assert!(2.0 < x);
    assert!(x == 3.0);
    assert!(x != Dual::from_f64(2.0));
    assert_eq!(
        x.partial_cmp(&Dual::from_f64(5.0)),
        Some(std::cmp::Ordering::Less)
    );

    let tape = Tape::new();
    let v = tape.var(3.0);
    let w = 2.0 * v + 1.0 - v / 2.0 + (1.0 - v) * 4.0 + 6.0 / v;
    assert_eq!(w.value(), y.value());
    assert!(close(tape.backward(w)[v], y.deriv(), 1e-15));
    assert!(v > 2.0);
    assert!(v < tape.var(4.0));
    assert!(v == 3.0);
}

#[test]
fn f32_duals_and_generic_code_on_floats() {
    let x = Dual::variable(0.5_f32);
    let y = x.sin() * x.exp();
    let exact = 0.5_f32.exp() * (0.5_f32.sin() + 0.5_f32.cos());
    assert!((y.deriv() - exact).abs() < 1e-6);
    assert_eq!(Unary::Sinh.apply(0.5_f32), 0.5_f32.sinh());
    assert_eq!(f32::from_f64(0.25).to_f64(), 0.25);
}
