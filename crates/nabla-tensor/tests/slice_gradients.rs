//! Gradients through many slices of one tensor: the reverse pass keeps each slice's cotangent as a
//! piece and joins the pieces once (one `cat` for disjoint pieces along an axis, placement one by one
//! otherwise). Checked against central differences, against the same function written without
//! slices, at second order, and on the pieces' edge cases (gaps, overlaps, several
//! axes, empty slices, a slice of the whole axis).

use nabla_cpu::CpuBackend;
use nabla_tensor::{
    BackwardOptions, GradCheckOptions, Tensor, check_gradients, check_second_order,
};

type T = Tensor<CpuBackend>;

/// A named scalar function of one tensor.
type Case = (&'static str, fn(&T) -> T);

fn seq(n: usize, shape: &[usize]) -> T {
    let v: Vec<f64> = (0..n)
        .map(|i| ((i * 37 % 23) as f64 - 11.0) / 7.0)
        .collect();
    Tensor::from_vec(v, shape.to_vec(), &CpuBackend::new()).unwrap()
}

fn vals(x: &T) -> Vec<f64> {
    x.to_vec::<f64>().unwrap()
}

/// An LSTM-like walk over the steps of `x` `[L, N, 4H]`: each step is taken with `select_index`, cut
/// into 4 gates with `chunk`, and the gates feed a nonlinear recurrence.
fn recurrence(x: &T) -> T {
    let mut h = x.select_index(0, 0).unwrap().chunk(4, -1).unwrap()[0]
        .zeros_like()
        .unwrap();
    for t in 0..x.shape()[0] {
        let gates = x.select_index(0, t as isize).unwrap().chunk(4, -1).unwrap();
        let i = gates[0].add(&h).unwrap().sigmoid().unwrap();
        let g = gates[2].tanh().unwrap();
        h = i
            .mul(&g)
            .unwrap()
            .add(gates[1].mul(&gates[3]).unwrap())
            .unwrap();
    }
    h.square().unwrap().sum_all().unwrap()
}

#[test]
fn a_loop_over_steps_and_gates_matches_central_differences() {
    let x = seq(6 * 2 * 8, &[6, 2, 8]);
    let report = check_gradients(|xs: &[T]| Ok(recurrence(&xs[0])), &[x], &Default::default());
    report.unwrap().assert_close(1e-6, 1e-5).unwrap();
}

#[test]
fn slices_match_the_same_function_without_slices() {
    // sum_t w_t * x[t] written with select_index, and as a broadcast product.
    let x = Tensor::var("x", seq(5 * 3, &[5, 3])).unwrap();
    let w = seq(5, &[5, 1]).square().unwrap();
    let mut y = x.select_index(0, 0).unwrap().zeros_like().unwrap();
    for t in 0..5 {
        let wt = w.select_index(0, t).unwrap();
        y = y
            .add(x.select_index(0, t).unwrap().mul(&wt).unwrap())
            .unwrap();
    }
    let sliced = y.sin().unwrap().sum_all().unwrap().backward().unwrap();
    let whole = x.mul(&w).unwrap().sum(&[0], false).unwrap();
    let dense = whole.sin().unwrap().sum_all().unwrap().backward().unwrap();
    let (a, b) = (vals(sliced.get(&x).unwrap()), vals(dense.get(&x).unwrap()));
    for (a, b) in a.iter().zip(&b) {
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    }
}

#[test]
fn gaps_overlaps_and_several_axes_place_each_piece() {
    let x = seq(4 * 6, &[4, 6]);
    let cases: Vec<Case> = vec![
        // Disjoint pieces with gaps at the start, middle and end of the axis.
        ("gaps", |x| {
            let a = x.narrow(1, 1, 2).unwrap().exp().unwrap();
            let b = x.narrow(1, 4, 1).unwrap().cos().unwrap();
            a.sum_all().unwrap().add(b.sum_all().unwrap()).unwrap()
        }),
        // Overlapping pieces of one axis.
        ("overlap", |x| {
            let a = x.narrow(1, 0, 4).unwrap().square().unwrap();
            let b = x.narrow(1, 2, 4).unwrap().sin().unwrap();
            let c = x.narrow(1, 2, 4).unwrap().tanh().unwrap();
            a.sum_all()
                .unwrap()
                .add(b.mul(&c).unwrap().sum_all().unwrap())
                .unwrap()
        }),
        // Pieces along two axes, a slice of a whole axis, and a dense use of the same tensor.
        ("axes", |x| {
            let rows = x.narrow(0, 1, 2).unwrap().exp().unwrap().sum_all().unwrap();
            let cols = x
                .narrow(1, 3, 3)
                .unwrap()
                .square()
                .unwrap()
                .sum_all()
                .unwrap();
            let all = x.narrow(0, 0, 4).unwrap().sin().unwrap().sum_all().unwrap();
            let dense = x.mul(x).unwrap().sum_all().unwrap();
            rows.add(&cols)
                .unwrap()
                .add(&all)
                .unwrap()
                .add(&dense)
                .unwrap()
        }),
        // A negative step (not a piece) beside unit-step pieces.
        ("reversed", |x| {
            let r = x
                .flip(&[1])
                .unwrap()
                .narrow(1, 0, 3)
                .unwrap()
                .exp()
                .unwrap();
            let p = x.narrow(1, 0, 2).unwrap().square().unwrap();
            r.sum_all().unwrap().add(p.sum_all().unwrap()).unwrap()
        }),
    ];
    for (name, f) in cases {
        let report = check_gradients(
            |xs: &[T]| Ok(f(&xs[0])),
            std::slice::from_ref(&x),
            &Default::default(),
        );
        report
            .unwrap()
            .assert_close(1e-6, 1e-5)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn only_empty_slices_still_give_a_zero_gradient() {
    let x = Tensor::var("x", seq(6, &[2, 3])).unwrap();
    let y = x.narrow(1, 1, 0).unwrap().sum_all().unwrap();
    let g = y.backward().unwrap();
    assert_eq!(vals(g.get(&x).unwrap()), vec![0.0; 6]);
}

#[test]
fn slice_pieces_differentiate_twice() {
    let x = seq(4 * 2 * 8, &[4, 2, 8]);
    let opts = GradCheckOptions::default();
    let report = check_second_order(|xs: &[T]| Ok(recurrence(&xs[0])), &[x], &opts);
    report.unwrap().assert_close(1e-5, 1e-4).unwrap();
}

#[test]
fn retained_graphs_give_the_same_gradient_twice() {
    let x = Tensor::var("x", seq(5 * 2 * 4, &[5, 2, 4])).unwrap();
    let y = recurrence(&x);
    let opts = BackwardOptions {
        retain_graph: true,
        ..Default::default()
    };
    let first = vals(y.backward_opts(None, opts).unwrap().get(&x).unwrap());
    let second = vals(y.backward().unwrap().get(&x).unwrap());
    assert_eq!(first, second);
}
