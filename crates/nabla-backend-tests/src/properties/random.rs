//! Seeded random tensors: reproducible, seed-sensitive, shape-independent, and distributed as asked.

use super::support::*;

use nabla_core::{DType, Generator};
use proptest::prelude::*;

fn draw<B: Backend>(cx: &Suite<B>, seed: u64, shape: &[usize], dtype: DType, kind: u8) -> Vec<f64> {
    let mut g = Generator::new(seed);
    let t = match kind {
        0 => Tensor::rand(shape.to_vec(), dtype, &mut g, cx.backend()),
        1 => Tensor::randn(shape.to_vec(), dtype, &mut g, cx.backend()),
        _ => Tensor::bernoulli(shape.to_vec(), 0.5, dtype, &mut g, cx.backend()),
    };
    read(&t.expect("draw"))
}

property! {
/// Same seed same values other seed other values.
fn same_seed_same_values_other_seed_other_values(cx;
    seed in any::<u64>(),
    shape in shape(),
    kind in 0u8..3,
    dtype in prop_oneof![Just(DType::F32), Just(DType::F64)],
) {
    if !cx.has(&[dtype]) {
        return Ok(());
    }
    let a = draw(cx, seed, &shape, dtype, kind);
    prop_assert_eq!(&a, &draw(cx, seed, &shape, dtype, kind));
    // Element i depends on the seed and i only, not on the shape.
    let n = a.len();
    prop_assert_eq!(&a, &draw(cx, seed, &[n], dtype, kind));
    if n >= 16 {
        prop_assert_ne!(&a, &draw(cx, seed ^ 1, &shape, dtype, kind));
        // The generator moves on between draws.
        let mut g = Generator::new(seed);
        let first = read(&Tensor::randn(shape.clone(), dtype, &mut g, cx.backend()).unwrap());
        let second = read(&Tensor::randn(shape.clone(), dtype, &mut g, cx.backend()).unwrap());
        prop_assert_ne!(first, second);
    }
}
}

property! {
/// Uniform stays in range.
fn uniform_stays_in_range(cx; seed in any::<u64>(), low in -5.0f64..5.0, width in 0.01f64..10.0) {
    let mut g = Generator::new(seed);
    for dtype in [DType::F32, DType::F64] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let high = round_to(dtype, low + width);
        let low = round_to(dtype, low);
        let v = read(&Tensor::uniform([2000], low, high, dtype, &mut g, cx.backend()).unwrap());
        prop_assert!(v.iter().all(|&x| x >= low && x < high), "{dtype} outside [{low}, {high})");
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        prop_assert!((mean - (low + high) / 2.0).abs() < 0.05 * (high - low), "{dtype} mean {mean}");
    }
}
}

property! {
/// Normal has the requested moments.
fn normal_has_the_requested_moments(cx; seed in any::<u64>(), mean in -3.0f64..3.0, std in 0.1f64..4.0) {
    let mut g = Generator::new(seed);
    for dtype in [DType::F32, DType::F64] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let v = read(&Tensor::normal([20000], mean, std, dtype, &mut g, cx.backend()).unwrap());
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / (n - 1.0);
        prop_assert!((m - mean).abs() < 0.05 * std, "{dtype} mean {m} vs {mean}");
        prop_assert!((var / (std * std) - 1.0).abs() < 0.06, "{dtype} var {var} vs {}", std * std);
    }
}
}

property! {
/// Bernoulli hits its rate.
fn bernoulli_hits_its_rate(cx; seed in any::<u64>(), p in 0.0f64..=1.0) {
    let mut g = Generator::new(seed);
    for dtype in [DType::Bool, DType::F32, DType::I64] {
        if !cx.has(&[dtype]) {
            continue;
        }
        let v = read(&Tensor::bernoulli([20000], p, dtype, &mut g, cx.backend()).unwrap());
        prop_assert!(v.iter().all(|&x| x == 0.0 || x == 1.0));
        let rate = v.iter().sum::<f64>() / v.len() as f64;
        prop_assert!((rate - p).abs() < 0.03, "{dtype} rate {rate} vs {p}");
    }
}
}
