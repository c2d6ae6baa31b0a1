//! Gradients of a weight shared by many matrix products (a recurrent layer's `W_hh`): the reverse pass
//! keeps each thin product's operands and multiplies them out once, stacked. Checked against central
//! differences, against the sum of the products written out by hand (in both of the weight's layouts,
//! with joins forced midway by the memory bound), at second order, and beside dense and slice
//! contributions to the same weight, products too wide to defer, batched products and empty ones.

use nabla_cpu::CpuBackend;
use nabla_tensor::{
    BackwardOptions, GradCheckOptions, Tensor, check_gradients, check_second_order,
};

type T = Tensor<CpuBackend>;

fn seq(n: usize, shape: &[usize], salt: usize) -> T {
    let v: Vec<f64> = (0..n)
        .map(|i| (((i + salt) * 37 % 23) as f64 - 11.0) / 17.0)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), &CpuBackend::new()).unwrap()
}

fn vals(x: &T) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

/// `h_{t+1} = tanh(x_t + h_t Wᵀ)` over the steps of `x` `[L, N, H]` from `h0` `[N, H]`, with `W`
/// `[H, H]` seen through one transposed view for every step (as the RNN layers do); the sum of
/// squares of the last state.
fn recurrence(x: &T, h0: &T, w: &T) -> T {
    let w_t = w.t().unwrap();
    let mut h = h0.clone();
    for t in 0..x.shape()[0] {
        let gate = x.select_index(0, t as isize).unwrap();
        h = gate.add(h.matmul(&w_t).unwrap()).unwrap().tanh().unwrap();
    }
    h.square().unwrap().sum_all().unwrap()
}

/// Inputs of [`recurrence`]: `x` `[steps, batch, width]`, `h0` `[batch, width]`, `W` `[width, width]`.
fn recurrent_inputs(steps: usize, batch: usize, width: usize) -> [T; 3] {
    [
        seq(steps * batch * width, &[steps, batch, width], 0),
        seq(batch * width, &[batch, width], 5),
        seq(width * width, &[width, width], 9),
    ]
}

#[test]
fn a_recurrent_weight_matches_central_differences() {
    let f = |v: &[T]| Ok(recurrence(&v[0], &v[1], &v[2]));
    let report = check_gradients(f, &recurrent_inputs(7, 3, 4), &GradCheckOptions::default());
    report.unwrap().assert_close(1e-7, 1e-6).unwrap();
}

#[test]
fn a_recurrent_weight_differentiates_twice() {
    let f = |v: &[T]| Ok(recurrence(&v[0], &v[1], &v[2]));
    let report = check_second_order(f, &recurrent_inputs(5, 2, 3), &GradCheckOptions::default());
    report.unwrap().assert_close(1e-6, 1e-5).unwrap();
}

/// `Σᵢ sum(sin(aᵢ @ w))` for 40 fixed `aᵢ` `[3, 4]`, with `w` `[4, 5]` given directly or as the
/// transpose of a `[5, 4]` weight. The products' operands (27 elements each) pass the memory bound
/// (8 times `w`'s 20 elements) every few products, so the stacked products are also joined midway.
#[test]
fn many_products_sum_to_the_products_written_out() {
    let lhs: Vec<T> = (0..40).map(|i| seq(12, &[3, 4], i)).collect();
    for transposed in [false, true] {
        let w = match transposed {
            false => Tensor::var("w", seq(20, &[4, 5], 3)).unwrap(),
            true => Tensor::var("w", seq(20, &[5, 4], 3)).unwrap(),
        };
        let view = if transposed {
            w.t().unwrap()
        } else {
            w.clone()
        };
        let mut loss = Tensor::zeros([], nabla_core::DType::F64, &CpuBackend::new()).unwrap();
        let mut want = Tensor::zeros([4, 5], nabla_core::DType::F64, &CpuBackend::new()).unwrap();
        for a in &lhs {
            let y = a.matmul(&view).unwrap();
            loss = loss.add(y.sin().unwrap().sum_all().unwrap()).unwrap();
            // d/dw sum(sin(a w)) = aᵀ cos(a w), written without the reverse pass.
            let term = a.t().unwrap().matmul(&y.detach().cos().unwrap()).unwrap();
            want = want.add(&term).unwrap();
        }
        let grads = loss.backward().unwrap();
        let got = grads.get(&w).unwrap();
        let want = if transposed { want.t().unwrap() } else { want };
        assert_eq!(got.shape(), want.shape());
        assert!(
            got.is_contiguous(),
            "transposed {transposed}: {:?}",
            got.layout()
        );
        for (g, e) in vals(got).iter().zip(vals(&want)) {
            assert!((g - e).abs() < 1e-12, "transposed {transposed}: {g} vs {e}");
        }
    }
}

/// One weight reached by thin products, a product too wide to defer (128 rows), a batched product,
/// an empty product, a slice and a dense use, all in one loss.
#[test]
fn deferred_products_add_to_every_other_kind_of_contribution() {
    let w = seq(12, &[3, 4], 7);
    let f = |v: &[T]| {
        let w = &v[0];
        let mut loss = w.sin()?.sum_all()?;
        for i in 0..5 {
            loss = loss.add(seq(6, &[2, 3], i).matmul(w)?.tanh()?.sum_all()?)?;
        }
        let wide = seq(128 * 3, &[128, 3], 11)
            .matmul(w)?
            .square()?
            .mean_all()?;
        let batched = seq(2 * 2 * 3, &[2, 2, 3], 13).matmul(w)?.exp()?.sum_all()?;
        let empty = Tensor::zeros([0, 3], nabla_core::DType::F64, &CpuBackend::new())?;
        let empty = empty.matmul(w)?.sum_all()?;
        let slice = w.narrow(1, 1, 2)?.square()?.sum_all()?;
        loss.add(wide)?.add(batched)?.add(empty)?.add(slice)
    };
    let report = check_gradients(f, &[w], &GradCheckOptions::default());
    report.unwrap().assert_close(1e-7, 1e-6).unwrap();
}

#[test]
fn a_retained_graph_gives_the_same_weight_gradient_twice() {
    let [x, h0, w] = recurrent_inputs(6, 2, 3);
    let w = Tensor::var("w", w).unwrap();
    let y = recurrence(&x, &h0, &w);
    let opts = BackwardOptions {
        retain_graph: true,
        ..Default::default()
    };
    let first = vals(y.backward_opts(None, opts).unwrap().get(&w).unwrap());
    let second = vals(y.backward().unwrap().get(&w).unwrap());
    assert_eq!(first, second);
}

#[test]
fn f32_weights_agree_with_f64() {
    let [x, h0, w] = recurrent_inputs(20, 4, 8);
    let grad_of = |dtype: nabla_core::DType| {
        let (x, h0) = (x.cast(dtype).unwrap(), h0.cast(dtype).unwrap());
        let w = Tensor::var("w", w.cast(dtype).unwrap()).unwrap();
        let g = recurrence(&x, &h0, &w).backward().unwrap();
        vals(&g.get(&w).unwrap().cast(nabla_core::DType::F64).unwrap())
    };
    let (single, double) = (
        grad_of(nabla_core::DType::F32),
        grad_of(nabla_core::DType::F64),
    );
    for (s, d) in single.iter().zip(&double) {
        assert!((s - d).abs() <= 1e-4 * (1.0 + d.abs()), "{s} vs {d}");
    }
}
