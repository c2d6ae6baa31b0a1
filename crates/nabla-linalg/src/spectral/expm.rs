//! The matrix exponential of one matrix: Higham's scaling and squaring with a degree 13 Padé
//! approximant ("The scaling and squaring method for the matrix exponential revisited", SIAM J.
//! Matrix Anal. Appl. 26(4), 2005), the algorithm of SciPy's and JAX's `expm`.
//!
//! `A` is scaled by `2⁻ˢ` so that `‖A‖₁ ≤ θ₁₃ = 5.37`, `r₁₃(A) = (V − U)⁻¹(V + U)` is formed from
//! the even (`V`) and odd (`U`) parts of the Padé numerator, and the result is squared `s` times.
//! Small norms use the lower degrees 3, 5, 7 or 9 with their own bounds θ, as Higham's algorithm 2.3.

use super::kernels::{Field, abs_f64};
use faer::linalg::matmul::matmul;
use faer::linalg::solvers::Solve as _;
use faer::{Accum, Mat, MatRef, Par};

/// Padé coefficients `b₀..b₁₃` of degree 13.
const B13: [f64; 14] = [
    64764752532480000.0,
    32382376266240000.0,
    7771770303897600.0,
    1187353796428800.0,
    129060195264000.0,
    10559470521600.0,
    670442572800.0,
    33522128640.0,
    1323241920.0,
    40840800.0,
    960960.0,
    16380.0,
    182.0,
    1.0,
];

/// The lower degrees with their coefficients and the 1-norm bound θ up to which each is accurate to
/// double precision.
const LOW: [(f64, &[f64]); 4] = [
    (1.495585217958292e-2, &[120.0, 60.0, 12.0, 1.0]),
    (
        2.53939833006323e-1,
        &[30240.0, 15120.0, 3360.0, 420.0, 30.0, 1.0],
    ),
    (
        9.504178996162932e-1,
        &[
            17297280.0, 8648640.0, 1995840.0, 277200.0, 25200.0, 1512.0, 56.0, 1.0,
        ],
    ),
    (
        2.097847961257068,
        &[
            17643225600.0,
            8821612800.0,
            2075673600.0,
            302702400.0,
            30270240.0,
            2162160.0,
            110880.0,
            3960.0,
            90.0,
            1.0,
        ],
    ),
];

/// `θ₁₃`: the largest 1-norm for which the degree 13 approximant is accurate to double precision.
const THETA13: f64 = 5.371920351148152;

fn product<T: Field>(a: MatRef<'_, T>, b: MatRef<'_, T>, par: Par) -> Mat<T> {
    let mut out = Mat::<T>::zeros(a.nrows(), b.ncols());
    matmul(out.as_mut(), Accum::Replace, a, b, T::of_f64(1.0), par);
    out
}

/// `Σ cᵢ Mᵢ + d I`.
fn combination<T: Field>(n: usize, terms: &[(f64, &Mat<T>)], d: f64) -> Mat<T> {
    let coefs: Vec<(T, &Mat<T>)> = terms.iter().map(|&(c, m)| (T::of_f64(c), m)).collect();
    Mat::from_fn(n, n, |i, j| {
        let init = if i == j { T::of_f64(d) } else { T::of_f64(0.0) };
        coefs.iter().fold(init, |acc, (c, m)| acc + *c * m[(i, j)])
    })
}

/// The 1-norm (largest absolute column sum).
fn norm1<T: Field>(a: MatRef<'_, T>) -> f64 {
    (0..a.ncols())
        .map(|j| (0..a.nrows()).map(|i| abs_f64(&a[(i, j)])).sum::<f64>())
        .fold(0.0, f64::max)
}

/// The Padé approximant `(V − U)⁻¹(V + U)` of a low degree with coefficients `b` (`b.len() - 1`
/// odd), from the even powers `I, A², A⁴, ...`.
fn pade_low<T: Field>(a: &Mat<T>, b: &[f64], par: Par) -> Mat<T> {
    let n = a.nrows();
    let a2 = product(a.as_ref(), a.as_ref(), par);
    let mut powers = vec![a2];
    while 2 * (powers.len() + 1) < b.len() {
        let last = powers.len() - 1;
        powers.push(product(powers[last].as_ref(), powers[0].as_ref(), par));
    }
    let odd: Vec<(f64, &Mat<T>)> = powers
        .iter()
        .enumerate()
        .map(|(k, p)| (b[2 * k + 3], p))
        .collect();
    let even: Vec<(f64, &Mat<T>)> = powers
        .iter()
        .enumerate()
        .map(|(k, p)| (b[2 * k + 2], p))
        .collect();
    let u = product(a.as_ref(), combination(n, &odd, b[1]).as_ref(), par);
    let v = combination(n, &even, b[0]);
    solve_pade(&u, &v)
}

fn solve_pade<T: Field>(u: &Mat<T>, v: &Mat<T>) -> Mat<T> {
    let (num, den) = (v + u, v - u);
    den.partial_piv_lu().solve(&num)
}

/// `exp(A)` for a finite square matrix `a`.
pub(super) fn expm<T: Field>(a: MatRef<'_, T>, par: Par) -> Mat<T> {
    let n = a.nrows();
    let norm = norm1(a);
    let a = a.to_owned();
    for (theta, b) in LOW {
        if norm <= theta {
            return pade_low(&a, b, par);
        }
    }
    let s = if norm > THETA13 {
        (norm / THETA13).log2().ceil() as i32
    } else {
        0
    };
    let scale = T::of_f64(0.5f64.powi(s));
    let a = Mat::from_fn(n, n, |i, j| scale * a[(i, j)]);
    let a2 = product(a.as_ref(), a.as_ref(), par);
    let a4 = product(a2.as_ref(), a2.as_ref(), par);
    let a6 = product(a4.as_ref(), a2.as_ref(), par);
    let b = &B13;
    let inner_u = combination(n, &[(b[13], &a6), (b[11], &a4), (b[9], &a2)], 0.0);
    let outer_u = combination(n, &[(b[7], &a6), (b[5], &a4), (b[3], &a2)], b[1]);
    let u = product(
        a.as_ref(),
        (product(a6.as_ref(), inner_u.as_ref(), par) + outer_u).as_ref(),
        par,
    );
    let inner_v = combination(n, &[(b[12], &a6), (b[10], &a4), (b[8], &a2)], 0.0);
    let outer_v = combination(n, &[(b[6], &a6), (b[4], &a4), (b[2], &a2)], b[0]);
    let v = product(a6.as_ref(), inner_v.as_ref(), par) + outer_v;
    let mut r = solve_pade(&u, &v);
    for _ in 0..s {
        r = product(r.as_ref(), r.as_ref(), par);
    }
    r
}
