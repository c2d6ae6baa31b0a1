//! Composite ops (activations, softmax family, statistics, normalisation): values against known values,
//! stability at extreme inputs (values and gradients finite at ±1e4) in float32 and float64, higher
//! derivatives, and errors. Agreement with JAX on random inputs is checked in `jax_fixtures.rs`.

use nabla_core::{DType, Error};
use nabla_cpu::CpuBackend;
use nabla_tensor::{Tensor, grad};

type T = Tensor<CpuBackend>;

const FLOATS: [DType; 2] = [DType::F32, DType::F64];

fn t(v: &[f64], shape: &[usize], dtype: DType) -> T {
    Tensor::from_slice(v, shape.to_vec(), &CpuBackend::new())
        .unwrap()
        .cast(dtype)
        .unwrap()
}

fn vals(x: &T) -> Vec<f64> {
    x.cast(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// Tolerance for values computed in `dtype`.
fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 { 2e-6 } else { 1e-13 }
}

#[track_caller]
fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * w.abs().max(1.0),
            "entry {i}: got {g}, want {w} (all: {got:?} vs {want:?})"
        );
    }
}

#[track_caller]
fn assert_finite(what: &str, v: &[f64]) {
    assert!(v.iter().all(|x| x.is_finite()), "{what}: {v:?}");
}

/// Value and gradient of `sum(f(x) * w)` for fixed weights `w = 1, 2, 3, ...` (via `backward`).
fn value_and_weighted_grad(x: &T, f: impl Fn(&T) -> nabla_core::Result<T>) -> (Vec<f64>, Vec<f64>) {
    let v = Tensor::var("x", x.clone()).unwrap();
    let y = f(&v).unwrap();
    let n = y.numel();
    let w: Vec<f64> = (1..=n).map(|i| i as f64).collect();
    let w = t(&w, y.shape(), y.dtype());
    let loss = y.mul(&w).unwrap().sum_all().unwrap();
    let g = loss.backward().unwrap();
    (vals(&y), vals(g.get(&v).unwrap()))
}

// ------------------------------------------------------------------------------------------------------
// Values
// ------------------------------------------------------------------------------------------------------

#[test]
fn softmax_family_values() {
    for dt in FLOATS {
        let x = t(&[1.0, 2.0, 3.0, 0.0, 0.0, 0.0], &[2, 3], dt);
        let e: Vec<f64> = [1.0f64, 2.0, 3.0].iter().map(|v| v.exp()).collect();
        let s: f64 = e.iter().sum();
        let row0: Vec<f64> = e.iter().map(|v| v / s).collect();
        let third = 1.0 / 3.0;
        let want = [row0.clone(), vec![third; 3]].concat();
        assert_close(&vals(&x.softmax(-1).unwrap()), &want, tol(dt));
        assert_eq!(x.softmax(1).unwrap().dtype(), dt);
        let logs: Vec<f64> = want.iter().map(|v| v.ln()).collect();
        assert_close(&vals(&x.log_softmax(1).unwrap()), &logs, tol(dt));
        // Along axis 0 each column holds (v, 0).
        let col: Vec<f64> = [1.0f64, 2.0, 3.0]
            .iter()
            .map(|v| v.exp() / (v.exp() + 1.0))
            .collect();
        let mut want0 = col.clone();
        want0.extend(col.iter().map(|c| 1.0 - c));
        assert_close(&vals(&x.softmax(0).unwrap()), &want0, tol(dt));

        let lse = x.logsumexp(&[1], false).unwrap();
        assert_eq!(lse.shape(), &[2]);
        assert_close(&vals(&lse), &[s.ln(), 3f64.ln()], tol(dt));
        assert_eq!(x.logsumexp(&[1], true).unwrap().shape(), &[2, 1]);
        let all = x.logsumexp(&[], false).unwrap();
        assert_eq!(all.shape(), &[] as &[usize]);
        assert_close(&vals(&all), &[(s + 3.0).ln()], tol(dt));
        assert_close(
            &vals(&x.logsumexp(&[0, 1], false).unwrap()),
            &[(s + 3.0).ln()],
            tol(dt),
        );
    }
}

#[test]
fn logsumexp_of_infinities_follows_jax() {
    let x = t(
        &[f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0, f64::INFINITY],
        &[2, 2],
        DType::F64,
    );
    let y = vals(&x.logsumexp(&[1], false).unwrap());
    assert_eq!(y[0], f64::NEG_INFINITY);
    assert_eq!(y[1], f64::INFINITY);
}

