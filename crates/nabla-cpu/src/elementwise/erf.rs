//! The error function, written from its definition with polynomial fits computed for nabla.
//!
//! - `|x| < 1`: `erf(x) = x P(x^2)`, where `P` (degree 11) interpolates `erf(x) / x` as a function of
//!   `t = x^2` on `[0, 1]` at Chebyshev nodes; its error is below 1e-17.
//! - `1 <= |x| < 6`: `erf(x) = 1 - e^(-x^2) g(x)`, where `g(x) = erfc(x) e^(x^2)` is smooth and slowly
//!   varying (it falls from 0.43 to 0.09) and is interpolated piecewise by degree-16 polynomials in
//!   `x - mid` on `[1, 2]`, `[2, 3]`, `[3, 4]` and `[4, 6]`, each with error below 1e-18.
//! - `|x| >= 6`: `erfc(6) < 2.2e-17` is below half an ulp of 1, so `erf(x) = ±1`.
//!
//! The coefficients were produced at 50 significant digits with mpmath by this script (each list is
//! printed lowest degree first as `float64` literals):
//!
//! ```text
//! import mpmath as mp
//! mp.mp.dps = 50
//! small = mp.chebyfit(lambda t: mp.erf(mp.sqrt(t)) / mp.sqrt(t) if t > 0 else 2 / mp.sqrt(mp.pi),
//!                     [0, 1], 12)
//! g = lambda x: mp.erfc(x) * mp.exp(x * x)
//! for a, b in [(1, 2), (2, 3), (3, 4), (4, 6)]:
//!     mid = mp.mpf(a + b) / 2
//!     piece = mp.chebyfit(lambda d: g(mid + d), [a - mid, b - mid], 17)
//! ```
//!
//! The result is within 2 ulp of the correctly rounded `erf` for `f64` (checked against mpmath values in
//! the tests); `f32` is computed through `f64` and rounded once.

/// `erf(x) / x` as a polynomial in `x^2` on `[0, 1]`, lowest degree first.
const SMALL: [f64; 12] = [
    1.1283791670955126, -0.37612638903183543, 0.11283791670945006, -0.02686617064323777,
    0.0052239776071164225, -0.0008548325975389692, 0.00012055294904839707, -1.492473690741966e-05,
    1.6447424703317362e-06, -1.6208483801871705e-07, 1.3720064546777686e-08, -7.795898827002142e-10,
];

/// Centres of the pieces of `erfc(x) e^(x^2)`.
const MIDS: [f64; 4] = [1.5, 2.5, 3.5, 5.0];

/// `erfc(x) e^(x^2)` on `[1, 2]`, `[2, 3]`, `[3, 4]`, `[4, 6]` as polynomials in `x - mid`, lowest degree
/// first.
const PIECES: [[f64; 17]; 4] = [
    [
        0.3215854164543175, -0.16362291773256005, 0.0761510398554774, -0.03293090529956527,
        0.013377340953067394, -0.0051459575478377826, 0.0018861348769919975, -0.0006619300701084315,
        0.0002233099453004411, -7.265887301589559e-05, 2.2864299608127746e-05,
        -6.97536222785843e-06, 2.0670657912156654e-06, -5.944961119917664e-07,
        1.6714292901928126e-07, -4.9545807838901603e-08, 1.3242541506849586e-08,
    ],
    [
        0.2108063640611436, -0.07434734678979467, 0.024937997086656904, -0.008001569382101644,
        0.002467036815701451, -0.0007335909371371925, 0.00021101982428404107,
        -5.8868964744129743e-05, 1.5961853148605915e-05, -4.214295295531393e-06,
        1.0852224970131965e-06, -2.7295767244566295e-07, 6.714129675618682e-08,
        -1.614785687396776e-08, 3.8118510954230204e-09, -9.328660140673967e-10,
        2.1168892627144388e-10,
    ],
    [
        0.1552936556088943, -0.041323577833252495, 0.010661133192510575, -0.0026730744396436536,
        0.0006526863268788955, -0.00015546891822695736, 3.618170436144655e-05,
        -8.237986561811509e-06, 1.8371878501257435e-06, -4.017397800257521e-07,
        8.62197089731327e-08, -1.8176637069246943e-08, 3.7670120187245836e-09,
        -7.674620279661604e-10, 1.540337345364684e-10, -3.170934661468834e-11,
        6.170990997356177e-12,
    ],
    [
        0.11070463773306863, -0.021332789764826308, 0.004040688908937075, -0.0007528968134274429,
        0.00013810242090033954, -2.4953883568128706e-05, 4.4443343492985714e-06,
        -7.806319626987718e-07, 1.3529365302452254e-07, -2.3147442750962905e-08,
        3.911235575229903e-09, -6.530435800013467e-10, 1.0775422677534866e-10,
        -1.7487307640493828e-11, 2.8223551375217665e-12, -5.033015540266547e-13,
        7.935106373004748e-14,
    ],
];

