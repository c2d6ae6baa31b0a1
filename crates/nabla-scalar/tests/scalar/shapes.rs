//! Static-shape vectors and matrices: products, solves against known solutions, singular systems,
//! and derivatives through a solve with dual numbers and tape variables.

use nabla_scalar::{Dual, Error, Matrix, Scalar, Tape, Var, Vector};

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * (1.0 + b.abs())
}

#[test]
fn vector_and_matrix_arithmetic() {
    let v = Vector::new([1.0, 2.0, 2.0]);
    let w = Vector::new([0.5, -1.0, 4.0]);
    assert_eq!(v.dot(&w), 6.5);
    assert_eq!(v.norm(), 3.0);
    assert_eq!((v + w).into_array(), [1.5, 1.0, 6.0]);
    assert_eq!((v - w * 2.0).into_array(), [0.0, 4.0, -6.0]);
    assert_eq!((-v).sum(), -5.0);
    assert_eq!(Vector::<f64, 3>::unit(1).into_array(), [0.0, 1.0, 0.0]);

    let a = Matrix::new([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
    let b = Matrix::new([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]);
    assert_eq!((a * b).rows(), &[[4.0, 5.0], [10.0, 11.0]]);
    assert_eq!(a.transpose().rows(), &[[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]);
    assert_eq!((a * v).into_array(), [11.0, 26.0]);
    assert_eq!(a.matvec(&v), a * v);
    assert_eq!((a + a.scale(2.0))[(1, 2)], 18.0);
    assert_eq!((a - a).rows(), Matrix::<f64, 2, 3>::zeros().rows());
    let i3 = Matrix::<f64, 3, 3>::identity();
    assert_eq!(a * i3, a);
    assert_eq!(i3.trace(), 3.0);
    assert_eq!(a.row(1).into_array(), [4.0, 5.0, 6.0]);
    assert_eq!(a.col(2).into_array(), [3.0, 6.0]);
}

#[test]
fn solve_recovers_known_solutions() {
    // Needs pivoting: a zero in the leading position.
    let a = Matrix::new([[0.0, 2.0, 1.0], [1.0, -2.0, -3.0], [-1.0, 1.0, 2.0]]);
    let x = Vector::new([1.0, -2.0, 3.0]);
    let b = a * x;
    let solved = a.solve(&b).unwrap();
    for i in 0..3 {
        assert!(close(solved[i], x[i]), "{solved:?}");
    }
    // A 4x4 system with a hand-computed solution.
    let a = Matrix::new([
        [4.0, -1.0, 0.0, 0.0],
        [-1.0, 4.0, -1.0, 0.0],
        [0.0, -1.0, 4.0, -1.0],
        [0.0, 0.0, -1.0, 3.0],
    ]);
    let x = a.solve(&Vector::new([2.0, 3.0, 8.0, 14.0])).unwrap();
    for (got, want) in x.into_array().iter().zip([1.0, 2.0, 4.0, 6.0]) {
        assert!(close(*got, want), "{x:?}");
    }
    assert!(close(
        a.determinant(),
        4.0 * (4.0 * (12.0 - 1.0) - 3.0) - 11.0
    ));
    let inv = a.inverse().unwrap();
    let id = a * inv;
    for i in 0..4 {
        for j in 0..4 {
            assert!(close(id[(i, j)], if i == j { 1.0 } else { 0.0 }));
        }
    }
    assert_eq!(Matrix::new([[0.0, 2.0], [3.0, 1.0]]).determinant(), -6.0);
}

#[test]
fn singular_systems_are_errors_not_nan() {
    let exact = Matrix::new([[1.0, 2.0], [2.0, 4.0]]);
    let err = exact.solve(&Vector::new([1.0, 1.0])).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Singular {
                op: "solve",
                n: 2,
                column: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("solve: the 2x2 matrix is singular to working precision")
    );
    // Singular only up to rounding.
    let rounding = Matrix::new([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
    assert!(matches!(
        rounding.inverse(),
        Err(Error::Singular {
            op: "inverse",
            n: 3,
            ..
        })
    ));
    assert!(rounding.lu().is_err());
    assert_eq!(Matrix::<f64, 3, 3>::zeros().determinant(), 0.0);
    assert!(
        Matrix::<f64, 3, 3>::zeros()
            .solve(&Vector::zeros())
            .is_err()
    );
}

/// `x(t)` solves `A(t) x = b` with `A(t) = [[2 + t, 1], [1, 3]]`, `b = [1, 2]`: returns `x_0 + x_1`.
fn solve_sum<S: Scalar>(t: S) -> S {
    let a = Matrix::new([[t.add_f64(2.0), S::one()], [S::one(), S::from_f64(3.0)]]);
    let b = Vector::new([S::one(), S::from_f64(2.0)]);
    a.solve(&b)
        .map(|x| x.sum())
        .unwrap_or_else(|_| S::from_f64(f64::NAN))
}

#[test]
fn derivatives_through_solve_with_duals_and_tape() {
    // Closed form: det = 5 + 3t, x0 = 1/det, x1 = (3 + 2t)/det, sum = (4 + 2t)/(5 + 3t),
    // d/dt = (2(5 + 3t) - 3(4 + 2t)) / (5 + 3t)^2 = -2 / (5 + 3t)^2.
    let t = 0.5_f64;
    let exact = -2.0 / (5.0 + 3.0 * t).powi(2);
    assert!(close(solve_sum(t), (4.0 + 2.0 * t) / (5.0 + 3.0 * t)));
    assert!(close(solve_sum(Dual::variable(t)).deriv(), exact));
    let tape = Tape::new();
    let v = tape.var(t);
    let y: Var<'_> = solve_sum(v);
    assert!(close(tape.backward(y)[v], exact));
    // det and inverse with tape variables: d det([[a, b], [c, d]]) / da = d.
    let [a, b, c, d] = tape.vars([1.0, 2.0, 3.0, 5.0]);
    let m = Matrix::new([[a, b], [c, d]]);
    let g = tape.backward(m.determinant());
    assert_eq!([g[a], g[b], g[c], g[d]], [5.0, -3.0, -2.0, 1.0]);
    let inv = m.inverse().unwrap();
    assert!(close(inv[(0, 0)].value(), -5.0));
}