#[test]
fn activation_values() {
    // Reference values: Phi(1) = 0.841344746068543, sigmoid(1) = 0.7310585786300049, ...
    let x = [-2.0, -1.0, 0.0, 1.0, 2.5];
    let erf_gelu = |v: f64| 0.5 * v * (1.0 + erf(v / 2f64.sqrt()));
    let tanh_gelu = |v: f64| {
        0.5 * v * (1.0 + ((2.0 / std::f64::consts::PI).sqrt() * (v + 0.044715 * v * v * v)).tanh())
    };
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    for dt in FLOATS {
        let xt = t(&x, &[5], dt);
        let map = |f: &dyn Fn(f64) -> f64| x.iter().map(|&v| f(v)).collect::<Vec<_>>();
        assert_close(&vals(&xt.relu().unwrap()), &map(&|v| v.max(0.0)), 0.0);
        assert_close(
            &vals(&xt.leaky_relu(0.1).unwrap()),
            &map(&|v| if v >= 0.0 { v } else { 0.1 * v }),
            tol(dt),
        );
        assert_close(&vals(&xt.gelu().unwrap()), &map(&erf_gelu), tol(dt));
        assert_close(&vals(&xt.gelu_tanh().unwrap()), &map(&tanh_gelu), tol(dt));
        assert_close(&vals(&xt.silu().unwrap()), &map(&|v| v * sig(v)), tol(dt));
        assert_close(
            &vals(&xt.softplus().unwrap()),
            &map(&|v| v.exp().ln_1p()),
            tol(dt),
        );
        assert_close(
            &vals(&xt.elu(1.5).unwrap()),
            &map(&|v| if v > 0.0 { v } else { 1.5 * v.exp_m1() }),
            tol(dt),
        );
        for f in [T::relu, T::gelu, T::gelu_tanh, T::silu, T::softplus] {
            assert_eq!(f(&xt).unwrap().dtype(), dt);
        }
    }
    // Known values to all digits.
    let one = t(&[1.0], &[1], DType::F64);
    assert_close(&vals(&one.gelu().unwrap()), &[0.8413447460685429], 1e-15);
    assert_close(
        &vals(&one.gelu_tanh().unwrap()),
        &[0.8411919906082768],
        1e-15,
    );
    assert_close(&vals(&one.silu().unwrap()), &[0.7310585786300049], 1e-15);
    assert_close(
        &vals(&one.softplus().unwrap()),
        &[1.3132616875182228],
        1e-15,
    );
    assert_close(
        &vals(&one.neg().unwrap().elu(1.0).unwrap()),
        &[-0.6321205588285577],
        1e-15,
    );
}