#[inline(always)]
fn horner(coeffs: &[f64], x: f64) -> f64 {
    coeffs.iter().rev().fold(0.0, |acc, &c| acc * x + c)
}

/// The error function for `f64`.
#[inline]
pub(crate) fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    if a < 1.0 {
        return x * horner(&SMALL, x * x);
    }
    if a.is_nan() {
        return x;
    }
    if a >= 6.0 {
        return 1.0f64.copysign(x);
    }
    let piece = (a >= 2.0) as usize + (a >= 3.0) as usize + (a >= 4.0) as usize;
    let g = horner(&PIECES[piece], a - MIDS[piece]);
    let erfc = crate::simd_math::exp_f64(-(a * a)) * g;
    (1.0 - erfc).copysign(x)
}

/// The error function for `f32`, computed in `f64` and rounded once.
#[inline]
pub(crate) fn erf_f32(x: f32) -> f32 {
    erf_f64(x as f64) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `(x, erf(x))` with `erf` from mpmath at 40 digits (`mp.erf(mp.mpf(float(x)))`), rounded to `f64`.
    const REFERENCE: [(f64, f64); 25] = [
        (1e-300, 1.1283791670955126e-300),
        (1e-10, 1.1283791670955126e-10),
        (0.001, 0.0011283787909692365),
        (0.1, 0.1124629160182849),
        (0.3, 0.3286267594591274),
        (0.5, 0.5204998778130465),
        (0.8, 0.7421009647076605),
        (0.99, 0.8385080695553698),
        (1.0, 0.8427007929497149),
        (1.2, 0.9103139782296353),
        (1.5, 0.9661051464753108),
        (1.99, 0.995111413199617),
        (2.0, 0.9953222650189527),
        (2.5, 0.999593047982555),
        (3.0, 0.9999779095030014),
        (3.3, 0.9999969422902035),
        (3.99, 0.9999999832607886),
        (4.0, 0.9999999845827421),
        (4.5, 0.9999999998033839),
        (5.0, 0.9999999999984626),
        (5.5, 0.9999999999999927),
        (5.9, 0.9999999999999999),
        (6.0, 1.0),
        (7.0, 1.0),
        (30.0, 1.0),
    ];

    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn matches_mpmath_values() {
        for (x, want) in REFERENCE {
            for (x, want) in [(x, want), (-x, -want)] {
                let got = erf_f64(x);
                assert!(ulps(got, want) <= 2, "erf({x:e}) = {got:e}, want {want:e}");
            }
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(erf_f64(0.0), 0.0);
        assert!(erf_f64(-0.0).is_sign_negative());
        assert_eq!(erf_f64(f64::INFINITY), 1.0);
        assert_eq!(erf_f64(f64::NEG_INFINITY), -1.0);
        assert!(erf_f64(f64::NAN).is_nan());
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert!(erf_f32(f32::NAN).is_nan());
    }

    #[test]
    fn continuous_and_monotone_across_piece_boundaries() {
        for b in [1.0f64, 2.0, 3.0, 4.0, 6.0] {
            let below = erf_f64(b - 1e-12);
            let at = erf_f64(b);
            assert!(below <= at, "erf not monotone at {b}");
            assert!((at - below).abs() < 1e-11, "jump at {b}: {below} vs {at}");
        }
        let mut prev = -1.0;
        for i in -7000..=7000 {
            let x = i as f64 * 1e-3;
            let v = erf_f64(x);
            assert!(v >= prev, "erf not monotone at {x}");
            prev = v;
        }
    }

    #[test]
    fn f32_matches_the_reference_to_half_an_ulp() {
        for (x, want) in REFERENCE {
            // The f32 argument differs from x, so compare with the reference only where x is exact in f32.
            if (x as f32) as f64 == x {
                assert_eq!(erf_f32(x as f32), want as f32, "erf_f32({x})");
            }
        }
    }
}