/// erf by its Taylor series (enough terms for |x| <= 2).
fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    for n in 1..80 {
        term *= -x * x / n as f64;
        sum += term / (2 * n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn statistics_values() {
    for dt in FLOATS {
        let x = t(&[1.0, 2.0, 3.0, 4.0, 4.0, 10.0, 16.0, 2.0], &[2, 4], dt);
        // Row 0: mean 2.5, squared deviations sum 5; row 1: mean 8, sum 16 + 4 + 64 + 36 = 120.
        assert_close(
            &vals(&x.variance(&[1], false, 0).unwrap()),
            &[1.25, 30.0],
            tol(dt),
        );
        assert_close(
            &vals(&x.variance(&[-1], false, 1).unwrap()),
            &[5.0 / 3.0, 40.0],
            tol(dt),
        );
        assert_eq!(x.variance(&[1], true, 1).unwrap().shape(), &[2, 1]);
        assert_close(
            &vals(&x.std_dev(&[1], false, 1).unwrap()),
            &[(5.0f64 / 3.0).sqrt(), 40f64.sqrt()],
            tol(dt),
        );
        // Over all axes: mean 5.25.
        let all: Vec<f64> = [1.0, 2.0, 3.0, 4.0, 4.0, 10.0, 16.0, 2.0]
            .iter()
            .map(|v: &f64| (v - 5.25) * (v - 5.25))
            .collect();
        let ss: f64 = all.iter().sum();
        assert_close(
            &vals(&x.variance(&[], false, 0).unwrap()),
            &[ss / 8.0],
            tol(dt),
        );
        assert_close(
            &vals(&x.std_dev(&[0, 1], false, 1).unwrap()),
            &[(ss / 7.0).sqrt()],
            tol(dt),
        );
        // Along axis 0: columns (1, 4), (2, 10), (3, 16), (4, 2).
        assert_close(
            &vals(&x.variance(&[0], false, 0).unwrap()),
            &[2.25, 16.0, 42.25, 1.0],
            tol(dt),
        );
    }
    // N <= correction divides by zero or a negative number, as JAX does.
    let one = t(&[3.0], &[1], DType::F64);
    assert!(vals(&one.variance(&[0], false, 1).unwrap())[0].is_nan());
}

#[test]
fn layer_norm_and_normalize_values() {
    for dt in FLOATS {
        let x = t(&[1.0, 2.0, 3.0, 4.0, -1.0, 1.0, -1.0, 1.0], &[2, 4], dt);
        // Row 0: mean 2.5, var 1.25; row 1: mean 0, var 1.
        let r0: Vec<f64> = [1.0, 2.0, 3.0, 4.0]
            .iter()
            .map(|v| (v - 2.5) / 1.25f64.sqrt())
            .collect();
        let want = [r0, vec![-1.0, 1.0, -1.0, 1.0]].concat();
        assert_close(&vals(&x.layer_norm(&[-1], 0.0).unwrap()), &want, tol(dt));
        // eps enters under the root.
        let with_eps = vals(&x.layer_norm(&[1], 0.25).unwrap());
        assert_close(
            &with_eps[4..],
            &[
                -(0.8f64.sqrt()),
                0.8f64.sqrt(),
                -(0.8f64.sqrt()),
                0.8f64.sqrt(),
            ],
            tol(dt),
        );
        // Over both axes: mean 1.25.
        let y = vals(&x.layer_norm(&[0, 1], 1e-5).unwrap());
        assert!(y.iter().sum::<f64>().abs() < 1e-5, "{y:?}");

        let v = t(&[3.0, 4.0, 0.0, -2.0, 0.0, 0.0], &[2, 3], dt);
        assert_close(
            &vals(&v.normalize(2.0, -1, 1e-12).unwrap()),
            &[0.6, 0.8, 0.0, -1.0, 0.0, 0.0],
            tol(dt),
        );
        assert_close(
            &vals(&v.normalize(1.0, 1, 1e-12).unwrap()),
            &[3.0 / 7.0, 4.0 / 7.0, 0.0, -1.0, 0.0, 0.0],
            tol(dt),
        );
        assert_close(
            &vals(&v.normalize(f64::INFINITY, 1, 1e-12).unwrap()),
            &[0.75, 1.0, 0.0, -1.0, 0.0, 0.0],
            tol(dt),
        );
        // Along axis 0: columns (3, -2), (4, 0), (0, 0); a norm below eps is replaced by eps.
        let n13 = 13f64.sqrt();
        assert_close(
            &vals(&v.normalize(2.0, 0, 1e-12).unwrap()),
            &[3.0 / n13, 1.0, 0.0, -2.0 / n13, 0.0, 0.0],
            tol(dt),
        );
        let tiny = t(&[1e-3, 0.0], &[2], dt);
        assert_close(
            &vals(&tiny.normalize(2.0, 0, 0.1).unwrap()),
            &[1e-2, 0.0],
            tol(dt),
        );
    }
}

// ------------------------------------------------------------------------------------------------------
// Stability at extreme inputs
// ------------------------------------------------------------------------------------------------------

const BIG: [f64; 6] = [-1e4, -100.0, -1.0, 0.0, 50.0, 1e4];

#[test]
fn softmax_family_is_finite_at_large_inputs() {
    for dt in FLOATS {
        let x = t(&BIG, &[6], dt);
        let (y, g) = value_and_weighted_grad(&x, |x| x.softmax(0));
        assert_finite("softmax", &y);
        assert_finite("softmax grad", &g);
        assert_close(&y, &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], tol(dt));
        // sum(softmax * w) at a one-hot softmax is flat.
        assert_close(&g, &[0.0; 6], tol(dt));

        let (y, g) = value_and_weighted_grad(&x, |x| x.log_softmax(0));
        assert_finite("log_softmax", &y);
        assert_finite("log_softmax grad", &g);
        assert_close(
            &y,
            &BIG.iter().map(|v| v - 1e4).collect::<Vec<_>>(),
            tol(dt),
        );
        // d/dx_i sum_j w_j (x_j - lse) = w_i - softmax_i * sum(w) = w_i - 21 [i = last].
        assert_close(&g, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0 - 21.0], tol(dt));

        let (y, g) = value_and_weighted_grad(&x, |x| x.logsumexp(&[0], false));
        assert_close(&y, &[1e4], tol(dt));
        assert_close(&g, &[0.0, 0.0, 0.0, 0.0, 0.0, 1.0], tol(dt));

        // Two equal maxima share the mass (the detached shift must not split anything else).
        let tie = t(&[1e4, -1e4, 1e4], &[3], dt);
        let (y, g) = value_and_weighted_grad(&tie, |x| x.softmax(0));
        assert_close(&y, &[0.5, 0.0, 0.5], tol(dt));
        // grad_i = s_i (w_i - sum_j s_j w_j) with w = (1, 2, 3): (0.5 (1 - 2), 0, 0.5 (3 - 2)).
        assert_close(&g, &[-0.5, 0.0, 0.5], tol(dt));
        let (y, _) = value_and_weighted_grad(&tie, |x| x.logsumexp(&[], false));
        assert_close(&y, &[1e4 + std::f64::consts::LN_2], tol(dt));
    }
}

#[test]
fn activations_are_finite_at_large_inputs() {
    type Act = fn(&T) -> nabla_core::Result<T>;
    // (name, f, f at -1e4, f at 1e4, f' at -1e4, f' at 1e4)
    let cases: [(&str, Act, [f64; 4]); 9] = [
        ("relu", |x| x.relu(), [0.0, 1e4, 0.0, 1.0]),
        (
            "leaky_relu",
            |x| x.leaky_relu(0.01),
            [-100.0, 1e4, 0.01, 1.0],
        ),
        ("gelu", |x| x.gelu(), [0.0, 1e4, 0.0, 1.0]),
        ("gelu_tanh", |x| x.gelu_tanh(), [0.0, 1e4, 0.0, 1.0]),
        ("silu", |x| x.silu(), [0.0, 1e4, 0.0, 1.0]),
        ("softplus", |x| x.softplus(), [0.0, 1e4, 0.0, 1.0]),
        ("elu", |x| x.elu(1.5), [-1.5, 1e4, 0.0, 1.0]),
        ("sigmoid", |x| x.sigmoid(), [0.0, 1.0, 0.0, 0.0]),
        ("tanh", |x| x.tanh(), [-1.0, 1.0, 0.0, 0.0]),
    ];
    for dt in FLOATS {
        let x = t(&BIG, &[6], dt);
        for (name, f, [lo, hi, dlo, dhi]) in cases {
            let (y, g) = value_and_weighted_grad(&x, f);
            assert_finite(name, &y);
            assert_finite(&format!("{name} grad ({dt})"), &g);
            assert_close(&[y[0], y[5]], &[lo, hi], tol(dt));
            // The weights are 1..6, so the gradient at index i is (i + 1) f'(x_i).
            assert_close(&[g[0], g[5] / 6.0], &[dlo, dhi], tol(dt));
            // Second derivatives through the recorded reverse pass stay finite too.
            let d2 = grad(|x: &T| grad(|x: &T| f(x)?.sum_all())(x)?.sum_all())(&x).unwrap();
            assert_finite(&format!("{name} second derivative ({dt})"), &vals(&d2));
        }
    }
}

#[test]
fn normalisation_is_finite_at_large_and_constant_inputs() {
    for dt in FLOATS {
        let x = t(&[1e4, 1e4, 1e4, -1e4, 0.0, 1e4], &[2, 3], dt);
        let (y, g) = value_and_weighted_grad(&x, |x| x.layer_norm(&[-1], 1e-5));
        assert_finite("layer_norm", &y);
        assert_finite("layer_norm grad", &g);
        // A constant row normalises to zeros and its gradient is finite (1/sqrt(eps) times a zero-mean
        // projection of the weights: (1, 2, 3) - 2 in row 0).
        assert_close(&y[..3], &[0.0; 3], tol(dt));
        let s = 1.0 / 1e-5f64.sqrt();
        assert_close(&g[..3], &[-s, 0.0, s], 1e-4);
        assert_close(&y[3..], &[-(1.5f64.sqrt()), 0.0, 1.5f64.sqrt()], 1e-4);

        let (y, g) = value_and_weighted_grad(&x, |x| x.normalize(2.0, -1, 1e-12));
        assert_finite("normalize", &y);
        assert_finite("normalize grad", &g);
        let third = 1.0 / 3f64.sqrt();
        assert_close(&y[..3], &[third; 3], tol(dt));

        // A zero slice: value 0 and gradient 1/eps, not NaN.
        let z = t(&[0.0, 0.0], &[2], dt);
        let (y, g) = value_and_weighted_grad(&z, |x| x.normalize(2.0, 0, 0.5));
        assert_close(&y, &[0.0, 0.0], 0.0);
        assert_close(&g, &[2.0, 4.0], tol(dt));

        let (y, g) = value_and_weighted_grad(&x, |x| x.variance(&[1], false, 1));
        assert_finite("variance", &y);
        assert_finite("variance grad", &g);
        assert_close(&y, &[0.0, 1e8], tol(dt));
    }
}

#[test]
fn std_dev_at_zero_variance_has_nan_gradient_like_jax() {
    // jax.grad(jnp.std)(jnp.ones(3)) is [nan, nan, nan]: sqrt'(0) = inf meets a zero derivative.
    let x = t(&[2.0, 2.0, 2.0], &[3], DType::F64);
    let (y, g) = value_and_weighted_grad(&x, |x| x.std_dev(&[], false, 0));
    assert_eq!(y, vec![0.0]);
    assert!(g.iter().all(|v| v.is_nan()), "{g:?}");
    // Off zero it is the ordinary derivative (x - mean) / (N std).
    let x = t(&[1.0, 2.0, 3.0], &[3], DType::F64);
    let (_, g) = value_and_weighted_grad(&x, |x| x.std_dev(&[0], false, 0));
    let sd = (2.0f64 / 3.0).sqrt();
    assert_close(&g, &[-1.0 / (3.0 * sd), 0.0, 1.0 / (3.0 * sd)], 1e-14);
}

// ------------------------------------------------------------------------------------------------------
// Derivatives at kinks and of higher order
// ------------------------------------------------------------------------------------------------------

#[test]
fn derivatives_at_kinks_follow_jax() {
    let x = t(&[0.0], &[1], DType::F64);
    let d = |f: fn(&T) -> nabla_core::Result<T>| {
        vals(&grad(move |x: &T| f(x)?.sum_all())(&x).unwrap())[0]
    };
    assert_eq!(d(|x| x.relu()), 0.0);
    assert_eq!(d(|x| x.leaky_relu(0.2)), 1.0);
    assert_eq!(d(|x| x.elu(1.5)), 1.5);
    assert_eq!(d(|x| x.softplus()), 0.5);
    assert_eq!(d(|x| x.gelu()), 0.5);
    assert_eq!(d(|x| x.silu()), 0.5);
}

#[test]
fn second_and_third_derivatives_of_smooth_activations() {
    type Act = fn(&T) -> nabla_core::Result<T>;
    let xs = [-3.0, -0.5, 0.0, 0.7, 4.0];
    let x = t(&xs, &[5], DType::F64);
    let sig = |v: f64| 1.0 / (1.0 + (-v).exp());
    // Each function is a sum of elementwise terms, so the gradient of the sum of a derivative is the
    // next derivative, elementwise.
    let d1 = |f: Act| vals(&grad(move |x: &T| f(x)?.sum_all())(&x).unwrap());
    let d2 = |f: Act| {
        let g1 = move |x: &T| grad(move |x: &T| f(x)?.sum_all())(x)?.sum_all();
        vals(&grad(g1)(&x).unwrap())
    };
    let d3 = |f: Act| {
        let g1 = move |x: &T| grad(move |x: &T| f(x)?.sum_all())(x)?.sum_all();
        let g2 = move |x: &T| grad(g1)(x)?.sum_all();
        vals(&grad(g2)(&x).unwrap())
    };
    // softplus' = sigmoid, softplus'' = s (1 - s), softplus''' = s (1 - s) (1 - 2 s), also at 0.
    let s: Vec<f64> = xs.iter().map(|&v| sig(v)).collect();
    assert_close(&d1(|x| x.softplus()), &s, 1e-14);
    assert_close(
        &d2(|x| x.softplus()),
        &s.iter().map(|s| s * (1.0 - s)).collect::<Vec<_>>(),
        1e-14,
    );
    assert_close(
        &d3(|x| x.softplus()),
        &s.iter()
            .map(|s| s * (1.0 - s) * (1.0 - 2.0 * s))
            .collect::<Vec<_>>(),
        1e-13,
    );
    // silu'' = s (1 - s) (2 + x (1 - 2 s)).
    let want: Vec<f64> = xs
        .iter()
        .map(|&v| {
            let s = sig(v);
            s * (1.0 - s) * (2.0 + v * (1.0 - 2.0 * s))
        })
        .collect();
    assert_close(&d2(|x| x.silu()), &want, 1e-13);
    // gelu'' = phi(x) (2 - x^2) with the normal density phi.
    let phi = |v: f64| (-v * v / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt();
    let want: Vec<f64> = xs.iter().map(|&v| phi(v) * (2.0 - v * v)).collect();
    assert_close(&d2(|x| x.gelu()), &want, 1e-13);
    // elu'' = alpha e^x below 0 (and at 0, from the left branch as JAX), 0 above.
    let want: Vec<f64> = xs
        .iter()
        .map(|&v| if v > 0.0 { 0.0 } else { 1.5 * v.exp() })
        .collect();
    assert_close(&d2(|x| x.elu(1.5)), &want, 1e-14);
}

#[test]
fn softmax_hessian_is_diag_minus_outer() {
    // d2/dx2 logsumexp(x) = diag(s) - s s^T; its product with v is s * v - s (s . v).
    let x = t(&[0.3, -1.2, 2.0, 0.5], &[4], DType::F64);
    let v = [1.0, -2.0, 0.5, 3.0];
    let vt = t(&v, &[4], DType::F64);
    let hv = grad(|x: &T| {
        grad(|x: &T| x.logsumexp(&[], false))(x)?
            .mul(&vt)?
            .sum_all()
    })(&x)
    .unwrap();
    let s = vals(&x.softmax(0).unwrap());
    let sv: f64 = s.iter().zip(&v).map(|(a, b)| a * b).sum();
    let want: Vec<f64> = s.iter().zip(&v).map(|(s, v)| s * v - s * sv).collect();
    assert_close(&vals(&hv), &want, 1e-14);
    // And the softmax gradient is the same through log_softmax.
    let via_log = grad(|x: &T| x.log_softmax(0)?.exp()?.mul(&vt)?.sum_all())(&x).unwrap();
    let direct = grad(|x: &T| x.softmax(0)?.mul(&vt)?.sum_all())(&x).unwrap();
    assert_close(&vals(&via_log), &vals(&direct), 1e-14);
}

// ------------------------------------------------------------------------------------------------------
// Errors
// ------------------------------------------------------------------------------------------------------

#[test]
fn composites_reject_non_float_inputs_and_bad_arguments() {
    let cpu = CpuBackend::new();
    let ints = Tensor::from_vec(vec![1i64, 2, 3], [3], &cpu).unwrap();
    for (name, err) in [
        ("softmax", ints.softmax(0).unwrap_err()),
        ("log_softmax", ints.log_softmax(0).unwrap_err()),
        ("logsumexp", ints.logsumexp(&[], false).unwrap_err()),
        ("relu", ints.relu().unwrap_err()),
        ("gelu", ints.gelu().unwrap_err()),
        ("variance", ints.variance(&[], false, 0).unwrap_err()),
        ("layer_norm", ints.layer_norm(&[-1], 1e-5).unwrap_err()),
        ("normalize", ints.normalize(2.0, 0, 1e-12).unwrap_err()),
    ] {
        assert!(
            matches!(err, Error::UnsupportedDType { op, .. } if op == name),
            "{name}: {err}"
        );
        assert!(err.to_string().contains("cast"), "{err}");
    }
    let x = t(&[1.0, 2.0], &[2], DType::F32);
    let err = x.softmax(1).unwrap_err();
    assert!(err.to_string().contains("softmax"), "{err}");
    assert!(x.logsumexp(&[3], false).is_err());
    assert!(x.variance(&[-2], false, 0).is_err());
    let err = x.normalize(0.0, 0, 1e-12).unwrap_err();
    assert!(
        matches!(
            err,
            Error::InvalidArgument {
                op: "normalize",
                ..
            }
        ),
        "{err}"
    );
    assert!(x.normalize(f64::NAN, 0, 1e-12).is_err());
}
